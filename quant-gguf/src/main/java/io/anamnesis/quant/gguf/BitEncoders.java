package io.anamnesis.quant.gguf;

import static io.anamnesis.quant.gguf.GgmlMath.putFp16;
import static io.anamnesis.quant.gguf.GgmlMath.roundHalfAway;

/**
 * Encoders of the 1- and 2-bit types Q1_0 and Q2_0 ({@code quantize_row_q1_0_ref} /
 * {@code quantize_row_q2_0_ref}; the chunk path runs them row by row with an importance
 * matrix and ignores it).
 */
final class BitEncoders {
    private BitEncoders() {
    }

    /** Q1_0 {f16 d; u8 qs[16]} per 128: d = mean |x|; bit j (LSB first) set where x >= 0 (so -0, not NaN). */
    static void q1_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / 128);
        for (int b = 0; b < blocks; b++, s += 128, o += 18) {
            float sumAbs = 0.0f;
            for (int j = 0; j < 128; j++) sumAbs += Math.abs(src[s + j]);
            putFp16(dst, o, sumAbs / 128);
            for (int k = 0; k < 16; k++) {
                int bits = 0;
                for (int j = 0; j < 8; j++) {
                    if (src[s + 8 * k + j] >= 0.0f) bits |= 1 << j;
                }
                dst[o + 2 + k] = (byte) bits;
            }
        }
    }

    /**
     * Q2_0 {f16 d; u8 qs[16]} per 64: d = max |x|, code clamp((int) roundf(x/d) + 1, 0, 3)
     * (so -d, 0, d; 2d is never reached), element j at bits 2(j % 4) of byte j / 4.
     */
    static void q2_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / 64);
        for (int b = 0; b < blocks; b++, s += 64, o += 18) {
            float amax = 0.0f;
            for (int j = 0; j < 64; j++) {
                float a = Math.abs(src[s + j]);
                if (a > amax) amax = a;
            }
            float id = amax > 0.0f ? 1.0f / amax : 0.0f;
            putFp16(dst, o, amax);
            for (int k = 0; k < 16; k++) {
                int bits = 0;
                for (int j = 0; j < 4; j++) {
                    int q = Math.max(0, Math.min(3, roundHalfAway(src[s + 4 * k + j] * id) + 1));
                    bits |= q << (2 * j);
                }
                dst[o + 2 + k] = (byte) bits;
            }
        }
    }
}
