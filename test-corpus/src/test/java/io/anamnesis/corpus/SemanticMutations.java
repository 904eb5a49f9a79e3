package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Function;

/**
 * Mutants that stay well-formed at the container level, so they get past the reader and
 * reach the dequantizers' claim and kernel code: a safetensors file rewritten with a tensor
 * reshaped, retyped, dropped, renamed, shrunk or filled with extreme values, or with its
 * {@code quantization_config} (and bitsandbytes' JSON {@code quant_state} tensor) edited.
 * Every mutant is a fresh, valid safetensors file; only its meaning is hostile.
 */
final class SemanticMutations {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private SemanticMutations() {
    }

    record Tensor(String name, String dtype, long[] shape, byte[] bytes) {
        Tensor withShape(long... s) {
            return new Tensor(name, dtype, s, bytes);
        }

        Tensor withDtype(String d, long... s) {
            return new Tensor(name, d, s, bytes);
        }

        Tensor withBytes(long[] s, byte[] b) {
            return new Tensor(name, dtype, s, b);
        }
    }

    record Model(Map<String, String> metadata, List<Tensor> tensors) {
    }

    /** Mutants of a safetensors file; empty when the file is not one this parser follows. */
    static List<Mutations.Mutant> of(byte[] file) {
        Model model;
        try {
            model = parse(file);
        } catch (RuntimeException | java.io.IOException notSafetensors) {
            return List.of();
        }
        List<Mutations.Mutant> out = new ArrayList<>();
        List<Tensor> ts = model.tensors();
        for (int i = 0; i < ts.size() && i < 12; i++) {
            Tensor t = ts.get(i);
            int at = i;
            String n = shortName(t.name());
            long[] s = t.shape();
            int size = elementSize(t.dtype());
            // same bytes, other shape
            List<long[]> shapes = new ArrayList<>();
            shapes.add(reversed(s));
            shapes.add(new long[]{product(s)});
            shapes.add(prepend(1, s));
            if (s.length > 0 && s[s.length - 1] % 2 == 0) {
                long[] split = Arrays.copyOf(s, s.length + 1);
                split[s.length - 1] = s[s.length - 1] / 2;
                split[s.length] = 2;
                shapes.add(split);
            }
            shapes.add(Arrays.copyOf(s, s.length + 1 == 0 ? 0 : s.length + 1));
            shapes.get(shapes.size() - 1)[s.length] = 1;
            for (long[] shape : shapes) {
                if (Arrays.equals(shape, s)) continue;
                out.add(replace(model, "st.reshape(" + n + ")=" + Arrays.toString(shape), at, t.withShape(shape)));
            }
            // same bytes, another dtype of the same width, or another width with the last dim rescaled
            for (String d : sameWidth(t.dtype())) {
                out.add(replace(model, "st.dtype(" + n + ")=" + d, at, t.withDtype(d, s)));
            }
            long total = t.bytes().length;
            for (String d : new String[]{"U8", "I32", "F16", "F32", "I64"}) {
                int w = elementSize(d);
                if (w == size || size == 0 || total % w != 0) continue;
                long[] shape = s.length == 0 ? new long[]{total / w} : s.clone();
                if (s.length > 0) {
                    long rowBytes = s[s.length - 1] * size;
                    if (rowBytes % w != 0) continue;
                    shape[s.length - 1] = rowBytes / w;
                }
                out.add(replace(model, "st.dtype(" + n + ")=" + d + Arrays.toString(shape), at, t.withDtype(d, shape)));
            }
            // fewer or more rows, no elements at all
            if (s.length > 0 && s[0] >= 2) {
                long[] half = s.clone();
                half[0] = s[0] / 2;
                int bytes = (int) (t.bytes().length / s[0] * half[0]);
                out.add(replace(model, "st.halve(" + n + ")", at, t.withBytes(half, Arrays.copyOf(t.bytes(), bytes))));
            }
            if (s.length > 0 && t.bytes().length <= 1 << 20) {
                long[] twice = s.clone();
                twice[0] = s[0] * 2;
                byte[] b = Arrays.copyOf(t.bytes(), t.bytes().length * 2);
                System.arraycopy(t.bytes(), 0, b, t.bytes().length, t.bytes().length);
                out.add(replace(model, "st.double(" + n + ")", at, t.withBytes(twice, b)));
            }
            long[] empty = s.length == 0 ? new long[]{0} : s.clone();
            empty[0] = 0;
            out.add(replace(model, "st.empty(" + n + ")", at, t.withBytes(empty, new byte[0])));
            out.add(replace(model, "st.scalar(" + n + ")", at, t.withBytes(new long[0], Arrays.copyOf(t.bytes(), size))));
            // extreme contents: NaN/-1 everywhere, zero everywhere, largest positive, alternating signs
            for (var fill : fills(size).entrySet()) {
                byte[] b = t.bytes().clone();
                byte[] pattern = fill.getValue();
                for (int k = 0; k < b.length; k++) b[k] = pattern[k % pattern.length];
                out.add(replace(model, "st.fill(" + n + ")=" + fill.getKey(), at, t.withBytes(s, b)));
            }
            out.add(new Mutations.Mutant("st.drop(" + n + ")", x -> {
                List<Tensor> l = new ArrayList<>(ts);
                l.remove(at);
                return serialize(model.metadata(), l);
            }));
            out.add(new Mutations.Mutant("st.rename(" + n + ")", x -> {
                List<Tensor> l = new ArrayList<>(ts);
                l.set(at, new Tensor(t.name() + "_", t.dtype(), t.shape(), t.bytes()));
                return serialize(model.metadata(), l);
            }));
            if (i + 1 < ts.size()) {
                Tensor u = ts.get(i + 1);
                out.add(new Mutations.Mutant("st.swapnames(" + n + "," + shortName(u.name()) + ")", x -> {
                    List<Tensor> l = new ArrayList<>(ts);
                    l.set(at, new Tensor(u.name(), t.dtype(), t.shape(), t.bytes()));
                    l.set(at + 1, new Tensor(t.name(), u.dtype(), u.shape(), u.bytes()));
                    return serialize(model.metadata(), l);
                }));
            }
            // bitsandbytes keeps its quant state as JSON in a U8 tensor
            if (t.name().contains("quant_state")) {
                for (var e : jsonEdits(new String(t.bytes(), StandardCharsets.UTF_8)).entrySet()) {
                    byte[] b = e.getValue().getBytes(StandardCharsets.UTF_8);
                    out.add(replace(model, "st.quant_state(" + n + ")." + e.getKey(), at, t.withBytes(new long[]{b.length}, b)));
                }
            }
        }
        for (var m : model.metadata().entrySet()) {
            for (var e : jsonEdits(m.getValue()).entrySet()) {
                Map<String, String> meta = new LinkedHashMap<>(model.metadata());
                meta.put(m.getKey(), e.getValue());
                out.add(new Mutations.Mutant("st.meta(" + m.getKey() + ")." + e.getKey(), x -> serialize(meta, ts)));
            }
        }
        return out;
    }

