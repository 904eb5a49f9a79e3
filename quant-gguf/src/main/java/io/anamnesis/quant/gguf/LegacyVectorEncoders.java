package io.anamnesis.quant.gguf;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import static io.anamnesis.quant.gguf.GgmlMath.putFp16;
import static io.anamnesis.quant.gguf.GgmlMath.putInt;

/**
 * Vector API versions of the reference paths of Q8_0, Q4_0, Q4_1, Q5_0 and Q5_1 (no
 * importance matrix; with one the scalar {@link LegacyEncoders} run). Each lane computes the
 * scalar reference's float products and sums in the same order, so the bytes are the same;
 * what differs is only how the block's extremes are found, and that is exact for finite,
 * nonzero extremes. A block whose extreme is zero, infinite or NaN, or whose 1/d is not
 * finite, goes through the scalar reference, which reproduces C's conversions of such
 * values (signed zeros picked by position, x86's INT_MIN for NaN/inf).
 *
 * <p>Only loaded when the {@code jdk.incubator.vector} module is present (see
 * {@link GgufEncoders}).
 */
final class LegacyVectorEncoders {
    private LegacyVectorEncoders() {
    }

    private static final VectorSpecies<Float> F = GgufVectorKernels.F;
    private static final VectorSpecies<Integer> I = F.vectorShape().withLanes(int.class);
    private static final VectorSpecies<Byte> B = GgufVectorKernels.B;
    private static final int L = F.length();
    private static final int QK = 32;
    private static final int SIGN = 0x8000_0000;
    private static final int MAGNITUDE = 0x7FFF_FFFF;
    private static final int BELOW_HALF_BITS = Float.floatToRawIntBits(Math.nextDown(0.5f));

    private static boolean finite(float v) {
        return Math.abs(v) < Float.POSITIVE_INFINITY;
    }

    /**
     * The value of largest magnitude, the first of them on a tie (what ggml's strict
     * {@code amax < |v|} scan keeps); NaN when the block holds a NaN. From the block's maximum
     * and minimum, scanning only when they tie in magnitude. The extremes are taken on the
     * bits, turned into integers that order as the floats do (-0 below +0, a NaN beyond the
     * infinity of its sign, so any NaN is an extreme).
     */
    private static float signedExtreme(float[] src, int s) {
        IntVector hiV = orderedKeys(FloatVector.fromArray(F, src, s));
        IntVector loV = hiV;
        for (int k = L; k < QK; k += L) {
            IntVector v = orderedKeys(FloatVector.fromArray(F, src, s + k));
            hiV = hiV.max(v);
            loV = loV.min(v);
        }
        float hi = fromOrderedKey(hiV.reduceLanes(VectorOperators.MAX));
        float lo = fromOrderedKey(loV.reduceLanes(VectorOperators.MIN));
        if (hi > -lo) return hi;
        if (-lo > hi) return lo;
        return hi != hi || lo != lo ? Float.NaN : firstWithMagnitude(src, s, hi);
    }

    /** Float bits to an int of the same order: a negative float's magnitude bits are flipped. */
    private static IntVector orderedKeys(FloatVector v) {
        IntVector bits = v.reinterpretAsInts();
        return bits.lanewise(VectorOperators.XOR, bits.lanewise(VectorOperators.ASHR, 31).and(MAGNITUDE));
    }

    private static float fromOrderedKey(int key) {
        return Float.intBitsToFloat(key ^ (key >> 31 & MAGNITUDE));
    }

    /** The first value whose magnitude is amax: what ggml's strict {@code amax < |v|} scan keeps. */
    private static float firstWithMagnitude(float[] src, int s, float amax) {
        for (int k = 0; k < QK; k += L) {
            VectorMask<Float> hit = FloatVector.fromArray(F, src, s + k).abs().eq(amax);
            if (hit.anyTrue()) return src[s + k + hit.firstTrue()];
        }
        throw new AssertionError("the maximum is in the block");
    }

    private static void storeBytes(IntVector v, byte[] dst, int at) {
        ((ByteVector) v.convertShape(VectorOperators.I2B, B, 0)).intoArray(dst, at);
    }

    private static IntVector truncate(FloatVector v) {
        return (IntVector) v.convert(VectorOperators.F2I, 0);
    }

    // ---------------------------------------------------------------- Q8_0

