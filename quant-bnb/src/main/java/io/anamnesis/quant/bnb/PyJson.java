package io.anamnesis.quant.bnb;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;

/**
 * JSON text as Python's {@code json.dumps} writes it with its defaults, which is how
 * bitsandbytes packs a quant state ({@code pack_dict_to_tensor}) and transformers writes a
 * quantization config: {@code ", "} and {@code ": "} separators, keys in the order given,
 * non-ASCII escaped, floats as {@code repr} spells them ({@code 6.0}, {@code 1e-05},
 * {@code 0.05052706599235535}). Values: Map, List, String, Integer/Long, Float/Double, Boolean,
 * and {@code null}.
 */
final class PyJson {
    private PyJson() {
    }

    static String dumps(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        switch (v) {
            case null -> sb.append("null");
            case Map<?, ?> m -> {
                sb.append('{');
                boolean first = true;
                for (Map.Entry<?, ?> e : m.entrySet()) {
                    if (!first) sb.append(", ");
                    first = false;
                    string(sb, String.valueOf(e.getKey()));
                    sb.append(": ");
                    write(sb, e.getValue());
                }
                sb.append('}');
            }
            case List<?> l -> {
                sb.append('[');
                for (int i = 0; i < l.size(); i++) {
                    if (i > 0) sb.append(", ");
                    write(sb, l.get(i));
                }
                sb.append(']');
            }
            case String s -> string(sb, s);
            case Boolean b -> sb.append(b ? "true" : "false");
            case Float f -> sb.append(repr(f.doubleValue()));
            case Double d -> sb.append(repr(d));
            case Integer i -> sb.append(i);
            case Long l -> sb.append(l);
            default -> throw new IllegalArgumentException("no JSON form for " + v.getClass().getName());
        }
    }

    private static void string(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7E) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }

    /**
     * Python's {@code repr} of a float: the shortest digits that read back as the same double
     * (what {@link Double#toString} finds since JDK 19), positional for decimal exponents from
     * -4 to 15, else {@code d.ddde-XX} with at least two exponent digits; {@code json.dumps}
     * writes the non-finite ones as {@code NaN}, {@code Infinity}, {@code -Infinity}.
     */
    static String repr(double d) {
        if (Double.isNaN(d)) return "NaN";
        if (Double.isInfinite(d)) return d > 0 ? "Infinity" : "-Infinity";
        if (d == 0) return Double.doubleToRawLongBits(d) < 0 ? "-0.0" : "0.0";
        BigDecimal b = new BigDecimal(Double.toString(Math.abs(d))).stripTrailingZeros();
        String digits = b.unscaledValue().toString();
        int exponent = digits.length() - 1 - b.scale();
        StringBuilder sb = new StringBuilder(d < 0 ? "-" : "");
        if (exponent >= -4 && exponent < 16) {
            if (exponent >= 0) {
                String whole = digits.length() > exponent + 1 ? digits.substring(0, exponent + 1)
                        : digits + "0".repeat(exponent + 1 - digits.length());
                String fraction = digits.length() > exponent + 1 ? digits.substring(exponent + 1) : "0";
                sb.append(whole).append('.').append(fraction);
            } else {
                sb.append("0.").append("0".repeat(-exponent - 1)).append(digits);
            }
        } else {
            sb.append(digits.charAt(0));
            if (digits.length() > 1) sb.append('.').append(digits, 1, digits.length());
            sb.append('e').append(exponent < 0 ? '-' : '+');
            int e = Math.abs(exponent);
            if (e < 10) sb.append('0');
            sb.append(e);
        }
        return sb.toString();
    }
}
