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
 * is written once per variant.
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
        /** The affine search's iscale and min of the current trial, and of the fit kept so far (its levels are recomputed from them at the end). */
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
            FloatVector xi = at(t.x, i);
            FloatVector wi = at(t.w, i).mul(s2.add(xi.mul(xi)).sqrt());
            wi.intoArray(t.w, i * L);
            sum = sum.add(wi);
        }
        sum.intoArray(t.s3, 0);
    }

    private static FloatVector at(float[] a, int i) {
        return FloatVector.fromArray(F, a, i * L);
    }

    private static FloatVector lanes(float[] a) {
        return FloatVector.fromArray(F, a, 0);
    }

    private static VectorMask<Float> set(float[] flag) {
        return lanes(flag).compare(VectorOperators.NE, 0f);
    }

    private static void setFlags(float[] flag, VectorMask<Float> m) {
        FloatVector.zero(F).blend(1f, m).intoArray(flag, 0);
    }

    /** clamp(nearest_int(v), lo, hi) as ggml computes it: the magic-number rounding read from the mantissa bits. */
    private static FloatVector roundClampedBits(FloatVector v, int lo, int hi) {
        IntVector l = v.add(MAGIC).reinterpretAsInts().and(0x007F_FFFF).sub(0x0040_0000);
        return (FloatVector) l.max(lo).min(hi).convert(VectorOperators.I2F, 0);
    }

    /**
     * The same in float: clamp, then round to nearest even by adding and subtracting
     * 1.5 * 2^23. Equal to {@link #roundClampedBits} (rounding is monotone and the bounds are
     * integers) wherever nearest_int is a true rounding, |v| <= 2^22 and v not NaN; used only
     * where that is guaranteed.
     */
    private static FloatVector roundClamped(FloatVector v, float lo, float hi) {
        // the clamp by compare and blend: v is never NaN here, and a -0 kept where Java's max
        // would give +0 rounds to the same +0 (-0 + 1.5 * 2^23 - 1.5 * 2^23); Java's float
        // min/max (NaN and signed-zero rules) cost several instructions each, in the innermost loop
        FloatVector c = v.blend(lo, v.lt(lo));
        return c.blend(hi, c.compare(VectorOperators.GT, hi)).add(MAGIC).sub(MAGIC);
    }

    private static final int MAGIC_BITS = Float.floatToRawIntBits(MAGIC);

    /**
     * {@link #roundClamped} in four instructions: for |v| <= 2^22, v + 1.5 * 2^23 lies in
     * [2^23, 2^24), where floats are the consecutive integers, so the sum is 1.5 * 2^23 plus v
     * rounded to nearest even and its bit pattern counts up with it: the clamp is an integer
     * max and min on the bits, and subtracting 1.5 * 2^23 again gives the level as a float.
     * The same guarantee as {@link #roundClamped} (|v| <= 2^22, not NaN).
     */
    private static FloatVector roundClampedOnBits(FloatVector v, int lo, int hi) {
        IntVector bits = v.add(MAGIC).reinterpretAsInts().max(MAGIC_BITS + lo).min(MAGIC_BITS + hi);
        return bits.reinterpretAsFloats().sub(MAGIC);
    }

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
        FloatVector min = lanes(t.min);
        FloatVector iscale = FloatVector.broadcast(F, numerator).div(lanes(t.max).sub(min));
        iscale.intoArray(t.t1, 0);
        iscale.intoArray(t.trialIscale, 0);
        min.intoArray(t.trialMin, 0);
        FloatVector reach = lanes(t.hi).sub(min).abs().max(lanes(t.lo).sub(min).abs()).mul(iscale.abs());
        return t.finite && reach.lt(NEAREST_LIMIT).or(set(t.flag)).allTrue();
    }

    /**
     * min, max (min clamped to at most 0), sum of weights and of w x; flag = flat lane
     * (max == min); lo, hi the unclamped extremes; whether every value is finite.
     */
    private static void affineRange(int n, Lanes t) {
        FloatVector min = at(t.x, 0);
        FloatVector max = min;
        FloatVector sumW = at(t.w, 0);
        FloatVector sumX = sumW.mul(min);
        VectorMask<Float> finite = min.abs().lt(Float.POSITIVE_INFINITY);
        for (int i = 1; i < n; i++) {
            FloatVector xi = at(t.x, i);
            finite = finite.and(xi.abs().lt(Float.POSITIVE_INFINITY));
            min = min.blend(xi, xi.lt(min));
            max = max.blend(xi, xi.compare(VectorOperators.GT, max));
            FloatVector wi = at(t.w, i);
            sumW = sumW.add(wi);
            sumX = sumX.add(wi.mul(xi));
        }
        t.finite = finite.allTrue();
        min.intoArray(t.lo, 0);
        max.intoArray(t.hi, 0);
        min = min.blend(0f, min.compare(VectorOperators.GT, 0f));
        min.intoArray(t.min, 0);
        max.intoArray(t.max, 0);
        sumW.intoArray(t.sumW, 0);
        sumX.intoArray(t.sumX, 0);
        setFlags(t.flag, max.eq(min));
    }

    /** The levels of iscale = nmax/(max - min), scale 1/iscale, and their weighted error as the best so far. */
    private static void affineFirst(int n, int nmax, Lanes t, boolean useMad) {
        FloatVector min = lanes(t.min);
        FloatVector iscale = FloatVector.broadcast(F, (float) nmax).div(lanes(t.max).sub(min));
        FloatVector scale = FloatVector.broadcast(F, 1f).div(iscale);
        for (int i = 0; i < n; i++) {
            roundClampedBits(iscale.mul(at(t.x, i).sub(min)), 0, nmax).intoArray(t.aux, i * L);
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
        FloatVector min = lanes(t.min);
        FloatVector iscale = lanes(t.t1);
        FloatVector sumL = FloatVector.zero(F);
        FloatVector sumL2 = FloatVector.zero(F);
        FloatVector sumXL = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xi = at(t.x, i);
            FloatVector l = roundClampedOnBits(iscale.mul(xi.sub(min)), 0, nmax);
            l.intoArray(t.aux, i * L);
            FloatVector wl = at(t.w, i).mul(l);
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
        FloatVector minA = lanes(a.min);
        FloatVector iscaleA = lanes(a.t1);
        FloatVector minB = lanes(b.min);
        FloatVector iscaleB = lanes(b.t1);
        FloatVector sumLA = FloatVector.zero(F);
        FloatVector sumL2A = FloatVector.zero(F);
        FloatVector sumXLA = FloatVector.zero(F);
        FloatVector sumLB = FloatVector.zero(F);
        FloatVector sumL2B = FloatVector.zero(F);
        FloatVector sumXLB = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xa = at(a.x, i);
            FloatVector xb = at(b.x, i);
            FloatVector la = roundClampedOnBits(iscaleA.mul(xa.sub(minA)), 0, nmax);
            FloatVector lb = roundClampedOnBits(iscaleB.mul(xb.sub(minB)), 0, nmax);
            la.intoArray(a.aux, i * L);
            lb.intoArray(b.aux, i * L);
            FloatVector wla = at(a.w, i).mul(la);
            FloatVector wlb = at(b.w, i).mul(lb);
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
        FloatVector min = lanes(t.min);
        FloatVector iscale = lanes(t.t1);
        FloatVector sumL = FloatVector.zero(F);
        FloatVector sumL2 = FloatVector.zero(F);
        FloatVector sumXL = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector xi = at(t.x, i);
            FloatVector l = roundClampedBits(iscale.mul(xi.sub(min)), 0, nmax);
            l.intoArray(t.aux, i * L);
            FloatVector wl = at(t.w, i).mul(l);
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
        FloatVector sumL = lanes(t.s1);
        FloatVector sumL2 = lanes(t.s2);
        FloatVector sumXL = lanes(t.s3);
        FloatVector sumW = lanes(t.sumW);
        FloatVector sumX = lanes(t.sumX);
        FloatVector det = sumW.mul(sumL2).sub(sumL.mul(sumL));
        VectorMask<Float> solvable = det.compare(VectorOperators.GT, 0f).andNot(set(t.flag));
        if (!solvable.anyTrue()) return false;
        FloatVector thisScale = sumW.mul(sumXL).sub(sumX.mul(sumL)).div(det);
        FloatVector thisMin = sumL2.mul(sumX).sub(sumL.mul(sumXL)).div(det);
        VectorMask<Float> positiveMin = thisMin.compare(VectorOperators.GT, 0f);
        thisMin.blend(0f, positiveMin).intoArray(t.t2, 0);
        // the min-free scale only where a lane needs it: a division is the costliest operation here
        // (stored in both branches: a vector merged from two branches would be boxed)
        if (positiveMin.anyTrue()) thisScale.blend(sumXL.div(sumL2), positiveMin).intoArray(t.t1, 0);
        else thisScale.intoArray(t.t1, 0);
        setFlags(t.s2, solvable);
        return true;
    }

    /** Weighted absolute error of levels t.aux under scale t.t1 and min t.t2, to s1. */
    private static void affineErrorAbs(int n, Lanes t) {
        FloatVector scale = lanes(t.t1);
        FloatVector min = lanes(t.t2);
        FloatVector error = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector diff = scale.mul(at(t.aux, i)).add(min).sub(at(t.x, i));
            error = error.add(at(t.w, i).mul(diff.abs()));
        }
        error.intoArray(t.s1, 0);
    }

    /** Weighted squared error of levels t.aux under scale t.t1 and min t.t2, to s1. */
    private static void affineErrorSquared(int n, Lanes t) {
        FloatVector scale = lanes(t.t1);
        FloatVector min = lanes(t.t2);
        FloatVector error = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector diff = scale.mul(at(t.aux, i)).add(min).sub(at(t.x, i));
            error = error.add(at(t.w, i).mul(diff.mul(diff)));
        }
        error.intoArray(t.s1, 0);
    }

    /** {@link #affineErrorAbs} of two groups in one loop. */
    private static void affineErrorAbs(int n, Lanes a, Lanes b) {
        FloatVector scaleA = lanes(a.t1);
        FloatVector minA = lanes(a.t2);
        FloatVector scaleB = lanes(b.t1);
        FloatVector minB = lanes(b.t2);
        FloatVector errorA = FloatVector.zero(F);
        FloatVector errorB = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector diffA = scaleA.mul(at(a.aux, i)).add(minA).sub(at(a.x, i));
            FloatVector diffB = scaleB.mul(at(b.aux, i)).add(minB).sub(at(b.x, i));
            errorA = errorA.add(at(a.w, i).mul(diffA.abs()));
            errorB = errorB.add(at(b.w, i).mul(diffB.abs()));
        }
        errorA.intoArray(a.s1, 0);
        errorB.intoArray(b.s1, 0);
    }

    /** {@link #affineErrorSquared} of two groups in one loop. */
    private static void affineErrorSquared(int n, Lanes a, Lanes b) {
        FloatVector scaleA = lanes(a.t1);
        FloatVector minA = lanes(a.t2);
        FloatVector scaleB = lanes(b.t1);
        FloatVector minB = lanes(b.t2);
        FloatVector errorA = FloatVector.zero(F);
        FloatVector errorB = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector diffA = scaleA.mul(at(a.aux, i)).add(minA).sub(at(a.x, i));
            FloatVector diffB = scaleB.mul(at(b.aux, i)).add(minB).sub(at(b.x, i));
            errorA = errorA.add(at(a.w, i).mul(diffA.mul(diffA)));
            errorB = errorB.add(at(b.w, i).mul(diffB.mul(diffB)));
        }
        errorA.intoArray(a.s1, 0);
        errorB.intoArray(b.s1, 0);
    }

    /** Where the trial was solvable and its error (s1) beats the best, it becomes the fit. */
    private static void affineKeepBetter(int n, Lanes t) {
        FloatVector error = lanes(t.s1);
        FloatVector best = lanes(t.best);
        VectorMask<Float> better = set(t.s2).and(error.lt(best));
        if (!better.anyTrue()) return;
        best.blend(error, better).intoArray(t.best, 0);
        lanes(t.fitIscale).blend(lanes(t.trialIscale), better).intoArray(t.fitIscale, 0);
        lanes(t.fitMin).blend(lanes(t.trialMin), better).intoArray(t.fitMin, 0);
        lanes(t.scale).blend(lanes(t.t1), better).intoArray(t.scale, 0);
        lanes(t.min).blend(lanes(t.t2), better).intoArray(t.min, 0);
    }

    /**
     * The kept fit's levels, recomputed from the iscale and min that made them (the same
     * operations, so the same levels: cheaper than copying every better trial's levels);
     * flat lanes become scale 0 and levels 0; the_min = -min everywhere.
     */
    private static void affineDone(int n, int nmax, Lanes t) {
        FloatVector iscale = lanes(t.fitIscale);
        FloatVector min = lanes(t.fitMin);
        VectorMask<Float> flat = set(t.flag);
        for (int i = 0; i < n; i++) {
            roundClampedBits(iscale.mul(at(t.x, i).sub(min)), 0, nmax).blend(0f, flat).intoArray(t.levels, i * L);
        }
        lanes(t.scale).blend(0f, flat).intoArray(t.scale, 0);
        lanes(t.min).neg().intoArray(t.theMin, 0);
    }

    // ---------------------------------------------------------------- symmetric (make_qx_quants, rmse_type 1)

    /**
     * The signed value of largest magnitude per lane (the first on ties) to t.max; flag =
     * below GROUP_MAX_EPS; t.finite. With every value finite, |iscale x| <= nmax + 1 in the
     * symmetric searches (|x| <= |max|), so their levels may be rounded in float.
     */
    private static void signedExtreme(int n, Lanes t) {
        FloatVector max = FloatVector.zero(F);
        FloatVector amax = FloatVector.zero(F);
        VectorMask<Float> finite = F.maskAll(true);
        for (int i = 0; i < n; i++) {
            FloatVector xi = at(t.x, i);
            FloatVector ax = xi.abs();
            VectorMask<Float> bigger = ax.compare(VectorOperators.GT, amax);
            amax = amax.blend(ax, bigger);
            max = max.blend(xi, bigger);
            finite = finite.and(ax.lt(Float.POSITIVE_INFINITY));
        }
        max.intoArray(t.max, 0);
        setFlags(t.flag, amax.lt(GROUP_MAX_EPS));
        t.finite = finite.allTrue();
    }

    /** t.w = x^2 (the weights ggml uses without any). */
    private static void squareWeights(int n, Lanes t) {
        for (int i = 0; i < n; i++) {
            FloatVector xi = at(t.x, i);
            xi.mul(xi).intoArray(t.w, i * L);
        }
    }

    /** t.wx = w x: the product ggml forms first in w*x*l, the same in every trial. */
    private static void weightsTimesValues(int n, Lanes t) {
        for (int i = 0; i < n; i++) at(t.w, i).mul(at(t.x, i)).intoArray(t.wx, i * L);
    }

    /**
     * make_qx_quants with rmse_type 1 ({@link ScaleSearch#symmetric}): weights {@code t.w},
     * or x^2 when {@code squares}; scale to {@code t.scale}, levels (0..2 nmax - 1) to
     * {@code t.levels}.
     */
    static void symmetric(int n, int nmax, Lanes t, boolean squares) {
        signedExtreme(n, t);
        if (squares) squareWeights(n, t);
        weightsTimesValues(n, t);
        symmetricSums(n, nmax, t, -nmax, t.levels);
        FloatVector sumlx = lanes(t.s1);
        FloatVector suml2 = lanes(t.s2);
        for (int i = 0; i < n; i++) at(t.levels, i).add((float) nmax).intoArray(t.levels, i * L);
        FloatVector scale = sumlx.div(suml2).blend(0f, suml2.eq(0f));
        scale.intoArray(t.scale, 0);
        scale.mul(sumlx).intoArray(t.best, 0);
        for (int is = -9; is <= 9; is++) {
            if (is == 0) continue;
            symmetricSums(n, nmax, t, -(nmax + 0.1f * is), t.aux);
            symmetricTrial(n, nmax, t);
        }
        symmetricDone(n, t);
    }

    /** Levels of iscale = numerator/max (in -nmax..nmax-1) into {@code out}; sum of w x l to s1, of w l l to s2. */
    private static void symmetricSums(int n, int nmax, Lanes t, float numerator, float[] out) {
        FloatVector iscale = FloatVector.broadcast(F, numerator).div(lanes(t.max));
        if (t.finite) symmetricSumsFloat(n, nmax, t, iscale, out);
        else symmetricSumsBits(n, nmax, t, iscale, out);
    }

    private static void symmetricSumsFloat(int n, int nmax, Lanes t, FloatVector iscale, float[] out) {
        FloatVector sumlx = FloatVector.zero(F);
        FloatVector suml2 = FloatVector.zero(F);
        float bottom = -nmax;
        float top = nmax - 1;
        for (int i = 0; i < n; i++) {
            FloatVector l = roundClamped(iscale.mul(at(t.x, i)), bottom, top);
            l.intoArray(out, i * L);
            sumlx = sumlx.add(at(t.wx, i).mul(l));
            suml2 = suml2.add(at(t.w, i).mul(l).mul(l));
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
    }

    private static void symmetricSumsBits(int n, int nmax, Lanes t, FloatVector iscale, float[] out) {
        FloatVector sumlx = FloatVector.zero(F);
        FloatVector suml2 = FloatVector.zero(F);
        for (int i = 0; i < n; i++) {
            FloatVector l = roundClampedBits(iscale.mul(at(t.x, i)), -nmax, nmax - 1);
            l.intoArray(out, i * L);
            sumlx = sumlx.add(at(t.wx, i).mul(l));
            suml2 = suml2.add(at(t.w, i).mul(l).mul(l));
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
    }

    private static void symmetricTrial(int n, int nmax, Lanes t) {
        FloatVector sumlx = lanes(t.s1);
        FloatVector suml2 = lanes(t.s2);
        FloatVector best = lanes(t.best);
        VectorMask<Float> better = suml2.compare(VectorOperators.GT, 0f)
                .and(sumlx.mul(sumlx).compare(VectorOperators.GT, best.mul(suml2)));
        if (!better.anyTrue()) return;
        for (int i = 0; i < n; i++) {
            at(t.levels, i).blend(at(t.aux, i).add((float) nmax), better).intoArray(t.levels, i * L);
        }
        FloatVector scale = lanes(t.scale).blend(sumlx.div(suml2), better);
        scale.intoArray(t.scale, 0);
        best.blend(scale.mul(sumlx), better).intoArray(t.best, 0);
    }

    /** All-zero lanes (flag) become scale 0 and levels 0. */
    private static void symmetricDone(int n, Lanes t) {
        VectorMask<Float> zero = set(t.flag);
        if (!zero.anyTrue()) return;
        lanes(t.scale).blend(0f, zero).intoArray(t.scale, 0);
        for (int i = 0; i < n; i++) at(t.levels, i).blend(0f, zero).intoArray(t.levels, i * L);
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
        setFlags(t.t1, set(t.flag).not());
        for (int itry = 0; itry < 5; itry++) {
            if (!refinePass(n, nmax, t)) break;
        }
        refinedDone(n, nmax, t);
    }

    /** One pass of single-level moves over the active lanes; false when no lane is active any more. */
    private static boolean refinePass(int n, int nmax, Lanes t) {
        VectorMask<Float> active = set(t.t1);
        if (!active.anyTrue()) return false;
        FloatVector sumlx = lanes(t.s1);
        FloatVector suml2 = lanes(t.s2);
        VectorMask<Float> changed = F.maskAll(false);
        for (int i = 0; i < n; i++) {
            FloatVector xi = at(t.x, i);
            FloatVector wi = at(t.w, i);
            FloatVector wxi = at(t.wx, i);
            FloatVector li = at(t.levels, i);
            FloatVector slx = sumlx.sub(wxi.mul(li));
            FloatVector sl2 = suml2.sub(wi.mul(li).mul(li));
            FloatVector newL = roundClampedBits(xi.mul(sl2).div(slx), -nmax, nmax - 1);
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
            changed = changed.or(take);
        }
        sumlx.intoArray(t.s1, 0);
        suml2.intoArray(t.s2, 0);
        setFlags(t.t1, active.and(changed));
        return true;
    }

    private static void refinedDone(int n, int nmax, Lanes t) {
        VectorMask<Float> zero = set(t.flag);
        FloatVector sumlx = lanes(t.s1);
        FloatVector suml2 = lanes(t.s2);
        VectorMask<Float> positive = suml2.compare(VectorOperators.GT, 0f);
        FloatVector.zero(F).blend(sumlx.div(suml2), positive).blend(0f, zero).intoArray(t.scale, 0);
        for (int i = 0; i < n; i++) at(t.levels, i).add((float) nmax).blend(0f, zero).intoArray(t.levels, i * L);
    }
}
