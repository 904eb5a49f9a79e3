package io.anamnesis.api;

import java.util.List;

/**
 * One typed metadata value. The types are GGUF's ({@code gguf_metadata_value_type}), the
 * richest any tensor format stores, so a value read from any format fits, and a GGUF key
 * crosses a conversion with its type intact (a {@code u32} stays a {@code u32}, a float32
 * keeps its bits). Safetensors metadata is all {@link Str}.
 */
public sealed interface MetaValue {

    /** The value types, in GGUF's terms. */
    enum Type {
        U8, I8, U16, I16, U32, I32, U64, I64, F32, F64, BOOL, STRING, ARRAY;

        /** Lower-case name as GGUF tools spell it: {@code u32}, {@code f32}, {@code string}, ... */
        public String spelling() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }

        boolean isInteger() {
            return ordinal() <= I64.ordinal();
        }
    }

    Type type();

    /**
     * An integer of one of the eight integer types. A {@code u64} keeps its 64 bits in
     * {@code value} (read it with {@link Long#toUnsignedString}); the others must fit their type.
     */
    record Int(Type type, long value) implements MetaValue {
        public Int {
            if (!type.isInteger()) throw new IllegalArgumentException(type + " is not an integer type");
            boolean fits = switch (type) {
                case U8 -> value >= 0 && value <= 0xFF;
                case I8 -> value >= Byte.MIN_VALUE && value <= Byte.MAX_VALUE;
                case U16 -> value >= 0 && value <= 0xFFFF;
                case I16 -> value >= Short.MIN_VALUE && value <= Short.MAX_VALUE;
                case U32 -> value >= 0 && value <= 0xFFFF_FFFFL;
                case I32 -> value >= Integer.MIN_VALUE && value <= Integer.MAX_VALUE;
                default -> true;
            };
            if (!fits) throw new IllegalArgumentException(value + " does not fit " + type.spelling());
        }
    }

    /** A float32 (its bits are the value; NaN payloads included) or a float64. */
    record Real(Type type, double value) implements MetaValue {
        public Real {
            if (type != Type.F32 && type != Type.F64) throw new IllegalArgumentException(type + " is not a float type");
            if (type == Type.F32 && !Double.isNaN(value) && (double) (float) value != value) {
                throw new IllegalArgumentException(value + " is not a float32 value");
            }
        }

        public static Real f32(float v) {
            return new Real(Type.F32, v);
        }
    }

    record Bool(boolean value) implements MetaValue {
        @Override
        public Type type() {
            return Type.BOOL;
        }
    }

    record Str(String value) implements MetaValue {
        public Str {
            if (value == null) throw new IllegalArgumentException("string value is null");
        }

        @Override
        public Type type() {
            return Type.STRING;
        }
    }

    /** An array of one element type; arrays of arrays are allowed, as in GGUF. */
    record Array(Type elementType, List<MetaValue> values) implements MetaValue {
        public Array {
            values = List.copyOf(values);
            for (MetaValue v : values) {
                if (v.type() != elementType) {
                    throw new IllegalArgumentException("array of " + elementType.spelling() + " holds a " + v.type().spelling());
                }
            }
        }

        @Override
        public Type type() {
            return Type.ARRAY;
        }
    }

    static Int u32(long v) {
        return new Int(Type.U32, v);
    }

    static Int i32(long v) {
        return new Int(Type.I32, v);
    }

    static Str str(String v) {
        return new Str(v);
    }
}