    static void q8_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / QK);
        for (int b = 0; b < blocks; b++, s += QK, o += 34) {
            float amax = GgufVectorKernels.absMax(src, s, QK);
            float d = amax / 127;
            float id = d != 0 ? 1.0f / d : 0.0f;
            if (!finite(amax) || !finite(id)) {
                LegacyEncoders.q8_0Reference(src, s, dst, o);
                continue;
            }
            putFp16(dst, o, d);
            for (int k = 0; k < QK; k += L) {
                // roundf, as GgmlMath.roundHalfAwaySmall: add the float just below a half with the
                // value's sign, then truncate (exact for every |q| <= 129; here |q| <= 127 plus a rounding)
                FloatVector q = FloatVector.fromArray(F, src, s + k).mul(id);
                IntVector bits = q.reinterpretAsInts();
                FloatVector belowHalf = bits.and(SIGN).or(BELOW_HALF_BITS).reinterpretAsFloats();
                storeBytes(truncate(q.add(belowHalf)), dst, o + 2 + k);
            }
        }
    }

    // ---------------------------------------------------------------- Q4_0 / Q5_0

    static void q4_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance != null) {
            weighted(GgufBlockType.Q4_0, src, s, dst, o, rows, perRow, importance);
            return;
        }
        int blocks = rows * (perRow / QK);
        for (int b = 0; b < blocks; b++, s += QK, o += 18) {
            float max = signedExtreme(src, s);
            if (!(max != 0) || !finite(max)) {
                LegacyEncoders.q4_0RefBlock(src, s, dst, o);
                continue;
            }
            float d = max / -8;
            float id = d != 0 ? 1.0f / d : 0.0f;
            if (!finite(id)) {
                LegacyEncoders.q4_0RefBlock(src, s, dst, o);
                continue;
            }
            putFp16(dst, o, d);
            // |x/d| <= 8, so x/d + 8.5 truncates to 0..16 and only the clamp to 15 remains.
            for (int k = 0; k < 16; k += L) {
                IntVector lo = truncate(FloatVector.fromArray(F, src, s + k).mul(id).add(8.5f)).min(15);
                IntVector hi = truncate(FloatVector.fromArray(F, src, s + 16 + k).mul(id).add(8.5f)).min(15);
                storeBytes(lo.or(hi.lanewise(VectorOperators.LSHL, 4)), dst, o + 2 + k);
            }
        }
    }

    static void q5_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance != null) {
            weighted(GgufBlockType.Q5_0, src, s, dst, o, rows, perRow, importance);
            return;
        }
        int[] levels = new int[QK];
        int blocks = rows * (perRow / QK);
        for (int b = 0; b < blocks; b++, s += QK, o += 22) {
            float max = signedExtreme(src, s);
            if (!(max != 0) || !finite(max)) {
                LegacyEncoders.q5_0RefBlock(src, s, dst, o, levels);
                continue;
            }
            float d = max / -16;
            float id = d != 0 ? 1.0f / d : 0.0f;
            if (!finite(id)) {
                LegacyEncoders.q5_0RefBlock(src, s, dst, o, levels);
                continue;
            }
            putFp16(dst, o, d);
            int qh = 0;
            for (int k = 0; k < 16; k += L) {
                IntVector lo = truncate(FloatVector.fromArray(F, src, s + k).mul(id).add(16.5f)).min(31);
                IntVector hi = truncate(FloatVector.fromArray(F, src, s + 16 + k).mul(id).add(16.5f)).min(31);
                qh |= fifthBits(lo) << k | fifthBits(hi) << (16 + k);
                storeBytes(lo.and(0xF).or(hi.and(0xF).lanewise(VectorOperators.LSHL, 4)), dst, o + 6 + k);
            }
            putInt(dst, o + 2, qh);
        }
    }

    /** Bit 4 of each lane's level, lane i at bit i. */
    private static int fifthBits(IntVector levels) {
        return (int) levels.and(0x10).compare(VectorOperators.NE, 0).toLong();
    }

    // ---------------------------------------------------------------- with an importance matrix

    /**
     * quantize_row_q4_0_impl ... q5_1_impl: per row sigma2 = mean x^2, per block the weights
     * qw sqrt(sigma2 + x^2) and ggml's fit (make_qx_quants for Q4_0/Q5_0, make_qkx3_quants
     * for Q4_1/Q5_1), {@link LaneSearch#L} blocks of the row at a time.
     */
    private static void weighted(GgufBlockType type, float[] src, int s, byte[] dst, int o, int rows, int perRow,
                                 float[] importance) {
        boolean affine = type == GgufBlockType.Q4_1 || type == GgufBlockType.Q5_1;
        int nmax = switch (type) {
            case Q4_0 -> 8;
            case Q5_0 -> 16;
            case Q4_1 -> 15;
            default -> 31;
        };
        LaneSearch.Lanes t = new LaneSearch.Lanes();
        int[] levels = new int[QK];
        float[] sigma2 = new float[L];
        int blocksPerRow = perRow / QK;
        for (int r = 0; r < rows; r++, s += perRow, o += blocksPerRow * type.blockBytes()) {
            java.util.Arrays.fill(sigma2, LegacyEncoders.meanSquare(src, s, perRow));
            for (int g = 0; g < blocksPerRow; g += L) {
                int lanes = Math.min(L, blocksPerRow - g);
                LaneSearch.load(src, s + g * QK, QK, lanes, t.x);
                LaneSearch.load(importance, g * QK, QK, lanes, t.w);
                LaneSearch.importanceWeights(QK, t, sigma2);
                if (affine) LaneSearch.affine(QK, nmax, t, -0.9f, 0.05f, 36, false);
                else LaneSearch.symmetric(QK, nmax, t, false);
                for (int lane = 0; lane < lanes; lane++) {
                    for (int i = 0; i < QK; i++) levels[i] = (int) t.levels[i * L + lane];
                    int at = o + (g + lane) * type.blockBytes();
                    putFp16(dst, at, t.scale[lane]);
                    switch (type) {
                        case Q4_0 -> packNibbles(levels, dst, at + 2);
                        case Q5_0 -> LegacyEncoders.packFiveBits(levels, dst, at + 2);
                        case Q4_1 -> {
                            putFp16(dst, at + 2, -t.theMin[lane]);
                            packNibbles(levels, dst, at + 4);
                        }
                        default -> {
                            putFp16(dst, at + 2, -t.theMin[lane]);
                            LegacyEncoders.packFiveBits(levels, dst, at + 4);
                        }
                    }
                }
            }
        }
    }

    private static void packNibbles(int[] levels, byte[] dst, int at) {
        for (int j = 0; j < 16; j++) dst[at + j] = (byte) (levels[j] | levels[j + 16] << 4);
    }

    // ---------------------------------------------------------------- Q4_1 / Q5_1

    static void q4_1(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance != null) {
            weighted(GgufBlockType.Q4_1, src, s, dst, o, rows, perRow, importance);
            return;
        }
        int blocks = rows * (perRow / QK);
        for (int b = 0; b < blocks; b++, s += QK, o += 20) {
            float min = blockMin(src, s);
            float max = blockMax(src, s);
            float d = (max - min) / 15;
            if (!plainRange(min, max, d)) {
                LegacyEncoders.q4_1RefBlock(src, s, dst, o);
                continue;
            }
            float id = 1.0f / d;
            putFp16(dst, o, d);
            putFp16(dst, o + 2, min);
            // (x - min)/d lies in [0, 15], so adding a half and truncating gives 0..15.
            for (int k = 0; k < 16; k += L) {
                IntVector lo = truncate(FloatVector.fromArray(F, src, s + k).sub(min).mul(id).add(0.5f)).min(15);
                IntVector hi = truncate(FloatVector.fromArray(F, src, s + 16 + k).sub(min).mul(id).add(0.5f)).min(15);
                storeBytes(lo.or(hi.lanewise(VectorOperators.LSHL, 4)), dst, o + 4 + k);
            }
        }
    }

    static void q5_1(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance != null) {
            weighted(GgufBlockType.Q5_1, src, s, dst, o, rows, perRow, importance);
            return;
        }
        int[] levels = new int[QK];
        int blocks = rows * (perRow / QK);
        for (int b = 0; b < blocks; b++, s += QK, o += 24) {
            float min = blockMin(src, s);
            float max = blockMax(src, s);
            float d = (max - min) / 31;
            if (!plainRange(min, max, d)) {
                LegacyEncoders.q5_1RefBlock(src, s, dst, o, levels);
                continue;
            }
            float id = 1.0f / d;
            putFp16(dst, o, d);
            putFp16(dst, o + 2, min);
            int qh = 0;
            for (int k = 0; k < 16; k += L) {
                IntVector lo = truncate(FloatVector.fromArray(F, src, s + k).sub(min).mul(id).add(0.5f)).and(0xFF);
                IntVector hi = truncate(FloatVector.fromArray(F, src, s + 16 + k).sub(min).mul(id).add(0.5f)).and(0xFF);
                qh |= fifthBits(lo) << k | fifthBits(hi) << (16 + k);
                storeBytes(lo.and(0xF).or(hi.and(0xF).lanewise(VectorOperators.LSHL, 4)), dst, o + 8 + k);
            }
            putInt(dst, o + 4, qh);
        }
    }

    /** The block's minimum by Java's min (-0 below +0, NaN propagated; see plainRange). */
    private static float blockMin(float[] src, int s) {
        FloatVector m = FloatVector.fromArray(F, src, s);
        for (int k = L; k < QK; k += L) m = m.min(FloatVector.fromArray(F, src, s + k));
        return m.reduceLanes(VectorOperators.MIN);
    }

    private static float blockMax(float[] src, int s) {
        FloatVector m = FloatVector.fromArray(F, src, s);
        for (int k = L; k < QK; k += L) m = m.max(FloatVector.fromArray(F, src, s + k));
        return m.reduceLanes(VectorOperators.MAX);
    }

    /**
     * Whether the vector path gives ggml's bytes: finite nonzero extremes (ggml's sequential
     * scan keeps the first of +0/-0, Java's min/max pick by sign) and a finite nonzero d
     * whose reciprocal is finite.
     */
    private static boolean plainRange(float min, float max, float d) {
        return min != 0 && max != 0 && finite(min) && finite(max) && d != 0 && finite(d) && finite(1.0f / d);
    }
}
