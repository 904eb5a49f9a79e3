package io.anamnesis.quant.gguf;

import java.util.Arrays;

import static io.anamnesis.quant.gguf.GgmlMath.GROUP_MAX_EPS;
import static io.anamnesis.quant.gguf.GgmlMath.nearestInt;
import static io.anamnesis.quant.gguf.GgmlMath.putFp16;

/**
 * Encoders of the K-quants Q2_K, Q3_K, Q4_K, Q5_K and Q6_K (super-blocks of 256), as
 * {@code ggml_quantize_chunk} runs them: {@code quantize_row_*_ref} without an importance
 * matrix, the row-wise {@code quantize_row_*_impl} with one.
 *
 * <p>Every one of them works in two stages, which is how this class is cut: first each
 * sub-block (16 or 32 values) is fitted on its own by one of ggml's searches ({@link Spec}
 * says which, with which weights), then the super-block is finished: the sub-block scales
 * (and mins) are quantized to 4, 6 or 8 bits against one f16 super-scale, and every value
 * is re-quantized against the scale the decoder will see. The first stage is nearly all of
 * the work and is independent per sub-block, so {@link KQuantVectorEncoders} runs it for
 * many sub-blocks at once and then calls the same finishing code.
 */
final class KQuantEncoders {
    private KQuantEncoders() {
    }

    static final int QK_K = 256;

    /** Which of ggml's searches fits a sub-block. */
    enum Fit {
        /** make_qkx2_quants / make_qkx3_quants: levels 0..nmax over [min, max]. */
        AFFINE,
        /** make_qx_quants (rmse_type 1): symmetric levels around nmax. */
        SYMMETRIC,
        /** make_q3_quants with do_rmse: symmetric levels, then single-level moves. */
        REFINED
    }

    /** Where the weights of a fit come from. */
    enum Weights {
        /** x^2, computed inside the search (make_qx_quants / make_q3_quants without weights). */
        SQUARES,
        /** |x| (Q2_K reference). */
        ABS,
        /** sqrt(mean of x^2 over the sub-block) + |x| (Q4_K, Q5_K reference). */
        RMS_PLUS_ABS,
        /** qw * sqrt(sigma2 + x^2), sigma2 = sigmaScale * (sum of x^2 over the super-block) / 256. */
        IMPORTANCE,
        /** the importance itself (Q6_K with importance). */
        RAW_IMPORTANCE
    }

    /** One type's sub-block fit: size, level range, search, weights and the search's constants. */
    record Spec(int n, int nmax, Fit fit, Weights weights, float sigmaScale,
                float rmin, float rdelta, int nstep, boolean mad) {
        int perSuper() {
            return QK_K / n;
        }
    }

    static final Spec Q2_K_REF = new Spec(16, 3, Fit.AFFINE, Weights.ABS, 0, -0.5f, 0.1f, 15, true);
    static final Spec Q2_K_IMPL = new Spec(16, 3, Fit.AFFINE, Weights.IMPORTANCE, 1, -0.9f, 0.05f, 36, false);
    static final Spec Q3_K_REF = new Spec(16, 4, Fit.REFINED, Weights.SQUARES, 0, 0, 0, 0, false);
    static final Spec Q3_K_IMPL = new Spec(16, 4, Fit.SYMMETRIC, Weights.IMPORTANCE, 2, 0, 0, 0, false);
    static final Spec Q4_K_REF = new Spec(32, 15, Fit.AFFINE, Weights.RMS_PLUS_ABS, 0, -1.f, 0.1f, 20, false);
    static final Spec Q4_K_IMPL = new Spec(32, 15, Fit.AFFINE, Weights.IMPORTANCE, 2, -0.9f, 0.05f, 36, false);
    static final Spec Q5_K_REF = new Spec(32, 31, Fit.AFFINE, Weights.RMS_PLUS_ABS, 0, -0.5f, 0.1f, 15, false);
    static final Spec Q5_K_IMPL = new Spec(32, 31, Fit.AFFINE, Weights.IMPORTANCE, 2, -0.9f, 0.05f, 36, false);
    static final Spec Q6_K_REF = new Spec(16, 32, Fit.SYMMETRIC, Weights.SQUARES, 0, 0, 0, 0, false);
    static final Spec Q6_K_IMPL = new Spec(16, 32, Fit.SYMMETRIC, Weights.RAW_IMPORTANCE, 0, 0, 0, 0, false);

