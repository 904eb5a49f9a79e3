package io.anamnesis.api;

import jdk.incubator.vector.DoubleVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link LossMeter#measure}'s lane sums on {@code jdk.incubator.vector}: one vector of eight
 * doubles per sum, lane {@code l} adding elements {@code l, l + 8, ...} in order with the same
 * double operations as the scalar sums (no fused multiply-add), so both give the same bits.
 * Loaded only where the module is resolved ({@link LossMeter} asks {@code Kernels} first).
 */
final class LossVectors {
    private LossVectors() {
    }

    /** Whether vectors of eight doubles are native here (asked only where the module is resolved). */
    static boolean wide() {
        return DoubleVector.SPECIES_PREFERRED.length() >= LossMeter.LANES;
    }

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_256;
    private static final VectorSpecies<Double> D = DoubleVector.SPECIES_512;

    /** As {@link LossMeter#scalarSums}: the lanes over whole steps before the first non-finite original. */
    static int sums(float[] original, int oo, float[] decoded, int dO, int count, double[] lanes) {
        DoubleVector abs = DoubleVector.zero(D);
        DoubleVector sq = abs;
        DoubleVector signal = abs;
        DoubleVector max = abs;
        int i = 0;
        for (; i + LossMeter.LANES <= count; i += LossMeter.LANES) {
            FloatVector xf = FloatVector.fromArray(F, original, oo + i);
            // an exponent of all ones (inf, NaN): the scalar tail takes over from this step
            if (xf.reinterpretAsInts().and(0x7F80_0000).compare(VectorOperators.EQ, 0x7F80_0000).anyTrue()) break;
            DoubleVector x = (DoubleVector) xf.convertShape(VectorOperators.F2D, D, 0);
            DoubleVector d = (DoubleVector) FloatVector.fromArray(F, decoded, dO + i).convertShape(VectorOperators.F2D, D, 0);
            DoubleVector e = d.sub(x);
            DoubleVector a = e.abs();
            abs = abs.add(a);
            sq = sq.add(e.mul(e));
            signal = signal.add(x.mul(x));
            // the largest error on the bits: |e| is never negative, so its bits order as the
            // doubles do, with a NaN above infinity, which keeps it as the scalar rule does (an
            // integer max is one instruction, Java's double max several)
            max = max.reinterpretAsLongs().max(a.reinterpretAsLongs()).reinterpretAsDoubles();
        }
        abs.intoArray(lanes, 0);
        sq.intoArray(lanes, LossMeter.LANES);
        signal.intoArray(lanes, 2 * LossMeter.LANES);
        max.intoArray(lanes, 3 * LossMeter.LANES);
        return i;
    }
}
