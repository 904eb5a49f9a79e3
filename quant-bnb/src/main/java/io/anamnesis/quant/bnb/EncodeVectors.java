package io.anamnesis.quant.bnb;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * The encoders on {@code jdk.incubator.vector}, 16 lanes of 512 bits, used only when that
 * module is resolved and the CPU has 512-bit vectors. Each computes exactly the scalar
 * encoder's float32 operations in the same order (the same reciprocal, products, threshold
 * comparisons, RNE trick), so the bytes are identical; the tests compare both paths.
 */
final class EncodeVectors {
    private EncodeVectors() {
    }

    private static final VectorSpecies<Float> F = FloatVector.SPECIES_512;
    private static final VectorSpecies<Integer> I = IntVector.SPECIES_512;
    private static final VectorSpecies<Byte> B128 = ByteVector.SPECIES_128;
    private static final VectorSpecies<Byte> B64 = ByteVector.SPECIES_64;
    private static final int LANES = 16;

    /** 16 lanes of 32 bits: the 4-bit and int8 encoders need them. */
    static boolean usable() {
        return FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512 && IntVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    }

    /** {@link FourBitEncoder#FP4_RANK_CODE} in the first 8 of 16 lanes (literal: this class may load while that one initializes). */
    private static final IntVector FP4_RANK_CODE = IntVector.fromArray(I,
            new int[]{0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011, 0, 0, 0, 0, 0, 0, 0, 0}, 0);

    /** NaN-ignoring max of |x| over {@code x[from, to)}, a multiple of 16 long. */
    static float absmax(float[] x, int from, int to) {
        IntVector max = IntVector.zero(I);
        for (int i = from; i < to; i += LANES) {
            IntVector m = FloatVector.fromArray(F, x, i).reinterpretAsInts().and(0x7FFF_FFFF);
            max = max.max(m.blend(0, m.compare(VectorOperators.GT, 0x7F80_0000)));
        }
        return Float.intBitsToFloat(max.reduceLanes(VectorOperators.MAX));
    }

    /** Blocks of a multiple of 16: {@link FourBitEncoder#blockAbsmax} for every whole block, the tail scalar. */
    static void blockAbsmax(float[] x, int off, int count, int blocksize, float[] out, int outOff) {
        int b = 0;
        int s = 0;
        for (; s + blocksize <= count; b++, s += blocksize) out[outOff + b] = absmax(x, off + s, off + s + blocksize);
        if (s < count) out[outOff + b] = FourBitEncoder.absmax(x, off + s, off + count);
    }

    /**
     * {@link FourBitEncoder#encode} for whole blocks (block size a multiple of 16); a short
     * last block goes to the scalar encoder.
     */
    static void encode(boolean fp4, float[] x, int off, int count, int blocksize, float[] absmax, int absmaxOff,
                       byte[] packed, int packedOff) {
        int b = 0;
        int s = 0;
        for (; s + blocksize <= count; b++, s += blocksize) {
            float inv = 1.0f / absmax[absmaxOff + b];
            int o = packedOff + (s >> 1);
            for (int i = s; i < s + blocksize; i += LANES, o += LANES / 2) {
                FloatVector v = FloatVector.fromArray(F, x, off + i).mul(inv);
                IntVector codes = fp4 ? fp4(v) : nf4(v);
                pack(codes, packed, o);
            }
        }
        if (s < count) {
            float[] tail = {absmax[absmaxOff + b]};
            FourBitEncoder.encodeScalar(fp4, x, off + s, count - s, blocksize, tail, 0, packed, packedOff + (s >> 1));
        }
    }

    /**
     * The number of NF4 thresholds each lane exceeds (NaN exceeds none), counted in float
     * lanes so that no mask changes element type inside the loop.
     */
    private static IntVector nf4(FloatVector v) {
        FloatVector c = FloatVector.zero(F);
        for (float t : FourBitEncoder.NF4_THRESHOLDS) c = c.add(1f, v.compare(VectorOperators.GT, t));
        return (IntVector) c.convertShape(VectorOperators.F2I, I, 0);
    }