    /** Super-blocks handled per batch: enough for two groups of 16 lanes of 32-value sub-blocks. */
    static final int BATCH = 4;

    /**
     * Working arrays of one call, sized for {@link #BATCH} super-blocks: the fits write
     * levels, scales, mins and weight sums at the super-block's offset, the finishing code
     * reads them there. Nothing is allocated per block.
     */
    static final class Work {
        final int[] levels = new int[BATCH * QK_K];
        final float[] weights = new float[BATCH * QK_K];
        final float[] scales = new float[BATCH * 16];
        final float[] mins = new float[BATCH * 16];
        final float[] sumWeights = new float[BATCH * 16];
        final int[] aux = new int[32];
        /** Q5_K's fifth bits (Q3_K's third) of 32 bytes while they are gathered. */
        final int[] highBits = new int[32];
        final int[] scaleLevels = new int[16];
        final int[] minLevels = new int[16];
        final int[] packed = new int[16];
        /** Whether the re-quantization runs on the Vector API (the vector encoders set it). */
        boolean vector;
        /** Where the fitted levels are when not in {@link #levels} (the vector encoders keep them transposed). */
        FitLevels fitLevels;

        /**
         * Sub-block {@code sub}'s fitted levels are needed as they are (its stored scale is
         * zero, so ggml does not re-quantize it): bring them to {@code levels[at]}.
         */
        void keepFit(int sub, int at) {
            if (fitLevels != null) fitLevels.copy(sub, levels, at);
        }
    }

    /** A source of fitted levels, by sub-block of the batch. */
    @FunctionalInterface
    interface FitLevels {
        void copy(int sub, int[] levels, int at);
    }

    /**
     * ggml's final re-quantization of one sub-block against the scale the decoder sees:
     * {@code L[lo + i] = clamp(nearest_int((x + m) / d), low, high) + shift}, the addition
     * only where ggml adds a min ({@code withMin}).
     */
    static void requantize(float[] x, int xs, int n, boolean withMin, float m, float d, int low, int high, int shift,
                           int[] L, int lo, boolean vector) {
        if (vector) {
            KQuantVectorEncoders.requantize(x, xs, n, withMin, m, d, low, high, shift, L, lo);
            return;
        }
        for (int i = 0; i < n; i++) {
            float v = withMin ? x[xs + i] + m : x[xs + i];
            L[lo + i] = Math.max(low, Math.min(high, nearestInt(v / d))) + shift;
        }
    }

    /** Finishes super-block {@code k} of the batch from its fits: bytes at {@code dst[o]}. */
    @FunctionalInterface
    interface Finish {
        void finish(float[] x, int s, byte[] dst, int o, Work w, int k);
    }

    static Spec spec(GgufBlockType type, boolean importance) {
        return switch (type) {
            case Q2_K -> importance ? Q2_K_IMPL : Q2_K_REF;
            case Q3_K -> importance ? Q3_K_IMPL : Q3_K_REF;
            case Q4_K -> importance ? Q4_K_IMPL : Q4_K_REF;
            case Q5_K -> importance ? Q5_K_IMPL : Q5_K_REF;
            case Q6_K -> importance ? Q6_K_IMPL : Q6_K_REF;
            default -> throw new IllegalArgumentException(type + " is not a K-quant");
        };
    }

    static Finish finish(GgufBlockType type, boolean importance) {
        return switch (type) {
            case Q2_K -> importance ? KQuantEncoders::q2_kImplFinish : KQuantEncoders::q2_kRefFinish;
            case Q3_K -> importance ? KQuantEncoders::q3_kImplFinish : KQuantEncoders::q3_kRefFinish;
            case Q4_K -> importance ? KQuantEncoders::q4_kImplFinish : KQuantEncoders::q4_kRefFinish;
            case Q5_K -> importance ? KQuantEncoders::q5_kImplFinish : KQuantEncoders::q5_kRefFinish;
            case Q6_K -> KQuantEncoders::q6_kFinish;
            default -> throw new IllegalArgumentException(type + " is not a K-quant");
        };
    }

