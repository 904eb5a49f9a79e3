package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * A safetensors file whose tensors (dtype, shape, bytes) and {@code quantization_config} the
 * fuzzer chooses, so that its inputs parse and reach a dequantizer's claim and recover code
 * rather than stopping in the JSON parser. Dimensions are drawn from a few fuzzed base values
 * and simple multiples of them, because the schemes relate their companions' shapes
 * ({@code qweight [in/8, out]}, {@code scales [groups, out]}): independent random dimensions
 * would almost never agree.
 */
final class FuzzedModel {
    private FuzzedModel() {
    }

    /** One tensor the target may include: its name and the dtypes worth trying, likeliest first. */
    record Slot(String name, List<String> dtypes) {
        static Slot of(String name, String... dtypes) {
            return new Slot(name, List.of(dtypes));
        }
    }

    /** A config or quant_state value: a list of {@code rank} dimensions from the same pool as the tensors'. */
    record PoolDims(int rank) {
    }

    /** Bytes of data in a fuzzed model at most: enough for many groups, little enough for 1000s of runs a second. */
    static final int MAX_DATA = 1 << 18;

    private static final Map<String, Integer> WIDTH = Map.ofEntries(
            Map.entry("F64", 8), Map.entry("F32", 4), Map.entry("F16", 2), Map.entry("BF16", 2),
            Map.entry("I64", 8), Map.entry("I32", 4), Map.entry("I16", 2), Map.entry("I8", 1), Map.entry("U8", 1),
            Map.entry("F8_E4M3", 1), Map.entry("F8_E5M2", 1), Map.entry("BOOL", 1));

    /**
     * @param config each {@code quantization_config} key with the values worth trying; a key
     *               may be left out, or get a fuzzed integer instead
     * @param jsonTensors tensors whose bytes are a fuzzed JSON object (bitsandbytes' quant_state)
     */
    static byte[] build(FuzzedDataProvider in, List<Slot> slots, Map<String, List<Object>> config,
                        Map<String, Map<String, List<Object>>> jsonTensors) {
        int a = in.consumeInt(1, 64);
        int b = in.consumeInt(1, 64);
        long[] pool = {a, b, 8L * a, 8L * b, (a + 7) / 8, 2L * a, a * b, 32, 128, 1, 0, in.consumeInt(0, 300)};

        StringBuilder meta = new StringBuilder();
        if (!config.isEmpty() && in.consumeBoolean()) {
            meta.append("\"__metadata__\":{\"quantization_config\":").append(quote(object(in, config, pool))).append('}');
        }
        List<String> entries = new ArrayList<>();
        List<byte[]> fixed = new ArrayList<>();
        List<Long> sizes = new ArrayList<>();
        long total = 0;
        for (Slot s : slots) {
            if (in.consumeInt(0, 9) == 0) continue; // a missing companion
            if (jsonTensors.containsKey(s.name())) {
                byte[] json = object(in, jsonTensors.get(s.name()), pool).getBytes(StandardCharsets.UTF_8);
                entries.add(entry(s.name(), "U8", "[" + json.length + "]"));
                fixed.add(json);
                sizes.add((long) json.length);
                total += json.length;
                continue;
            }
            String dtype = s.dtypes().get(in.consumeInt(0, s.dtypes().size() - 1));
            int rank = in.consumeInt(0, 3);
            long elements = 1;
            StringBuilder shape = new StringBuilder("[");
            long[] dims = new long[rank];
            for (int i = 0; i < rank; i++) {
                dims[i] = pool[in.consumeInt(0, pool.length - 1)];
                elements *= dims[i]; // at most 4096^3: no overflow
            }
            long bytes = elements * WIDTH.get(dtype);
            if (bytes > MAX_DATA - total) {
                // too big to be quick: keep the rank and the relations' first dimension, flatten the rest
                for (int i = 1; i < rank; i++) dims[i] = 1;
                elements = rank == 0 ? 1 : dims[0];
                bytes = elements * WIDTH.get(dtype);
                if (bytes > MAX_DATA - total) continue;
            }
            for (int i = 0; i < rank; i++) shape.append(i == 0 ? "" : ",").append(dims[i]);
            entries.add(entry(s.name(), dtype, shape.append(']').toString()));
            fixed.add(null);
            sizes.add(bytes);
            total += bytes;
        }

        StringBuilder header = new StringBuilder("{").append(meta);
        long offset = 0;
        for (int i = 0; i < entries.size(); i++) {
            if (header.length() > 1) header.append(',');
            header.append(entries.get(i)).append("\"data_offsets\":[").append(offset).append(',')
                    .append(offset + sizes.get(i)).append("]}");
            offset += sizes.get(i);
        }
        byte[] json = header.append('}').toString().getBytes(StandardCharsets.UTF_8);
        byte[] data = in.consumeRemainingAsBytes();
        ByteBuffer out = ByteBuffer.allocate(Math.toIntExact(8 + json.length + total)).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(json.length).put(json);
        int cursor = 0;
        for (int i = 0; i < entries.size(); i++) {
            if (fixed.get(i) != null) {
                out.put(fixed.get(i));
                continue;
            }
            for (long k = 0; k < sizes.get(i); k++) {
                out.put(data.length == 0 ? 0 : data[cursor++ % data.length]);
            }
        }
        return out.array();
    }

    private static String entry(String name, String dtype, String shape) {
        return quote(name) + ":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape + ",";
    }

    /** A JSON object of the given keys, each present or not, with a listed or a fuzzed value. */
    private static String object(FuzzedDataProvider in, Map<String, List<Object>> keys, long[] pool) {
        StringBuilder sb = new StringBuilder("{");
        for (var e : keys.entrySet()) {
            int choice = in.consumeInt(0, e.getValue().size() + 1);
            if (choice == e.getValue().size() + 1) continue; // absent
            Object v = choice == e.getValue().size() ? (Object) in.consumeInt(-1, 1 << 12) : e.getValue().get(choice);
            if (v instanceof PoolDims d) {
                List<Object> dims = new ArrayList<>();
                for (int i = 0; i < d.rank(); i++) dims.add(pool[in.consumeInt(0, pool.length - 1)]);
                v = dims;
            }
            if (sb.length() > 1) sb.append(',');
            sb.append(quote(e.getKey())).append(':').append(value(v));
        }
        return sb.append('}').toString();
    }

    private static String value(Object v) {
        return switch (v) {
            case String s -> quote(s);
            case List<?> l -> {
                List<String> parts = new ArrayList<>();
                for (Object o : l) parts.add(value(o));
                yield "[" + String.join(",", parts) + "]";
            }
            default -> String.valueOf(v);
        };
    }

    private static String quote(String s) {
        StringBuilder sb = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') sb.append('\\');
            sb.append(c);
        }
        return sb.append('"').toString();
    }
}
