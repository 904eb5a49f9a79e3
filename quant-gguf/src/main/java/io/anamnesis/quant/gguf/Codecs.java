package io.anamnesis.quant.gguf;

import io.anamnesis.quant.gguf.llama.GgmlType;

/**
 * The float types' side of encoding: F32 rows written as they are, and the read-back of
 * F16/BF16/F32 for the loss measure (block types read back through {@link GgufBlockType}).
 */
final class Codecs {
    private Codecs() {
    }

    /** F32 "encoding": the values' own little-endian bits ({@code ggml_quantize_chunk}'s memcpy). */
    static void f32(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance) {
        int n = rows * perRow;
        for (int i = 0; i < n; i++) {
            int bits = Float.floatToRawIntBits(src[srcOffset + i]);
            int o = dstOffset + 4 * i;
            dst[o] = (byte) bits;
            dst[o + 1] = (byte) (bits >>> 8);
            dst[o + 2] = (byte) (bits >>> 16);
            dst[o + 3] = (byte) (bits >>> 24);
        }
    }

    /** Decodes {@code blocks} blocks of {@code type} (elements, for the float types) to F32. */
    static GgufBlockType.BlockDecoder decoder(GgmlType type) {
        return switch (type) {
            case F32 -> (src, so, dst, doff, n) -> {
                for (int i = 0; i < n; i++) dst[doff + i] = Float.intBitsToFloat(le32(src, so + 4 * i));
            };
            case F16 -> (src, so, dst, doff, n) -> {
                for (int i = 0; i < n; i++) dst[doff + i] = Float.float16ToFloat((short) le16(src, so + 2 * i));
            };
            case BF16 -> (src, so, dst, doff, n) -> {
                for (int i = 0; i < n; i++) dst[doff + i] = Float.intBitsToFloat(le16(src, so + 2 * i) << 16);
            };
            default -> GgufBlockType.byName(type.name()).<GgufBlockType.BlockDecoder>map(b -> b::decode)
                    .orElseThrow(() -> new IllegalStateException("no decoder for " + type));
        };
    }

    private static int le16(byte[] b, int o) {
        return (b[o] & 0xFF) | (b[o + 1] & 0xFF) << 8;
    }

    private static int le32(byte[] b, int o) {
        return le16(b, o) | le16(b, o + 2) << 16;
    }
}
