package io.anamnesis.corpus;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.zip.CRC32;
import java.util.zip.ZipEntry;
import java.util.zip.ZipOutputStream;

/**
 * Small valid files of every format, written byte by byte from the format specs, so the
 * hostile-input test has something to mutate even without the shared corpus.
 */
final class SeedFiles {
    private SeedFiles() {
    }

    /** File name (its extension picks the reader when the magic is gone) to bytes. */
    static Map<String, byte[]> all() {
        Map<String, byte[]> m = new LinkedHashMap<>();
        m.put("plain.safetensors", plainSafetensors());
        m.put("fp8.safetensors", fp8Safetensors());
        m.put("array.npy", npy("<f4", "(3, 4)", 48));
        m.put("arrays.npz", npz());
        m.put("model.gguf", gguf());
        return m;
    }

    /** Safetensors: u64 header length, JSON header padded with spaces to 8 bytes, then data. */
    static byte[] safetensors(String json, int dataBytes) {
        byte[] j = json.getBytes(StandardCharsets.UTF_8);
        int padded = (j.length + 7) / 8 * 8;
        ByteBuffer b = ByteBuffer.allocate(8 + padded + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(padded).put(j);
        while (b.position() < 8 + padded) b.put((byte) ' ');
        for (int i = 0; b.hasRemaining(); i++) b.put((byte) (i * 37 + 11));
        return b.array();
    }

    static byte[] plainSafetensors() {
        return safetensors("{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
                + "\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[24,32]},"
                + "\"c\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[32,40]},"
                + "\"d\":{\"dtype\":\"F16\",\"shape\":[0,3],\"data_offsets\":[40,40]}}", 40);
    }

    /** An FP8 E4M3 weight with a per-tensor F32 scale, as compressed-tensors and vLLM store it. */
    static byte[] fp8Safetensors() {
        return safetensors("{\"model.layers.0.mlp.down_proj.weight\":{\"dtype\":\"F8_E4M3\",\"shape\":[4,8],\"data_offsets\":[0,32]},"
                + "\"model.layers.0.mlp.down_proj.weight_scale\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[32,36]}}", 36);
    }

    /** NPY 1.0: magic, version, u16 header length, a dict padded with spaces to 64 bytes ending in newline. */
    static byte[] npy(String descr, String shape, int dataBytes) {
        String dict = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
        int total = (10 + dict.length() + 1 + 63) / 64 * 64;
        String header = dict + " ".repeat(total - 10 - dict.length() - 1) + "\n";
        ByteBuffer b = ByteBuffer.allocate(total + dataBytes).order(ByteOrder.LITTLE_ENDIAN);
        b.put((byte) 0x93).put("NUMPY".getBytes(StandardCharsets.US_ASCII)).put((byte) 1).put((byte) 0);
        b.putShort((short) header.length()).put(header.getBytes(StandardCharsets.US_ASCII));
        for (int i = 0; b.hasRemaining(); i++) b.put((byte) (i * 13 + 5));
        return b.array();
    }

    /** np.savez layout: one stored and one deflated member. */
    static byte[] npz() {
        try {
            var out = new ByteArrayOutputStream();
            try (var zip = new ZipOutputStream(out)) {
                byte[] a = npy("<f4", "(2, 3)", 24);
                ZipEntry stored = new ZipEntry("a.npy");
                stored.setMethod(ZipEntry.STORED);
                stored.setSize(a.length);
                CRC32 crc = new CRC32();
                crc.update(a);
                stored.setCrc(crc.getValue());
                zip.putNextEntry(stored);
                zip.write(a);
                zip.closeEntry();
                ZipEntry deflated = new ZipEntry("b.npy");
                deflated.setMethod(ZipEntry.DEFLATED);
                zip.putNextEntry(deflated);
                zip.write(npy("<f2", "(5,)", 10));
                zip.closeEntry();
            }
            return out.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /**
     * GGUF v3: header, metadata (a string, the alignment, a string array, a float array),
     * tensor infos (an F32 [2, 4] and a Q8_0 [2, 32] tensor), data aligned to 32 bytes.
     */
    static byte[] gguf() {
        ByteBuffer b = ByteBuffer.allocate(1024).order(ByteOrder.LITTLE_ENDIAN);
        b.put("GGUF".getBytes(StandardCharsets.US_ASCII)).putInt(3).putLong(2).putLong(4);
        ggufString(b, "general.architecture");
        b.putInt(8);
        ggufString(b, "llama");
        ggufString(b, "general.alignment");
        b.putInt(4).putInt(32);
        ggufString(b, "tokenizer.ggml.tokens");
        b.putInt(9).putInt(8).putLong(3);
        ggufString(b, "a");
        ggufString(b, "bc");
        ggufString(b, "def");
        ggufString(b, "some.floats");
        b.putInt(9).putInt(6).putLong(2).putFloat(1f).putFloat(2f);
        // ne[] lists the fastest dimension first
        ggufString(b, "t.f32");
        b.putInt(2).putLong(4).putLong(2).putInt(0).putLong(0);
        ggufString(b, "t.q8");
        b.putInt(2).putLong(32).putLong(2).putInt(8).putLong(32);
        while (b.position() % 32 != 0) b.put((byte) 0);
        for (int i = 0; i < 8; i++) b.putFloat(i * 0.5f - 1f);
        for (int block = 0; block < 2; block++) {
            b.putShort((short) 0x3C00); // f16 1.0
            for (int i = 0; i < 32; i++) b.put((byte) (i - 16 + block));
        }
        byte[] out = new byte[b.position()];
        b.flip().get(out);
        return out;
    }

    private static void ggufString(ByteBuffer b, String s) {
        byte[] u = s.getBytes(StandardCharsets.UTF_8);
        b.putLong(u.length).put(u);
    }
}