    /**
     * The file with its {@code quantization_config} moved out of the header into a file
     * beside it ({@code config.json}, {@code quantize_config.json}, {@code quant_config.json}),
     * where dequantizers look next, and that file edited or made hostile.
     */
    static List<Mutations.Mutant> sidecars(byte[] file) {
        Model model;
        try {
            model = parse(file);
        } catch (RuntimeException | java.io.IOException notSafetensors) {
            return List.of();
        }
        String config = model.metadata().get("quantization_config");
        if (config == null) return List.of();
        Map<String, String> meta = new LinkedHashMap<>(model.metadata());
        meta.remove("quantization_config");
        byte[] bare = serialize(meta, model.tensors());
        Map<String, byte[]> contents = new LinkedHashMap<>();
        contents.put("as-is", config.getBytes(StandardCharsets.UTF_8));
        jsonEdits(config).forEach((k, v) -> contents.put(k, v.getBytes(StandardCharsets.UTF_8)));
        contents.put("<empty>", new byte[0]);
        contents.put("<null>", "null".getBytes(StandardCharsets.UTF_8));
        contents.put("<array>", "[1,2]".getBytes(StandardCharsets.UTF_8));
        contents.put("<bad-utf8>", new byte[]{'{', '"', (byte) 0xC3, (byte) 0x28, '"', ':', '1', '}'});
        contents.put("<nested-100000>", ("[".repeat(100_000) + "]".repeat(100_000)).getBytes(StandardCharsets.UTF_8));
        contents.put("<long-string-8MB>", ("{\"quant_method\":\"" + "x".repeat(8 << 20) + "\"}").getBytes(StandardCharsets.UTF_8));
        contents.put("<huge-number>", "{\"bits\":1e999999,\"group_size\":123456789012345678901234567890}".getBytes(StandardCharsets.UTF_8));
        List<Mutations.Mutant> out = new ArrayList<>();
        for (var c : contents.entrySet()) {
            byte[] inner = c.getValue();
            String text = new String(inner, StandardCharsets.UTF_8);
            byte[] wrapped = c.getKey().startsWith("<") ? inner
                    : ("{\"model_type\":\"llama\",\"quantization_config\":" + text + "}").getBytes(StandardCharsets.UTF_8);
            out.add(new Mutations.Mutant("sidecar[config.json]." + c.getKey(), x -> bare, Map.of("config.json", wrapped)));
            out.add(new Mutations.Mutant("sidecar[quantize_config.json]." + c.getKey(), x -> bare,
                    Map.of("quantize_config.json", inner)));
            out.add(new Mutations.Mutant("sidecar[quant_config.json]." + c.getKey(), x -> bare,
                    Map.of("quant_config.json", inner)));
        }
        return out;
    }

