package io.anamnesis.corpus;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Hostile files no single mutation makes: valid files at a scale that punishes quadratic
 * lookups (tens of thousands of tensors, quantized groups, ZIP members), and nesting deep
 * enough to overflow a recursive parser's stack. Each must open and recover, or be refused
 * with a typed error, well within the time bound.
 */
final class CraftedFiles {
    private CraftedFiles() {
    }

    /** File name to a maker, so a file is built only when its test runs. */
    static Map<String, Supplier<byte[]>> all() {
        Map<String, Supplier<byte[]>> m = new LinkedHashMap<>();
        m.put("many-tensors.safetensors", () -> manySafetensors(20_000));
        m.put("many-fp8-pairs.safetensors", () -> manyFp8(8_000));
        m.put("many-gptq-groups.safetensors", () -> manyGptq(2_000));
        m.put("many-tensors.gguf", () -> manyGguf(20_000));
        m.put("many-members.npz", () -> manyNpz(4_000));
        m.put("nested-metadata.safetensors", CraftedFiles::nestedSafetensors);
        m.put("nested-arrays.gguf", () -> nestedGguf(100_000));
        m.put("nested-shape.npy", () -> nestedNpy(100_000));
        m.put("nested-lists.pth", () -> nestedPickle(200_000));
        return m;
    }

    static byte[] manySafetensors(int n) {
        List<SemanticMutations.Tensor> ts = new ArrayList<>();
        for (int i = 0; i < n; i++) ts.add(new SemanticMutations.Tensor("t" + i, "F32", new long[]{1}, new byte[4]));
        return SemanticMutations.serialize(Map.of(), ts);
    }

    /** Per-tensor FP8 groups: a [1, 1] F8_E4M3 weight and a scalar F32 scale each. */
    static byte[] manyFp8(int n) {
        List<SemanticMutations.Tensor> ts = new ArrayList<>();
        byte[] one = ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(1f).array();
        for (int i = 0; i < n; i++) {
            ts.add(new SemanticMutations.Tensor("model.layers." + i + ".mlp.weight", "F8_E4M3", new long[]{1, 1}, new byte[]{0x38}));
            ts.add(new SemanticMutations.Tensor("model.layers." + i + ".mlp.weight_scale", "F32", new long[0], one));
        }
        return SemanticMutations.serialize(Map.of(), ts);
    }

    /**
     * GPTQ 4-bit, group 32, 32 inputs by 8 outputs per layer: qweight I32 [in/8, out],
     * qzeros I32 [groups, out/8], scales F16 [groups, out], g_idx I32 [in].
     */
    static byte[] manyGptq(int n) {
        List<SemanticMutations.Tensor> ts = new ArrayList<>();
        byte[] scales = new byte[8 * 2];
        for (int k = 0; k < 8; k++) scales[2 * k + 1] = 0x3C; // f16 1.0
        for (int i = 0; i < n; i++) {
            String p = "model.layers." + i + ".mlp.down_proj.";
            ts.add(new SemanticMutations.Tensor(p + "qweight", "I32", new long[]{4, 8}, new byte[4 * 8 * 4]));
            ts.add(new SemanticMutations.Tensor(p + "qzeros", "I32", new long[]{1, 1}, new byte[]{0x77, 0x77, 0x77, 0x77}));
            ts.add(new SemanticMutations.Tensor(p + "scales", "F16", new long[]{1, 8}, scales));
            ts.add(new SemanticMutations.Tensor(p + "g_idx", "I32", new long[]{32}, new byte[32 * 4]));
        }
        return SemanticMutations.serialize(Map.of("quantization_config",
                "{\"quant_method\": \"gptq\", \"bits\": 4, \"group_size\": 32, \"sym\": true, \"desc_act\": false}"), ts);
    }

    static byte[] manyGguf(int n) {
        var header = new ByteArrayOutputStream();
        ByteBuffer b = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(n).putLong(0);
        header.write(b.array(), 0, b.position());
        for (int i = 0; i < n; i++) {
            byte[] name = ("blk." + i + ".w").getBytes(StandardCharsets.UTF_8);
            ByteBuffer t = ByteBuffer.allocate(8 + name.length + 4 + 8 + 4 + 8).order(ByteOrder.LITTLE_ENDIAN);
            t.putLong(name.length).put(name).putInt(1).putLong(1).putInt(0).putLong(32L * i);
            header.write(t.array(), 0, t.position());
        }
        int start = (header.size() + 31) / 32 * 32;
        byte[] out = new byte[start + 32 * n];
        System.arraycopy(header.toByteArray(), 0, out, 0, header.size());
        return out;
    }

    static byte[] manyNpz(int n) {
        try {
            var out = new ByteArrayOutputStream();
            try (var zip = new ZipOutputStream(out)) {
                byte[] a = SeedFiles.npy("<f4", "(1,)", 4);
                CRC32 crc = new CRC32();
                crc.update(a);
                for (int i = 0; i < n; i++) {
                    ZipEntry e = new ZipEntry("a" + i + ".npy");
                    e.setMethod(ZipEntry.STORED);
                    e.setSize(a.length);
                    e.setCrc(crc.getValue());
                    zip.putNextEntry(e);
                    zip.write(a);
                    zip.closeEntry();
                }
            }
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** A metadata value nested 200 000 arrays deep (the spec wants strings; a parser must not recurse first). */
    static byte[] nestedSafetensors() {
        String deep = "[".repeat(200_000) + "]".repeat(200_000);
        return SeedFiles.safetensors("{\"__metadata__\":{\"a\":" + deep + "},"
                + "\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
    }

    /** A GGUF value that is an array of an array of ... {@code depth} levels, innermost empty. */
    static byte[] nestedGguf(int depth) {
        byte[] key = "deep".getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(64 + key.length + 12 * depth + 32).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(0).putLong(1);
        b.putLong(key.length).put(key).putInt(9);
        for (int i = 0; i < depth - 1; i++) b.putInt(9).putLong(1);
        b.putInt(0).putLong(0);
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    /** NPY 2.0 (u32 header length) whose shape is a tuple nested {@code depth} deep. */
    static byte[] nestedNpy(int depth) {
        String dict = "{'descr': '<f4', 'fortran_order': False, 'shape': " + "(".repeat(depth) + ")".repeat(depth) + ", }";
        int total = (12 + dict.length() + 1 + 63) / 64 * 64;
        String header = dict + " ".repeat(total - 12 - dict.length() - 1) + "\n";
        ByteBuffer b = ByteBuffer.allocate(total + 4).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 2).put((byte) 0);
        b.putInt(header.length()).put(header.getBytes(StandardCharsets.US_ASCII));
        return b.array();
    }

    /**
     * A bare pickle (the legacy torch.save's first record) of lists nested {@code depth} deep:
     * every EMPTY_LIST is pushed first, then APPENDs fold each into the one below it.
     */
    static byte[] nestedPickle(int depth) {
        byte[] b = new byte[2 + depth + (depth - 1) + 1];
        b[0] = (byte) 0x80;
        b[1] = 2;
        int p = 2;
        for (int i = 0; i < depth; i++) b[p++] = ']';
        for (int i = 0; i < depth - 1; i++) b[p++] = 'a';
        b[p] = '.';
        return b;
    }
}
