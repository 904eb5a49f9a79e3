package io.anamnesis.quant.gguf;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import static io.anamnesis.quant.gguf.GgmlMath.GROUP_MAX_EPS;

/**
 * {@link ScaleSearch}'s searches for {@link #L} sub-blocks at once, one per vector lane. The
 * sums of a search run along a sub-block in order, so they cannot be split across lanes
 * without changing their rounding; side by side, each lane still adds its own sub-block's
 * terms one after the other, with the same products in the same grouping, and takes the same
 * branch decisions (as masks), so every lane ends with the scalar search's exact floats and
 * levels. Values, weights and levels are laid out transposed: element i of lane k at
 * {@code i * L + k}.
 *
 * <p>Shape of the code, for the JIT: each pass over a sub-block is its own small method with
 * the per-lane state in arrays between passes (one large method would exceed the inlining
 * budget and leave vectors boxed), and no vector value is chosen by a condition inside a
 * loop (a merge of two vectors is boxed too): where ggml's routine has a variant, the loop
 * is written once per variant. No method of this class takes or returns a vector or a mask:
 * the JDK's vector methods are always inlined (they are annotated so), ours only while the
 * compilation that inlines them is under C2's node-count cutoff, and the searches' callers
 * reach it (PrintInlining: "NodeCountInliningCutoff"); past it, a helper that returns a
 * vector is called for real and its vector allocated on the heap, each call. Hence
 * {@code FloatVector.fromArray(F, a, i * L)} spelled out wherever a lane array is read.
 *
 * <p>Only loaded when the {@code jdk.incubator.vector} module is present.
 */
final class LaneSearch {
    private LaneSearch() {
    }

    static final VectorSpecies<Float> F = GgufVectorKernels.F;
    static final int L = F.length();

    private static final float MAGIC = 12582912f;
    /** The largest |v| for which ggml's nearest_int rounds (it asserts as much). */
    private static final float NEAREST_LIMIT = 4194303f;

    /** Transposed inputs and outputs of one lane group (sub-blocks of up to 32 values), and per-lane state. */
    static final class Lanes {
        final float[] x = new float[32 * L];
        final float[] w = new float[32 * L];
        /** Levels of the result (exact small integers as floats). */
        final float[] levels = new float[32 * L];
        final float[] aux = new float[32 * L];
        /** w x per element (the symmetric searches' weight times value, the same in every trial). */
        final float[] wx = new float[32 * L];
        final float[] scale = new float[L];
        /** ggml's {@code the_min} (-min) of the affine search. */
        final float[] theMin = new float[L];
        // per-lane state between passes
        final float[] min = new float[L];
        final float[] max = new float[L];
        final float[] lo = new float[L];
        final float[] hi = new float[L];
        final float[] sumW = new float[L];
        final float[] sumX = new float[L];
        final float[] best = new float[L];
        final float[] s1 = new float[L];
        final float[] s2 = new float[L];
        final float[] s3 = new float[L];
        final float[] t1 = new float[L];
        final float[] t2 = new float[L];
        final float[] flag = new float[L];
        /**
         * The iscale (and the affine search's min) of the current trial and of the fit kept so
         * far: the kept fit's levels are recomputed from them at the end.
         */
        final float[] trialIscale = new float[L];
        final float[] trialMin = new float[L];
        final float[] fitIscale = new float[L];
        final float[] fitMin = new float[L];
        /** Every value of the group is finite (NaN and infinities keep ggml's integer rounding). */
        boolean finite;
    }

    /**
     * Transposes {@code lanes} consecutive sub-blocks of {@code n} values at {@code src[from]}
     * into lanes 0.. of {@code out}; the remaining lanes get zeros (an all-zero sub-block, whose
     * result is ignored).
     */
    static void load(float[] src, int from, int n, int lanes, float[] out) {
        for (int lane = 0; lane < lanes; lane++) {
            int e = from + lane * n;
            for (int i = 0; i < n; i++) out[i * L + lane] = src[e + i];
        }
        for (int lane = lanes; lane < L; lane++) {
            for (int i = 0; i < n; i++) out[i * L + lane] = 0f;
        }
    }

