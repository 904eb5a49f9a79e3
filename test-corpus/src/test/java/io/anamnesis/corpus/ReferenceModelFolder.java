package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A model folder read by the letter of the formats, apart from the library's own reader, so
 * that a folder the library wrote is checked by code that does not share its mistakes: the
 * safetensors spec (an 8-byte little-endian header length, a JSON header, each tensor's
 * {@code data_offsets} contiguous from 0 and covering the data section exactly, nothing
 * after it) and the transformers index ({@code metadata.total_size} equal to the sum of the
 * tensors' bytes, a {@code weight_map} naming every tensor of every shard and nothing else,
 * shard files named {@code model-0000N-of-0000M.safetensors} for N = 1..M).
 */
final class ReferenceModelFolder {
    private static final Pattern SHARD = Pattern.compile("model-(\\d{5})-of-(\\d{5})\\.safetensors");

    private ReferenceModelFolder() {
    }

    /** Every tensor of the folder in shard order, after checking the folder against both specs. */
    static Map<String, ReferenceSafetensors.Tensor> read(Path folder) throws IOException {
        Path index = folder.resolve("model.safetensors.index.json");
        if (!Files.exists(index)) {
            Path single = folder.resolve("model.safetensors");
            checkSpec(single);
            return ReferenceSafetensors.read(single);
        }
        JsonNode root = new ObjectMapper().readTree(index.toFile());
        JsonNode weightMap = root.get("weight_map");
        long totalSize = root.get("metadata").get("total_size").asLong();
        Map<String, String> named = new HashMap<>();
        weightMap.properties().forEach(e -> named.put(e.getKey(), e.getValue().asText()));
        List<String> shards = new ArrayList<>(new java.util.TreeSet<>(named.values()));
        for (int i = 0; i < shards.size(); i++) {
            Matcher m = SHARD.matcher(shards.get(i));
            check(m.matches(), "shard name " + shards.get(i));
            check(Integer.parseInt(m.group(1)) == i + 1 && Integer.parseInt(m.group(2)) == shards.size(),
                    shards.get(i) + " is not shard " + (i + 1) + " of " + shards.size());
        }
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        long sum = 0;
        for (String shard : shards) {
            Path file = folder.resolve(shard);
            checkSpec(file);
            for (var e : ReferenceSafetensors.read(file).entrySet()) {
                check(shard.equals(named.get(e.getKey())), "the index puts " + e.getKey() + " in "
                        + named.get(e.getKey()) + ", it is in " + shard);
                check(out.put(e.getKey(), e.getValue()) == null, e.getKey() + " is in two shards");
                sum += e.getValue().bytes().length;
            }
        }
        check(out.keySet().equals(named.keySet()), "the index names tensors no shard holds");
        check(sum == totalSize, "metadata.total_size " + totalSize + ", the tensors hold " + sum);
        return out;
    }

    /** The safetensors spec's layout rules for one file. */
    static void checkSpec(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        long n = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        check(n > 0 && 8 + n <= all.length, file + ": header length " + n);
        JsonNode header = new ObjectMapper().readTree(new String(all, 8, (int) n, StandardCharsets.UTF_8));
        long expect = 0;
        long dataBytes = all.length - 8 - n;
        List<long[]> offsets = new ArrayList<>();
        for (var it = header.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().equals("__metadata__")) {
                e.getValue().properties().forEach(m -> check(m.getValue().isTextual(), "__metadata__ values are strings"));
                continue;
            }
            JsonNode o = e.getValue().get("data_offsets");
            offsets.add(new long[]{o.get(0).asLong(), o.get(1).asLong()});
        }
        offsets.sort(java.util.Comparator.comparingLong(a -> a[0]));
        for (long[] o : offsets) {
            check(o[0] == expect && o[1] >= o[0], file + ": data_offsets not contiguous at " + o[0]);
            expect = o[1];
        }
        check(expect == dataBytes, file + ": tensors cover " + expect + " of " + dataBytes + " data bytes");
    }

    private static void check(boolean ok, String what) {
        if (!ok) throw new AssertionError(what);
    }
}
