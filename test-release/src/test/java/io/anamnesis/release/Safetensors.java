package io.anamnesis.release;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/** Writes and reads safetensors files by the format's spec, independently of anamnesis. */
final class Safetensors {
    private Safetensors() {
    }

    record Tensor(String dtype, long[] shape, byte[] data) {
    }

    static void write(Path file, Map<String, String> metadata, Map<String, Tensor> tensors) throws IOException {
        ObjectMapper json = new ObjectMapper();
        Map<String, Object> header = new LinkedHashMap<>();
        if (!metadata.isEmpty()) header.put("__metadata__", metadata);
        long offset = 0;
        for (var e : tensors.entrySet()) {
            long end = offset + e.getValue().data().length;
            header.put(e.getKey(), Map.of("dtype", e.getValue().dtype(), "shape", e.getValue().shape(),
                    "data_offsets", new long[]{offset, end}));
            offset = end;
        }
        byte[] text = json.writeValueAsBytes(header);
        int padded = (text.length + 7) / 8 * 8;
        ByteBuffer out = ByteBuffer.allocate(8 + padded + (int) offset).order(ByteOrder.LITTLE_ENDIAN);
        out.putLong(padded).put(text);
        for (int i = text.length; i < padded; i++) out.put((byte) ' ');
        for (Tensor t : tensors.values()) out.put(t.data());
        Files.write(file, out.array());
    }

    static Map<String, Tensor> read(Path file) throws IOException {
        byte[] all = Files.readAllBytes(file);
        int n = (int) ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        JsonNode header = new ObjectMapper().readTree(new String(all, 8, n, StandardCharsets.UTF_8));
        Map<String, Tensor> out = new LinkedHashMap<>();
        for (var it = header.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().equals("__metadata__")) continue;
            JsonNode t = e.getValue();
            long[] shape = new long[t.get("shape").size()];
            for (int i = 0; i < shape.length; i++) shape[i] = t.get("shape").get(i).asLong();
            int begin = t.get("data_offsets").get(0).asInt();
            int end = t.get("data_offsets").get(1).asInt();
            out.put(e.getKey(), new Tensor(t.get("dtype").asText(), shape, Arrays.copyOfRange(all, 8 + n + begin, 8 + n + end)));
        }
        return out;
    }
}
