package io.anamnesis.quant.gguf;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Iq4Encoder}'s IQ4_NL and IQ4_XS with the scale search on the Vector API: {@link #L}
 * blocks of 32 values at once, one per lane, laid out transposed as {@link LaneSearch} lays
 * them out. Each lane performs the scalar encoder's operations in its order (the sums of a
 * block in order, the same products, the same comparisons as masks), so the bytes are the
 * scalar encoder's; the tests compare both. The stored scales are {@link Iq4Encoder#storeScales}.
 *
 * <p>The scalar search looks every value up in the codebook by ggml's binary search
 * ({@link IqArith#bestIndex}), whose branches a weight's values take at random: most of its
 * time was mispredictions. Here the lookup is branch-free: for the sorted codebook v0 < ... <
 * v15, comparing x with v1 .. v14 in turn brackets it between a = v[k] and b = v[k + 1] (the
 * binary search's two neighbours, for every x, NaN included: no comparison holds for it, as
 * none moves the search's upper bound), and the nearer of the two is taken by ggml's own test
 * {@code x - a < b - x}; below v0 and above v15 that test already picks the end.
 *
 * <p>Only loaded when the {@code jdk.incubator.vector} module is present. Like
 * {@link LaneSearch}, no method here takes or returns a vector. (The plural name is the
 * launcher's: it compiles the {@code *VectorEncoders} classes early.)
 */
final class Iq4VectorEncoders implements RowEncoder {
    private static final VectorSpecies<Float> F = LaneSearch.F;
    private static final int L = LaneSearch.L;
    private static final float[] VALUES = new float[16];
    private static final int TRIES = 7;

    static {
        for (int i = 0; i < 16; i++) VALUES[i] = GgufTables.KVALUES_IQ4NL[i];
    }

    static final Iq4VectorEncoders NL = new Iq4VectorEncoders(32, 18);
    static final Iq4VectorEncoders XS = new Iq4VectorEncoders(256, 136);

    private final int superBlock;
    private final int blockBytes;

    private Iq4VectorEncoders(int superBlock, int blockBytes) {
        this.superBlock = superBlock;
        this.blockBytes = blockBytes;
    }

    /** One call's arrays: a lane group's transposed values and weights ({@link LaneSearch.Lanes}), per-lane state, a row's block scales. */
    private static final class Work {
        final LaneSearch.Lanes lanes = new LaneSearch.Lanes();
        final float[] laneSigma2 = new float[L];
        final float[] inverse = new float[L];
        final float[] sumqx = new float[L];
        final float[] sumq2 = new float[L];
        final float[] blockScales;
        final float[] blockInverse;
        final float[] sigma2;

        Work(int perRow, int superBlock) {
            blockScales = new float[perRow / 32];
            blockInverse = new float[perRow / 32];
            sigma2 = new float[perRow / superBlock];
        }
    }

    @Override
    public void encode(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance) {
        Work work = new Work(perRow, superBlock);
        LaneSearch.Lanes t = work.lanes;
        int blocks = perRow / 32;
        int supers = perRow / superBlock;
        for (int r = 0; r < rows; r++) {
            int xo = srcOffset + r * perRow;
            int yo = dstOffset + r * supers * blockBytes;
            if (importance != null) {
                for (int s = 0; s < supers; s++) work.sigma2[s] = Iq4Encoder.sigma2(src, xo + s * superBlock, superBlock);
            }
            for (int g = 0; g < blocks; g += L) {
                int lanes = Math.min(L, blocks - g);
                LaneSearch.load(src, xo + 32 * g, 32, lanes, t.x);
                if (importance != null) {
                    LaneSearch.load(importance, 32 * g, 32, lanes, t.w);
                    for (int lane = 0; lane < L; lane++) {
                        work.laneSigma2[lane] = lane < lanes ? work.sigma2[(g + lane) * 32 / superBlock] : 0f;
                    }
                    LaneSearch.importanceWeights(32, t, work.laneSigma2);
                } else {
                    LaneSearch.squareWeights(32, t);
                }
                search(work);
                System.arraycopy(t.scale, 0, work.blockScales, g, lanes);
            }
            for (int s = 0; s < supers; s++) {
                Iq4Encoder.storeScales(superBlock, work.blockScales, s * (superBlock / 32), dst, yo + s * blockBytes,
                        work.blockInverse);
            }
            for (int g = 0; g < blocks; g += L) {
                int lanes = Math.min(L, blocks - g);
                LaneSearch.load(src, xo + 32 * g, 32, lanes, t.x);
                for (int lane = 0; lane < L; lane++) work.inverse[lane] = lane < lanes ? work.blockInverse[g + lane] : 0f;
                levels(work);
                for (int lane = 0; lane < lanes; lane++) {
                    int block = g + lane;
                    int s = block * 32 / superBlock;
                    int at = yo + s * blockBytes + (superBlock == 32 ? 2 : 8) + 16 * (block - s * (superBlock / 32));
                    for (int j = 0; j < 16; j++) {
                        int lo = (int) t.levels[j * L + lane];
                        int hi = (int) t.levels[(j + 16) * L + lane];
                        dst[at + j] = (byte) (lo | hi << 4);
                    }
                }
            }
        }
    }

    /**
     * quantize_row_iq4_nl_impl's search per lane: the signed extreme, the least-squares scale
     * of the levels of -max/-127, then 15 trial scales (itry - 127)/max, each kept when its
     * fit sumqx^2/sumq2 is larger; all-zero blocks (below GROUP_MAX_EPS) get scale 0. The
     * scale to t.scale.
     */
    private static void search(Work work) {
        LaneSearch.Lanes t = work.lanes;
        LaneSearch.signedExtreme(32, t);
        FloatVector d = FloatVector.fromArray(F, t.max, 0).neg().div(VALUES[0]);
        FloatVector.broadcast(F, 1f).div(d).intoArray(work.inverse, 0);
        sums(work);
        FloatVector sumqx = FloatVector.fromArray(F, work.sumqx, 0);
        FloatVector sumq2 = FloatVector.fromArray(F, work.sumq2, 0);
        FloatVector scale = sumqx.div(sumq2).blend(0f, sumq2.compare(VectorOperators.GT, 0f).not());
        scale.intoArray(t.scale, 0);
        scale.mul(sumqx).intoArray(t.best, 0);
        for (int itry = -TRIES; itry <= TRIES; itry++) {
            FloatVector extreme = FloatVector.fromArray(F, t.max, 0);
            FloatVector.broadcast(F, (float) (itry + GgufTables.KVALUES_IQ4NL[0])).div(extreme).intoArray(work.inverse, 0);
            sums(work);
            trial(work);
        }
        VectorMask<Float> flat = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        FloatVector.fromArray(F, t.scale, 0).blend(0f, flat).intoArray(t.scale, 0);
    }

    /** Where the trial's fit is better (sumq2 > 0 and sumqx^2 > best sumq2), its scale sumqx/sumq2 and best = scale sumqx become the lane's. */
    private static void trial(Work work) {
        LaneSearch.Lanes t = work.lanes;
        FloatVector sumqx = FloatVector.fromArray(F, work.sumqx, 0);
        FloatVector sumq2 = FloatVector.fromArray(F, work.sumq2, 0);
        FloatVector best = FloatVector.fromArray(F, t.best, 0);
        VectorMask<Float> better = sumq2.compare(VectorOperators.GT, 0f)
                .and(sumqx.mul(sumqx).compare(VectorOperators.GT, best.mul(sumq2)));
        if (!better.anyTrue()) return;
        FloatVector scale = FloatVector.fromArray(F, t.scale, 0).blend(sumqx.div(sumq2), better);
        scale.intoArray(t.scale, 0);
        best.blend(scale.mul(sumqx), better).intoArray(t.best, 0);
    }

    /**
     * The sums of one trial per lane, inverse scale work.inverse: sumqx += w q x and
     * sumq2 += w q q in order, q the codebook value nearest to inverse * x.
     */
    private static void sums(Work work) {
        LaneSearch.Lanes t = work.lanes;
        FloatVector inverse = FloatVector.fromArray(F, work.inverse, 0);
        FloatVector sumqx = FloatVector.zero(F);
        FloatVector sumq2 = FloatVector.zero(F);
        for (int i = 0; i < 32; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            FloatVector v = inverse.mul(xi);
            // a, b: the codebook's neighbours around v (see the class comment)
            FloatVector a = FloatVector.broadcast(F, VALUES[0]);
            FloatVector b = FloatVector.broadcast(F, VALUES[1]);
            for (int k = 1; k < 15; k++) {
                VectorMask<Float> below = v.compare(VectorOperators.LT, VALUES[k]);
                a = FloatVector.broadcast(F, VALUES[k]).blend(a, below);
                b = FloatVector.broadcast(F, VALUES[k + 1]).blend(b, below);
            }
            FloatVector q = b.blend(a, v.sub(a).compare(VectorOperators.LT, b.sub(v)));
            FloatVector wq = FloatVector.fromArray(F, t.w, i * L).mul(q);
            sumqx = sumqx.add(wq.mul(xi));
            sumq2 = sumq2.add(wq.mul(q));
        }
        sumqx.intoArray(work.sumqx, 0);
        sumq2.intoArray(work.sumq2, 0);
    }

    /**
     * The codebook index of the value nearest to inverse * x per lane (work.inverse), as
     * {@link IqArith#bestIndex} gives it, to t.levels (transposed).
     */
    private static void levels(Work work) {
        LaneSearch.Lanes t = work.lanes;
        FloatVector inverse = FloatVector.fromArray(F, work.inverse, 0);
        for (int i = 0; i < 32; i++) {
            FloatVector v = inverse.mul(FloatVector.fromArray(F, t.x, i * L));
            FloatVector a = FloatVector.broadcast(F, VALUES[0]);
            FloatVector b = FloatVector.broadcast(F, VALUES[1]);
            FloatVector index = FloatVector.zero(F);
            for (int k = 1; k < 15; k++) {
                VectorMask<Float> below = v.compare(VectorOperators.LT, VALUES[k]);
                a = FloatVector.broadcast(F, VALUES[k]).blend(a, below);
                b = FloatVector.broadcast(F, VALUES[k + 1]).blend(b, below);
                index = FloatVector.broadcast(F, (float) k).blend(index, below);
            }
            VectorMask<Float> lower = v.sub(a).compare(VectorOperators.LT, b.sub(v));
            index.add(1f).blend(index, lower).intoArray(t.levels, i * L);
        }
    }
}