    /** Edits of a JSON object's values, by key path: numbers, booleans, strings, arrays, removal. */
    static Map<String, String> jsonEdits(String text) {
        Map<String, String> out = new LinkedHashMap<>();
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (Exception notJson) {
            return out;
        }
        if (root == null || !root.isObject()) return out;
        Iterator<String> keys = root.fieldNames();
        while (keys.hasNext()) {
            String k = keys.next();
            JsonNode v = root.get(k);
            List<Map.Entry<String, JsonNode>> values = new ArrayList<>();
            if (v.isNumber()) {
                for (long x : new long[]{0, -1, 1, 3, 7, 64, Integer.MAX_VALUE, 1L << 62}) values.add(Map.entry("" + x, NODES.numberNode(x)));
                values.add(Map.entry("1.5", NODES.numberNode(1.5)));
                values.add(Map.entry("\"8\"", NODES.textNode("8")));
            } else if (v.isBoolean()) {
                values.add(Map.entry("" + !v.asBoolean(), NODES.booleanNode(!v.asBoolean())));
                values.add(Map.entry("\"yes\"", NODES.textNode("yes")));
            } else if (v.isTextual()) {
                values.add(Map.entry("\"\"", NODES.textNode("")));
                values.add(Map.entry("\"bogus\"", NODES.textNode("bogus")));
                values.add(Map.entry("7", NODES.numberNode(7)));
            } else if (v.isArray()) {
                values.add(Map.entry("[]", NODES.arrayNode()));
                values.add(Map.entry("[0,0]", NODES.arrayNode().add(0).add(0)));
                values.add(Map.entry("[1]", NODES.arrayNode().add(1)));
                values.add(Map.entry("[-1,128]", NODES.arrayNode().add(-1).add(128)));
                values.add(Map.entry("[2^31-1,2^31-1]", NODES.arrayNode().add(Integer.MAX_VALUE).add(Integer.MAX_VALUE)));
                ArrayNode bigger = v.deepCopy();
                bigger.add(bigger.size() > 0 ? bigger.get(0) : NODES.numberNode(1));
                values.add(Map.entry("+elem", bigger));
            }
            values.add(Map.entry("null", NODES.nullNode()));
            for (var e : values) {
                ObjectNode copy = root.deepCopy();
                copy.set(k, e.getValue());
                out.put(k + "=" + e.getKey(), copy.toString());
            }
            ObjectNode removed = root.deepCopy();
            removed.remove(k);
            out.put(k + "=<removed>", removed.toString());
        }
        return out;
    }

    private static Mutations.Mutant replace(Model m, String id, int at, Tensor t) {
        return new Mutations.Mutant(id, x -> {
            List<Tensor> l = new ArrayList<>(m.tensors());
            l.set(at, t);
            return serialize(m.metadata(), l);
        });
    }