    /**
     * t.w = qw sqrt(sigma2 + x^2) lane by lane, with t.w holding the transposed importance on
     * entry and {@code sigma2} one value per lane; each lane's sum of them, in order, to t.s3.
     */
    static void importanceWeights(int n, Lanes t, float[] sigma2) {
        FloatVector s2 = FloatVector.fromArray(F, sigma2, 0);
        FloatVector sum = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            FloatVector wi = FloatVector.fromArray(F, t.w, i * L).mul(s2.add(xi.mul(xi)).sqrt());
            wi.intoArray(t.w, i * L);
            sum = sum.add(wi);
        }
        sum.intoArray(t.s3, 0);
    }

    private static final int MAGIC_BITS = Float.floatToRawIntBits(MAGIC);
    /** A magnitude's bits below these: a finite float (infinity's bits, then the NaNs'). */
    private static final int INFINITY_BITS = Float.floatToRawIntBits(Float.POSITIVE_INFINITY);

    /*
     * The two roundings, written out where they are used (see the class comment for why there
     * is no helper method):
     *
     * ggml's nearest_int, clamped to [lo, hi], read from the mantissa bits as ggml does:
     *     (FloatVector) v.add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000)
     *             .max(lo).min(hi).convert(VectorOperators.I2F, 0)
     *
     * The same in four instructions where |v| <= 2^22 and v is not NaN: v + 1.5 * 2^23 then lies
     * in [2^23, 2^24], where floats are the consecutive integers, so the sum is 1.5 * 2^23 plus v
     * rounded to nearest even (nearest_int's own rounding) and its bit pattern counts up with
     * it: the clamp is an integer max and min on the bits (rounding is monotone and the bounds
     * are integers, so clamping after rounding is clamping before), and subtracting 1.5 * 2^23
     * gives the level as a float:
     *     v.add(MAGIC).reinterpretAsInts().max(MAGIC_BITS + lo).min(MAGIC_BITS + hi)
     *             .reinterpretAsFloats().sub(MAGIC)
     */

    // ---------------------------------------------------------------- affine (make_qkx2/3_quants)

    /**
     * make_qkx2_quants / make_qkx3_quants ({@link ScaleSearch#affine}) over {@code n} values
     * per lane with the weights in {@code t.w}: scale to {@code t.scale}, -min to
     * {@code t.theMin}, levels to {@code t.levels}. {@code nstep} is at least 1.
     */
    static void affine(int n, int nmax, Lanes t, float rmin, float rdelta, int nstep, boolean useMad) {
        affineRange(n, t);
        affineFirst(n, nmax, t, useMad);
        for (int is = 0; is <= nstep; is++) {
            boolean inFloat = affineTrial(t, rmin + rdelta * is + nmax);
            if (inFloat) affineSumsFloat(n, nmax, t);
            else affineSumsBits(n, nmax, t);
            if (affineSolve(t)) {
                if (useMad) affineErrorAbs(n, t);
                else affineErrorSquared(n, t);
                affineKeepBetter(n, t);
            }
        }
        affineDone(n, nmax, t);
    }

    /**
     * {@link #affine} for two lane groups at once, trial by trial in step: each lane's work
     * is the same, but the two groups' passes share one loop, so that the chains of one
     * group's sums (each add waits for the one before) overlap with the other's. One group's
     * search alone is a single chain of dependent steps (a trial's min is the previous
     * trial's outcome); two of them keep both vector units busy.
     */
    static void affinePair(int n, int nmax, Lanes a, Lanes b, float rmin, float rdelta, int nstep, boolean useMad) {
        affineRange(n, a);
        affineRange(n, b);
        affineFirst(n, nmax, a, useMad);
        affineFirst(n, nmax, b, useMad);
        for (int is = 0; is <= nstep; is++) {
            float numerator = rmin + rdelta * is + nmax;
            boolean aFloat = affineTrial(a, numerator);
            boolean bFloat = affineTrial(b, numerator);
            if (aFloat && bFloat) {
                affineSumsFloat(n, nmax, a, b);
            } else {
                if (aFloat) affineSumsFloat(n, nmax, a);
                else affineSumsBits(n, nmax, a);
                if (bFloat) affineSumsFloat(n, nmax, b);
                else affineSumsBits(n, nmax, b);
            }
            boolean aSolved = affineSolve(a);
            boolean bSolved = affineSolve(b);
            if (aSolved && bSolved) {
                if (useMad) affineErrorAbs(n, a, b);
                else affineErrorSquared(n, a, b);
            } else if (aSolved) {
                if (useMad) affineErrorAbs(n, a);
                else affineErrorSquared(n, a);
            } else if (bSolved) {
                if (useMad) affineErrorAbs(n, b);
                else affineErrorSquared(n, b);
            }
            if (aSolved) affineKeepBetter(n, a);
            if (bSolved) affineKeepBetter(n, b);
        }
        affineDone(n, nmax, a);
        affineDone(n, nmax, b);
    }

    /**
     * A trial's iscale = numerator / (max - min), with the min of the best fit so far as ggml
     * recomputes it each trial, to t.t1 and t.trialIscale (the min to t.trialMin); true when
     * its levels may be rounded in float: every iscale (x - min) of a fitting lane is at most
     * |iscale| times the larger of |lo - min| and |hi - min| (float rounding is monotone),
     * which must stay below nearest_int's limit.
     */
    private static boolean affineTrial(Lanes t, float numerator) {
        FloatVector min = FloatVector.fromArray(F, t.min, 0);
        FloatVector iscale = FloatVector.broadcast(F, numerator).div(FloatVector.fromArray(F, t.max, 0).sub(min));
        iscale.intoArray(t.t1, 0);
        iscale.intoArray(t.trialIscale, 0);
        min.intoArray(t.trialMin, 0);
        FloatVector hiReach = FloatVector.fromArray(F, t.hi, 0).sub(min).abs();
        FloatVector reach = hiReach.max(FloatVector.fromArray(F, t.lo, 0).sub(min).abs()).mul(iscale.abs());
        VectorMask<Float> flat = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        return t.finite && reach.lt(NEAREST_LIMIT).or(flat).allTrue();
    }

    /**
     * min, max (min clamped to at most 0), sum of weights and of w x; flag = flat lane
     * (max == min); lo, hi the unclamped extremes; whether every value is finite.
     */
    private static void affineRange(int n, Lanes t) {
        FloatVector min = FloatVector.fromArray(F, t.x, 0);
        FloatVector max = min;
        FloatVector sumW = FloatVector.fromArray(F, t.w, 0);
        FloatVector sumX = sumW.mul(min);
        // finiteness as the largest magnitude's bits (a mask carried around a loop is boxed)
        IntVector magnitude = min.reinterpretAsInts().and(0x7FFF_FFFF);
        for (int i = 1; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            magnitude = magnitude.max(xi.reinterpretAsInts().and(0x7FFF_FFFF));
            min = min.blend(xi, xi.lt(min));
            max = max.blend(xi, xi.compare(VectorOperators.GT, max));
            FloatVector wi = FloatVector.fromArray(F, t.w, i * L);
            sumW = sumW.add(wi);
            sumX = sumX.add(wi.mul(xi));
        }
        t.finite = magnitude.lt(INFINITY_BITS).allTrue();
        min.intoArray(t.lo, 0);
        max.intoArray(t.hi, 0);
        min = min.blend(0f, min.compare(VectorOperators.GT, 0f));
        min.intoArray(t.min, 0);
        max.intoArray(t.max, 0);
        sumW.intoArray(t.sumW, 0);
        sumX.intoArray(t.sumX, 0);
        FloatVector.zero(F).blend(1f, max.eq(min)).intoArray(t.flag, 0);
    }

    /** The levels of iscale = nmax/(max - min), scale 1/iscale, and their weighted error as the best so far. */
    private static void affineFirst(int n, int nmax, Lanes t, boolean useMad) {
        FloatVector min = FloatVector.fromArray(F, t.min, 0);
        FloatVector iscale = FloatVector.broadcast(F, (float) nmax).div(FloatVector.fromArray(F, t.max, 0).sub(min));
        FloatVector scale = FloatVector.broadcast(F, 1f).div(iscale);
        for (int i = 0; i < n; i++) {
            FloatVector v = iscale.mul(FloatVector.fromArray(F, t.x, i * L).sub(min));
            IntVector nearest = v.add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
            ((FloatVector) nearest.max(0).min(nmax).convert(VectorOperators.I2F, 0)).intoArray(t.aux, i * L);
        }
        iscale.intoArray(t.fitIscale, 0);
        min.intoArray(t.fitMin, 0);
        scale.intoArray(t.scale, 0);
        scale.intoArray(t.t1, 0);
        min.intoArray(t.t2, 0);
        if (useMad) affineErrorAbs(n, t);
        else affineErrorSquared(n, t);
        System.arraycopy(t.s1, 0, t.best, 0, L);
    }

    /** One trial's levels with iscale = t.t1 into t.aux, rounded in float; sums to s1 (w l), s2 (w l l), s3 (w l x). */
    private static void affineSumsFloat(int n, int nmax, Lanes t) {
        FloatVector min = FloatVector.fromArray(F, t.min, 0);
        FloatVector iscale = FloatVector.fromArray(F, t.t1, 0);
        FloatVector sumL = FloatVector.zero(F);
        FloatVector sumL2 = FloatVector.zero(F);
        FloatVector sumXL = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            IntVector bits = iscale.mul(xi.sub(min)).add(MAGIC).reinterpretAsInts();
            FloatVector l = bits.max(MAGIC_BITS).min(MAGIC_BITS + nmax).reinterpretAsFloats().sub(MAGIC);
            l.intoArray(t.aux, i * L);
            FloatVector wl = FloatVector.fromArray(F, t.w, i * L).mul(l);
            sumL = sumL.add(wl);
            sumL2 = sumL2.add(wl.mul(l));
            sumXL = sumXL.add(wl.mul(xi));
        }
        sumL.intoArray(t.s1, 0);
        sumL2.intoArray(t.s2, 0);
        sumXL.intoArray(t.s3, 0);
    }

    /** {@link #affineSumsFloat} of two groups in one loop (their sums are independent chains). */
    private static void affineSumsFloat(int n, int nmax, Lanes a, Lanes b) {
        FloatVector minA = FloatVector.fromArray(F, a.min, 0);
        FloatVector iscaleA = FloatVector.fromArray(F, a.t1, 0);
        FloatVector minB = FloatVector.fromArray(F, b.min, 0);
        FloatVector iscaleB = FloatVector.fromArray(F, b.t1, 0);
        FloatVector sumLA = FloatVector.zero(F);
        FloatVector sumL2A = FloatVector.zero(F);
        FloatVector sumXLA = FloatVector.zero(F);
        FloatVector sumLB = FloatVector.zero(F);
        FloatVector sumL2B = FloatVector.zero(F);
        FloatVector sumXLB = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xa = FloatVector.fromArray(F, a.x, i * L);
            FloatVector xb = FloatVector.fromArray(F, b.x, i * L);
            IntVector bitsA = iscaleA.mul(xa.sub(minA)).add(MAGIC).reinterpretAsInts();
            IntVector bitsB = iscaleB.mul(xb.sub(minB)).add(MAGIC).reinterpretAsInts();
            FloatVector la = bitsA.max(MAGIC_BITS).min(MAGIC_BITS + nmax).reinterpretAsFloats().sub(MAGIC);
            FloatVector lb = bitsB.max(MAGIC_BITS).min(MAGIC_BITS + nmax).reinterpretAsFloats().sub(MAGIC);
            la.intoArray(a.aux, i * L);
            lb.intoArray(b.aux, i * L);
            FloatVector wla = FloatVector.fromArray(F, a.w, i * L).mul(la);
            FloatVector wlb = FloatVector.fromArray(F, b.w, i * L).mul(lb);
            sumLA = sumLA.add(wla);
            sumLB = sumLB.add(wlb);
            sumL2A = sumL2A.add(wla.mul(la));
            sumL2B = sumL2B.add(wlb.mul(lb));
            sumXLA = sumXLA.add(wla.mul(xa));
            sumXLB = sumXLB.add(wlb.mul(xb));
        }
        sumLA.intoArray(a.s1, 0);
        sumL2A.intoArray(a.s2, 0);
        sumXLA.intoArray(a.s3, 0);
        sumLB.intoArray(b.s1, 0);
        sumL2B.intoArray(b.s2, 0);
        sumXLB.intoArray(b.s3, 0);
    }

    /** {@link #affineSumsFloat} with ggml's integer rounding, for groups where float rounding is not proven equal. */
    private static void affineSumsBits(int n, int nmax, Lanes t) {
        FloatVector min = FloatVector.fromArray(F, t.min, 0);
        FloatVector iscale = FloatVector.fromArray(F, t.t1, 0);
        FloatVector sumL = FloatVector.zero(F);
        FloatVector sumL2 = FloatVector.zero(F);
        FloatVector sumXL = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            IntVector bits = iscale.mul(xi.sub(min)).add(MAGIC).reinterpretAsInts();
            FloatVector l = (FloatVector) bits.and(0x007F_FFFF).sub(0x0040_0000).max(0).min(nmax).convert(VectorOperators.I2F, 0);
            l.intoArray(t.aux, i * L);
            FloatVector wl = FloatVector.fromArray(F, t.w, i * L).mul(l);
            sumL = sumL.add(wl);
            sumL2 = sumL2.add(wl.mul(l));
            sumXL = sumXL.add(wl.mul(xi));
        }
        sumL.intoArray(t.s1, 0);
        sumL2.intoArray(t.s2, 0);
        sumXL.intoArray(t.s3, 0);
    }

    /**
     * The trial's least-squares scale and min (to t1, t2; min clamped to 0 with the
     * min-free scale then); flag of solvable lanes (positive determinant, not flat) to t.aux's
     * companion {@code s2}. False when no lane is solvable.
     */
    private static boolean affineSolve(Lanes t) {
        FloatVector sumL = FloatVector.fromArray(F, t.s1, 0);
        FloatVector sumL2 = FloatVector.fromArray(F, t.s2, 0);
        FloatVector sumXL = FloatVector.fromArray(F, t.s3, 0);
        FloatVector sumW = FloatVector.fromArray(F, t.sumW, 0);
        FloatVector sumX = FloatVector.fromArray(F, t.sumX, 0);
        FloatVector det = sumW.mul(sumL2).sub(sumL.mul(sumL));
        VectorMask<Float> flat = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        VectorMask<Float> solvable = det.compare(VectorOperators.GT, 0f).andNot(flat);
        if (!solvable.anyTrue()) return false;
        FloatVector thisScale = sumW.mul(sumXL).sub(sumX.mul(sumL)).div(det);
        FloatVector thisMin = sumL2.mul(sumX).sub(sumL.mul(sumXL)).div(det);
        VectorMask<Float> positiveMin = thisMin.compare(VectorOperators.GT, 0f);
        thisMin.blend(0f, positiveMin).intoArray(t.t2, 0);
        // the min-free scale only where a lane needs it: a division is the costliest operation here
        // (stored in both branches: a vector merged from two branches would be boxed)
        if (positiveMin.anyTrue()) thisScale.blend(sumXL.div(sumL2), positiveMin).intoArray(t.t1, 0);
        else thisScale.intoArray(t.t1, 0);
        FloatVector.zero(F).blend(1f, solvable).intoArray(t.s2, 0);
        return true;
    }

    /** Weighted absolute error of levels t.aux under scale t.t1 and min t.t2, to s1. */
    private static void affineErrorAbs(int n, Lanes t) {
        FloatVector scale = FloatVector.fromArray(F, t.t1, 0);
        FloatVector min = FloatVector.fromArray(F, t.t2, 0);
        FloatVector error = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector level = FloatVector.fromArray(F, t.aux, i * L);
            FloatVector diff = scale.mul(level).add(min).sub(FloatVector.fromArray(F, t.x, i * L));
            error = error.add(FloatVector.fromArray(F, t.w, i * L).mul(diff.abs()));
        }
        error.intoArray(t.s1, 0);
    }

    /** Weighted squared error of levels t.aux under scale t.t1 and min t.t2, to s1. */
    private static void affineErrorSquared(int n, Lanes t) {
        FloatVector scale = FloatVector.fromArray(F, t.t1, 0);
        FloatVector min = FloatVector.fromArray(F, t.t2, 0);
        FloatVector error = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector level = FloatVector.fromArray(F, t.aux, i * L);
            FloatVector diff = scale.mul(level).add(min).sub(FloatVector.fromArray(F, t.x, i * L));
            error = error.add(FloatVector.fromArray(F, t.w, i * L).mul(diff.mul(diff)));
        }
        error.intoArray(t.s1, 0);
    }

    /** {@link #affineErrorAbs} of two groups in one loop. */
    private static void affineErrorAbs(int n, Lanes a, Lanes b) {
        FloatVector scaleA = FloatVector.fromArray(F, a.t1, 0);
        FloatVector minA = FloatVector.fromArray(F, a.t2, 0);
        FloatVector scaleB = FloatVector.fromArray(F, b.t1, 0);
        FloatVector minB = FloatVector.fromArray(F, b.t2, 0);
        FloatVector errorA = FloatVector.zero(F);
        FloatVector errorB = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector levelA = FloatVector.fromArray(F, a.aux, i * L);
            FloatVector levelB = FloatVector.fromArray(F, b.aux, i * L);
            FloatVector diffA = scaleA.mul(levelA).add(minA).sub(FloatVector.fromArray(F, a.x, i * L));
            FloatVector diffB = scaleB.mul(levelB).add(minB).sub(FloatVector.fromArray(F, b.x, i * L));
            errorA = errorA.add(FloatVector.fromArray(F, a.w, i * L).mul(diffA.abs()));
            errorB = errorB.add(FloatVector.fromArray(F, b.w, i * L).mul(diffB.abs()));
        }
        errorA.intoArray(a.s1, 0);
        errorB.intoArray(b.s1, 0);
    }

    /** {@link #affineErrorSquared} of two groups in one loop. */
    private static void affineErrorSquared(int n, Lanes a, Lanes b) {
        FloatVector scaleA = FloatVector.fromArray(F, a.t1, 0);
        FloatVector minA = FloatVector.fromArray(F, a.t2, 0);
        FloatVector scaleB = FloatVector.fromArray(F, b.t1, 0);
        FloatVector minB = FloatVector.fromArray(F, b.t2, 0);
        FloatVector errorA = FloatVector.zero(F);
        FloatVector errorB = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector levelA = FloatVector.fromArray(F, a.aux, i * L);
            FloatVector levelB = FloatVector.fromArray(F, b.aux, i * L);
            FloatVector diffA = scaleA.mul(levelA).add(minA).sub(FloatVector.fromArray(F, a.x, i * L));
            FloatVector diffB = scaleB.mul(levelB).add(minB).sub(FloatVector.fromArray(F, b.x, i * L));
            errorA = errorA.add(FloatVector.fromArray(F, a.w, i * L).mul(diffA.mul(diffA)));
            errorB = errorB.add(FloatVector.fromArray(F, b.w, i * L).mul(diffB.mul(diffB)));
        }
        errorA.intoArray(a.s1, 0);
        errorB.intoArray(b.s1, 0);
    }

    /** Where the trial was solvable and its error (s1) beats the best, it becomes the fit. */
    private static void affineKeepBetter(int n, Lanes t) {
        FloatVector error = FloatVector.fromArray(F, t.s1, 0);
        FloatVector best = FloatVector.fromArray(F, t.best, 0);
        VectorMask<Float> solvable = FloatVector.fromArray(F, t.s2, 0).compare(VectorOperators.NE, 0f);
        VectorMask<Float> better = solvable.and(error.lt(best));
        if (!better.anyTrue()) return;
        best.blend(error, better).intoArray(t.best, 0);
        FloatVector trialIscale = FloatVector.fromArray(F, t.trialIscale, 0);
        FloatVector.fromArray(F, t.fitIscale, 0).blend(trialIscale, better).intoArray(t.fitIscale, 0);
        FloatVector trialMin = FloatVector.fromArray(F, t.trialMin, 0);
        FloatVector.fromArray(F, t.fitMin, 0).blend(trialMin, better).intoArray(t.fitMin, 0);
        FloatVector.fromArray(F, t.scale, 0).blend(FloatVector.fromArray(F, t.t1, 0), better).intoArray(t.scale, 0);
        FloatVector.fromArray(F, t.min, 0).blend(FloatVector.fromArray(F, t.t2, 0), better).intoArray(t.min, 0);
    }

    /**
     * The kept fit's levels, recomputed from the iscale and min that made them (the same
     * operations, so the same levels: cheaper than copying every better trial's levels);
     * flat lanes become scale 0 and levels 0; the_min = -min everywhere.
     */
    private static void affineDone(int n, int nmax, Lanes t) {
        FloatVector iscale = FloatVector.fromArray(F, t.fitIscale, 0);
        FloatVector min = FloatVector.fromArray(F, t.fitMin, 0);
        VectorMask<Float> flat = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        for (int i = 0; i < n; i++) {
            FloatVector v = iscale.mul(FloatVector.fromArray(F, t.x, i * L).sub(min));
            IntVector nearest = v.add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
            FloatVector l = (FloatVector) nearest.max(0).min(nmax).convert(VectorOperators.I2F, 0);
            l.blend(0f, flat).intoArray(t.levels, i * L);
        }
        FloatVector.fromArray(F, t.scale, 0).blend(0f, flat).intoArray(t.scale, 0);
        FloatVector.fromArray(F, t.min, 0).neg().intoArray(t.theMin, 0);
    }

    // ---------------------------------------------------------------- symmetric (make_qx_quants, rmse_type 1)

    /**
     * The signed value of largest magnitude per lane (the first on ties) to t.max; flag =
     * below GROUP_MAX_EPS; t.finite. With every value finite, |iscale x| <= nmax + 1 in the
     * symmetric searches (|x| <= |max|), so their levels may be rounded in float.
     */
    static void signedExtreme(int n, Lanes t) {
        FloatVector max = FloatVector.zero(F);
        FloatVector amax = FloatVector.zero(F);
        IntVector magnitude = FloatVector.zero(F).reinterpretAsInts();
        for (int i = 0; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            FloatVector ax = xi.abs();
            VectorMask<Float> bigger = ax.compare(VectorOperators.GT, amax);
            amax = amax.blend(ax, bigger);
            max = max.blend(xi, bigger);
            magnitude = magnitude.max(ax.reinterpretAsInts());
        }
        max.intoArray(t.max, 0);
        FloatVector.zero(F).blend(1f, amax.lt(GROUP_MAX_EPS)).intoArray(t.flag, 0);
        t.finite = magnitude.lt(INFINITY_BITS).allTrue();
    }

    /** t.w = x^2 (the weights ggml uses without any). */
    static void squareWeights(int n, Lanes t) {
        for (int i = 0; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            xi.mul(xi).intoArray(t.w, i * L);
        }
    }

    /** t.wx = w x: the product ggml forms first in w*x*l, the same in every trial. */
    private static void weightsTimesValues(int n, Lanes t) {
        for (int i = 0; i < n; i++) {
            FloatVector.fromArray(F, t.w, i * L).mul(FloatVector.fromArray(F, t.x, i * L)).intoArray(t.wx, i * L);
        }
    }

    /**
     * make_qx_quants with rmse_type 1 ({@link ScaleSearch#symmetric}): weights {@code t.w},
     * or x^2 when {@code squares}; scale to {@code t.scale}, levels (0..2 nmax - 1) to
     * {@code t.levels}. As in {@link #affine}, a better trial keeps its iscale, and the
     * levels are computed once from the kept one at the end.
     */
    static void symmetric(int n, int nmax, Lanes t, boolean squares) {
        symmetricPrepare(n, t, squares);
        symmetricFirst(n, nmax, t);
        for (int is = -9; is <= 9; is++) {
            if (is == 0) continue;
            symmetricIscale(t, -(nmax + 0.1f * is));
            if (t.finite) symmetricSumsFloat(n, nmax, t);
            else symmetricSumsBits(n, nmax, t, t.aux);
            symmetricTrial(t);
        }
        symmetricDone(n, nmax, t);
    }

    /** {@link #symmetric} for two lane groups at once, their sum passes in one loop (see {@link #affinePair}). */
    static void symmetricPair(int n, int nmax, Lanes a, Lanes b, boolean squares) {
        symmetricPrepare(n, a, squares);
        symmetricPrepare(n, b, squares);
        symmetricFirst(n, nmax, a);
        symmetricFirst(n, nmax, b);
        for (int is = -9; is <= 9; is++) {
            if (is == 0) continue;
            float numerator = -(nmax + 0.1f * is);
            symmetricIscale(a, numerator);
            symmetricIscale(b, numerator);
            if (a.finite && b.finite) {
                symmetricSumsFloat(n, nmax, a, b);
            } else {
                if (a.finite) symmetricSumsFloat(n, nmax, a);
                else symmetricSumsBits(n, nmax, a, a.aux);
                if (b.finite) symmetricSumsFloat(n, nmax, b);
                else symmetricSumsBits(n, nmax, b, b.aux);
            }
            symmetricTrial(a);
            symmetricTrial(b);
        }
        symmetricDone(n, nmax, a);
        symmetricDone(n, nmax, b);
    }

    private static void symmetricPrepare(int n, Lanes t, boolean squares) {
        signedExtreme(n, t);
        if (squares) squareWeights(n, t);
        weightsTimesValues(n, t);
    }

    /** The first fit, iscale = -nmax/max: its scale (0 where the sum of w l l is 0), and sumlx * scale as the best. */
    private static void symmetricFirst(int n, int nmax, Lanes t) {
        symmetricIscale(t, -nmax);
        FloatVector.fromArray(F, t.trialIscale, 0).intoArray(t.fitIscale, 0);
        if (t.finite) symmetricSumsFloat(n, nmax, t);
        else symmetricSumsBits(n, nmax, t, t.aux);
        FloatVector sumlx = FloatVector.fromArray(F, t.s1, 0);
        FloatVector suml2 = FloatVector.fromArray(F, t.s2, 0);
        FloatVector scale = sumlx.div(suml2).blend(0f, suml2.eq(0f));
        scale.intoArray(t.scale, 0);
        scale.mul(sumlx).intoArray(t.best, 0);
    }

    /** A trial's iscale = numerator/max, to t.trialIscale. */
    private static void symmetricIscale(Lanes t, float numerator) {
        FloatVector.broadcast(F, numerator).div(FloatVector.fromArray(F, t.max, 0)).intoArray(t.trialIscale, 0);
    }

    /** Levels of iscale = numerator/max (in -nmax..nmax-1) into {@code out}; sum of w x l to s1, of w l l to s2. */
    private static void symmetricSums(int n, int nmax, Lanes t, float numerator, float[] out) {
        symmetricIscale(t, numerator);
        if (t.finite) symmetricSumsFloat(n, nmax, t, out);
        else symmetricSumsBits(n, nmax, t, out);
    }

    /** The sums of the levels of iscale t.trialIscale, rounded in float (every value finite), not stored. */
    private static void symmetricSumsFloat(int n, int nmax, Lanes t) {
        FloatVector iscale = FloatVector.fromArray(F, t.trialIscale, 0);
        FloatVector sumlx = FloatVector.zero(F);
        FloatVector suml2 = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            IntVector bits = iscale.mul(FloatVector.fromArray(F, t.x, i * L)).add(MAGIC).reinterpretAsInts();
            FloatVector l = bits.max(MAGIC_BITS - nmax).min(MAGIC_BITS + nmax - 1).reinterpretAsFloats().sub(MAGIC);
            sumlx = sumlx.add(FloatVector.fromArray(F, t.wx, i * L).mul(l));
            suml2 = suml2.add(FloatVector.fromArray(F, t.w, i * L).mul(l).mul(l));
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
    }

    /** {@link #symmetricSumsFloat(int, int, Lanes)} of two groups in one loop. */
    private static void symmetricSumsFloat(int n, int nmax, Lanes a, Lanes b) {
        FloatVector iscaleA = FloatVector.fromArray(F, a.trialIscale, 0);
        FloatVector iscaleB = FloatVector.fromArray(F, b.trialIscale, 0);
        FloatVector sumlxA = FloatVector.zero(F);
        FloatVector suml2A = FloatVector.zero(F);
        FloatVector sumlxB = FloatVector.zero(F);
        FloatVector suml2B = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            IntVector bitsA = iscaleA.mul(FloatVector.fromArray(F, a.x, i * L)).add(MAGIC).reinterpretAsInts();
            IntVector bitsB = iscaleB.mul(FloatVector.fromArray(F, b.x, i * L)).add(MAGIC).reinterpretAsInts();
            FloatVector la = bitsA.max(MAGIC_BITS - nmax).min(MAGIC_BITS + nmax - 1).reinterpretAsFloats().sub(MAGIC);
            FloatVector lb = bitsB.max(MAGIC_BITS - nmax).min(MAGIC_BITS + nmax - 1).reinterpretAsFloats().sub(MAGIC);
            sumlxA = sumlxA.add(FloatVector.fromArray(F, a.wx, i * L).mul(la));
            sumlxB = sumlxB.add(FloatVector.fromArray(F, b.wx, i * L).mul(lb));
            suml2A = suml2A.add(FloatVector.fromArray(F, a.w, i * L).mul(la).mul(la));
            suml2B = suml2B.add(FloatVector.fromArray(F, b.w, i * L).mul(lb).mul(lb));
        }
        sumlxA.intoArray(a.s1, 0);
        suml2A.intoArray(a.s2, 0);
        sumlxB.intoArray(b.s1, 0);
        suml2B.intoArray(b.s2, 0);
    }

    private static void symmetricSumsFloat(int n, int nmax, Lanes t, float[] out) {
        FloatVector iscale = FloatVector.fromArray(F, t.trialIscale, 0);
        FloatVector sumlx = FloatVector.zero(F);
        FloatVector suml2 = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector l = iscale.mul(FloatVector.fromArray(F, t.x, i * L)).add(MAGIC).reinterpretAsInts()
                    .max(MAGIC_BITS - nmax).min(MAGIC_BITS + nmax - 1).reinterpretAsFloats().sub(MAGIC);
            l.intoArray(out, i * L);
            sumlx = sumlx.add(FloatVector.fromArray(F, t.wx, i * L).mul(l));
            suml2 = suml2.add(FloatVector.fromArray(F, t.w, i * L).mul(l).mul(l));
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
    }

    /** The levels of iscale t.trialIscale by ggml's rounding into {@code out}, and their sums. */
    private static void symmetricSumsBits(int n, int nmax, Lanes t, float[] out) {
        FloatVector iscale = FloatVector.fromArray(F, t.trialIscale, 0);
        FloatVector sumlx = FloatVector.zero(F);
        FloatVector suml2 = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector v = iscale.mul(FloatVector.fromArray(F, t.x, i * L));
            IntVector nearest = v.add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
            FloatVector l = (FloatVector) nearest.max(-nmax).min(nmax - 1).convert(VectorOperators.I2F, 0);
            l.intoArray(out, i * L);
            sumlx = sumlx.add(FloatVector.fromArray(F, t.wx, i * L).mul(l));
            suml2 = suml2.add(FloatVector.fromArray(F, t.w, i * L).mul(l).mul(l));
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
    }

    /** Where the trial's fit beats the best (sumlx^2 / suml2 larger), it becomes the fit. */
    private static void symmetricTrial(Lanes t) {
        FloatVector sumlx = FloatVector.fromArray(F, t.s1, 0);
        FloatVector suml2 = FloatVector.fromArray(F, t.s2, 0);
        FloatVector best = FloatVector.fromArray(F, t.best, 0);
        VectorMask<Float> better = suml2.compare(VectorOperators.GT, 0f)
                .and(sumlx.mul(sumlx).compare(VectorOperators.GT, best.mul(suml2)));
        if (!better.anyTrue()) return;
        FloatVector scale = FloatVector.fromArray(F, t.scale, 0).blend(sumlx.div(suml2), better);
        scale.intoArray(t.scale, 0);
        best.blend(scale.mul(sumlx), better).intoArray(t.best, 0);
        FloatVector trialIscale = FloatVector.fromArray(F, t.trialIscale, 0);
        FloatVector.fromArray(F, t.fitIscale, 0).blend(trialIscale, better).intoArray(t.fitIscale, 0);
    }

    /**
     * The kept fit's levels from its iscale (ggml's rounding, which the float one equals where
     * used), shifted by nmax; all-zero lanes (flag) become scale 0 and levels 0.
     */
    private static void symmetricDone(int n, int nmax, Lanes t) {
        FloatVector iscale = FloatVector.fromArray(F, t.fitIscale, 0);
        VectorMask<Float> zero = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        for (int i = 0; i < n; i++) {
            FloatVector v = iscale.mul(FloatVector.fromArray(F, t.x, i * L));
            IntVector nearest = v.add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
            FloatVector l = (FloatVector) nearest.max(-nmax).min(nmax - 1).convert(VectorOperators.I2F, 0);
            l.add((float) nmax).blend(0f, zero)
                    .intoArray(t.levels, i * L);
        }
        FloatVector.fromArray(F, t.scale, 0).blend(0f, zero).intoArray(t.scale, 0);
    }

    // ---------------------------------------------------------------- refined (make_q3_quants, do_rmse)

    /**
     * make_q3_quants with do_rmse ({@link ScaleSearch#symmetricRefined}): a lane stops
     * refining after the first pass in which none of its levels moved, as the scalar loop
     * breaks out; levels end shifted by nmax.
     */
    static void symmetricRefined(int n, int nmax, Lanes t) {
        signedExtreme(n, t);
        squareWeights(n, t);
        weightsTimesValues(n, t);
        symmetricSums(n, nmax, t, -nmax, t.levels);
        // t1: lanes still refining (not all-zero, and moved a level in the last pass)
        VectorMask<Float> allZero = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        FloatVector.zero(F).blend(1f, allZero.not()).intoArray(t.t1, 0);
        for (int itry = 0; itry < 5; itry++) {
            if (!refinePass(n, nmax, t)) break;
        }
        refinedDone(n, nmax, t);
    }

    /** One pass of single-level moves over the active lanes; false when no lane is active any more. */
    private static boolean refinePass(int n, int nmax, Lanes t) {
        VectorMask<Float> active = FloatVector.fromArray(F, t.t1, 0).compare(VectorOperators.NE, 0f);
        if (!active.anyTrue()) return false;
        FloatVector sumlx = FloatVector.fromArray(F, t.s1, 0);
        FloatVector suml2 = FloatVector.fromArray(F, t.s2, 0);
        FloatVector changed = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xi = FloatVector.fromArray(F, t.x, i * L);
            FloatVector wi = FloatVector.fromArray(F, t.w, i * L);
            FloatVector wxi = FloatVector.fromArray(F, t.wx, i * L);
            FloatVector li = FloatVector.fromArray(F, t.levels, i * L);
            FloatVector slx = sumlx.sub(wxi.mul(li));
            FloatVector sl2 = suml2.sub(wi.mul(li).mul(li));
            IntVector nearest = xi.mul(sl2).div(slx).add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
            FloatVector newL = (FloatVector) nearest.max(-nmax).min(nmax - 1).convert(VectorOperators.I2F, 0);
            VectorMask<Float> candidate = active.and(slx.compare(VectorOperators.GT, 0f))
                    .and(newL.compare(VectorOperators.NE, li));
            if (!candidate.anyTrue()) continue;
            FloatVector slxNew = slx.add(wxi.mul(newL));
            FloatVector sl2New = sl2.add(wi.mul(newL).mul(newL));
            VectorMask<Float> take = candidate.and(sl2New.compare(VectorOperators.GT, 0f))
                    .and(slxNew.mul(slxNew).mul(suml2).compare(VectorOperators.GT, sumlx.mul(sumlx).mul(sl2New)));
            li.blend(newL, take).intoArray(t.levels, i * L);
            sumlx = sumlx.blend(slxNew, take);
            suml2 = suml2.blend(sl2New, take);
            changed = changed.blend(1f, take);
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
        FloatVector.zero(F).blend(1f, active.and(changed.compare(VectorOperators.NE, 0f))).intoArray(t.t1, 0);
        return true;
    }

    private static void refinedDone(int n, int nmax, Lanes t) {
        VectorMask<Float> zero = FloatVector.fromArray(F, t.flag, 0).compare(VectorOperators.NE, 0f);
        FloatVector sumlx = FloatVector.fromArray(F, t.s1, 0);
        FloatVector suml2 = FloatVector.fromArray(F, t.s2, 0);
        VectorMask<Float> positive = suml2.compare(VectorOperators.GT, 0f);
        FloatVector.zero(F).blend(sumlx.div(suml2), positive).blend(0f, zero).intoArray(t.scale, 0);
        for (int i = 0; i < n; i++) {
            FloatVector.fromArray(F, t.levels, i * L).add((float) nmax).blend(0f, zero).intoArray(t.levels, i * L);
        }
    }
}