    /** FP4: the magnitude's rank among the thresholds, its code, and the sign bit (not for NaN). */
    private static IntVector fp4(FloatVector v) {
        FloatVector a = v.abs();
        FloatVector rank = FloatVector.zero(F);
        for (float t : FourBitEncoder.FP4_THRESHOLDS) rank = rank.add(1f, a.compare(VectorOperators.GT, t));
        IntVector r = (IntVector) rank.convertShape(VectorOperators.F2I, I, 0);
        IntVector sign = v.reinterpretAsInts().lanewise(VectorOperators.LSHR, 31).lanewise(VectorOperators.LSHL, 3);
        VectorMask<Integer> nan = v.test(VectorOperators.IS_NAN).cast(I);
        return r.selectFrom(FP4_RANK_CODE).or(sign.blend(0, nan));
    }

    /** 16 codes (0..15) into 8 bytes, the even lane in the high nibble. */
    private static void pack(IntVector codes, byte[] packed, int o) {
        // as bytes, lanes 2k and 2k+1 are the low and high byte of short k
        ShortVector pairs = ((ByteVector) codes.convertShape(VectorOperators.I2B, B128, 0)).reinterpretAsShorts();
        ShortVector joined = pairs.lanewise(VectorOperators.LSHL, 4).and((short) 0xF0)
                .or(pairs.lanewise(VectorOperators.LSHR, 8));
        joined.convertShape(VectorOperators.S2B, B64, 0).reinterpretAsBytes().intoArray(packed, o);
    }

    /**
     * {@link Int8Encoder#encodeRow}: the float16 rounding done on the bits (round the mantissa
     * to 10 bits, to nearest even; below 2^-14 to multiples of 2^-24; past 65504 to infinity;
     * NaN kept), then the row's absmax and the codes; the tail scalar.
     */
    static float encodeRow(float[] x, int off, int n, byte[] codes, int codesOff, float[] half) {
        int whole = n - n % LANES;
        IntVector max = IntVector.zero(I);
        for (int i = 0; i < whole; i += LANES) {
            FloatVector h = toHalfAndBack(FloatVector.fromArray(F, x, off + i));
            h.intoArray(half, i);
            IntVector m = h.reinterpretAsInts().and(0x7FFF_FFFF);
            max = max.max(m.blend(0, m.compare(VectorOperators.GT, 0x7F80_0000)));
        }
        for (int i = whole; i < n; i++) half[i] = Float.float16ToFloat(Float.floatToFloat16(x[off + i]));
        float scb = Math.max(Float.intBitsToFloat(max.reduceLanes(VectorOperators.MAX)), FourBitEncoder.absmax(half, whole, n));
        float scale = 127.0f / scb;
        for (int i = 0; i < whole; i += LANES) {
            FloatVector p = FloatVector.fromArray(F, half, i).mul(scale);
            // round half to even by adding and subtracting 1.5 x 2^23; NaN converts to 0
            IntVector q = (IntVector) p.add(12582912f).sub(12582912f).convertShape(VectorOperators.F2I, I, 0);
            q.convertShape(VectorOperators.I2B, B128, 0).reinterpretAsBytes().intoArray(codes, codesOff + i);
        }
        for (int i = whole; i < n; i++) codes[codesOff + i] = (byte) Int8Encoder.round(half[i] * scale);
        return scb;
    }

    private static FloatVector toHalfAndBack(FloatVector x) {
        IntVector bits = x.reinterpretAsInts();
        IntVector sign = bits.and(0x8000_0000);
        IntVector mag = bits.and(0x7FFF_FFFF);
        IntVector normal = mag.add(mag.lanewise(VectorOperators.LSHR, 13).and(1)).add(0xFFF).and(~0x1FFF);
        normal = normal.blend(0x7F80_0000, normal.compare(VectorOperators.GE, 0x4780_0000));
        IntVector sub = mag.reinterpretAsFloats().add(0.75f).sub(0.75f).reinterpretAsInts();
        IntVector r = normal.blend(sub, mag.compare(VectorOperators.LT, 0x3880_0000));
        r = r.blend(mag, mag.compare(VectorOperators.GT, 0x7F80_0000));
        return r.or(sign).reinterpretAsFloats();
    }
}
