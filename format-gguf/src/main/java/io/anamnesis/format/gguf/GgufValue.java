package io.anamnesis.format.gguf;

import io.anamnesis.api.MetaValue;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * A typed metadata value ({@code gguf_metadata_value_t}). The Java value is a {@code Long}
 * for every integer type (a uint64 keeps its 64 bits; {@link #plain} reads it unsigned), a
 * {@code Float} or {@code Double}, a {@code Boolean}, a {@code String}, or for
 * {@link GgufValueType#ARRAY} a {@link GgufArray}.
 */
public record GgufValue(GgufValueType type, Object value) {

    /** {@code gguf_metadata_value_t.array}: element type and elements (nested arrays are GgufArrays). */
    public record GgufArray(GgufValueType elementType, List<Object> elements) {
        public GgufArray {
            if (!(elements instanceof CompactLists.Numbers || elements instanceof CompactLists.Strings)) {
                elements = java.util.Collections.unmodifiableList(elements);
            }
        }
    }

    public static GgufValue string(String s) {
        return new GgufValue(GgufValueType.STRING, s);
    }

    public static GgufValue uint32(long v) {
        return new GgufValue(GgufValueType.UINT32, v);
    }

    /** The GGUF value of an api {@link MetaValue}: the same type, the same bits. */
    public static GgufValue of(MetaValue v) {
        GgufValueType type = typeOf(v.type());
        return new GgufValue(type, switch (v) {
            case MetaValue.Int i -> i.value();
            case MetaValue.Real r -> type == GgufValueType.FLOAT32 ? (Object) r.floatValue() : (Object) r.value();
            case MetaValue.Bool b -> b.value();
            case MetaValue.Str s -> s.value();
            case MetaValue.Array a -> new GgufArray(typeOf(a.elementType()),
                    a.values().stream().map(e -> of(e).value()).toList());
        });
    }

    /** This value as an api {@link MetaValue}: the same type, the same bits, arrays whole. */
    public MetaValue toMetaValue() {
        return meta(type, value);
    }

    private static MetaValue meta(GgufValueType type, Object v) {
        return switch (type) {
            case FLOAT32 -> MetaValue.Real.f32((Float) v);
            case FLOAT64 -> new MetaValue.Real(MetaValue.Type.F64, (Double) v);
            case BOOL -> new MetaValue.Bool((Boolean) v);
            case STRING -> new MetaValue.Str((String) v);
            case ARRAY -> {
                GgufArray a = (GgufArray) v;
                List<MetaValue> out = new ArrayList<>(a.elements().size());
                for (Object e : a.elements()) out.add(meta(a.elementType(), e));
                yield new MetaValue.Array(metaType(a.elementType()), out);
            }
            default -> new MetaValue.Int(metaType(type), (Long) v);
        };
    }

    static MetaValue.Type metaType(GgufValueType t) {
        return switch (t) {
            case UINT8 -> MetaValue.Type.U8;
            case INT8 -> MetaValue.Type.I8;
            case UINT16 -> MetaValue.Type.U16;
            case INT16 -> MetaValue.Type.I16;
            case UINT32 -> MetaValue.Type.U32;
            case INT32 -> MetaValue.Type.I32;
            case UINT64 -> MetaValue.Type.U64;
            case INT64 -> MetaValue.Type.I64;
            case FLOAT32 -> MetaValue.Type.F32;
            case FLOAT64 -> MetaValue.Type.F64;
            case BOOL -> MetaValue.Type.BOOL;
            case STRING -> MetaValue.Type.STRING;
            case ARRAY -> MetaValue.Type.ARRAY;
        };
    }

    static GgufValueType typeOf(MetaValue.Type t) {
        return switch (t) {
            case U8 -> GgufValueType.UINT8;
            case I8 -> GgufValueType.INT8;
            case U16 -> GgufValueType.UINT16;
            case I16 -> GgufValueType.INT16;
            case U32 -> GgufValueType.UINT32;
            case I32 -> GgufValueType.INT32;
            case U64 -> GgufValueType.UINT64;
            case I64 -> GgufValueType.INT64;
            case F32 -> GgufValueType.FLOAT32;
            case F64 -> GgufValueType.FLOAT64;
            case BOOL -> GgufValueType.BOOL;
            case STRING -> GgufValueType.STRING;
            case ARRAY -> GgufValueType.ARRAY;
        };
    }

    /** Arrays longer than this are summarized in {@link #render}. */
    static final int RENDER_ELEMENTS = 16;

    /** The value as text: numbers in decimal, strings as is, short arrays listed, long ones summarized. */
    public String render() {
        return render(type, value, false);
    }

    private static String render(GgufValueType type, Object v, boolean quoteStrings) {
        return switch (type) {
            case STRING -> quoteStrings ? quote((String) v) : (String) v;
            case UINT64 -> Long.toUnsignedString((Long) v);
            case ARRAY -> {
                GgufArray a = (GgufArray) v;
                if (a.elements().size() > RENDER_ELEMENTS) {
                    yield "[array of " + a.elements().size() + " " + a.elementType().spelling() + "]";
                }
                StringBuilder sb = new StringBuilder("[");
                for (int i = 0; i < a.elements().size(); i++) {
                    if (i > 0) sb.append(", ");
                    sb.append(render(a.elementType(), a.elements().get(i), true));
                }
                yield sb.append(']').toString();
            }
            default -> String.valueOf(v);
        };
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                default -> {
                    if (c < 0x20) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        return sb.append('"').toString();
    }

    /**
     * The value as a plain Java value for JSON: Long (BigInteger for a uint64 past
     * Long.MAX_VALUE), Double, Boolean, String, List (whole arrays, nested as Lists).
     */
    public Object plain() {
        return plain(type, value);
    }

    private static Object plain(GgufValueType type, Object v) {
        return switch (type) {
            case UINT64 -> (Long) v < 0 ? new BigInteger(Long.toUnsignedString((Long) v)) : v;
            // Through the float's shortest decimal, so 1e-5f becomes 1.0E-5, not 9.99999974737875E-6.
            case FLOAT32 -> Double.parseDouble(Float.toString((Float) v));
            case ARRAY -> {
                GgufArray a = (GgufArray) v;
                List<Object> out = new ArrayList<>(a.elements().size());
                for (Object e : a.elements()) out.add(plain(a.elementType(), e));
                yield java.util.Collections.unmodifiableList(out);
            }
            default -> v;
        };
    }
}
