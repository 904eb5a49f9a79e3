package io.anamnesis.quant.gguf;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Map;
import java.util.TreeMap;
import java.util.zip.GZIPInputStream;

/**
 * The oracle vectors in {@code oracle/ggml-vectors.txt.gz}: small F32 matrices and the bytes
 * ggml's own {@code ggml_quantize_chunk} made of them (see the README there for how they
 * were made and the key scheme).
 */
final class OracleVectors {
    private static final Map<String, byte[]> ALL = load();

    private OracleVectors() {
    }

    private static Map<String, byte[]> load() {
        Map<String, byte[]> out = new TreeMap<>();
        try (InputStream raw = OracleVectors.class.getResourceAsStream("oracle/ggml-vectors.txt.gz")) {
            if (raw == null) throw new IllegalStateException("oracle/ggml-vectors.txt.gz missing from the test resources");
            BufferedReader in = new BufferedReader(new InputStreamReader(new GZIPInputStream(raw), StandardCharsets.US_ASCII));
            for (String line; (line = in.readLine()) != null; ) {
                int space = line.indexOf(' ');
                out.put(line.substring(0, space), Base64.getDecoder().decode(line.substring(space + 1)));
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    /** Every key, sorted. */
    static Iterable<String> keys() {
        return ALL.keySet();
    }

    static byte[] bytes(String key) {
        byte[] b = ALL.get(key);
        if (b == null) throw new IllegalArgumentException("no oracle vector " + key);
        return b;
    }

    static float[] floats(String key) {
        ByteBuffer b = ByteBuffer.wrap(bytes(key)).order(ByteOrder.LITTLE_ENDIAN);
        float[] f = new float[b.remaining() / 4];
        b.asFloatBuffer().get(f);
        return f;
    }

    /** {rows, cols} of a matrix. */
    static int[] shape(String matrix) {
        ByteBuffer b = ByteBuffer.wrap(bytes("shape/" + matrix)).order(ByteOrder.LITTLE_ENDIAN);
        return new int[] {b.getInt(), b.getInt()};
    }
}
