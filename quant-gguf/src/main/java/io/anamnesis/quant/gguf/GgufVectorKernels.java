package io.anamnesis.quant.gguf;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * Vector API versions of the hottest decoders, fused with the output store: blocks are read
 * straight from the tensor's segment and written as BF16 or F32 without an F32 staging
 * buffer. Each lane performs exactly the scalar reference's operations in the same order
 * (one multiply, then one subtract or add; never {@code fma}), so results are
 * bit-identical with {@link GgufKernels}; the tests compare both on random blocks.
 *
 * <p>16-lane shapes on AVX-512, 8-lane on AVX2 (the loops step by {@link #L}). Only loaded
 * when the {@code jdk.incubator.vector} module is present (see {@link GgufKernel}).
 */
final class GgufVectorKernels {
    private GgufVectorKernels() {
    }

    /** 512-bit shapes where the CPU has them (16 lanes), else 256-bit (8 lanes). */
    static final boolean WIDE = FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 512;
    static final VectorSpecies<Float> F = WIDE ? FloatVector.SPECIES_512 : FloatVector.SPECIES_256;
    static final VectorSpecies<Byte> B = WIDE ? ByteVector.SPECIES_128 : ByteVector.SPECIES_64;
    static final VectorSpecies<Short> S = WIDE ? ShortVector.SPECIES_256 : ShortVector.SPECIES_128;
    /** Lanes per vector: 8 or 16, both dividing every run of equally scaled elements (16, 32). */
    static final int L = F.length();
    static final ByteOrder LE = ByteOrder.LITTLE_ENDIAN;

    /**
     * max |x| over {@code src[s, s + n)} ({@code n} a multiple of {@link #L}); NaN when they
     * hold one. Taken on the bits: the magnitudes' bit patterns order as the floats do, with
     * every NaN above infinity, and an integer max is one instruction where Java's float max
     * (NaN and signed-zero rules) is several. The encoders' block scales start here.
     */
    static float absMax(float[] src, int s, int n) {
        IntVector m = FloatVector.fromArray(F, src, s).reinterpretAsInts().and(0x7FFF_FFFF);
        for (int k = L; k < n; k += L) m = m.max(FloatVector.fromArray(F, src, s + k).reinterpretAsInts().and(0x7FFF_FFFF));
        return Float.intBitsToFloat(m.reduceLanes(VectorOperators.MAX));
    }

    /** True when this JVM runs 256-bit float vectors in hardware. */
    static boolean usable() {
        return FloatVector.SPECIES_PREFERRED.vectorBitSize() >= 256;
    }

    /** A fused decoder for that type, or null when only the scalar one exists. */
    static GgufKernel.Fused fused(GgufBlockType type) {
        return switch (type) {
            case Q8_0 -> GgufVectorKernels::q8_0;
            case Q4_0 -> GgufVectorKernels::q4_0;
            case Q4_K -> GgufVectorKernels::q4_k;
            case Q5_K -> GgufVectorKernels::q5_k;
            case Q6_K -> GgufVectorKernels::q6_k;
            case IQ2_XXS -> GgufVectorKernels::iq2_xxs;
            case IQ2_XS -> GgufVectorKernels::iq2_xs;
            case IQ2_S -> GgufVectorKernels::iq2_s;
            case IQ1_S -> GgufVectorKernels::iq1_s;
            case IQ1_M -> GgufVectorKernels::iq1_m;
            default -> null;
        };
    }

    /**
     * Stores {@link #L} values at element {@code e} of {@code dest}: F32 as is, or BF16 by
     * round-to-nearest-even with NaN kept quiet (the rule of {@code Floats.f32ToBf16}).
     */
    static void store(FloatVector v, MemorySegment dest, long e, boolean bf16) {
        if (!bf16) {
            v.intoMemorySegment(dest, e * 4, LE);
            return;
        }
        IntVector bits = v.reinterpretAsInts();
        IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
        IntVector rounded = bits.add(0x7FFF).add(high.and(1)).lanewise(VectorOperators.LSHR, 16);
        VectorMask<Integer> nan = bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000);
        IntVector r = rounded.blend(high.or(0x0040), nan);
        r.convertShape(VectorOperators.I2S, S, 0).intoMemorySegment(dest, e * 2, LE);
    }

    /** F32 values of {@code values[0, len)} to {@code dest} from element {@code e}. */
    static void narrow(float[] values, int len, MemorySegment dest, long e, boolean bf16) {
        int i = 0;
        for (int n = F.loopBound(len); i < n; i += L) store(FloatVector.fromArray(F, values, i), dest, e + i, bf16);
        for (; i < len; i++) {
            if (bf16) {
                dest.set(io.anamnesis.api.numeric.LittleEndian.I16, (e + i) * 2,
                        io.anamnesis.api.numeric.Floats.f32ToBf16(Float.floatToRawIntBits(values[i])));
            } else {
                dest.set(io.anamnesis.api.numeric.LittleEndian.F32, (e + i) * 4, values[i]);
            }
        }
    }

    private static float f16(MemorySegment src, long at) {
        return Float.float16ToFloat(src.get(io.anamnesis.api.numeric.LittleEndian.I16, at));
    }

    private static FloatVector toFloats(ByteVector q) {
        return (FloatVector) q.convertShape(VectorOperators.B2F, F, 0);
    }

    private static ByteVector bytes(MemorySegment src, long at) {
        return ByteVector.fromMemorySegment(B, src, at, LE);
    }

    private static ByteVector low(ByteVector b) {
        return b.and((byte) 0x0F);
    }

    private static ByteVector high(ByteVector b) {
        return b.lanewise(VectorOperators.ASHR, 4).and((byte) 0x0F);
    }

    static void q8_0(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        for (long i = 0; i < blocks; i++, s += 34, e += 32) {
            float d = f16(src, s);
            for (int k = 0; k < 32; k += L) store(toFloats(bytes(src, s + 2 + k)).mul(d), dest, e + k, bf16);
        }
    }

    static void q4_0(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        for (long i = 0; i < blocks; i++, s += 18, e += 32) {
            float d = f16(src, s);
            for (int k = 0; k < 16; k += L) {
                ByteVector q = bytes(src, s + 2 + k);
                store(toFloats(low(q).sub((byte) 8)).mul(d), dest, e + k, bf16);
                store(toFloats(high(q).sub((byte) 8)).mul(d), dest, e + 16 + k, bf16);
            }
        }
    }

    static void q4_k(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        byte[] sc = new byte[12];
        float[] d1 = new float[4];
        float[] m1 = new float[4];
        float[] d2 = new float[4];
        float[] m2 = new float[4];
        for (long i = 0; i < blocks; i++, s += 144, e += 256) {
            float d = f16(src, s);
            float min = f16(src, s + 2);
            MemorySegment.copy(src, java.lang.foreign.ValueLayout.JAVA_BYTE, s + 4, sc, 0, 12);
            for (int c = 0; c < 4; c++) {
                d1[c] = d * GgufKernels.scaleMinK4(sc, 0, 2 * c, 0);
                m1[c] = min * GgufKernels.scaleMinK4(sc, 0, 2 * c, 1);
                d2[c] = d * GgufKernels.scaleMinK4(sc, 0, 2 * c + 1, 0);
                m2[c] = min * GgufKernels.scaleMinK4(sc, 0, 2 * c + 1, 1);
            }
            for (int c = 0; c < 4; c++) {
                long q = s + 16 + 32 * c;
                long o = e + 64 * c;
                for (int k = 0; k < 32; k += L) {
                    ByteVector b = bytes(src, q + k);
                    store(toFloats(low(b)).mul(d1[c]).sub(m1[c]), dest, o + k, bf16);
                    store(toFloats(high(b)).mul(d2[c]).sub(m2[c]), dest, o + 32 + k, bf16);
                }
            }
        }
    }

    static void q5_k(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        byte[] sc = new byte[12];
        float[] d1 = new float[4];
        float[] m1 = new float[4];
        float[] d2 = new float[4];
        float[] m2 = new float[4];
        for (long i = 0; i < blocks; i++, s += 176, e += 256) {
            float d = f16(src, s);
            float min = f16(src, s + 2);
            MemorySegment.copy(src, java.lang.foreign.ValueLayout.JAVA_BYTE, s + 4, sc, 0, 12);
            for (int c = 0; c < 4; c++) {
                d1[c] = d * GgufKernels.scaleMinK4(sc, 0, 2 * c, 0);
                m1[c] = min * GgufKernels.scaleMinK4(sc, 0, 2 * c, 1);
                d2[c] = d * GgufKernels.scaleMinK4(sc, 0, 2 * c + 1, 0);
                m2[c] = min * GgufKernels.scaleMinK4(sc, 0, 2 * c + 1, 1);
            }
            // qh[l] holds bit 4 of element l of every 64-element chunk c at bits 2c and 2c+1:
            // walk the chunks shifting qh right by 2 (constant shifts only).
            for (int k = 0; k < 32; k += L) {
                ByteVector h = bytes(src, s + 16 + k);
                for (int c = 0; c < 4; c++) {
                    ByteVector b = bytes(src, s + 48 + 32 * c + k);
                    ByteVector h1 = h.and((byte) 1).lanewise(VectorOperators.LSHL, 4);
                    ByteVector h2 = h.and((byte) 2).lanewise(VectorOperators.LSHL, 3);
                    long o = e + 64 * c + k;
                    store(toFloats(low(b).or(h1)).mul(d1[c]).sub(m1[c]), dest, o, bf16);
                    store(toFloats(high(b).or(h2)).mul(d2[c]).sub(m2[c]), dest, o + 32, bf16);
                    h = h.lanewise(VectorOperators.ASHR, 2);
                }
            }
        }
    }

    static void q6_k(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        float[] ds = new float[16];
        for (long i = 0; i < blocks; i++, s += 210) {
            float d = f16(src, s + 208);
            for (int j = 0; j < 16; j++) ds[j] = d * src.get(java.lang.foreign.ValueLayout.JAVA_BYTE, s + 192 + j);
            for (int n = 0; n < 2; n++, e += 128) {
                long ql = s + 64 * n;
                long qh = s + 128 + 32 * n;
                for (int k = 0; k < 32; k += L) {
                    int is = 8 * n + (k >> 4);
                    ByteVector h = bytes(src, qh + k);
                    // half 0: ql[l] with qh bits 0-1 (low nibble) and 4-5 (high nibble);
                    // half 1: ql[l+32] with bits 2-3 and 6-7, reached by shifting qh right by 2.
                    for (int half = 0; half < 2; half++) {
                        ByteVector a = bytes(src, ql + 32 * half + k);
                        ByteVector qLow = low(a).or(h.and((byte) 3).lanewise(VectorOperators.LSHL, 4)).sub((byte) 32);
                        ByteVector qHigh = high(a).or(h.and((byte) 0x30)).sub((byte) 32);
                        store(toFloats(qLow).mul(ds[is + 2 * half]), dest, e + 32 * half + k, bf16);
                        store(toFloats(qHigh).mul(ds[is + 4 + 2 * half]), dest, e + 64 + 32 * half + k, bf16);
                        h = h.lanewise(VectorOperators.ASHR, 2);
                    }
                }
            }
        }
    }

    // ------------------------------------------------ i-quants: one 8-value grid entry per vector

    static final VectorSpecies<Float> F8 = FloatVector.SPECIES_256;
    static final VectorSpecies<Short> S8 = ShortVector.SPECIES_128;

    /** {@link #store} for 8 lanes. */
    static void store8(FloatVector v, MemorySegment dest, long e, boolean bf16) {
        if (!bf16) {
            v.intoMemorySegment(dest, e * 4, LE);
            return;
        }
        IntVector bits = v.reinterpretAsInts();
        IntVector high = bits.lanewise(VectorOperators.LSHR, 16);
        IntVector rounded = bits.add(0x7FFF).add(high.and(1)).lanewise(VectorOperators.LSHR, 16);
        VectorMask<Integer> nan = bits.and(0x7FFF_FFFF).compare(VectorOperators.GT, 0x7F80_0000);
        rounded.blend(high.or(0x0040), nan).convertShape(VectorOperators.I2S, S8, 0).intoMemorySegment(dest, e * 2, LE);
    }

    private static int u8(MemorySegment src, long at) {
        return src.get(java.lang.foreign.ValueLayout.JAVA_BYTE, at) & 0xFF;
    }

    private static int u16(MemorySegment src, long at) {
        return src.get(io.anamnesis.api.numeric.LittleEndian.U16, at);
    }

    /** (db * grid) * sign, as ggml: {@code db * grid[j] * (signs & mask ? -1.f : 1.f)}. */
    private static FloatVector gridTimesSign(float[] grid, int g, int signByte, float db) {
        return FloatVector.fromArray(F8, grid, g).mul(db).mul(FloatVector.fromArray(F8, GgufKernels.SIGNS, 8 * signByte));
    }

    static void iq2_xxs(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        for (long i = 0; i < blocks; i++, s += 66) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                long a = s + 2 + 8 * ib;
                int aux1 = src.get(io.anamnesis.api.numeric.LittleEndian.I32, a + 4);
                float db = d * (0.5f + (aux1 >>> 28)) * 0.25f;
                for (int l = 0; l < 4; l++, e += 8) {
                    int signs = GgufTables.KSIGNS_IQ2XS[(aux1 >>> (7 * l)) & 127];
                    store8(gridTimesSign(GgufKernels.IQ2XXS_F, 8 * u8(src, a + l), signs, db), dest, e, bf16);
                }
            }
        }
    }

    static void iq2_xs(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        for (long i = 0; i < blocks; i++, s += 74) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int sc = u8(src, s + 66 + ib);
                float db0 = d * (0.5f + (sc & 0xF)) * 0.25f;
                float db1 = d * (0.5f + (sc >> 4)) * 0.25f;
                for (int l = 0; l < 4; l++, e += 8) {
                    int q = u16(src, s + 2 + 2 * (4 * ib + l));
                    store8(gridTimesSign(GgufKernels.IQ2XS_F, 8 * (q & 511), GgufTables.KSIGNS_IQ2XS[q >> 9],
                            l < 2 ? db0 : db1), dest, e, bf16);
                }
            }
        }
    }

    static void iq2_s(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        for (long i = 0; i < blocks; i++, s += 82) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int sc = u8(src, s + 74 + ib);
                float db0 = d * (0.5f + (sc & 0xF)) * 0.25f;
                float db1 = d * (0.5f + (sc >> 4)) * 0.25f;
                int qh = u8(src, s + 66 + ib);
                for (int l = 0; l < 4; l++, e += 8) {
                    int g = 8 * (u8(src, s + 2 + 4 * ib + l) | ((qh << (8 - 2 * l)) & 0x300));
                    store8(gridTimesSign(GgufKernels.IQ2S_F, g, u8(src, s + 34 + 4 * ib + l),
                            l < 2 ? db0 : db1), dest, e, bf16);
                }
            }
        }
    }

    static void iq1_s(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        for (long i = 0; i < blocks; i++, s += 50) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int qh = u16(src, s + 34 + 2 * ib);
                float dl = d * (2 * ((qh >> 12) & 7) + 1);
                float delta = (qh & 0x8000) != 0 ? -GgufKernels.IQ1_DELTA : GgufKernels.IQ1_DELTA;
                for (int l = 0; l < 4; l++, e += 8) {
                    int g = 8 * (u8(src, s + 2 + 4 * ib + l) | (((qh >> (3 * l)) & 7) << 8));
                    // dl * (grid + delta)
                    store8(FloatVector.fromArray(F8, GgufKernels.IQ1S_F, g).add(delta).mul(dl), dest, e, bf16);
                }
            }
        }
    }

    static void iq1_m(MemorySegment src, long s, MemorySegment dest, long e, long blocks, boolean bf16) {
        int[] sc = new int[4];
        for (long i = 0; i < blocks; i++, s += 56) {
            for (int k = 0; k < 4; k++) sc[k] = u16(src, s + 48 + 2 * k);
            int scale = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000);
            float d = Float.float16ToFloat((short) scale);
            for (int ib = 0; ib < 8; ib++) {
                int w = sc[ib / 2];
                int shift = 6 * (ib % 2);
                float dl1 = d * (2 * ((w >> shift) & 7) + 1);
                float dl2 = d * (2 * ((w >> (shift + 3)) & 7) + 1);
                int qh0 = u8(src, s + 32 + 2 * ib);
                int qh1 = u8(src, s + 32 + 2 * ib + 1);
                long qs = s + 4 * ib;
                // groups 0, 1 take qh0's low and high nibble (index bits 8-10, delta sign 0x08),
                // groups 2, 3 qh1's; groups 0, 1 use dl1 and 2, 3 dl2.
                iq1Group(u8(src, qs) | ((qh0 << 8) & 0x700), (qh0 & 0x08) != 0, dl1, dest, e, bf16);
                iq1Group(u8(src, qs + 1) | ((qh0 << 4) & 0x700), (qh0 & 0x80) != 0, dl1, dest, e + 8, bf16);
                iq1Group(u8(src, qs + 2) | ((qh1 << 8) & 0x700), (qh1 & 0x08) != 0, dl2, dest, e + 16, bf16);
                iq1Group(u8(src, qs + 3) | ((qh1 << 4) & 0x700), (qh1 & 0x80) != 0, dl2, dest, e + 24, bf16);
                e += 32;
            }
        }
    }

    /** dl * (grid + delta) for one IQ1 grid entry. */
    private static void iq1Group(int idx, boolean negativeDelta, float dl, MemorySegment dest, long e, boolean bf16) {
        float delta = negativeDelta ? -GgufKernels.IQ1_DELTA : GgufKernels.IQ1_DELTA;
        store8(FloatVector.fromArray(F8, GgufKernels.IQ1S_F, 8 * idx).add(delta).mul(dl), dest, e, bf16);
    }
}
