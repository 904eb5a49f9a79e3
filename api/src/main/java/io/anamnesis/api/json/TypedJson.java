package io.anamnesis.api.json;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.UnsupportedFeatureException;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.SequencedMap;

/**
 * {@code typed-json/1}: one typed metadata value ({@link MetaValue}) as JSON text, so that a
 * GGUF key/value crosses a format whose metadata values are strings (safetensors
 * {@code __metadata__}) and comes back with its type and its bits. {@code docs/metadata.md}
 * is the specification; in short:
 *
 * <pre>
 * {"type":"u32","value":15}
 * {"type":"f32","value":1.0E-5}      the shortest decimal that reads back to the same float32
 * {"type":"f64","value":"-inf"}      "nan", "inf", "-inf"; any other NaN by its bits: "nan:0x7fc00001"
 * {"type":"bool","value":true}
 * {"type":"string","value":"llama"}
 * {"type":"array","item_type":"string","value":["&lt;unk&gt;","&lt;s&gt;"]}
 * {"type":"array","item_type":"array","value":[{"type":"array","item_type":"i32","value":[1,2]}]}
 * </pre>
 *
 * Types are GGUF's spellings ({@link MetaValue.Type#spelling()}; {@code str} is read as
 * {@code string}). Integers are JSON integers in their type's range (a {@code u64} up to
 * 2^64-1); floats are JSON numbers read with {@link Float#parseFloat} or
 * {@link Double#parseDouble}, never through the other width. Members may come in any order;
 * any other member, a missing one, a duplicate, or a value of the wrong kind is an error
 * naming the key. {@link #decodeObject} also reads plain JSON values (the Rust peer's
 * {@code --gguf-metadata} form), inferring their type.
 *
 * <p>The decoder is its own, not {@link Json}: a float32 must be read from its decimal text
 * (through a double it could round twice), and a 1M-element array must not become a million
 * boxed Doubles first. It is bounded by {@link ParseLimits#maxArrayLength()} and
 * {@link ParseLimits#maxNestingDepth()}.
 */
public final class TypedJson {
    /** The value of {@link #MARKER_KEY}: this encoding, version 1. */
    public static final String ENCODING = "typed-json/1";

    /**
     * The metadata key that says a file's string values use this encoding. A reader that finds
     * it decodes every value that starts with <code>{</code> as a typed value; every other value
     * is a plain string.
     */
    public static final String MARKER_KEY = "anamnesis.metadata_encoding";

    private TypedJson() {
    }

    // ---------------------------------------------------------------- encoding

    /**
     * Whether a string value must be written in the typed form to read back as itself: it
     * starts with <code>{</code>, which a reader of this encoding takes for a typed value. Every
     * other string is written as it is, so that tools that read plain strings still see
     * {@code format: pt}.
     */
    public static boolean needsTypedForm(String value) {
        return value.startsWith("{");
    }

    /**
     * The JSON text of one typed value.
     *
     * @param key names the key in the error
     * @throws UnsupportedFeatureException for a string with an unpaired UTF-16 surrogate, which
     *         UTF-8 (and so a file) cannot hold
     */
    public static String encode(String key, MetaValue value) {
        StringBuilder sb = new StringBuilder(64);
        encode(key, value, sb);
        return sb.toString();
    }

    private static void encode(String key, MetaValue value, StringBuilder sb) {
        sb.append("{\"type\":\"").append(value.type().spelling()).append('"');
        if (value instanceof MetaValue.Array a) sb.append(",\"item_type\":\"").append(a.elementType().spelling()).append('"');
        sb.append(",\"value\":");
        switch (value) {
            case MetaValue.Array a -> {
                sb.append('[');
                List<MetaValue> values = a.values();
                for (int k = 0; k < values.size(); k++) {
                    if (k > 0) sb.append(',');
                    // an element that is an array carries its own element type: a typed object again
                    if (values.get(k) instanceof MetaValue.Array inner) encode(key, inner, sb);
                    else bare(key, values.get(k), sb);
                }
                sb.append(']');
            }
            default -> bare(key, value, sb);
        }
        sb.append('}');
    }

