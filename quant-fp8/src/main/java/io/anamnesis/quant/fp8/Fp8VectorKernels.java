package io.anamnesis.quant.fp8;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The Vector API versions of the {@link Fp8Kernels} scalar loops, bit for bit the same.
 * Loaded only when {@code jdk.incubator.vector} is resolved (see
 * {@link Fp8Kernels#vectorAvailable()}).
 *
 * <p>Decoding needs no table: an FP8 code's exponent and mantissa, shifted into an F32's
 * exponent and mantissa fields, are that F32's bits for the value scaled by
 * {@code 2^-(127 - bias)}; normal codes land on normal F32s and subnormal codes on F32
 * subnormals, so one exact multiply by {@code 2^(127 - bias)} finishes both. Codes with an
 * all-ones exponent (E5M2) or {@code S.1111.111} (E4M3) get the F32 all-ones exponent
 * instead, which keeps infinities infinite and NaN mantissas as the payload's top bits.
 * Narrowing to BF16 and F16 is integer arithmetic on the F32 bits.
 */
final class Fp8VectorKernels {
    private Fp8VectorKernels() {
    }

    private static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    private static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    private static final int LANES = I.length();
    private static final VectorSpecies<Byte> B = LANES >= 8
            ? VectorSpecies.of(byte.class, VectorShape.forBitSize(LANES * 8)) : ByteVector.SPECIES_64;
    private static final VectorSpecies<Short> S = LANES >= 8
            ? VectorSpecies.of(short.class, VectorShape.forBitSize(LANES * 16)) : ShortVector.SPECIES_128;
    private static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /** Needs a byte vector of as many lanes as an int vector: 64-bit shapes and up. */
    static boolean supported() {
        return LANES >= 8 && F.length() == LANES;
    }

    /** F32 bits shifted by 23 - mantissaBits, and the first magnitude (7 bits) with the all-ones exponent. */
    private static int shift(Fp8Format f) {
        return 23 - f.mantissaBits();
    }

    private static int specialFrom(Fp8Format f) {
        return f == Fp8Format.E4M3 ? 0x7F : 0x7C;
    }

    private static float rebias(Fp8Format f) {
        return Math.scalb(1.0f, 127 - f.bias());
    }

    /** {@code LANES} codes from {@code offset} decoded and times {@code scale}. */
    private static FloatVector product(MemorySegment codes, long offset, int shift, int specialFrom,
                                       float rebias, float scale) {
        IntVector v = (IntVector) ByteVector.fromMemorySegment(B, codes, offset, LE)
                .convertShape(VectorOperators.ZERO_EXTEND_B2I, I, 0);
        IntVector magnitude = v.and(0x7F);
        IntVector bits = magnitude.lanewise(VectorOperators.LSHL, shift)
                .or(v.and(0x80).lanewise(VectorOperators.LSHL, 24));
        VectorMask<Integer> special = magnitude.compare(VectorOperators.GE, specialFrom);
        bits = bits.lanewise(VectorOperators.OR, 0x7F80_0000, special);
        return bits.reinterpretAsFloats().mul(rebias).mul(scale);
    }

    static void toF32(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                      MemorySegment dest, long destOffset, long count) {
        if (Float.isNaN(scale)) {
            Fp8Kernels.toF32(format, codes, codeOffset, scale, dest, destOffset, count);
            return;
        }
        int shift = shift(format);
        int specialFrom = specialFrom(format);
        float rebias = rebias(format);
        long i = 0;
        for (long bound = count - LANES; i <= bound; i += LANES) {
            product(codes, codeOffset + i, shift, specialFrom, rebias, scale)
                    .intoMemorySegment(dest, destOffset + 4 * i, LE);
        }
        Fp8Kernels.toF32(format, codes, codeOffset + i, scale, dest, destOffset + 4 * i, count - i);
    }

    static void toBf16(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                       MemorySegment dest, long destOffset, long count) {
        if (Float.isNaN(scale)) {
            Fp8Kernels.toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
            return;
        }
        int shift = shift(format);
        int specialFrom = specialFrom(format);
        float rebias = rebias(format);
        long i = 0;
        for (long bound = count - LANES; i <= bound; i += LANES) {
            IntVector bits = product(codes, codeOffset + i, shift, specialFrom, rebias, scale).reinterpretAsInts();
            bf16(bits).intoMemorySegment(dest, destOffset + 2 * i, LE);
        }
        Fp8Kernels.toBf16(format, codes, codeOffset + i, scale, dest, destOffset + 2 * i, count - i);
    }

    static void toF16(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                      MemorySegment dest, long destOffset, long count) {
        if (Float.isNaN(scale)) {
            Fp8Kernels.toF16(format, codes, codeOffset, scale, dest, destOffset, count);
            return;
        }
        int shift = shift(format);
        int specialFrom = specialFrom(format);
        float rebias = rebias(format);
        long i = 0;
        for (long bound = count - LANES; i <= bound; i += LANES) {
            FloatVector p = product(codes, codeOffset + i, shift, specialFrom, rebias, scale);
            f16(p).intoMemorySegment(dest, destOffset + 2 * i, LE);
        }
        Fp8Kernels.toF16(format, codes, codeOffset + i, scale, dest, destOffset + 2 * i, count - i);
    }

    /** {@code Floats.f32ToBf16} lane-wise: round-to-nearest-even, NaN kept a quiet NaN. */
    static ShortVector bf16(IntVector bits) {
        IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF)
                .lanewise(VectorOperators.LSHR, 16);
        VectorMask<Integer> nan = bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000);
        IntVector narrowed = rounded.blend(bits.lanewise(VectorOperators.LSHR, 16).or(0x0040), nan);
        return (ShortVector) narrowed.convertShape(VectorOperators.I2S, S, 0);
    }

    /**
     * {@code Fp8Kernels.f32ToF16} lane-wise. Normal results: rebias the exponent and round
     * the 13 dropped mantissa bits to nearest even (a carry into the exponent is the right
     * answer, up to infinity). Subnormal results: adding 0.5 puts the value where the F32
     * ulp is 2^-24, the F16 subnormal step, so the F32 addition itself rounds to nearest
     * even and the low mantissa bits are the F16 code (0x400 when it rounds up to 2^-14).
     */
    static ShortVector f16(FloatVector value) {
        IntVector bits = value.reinterpretAsInts();
        IntVector sign = bits.lanewise(VectorOperators.LSHR, 16).and(0x8000);
        IntVector a = bits.and(0x7FFF_FFFF);
        IntVector normal = a.sub(0x3800_0000).add(0x0FFF).add(a.lanewise(VectorOperators.LSHR, 13).and(1))
                .lanewise(VectorOperators.LSHR, 13);
        IntVector subnormal = value.abs().add(0.5f).reinterpretAsInts().sub(0x3F00_0000);
        IntVector h = normal.blend(subnormal, a.compare(VectorOperators.LT, 0x3880_0000));
        h = h.blend(0x7C00, a.compare(VectorOperators.GE, 0x4780_0000));
        IntVector nan = a.lanewise(VectorOperators.LSHR, 13).and(0x3FF).or(0x7E00);
        h = h.blend(nan, a.compare(VectorOperators.GT, 0x7F80_0000)).or(sign);
        return (ShortVector) h.convertShape(VectorOperators.I2S, S, 0);
    }
}
