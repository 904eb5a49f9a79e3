package io.anamnesis.api.json;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Just enough JSON to read a quantization config: objects, arrays, strings, numbers,
 * booleans and null, with a nesting bound, and nothing to depend on. Values are Map (in
 * order), List, String, Double, Boolean, or {@link #NULL}. Errors are
 * {@link IllegalArgumentException}s, which the caller turns into a typed error naming the file.
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
        try {
            return Double.valueOf(text.substring(start, pos));
        } catch (NumberFormatException e) {
            throw error("bad number");
        }
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
}