    static Model parse(byte[] file) throws java.io.IOException {
        long n = FileAnatomy.le(file, 0, 8);
        if (n <= 0 || n > file.length - 8) throw new IllegalArgumentException("not safetensors");
        JsonNode header = JSON.readTree(new String(file, 8, (int) n, StandardCharsets.UTF_8));
        Map<String, String> meta = new LinkedHashMap<>();
        List<Tensor> tensors = new ArrayList<>();
        for (var it = header.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().equals("__metadata__")) {
                e.getValue().properties().forEach(m -> meta.put(m.getKey(), m.getValue().asText()));
                continue;
            }
            JsonNode t = e.getValue();
            long[] shape = new long[t.get("shape").size()];
            for (int i = 0; i < shape.length; i++) shape[i] = t.get("shape").get(i).asLong();
            int from = (int) (8 + n + t.get("data_offsets").get(0).asLong());
            int to = (int) (8 + n + t.get("data_offsets").get(1).asLong());
            tensors.add(new Tensor(e.getKey(), t.get("dtype").asText(), shape, Arrays.copyOfRange(file, from, to)));
        }
        return new Model(meta, tensors);
    }

    static byte[] serialize(Map<String, String> metadata, List<Tensor> tensors) {
        ObjectNode header = NODES.objectNode();
        if (!metadata.isEmpty()) {
            ObjectNode meta = header.putObject("__metadata__");
            metadata.forEach(meta::put);
        }
        long offset = 0;
        for (Tensor t : tensors) {
            ObjectNode o = header.putObject(t.name());
            o.put("dtype", t.dtype());
            ArrayNode shape = o.putArray("shape");
            for (long d : t.shape()) shape.add(d);
            o.putArray("data_offsets").add(offset).add(offset + t.bytes().length);
            offset += t.bytes().length;
        }
        byte[] json = header.toString().getBytes(StandardCharsets.UTF_8);
        int padded = (json.length + 7) / 8 * 8;
        ByteBuffer b = ByteBuffer.allocate((int) (8 + padded + offset)).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(padded).put(json);
        while (b.position() < 8 + padded) b.put((byte) ' ');
        for (Tensor t : tensors) b.put(t.bytes());
        return b.array();
    }

    private static String shortName(String name) {
        String[] parts = name.split("\\.");
        return parts.length <= 2 ? name : parts[parts.length - 2] + "." + parts[parts.length - 1];
    }

    private static int elementSize(String dtype) {
        return switch (dtype) {
            case "BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "F8_E8M0", "F8_E4M3FNUZ", "F8_E5M2FNUZ" -> 1;
            case "U16", "I16", "F16", "BF16" -> 2;
            case "U32", "I32", "F32" -> 4;
            case "U64", "I64", "F64", "C64" -> 8;
            default -> 1;
        };
    }

    private static List<String> sameWidth(String dtype) {
        List<String> all = switch (elementSize(dtype)) {
            case 1 -> List.of("U8", "I8", "F8_E4M3", "F8_E5M2", "BOOL");
            case 2 -> List.of("F16", "BF16", "I16");
            case 4 -> List.of("F32", "I32", "U32");
            default -> List.of("I64", "F64");
        };
        return all.stream().filter(d -> !d.equals(dtype)).toList();
    }

    private static Map<String, byte[]> fills(int size) {
        Function<Long, byte[]> le = v -> {
            byte[] b = new byte[Math.max(1, size)];
            for (int i = 0; i < b.length; i++) b[i] = (byte) (v >>> (8 * i));
            return b;
        };
        Map<String, byte[]> m = new LinkedHashMap<>();
        m.put("0xFF", new byte[]{(byte) 0xFF});
        m.put("0x00", new byte[]{0});
        m.put("max", le.apply(size == 1 ? 0x7FL : size == 2 ? 0x7FFFL : size == 4 ? 0x7FFFFFFFL : Long.MAX_VALUE));
        m.put("min", le.apply(size == 1 ? 0x80L : size == 2 ? 0x8000L : size == 4 ? 0x80000000L : Long.MIN_VALUE));
        m.put("inf", le.apply(size == 2 ? 0x7C00L : size == 4 ? 0x7F800000L : 0x7FF0000000000000L));
        return m;
    }

    private static long[] reversed(long[] s) {
        long[] r = new long[s.length];
        for (int i = 0; i < s.length; i++) r[i] = s[s.length - 1 - i];
        return r;
    }

    private static long[] prepend(long d, long[] s) {
        long[] r = new long[s.length + 1];
        r[0] = d;
        System.arraycopy(s, 0, r, 1, s.length);
        return r;
    }

    private static long product(long[] s) {
        long p = 1;
        for (long d : s) p *= d;
        return p;
    }
}