    /** A scalar as a bare JSON value: number, true/false, string, or a string naming a special float. */
    private static void bare(String key, MetaValue value, StringBuilder sb) {
        switch (value) {
            case MetaValue.Int i -> sb.append(i.type() == MetaValue.Type.U64
                    ? Long.toUnsignedString(i.value()) : Long.toString(i.value()));
            case MetaValue.Real r -> real(r, sb);
            case MetaValue.Bool b -> sb.append(b.value());
            case MetaValue.Str str -> {
                requireUtf8(key, str.value());
                quote(str.value(), sb);
            }
            case MetaValue.Array a -> throw new IllegalStateException("an array is not bare");
        }
    }

    private static void real(MetaValue.Real r, StringBuilder sb) {
        boolean f32 = r.type() == MetaValue.Type.F32;
        double v = r.value();
        if (Double.isNaN(v)) {
            if (f32) {
                int bits = Float.floatToRawIntBits(r.floatValue());
                sb.append(bits == Float.floatToRawIntBits(Float.NaN) ? "\"nan\""
                        : "\"nan:0x" + String.format("%08x", bits) + '"');
            } else {
                long bits = Double.doubleToRawLongBits(v);
                sb.append(bits == Double.doubleToRawLongBits(Double.NaN) ? "\"nan\""
                        : "\"nan:0x" + String.format("%016x", bits) + '"');
            }
        } else if (Double.isInfinite(v)) {
            sb.append(v > 0 ? "\"inf\"" : "\"-inf\"");
        } else {
            // Java's toString is the shortest decimal that parses back to the same value
            // (JDK 19+), and its forms (1.0E-5, 10000.0) are JSON numbers.
            sb.append(f32 ? Float.toString((float) v) : Double.toString(v));
        }
    }

    /** A JSON string literal (RFC 8259): quote, backslash and control characters escaped, the rest as is. */
    public static String quote(String s) {
        StringBuilder sb = new StringBuilder(s.length() + 2);
        quote(s, sb);
        return sb.toString();
    }

    private static void quote(String s, StringBuilder sb) {
        Json.quote(sb, s, false); // typed-json/1 keeps non-ASCII text as it is
    }

    private static void requireUtf8(String key, String s) {
        int bad = unpairedSurrogate(s);
        if (bad >= 0) {
            throw new UnsupportedFeatureException("metadata key '" + key + "': a string holds an unpaired UTF-16 surrogate"
                    + " at character " + bad + ", which UTF-8 cannot encode");
        }
    }

