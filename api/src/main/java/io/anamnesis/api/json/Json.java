package io.anamnesis.api.json;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Just enough JSON to read a quantization config, and to write one as Python writes it:
 * objects, arrays, strings, numbers, booleans and null, with a nesting bound, and nothing to
 * depend on. Parsed values are Map (in order), List, String, Double, Boolean, or
 * {@link #NULL}. Errors are {@link IllegalArgumentException}s, which the caller turns into a
 * typed error naming the file.
 */
public final class Json {
    /** JSON {@code null}. */
    public static final Object NULL = new Object() {
        @Override
        public String toString() {
            return "null";
        }
    };

    private final String text;
    private final int maxDepth;
    private int pos;

    private Json(String text, int maxDepth) {
        this.text = text;
        this.maxDepth = maxDepth;
    }

    /** Parses one JSON value spanning the whole text. */
    public static Object parse(String text, int maxDepth) {
        Json p = new Json(text, maxDepth);
        Object v = p.value(0);
        p.skipSpace();
        if (p.pos != text.length()) throw p.error("trailing characters");
        return v;
    }

    /**
     * {@link #parse} reads every number as a double; this gives back the whole ones as longs
     * (a block size of 128, not 128.0), in maps and lists too, so that {@link #dumps} writes
     * them as the file did.
     */
    public static Object wholeNumbersAsLongs(Object v) {
        if (v instanceof Double d && d == Math.rint(d) && !Double.isInfinite(d) && Math.abs(d) < 1e15) return d.longValue();
        if (v instanceof Map<?, ?> m) {
            Map<String, Object> out = new java.util.LinkedHashMap<>();
            m.forEach((k, x) -> out.put(String.valueOf(k), wholeNumbersAsLongs(x)));
            return out;
        }
        if (v instanceof List<?> l) return l.stream().map(Json::wholeNumbersAsLongs).toList();
        return v;
    }

    /** {@code object.key} when {@code object} is a JSON object that has the key. */
    public static Optional<Object> member(Object object, String key) {
        if (object instanceof Map<?, ?> m && m.containsKey(key)) return Optional.of(m.get(key));
        return Optional.empty();
    }

    private Object value(int depth) {
        if (depth > maxDepth) throw error("nesting deeper than " + maxDepth);
        skipSpace();
        if (pos >= text.length()) throw error("unexpected end");
        char c = text.charAt(pos);
        return switch (c) {
            case '{' -> object(depth);
            case '[' -> array(depth);
            case '"' -> string();
            case 't' -> literal("true", Boolean.TRUE);
            case 'f' -> literal("false", Boolean.FALSE);
            case 'n' -> literal("null", NULL);
            default -> number();
        };
    }

    private Map<String, Object> object(int depth) {
        pos++;
        Map<String, Object> out = new LinkedHashMap<>();
        skipSpace();
        if (peek() == '}') {
            pos++;
            return out;
        }
        while (true) {
            skipSpace();
            if (peek() != '"') throw error("expected a key");
            String key = string();
            skipSpace();
            expect(':');
            out.put(key, value(depth + 1));
            skipSpace();
            char c = next();
            if (c == '}') return out;
            if (c != ',') throw error("expected , or }");
        }
    }

    private List<Object> array(int depth) {
        pos++;
        List<Object> out = new ArrayList<>();
        skipSpace();
        if (peek() == ']') {
            pos++;
            return out;
        }
        while (true) {
            out.add(value(depth + 1));
            skipSpace();
            char c = next();
            if (c == ']') return out;
            if (c != ',') throw error("expected , or ]");
        }
    }

    private String string() {
        expect('"');
        // most strings hold no escape: taken whole, not a character at a time (a 9 MB
        // tokenizer.json's 400,000 strings; docs/benchmarks.md)
        int start = pos;
        for (int i = start; i < text.length(); i++) {
            char c = text.charAt(i);
            if (c == '"') {
                pos = i + 1;
                return text.substring(start, i);
            }
            if (c == '\\' || c < 0x20) break;
        }
        StringBuilder sb = new StringBuilder();
        while (true) {
            char c = next();
            if (c == '"') return sb.toString();
            if (c < 0x20) throw error("control character in a string");
            if (c != '\\') {
                sb.append(c);
                continue;
            }
            char e = next();
            switch (e) {
                case '"', '\\', '/' -> sb.append(e);
                case 'b' -> sb.append('\b');
                case 'f' -> sb.append('\f');
                case 'n' -> sb.append('\n');
                case 'r' -> sb.append('\r');
                case 't' -> sb.append('\t');
                case 'u' -> {
                    if (pos + 4 > text.length()) throw error("short \\u escape");
                    try {
                        sb.append((char) Integer.parseInt(text.substring(pos, pos + 4), 16));
                    } catch (NumberFormatException ex) {
                        throw error("bad \\u escape");
                    }
                    pos += 4;
                }
                default -> throw error("bad escape \\" + e);
            }
        }
    }

    private Double number() {
        int start = pos;
        while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) pos++;
        if (start == pos) throw error("unexpected character '" + text.charAt(pos) + "'");
        Double whole = wholeNumber(start, pos);
        if (whole != null) return whole;
        try {
            return Double.valueOf(text.substring(start, pos));
        } catch (NumberFormatException e) {
            throw error("bad number");
        }
    }

    /**
     * text[start, end) as a double when it is an integer of at most 15 digits (exact in a
     * double, so the same value as {@link Double#valueOf}), without the decimal conversion;
     * null for anything else, which {@link Double#valueOf} reads (and refuses, when it must).
     */
    private Double wholeNumber(int start, int end) {
        boolean negative = text.charAt(start) == '-';
        int from = negative ? start + 1 : start;
        if (end - from < 1 || end - from > 15) return null;
        long v = 0;
        for (int i = from; i < end; i++) {
            char c = text.charAt(i);
            if (c < '0' || c > '9') return null;
            v = 10 * v + (c - '0');
        }
        return negative ? -(double) v : (double) v;
    }

    private Object literal(String word, Object value) {
        if (!text.startsWith(word, pos)) throw error("unexpected character '" + text.charAt(pos) + "'");
        pos += word.length();
        return value;
    }

    private void skipSpace() {
        while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) pos++;
    }

    private char peek() {
        if (pos >= text.length()) throw error("unexpected end");
        return text.charAt(pos);
    }

    private char next() {
        char c = peek();
        pos++;
        return c;
    }

    private void expect(char c) {
        if (next() != c) throw error("expected " + c);
    }

    private IllegalArgumentException error(String what) {
        return new IllegalArgumentException("invalid JSON at character " + pos + ": " + what);
    }

    // ---------------------------------------------------------------- writing

    /**
     * JSON text as Python's {@code json.dumps} writes it with its defaults, which is how
     * bitsandbytes packs a quant state and transformers writes a quantization config:
     * {@code ", "} and {@code ": "} separators, keys in the order given, non-ASCII escaped,
     * floats as {@code repr} spells them ({@code 6.0}, {@code 1e-05}, {@code 0.05052706599235535}).
     * Values: Map, List, String, Integer/Long, Float/Double, Boolean, null and {@link #NULL}.
     */
    public static String dumps(Object value) {
        StringBuilder sb = new StringBuilder();
        write(sb, value);
        return sb.toString();
    }

    private static void write(StringBuilder sb, Object v) {
        switch (v) {
            case null -> sb.append("null");
            case Object o when o == NULL -> sb.append("null");
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
        quote(sb, s, true);
    }

    /**
     * {@code s} as a JSON string literal: quote, backslash and control characters escaped as
     * Python's {@code json.dumps} escapes them (lower-case hexadecimal escapes); with
     * {@code ensureAscii}, every character outside printable ASCII too, as its default does.
     */
    static void quote(StringBuilder sb, String s, boolean ensureAscii) {
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
                    if (c < 0x20 || (ensureAscii && c > 0x7E)) sb.append(String.format("\\u%04x", (int) c));
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
    public static String repr(double d) {
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
