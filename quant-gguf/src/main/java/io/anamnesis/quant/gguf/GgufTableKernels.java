package io.anamnesis.quant.gguf;

import io.anamnesis.api.numeric.Floats;

/**
 * 4-bit block types straight to BF16 or F16 by lookup, on the scalar path: the 32 values of a
 * Q4_0, IQ4_NL or MXFP4 block, or of a Q4_K or IQ4_XS sub-block, share one scale (and
 * one min) and have only 16 codes, so the 16 narrowed results are computed once, by the very
 * float expression of the type's F32 decode in {@link GgufKernels} followed by the narrowing that
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
        return switch (type) {
            // not Q4_1: the lookup was no faster than its F32 decode and narrowing (CpuTime,
            // 45 M values: 100-108 ms against 78-141, the best of all by the F32 decode)
            case Q4_0, Q4_K, IQ4_NL, IQ4_XS, MXFP4 -> true;
            default -> false;
        };
    }

    /**
     * Decodes {@code blocks} blocks of {@code type} from {@code src[s...]} as BF16 (or F16) bits
     * into {@code out[o...]}.
     */
    static void decode(GgufBlockType type, byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        switch (type) {
            case Q4_0 -> q4_0(src, s, out, o, blocks, bf16);
            case Q4_K -> q4_k(src, s, out, o, blocks, bf16);
            case IQ4_NL -> iq4_nl(src, s, out, o, blocks, bf16);
            case IQ4_XS -> iq4_xs(src, s, out, o, blocks, bf16);
            case MXFP4 -> mxfp4(src, s, out, o, blocks, bf16);
            default -> throw new IllegalArgumentException(type + " has no lookup kernel");
        }
    }

    private static short narrow(float v, boolean bf16) {
        return bf16 ? Floats.f32ToBf16(Float.floatToRawIntBits(v)) : Float.floatToFloat16(v);
    }

    /** The 32 values of 16 bytes of codes at {@code src[qs...]}: low nibbles first, then high ones (ggml's 32-blocks). */
    private static void lowThenHigh(byte[] src, int qs, short[] t, short[] out, int o) {
        for (int j = 0; j < 16; j++) {
            int q = src[qs + j];
            out[o + j] = t[q & 0xF];
            out[o + j + 16] = t[(q >> 4) & 0xF];
        }
    }

    /** Q4_0 {f16 d; u8 qs[16]}: (q - 8) * d. */
    private static void q4_0(byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        short[] t = new short[16];
        for (int i = 0; i < blocks; i++, s += 18, o += 32) {
            float d = GgufKernels.f16(src, s);
            for (int q = 0; q < 16; q++) t[q] = narrow((q - 8) * d, bf16);
            lowThenHigh(src, s + 2, t, out, o);
        }
    }

    /** IQ4_NL {f16 d; u8 qs[16]}: d * kvalues[q]. */
    private static void iq4_nl(byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        float[] kv = GgufKernels.IQ4NL;
        short[] t = new short[16];
        for (int i = 0; i < blocks; i++, s += 18, o += 32) {
            float d = GgufKernels.f16(src, s);
            for (int q = 0; q < 16; q++) t[q] = narrow(d * kv[q], bf16);
            lowThenHigh(src, s + 2, t, out, o);
        }
    }

    /** IQ4_XS {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: (d * (ls - 32)) * kvalues[q] per 32-value sub-block. */
    private static void iq4_xs(byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        float[] kv = GgufKernels.IQ4NL;
        short[] t = new short[16];
        for (int i = 0; i < blocks; i++, s += 136) {
            float d = GgufKernels.f16(src, s);
            int scalesH = GgufKernels.u16(src, s + 2);
            for (int ib = 0; ib < 8; ib++, o += 32) {
                int ls = ((GgufKernels.u8(src, s + 4 + ib / 2) >> (4 * (ib % 2))) & 0xF) | (((scalesH >> (2 * ib)) & 3) << 4);
                float dl = d * (ls - 32);
                for (int q = 0; q < 16; q++) t[q] = narrow(dl * kv[q], bf16);
                lowThenHigh(src, s + 8 + 16 * ib, t, out, o);
            }
        }
    }

    /** MXFP4 {u8 e (E8M0); u8 qs[16]}: kvalues[q] * 2^(e - 128), ggml's doubled table with half the scale. */
    private static void mxfp4(byte[] src, int s, short[] out, int o, int blocks, boolean bf16) {
        float[] kv = GgufKernels.FP4_DOUBLED;
        short[] t = new short[16];
        for (int i = 0; i < blocks; i++, s += 17, o += 32) {
            float d = GgufKernels.e8m0Half(GgufKernels.u8(src, s));
            for (int q = 0; q < 16; q++) t[q] = narrow(kv[q] * d, bf16);
            lowThenHigh(src, s + 1, t, out, o);
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
