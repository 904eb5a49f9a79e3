package io.anamnesis.format.npz;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A parser for the Python literal subset an NPY header is written in ({@code repr} of a
 * dict of str, bool and tuples of int). Like {@code ast.literal_eval}, and unlike a regular
 * expression, it accepts exactly the grammar and nothing that would need evaluation: a
 * header holding an expression is a {@link MalformedFileException}.
 *
 * <p>Values: {@code String}, {@code BigInteger}, {@code Boolean}, {@link #NONE},
 * {@code List<Object>} (tuples and lists), {@code Map<Object, Object>} (dicts).
 */
final class PyLiteral {
    /** Python's None. */
    static final Object NONE = new Object() {
        @Override
        public String toString() {
            return "None";
        }
    };

    private final String text;
    private final String where;
    private final int maxDepth;
    private int pos;

    private PyLiteral(String text, String where, int maxDepth) {
        this.text = text;
        this.where = where;
        this.maxDepth = maxDepth;
    }

    /** Parses one literal that must span the whole text (surrounding white space allowed). */
    static Object parse(String text, String where, int maxDepth) {
        PyLiteral p = new PyLiteral(text, where, maxDepth);
        Object value = p.value(0);
        p.skipSpace();
        if (p.pos != text.length()) throw p.error("unexpected '" + text.charAt(p.pos) + "' after the literal");
        return value;
    }

    private Object value(int depth) {
        if (depth > maxDepth) throw new LimitExceededException(where + ": header literal nested deeper than " + maxDepth);
        skipSpace();
        if (pos >= text.length()) throw error("ends before a value");
        char c = text.charAt(pos);
        return switch (c) {
            case '{' -> dict(depth);
            case '(' -> sequence('(', ')', depth);
            case '[' -> sequence('[', ']', depth);
            case '\'', '"' -> string();
            default -> {
                if (c == '-' || c == '+' || Character.isDigit(c)) yield integer();
                if (Character.isLetter(c) || c == '_') yield keyword();
                throw error("unexpected '" + c + "'");
            }
        };
    }

    private Map<Object, Object> dict(int depth) {
        pos++; // {
        Map<Object, Object> map = new LinkedHashMap<>();
        skipSpace();
        while (!peek('}')) {
            Object key = value(depth + 1);
            skipSpace();
            expect(':');
            Object v = value(depth + 1);
            if (map.put(key, v) != null) throw error("duplicate key " + key);
            skipSpace();
            if (!peek('}')) expect(',');
            skipSpace();
        }
        pos++; // }
        return map;
    }

    private List<Object> sequence(char open, char close, int depth) {
        pos++;
        List<Object> items = new ArrayList<>();
        skipSpace();
        while (!peek(close)) {
            items.add(value(depth + 1));
            skipSpace();
            if (!peek(close)) expect(',');
            skipSpace();
        }
        pos++;
        return items;
    }

    private String string() {
        char quote = text.charAt(pos++);
        StringBuilder sb = new StringBuilder();
        while (true) {
            if (pos >= text.length()) throw error("unterminated string");
            char c = text.charAt(pos++);
            if (c == quote) return sb.toString();
            if (c == '\\') {
                if (pos >= text.length()) throw error("unterminated escape");
                char e = text.charAt(pos++);
                switch (e) {
                    case '\\', '\'', '"' -> sb.append(e);
                    case 'n' -> sb.append('\n');
                    case 't' -> sb.append('\t');
                    default -> throw error("unsupported escape \\" + e);
                }
            } else {
                sb.append(c);
            }
        }
    }

    private BigInteger integer() {
        int start = pos;
        if (text.charAt(pos) == '-' || text.charAt(pos) == '+') pos++;
        int digits = pos;
        while (pos < text.length() && Character.isDigit(text.charAt(pos))) pos++;
        // Python 3 allows 1_000; also a trailing L from Python 2 headers.
        if (pos == digits) throw error("a sign without digits");
        if (pos - digits > 40) throw new LimitExceededException(where + ": an integer of " + (pos - digits) + " digits in the header");
        BigInteger v = new BigInteger(text.substring(start, pos));
        if (pos < text.length() && text.charAt(pos) == 'L') pos++;
        return v;
    }

    private Object keyword() {
        int start = pos;
        while (pos < text.length() && (Character.isLetterOrDigit(text.charAt(pos)) || text.charAt(pos) == '_')) pos++;
        String word = text.substring(start, pos);
        return switch (word) {
            case "True" -> Boolean.TRUE;
            case "False" -> Boolean.FALSE;
            case "None" -> NONE;
            default -> throw error("'" + word + "' is not a literal (the header must not hold expressions)");
        };
    }

    private void skipSpace() {
        while (pos < text.length() && Character.isWhitespace(text.charAt(pos))) pos++;
    }

    private boolean peek(char c) {
        if (pos >= text.length()) throw error("ends early");
        return text.charAt(pos) == c;
    }

    private void expect(char c) {
        if (pos >= text.length() || text.charAt(pos) != c) {
            throw error("expected '" + c + "'" + (pos < text.length() ? " at '" + text.charAt(pos) + "'" : " at the end"));
        }
        pos++;
    }

    private MalformedFileException error(String why) {
        return new MalformedFileException(where + ": bad NPY header at character " + pos + ": " + why);
    }
}
