package io.anamnesis.cli;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON output through Jackson's streaming generator: the values are plain maps, lists,
 * strings, numbers and booleans, so databind's ObjectMapper (~150 ms of class loading and
 * set-up on a cold JVM, measured) is not needed on the {@code --json} fast path.
 */
final class Json {
    /** Arrays longer than this are summarized in {@code inspect --json} unless {@code --full}. */
    static final int MAX_ARRAY = 64;
    /** How many leading elements a summarized array keeps. */
    static final int HEAD = 8;

    private Json() {
    }

    /** Prints one JSON document (indented) and a newline. */
    static void print(PrintWriter out, Object value) {
        out.println(render(value));
    }

    static String render(Object value) {
        StringWriter sw = new StringWriter();
        try (JsonGenerator g = new JsonFactory().createGenerator(sw)) {
            g.useDefaultPrettyPrinter();
            write(g, value);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return sw.toString();
    }

    private static void write(JsonGenerator g, Object value) throws IOException {
        switch (value) {
            case null -> g.writeNull();
            case String s -> g.writeString(s);
            case Boolean b -> g.writeBoolean(b);
            case Integer i -> g.writeNumber(i);
            case Long l -> g.writeNumber(l);
            case Short s -> g.writeNumber(s);
            case Byte b -> g.writeNumber(b);
            case java.math.BigInteger b -> g.writeNumber(b);
            case java.math.BigDecimal d -> g.writeNumber(d);
            case Double d when d.isNaN() || d.isInfinite() -> g.writeString(d.toString());
            case Float f when f.isNaN() || f.isInfinite() -> g.writeString(f.toString());
            case Double d -> g.writeNumber(d);
            case Float f -> g.writeNumber(f);
            case Map<?, ?> m -> {
                g.writeStartObject();
                for (var e : m.entrySet()) {
                    g.writeFieldName(String.valueOf(e.getKey()));
                    write(g, e.getValue());
                }
                g.writeEndObject();
            }
            case Iterable<?> it -> {
                g.writeStartArray();
                for (Object v : it) write(g, v);
                g.writeEndArray();
            }
            default -> {
                List<?> list = asList(value);
                if (list != null) write(g, list);
                else g.writeString(String.valueOf(value));
            }
        }
    }

    /**
     * Reads a small JSON document (an Ollama manifest) into maps, lists, strings, numbers,
     * booleans and nulls, nesting at most {@code maxDepth} deep.
     *
     * @throws com.fasterxml.jackson.core.JsonProcessingException when it is not JSON
     */
    static Object parse(byte[] json, int maxDepth) throws IOException {
        try (com.fasterxml.jackson.core.JsonParser p = new JsonFactory().createParser(json)) {
            if (p.nextToken() == null) throw new com.fasterxml.jackson.core.JsonParseException(p, "empty document");
            Object value = read(p, maxDepth);
            if (p.nextToken() != null) throw new com.fasterxml.jackson.core.JsonParseException(p, "trailing content");
            return value;
        }
    }

    private static Object read(com.fasterxml.jackson.core.JsonParser p, int depth) throws IOException {
        var token = p.currentToken();
        if ((token == com.fasterxml.jackson.core.JsonToken.START_OBJECT
                || token == com.fasterxml.jackson.core.JsonToken.START_ARRAY) && depth <= 0) {
            throw new com.fasterxml.jackson.core.JsonParseException(p, "nested too deep");
        }
        return switch (token) {
            case START_OBJECT -> {
                Map<String, Object> m = new LinkedHashMap<>();
                while (p.nextToken() == com.fasterxml.jackson.core.JsonToken.FIELD_NAME) {
                    String name = p.currentName();
                    p.nextToken();
                    m.put(name, read(p, depth - 1));
                }
                yield m;
            }
            case START_ARRAY -> {
                List<Object> l = new ArrayList<>();
                while (p.nextToken() != com.fasterxml.jackson.core.JsonToken.END_ARRAY) l.add(read(p, depth - 1));
                yield l;
            }
            case VALUE_STRING -> p.getText();
            case VALUE_NUMBER_INT -> p.getNumberValue();
            case VALUE_NUMBER_FLOAT -> p.getDoubleValue();
            case VALUE_TRUE -> true;
            case VALUE_FALSE -> false;
            case VALUE_NULL -> null;
            default -> throw new com.fasterxml.jackson.core.JsonParseException(p, "unexpected " + token);
        };
    }

    /**
     * Metadata for JSON: maps and lists walked recursively; a list (or Java array) of more
     * than {@value #MAX_ARRAY} elements becomes {@code {"type":"array","length":N,"head":[...]}}
     * unless {@code full}. A GGUF vocabulary of 150k tokens stays a few lines.
     */
    static Object summarize(Object value, boolean full) {
        if (value instanceof Map<?, ?> m) {
            Map<String, Object> out = new LinkedHashMap<>();
            m.forEach((k, v) -> out.put(String.valueOf(k), summarize(v, full)));
            return out;
        }
        List<?> list = asList(value);
        if (list != null) {
            if (!full && list.size() > MAX_ARRAY) {
                Map<String, Object> out = new LinkedHashMap<>();
                out.put("type", "array");
                out.put("length", list.size());
                List<Object> head = new ArrayList<>();
                for (Object v : list.subList(0, HEAD)) head.add(summarize(v, false));
                out.put("head", head);
                return out;
            }
            List<Object> out = new ArrayList<>(list.size());
            for (Object v : list) out.add(summarize(v, full));
            return out;
        }
        return value;
    }

    private static List<?> asList(Object value) {
        if (value instanceof List<?> l) return l;
        if (value != null && value.getClass().isArray()) {
            int n = Array.getLength(value);
            List<Object> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) out.add(Array.get(value, i));
            return out;
        }
        return null;
    }
}
