package io.anamnesis.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.Anamnesis;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Map;

/** Runs amn in-process and reads what it wrote. */
final class Runs {
    private Runs() {
    }

    record Run(int code, String out, String err) {
        JsonNode json() throws IOException {
            return new ObjectMapper().readTree(out);
        }
    }

    static Run amn(Anamnesis amn, String... args) {
        return amn(amn, Map.of(), Path.of("."), true, args);
    }

    static Run amn(Anamnesis amn, Map<String, String> env, Path home, boolean fastPath, String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Amn.execute(() -> amn, new PrintWriter(out), new PrintWriter(err), env, home, fastPath, args);
        return new Run(code, out.toString(), err.toString());
    }

    record Stored(String dtype, long[] shape, byte[] bytes) {
    }

    /** Reads a safetensors file: the metadata under "" and every tensor. */
    static Map<String, Stored> readSafetensors(Path file, Map<String, String> metadata) throws IOException {
        byte[] all = Files.readAllBytes(file);
        int n = (int) ByteBuffer.wrap(all).order(ByteOrder.LITTLE_ENDIAN).getLong(0);
        JsonNode header = new ObjectMapper().readTree(new String(all, 8, n, StandardCharsets.UTF_8));
        Map<String, Stored> out = new LinkedHashMap<>();
        for (var it = header.properties().iterator(); it.hasNext(); ) {
            var e = it.next();
            if (e.getKey().equals("__metadata__")) {
                e.getValue().properties().forEach(m -> metadata.put(m.getKey(), m.getValue().asText()));
                continue;
            }
            JsonNode t = e.getValue();
            long[] shape = new long[t.get("shape").size()];
            for (int i = 0; i < shape.length; i++) shape[i] = t.get("shape").get(i).asLong();
            int begin = t.get("data_offsets").get(0).asInt();
            int end = t.get("data_offsets").get(1).asInt();
            out.put(e.getKey(), new Stored(t.get("dtype").asText(), shape, Arrays.copyOfRange(all, 8 + n + begin, 8 + n + end)));
        }
        return out;
    }
}
