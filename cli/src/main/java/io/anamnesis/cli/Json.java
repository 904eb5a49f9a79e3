package io.anamnesis.cli;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;

import java.io.PrintWriter;
import java.lang.reflect.Array;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * JSON output with Jackson. Only {@code --json} and {@code ollama:} references load it, so
 * the text commands do not pay for Jackson's start-up.
 */
final class Json {
    /** Arrays longer than this are summarized in {@code inspect --json} unless {@code --full}. */
    static final int MAX_ARRAY = 64;
    /** How many leading elements a summarized array keeps. */
    static final int HEAD = 8;

    private Json() {
    }

    private static final class Holder {
        static final ObjectMapper MAPPER = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    }

    /** Prints one JSON document and a newline. */
    static void print(PrintWriter out, Object value) {
        try {
            out.println(Holder.MAPPER.writeValueAsString(value));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("cannot render JSON: " + e.getOriginalMessage(), e);
        }
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
