package io.anamnesis.quant.gguf;

import java.util.Arrays;

import static io.anamnesis.quant.gguf.GgmlMath.GROUP_MAX_EPS;
import static io.anamnesis.quant.gguf.GgmlMath.nearestInt;
import static io.anamnesis.quant.gguf.GgmlMath.putFp16;

/**
 * Encoders of the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (super-blocks of 256), as
 * {@code ggml_quantize_chunk} runs them: {@code quantize_row_*_ref} without an importance
 * matrix, the row-wise {@code quantize_row_*_impl} with one. Each super-block is fitted in
 * sub-blocks by {@link ScaleSearch}; the sub-block scales (and mins) are quantized to 4 or
 * 6 bits against one f16 super-scale, and finally every value is re-quantized against the
 * scale the decoder will actually see (the f16 super-scale times the stored sub-scale).
 */
final class KQuantEncoders {
    private KQuantEncoders() {
    }

    private static final int QK_K = 256;

    /** Working arrays of one call, so that no block allocates. */
    private static final class Work {
        final int[] levels = new int[QK_K];
        final int[] aux = new int[32];
        final float[] weights = new float[32];
        final float[] scales = new float[16];
        final float[] mins = new float[16];
        final float[] sumWeights = new float[16];
        final int[] scaleLevels = new int[16];
        final int[] minLevels = new int[16];
        final int[] packed = new int[16];
    }

    // ---------------------------------------------------------------- Q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}

