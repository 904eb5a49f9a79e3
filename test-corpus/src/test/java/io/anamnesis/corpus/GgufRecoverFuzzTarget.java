package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;
import io.anamnesis.format.gguf.GgufType;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;

/**
 * The GGUF block dequantizers' claim and recover path: a valid GGUF v3 file with one or two
 * tensors of a fuzzed ggml type (any id, known or not), fuzzed dimensions (mostly whole
 * blocks) and fuzzed block bytes, so every decoder sees arbitrary scales, grid indices and
 * sign bits rather than the header parser seeing garbage.
 */
class GgufRecoverFuzzTarget {
    @FuzzTest(maxDuration = "4s")
    void recover(FuzzedDataProvider in) {
        int tensors = in.consumeInt(1, 2);
        ByteBuffer b = ByteBuffer.allocate(1 << 18).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(tensors).putLong(1);
        string(b, "general.alignment");
        b.putInt(4).putInt(32);
        long offset = 0;
        for (int t = 0; t < tensors; t++) {
            int id = in.consumeBoolean() ? GgufType.ALL.get(in.consumeInt(0, GgufType.ALL.size() - 1)).ggmlId() : in.consumeInt(0, 60);
            GgufType type = GgufType.byId(id).orElse(null);
            int block = type == null ? 32 : type.blockElements();
            long ne0 = in.consumeBoolean() ? (long) block * in.consumeInt(0, 4) : in.consumeInt(0, 300);
            long ne1 = in.consumeInt(0, 3);
            string(b, "t" + t);
            b.putInt(2).putLong(ne0).putLong(ne1).putInt(id).putLong(offset);
            long bytes = type == null ? ne0 * ne1 : (ne0 / block) * ne1 * type.blockBytes();
            offset += (bytes + 31) / 32 * 32;
        }
        while (b.position() % 32 != 0) b.put((byte) 0);
        byte[] data = in.consumeRemainingAsBytes();
        long total = Math.min(offset, b.remaining());
        for (long i = 0; i < total; i++) b.put(data.length == 0 ? 0 : data[(int) (i % data.length)]);
        byte[] file = new byte[b.position()];
        b.flip().get(file);
        Fuzzing.detectAndOpen("model.gguf", file);
    }

    private static void string(ByteBuffer b, String s) {
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        b.putLong(u.length).put(u);
    }
}
