package io.anamnesis.api.model;

import io.anamnesis.api.MalformedFileException;

import java.util.ArrayList;
import java.util.List;

/**
 * Rewrites a model's {@code config.json} by editing its text, so that every other key keeps
 * its place, its spelling and its numbers exactly as written. For a recovered model
 * ({@link #rewrite}) the {@code quantization_config} member goes (the weights are no longer
 * quantized, and transformers would set up quantized layers for them), {@code torch_dtype} is
 * set to the output dtype (added as the last key when absent), and {@code dtype}, the name
 * newer transformers versions write, is set too when present. For a quantized one
 * ({@link #quantized}) {@code quantization_config} is replaced by the quantizer's, which is
 * what transformers and vLLM read from a model folder.
 */
public final class ConfigJson {
    private ConfigJson() {
    }

    /** One top-level member: where its key starts and its value ends. */
    record Member(String key, int start, int valueStart, int end) {
    }

    /**
     * @param torchDtype the dtype as torch names it: {@code bfloat16}, {@code float16}, {@code float32}
     * @throws MalformedFileException when the text is not a JSON object
     */
    public static String rewrite(String text, String torchDtype) {
        List<Member> members = members(text);
        StringBuilder out = new StringBuilder(text);
        String value = "\"" + torchDtype + "\"";
        boolean hasTorchDtype = false;
        // edits from the end backwards, so earlier offsets stay valid
        for (int i = members.size() - 1; i >= 0; i--) {
            Member m = members.get(i);
            switch (m.key()) {
                case "torch_dtype" -> {
                    out.replace(m.valueStart(), m.end(), value);
                    hasTorchDtype = true;
                }
                case "dtype" -> out.replace(m.valueStart(), m.end(), value);
                case "quantization_config" -> removeMember(out, members, i);
                default -> {
                }
            }
        }
        if (!hasTorchDtype) appendMember(out, "torch_dtype", value);
        return out.toString();
    }

    /**
     * The config of a model quantized as {@code quantizationConfig} says: that JSON object in
     * place of the {@code quantization_config} member (a recovered input's scheme is no longer
     * the weights'), added as the last key when absent; without one, the member goes.
     *
     * @throws MalformedFileException when the text is not a JSON object
     * @throws IllegalArgumentException when {@code quantizationConfig} is not a JSON object
     */
    public static String quantized(String text, java.util.Optional<String> quantizationConfig) {
        List<Member> members = members(text);
        String value = quantizationConfig.map(String::strip).orElse(null);
        if (value != null) {
            try {
                members(value);
            } catch (MalformedFileException e) {
                throw new IllegalArgumentException("the quantization config is not a JSON object: " + e.getMessage(), e);
            }
        }
        StringBuilder out = new StringBuilder(text);
        for (int i = members.size() - 1; i >= 0; i--) {
            Member m = members.get(i);
            if (!m.key().equals("quantization_config")) continue;
            if (value != null) {
                out.replace(m.valueStart(), m.end(), value);
                return out.toString();
            }
            removeMember(out, members, i);
        }
        if (value != null) appendMember(out, "quantization_config", value);
        return out.toString();
    }

    private static void removeMember(StringBuilder out, List<Member> members, int i) {
        Member m = members.get(i);
        if (i > 0) out.delete(members.get(i - 1).end(), m.end());
        else if (members.size() > 1) out.delete(m.start(), members.get(1).start());
        else out.delete(m.start(), m.end());
    }

    /** Adds {@code "key": value} after the last member, indented as it is (or first, in an empty object). */
    private static void appendMember(StringBuilder out, String key, String value) {
        String member = "\"" + key + "\": " + value;
        List<Member> now = members(out.toString());
        if (now.isEmpty()) {
            out.insert(out.indexOf("{") + 1, member);
            return;
        }
        Member last = now.getLast();
        String s = out.toString();
        int lineStart = s.lastIndexOf('\n', last.start()) + 1;
        String indent = s.substring(lineStart, last.start()).isBlank() ? s.substring(lineStart, last.start()) : null;
        out.insert(last.end(), indent == null ? ", " + member : ",\n" + indent + member);
    }

    /** The top-level members of a JSON object text, in order. */
    static List<Member> members(String text) {
        Scanner s = new Scanner(text);
        s.space();
        s.expect('{');
        List<Member> out = new ArrayList<>();
        s.space();
        if (s.peek() == '}') return out;
        while (true) {
            s.space();
            int start = s.pos;
            String key = s.string();
            s.space();
            s.expect(':');
            s.space();
            int valueStart = s.pos;
            s.value(0);
            out.add(new Member(key, start, valueStart, s.pos));
            s.space();
            char c = s.next();
            if (c == '}') break;
            if (c != ',') throw s.error("expected , or }");
        }
        s.space();
        if (s.pos != text.length()) throw s.error("trailing characters");
        return out;
    }

    /** Just enough of a JSON scanner to find where values end. */
    private static final class Scanner {
        private final String text;
        int pos;

        Scanner(String text) {
            this.text = text;
        }

        void space() {
            while (pos < text.length() && " \t\r\n".indexOf(text.charAt(pos)) >= 0) pos++;
        }

        char peek() {
            if (pos >= text.length()) throw error("unexpected end");
            return text.charAt(pos);
        }

        char next() {
            char c = peek();
            pos++;
            return c;
        }

        void expect(char c) {
            if (next() != c) throw error("expected " + c);
        }

        String string() {
            expect('"');
            StringBuilder sb = new StringBuilder();
            while (true) {
                char c = next();
                if (c == '"') return sb.toString();
                if (c == '\\') {
                    char e = next();
                    if (e == 'u') {
                        if (pos + 4 > text.length()) throw error("short \\u escape");
                        pos += 4;
                    }
                    sb.append('\\').append(e);
                } else {
                    sb.append(c);
                }
            }
        }

        void value(int depth) {
            if (depth > 256) throw error("nesting too deep");
            char c = peek();
            switch (c) {
                case '"' -> string();
                case '{', '[' -> {
                    char close = c == '{' ? '}' : ']';
                    pos++;
                    space();
                    if (peek() == close) {
                        pos++;
                        return;
                    }
                    while (true) {
                        space();
                        if (c == '{') {
                            string();
                            space();
                            expect(':');
                            space();
                        }
                        value(depth + 1);
                        space();
                        char n = next();
                        if (n == close) return;
                        if (n != ',') throw error("expected , or " + close);
                    }
                }
                default -> {
                    int start = pos;
                    while (pos < text.length() && "+-0123456789.eEtruefalsnNaIiy".indexOf(text.charAt(pos)) >= 0) pos++;
                    if (start == pos) throw error("unexpected character '" + c + "'");
                }
            }
        }

        MalformedFileException error(String what) {
            return new MalformedFileException("config.json is not a JSON object: " + what + " at character " + pos);
        }
    }
}
