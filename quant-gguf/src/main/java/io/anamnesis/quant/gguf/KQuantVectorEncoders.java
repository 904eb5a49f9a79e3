package io.anamnesis.quant.gguf;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import static io.anamnesis.quant.gguf.KQuantEncoders.QK_K;

/**
 * The K-quant encoders with their sub-block fits run {@link LaneSearch#L} at a time by
 * {@link LaneSearch}: a batch of super-blocks is transposed into lanes, weighted and fitted
 * there, transposed back, and each super-block is finished by the code of
 * {@link KQuantEncoders} (with its re-quantization on vectors too). The bytes are the
 * scalar path's (the tests compare both).
 *
 * <p>Only loaded when the {@code jdk.incubator.vector} module is present.
 */
final class KQuantVectorEncoders {
    private KQuantVectorEncoders() {
    }

    private static final VectorSpecies<Float> F = LaneSearch.F;
    private static final int L = LaneSearch.L;
    private static final float MAGIC = 12582912f;

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

    private static void encode(GgufBlockType type, float[] src, int s, byte[] dst, int o, int rows, int perRow,
                               float[] importance) {
        KQuantEncoders.Spec spec = KQuantEncoders.spec(type, importance != null);
        KQuantEncoders.Finish finish = KQuantEncoders.finish(type, importance != null);
        KQuantEncoders.Work w = new KQuantEncoders.Work();
        w.vector = true;
        LaneSearch.Lanes t = new LaneSearch.Lanes();
        int n = spec.n();
        // The fitted levels stay transposed, one block of n * L per lane group of the batch;
        // ggml reads them back only for a sub-block whose stored scale is zero.
        float[] groupLevels = new float[KQuantEncoders.BATCH * QK_K];
        w.fitLevels = (sub, levels, at) -> {
            int base = (sub / L) * n * L + sub % L;
            for (int i = 0; i < n; i++) levels[at + i] = (int) groupLevels[base + i * L];
        };
        float[] sigma2 = new float[KQuantEncoders.BATCH];
        float[] laneSigma2 = new float[L];
        int perBlockRow = perRow / QK_K;
        int total = rows * perBlockRow;
        // two lane groups per batch where the sub-blocks fill them: the affine and symmetric searches run them in step
        int batch = Math.max(1, Math.min(KQuantEncoders.BATCH, 2 * L / spec.perSuper()));
        LaneSearch.Lanes second = new LaneSearch.Lanes();
        for (int first = 0; first < total; first += batch) {
            int count = Math.min(batch, total - first);
            int xs = s + first * QK_K;
            if (spec.weights() == KQuantEncoders.Weights.IMPORTANCE) superBlockSigma2(spec, src, xs, count, sigma2);
            int subs = count * spec.perSuper();
            for (int g = 0; g < subs; g += L) {
                int lanes = Math.min(L, subs - g);
                prepareGroup(spec, src, xs, first, g, lanes, perBlockRow, importance, sigma2, laneSigma2, t, w);
                if (spec.fit() != KQuantEncoders.Fit.REFINED && g + L < subs) {
                    int lanes2 = Math.min(L, subs - g - L);
                    prepareGroup(spec, src, xs, first, g + L, lanes2, perBlockRow, importance, sigma2, laneSigma2, second, w);
                    if (spec.fit() == KQuantEncoders.Fit.AFFINE) {
                        LaneSearch.affinePair(n, spec.nmax(), t, second, spec.rmin(), spec.rdelta(), spec.nstep(), spec.mad());
                    } else {
                        LaneSearch.symmetricPair(n, spec.nmax(), t, second, spec.weights() == KQuantEncoders.Weights.SQUARES);
                    }
                    keepGroup(n, g, lanes, t, w, groupLevels);
                    keepGroup(n, g + L, lanes2, second, w, groupLevels);
                    g += L;
                    continue;
                }
                switch (spec.fit()) {
                    case AFFINE -> LaneSearch.affine(n, spec.nmax(), t, spec.rmin(), spec.rdelta(), spec.nstep(), spec.mad());
                    case SYMMETRIC -> LaneSearch.symmetric(n, spec.nmax(), t, spec.weights() == KQuantEncoders.Weights.SQUARES);
                    case REFINED -> LaneSearch.symmetricRefined(n, spec.nmax(), t);
                }
                keepGroup(n, g, lanes, t, w, groupLevels);
            }
            for (int k = 0; k < count; k++) {
                finish.finish(src, xs + QK_K * k, dst, o + (first + k) * type.blockBytes(), w, k);
            }
        }
    }

