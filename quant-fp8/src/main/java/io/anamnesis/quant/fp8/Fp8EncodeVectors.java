package io.anamnesis.quant.fp8;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * {@link Fp8Encoder} on {@code jdk.incubator.vector}, 16 lanes of 512 bits, used only when
 * that module is resolved and the CPU has 512-bit vectors. The same steps as the scalar
 * encoder: {@code x / s} rounded to float32 (a vector divide gives that rounding exactly),
 * the clamp, and the round-to-nearest-even of the mantissa on the bits; the code's value
 * (what a loader decodes) falls out of the same rounding. The tests compare both paths.
 */
final class Fp8EncodeVectors {
    private Fp8EncodeVectors() {
    }

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
    private static final int LANES = 16;
    private static final float RNE_MAGIC = 12582912f;

    static boolean usable() {
        return FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512 && IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    }

    /** {@link Fp8Encoder#finiteAbsmax}: whole vectors here, the tail scalar. */
    static float finiteAbsmax(float[] x, int from, int to) {
        IntVector max = IntVector.zero(I);
        int i = from;
        for (; i + LANES <= to; i += LANES) {
            IntVector m = FloatVector.fromArray(F, x, i).reinterpretAsInts().and(0x7FFF_FFFF);
            max = max.max(m.blend(0, m.compare(VectorOperators.GE, 0x7F80_0000)));
        }
        float v = Float.intBitsToFloat(max.reduceLanes(VectorOperators.MAX));
        return i < to ? Math.max(v, Fp8Encoder.finiteAbsmaxScalar(x, i, to)) : v;
    }

    /** {@link Fp8Encoder#encode}: codes, and their decoded values when {@code decoded} is not null. */
    static void encode(Fp8Format format, float[] x, int off, int n, float scale, byte[] out, int outOff, float[] decoded) {
        Fp8Grid g = format.grid();
        float max = g.max();
        int maxBits = Float.floatToRawIntBits(max);
        float smallestNormal = g.smallestNormal();
        float stepsPerUnit = g.stepsPerUnit();
        float step = g.step();
        int drop = g.drop();
        int half = (1 << (drop - 1)) - 1;
        int rebias = g.rebias();
        boolean fnuz = g.fnuz();
        // Loop-invariant masks instead of branches on fnuz: no vector in this loop is chosen by a
        // condition, since C2 boxes a vector merged from two paths (and allocated one per
        // iteration where the subnormal or NaN path was taken: 2 GB in 40 calls of 45 M values)
        VectorMask<Integer> fnuzLanes = I.maskAll(fnuz);
        IntVector nanCodeFnuz = IntVector.broadcast(I, 0x80);
        int i = 0;
        for (; i + LANES <= n; i += LANES) {
            FloatVector v = FloatVector.fromArray(F, x, off + i).div(scale);
            IntVector sign = v.reinterpretAsInts().and(0x8000_0000);
            FloatVector a = v.abs();
            // the clamp on the bits (an integer min is one instruction, Java's float min several);
            // a NaN lane becomes max here and takes its NaN code below
            a = a.reinterpretAsInts().min(maxBits).reinterpretAsFloats();
            // normals: keep the top mantissa bits, round to nearest even, rebias the exponent
            IntVector b = a.reinterpretAsInts();
            IntVector rounded = b.add(b.lanewise(VectorOperators.LSHR, drop).and(1)).add(half);
            IntVector normal = rounded.lanewise(VectorOperators.LSHR, drop).sub(rebias);
            // subnormals: multiples of the smallest subnormal, rounded by the 1.5 x 2^23 trick
            VectorMask<Float> sub = a.compare(VectorOperators.LT, smallestNormal);
            FloatVector subCount = a.mul(stepsPerUnit).add(RNE_MAGIC).sub(RNE_MAGIC);
            IntVector magnitude = normal.blend((IntVector) subCount.convertShape(VectorOperators.F2I, I, 0), sub.cast(I));
            // FNUZ: a zero of either sign is 0x00 (0x80 is the NaN), and every NaN is 0x80
            sign = sign.blend(0, magnitude.compare(VectorOperators.EQ, 0).and(fnuzLanes));
            IntVector signBits = sign.lanewise(VectorOperators.LSHR, 24);
            IntVector code = magnitude.or(signBits);
            VectorMask<Integer> nan = v.test(VectorOperators.IS_NAN).cast(I);
            code = code.blend(signBits.or(0x7F).blend(nanCodeFnuz, fnuzLanes), nan);
            code.convertShape(VectorOperators.I2B, B128, 0).reinterpretAsBytes().intoArray(out, outOff + i);
            if (decoded != null) {
                FloatVector value = rounded.and(-(1 << drop)).reinterpretAsFloats()
                        .blend(subCount.mul(step), sub)
                        .blend(Float.NaN, nan.cast(F));
                value.reinterpretAsInts().or(sign).reinterpretAsFloats().mul(scale).intoArray(decoded, outOff + i);
            }
        }
        if (i < n) Fp8Encoder.encodeScalar(format, x, off + i, n - i, scale, out, outOff + i, decoded);
    }
}
