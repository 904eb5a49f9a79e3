package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A deliberately separate, minimal safetensors reader for the expected files, so that a bug
 * in the project's own reader cannot hide itself by reading the references the same wrong way.
 */
final class ReferenceSafetensors {
    record Tensor(String dtype, long[] shape, byte[] bytes) {
        @Override
        public String toString() {
            return dtype + Arrays.toString(shape);
        }
    }

    private ReferenceSafetensors() {
    }

    static Map<String, Tensor> read(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        ByteBuffer buf = ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN);
        int n = Math.toIntExact(buf.getLong(0));
        JsonNode header = new ObjectMapper().readTree(new String(all, 8, n, StandardCharsets.UTF_8));
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (Iterator<Map.Entry<String, JsonNode>> it = header.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().equals("__metadata__")) continue;
            JsonNode t = e.getValue();
            long[] shape = new long[t.get("shape").size()];
            for (int i = 0; i < shape.length; i++) shape[i] = t.get("shape").get(i).asLong();
            int begin = t.get("data_offsets").get(0).asInt();
            int end = t.get("data_offsets").get(1).asInt();
            out.put(e.getKey(), new Tensor(t.get("dtype").asText(), shape,
                    Arrays.copyOfRange(all, 8 + n + begin, 8 + n + end)));
        }
        return out;
    }
}
