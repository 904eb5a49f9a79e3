package io.anamnesis.quant.gguf;

import static io.anamnesis.quant.gguf.GgmlMath.lroundToInt;
import static io.anamnesis.quant.gguf.GgmlMath.putFp16;

/**
 * Encoders of the ternary types TQ1_0 and TQ2_0 (BitNet b1.58, TriLM): one f16 scale d =
 * max |x| per 256 values, each value rounded to -1, 0 or 1 times d by {@code lroundf(x/d)}
 * (half away from zero). ggml's chunk path is {@code quantize_row_tq*_0_ref} and ignores
 * an importance matrix.
 */
final class TernaryEncoders {
    private TernaryEncoders() {
    }

    private static final int QK_K = 256;

    /**
     * TQ1_0 {u8 qs[48]; u8 qh[4]; f16 d}: five trits per byte as a base-3 number scaled to a
     * fixed-point fraction of 256 by ceiling division ((q * 256 + 242) / 243), so that the
     * decoder's multiply-by-3 peels the digits off the top. The first 32 bytes take elements
     * m, m+32, ..., m+128 (most significant first); the next 16 take the following 80 the
     * same way in steps of 16; the 4 qh bytes take the last 16, four trits each, shifted one
     * trit up.
     */
    static void tq1_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / QK_K);
        for (int b = 0; b < blocks; b++, s += QK_K, o += 54) {
            float d = absMax(src, s);
            float id = d != 0 ? 1.0f / d : 0.0f;
            putFp16(dst, o + 52, d);
            int x = s;
            for (int m = 0; m < 32; m++) dst[o + m] = (byte) fraction(trits(src, x + m, 32, 5, id));
            x += 160;
            for (int m = 0; m < 16; m++) dst[o + 32 + m] = (byte) fraction(trits(src, x + m, 16, 5, id));
            x += 80;
            for (int j = 0; j < 4; j++) dst[o + 48 + j] = (byte) fraction(trits(src, x + j, 4, 4, id) * 3 & 0xFF);
        }
    }

    /** The base-3 number of {@code count} trits at x[from], x[from + step], ... as ggml's uint8 arithmetic gives it. */
    private static int trits(float[] x, int from, int step, int count, float id) {
        int q = 0;
        for (int n = 0; n < count; n++) q = (q * 3 + lroundToInt(x[from + n * step] * id) + 1) & 0xFF;
        return q;
    }

    /** ceil(q * 256 / 243), as the byte ggml stores. */
    private static int fraction(int q) {
        return (q * 256 + (243 - 1)) / 243;
    }

    /** TQ2_0 {u8 qs[64]; f16 d}: 2-bit codes (trit + 1), per 32 bytes elements m + 32n in bit pair n. */
    static void tq2_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / QK_K);
        for (int b = 0; b < blocks; b++, s += QK_K, o += 66) {
            float d = absMax(src, s);
            float id = d != 0 ? 1.0f / d : 0.0f;
            putFp16(dst, o + 64, d);
            for (int j = 0; j < 64; j += 32) {
                int x = s + 4 * j;
                for (int m = 0; m < 32; m++) {
                    int q = 0;
                    for (int n = 0; n < 4; n++) q += ((lroundToInt(src[x + m + 32 * n] * id) + 1) & 3) << (2 * n);
                    dst[o + j + m] = (byte) q;
                }
            }
        }
    }

    /** ggml's MAX(amax, fabsf(v)) over a super-block: a NaN is kept only until the next value. */
    private static float absMax(float[] x, int s) {
        float amax = 0.0f;
        for (int j = 0; j < QK_K; j++) {
            float a = Math.abs(x[s + j]);
            amax = amax > a ? amax : a;
        }
        return amax;
    }
}