    /** The sub-blocks g.. (lanes of them) of the batch at super-block {@code first}, transposed into t with their weights. */
    private static void prepareGroup(KQuantEncoders.Spec spec, float[] src, int xs, int first, int g, int lanes,
                                     int perBlockRow, float[] importance, float[] sigma2, float[] laneSigma2,
                                     LaneSearch.Lanes t, KQuantEncoders.Work w) {
        int n = spec.n();
        KQuantEncoders.Weights weights = spec.weights();
        LaneSearch.load(src, xs + g * n, n, lanes, t.x);
        if (weights == KQuantEncoders.Weights.IMPORTANCE || weights == KQuantEncoders.Weights.RAW_IMPORTANCE) {
            for (int lane = 0; lane < lanes; lane++) {
                int sub = g + lane;
                int k = sub / spec.perSuper();
                int column = QK_K * ((first + k) % perBlockRow) + n * (sub % spec.perSuper());
                for (int i = 0; i < n; i++) t.w[i * L + lane] = importance[column + i];
                laneSigma2[lane] = sigma2[k];
            }
            for (int lane = lanes; lane < L; lane++) {
                for (int i = 0; i < n; i++) t.w[i * L + lane] = 0f;
                laneSigma2[lane] = 0f;
            }
        }
        laneWeights(weights, n, t, laneSigma2);
        if (weights == KQuantEncoders.Weights.IMPORTANCE) {
            for (int lane = 0; lane < lanes; lane++) w.sumWeights[g + lane] = t.s3[lane];
        }
    }

    /** A fitted group's scales, mins and (still transposed) levels into the batch's arrays. */
    private static void keepGroup(int n, int g, int lanes, LaneSearch.Lanes t, KQuantEncoders.Work w, float[] groupLevels) {
        for (int lane = 0; lane < lanes; lane++) {
            w.scales[g + lane] = t.scale[lane];
            w.mins[g + lane] = t.theMin[lane];
        }
        System.arraycopy(t.levels, 0, groupLevels, (g / L) * n * L, n * L);
    }

    /**
     * sigma2 of each super-block of the batch for the importance weights: its sum of x^2 in
     * order, times the spec's factor, over 256. The two sums run interleaved (independent
     * chains, each in ggml's order).
     */
    private static void superBlockSigma2(KQuantEncoders.Spec spec, float[] x, int xs, int count, float[] sigma2) {
        if (count == 2) {
            float a = 0;
            float b = 0;
            for (int i = 0; i < QK_K; i++) {
                a += x[xs + i] * x[xs + i];
                b += x[xs + QK_K + i] * x[xs + QK_K + i];
            }
            sigma2[0] = spec.sigmaScale() * a / QK_K;
            sigma2[1] = spec.sigmaScale() * b / QK_K;
            return;
        }
        for (int k = 0; k < count; k++) {
            float a = 0;
            for (int i = 0; i < QK_K; i++) a += x[xs + QK_K * k + i] * x[xs + QK_K * k + i];
            sigma2[k] = spec.sigmaScale() * a / QK_K;
        }
    }

    /**
     * The weights of {@link KQuantEncoders#prepareWeights} lane by lane (same operations, each
     * lane's sums in order): into {@code t.w}, which holds the transposed importance on entry
     * for the importance kinds; each lane's weight sum to {@code t.s3} for IMPORTANCE.
     */
    private static void laneWeights(KQuantEncoders.Weights weights, int n, LaneSearch.Lanes t, float[] laneSigma2) {
        switch (weights) {
            case SQUARES, RAW_IMPORTANCE -> { }
            case ABS -> {
                for (int i = 0; i < n; i++) FloatVector.fromArray(F, t.x, i * L).abs().intoArray(t.w, i * L);
            }
            case RMS_PLUS_ABS -> {
                FloatVector sum = FloatVector.zero(F);
                for (int i = 0; i < n; i++) {
                    FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
                    sum = sum.add(xi.mul(xi));
                }
                FloatVector avX = sum.div((float) n).sqrt();
                for (int i = 0; i < n; i++) {
                    avX.add(FloatVector.fromArray(F, t.x, i * L).abs()).intoArray(t.w, i * L);
                }
            }
            case IMPORTANCE -> LaneSearch.importanceWeights(n, t, laneSigma2);
        }
    }

    /** {@link KQuantEncoders#requantize} on vectors along the sub-block (no sums, so any split is exact). */
    static void requantize(float[] x, int xs, int n, boolean withMin, float m, float d, int low, int high, int shift,
                           int[] levels, int lo) {
        for (int i = 0; i < n; i += L) {
            FloatVector v = FloatVector.fromArray(F, x, xs + i);
            if (withMin) v = v.add(m);
            IntVector l = v.div(d).add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
            l.max(low).min(high).add(shift).intoArray(levels, lo + i);
        }
    }
}