    /** Index of the first unpaired surrogate in {@code s}, or -1. */
    static int unpairedSurrogate(String s) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (!Character.isSurrogate(c)) continue;
            if (Character.isHighSurrogate(c) && i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1))) {
                i++;
                continue;
            }
            return i;
        }
        return -1;
    }

    // ---------------------------------------------------------------- decoding

    /**
     * Decodes one typed value.
     *
     * @param key  the metadata key, named in every error
     * @param json the value's text, a typed object
     * @throws MalformedFileException  when the text is not valid JSON, not a typed object, names
     *                                 an unknown type, or holds a value its type cannot take
     * @throws LimitExceededException  when an array is longer than {@link ParseLimits#maxArrayLength()}
     *                                 or arrays nest deeper than {@link ParseLimits#maxNestingDepth()}
     */
    public static MetaValue decode(String key, String json, ParseLimits limits) {
        Parser p = new Parser(json, key, limits, false);
        p.space();
        MetaValue v = p.typedObject(0);
        p.end();
        return v;
    }

    /**
     * Decodes a JSON object of key to value, each value either a typed object or a plain JSON
     * value whose type is inferred: a string is a {@code string}, {@code true}/{@code false} a
     * {@code bool}, an integer a {@code u32} (an {@code i32} when negative), any other number
     * an {@code f32}, an array has its first element's type (and every element must fit it).
     *
     * @throws MalformedFileException naming the key at fault, as {@link #decode} does
     */
    public static SequencedMap<String, MetaValue> decodeObject(String json, ParseLimits limits) {
        Parser p = new Parser(json, null, limits, true);
        SequencedMap<String, MetaValue> out = p.keyValues();
        p.end();
        return Collections.unmodifiableSequencedMap(out);
    }

    /** The type of a spelling: {@code u8 ... f64, bool, string (or str), array}. */
    public static java.util.Optional<MetaValue.Type> type(String spelling) {
        String s = spelling.toLowerCase(Locale.ROOT);
        if (s.equals("str")) return java.util.Optional.of(MetaValue.Type.STRING);
        for (MetaValue.Type t : MetaValue.Type.values()) {
            if (t.spelling().equals(s)) return java.util.Optional.of(t);
        }
        return java.util.Optional.empty();
    }

    /**
     * Reads one scalar written as text: an integer in its type's range, a float (or
     * {@code nan}, {@code inf}, {@code -inf}), {@code true}/{@code false}, or a string as is.
     *
     * @throws IllegalArgumentException saying what is wrong with the text
     */
    public static MetaValue scalar(MetaValue.Type type, String text) {
        return switch (type) {
            case STRING -> new MetaValue.Str(text);
            case BOOL -> switch (text) {
                case "true" -> new MetaValue.Bool(true);
                case "false" -> new MetaValue.Bool(false);
                default -> throw new IllegalArgumentException("'" + text + "' is not true or false");
            };
            case F32, F64 -> {
                if (text.equals("nan") || text.equals("inf") || text.equals("-inf") || text.startsWith("nan:0x")) {
                    yield real(type, text);
                }
                if (!isJsonNumber(text)) {
                    throw new IllegalArgumentException("'" + text + "' is not a decimal number (nor nan, inf, -inf)");
                }
                yield finite(type, text);
            }
            case ARRAY -> throw new IllegalArgumentException("an array is not a scalar");
            default -> {
                if (!isJsonInteger(text)) throw new IllegalArgumentException("'" + text + "' is not an integer");
                yield integer(type, text);
            }
        };
    }

    private static MetaValue.Real real(MetaValue.Type type, String special) {
        boolean f32 = type == MetaValue.Type.F32;
        return switch (special) {
            case "nan" -> f32 ? MetaValue.Real.f32(Float.NaN) : new MetaValue.Real(type, Double.NaN);
            case "inf" -> new MetaValue.Real(type, Double.POSITIVE_INFINITY);
            case "-inf" -> new MetaValue.Real(type, Double.NEGATIVE_INFINITY);
            default -> {
                if (!special.startsWith("nan:0x")) throw new IllegalArgumentException("'" + special + "' is not a number");
                String hex = special.substring(6);
                if (hex.length() != (f32 ? 8 : 16)) {
                    throw new IllegalArgumentException("'" + special + "' does not give the " + (f32 ? 8 : 16)
                            + " hex digits of a " + type.spelling() + " NaN");
                }
                try {
                    if (f32) {
                        float f = Float.intBitsToFloat(Integer.parseUnsignedInt(hex, 16));
                        if (!Float.isNaN(f)) throw new IllegalArgumentException("'" + special + "' are not the bits of a NaN");
                        yield MetaValue.Real.f32(f);
                    }
                    double d = Double.longBitsToDouble(Long.parseUnsignedLong(hex, 16));
                    if (!Double.isNaN(d)) throw new IllegalArgumentException("'" + special + "' are not the bits of a NaN");
                    yield new MetaValue.Real(type, d);
                } catch (NumberFormatException e) {
                    throw new IllegalArgumentException("'" + special + "' does not give hex digits");
                }
            }
        };
    }

    private static MetaValue.Real finite(MetaValue.Type type, String text) {
        if (type == MetaValue.Type.F32) {
            float f = Float.parseFloat(text);
            if (Float.isInfinite(f)) throw new IllegalArgumentException(text + " is out of the range of f32");
            return MetaValue.Real.f32(f);
        }
        double d = Double.parseDouble(text);
        if (Double.isInfinite(d)) throw new IllegalArgumentException(text + " is out of the range of f64");
        return new MetaValue.Real(type, d);
    }

    private static MetaValue.Int integer(MetaValue.Type type, String text) {
        long v;
        try {
            if (type == MetaValue.Type.U64) {
                if (text.startsWith("-")) throw new NumberFormatException();
                v = Long.parseUnsignedLong(text);
            } else {
                v = Long.parseLong(text);
            }
            return new MetaValue.Int(type, v);
        } catch (IllegalArgumentException e) {
            // NumberFormatException (past 64 bits) or MetaValue.Int's range check
            throw new IllegalArgumentException(text + " does not fit " + type.spelling());
        }
    }

    /** JSON's number grammar: {@code -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?}. */
    static boolean isJsonNumber(String s) {
        int i = 0, n = s.length();
        if (i < n && s.charAt(i) == '-') i++;
        int digits = i;
        if (i < n && s.charAt(i) == '0') {
            i++;
        } else {
            while (i < n && isDigit(s.charAt(i))) i++;
        }
        if (i == digits) return false;
        if (i < n && s.charAt(i) == '.') {
            int f = ++i;
            while (i < n && isDigit(s.charAt(i))) i++;
            if (i == f) return false;
        }
        if (i < n && (s.charAt(i) == 'e' || s.charAt(i) == 'E')) {
            i++;
            if (i < n && (s.charAt(i) == '+' || s.charAt(i) == '-')) i++;
            int e = i;
            while (i < n && isDigit(s.charAt(i))) i++;
            if (i == e) return false;
        }
        return i == n;
    }

    static boolean isJsonInteger(String s) {
        return isJsonNumber(s) && s.indexOf('.') < 0 && s.indexOf('e') < 0 && s.indexOf('E') < 0;
    }

    private static boolean isDigit(char c) {
        return c >= '0' && c <= '9';
    }

    /**
     * A recursive-descent reader over one text. Depth counts nested arrays, as GGUF's reader
     * does, and is bounded, so the recursion is too.
     */
    private static final class Parser {
        private final String text;
        private final ParseLimits limits;
        /** Plain JSON values are read with their type inferred ({@link #decodeObject}), not refused. */
        private final boolean lenient;
        private String key;
        private int pos;

        Parser(String text, String key, ParseLimits limits, boolean lenient) {
            this.text = text;
            this.key = key;
            this.limits = limits;
            this.lenient = lenient;
        }

        /** {@code { "key": value, ... }} for {@link #decodeObject}. */
        SequencedMap<String, MetaValue> keyValues() {
            space();
            expect('{', "a JSON object of key/values");
            SequencedMap<String, MetaValue> out = new LinkedHashMap<>();
            space();
            if (peek() == '}') {
                pos++;
                return out;
            }
            while (true) {
                space();
                if (peek() != '"') throw error("expected a key");
                key = null;
                String k = string();
                key = k;
                if (out.containsKey(k)) throw error("the key appears twice");
                ParseLimits.check("metadata key/values", out.size() + 1L, limits.maxMetadataEntries());
                space();
                expect(':', "':' after the key");
                space();
                out.put(k, peek() == '{' ? typedObject(0) : inferred(0));
                space();
                char c = next();
                if (c == '}') return out;
                if (c != ',') throw error("expected ',' or '}'");
            }
        }

        /**
         * A plain JSON value whose type is inferred (see {@link #decodeObject}).
         *
         * @param depth arrays around it
         */
        private MetaValue inferred(int depth) {
            char c = peek();
            if (c == '"') return new MetaValue.Str(string());
            if (c == 't' || c == 'f') return bool();
            if (c == '{') return typedObject(depth);
            if (c == 'n') throw error("null has no type");
            if (c == '[') {
                depth(depth + 1);
                int start = pos;
                pos++;
                space();
                if (peek() == ']') {
                    throw error("an empty array has no element to infer its type from; write "
                            + "{\"type\":\"array\",\"item_type\":\"...\",\"value\":[]}");
                }
                MetaValue.Type first = inferredType();
                pos = start;
                return array(first, depth + 1);
            }
            String number = number();
            if (isJsonInteger(number)) {
                MetaValue.Type t = number.startsWith("-") ? MetaValue.Type.I32 : MetaValue.Type.U32;
                try {
                    return integer(t, number);
                } catch (IllegalArgumentException e) {
                    throw error(number + " does not fit " + t.spelling() + ", the type a plain integer is given; write "
                            + "{\"type\":\"i64\",\"value\":" + number + "} (or u64)");
                }
            }
            try {
                return finite(MetaValue.Type.F32, number);
            } catch (IllegalArgumentException e) {
                throw error(e.getMessage() + ", the type a plain number is given; write {\"type\":\"f64\",...}");
            }
        }

        /**
         * The type {@link #inferred} would give the value here, read without decoding it (so
         * that nested arrays are not read once per level to learn their types).
         */
        private MetaValue.Type inferredType() {
            int start = pos;
            try {
                return switch (peek()) {
                    case '"' -> MetaValue.Type.STRING;
                    case 't', 'f' -> MetaValue.Type.BOOL;
                    case '[' -> MetaValue.Type.ARRAY;
                    case 'n' -> throw error("null has no type");
                    case '{' -> {
                        pos++;
                        String type = null;
                        while (type == null) {
                            space();
                            if (peek() != '"') throw error("expected a member name");
                            String member = string();
                            space();
                            expect(':', "':' after \"" + member + "\"");
                            space();
                            if (member.equals("type")) type = memberString("type");
                            else skip(1);
                            space();
                            if (type == null && next() != ',') throw error("a typed value has no \"type\"");
                        }
                        yield knownType(type, "type");
                    }
                    default -> {
                        String n = number();
                        yield !isJsonInteger(n) ? MetaValue.Type.F32
                                : n.startsWith("-") ? MetaValue.Type.I32 : MetaValue.Type.U32;
                    }
                };
            } finally {
                pos = start;
            }
        }

        /** <code>{"type": T, ["item_type": T,] "value": V}</code>, members in any order. */
        MetaValue typedObject(int depth) {
            expect('{', "a typed value {\"type\": ..., \"value\": ...}");
            String type = null, itemType = null;
            int valueAt = -1;
            space();
            if (peek() != '}') {
                while (true) {
                    space();
                    if (peek() != '"') throw error("expected a member name");
                    String member = string();
                    space();
                    expect(':', "':' after \"" + member + "\"");
                    space();
                    switch (member) {
                        case "type" -> {
                            if (type != null) throw error("\"type\" appears twice");
                            type = memberString("type");
                        }
                        case "item_type" -> {
                            if (itemType != null) throw error("\"item_type\" appears twice");
                            itemType = memberString("item_type");
                        }
                        case "value" -> {
                            if (valueAt >= 0) throw error("\"value\" appears twice");
                            valueAt = pos;
                            // a typed array nests two JSON levels (object, array) per array
                            skip(2 * depth + 1);
                        }
                        default -> throw error("unknown member \"" + member + "\" (a typed value has type, item_type and value)");
                    }
                    space();
                    char c = next();
                    if (c == '}') break;
                    if (c != ',') throw error("expected ',' or '}'");
                }
            } else {
                pos++;
            }
            if (type == null) throw error("a typed value has no \"type\"");
            if (valueAt < 0) throw error("a typed value has no \"value\"");
            MetaValue.Type t = knownType(type, "type");
            MetaValue.Type item = null;
            if (t == MetaValue.Type.ARRAY) {
                if (itemType == null) throw error("an array has no \"item_type\"");
                item = knownType(itemType, "item_type");
            } else if (itemType != null) {
                throw error("a " + t.spelling() + " has no \"item_type\"");
            }
            int end = pos;
            pos = valueAt;
            MetaValue v = t == MetaValue.Type.ARRAY ? array(item, depth + 1) : scalar(t);
            pos = end;
            return v;
        }

        private MetaValue.Type knownType(String spelling, String member) {
            return TypedJson.type(spelling).orElseThrow(() -> error("unknown " + member + " \"" + spelling
                    + "\" (types: u8 i8 u16 i16 u32 i32 u64 i64 f32 f64 bool string array)"));
        }

        private String memberString(String member) {
            if (peek() != '"') throw error("\"" + member + "\" is not a string");
            return string();
        }

        /**
         * The elements of an array of {@code item}: typed arrays when {@code item} is an array,
         * bare values otherwise.
         *
         * @param depth this array's nesting, 1 for an outermost array
         */
        private MetaValue.Array array(MetaValue.Type item, int depth) {
            depth(depth);
            expect('[', "an array");
            List<MetaValue> values = new ArrayList<>();
            space();
            if (peek() == ']') {
                pos++;
                return new MetaValue.Array(item, values);
            }
            String lengthOf = where() + "length of an array";
            while (true) {
                space();
                MetaValue v;
                if (item == MetaValue.Type.ARRAY) {
                    v = peek() == '[' && lenient ? inferred(depth) : typedObject(depth);
                    if (!(v instanceof MetaValue.Array)) throw error("an array of arrays holds a " + v.type().spelling());
                } else {
                    v = scalar(item);
                }
                values.add(v);
                if (values.size() > limits.maxArrayLength()) ParseLimits.check(lengthOf, values.size(), limits.maxArrayLength());
                space();
                char c = next();
                if (c == ']') return new MetaValue.Array(item, values);
                if (c != ',') throw error("expected ',' or ']'");
            }
        }

        /** One bare value of a scalar type. */
        private MetaValue scalar(MetaValue.Type t) {
            char c = peek();
            switch (t) {
                case STRING -> {
                    if (c != '"') throw error("a string value is not a JSON string");
                    return new MetaValue.Str(string());
                }
                case BOOL -> {
                    return bool();
                }
                case F32, F64 -> {
                    try {
                        if (c == '"') {
                            String s = string();
                            return switch (s) {
                                case "nan", "inf", "-inf" -> real(t, s);
                                default -> {
                                    if (s.startsWith("nan:0x")) yield real(t, s);
                                    throw new IllegalArgumentException("\"" + s + "\" is not a number"
                                            + " (a float is a JSON number, \"nan\", \"inf\", \"-inf\" or \"nan:0x<bits>\")");
                                }
                            };
                        }
                        return finite(t, number());
                    } catch (IllegalArgumentException e) {
                        throw error("a " + t.spelling() + " value: " + e.getMessage());
                    }
                }
                default -> {
                    String n = number();
                    if (!isJsonInteger(n)) throw error("a " + t.spelling() + " value is not an integer: " + n);
                    try {
                        return integer(t, n);
                    } catch (IllegalArgumentException e) {
                        throw error(e.getMessage());
                    }
                }
            }
        }

        private MetaValue.Bool bool() {
            if (text.startsWith("true", pos)) {
                pos += 4;
                return new MetaValue.Bool(true);
            }
            if (text.startsWith("false", pos)) {
                pos += 5;
                return new MetaValue.Bool(false);
            }
            throw error("a bool value is not true or false");
        }

        /** Steps over one JSON value, checking its syntax; {@code level} bounds the recursion. */
        private void skip(int level) {
            if (level > 2 * limits.maxNestingDepth() + 2) depth(limits.maxNestingDepth() + 1);
            int depth = level;
            char c = peek();
            switch (c) {
                case '{' -> {
                    pos++;
                    space();
                    if (peek() == '}') {
                        pos++;
                        return;
                    }
                    while (true) {
                        space();
                        if (peek() != '"') throw error("expected a member name");
                        string();
                        space();
                        expect(':', "':'");
                        space();
                        skip(depth + 1);
                        space();
                        char d = next();
                        if (d == '}') return;
                        if (d != ',') throw error("expected ',' or '}'");
                    }
                }
                case '[' -> {
                    pos++;
                    space();
                    if (peek() == ']') {
                        pos++;
                        return;
                    }
                    while (true) {
                        space();
                        skip(depth + 1);
                        space();
                        char d = next();
                        if (d == ']') return;
                        if (d != ',') throw error("expected ',' or ']'");
                    }
                }
                case '"' -> string();
                case 't' -> literal("true");
                case 'f' -> literal("false");
                case 'n' -> literal("null");
                default -> number();
            }
        }

        private void literal(String word) {
            if (!text.startsWith(word, pos)) throw error("unexpected character '" + text.charAt(pos) + "'");
            pos += word.length();
        }

        private String number() {
            int start = pos;
            while (pos < text.length() && "+-0123456789.eE".indexOf(text.charAt(pos)) >= 0) pos++;
            String n = text.substring(start, pos);
            if (!isJsonNumber(n)) {
                pos = start;
                throw error(n.isEmpty() ? "unexpected character '" + text.charAt(pos) + "'" : "'" + n + "' is not a JSON number");
            }
            return n;
        }

        private String string() {
            expect('"', "a string");
            StringBuilder sb = null;
            int runStart = pos;
            while (true) {
                if (pos >= text.length()) throw error("a string is not closed");
                char c = text.charAt(pos++);
                if (c == '"') break;
                if (c < 0x20) throw error("a control character inside a string");
                if (c != '\\') continue;
                if (sb == null) sb = new StringBuilder();
                sb.append(text, runStart, pos - 1);
                char e = next();
                switch (e) {
                    case '"', '\\', '/' -> sb.append(e);
                    case 'b' -> sb.append('\b');
                    case 'f' -> sb.append('\f');
                    case 'n' -> sb.append('\n');
                    case 'r' -> sb.append('\r');
                    case 't' -> sb.append('\t');
                    case 'u' -> {
                        if (pos + 4 > text.length()) throw error("a short \\u escape");
                        int cp = 0;
                        for (int k = 0; k < 4; k++) {
                            int d = Character.digit(text.charAt(pos + k), 16);
                            if (d < 0) throw error("a bad \\u escape");
                            cp = cp * 16 + d;
                        }
                        sb.append((char) cp);
                        pos += 4;
                    }
                    default -> throw error("a bad escape \\" + e);
                }
                runStart = pos;
            }
            String s = sb == null ? text.substring(runStart, pos - 1) : sb.append(text, runStart, pos - 1).toString();
            int bad = unpairedSurrogate(s);
            if (bad >= 0) throw error("a string holds an unpaired UTF-16 surrogate (\\u" + String.format("%04x", (int) s.charAt(bad)) + "), which is not text");
            return s;
        }

        void space() {
            while (pos < text.length()) {
                char c = text.charAt(pos);
                if (c != ' ' && c != '\t' && c != '\n' && c != '\r') return;
                pos++;
            }
        }

        void end() {
            space();
            if (pos != text.length()) throw error("characters after the value");
        }

        private void depth(int depth) {
            if (depth > limits.maxNestingDepth()) {
                throw new LimitExceededException(where() + "nesting depth is " + depth + ", over the limit of "
                        + limits.maxNestingDepth());
            }
        }

        private char peek() {
            if (pos >= text.length()) throw error("the text ends too early");
            return text.charAt(pos);
        }

        private char next() {
            char c = peek();
            pos++;
            return c;
        }

        private void expect(char c, String what) {
            if (pos >= text.length() || text.charAt(pos) != c) throw error("expected " + what);
            pos++;
        }

        private String where() {
            return key == null ? "" : "metadata key '" + key + "': ";
        }

        private MalformedFileException error(String what) {
            return new MalformedFileException(where() + "not a " + ENCODING + " value: " + what
                    + " (at character " + pos + ")");
        }
    }
}
