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
 * instead, which keeps infinities infinite and NaN mantissas as the payload's top bits; the
 * FNUZ formats' one NaN, {@code 0x80}, which the shift would make -0, gets the table's NaN.
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
    /** Codes per main-loop step: four vectors, checked for special codes with one wide compare. */
    private static final int STEP = 4 * LANES;
    private static final VectorSpecies<Byte> WIDE = LANES >= 8 && LANES <= 16
            ? VectorSpecies.of(byte.class, VectorShape.forBitSize(STEP * 8)) : ByteVector.SPECIES_64;

    /** Needs byte vectors of one and four int vectors' lanes: 256- or 512-bit int vectors. */
    static boolean supported() {
        return LANES >= 8 && LANES <= 16 && F.length() == LANES;
    }

    /**
     * The decoding constants of one format. A code sign-extended to 32 bits and shifted left
     * by {@code 23 - mantissaBits} has its exponent and mantissa in the F32 fields and copies
     * of its sign above them; {@code fieldMask} keeps the F32 sign and those fields.
     * {@code specialFrom}: the lowest (sign-less) shifted pattern with F32's all-ones exponent.
     */
    private record Layout(int shift, int fieldMask, int specialFrom, byte specialByteMask, byte specialByteValue,
                          boolean fnuz, float rebias, float maxFoldableScale) {
        static Layout of(Fp8Format f) {
            int shift = 23 - f.mantissaBits();
            int field = 0x7F << shift;
            // A code is special when its bits under specialByteMask equal specialByteValue.
            // E4M3: only S.1111.111; E5M2: every code with exponent 11111; FNUZ: only 0x80.
            boolean fnuz = f.number().nanIsNegativeZero();
            int mask = fnuz ? 0xFF : f == Fp8Format.E4M3 ? 0x7F : 0x7C;
            int value = fnuz ? 0x80 : mask;
            int k = 127 - f.bias();
            // specialFrom: FNUZ has no all-ones-exponent specials, so no shifted pattern reaches it
            int specialFrom = fnuz ? Integer.MAX_VALUE : mask << shift;
            return new Layout(shift, 0x8000_0000 | field, specialFrom, (byte) mask, (byte) value, fnuz,
                    Math.scalb(1.0f, k), Math.scalb(1.0f, 128 - k));
        }
    }

    private static final Layout[] LAYOUTS = new Layout[Fp8Format.values().length];

    static {
        for (Fp8Format f : Fp8Format.values()) LAYOUTS[f.ordinal()] = Layout.of(f);
    }

    private static Layout layout(Fp8Format f) {
        return LAYOUTS[f.ordinal()];
    }

    /** The F32 bits the FNUZ NaN code widens to (see {@code Float8}). */
    private static final int FNUZ_NAN = Float.floatToRawIntBits(Fp8Format.E4M3FNUZ.decode(0x80));

    /**
     * Whether one multiplier can do both the rebias and the scale, when {@code |scale|} is
     * small enough that {@code scale x 2^(127 - bias)} is finite, hence exact: then
     * {@code (w x 2^-(127-bias)) x (scale x 2^(127-bias))} is the same real number as
     * {@code w x scale} and rounds the same, for every code (NaN and infinite codes too). Otherwise
     * the kernel multiplies by {@code rebias}, then by the scale.
     */
    private static boolean foldable(Layout l, float scale) {
        return Math.abs(scale) < l.maxFoldableScale();
    }

    /**
     * {@code LANES} codes from {@code offset} decoded and times {@code factor}, then {@code scale}
     * unless folded. Handles every code.
     */
    private static FloatVector product(MemorySegment codes, long offset, Layout l, float factor,
                                       boolean folded, float scale) {
        IntVector x = (IntVector) ByteVector.fromMemorySegment(B, codes, offset, LE)
                .convertShape(VectorOperators.B2I, I, 0);
        IntVector bits = x.lanewise(VectorOperators.LSHL, l.shift()).and(l.fieldMask());
        if (l.fnuz()) {
            bits = bits.blend(FNUZ_NAN, x.compare(VectorOperators.EQ, (int) (byte) 0x80));
        } else {
            VectorMask<Integer> special = bits.and(0x7FFF_FFFF).compare(VectorOperators.GE, l.specialFrom());
            bits = bits.lanewise(VectorOperators.OR, 0x7F80_0000, special);
        }
        FloatVector p = bits.reinterpretAsFloats().mul(factor);
        return folded ? p : p.mul(scale);
    }

    /**
     * {@link #product} for codes known to be finite numbers, with the scale folded: the common
     * case, a third fewer instructions (the special-code fix-up is the costly part).
     */
    private static FloatVector finiteProduct(MemorySegment codes, long offset, Layout l, float factor) {
        IntVector x = (IntVector) ByteVector.fromMemorySegment(B, codes, offset, LE)
                .convertShape(VectorOperators.B2I, I, 0);
        return x.lanewise(VectorOperators.LSHL, l.shift()).and(l.fieldMask()).reinterpretAsFloats().mul(factor);
    }

    /** Whether any of the {@code STEP} codes from {@code offset} is an infinity or NaN. */
    private static boolean anySpecial(MemorySegment codes, long offset, Layout l) {
        return ByteVector.fromMemorySegment(WIDE, codes, offset, LE).and(l.specialByteMask())
                .compare(VectorOperators.EQ, l.specialByteValue()).anyTrue();
    }

    static void toF32(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                      MemorySegment dest, long destOffset, long count) {
        if (Float.isNaN(scale)) {
            Fp8Kernels.toF32(format, codes, codeOffset, scale, dest, destOffset, count);
            return;
        }
        Layout l = layout(format);
        boolean folded = foldable(l, scale);
        float factor = folded ? scale * l.rebias() : l.rebias();
        long i = 0;
        for (long bound = count - STEP; i <= bound; i += STEP) {
            long at = codeOffset + i;
            if (folded && !anySpecial(codes, at, l)) {
                for (int k = 0; k < STEP; k += LANES) {
                    finiteProduct(codes, at + k, l, factor).intoMemorySegment(dest, destOffset + 4 * (i + k), LE);
                }
            } else {
                for (int k = 0; k < STEP; k += LANES) {
                    product(codes, at + k, l, factor, folded, scale).intoMemorySegment(dest, destOffset + 4 * (i + k), LE);
                }
            }
        }
        for (long bound = count - LANES; i <= bound; i += LANES) {
            product(codes, codeOffset + i, l, factor, folded, scale).intoMemorySegment(dest, destOffset + 4 * i, LE);
        }
        Fp8Kernels.toF32(format, codes, codeOffset + i, scale, dest, destOffset + 4 * i, count - i);
    }

    static void toBf16(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                       MemorySegment dest, long destOffset, long count) {
        if (Float.isNaN(scale)) {
            Fp8Kernels.toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
            return;
        }
        Layout l = layout(format);
        boolean folded = foldable(l, scale);
        float factor = folded ? scale * l.rebias() : l.rebias();
        long i = 0;
        for (long bound = count - STEP; i <= bound; i += STEP) {
            long at = codeOffset + i;
            if (folded && !anySpecial(codes, at, l)) {
                for (int k = 0; k < STEP; k += LANES) {
                    bf16(finiteProduct(codes, at + k, l, factor).reinterpretAsInts())
                            .intoMemorySegment(dest, destOffset + 2 * (i + k), LE);
                }
            } else {
                for (int k = 0; k < STEP; k += LANES) {
                    bf16(product(codes, at + k, l, factor, folded, scale).reinterpretAsInts())
                            .intoMemorySegment(dest, destOffset + 2 * (i + k), LE);
                }
            }
        }
        for (long bound = count - LANES; i <= bound; i += LANES) {
            bf16(product(codes, codeOffset + i, l, factor, folded, scale).reinterpretAsInts())
                    .intoMemorySegment(dest, destOffset + 2 * i, LE);
        }
        Fp8Kernels.toBf16(format, codes, codeOffset + i, scale, dest, destOffset + 2 * i, count - i);
    }

    static void toF16(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                      MemorySegment dest, long destOffset, long count) {
        if (Float.isNaN(scale)) {
            Fp8Kernels.toF16(format, codes, codeOffset, scale, dest, destOffset, count);
            return;
        }
        Layout l = layout(format);
        boolean folded = foldable(l, scale);
        float factor = folded ? scale * l.rebias() : l.rebias();
        long i = 0;
        for (long bound = count - STEP; i <= bound; i += STEP) {
            long at = codeOffset + i;
            if (folded && !anySpecial(codes, at, l)) {
                for (int k = 0; k < STEP; k += LANES) {
                    f16(finiteProduct(codes, at + k, l, factor)).intoMemorySegment(dest, destOffset + 2 * (i + k), LE);
                }
            } else {
                for (int k = 0; k < STEP; k += LANES) {
                    f16(product(codes, at + k, l, factor, folded, scale)).intoMemorySegment(dest, destOffset + 2 * (i + k), LE);
                }
            }
        }
        for (long bound = count - LANES; i <= bound; i += LANES) {
            f16(product(codes, codeOffset + i, l, factor, folded, scale)).intoMemorySegment(dest, destOffset + 2 * i, LE);
        }
        Fp8Kernels.toF16(format, codes, codeOffset + i, scale, dest, destOffset + 2 * i, count - i);
    }

    /** Codes per main-loop step; block widths that are multiples of it can use {@link #row}. */
    static int step() {
        return STEP;
    }

    /**
     * Every scale times {@code 2^(127 - bias)} (see {@link #foldable}), or an empty array when
     * one of them does not fold (a NaN, an infinity or a huge scale).
     */
    static float[] foldedFactors(Fp8Format format, float[] scales) {
        Layout l = layout(format);
        float[] out = new float[scales.length];
        for (int i = 0; i < scales.length; i++) {
            if (!foldable(l, scales[i])) return new float[0];
            out[i] = scales[i] * l.rebias();
        }
        return out;
    }

    /**
     * One row segment under block scales {@code 2^blockShift} columns wide (a multiple of
     * {@link #step()}): codes {@code [codeOffset, codeOffset + count)} start at column
     * {@code col}, and column {@code c} is scaled by {@code scales[base + (c >> blockShift)]},
     * folded in {@code factors} ({@link #foldedFactors}). One loop runs the whole row, looking
     * the factor up per step, instead of one kernel call per block: entering a vector loop
     * costs about as much as a 128-element block.
     *
     * @param target 0 F32, 1 BF16, 2 F16
     */
    static void row(int target, Fp8Format format, MemorySegment codes, long codeOffset, long col, int blockShift,
                    float[] scales, float[] factors, int base, MemorySegment dest, long destOffset, long count) {
        Layout l = layout(format);
        int width = target == 0 ? 4 : 2;
        long head = Math.min(count, Math.floorMod(-col, STEP));
        if (head > 0) {
            edge(target, format, codes, codeOffset, scales[base + (int) (col >> blockShift)], dest, destOffset, head);
        }
        long i = head;
        for (long bound = count - STEP; i <= bound; i += STEP) {
            long at = codeOffset + i;
            float factor = factors[base + (int) ((col + i) >> blockShift)];
            long out = destOffset + width * i;
            if (!anySpecial(codes, at, l)) {
                for (int k = 0; k < STEP; k += LANES) {
                    store(target, finiteProduct(codes, at + k, l, factor), dest, out + width * k);
                }
            } else {
                for (int k = 0; k < STEP; k += LANES) {
                    store(target, product(codes, at + k, l, factor, true, factor), dest, out + width * k);
                }
            }
        }
        if (i < count) {
            edge(target, format, codes, codeOffset + i, scales[base + (int) ((col + i) >> blockShift)],
                    dest, destOffset + width * i, count - i);
        }
    }

    private static void store(int target, FloatVector p, MemorySegment dest, long offset) {
        switch (target) {
            case 0 -> p.intoMemorySegment(dest, offset, LE);
            case 1 -> bf16(p.reinterpretAsInts()).intoMemorySegment(dest, offset, LE);
            default -> f16(p).intoMemorySegment(dest, offset, LE);
        }
    }

    private static void edge(int target, Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                             MemorySegment dest, long destOffset, long count) {
        switch (target) {
            case 0 -> toF32(format, codes, codeOffset, scale, dest, destOffset, count);
            case 1 -> toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
            default -> toF16(format, codes, codeOffset, scale, dest, destOffset, count);
        }
    }

    /**
     * {@code Floats.f32ToBf16} lane-wise for the products these kernels make: round to
     * nearest even on the integer bits. {@code Floats} also forces a NaN's quiet bit so that a
     * NaN with low payload bits cannot round into infinity; with a non-NaN scale (NaN scales
     * take the scalar path) every NaN product is quiet with its low 16 bits 0 or 1 (an FP8
     * NaN's payload is its top 3 mantissa bits, or the FNUZ NaN's lowest bit; {@code inf x 0}
     * gives the default NaN), and for those the plain rounding already yields the same bits.
     */
    static ShortVector bf16(IntVector bits) {
        IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF)
                .lanewise(VectorOperators.LSHR, 16);
        return (ShortVector) rounded.convertShape(VectorOperators.I2S, S, 0);
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