    static void q2_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        encode(GgufBlockType.Q2_K, src, s, dst, o, rows, perRow, importance);
    }

    static void q3_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        encode(GgufBlockType.Q3_K, src, s, dst, o, rows, perRow, importance);
    }

    static void q4_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        encode(GgufBlockType.Q4_K, src, s, dst, o, rows, perRow, importance);
    }

    static void q5_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        encode(GgufBlockType.Q5_K, src, s, dst, o, rows, perRow, importance);
    }

    static void q6_k(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        encode(GgufBlockType.Q6_K, src, s, dst, o, rows, perRow, importance);
    }

    /** The scalar path: fit and finish one super-block at a time. */
    private static void encode(GgufBlockType type, float[] src, int s, byte[] dst, int o, int rows, int perRow,
                               float[] importance) {
        Spec spec = spec(type, importance != null);
        Finish finish = finish(type, importance != null);
        Work w = new Work();
        int perBlockRow = perRow / QK_K;
        for (int r = 0; r < rows; r++) {
            for (int ib = 0; ib < perBlockRow; ib++, s += QK_K, o += type.blockBytes()) {
                prepareWeights(spec, src, s, importance, QK_K * ib, w, 0);
                for (int j = 0; j < spec.perSuper(); j++) fit(spec, src, s + spec.n() * j, w, spec.n() * j, j);
                finish.finish(src, s, dst, o, w, 0);
            }
        }
    }

    /**
     * The weights of super-block {@code k} of the batch (values at {@code x[s]}, importance
     * of its columns at {@code qw[qwo]}) into {@code w.weights}, and for
     * {@link Weights#IMPORTANCE} each sub-block's sum of them into {@code w.sumWeights}.
     */
    static void prepareWeights(Spec spec, float[] x, int s, float[] qw, int qwo, Work w, int k) {
        int e0 = QK_K * k;
        int n = spec.n();
        switch (spec.weights()) {
            case SQUARES -> { }
            case ABS -> {
                for (int i = 0; i < QK_K; i++) w.weights[e0 + i] = Math.abs(x[s + i]);
            }
            case RMS_PLUS_ABS -> {
                for (int j = 0; j < QK_K; j += n) {
                    float sumX2 = 0;
                    for (int l = 0; l < n; l++) sumX2 += x[s + j + l] * x[s + j + l];
                    float avX = (float) Math.sqrt(sumX2 / n);
                    for (int l = 0; l < n; l++) w.weights[e0 + j + l] = avX + Math.abs(x[s + j + l]);
                }
            }
            case IMPORTANCE -> {
                float sumX2 = 0;
                for (int i = 0; i < QK_K; i++) sumX2 += x[s + i] * x[s + i];
                float sigma2 = spec.sigmaScale() * sumX2 / QK_K;
                for (int j = 0; j < QK_K; j += n) {
                    for (int l = 0; l < n; l++) {
                        float v = x[s + j + l];
                        w.weights[e0 + j + l] = qw[qwo + j + l] * (float) Math.sqrt(sigma2 + v * v);
                    }
                    float sum = 0;
                    for (int l = 0; l < n; l++) sum += w.weights[e0 + j + l];
                    w.sumWeights[spec.perSuper() * k + j / n] = sum;
                }
            }
            case RAW_IMPORTANCE -> System.arraycopy(qw, qwo, w.weights, e0, QK_K);
        }
    }

    /**
     * Fits one sub-block (values at {@code x[xs]}, element {@code e} of the batch, sub-block
     * {@code sub} of the batch) with the scalar searches.
     */
    private static void fit(Spec spec, float[] x, int xs, Work w, int e, int sub) {
        int n = spec.n();
        w.scales[sub] = switch (spec.fit()) {
            case AFFINE -> ScaleSearch.affine(n, spec.nmax(), x, xs, w.weights, e, w.levels, e, w.aux,
                    spec.rmin(), spec.rdelta(), spec.nstep(), spec.mad(), w.mins, sub);
            case SYMMETRIC -> ScaleSearch.symmetric(n, spec.nmax(), x, xs, w.levels, e,
                    spec.weights() == Weights.SQUARES ? null : w.weights, e, w.aux);
            case REFINED -> ScaleSearch.symmetricRefined(n, spec.nmax(), x, xs, w.levels, e);
        };
    }

    // ---------------------------------------------------------------- Q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}

    /** quantize_row_q2_K_ref after the fits: 4-bit scales and mins against max/15. */
    static void q2_kRefFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        int so = 16 * k;
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 16; j++) {
            if (w.scales[so + j] > maxScale) maxScale = w.scales[so + j];
            if (w.mins[so + j] > maxMin) maxMin = w.mins[so + j];
        }
        int[] sc = w.packed;
        float d;
        if (maxScale > 0) {
            float iscale = 15.f / maxScale;
            for (int j = 0; j < 16; j++) sc[j] = nearestInt(iscale * w.scales[so + j]) & 0xFF;
            d = putFp16(dst, o + 80, maxScale / 15.f);
        } else {
            Arrays.fill(sc, 0);
            d = putFp16(dst, o + 80, 0.f);
        }
        float dmin;
        if (maxMin > 0) {
            float iscale = 15.f / maxMin;
            for (int j = 0; j < 16; j++) sc[j] = (sc[j] | nearestInt(iscale * w.mins[so + j]) << 4) & 0xFF;
            dmin = putFp16(dst, o + 82, maxMin / 15.f);
        } else {
            dmin = putFp16(dst, o + 82, 0.f);
        }
        q2_kPack(x, s, dst, o, d, dmin, w, k);
    }

    /** quantize_row_q2_K_impl after the fits: scales and mins by make_qp_quants, weighted by the sub-block weight sums. */
    static void q2_kImplFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        int so = 16 * k;
        float dm = ScaleSearch.positive(16, 15, w.scales, w.sumWeights, so, w.scaleLevels);
        float mm = ScaleSearch.positive(16, 15, w.mins, w.sumWeights, so, w.minLevels);
        float d = putFp16(dst, o + 80, dm);
        float dmin = putFp16(dst, o + 82, mm);
        for (int j = 0; j < 16; j++) w.packed[j] = (w.scaleLevels[j] | w.minLevels[j] << 4) & 0xFF;
        q2_kPack(x, s, dst, o, d, dmin, w, k);
    }

    /** Stores the scale bytes, re-quantizes against the stored scales, packs four 2-bit levels per byte. */
    private static void q2_kPack(float[] x, int s, byte[] dst, int o, float d, float dmin, Work w, int k) {
        int[] sc = w.packed;
        int[] L = w.levels;
        int lo = QK_K * k;
        for (int j = 0; j < 16; j++) {
            dst[o + j] = (byte) sc[j];
            float dj = d * (sc[j] & 0xF);
            if (dj == 0) {
                w.keepFit(16 * k + j, lo + 16 * j);
                continue;
            }
            float mj = dmin * (sc[j] >> 4);
            requantize(x, s + 16 * j, 16, true, mj, dj, 0, 3, 0, L, lo + 16 * j, w.vector);
        }
        packTwoBits(L, lo, dst, o + 16);
    }

    // ---------------------------------------------------------------- Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}

    /** quantize_row_q3_K_ref after the fits: signed 6-bit scales against the signed extreme / -32. */
    static void q3_kRefFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        int so = 16 * k;
        float maxScale = 0;
        float amax = 0;
        for (int j = 0; j < 16; j++) {
            float scale = Math.abs(w.scales[so + j]);
            if (scale > amax) {
                amax = scale;
                maxScale = w.scales[so + j];
            }
        }
        int[] sb = w.packed;
        Arrays.fill(sb, 0, 12, 0);
        float d;
        if (maxScale != 0) {
            float iscale = -32.f / maxScale;
            for (int j = 0; j < 16; j++) {
                int l = Math.max(-32, Math.min(31, (byte) nearestInt(iscale * w.scales[so + j]))) + 32;
                packSixBitScale(sb, j, l);
            }
            d = putFp16(dst, o + 108, 1 / iscale);
        } else {
            d = putFp16(dst, o + 108, 0.f);
        }
        q3_kPack(x, s, dst, o, d, w, k);
    }

    /** quantize_row_q3_K_impl after the fits: the 16 scales fitted by make_qx_quants (nmax 32) weighted by the sums. */
    static void q3_kImplFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        int so = 16 * k;
        int[] sb = w.packed;
        Arrays.fill(sb, 0, 12, 0);
        float dBlock = ScaleSearch.symmetric(16, 32, w.scales, so, w.scaleLevels, 0, w.sumWeights, so, w.aux);
        for (int j = 0; j < 16; j++) packSixBitScale(sb, j, w.scaleLevels[j]);
        float d = putFp16(dst, o + 108, dBlock);
        q3_kPack(x, s, dst, o, d, w, k);
    }

    /** Q3_K scale j (0..63): low nibble in byte j (j < 8) or the high nibble of j - 8, top 2 bits in byte 8 + j % 4. */
    private static void packSixBitScale(int[] sb, int j, int l) {
        if (j < 8) sb[j] = l & 0xF;
        else sb[j - 8] |= (l & 0xF) << 4;
        sb[j % 4 + 8] |= (l >> 4) << (2 * (j / 4));
    }

    private static void q3_kPack(float[] x, int s, byte[] dst, int o, float d, Work w, int k) {
        int[] sb = w.packed;
        int[] L = w.levels;
        int lo = QK_K * k;
        for (int b = 0; b < 12; b++) dst[o + 96 + b] = (byte) sb[b];
        for (int j = 0; j < 16; j++) {
            int low = j < 8 ? sb[j] & 0xF : (sb[j - 8] & 0xFF) >> 4;
            int sc = (low | ((sb[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
            float dj = d * sc;
            if (dj == 0) {
                w.keepFit(16 * k + j, lo + 16 * j);
                continue;
            }
            requantize(x, s + 16 * j, 16, false, 0, dj, -4, 3, 4, L, lo + 16 * j, w.vector);
        }
        // The high bit of element j goes to bit j / 32 of hmask[j % 32]; branch-free, as a
        // level's high bit is a coin toss that a test would mispredict half the time.
        int[] high = w.highBits;
        Arrays.fill(high, 0);
        for (int c = 0, n = lo; c < 8; c++, n += 32) {
            for (int m = 0; m < 32; m++) {
                int v = L[n + m];
                high[m] |= (v >> 2 & 1) << c;
                L[n + m] = v & 3;
            }
        }
        for (int m = 0; m < 32; m++) dst[o + m] = (byte) high[m];
        packTwoBits(L, lo, dst, o + 32);
    }

    // ---------------------------------------------------------------- Q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}
    // ---------------------------------------------------------------- Q5_K {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}

    static void q4_kRefFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        affineRefScales(dst, o, w, k);
        requantizeAffine(x, s, dst, o, 15, w, k);
        packFourBits(w, k, dst, o);
    }

    static void q4_kImplFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        affineImplScales(dst, o, w, k, false);
        requantizeAffine(x, s, dst, o, 15, w, k);
        packFourBits(w, k, dst, o);
    }

    static void q5_kRefFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        affineRefScales(dst, o, w, k);
        requantizeAffine(x, s, dst, o, 31, w, k);
        packFiveBits(w, k, dst, o);
    }

    static void q5_kImplFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        affineImplScales(dst, o, w, k, true);
        requantizeAffine(x, s, dst, o, 31, w, k);
        packFiveBits(w, k, dst, o);
    }

    /** quantize_row_q4_K_ref / q5_K_ref: 6-bit scales and mins against max/63. */
    private static void affineRefScales(byte[] dst, int o, Work w, int k) {
        int so = 8 * k;
        float maxScale = 0;
        float maxMin = 0;
        for (int j = 0; j < 8; j++) {
            if (w.scales[so + j] > maxScale) maxScale = w.scales[so + j];
            if (w.mins[so + j] > maxMin) maxMin = w.mins[so + j];
        }
        float invScale = maxScale > 0 ? 63.f / maxScale : 0.f;
        float invMin = maxMin > 0 ? 63.f / maxMin : 0.f;
        for (int j = 0; j < 8; j++) {
            int ls = Math.min(63, nearestInt(invScale * w.scales[so + j]) & 0xFF);
            int lm = Math.min(63, nearestInt(invMin * w.mins[so + j]) & 0xFF);
            packScaleMin(w.packed, j, ls, lm);
        }
        putFp16(dst, o, maxScale / 63.f);
        putFp16(dst, o + 2, maxMin / 63.f);
    }

    /**
     * quantize_row_q4_K_impl / q5_K_impl: scales and mins fitted by make_qp_quants. Its
     * levels are uint8 and at most 63 unless one wrapped from a negative; Q5_K clamps them to
     * 63 again, Q4_K stores them as they are.
     */
    private static void affineImplScales(byte[] dst, int o, Work w, int k, boolean clamp) {
        int so = 8 * k;
        float dBlock = ScaleSearch.positive(8, 63, w.scales, w.sumWeights, so, w.scaleLevels);
        float mBlock = ScaleSearch.positive(8, 63, w.mins, w.sumWeights, so, w.minLevels);
        for (int j = 0; j < 8; j++) {
            int ls = w.scaleLevels[j];
            int lm = w.minLevels[j];
            if (clamp) {
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
    private static void requantizeAffine(float[] x, int s, byte[] dst, int o, int nmax, Work w, int k) {
        int[] sb = w.packed;
        for (int b = 0; b < 12; b++) dst[o + 4 + b] = (byte) sb[b];
        float d = GgmlMath.fp32((short) ((dst[o] & 0xFF) | dst[o + 1] << 8));
        float dmin = GgmlMath.fp32((short) ((dst[o + 2] & 0xFF) | dst[o + 3] << 8));
        int[] L = w.levels;
        int lo = QK_K * k;
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
            if (dj == 0) {
                w.keepFit(8 * k + j, lo + 32 * j);
                continue;
            }
            float dm = dmin * m;
            requantize(x, s + 32 * j, 32, true, dm, dj, 0, nmax, 0, L, lo + 32 * j, w.vector);
        }
    }

    private static void packFourBits(Work w, int k, byte[] dst, int o) {
        int[] L = w.levels;
        int lo = QK_K * k;
        for (int j = 0, q = o + 16; j < QK_K; j += 64, q += 32) {
            for (int l = 0; l < 32; l++) dst[q + l] = (byte) (L[lo + j + l] | L[lo + j + l + 32] << 4);
        }
    }

    /**
     * Bit 4 of element n + j (n = 64 c) goes to bit 2c of qh[j], of n + 32 + j to bit 2c + 1.
     * Written without branches (a level's bit 4 is a coin toss, so a test on it mispredicts
     * half the time), with the low nibbles and the high bits in separate loops over j that
     * C2 can vectorize.
     */
    private static void packFiveBits(Work w, int k, byte[] dst, int o) {
        int[] L = w.levels;
        int lo = QK_K * k;
        int[] high = w.highBits;
        Arrays.fill(high, 0);
        for (int c = 0, n = lo, ql = o + 48; c < 4; c++, n += 64, ql += 32) {
            int shift = 2 * c;
            for (int j = 0; j < 32; j++) {
                int l1 = L[n + j];
                int l2 = L[n + j + 32];
                high[j] |= (l1 >> 4 & 1) << shift | (l2 >> 4 & 1) << shift + 1;
                dst[ql + j] = (byte) (l1 & 15 | (l2 & 15) << 4);
            }
        }
        for (int j = 0; j < 32; j++) dst[o + 16 + j] = (byte) high[j];
    }

    // ---------------------------------------------------------------- Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}

    /**
     * quantize_row_q6_K_ref / _impl after the fits (make_qx_quants, nmax 32, per 16): int8
     * scales against the signed extreme / -128; a super-block whose scales are all below
     * GROUP_MAX_EPS is all zero bytes.
     */
    static void q6_kFinish(float[] x, int s, byte[] dst, int o, Work w, int k) {
        int so = 16 * k;
        float maxScale = 0;
        float maxAbsScale = 0;
        for (int ib = 0; ib < 16; ib++) {
            float abs = Math.abs(w.scales[so + ib]);
            if (abs > maxAbsScale) {
                maxAbsScale = abs;
                maxScale = w.scales[so + ib];
            }
        }
        if (maxAbsScale < GROUP_MAX_EPS) {
            Arrays.fill(dst, o, o + 210, (byte) 0);
            return;
        }
        float iscale = -128.f / maxScale;
        float d = putFp16(dst, o + 208, 1 / iscale);
        int[] L = w.levels;
        int lo = QK_K * k;
        for (int ib = 0; ib < 16; ib++) {
            byte sc = (byte) Math.min(127, nearestInt(iscale * w.scales[so + ib]));
            dst[o + 192 + ib] = sc;
            float dj = d * sc;
            if (dj == 0) {
                w.keepFit(16 * k + ib, lo + 16 * ib);
                continue;
            }
            requantize(x, s + 16 * ib, 16, false, 0, dj, -32, 31, 32, L, lo + 16 * ib, w.vector);
        }
        for (int j = 0, ql = o, qh = o + 128; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                int a = L[lo + j + l];
                int b = L[lo + j + l + 32];
                int c = L[lo + j + l + 64];
                int e = L[lo + j + l + 96];
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
    private static void packTwoBits(int[] L, int lo, byte[] dst, int at) {
        for (int j = 0; j < QK_K; j += 128) {
            for (int l = 0; l < 32; l++) {
                dst[at + j / 4 + l] = (byte) (L[lo + j + l] | L[lo + j + l + 32] << 2 | L[lo + j + l + 64] << 4
                        | L[lo + j + l + 96] << 6);
            }
        }
    }
}