    static void q2_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        Work w = new Work();
        int perBlockRow = perRow / QK_K;
        for (int r = 0; r < rows; r++) {
            for (int ib = 0; ib < perBlockRow; ib++, s += QK_K, o += 84) {
                if (importance == null) q2_kRef(src, s, dst, o, w);
                else q2_kImpl(src, s, dst, o, importance, QK_K * ib, w);
            }
        }
    }

    /** quantize_row_q2_K_ref: |x|-weighted absolute-error fits per 16, 4-bit scales and mins over max/15. */
    private static void q2_kRef(float[] x, int s, byte[] dst, int o, Work w) {
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) w.weights[l] = Math.abs(x[s + 16 * j + l]);
            w.scales[j] = ScaleSearch.affine(16, 3, x, s + 16 * j, w.weights, w.levels, 16 * j, w.aux,
                    -0.5f, 0.1f, 15, true, w.mins, j);
            if (w.scales[j] > maxScale) maxScale = w.scales[j];
            if (w.mins[j] > maxMin) maxMin = w.mins[j];
        }
        int[] sc = w.packed;
        float d;
        if (maxScale > 0) {
            float iscale = 15.f / maxScale;
            for (int j = 0; j < 16; j++) sc[j] = nearestInt(iscale * w.scales[j]) & 0xFF;
            d = putFp16(dst, o + 80, maxScale / 15.f);
        } else {
            Arrays.fill(sc, 0);
            d = putFp16(dst, o + 80, 0.f);
        }
        float dmin;
        if (maxMin > 0) {
            float iscale = 15.f / maxMin;
            for (int j = 0; j < 16; j++) sc[j] = (sc[j] | nearestInt(iscale * w.mins[j]) << 4) & 0xFF;
            dmin = putFp16(dst, o + 82, maxMin / 15.f);
        } else {
            dmin = putFp16(dst, o + 82, 0.f);
        }
        q2_kFinish(x, s, dst, o, d, dmin, w);
    }

    /** quantize_row_q2_K_impl: weighted squared-error fits, scales and mins by make_qp_quants. */
    private static void q2_kImpl(float[] x, int s, byte[] dst, int o, float[] qw, int qwo, Work w) {
        float sigma2 = sumOfSquares(x, s, QK_K) / QK_K;
        for (int j = 0; j < 16; j++) {
            float sum = 0;
            for (int l = 0; l < 16; l++) {
                float v = x[s + 16 * j + l];
                w.weights[l] = qw[qwo + 16 * j + l] * (float) Math.sqrt(sigma2 + v * v);
            }
            for (int l = 0; l < 16; l++) sum += w.weights[l];
            w.sumWeights[j] = sum;
            w.scales[j] = ScaleSearch.affine(16, 3, x, s + 16 * j, w.weights, w.levels, 16 * j, w.aux,
                    -0.9f, 0.05f, 36, false, w.mins, j);
        }
        float dm = ScaleSearch.positive(16, 15, w.scales, w.scaleLevels, w.sumWeights);
        float mm = ScaleSearch.positive(16, 15, w.mins, w.minLevels, w.sumWeights);
        float d = putFp16(dst, o + 80, dm);
        float dmin = putFp16(dst, o + 82, mm);
        for (int j = 0; j < 16; j++) w.packed[j] = (w.scaleLevels[j] | w.minLevels[j] << 4) & 0xFF;
        q2_kFinish(x, s, dst, o, d, dmin, w);
    }

    /** Stores the scale bytes, re-quantizes against the stored scales, packs four 2-bit levels per byte. */
    private static void q2_kFinish(float[] x, int s, byte[] dst, int o, float d, float dmin, Work w) {
        int[] sc = w.packed;
        int[] L = w.levels;
        for (int j = 0; j < 16; j++) {
            dst[o + j] = (byte) sc[j];
            float dj = d * (sc[j] & 0xF);
            if (dj == 0) continue;
            float mj = dmin * (sc[j] >> 4);
            for (int ii = 0; ii < 16; ii++) {
                L[16 * j + ii] = Math.max(0, Math.min(3, nearestInt((x[s + 16 * j + ii] + mj) / dj)));
            }
        }
        packTwoBits(L, dst, o + 16);
    }

    // ---------------------------------------------------------------- Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}

    static void q3_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        Work w = new Work();
        int perBlockRow = perRow / QK_K;
        for (int r = 0; r < rows; r++) {
            for (int ib = 0; ib < perBlockRow; ib++, s += QK_K, o += 110) {
                if (importance == null) q3_kRef(src, s, dst, o, w);
                else q3_kImpl(src, s, dst, o, importance, QK_K * ib, w);
            }
        }
    }

    /** quantize_row_q3_K_ref: make_q3_quants per 16, signed 6-bit scales against the signed extreme / -32. */
    private static void q3_kRef(float[] x, int s, byte[] dst, int o, Work w) {
        float maxScale = 0;
        float amax = 0;
        for (int j = 0; j < 16; j++) {
            w.scales[j] = ScaleSearch.symmetricRefined(16, 4, x, s + 16 * j, w.levels, 16 * j);
            float scale = Math.abs(w.scales[j]);
            if (scale > amax) {
                amax = scale;
                maxScale = w.scales[j];
            }
        }
        int[] sb = w.packed;
        Arrays.fill(sb, 0, 12, 0);
        float d;
        if (maxScale != 0) {
            float iscale = -32.f / maxScale;
            for (int j = 0; j < 16; j++) {
                int l = Math.max(-32, Math.min(31, (byte) nearestInt(iscale * w.scales[j]))) + 32;
                packSixBitScale(sb, j, l);
            }
            d = putFp16(dst, o + 108, 1 / iscale);
        } else {
            d = putFp16(dst, o + 108, 0.f);
        }
        q3_kFinish(x, s, dst, o, d, w);
    }

    /** quantize_row_q3_K_impl: weighted make_qx_quants per 16, the scales fitted by make_qx_quants too. */
    private static void q3_kImpl(float[] x, int s, byte[] dst, int o, float[] qw, int qwo, Work w) {
        float sigma2 = 2 * sumOfSquares(x, s, QK_K) / QK_K;
        for (int j = 0; j < 16; j++) {
            for (int l = 0; l < 16; l++) {
                float v = x[s + 16 * j + l];
                w.weights[l] = qw[qwo + 16 * j + l] * (float) Math.sqrt(sigma2 + v * v);
            }
            float sum = 0;
            for (int l = 0; l < 16; l++) sum += w.weights[l];
            w.sumWeights[j] = sum;
            w.scales[j] = ScaleSearch.symmetric(16, 4, x, s + 16 * j, w.levels, 16 * j, w.weights, 0, w.aux);
        }
        int[] sb = w.packed;
        Arrays.fill(sb, 0, 12, 0);
        float dBlock = ScaleSearch.symmetric(16, 32, w.scales, 0, w.scaleLevels, 0, w.sumWeights, 0, w.aux);
        for (int j = 0; j < 16; j++) packSixBitScale(sb, j, w.scaleLevels[j]);
        float d = putFp16(dst, o + 108, dBlock);
        q3_kFinish(x, s, dst, o, d, w);
    }

    /** Q3_K scale j (0..63): low nibble in byte j (j < 8) or the high nibble of j - 8, top 2 bits in byte 8 + j % 4. */
    private static void packSixBitScale(int[] sb, int j, int l) {
        if (j < 8) sb[j] = l & 0xF;
        else sb[j - 8] |= (l & 0xF) << 4;
        sb[j % 4 + 8] |= (l >> 4) << (2 * (j / 4));
    }

    private static void q3_kFinish(float[] x, int s, byte[] dst, int o, float d, Work w) {
        int[] sb = w.packed;
        int[] L = w.levels;
        for (int k = 0; k < 12; k++) dst[o + 96 + k] = (byte) sb[k];
        for (int j = 0; j < 16; j++) {
            int low = j < 8 ? sb[j] & 0xF : (sb[j - 8] & 0xFF) >> 4;
            int sc = (low | ((sb[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
            float dj = d * sc;
            if (dj == 0) continue;
            for (int ii = 0; ii < 16; ii++) {
                L[16 * j + ii] = Math.max(-4, Math.min(3, nearestInt(x[s + 16 * j + ii] / dj))) + 4;
            }
        }
        // The high bit of element j goes to bit j / 32 of hmask[j % 32].
        Arrays.fill(dst, o, o + 32, (byte) 0);
        for (int j = 0; j < QK_K; j++) {
            if (L[j] > 3) {
                dst[o + (j & 31)] |= (byte) (1 << (j >> 5));
                L[j] -= 4;
            }
        }
        packTwoBits(L, dst, o + 32);
    }

    // ---------------------------------------------------------------- Q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}

    static void q4_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        Work w = new Work();
        int perBlockRow = perRow / QK_K;
        for (int r = 0; r < rows; r++) {
            for (int ib = 0; ib < perBlockRow; ib++, s += QK_K, o += 144) {
                if (importance == null) affineRef(src, s, dst, o, 15, -1.f, 0.1f, 20, w);
                else affineImpl(src, s, dst, o, 15, importance, QK_K * ib, w);
                requantizeAffine(src, s, dst, o, 15, w);
                int[] L = w.levels;
                for (int j = 0, q = o + 16; j < QK_K; j += 64, q += 32) {
                    for (int l = 0; l < 32; l++) dst[q + l] = (byte) (L[j + l] | L[j + l + 32] << 4);
                }
            }
        }
    }

    // ---------------------------------------------------------------- Q5_K {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}

    static void q5_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        Work w = new Work();
        int perBlockRow = perRow / QK_K;
        for (int r = 0; r < rows; r++) {
            for (int ib = 0; ib < perBlockRow; ib++, s += QK_K, o += 176) {
                if (importance == null) affineRef(src, s, dst, o, 31, -0.5f, 0.1f, 15, w);
                else affineImpl(src, s, dst, o, 31, importance, QK_K * ib, w);
                requantizeAffine(src, s, dst, o, 31, w);
                // Bit 4 of element n + j (n = 64 c) goes to bit 2c of qh[j], of n + 32 + j to bit 2c + 1.
                int[] L = w.levels;
                Arrays.fill(dst, o + 16, o + 48, (byte) 0);
                int m1 = 1;
                int m2 = 2;
                for (int n = 0, ql = o + 48; n < QK_K; n += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
                    for (int j = 0; j < 32; j++) {
                        int l1 = L[n + j];
                        if (l1 > 15) {
                            l1 -= 16;
                            dst[o + 16 + j] |= (byte) m1;
                        }
                        int l2 = L[n + j + 32];
                        if (l2 > 15) {
                            l2 -= 16;
                            dst[o + 16 + j] |= (byte) m2;
                        }
                        dst[ql + j] = (byte) (l1 | l2 << 4);
                    }
                }
            }
        }
    }

    /**
     * quantize_row_q4_K_ref / q5_K_ref up to the scale bytes: make_qkx2_quants per 32 with
     * weights av_x + |x|, 6-bit scales and mins against max/63.
     */
    private static void affineRef(float[] x, int s, byte[] dst, int o, int nmax, float rmin, float rdelta, int nstep, Work w) {
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 8; j++) {
            int xs = s + 32 * j;
            float sumX2 = sumOfSquares(x, xs, 32);
            float avX = (float) Math.sqrt(sumX2 / 32);
            for (int l = 0; l < 32; l++) w.weights[l] = avX + Math.abs(x[xs + l]);
            w.scales[j] = ScaleSearch.affine(32, nmax, x, xs, w.weights, w.levels, 32 * j, w.aux,
                    rmin, rdelta, nstep, false, w.mins, j);
            if (w.scales[j] > maxScale) maxScale = w.scales[j];
            if (w.mins[j] > maxMin) maxMin = w.mins[j];
        }
        float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
        float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
        for (int j = 0; j < 8; j++) {
            int ls = Math.min(63, nearestInt(invScale * w.scales[j]) & 0xFF);
            int lm = Math.min(63, nearestInt(invMin * w.mins[j]) & 0xFF);
            packScaleMin(w.packed, j, ls, lm);
        }
        putFp16(dst, o, maxScale / 63.f);
        putFp16(dst, o + 2, maxMin / 63.f);
    }

    /**
     * quantize_row_q4_K_impl / q5_K_impl up to the scale bytes: make_qkx3_quants per 32 with
     * weights qw sqrt(sigma2 + x^2), scales and mins fitted by make_qp_quants.
     */
    private static void affineImpl(float[] x, int s, byte[] dst, int o, int nmax, float[] qw, int qwo, Work w) {
        float sigma2 = 2 * sumOfSquares(x, s, QK_K) / QK_K;
        for (int j = 0; j < 8; j++) {
            int xs = s + 32 * j;
            for (int l = 0; l < 32; l++) {
                float v = x[xs + l];
                w.weights[l] = qw[qwo + 32 * j + l] * (float) Math.sqrt(sigma2 + v * v);
            }
            float sum = 0;
            for (int l = 0; l < 32; l++) sum += w.weights[l];
            w.sumWeights[j] = sum;
            w.scales[j] = ScaleSearch.affine(32, nmax, x, xs, w.weights, w.levels, 32 * j, w.aux,
                    -0.9f, 0.05f, 36, false, w.mins, j);
        }
        float dBlock = ScaleSearch.positive(8, 63, w.scales, w.scaleLevels, w.sumWeights);
        float mBlock = ScaleSearch.positive(8, 63, w.mins, w.minLevels, w.sumWeights);
        // make_qp_quants levels are uint8 and at most 63 unless one wrapped from a negative;
        // Q5_K clamps them to 63 again, Q4_K stores them as they are.
        for (int j = 0; j < 8; j++) {
            int ls = w.scaleLevels[j];
            int lm = w.minLevels[j];
            if (nmax == 31) {
                ls = Math.min(63, ls);
                lm = Math.min(63, lm);
            }
            packScaleMin(w.packed, j, ls, lm);
        }
        putFp16(dst, o, dBlock);
        putFp16(dst, o + 2, mBlock);
    }

    /** The 12-byte K_SCALE packing (the inverse of get_scale_min_k4), filled in order j = 0..7. */
    private static void packScaleMin(int[] sb, int j, int ls, int lm) {
        if (j < 4) {
            sb[j] = ls;
            sb[j + 4] = lm;
        } else {
            sb[j + 4] = (ls & 0xF) | (lm & 0xF) << 4;
            sb[j - 4] |= (ls >> 4) << 6;
            sb[j] |= (lm >> 4) << 6;
        }
    }

    /** Stores the 12 scale bytes and re-quantizes every value against (d sc, dmin m) as stored. */
    private static void requantizeAffine(float[] x, int s, byte[] dst, int o, int nmax, Work w) {
        int[] sb = w.packed;
        for (int k = 0; k < 12; k++) dst[o + 4 + k] = (byte) sb[k];
        float d = GgmlMath.fp32((short) ((dst[o] & 0xFF) | dst[o + 1] << 8));
        float dmin = GgmlMath.fp32((short) ((dst[o + 2] & 0xFF) | dst[o + 3] << 8));
        int[] L = w.levels;
        for (int j = 0; j < 8; j++) {
            int sc;
            int m;
            if (j < 4) {
                sc = sb[j] & 63;
                m = sb[j + 4] & 63;
            } else {
                sc = (sb[j + 4] & 0xF) | ((sb[j - 4] & 0xFF) >> 6) << 4;
                m = (sb[j + 4] & 0xFF) >> 4 | ((sb[j] & 0xFF) >> 6) << 4;
            }
            float dj = d * sc;
            if (dj == 0) continue;
            float dm = dmin * m;
            for (int ii = 0; ii < 32; ii++) {
                L[32 * j + ii] = Math.max(0, Math.min(nmax, nearestInt((x[s + 32 * j + ii] + dm) / dj)));
            }
        }
    }

    // ---------------------------------------------------------------- Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}

    static void q6_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        Work w = new Work();
        int perBlockRow = perRow / QK_K;
        for (int r = 0; r < rows; r++) {
            for (int ib = 0; ib < perBlockRow; ib++, s += QK_K, o += 210) {
                q6_kBlock(src, s, dst, o, importance, QK_K * ib, w);
            }
        }
    }

    /**
     * quantize_row_q6_K_ref (x^2 weights) and _impl (the importance itself as weights):
     * make_qx_quants per 16 with nmax 32, int8 scales against the signed extreme / -128.
     */
    private static void q6_kBlock(float[] x, int s, byte[] dst, int o, float[] qw, int qwo, Work w) {
        float maxScale = 0;
        float maxAbsScale = 0;
        for (int ib = 0; ib < 16; ib++) {
            float scale = ScaleSearch.symmetric(16, 32, x, s + 16 * ib, w.levels, 16 * ib, qw, qwo + 16 * ib, w.aux);
            w.scales[ib] = scale;
            float abs = Math.abs(scale);
            if (abs > maxAbsScale) {
                maxAbsScale = abs;
                maxScale = scale;
            }
        }
        if (maxAbsScale < GROUP_MAX_EPS) {
            Arrays.fill(dst, o, o + 210, (byte) 0);
            return;
        }
        float iscale = -128.f / maxScale;
        float d = putFp16(dst, o + 208, 1 / iscale);
        int[] L = w.levels;
        for (int ib = 0; ib < 16; ib++) {
            byte sc = (byte) Math.min(127, nearestInt(iscale * w.scales[ib]));
            dst[o + 192 + ib] = sc;
            float dj = d * sc;
            if (dj == 0) continue;
            for (int ii = 0; ii < 16; ii++) {
                L[16 * ib + ii] = Math.max(-32, Math.min(31, nearestInt(x[s + 16 * ib + ii] / dj))) + 32;
            }
        }
        for (int j = 0, ql = o, qh = o + 128; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                int a = L[j + l];
                int b = L[j + l + 32];
                int c = L[j + l + 64];
                int e = L[j + l + 96];
                dst[ql + l] = (byte) ((a & 0xF) | (c & 0xF) << 4);
                dst[ql + l + 32] = (byte) ((b & 0xF) | (e & 0xF) << 4);
                dst[qh + l] = (byte) ((a >> 4) | (b >> 4) << 2 | (c >> 4) << 4 | (e >> 4) << 6);
            }
        }
    }

    // ---------------------------------------------------------------- Q8_K {f32 d; i8 qs[256]; i16 bsums[16]}

    /**
     * quantize_row_q8_K_ref, the activation type of K-quant dot products (ggml's chunk path
     * has no Q8_K case): q = min(127, nearest_int(-127/max x)) against the signed extreme,
     * d = 1/iscale as an F32, bsums the sums of each 16 levels. An all-zero block is d = 0
     * and zero levels; ggml leaves its bsums unwritten, here they are zero.
     */
    static void q8_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / QK_K);
        for (int b = 0; b < blocks; b++, s += QK_K, o += 292) {
            float max = 0;
            float amax = 0;
            for (int j = 0; j < QK_K; j++) {
                float ax = Math.abs(src[s + j]);
                if (ax > amax) {
                    amax = ax;
                    max = src[s + j];
                }
            }
            if (amax == 0) {
                Arrays.fill(dst, o, o + 292, (byte) 0);
                continue;
            }
            float iscale = -127.f / max;
            for (int j = 0; j < QK_K; j += 16) {
                int sum = 0;
                for (int ii = 0; ii < 16; ii++) {
                    byte q = (byte) Math.min(127, nearestInt(iscale * src[s + j + ii]));
                    dst[o + 4 + j + ii] = q;
                    sum += q;
                }
                dst[o + 260 + j / 8] = (byte) sum;
                dst[o + 261 + j / 8] = (byte) (sum >> 8);
            }
            GgmlMath.putInt(dst, o, Float.floatToRawIntBits(1 / iscale));
        }
    }

    // ---------------------------------------------------------------- shared

    /** Four 2-bit levels per byte: byte j/4 + l of each 128 holds elements j + l, +32, +64, +96. */
    private static void packTwoBits(int[] L, byte[] dst, int at) {
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; l++) {
                dst[at + j / 4 + l] = (byte) (L[j + l] | L[j + l + 32] << 2 | L[j + l + 64] << 4 | L[j + l + 96] << 6);
            }
        }
    }

    /** sum of x^2 in ggml's order (one float accumulator, front to back). */
    private static float sumOfSquares(float[] x, int from, int n) {
        float sum = 0;
        for (int j = 0; j < n; j++) sum += x[from + j] * x[from + j];
        return sum;
    }
}
