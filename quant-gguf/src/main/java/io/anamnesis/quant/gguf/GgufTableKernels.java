package io.anamnesis.quant.gguf;

import io.anamnesis.api.numeric.Floats;

/**
 * 4-bit block types straight to BF16 or F16 by lookup, on the scalar path: a Q4_0 block's 32
 * values, or a Q4_K sub-block's 32, share one scale (and one min) and have only 16 codes, so
 * the 16 narrowed results are computed once, by the very float expression of
 * {@link GgufKernels#q4_0}/{@link GgufKernels#q4_k} followed by the narrowing that
 * {@link GgufKernel#decode} applies ({@link Floats#f32ToBf16(int)} or
 * {@link Float#floatToFloat16}), and each value is then a nibble looked up: bit-exact by
 * construction, without a float array in between or a NaN test per value.
 *
 * <p>Measured (CpuTime GgufBench, 45 M values to BF16, one thread): see docs/benchmarks.md,
 * "Small files, GPTQ 8-bit, and a quiet forget".
 */
final class GgufTableKernels {
    private GgufTableKernels() {
    }

    /** Whether {@link #decode} takes this type. */
    static boolean decodes(GgufBlockType type) {
        return type == GgufBlockType.Q4_0 || type == GgufBlockType.Q4_K;
    }

    /**
     * Decodes {@code blocks} blocks of {@code type} from {@code src[s...]} as BF16 (or F16) bits
     * into {@code out[o...]}.
     */
    static void decode(GgufBlockType type, byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        switch (type) {
            case Q4_0 -> q4_0(src, s, out, o, blocks, bf16);
            case Q4_K -> q4_k(src, s, out, o, blocks, bf16);
            default -> throw new IllegalArgumentException(type + " has no lookup kernel");
        }
    }

    private static short narrow(float v, boolean bf16) {
        return bf16 ? Floats.f32ToBf16(Float.floatToRawIntBits(v)) : Float.floatToFloat16(v);
    }

    /** Q4_0 {f16 d; u8 qs[16]}: (q - 8) * d, low nibbles first. */
    private static void q4_0(byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        short[] t = new short[16];
        for (int i = 0; i < blocks; i++, s += 18, o += 32) {
            float d = GgufKernels.f16(src, s);
            for (int q = 0; q < 16; q++) t[q] = narrow((q - 8) * d, bf16);
            for (int j = 0; j < 16; j++) {
                int q = src[s + 2 + j];
                out[o + j] = t[q & 0xF];
                out[o + j + 16] = t[(q >> 4) & 0xF];
            }
        }
    }

    /** Q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: (d*sc) * q - (dmin*m), per 32-value sub-block. */
    private static void q4_k(byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        short[] low = new short[16];
        short[] high = new short[16];
        for (int i = 0; i < blocks; i++, s += 144) {
            float d = GgufKernels.f16(src, s);
            float min = GgufKernels.f16(src, s + 2);
            for (int c = 0; c < 4; c++, o += 64) {
                float d1 = d * GgufKernels.scaleMinK4(src, s + 4, 2 * c, 0);
                float m1 = min * GgufKernels.scaleMinK4(src, s + 4, 2 * c, 1);
                float d2 = d * GgufKernels.scaleMinK4(src, s + 4, 2 * c + 1, 0);
                float m2 = min * GgufKernels.scaleMinK4(src, s + 4, 2 * c + 1, 1);
                for (int q = 0; q < 16; q++) {
                    low[q] = narrow(d1 * q - m1, bf16);
                    high[q] = narrow(d2 * q - m2, bf16);
                }
                int qs = s + 16 + 32 * c;
                for (int l = 0; l < 32; l++) {
                    int b = src[qs + l];
                    out[o + l] = low[b & 0xF];
                    out[o + 32 + l] = high[(b >> 4) & 0xF];
                }
            }
        }
    }
}
