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

        /**
         * A float32, its bits kept exactly: a NaN's payload goes into the double bit for bit,
         * where Java's widening would quiet a signalling NaN (0x7f800001 came back 0x7fc00001).
         */
        public static Real f32(float v) {
            if (!Float.isNaN(v)) return new Real(Type.F32, v);
            int b = Float.floatToRawIntBits(v);
            long d = (long) (b >>> 31) << 63 | 0x7FF0_0000_0000_0000L | (long) (b & 0x7F_FFFF) << 29;
            return new Real(Type.F32, Double.longBitsToDouble(d));
        }

        /**
         * The value as a float32 with the bits {@link #f32} was given, a NaN's payload included
         * (a {@code (float)} cast of {@link #value()} would quiet a signalling NaN); for an f64,
         * the nearest float.
         */
        public float floatValue() {
            if (type != Type.F32 || !Double.isNaN(value)) return (float) value;
            long d = Double.doubleToRawLongBits(value);
            return Float.intBitsToFloat((int) (d >>> 63) << 31 | 0x7F80_0000 | (int) (d >>> 29) & 0x7F_FFFF);
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

    /** Arrays longer than this are summarized by {@link #render}. */
    int RENDER_ELEMENTS = 16;

    /**
     * The value as text for a reader of text: integers in decimal (a {@code u64} unsigned),
     * a float as its shortest decimal ({@code 1.0E-5}), a string as is, arrays of up to
     * {@value #RENDER_ELEMENTS} elements listed, longer ones summarized as
     * {@code [array of 151936 string]}. For display only: it is not the value whole (see
     * {@link io.anamnesis.api.json.TypedJson} for an encoding that is).
     */
    default String render() {
        return render(this, false);
    }

    private static String render(MetaValue v, boolean quoteStrings) {
        return switch (v) {
            case Int i -> i.type() == Type.U64 ? Long.toUnsignedString(i.value()) : Long.toString(i.value());
            case Real r -> r.type() == Type.F32 ? Float.toString(r.floatValue()) : Double.toString(r.value());
            case Bool b -> Boolean.toString(b.value());
            case Str s -> quoteStrings ? io.anamnesis.api.json.TypedJson.quote(s.value()) : s.value();
            case Array a -> {
                if (a.values().size() > RENDER_ELEMENTS) {
                    yield "[array of " + a.values().size() + " " + a.elementType().spelling() + "]";
                }
                StringBuilder sb = new StringBuilder("[");
                for (int k = 0; k < a.values().size(); k++) {
                    if (k > 0) sb.append(", ");
                    sb.append(render(a.values().get(k), true));
                }
                yield sb.append(']').toString();
            }
        };
    }

    /**
     * The value as a plain Java value for JSON output: Long (BigInteger for a {@code u64}
     * past {@link Long#MAX_VALUE}), Double (a float32 through its shortest decimal, so
     * {@code 1e-5f} is 1.0E-5, not 9.99999974737875E-6), Boolean, String, List (whole arrays,
     * nested).
     */
    default Object plain() {
        return switch (this) {
            case Int i -> i.type() == Type.U64 && i.value() < 0
                    ? new java.math.BigInteger(Long.toUnsignedString(i.value())) : (Object) i.value();
            case Real r -> r.type() == Type.F32 ? Double.parseDouble(Float.toString(r.floatValue())) : r.value();
            case Bool b -> b.value();
            case Str s -> s.value();
            case Array a -> java.util.Collections.unmodifiableList(a.values().stream().map(MetaValue::plain).toList());
        };
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
