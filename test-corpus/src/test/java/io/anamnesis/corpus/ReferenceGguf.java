package io.anamnesis.corpus;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A small GGUF v2/v3 little-endian reader written from the spec (ggml's docs/gguf.md), apart
 * from the library's own reader, so that the quantize cases compare files without trusting
 * the code under test: key/values as their raw value bytes, tensor infos, tensor bytes.
 */
final class ReferenceGguf {
    /** One key/value: its type id and the bytes of its value as stored. */
    record Kv(int type, byte[] value) {
        long asLong() {
            ByteBuffer b = ByteBuffer.wrap(value).order(ByteOrder.LITTLE_ENDIAN);
            return switch (value.length) {
                case 1 -> b.get() & 0xFF;
                case 2 -> b.getShort() & 0xFFFF;
                case 4 -> b.getInt() & 0xFFFF_FFFFL;
                default -> b.getLong();
            };
        }

        /** A string value's text. */
        String asString() {
            return new String(value, 8, value.length - 8, StandardCharsets.UTF_8);
        }
    }

    /** One tensor: ne as stored, ggml type id, bytes. */
    record Tensor(String name, long[] ne, int type, byte[] bytes) {
    }

    /** ggml type id -> {block elements, block bytes}, from ggml.c's type_traits. */
    static final Map<Integer, int[]> GEOMETRY = Map.ofEntries(
            Map.entry(0, new int[]{1, 4}), Map.entry(1, new int[]{1, 2}), Map.entry(30, new int[]{1, 2}),
            Map.entry(2, new int[]{32, 18}), Map.entry(3, new int[]{32, 20}), Map.entry(6, new int[]{32, 22}),
            Map.entry(7, new int[]{32, 24}), Map.entry(8, new int[]{32, 34}), Map.entry(10, new int[]{256, 84}),
            Map.entry(11, new int[]{256, 110}), Map.entry(12, new int[]{256, 144}), Map.entry(13, new int[]{256, 176}),
            Map.entry(14, new int[]{256, 210}), Map.entry(16, new int[]{256, 66}), Map.entry(17, new int[]{256, 74}),
            Map.entry(18, new int[]{256, 98}), Map.entry(19, new int[]{256, 50}), Map.entry(20, new int[]{32, 18}),
            Map.entry(21, new int[]{256, 110}), Map.entry(22, new int[]{256, 82}), Map.entry(23, new int[]{256, 136}),
            Map.entry(29, new int[]{256, 56}), Map.entry(34, new int[]{256, 54}), Map.entry(35, new int[]{256, 66}),
            Map.entry(39, new int[]{32, 17}), Map.entry(40, new int[]{64, 36}), Map.entry(41, new int[]{128, 18}),
            Map.entry(42, new int[]{64, 18}));

    /** ggml_type_name of the ids above. */
    static final Map<Integer, String> NAMES = Map.ofEntries(
            Map.entry(0, "f32"), Map.entry(1, "f16"), Map.entry(30, "bf16"), Map.entry(2, "q4_0"), Map.entry(3, "q4_1"),
            Map.entry(6, "q5_0"), Map.entry(7, "q5_1"), Map.entry(8, "q8_0"), Map.entry(10, "q2_K"), Map.entry(11, "q3_K"),
            Map.entry(12, "q4_K"), Map.entry(13, "q5_K"), Map.entry(14, "q6_K"), Map.entry(16, "iq2_xxs"),
            Map.entry(17, "iq2_xs"), Map.entry(18, "iq3_xxs"), Map.entry(19, "iq1_s"), Map.entry(20, "iq4_nl"),
            Map.entry(21, "iq3_s"), Map.entry(22, "iq2_s"), Map.entry(23, "iq4_xs"), Map.entry(29, "iq1_m"),
            Map.entry(34, "tq1_0"), Map.entry(35, "tq2_0"), Map.entry(39, "mxfp4"), Map.entry(40, "nvfp4"),
            Map.entry(41, "q1_0"), Map.entry(42, "q2_0"));

    final Map<String, Kv> kv;
    final List<Tensor> tensors;

    private ReferenceGguf(Map<String, Kv> kv, List<Tensor> tensors) {
        this.kv = kv;
        this.tensors = tensors;
    }

    Tensor tensor(String name) {
        return tensors.stream().filter(t -> t.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no tensor " + name + " in the file"));
    }

    static ReferenceGguf read(Path file) throws IOException {
        ByteBuffer b = ByteBuffer.wrap(Files.readAllBytes(file)).order(ByteOrder.LITTLE_ENDIAN);
        if (b.getInt() != 0x46554747) throw new IOException(file + " is not GGUF");
        int version = b.getInt();
        if (version != 2 && version != 3) throw new IOException(file + ": GGUF version " + version);
        long nTensors = b.getLong();
        long nKv = b.getLong();
        Map<String, Kv> kv = new LinkedHashMap<>();
        for (long i = 0; i < nKv; i++) {
            String key = string(b);
            int type = b.getInt();
            int start = b.position();
            skipValue(b, type);
            kv.put(key, new Kv(type, Arrays.copyOfRange(b.array(), start, b.position())));
        }
        long alignment = kv.containsKey("general.alignment") ? kv.get("general.alignment").asLong() : 32;
        record Info(String name, long[] ne, int type, long offset) {
        }
        List<Info> infos = new ArrayList<>();
        for (long i = 0; i < nTensors; i++) {
            String name = string(b);
            long[] ne = new long[b.getInt()];
            for (int d = 0; d < ne.length; d++) ne[d] = b.getLong();
            infos.add(new Info(name, ne, b.getInt(), b.getLong()));
        }
        long dataStart = (b.position() + alignment - 1) / alignment * alignment;
        List<Tensor> tensors = new ArrayList<>();
        for (Info t : infos) {
            int[] g = GEOMETRY.get(t.type());
            if (g == null) throw new IOException(t.name() + ": ggml type " + t.type() + " is not in the reference table");
            long n = 1;
            for (long d : t.ne()) n *= d;
            int size = Math.toIntExact(n / g[0] * g[1]);
            int at = Math.toIntExact(dataStart + t.offset());
            tensors.add(new Tensor(t.name(), t.ne(), t.type(), Arrays.copyOfRange(b.array(), at, at + size)));
        }
        return new ReferenceGguf(kv, tensors);
    }

    private static String string(ByteBuffer b) {
        byte[] s = new byte[Math.toIntExact(b.getLong())];
        b.get(s);
        return new String(s, StandardCharsets.UTF_8);
    }

    private static void skipValue(ByteBuffer b, int type) {
        switch (type) {
            case 0, 1, 7 -> b.position(b.position() + 1);
            case 2, 3 -> b.position(b.position() + 2);
            case 4, 5, 6 -> b.position(b.position() + 4);
            case 10, 11, 12 -> b.position(b.position() + 8);
            case 8 -> b.position(Math.toIntExact(b.position() + 8 + b.getLong(b.position())));
            case 9 -> {
                int element = b.getInt();
                long n = b.getLong();
                for (long i = 0; i < n; i++) skipValue(b, element);
            }
            default -> throw new IllegalStateException("GGUF value type " + type);
        }
    }
}
