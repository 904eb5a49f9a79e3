package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.quant.fp8.Fp8Kernels.Impl;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

class Fp8KernelsTest {
    /** Scales that reach every corner: rounding, overflow, underflow to subnormal and zero, infinities, NaNs. */
    static final int[] SCALE_BITS = {
            0x3F80_0000,            // 1
            0x3F00_0000,            // 0.5
            0xC050_0000,            // -3.25
            0x3F80_0001,            // 1 + 2^-23: every product rounds
            0x3DCC_CCCD,            // 0.1
            0x3B80_8081,            // a typical block scale (BF16-ish low bits set)
            0x0000_0001,            // smallest subnormal: most products underflow to zero
            0x0080_0000,            // smallest normal: products go subnormal
            0x7149_F2CA,            // 1e30: E4M3 448 x this overflows to infinity
            0x7F7F_FFFF,            // largest finite
            0x0000_0000,            // +0
            0x8000_0000,            // -0
            0x7F80_0000,            // +inf (0 x inf is NaN)
            0xFF80_0000,            // -inf
            0x7FC0_0000,            // quiet NaN
            0x7F80_0001,            // signalling NaN with a low payload
            0xFFC1_2345,            // negative quiet NaN with a payload
            0x3800_0000,            // 2^-15: F16 subnormal range
            0x3300_0000,            // 2^-25: F16 ties to zero
            0x437F_FFFF,            // just under 256: the vector kernel folds 2^120 into the scale (E4M3)
            0x4380_0000,            // 256: it multiplies twice
            0x477F_FFFF,            // just under 65536: the same edge for E5M2
            0x4780_0000,            // 65536
    };

    static final DType[] TARGETS = {DType.F32, DType.BF16, DType.F16};

    private static MemorySegment allCodes(Arena arena, int offset, int repeats) {
        MemorySegment s = arena.allocate(offset + 256L * repeats);
        for (int i = 0; i < 256 * repeats; i++) s.set(ValueLayout.JAVA_BYTE, offset + i, (byte) (i * 7 + i / 256));
        return s;
    }

    @Test
    void vectorModuleIsResolvedInThisModulesTests() {
        // The pom adds --add-modules jdk.incubator.vector; without it the comparisons below would test nothing.
        assertThat(Fp8Kernels.vectorAvailable()).isTrue();
    }

    /**
     * Until the race (KernelRaceTest) has a winner the lookup kernel runs, never the plain
     * scalar one; whether and when the vector kernel wins is a matter of this machine's speed
     * and load, which a unit test must not assert (it is measured in docs/benchmarks.md).
     */
    @Test
    void theRaceChoosesBetweenTheLookupAndTheVectorKernel() {
        assertThat(Fp8Kernels.best()).isIn(Impl.TABLE, Impl.VECTOR);
    }

    @Test
    void tableVectorAndScalarAgreeBitForBitOnEveryCodeAndScale() {
        try (Arena arena = Arena.ofConfined()) {
            // 3 bytes of offset and 3 x 256 + 5 codes: unaligned, and the vector loop leaves a tail
            int offset = 3;
            MemorySegment codes = allCodes(arena, offset, 4);
            long count = 3 * 256 + 5;
            for (Fp8Format f : Fp8Format.values()) {
                for (DType t : TARGETS) {
                    int w = Fp8Kernels.outputBytes(t);
                    for (int sb : SCALE_BITS) {
                        float scale = Float.intBitsToFloat(sb);
                        MemorySegment scalar = arena.allocate(count * w + 2);
                        Fp8Kernels.dequantize(Impl.SCALAR, f, t, codes, offset, scale, scalar, 2, count);
                        for (Impl other : new Impl[]{Impl.TABLE, Impl.VECTOR}) {
                            MemorySegment vector = arena.allocate(count * w + 2);
                            Fp8Kernels.dequantize(other, f, t, codes, offset, scale, vector, 2, count);
                            long mismatch = scalar.mismatch(vector);
                            if (mismatch >= 0) {
                                fail("%s %s -> %s, scale 0x%08x: byte %d differs (element %d, code 0x%02x)", other, f, t, sb,
                                        mismatch, (mismatch - 2) / w,
                                        codes.get(ValueLayout.JAVA_BYTE, offset + (mismatch - 2) / w) & 0xFF);
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void gridTableAndVectorMatchScalarForEveryLayoutAndChunk() {
        // Mostly finite codes (the vector fast path) with a rare infinity or NaN (its fix-up path).
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        int rows = 40, cols = 328;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codes = arena.allocate((long) rows * cols);
            for (long i = 0; i < codes.byteSize(); i++) {
                int c = random.nextInt(1000) == 0 ? 0x7F | (random.nextInt(2) << 7) | random.nextInt(4) : random.nextInt(256);
                codes.set(ValueLayout.JAVA_BYTE, i, (byte) c);
            }
            // {blockRows, blockCols}: per-tensor, per-channel, 128 and 64 blocks (one loop per row),
            // 96 (not a power of two) and 512 (wider than the row): one kernel call per block
            long[][] layouts = {{Long.MAX_VALUE, Long.MAX_VALUE}, {1, cols}, {16, 128}, {3, 64}, {8, 96}, {2, 512}};
            float[][] scaleSets = {{0.75f}, null, null, null, null, null};
            for (int li = 0; li < layouts.length; li++) {
                long br = layouts[li][0], bc = layouts[li][1];
                int n = scaleSets[li] != null ? 1
                        : (int) (((rows + br - 1) / br) * ((cols + bc - 1) / bc));
                for (boolean hugeScale : new boolean[]{false, true}) {
                    float[] scales = new float[n];
                    for (int i = 0; i < n; i++) scales[i] = (float) (random.nextDouble() * 0.01 + 1e-6) * (random.nextBoolean() ? 1 : -1);
                    if (n == 1 && !hugeScale) scales[0] = scaleSets[li] != null ? scaleSets[li][0] : scales[0];
                    if (hugeScale) scales[n / 2] = 1e6f;   // one scale that cannot fold: the whole grid takes the per-block path
                    for (Fp8Format f : Fp8Format.values()) {
                        for (DType t : TARGETS) {
                            int w = Fp8Kernels.outputBytes(t);
                            long total = (long) rows * cols;
                            long[][] ranges = {{0, total}, {5, 1000}, {cols - 3, 2 * cols + 70}, {total - 77, 77}};
                            for (long[] range : ranges) {
                                MemorySegment a = arena.allocate(range[1] * w);
                                Fp8Kernels.dequantizeGrid(Impl.SCALAR, f, t, codes, cols, scales, br, bc, range[0], range[1], a);
                                for (Impl other : new Impl[]{Impl.TABLE, Impl.VECTOR}) {
                                    MemorySegment b = arena.allocate(range[1] * w);
                                    Fp8Kernels.dequantizeGrid(other, f, t, codes, cols, scales, br, bc, range[0], range[1], b);
                                    assertThat(b.mismatch(a)).as("%s %s %s blocks %dx%d huge %s range %d+%d", other, f, t, br, bc,
                                            hugeScale, range[0], range[1]).isEqualTo(-1L);
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    @Test
    void longPerTensorRunsSplitIntoPiecesGiveTheSameBytes() {
        long n = 3 * 32_768 + 1_001;   // several vector kernel calls and a tail
        java.util.SplittableRandom random = new java.util.SplittableRandom(11);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codes = arena.allocate(n + 1);
            for (long i = 0; i < n + 1; i++) codes.set(ValueLayout.JAVA_BYTE, i, (byte) random.nextInt(256));
            for (DType t : TARGETS) {
                int w = Fp8Kernels.outputBytes(t);
                MemorySegment a = arena.allocate(n * w);
                MemorySegment b = arena.allocate(n * w);
                float[] scale = {-0.0123f};
                Fp8Kernels.dequantizeGrid(Impl.SCALAR, Fp8Format.E4M3, t, codes, 7, scale, 1, 7, 1, n, a);
                Fp8Kernels.dequantizeGrid(Impl.VECTOR, Fp8Format.E4M3, t, codes, 7, scale, 1, 7, 1, n, b);
                assertThat(b.mismatch(a)).as(t.name()).isEqualTo(-1L);
                // the lookup kernel copies a single-scale tensor in pieces of 65,536 codes
                MemorySegment c = arena.allocate(n * w);
                Fp8Kernels.dequantizeGrid(Impl.TABLE, Fp8Format.E4M3, t, codes, 7, scale, 1, 7, 1, n, c);
                assertThat(c.mismatch(a)).as("table " + t.name()).isEqualTo(-1L);
            }
        }
    }

    @Test
    void scalarKernelMultipliesOnceInFloat32() {
        // The scalar path runs alone here, as it does when jdk.incubator.vector is absent.
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codes = arena.allocate(4);
            codes.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x39);   // E4M3 1.125
            codes.set(ValueLayout.JAVA_BYTE, 1, (byte) 0xB8);   // -1.0
            codes.set(ValueLayout.JAVA_BYTE, 2, (byte) 0x7E);   // 448
            codes.set(ValueLayout.JAVA_BYTE, 3, (byte) 0x01);   // 2^-9
            MemorySegment out = arena.allocate(16);
            // 1.125 x (1 + 2^-23) = 1.125 + 2^-23 + 2^-26: one rounding to 1.125 + 2^-23
            Fp8Kernels.toF32(Fp8Format.E4M3, codes, 0, Float.intBitsToFloat(0x3F80_0001), out, 0, 4);
            assertThat(out.get(LittleEndian.I32, 0)).isEqualTo(0x3F90_0001);
            assertThat(out.get(LittleEndian.I32, 4)).isEqualTo(0xBF80_0001);
            assertThat(out.get(LittleEndian.I32, 8)).isEqualTo(0x43E0_0002);     // 448 + 1.75 ulp (2^-15) rounds to 2 ulp
            assertThat(out.get(LittleEndian.I32, 12)).isEqualTo(0x3B00_0001);    // 2^-9 (1 + 2^-23)
        }
    }

    @Test
    void scalarBf16AndF16RoundToNearestEven() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment one = arena.allocate(1);
            one.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x38);                      // 1.0
            MemorySegment out = arena.allocate(2);
            // 1 + 2^-8 is the BF16 tie between 1.0 and 1.0078125: to even
            Fp8Kernels.toBf16(Fp8Format.E4M3, one, 0, Float.intBitsToFloat(0x3F80_8000), out, 0, 1);
            assertThat(out.get(LittleEndian.I16, 0)).isEqualTo((short) 0x3F80);
            // 1.0078125 + 2^-8 is a tie with an odd lower neighbour: up
            Fp8Kernels.toBf16(Fp8Format.E4M3, one, 0, Float.intBitsToFloat(0x3F81_8000), out, 0, 1);
            assertThat(out.get(LittleEndian.I16, 0)).isEqualTo((short) 0x3F82);
            // F16: 1 + 2^-11 ties to 1.0; 1 + 3 x 2^-11 ties up to 1 + 2^-9
            Fp8Kernels.toF16(Fp8Format.E4M3, one, 0, 1 + 0x1p-11f, out, 0, 1);
            assertThat(out.get(LittleEndian.I16, 0)).isEqualTo((short) 0x3C00);
            Fp8Kernels.toF16(Fp8Format.E4M3, one, 0, 1 + 3 * 0x1p-11f, out, 0, 1);
            assertThat(out.get(LittleEndian.I16, 0)).isEqualTo((short) 0x3C02);
            // 448 x 256 = 114688 is past F16's 65504: infinity
            one.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x7E);
            Fp8Kernels.toF16(Fp8Format.E4M3, one, 0, 256f, out, 0, 1);
            assertThat(out.get(LittleEndian.I16, 0)).isEqualTo((short) 0x7C00);
            // 2^-9 x 2^-10 = 2^-19 = 32 x 2^-24: the F16 subnormal 0x0020
            one.set(ValueLayout.JAVA_BYTE, 0, (byte) 0x01);
            Fp8Kernels.toF16(Fp8Format.E4M3, one, 0, 0x1p-10f, out, 0, 1);
            assertThat(out.get(LittleEndian.I16, 0)).isEqualTo((short) 0x0020);
        }
    }

    @Test
    void nanScaleGivesTheWeightsNanFirstAsX86Does() {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment codes = arena.allocate(2);
            codes.set(ValueLayout.JAVA_BYTE, 0, (byte) 0xFF);                    // E4M3 -NaN, payload 111
            codes.set(ValueLayout.JAVA_BYTE, 1, (byte) 0x38);                    // 1.0
            for (Impl impl : Impl.values()) {
                MemorySegment out = arena.allocate(8);
                Fp8Kernels.dequantize(impl, Fp8Format.E4M3, DType.F32, codes, 0, Float.intBitsToFloat(0x7F80_0001), out, 0, 2);
                assertThat(out.get(LittleEndian.I32, 0)).as(impl.name()).isEqualTo(0xFFF0_0000);
                assertThat(out.get(LittleEndian.I32, 4)).as(impl.name()).isEqualTo(0x7FC0_0001);   // the scale's NaN, quieted
            }
        }
    }

    @Test
    void vectorBf16NarrowingMatchesTheApi() {
        // every F32 but NaNs with low payload bits, which the kernels never produce (see Fp8VectorKernels.bf16)
        for (int[] batch : sweep(true)) {
            var v = jdk.incubator.vector.IntVector.fromArray(jdk.incubator.vector.IntVector.SPECIES_PREFERRED, batch, 0);
            short[] got = new short[batch.length];
            Fp8VectorKernels.bf16(v).intoArray(got, 0);
            for (int i = 0; i < batch.length; i++) {
                assertThat(got[i]).as("F32 0x%08x", batch[i]).isEqualTo(Floats.f32ToBf16(batch[i]));
            }
        }
    }

    @Test
    void vectorF16NarrowingMatchesTheApi() {
        for (int[] batch : sweep(false)) {
            var v = jdk.incubator.vector.IntVector.fromArray(jdk.incubator.vector.IntVector.SPECIES_PREFERRED, batch, 0)
                    .reinterpretAsFloats();
            short[] got = new short[batch.length];
            Fp8VectorKernels.f16(v).intoArray(got, 0);
            for (int i = 0; i < batch.length; i++) {
                float f = Float.intBitsToFloat(batch[i]);
                if (Float.isNaN(f)) {
                    assertThat(Float.isNaN(Floats.f16ToF32(got[i]))).as("F32 0x%08x", batch[i]).isTrue();
                    assertThat(got[i]).isEqualTo(Fp8Kernels.f32ToF16(f));
                } else {
                    assertThat(got[i]).as("F32 0x%08x", batch[i]).isEqualTo(Floats.f32ToF16(f));
                }
            }
        }
    }

    /** F32 bit patterns in vector-sized batches: a stride through all of them plus the F16 and BF16 edges. */
    private static List<int[]> sweep(boolean quietNansOnly) {
        int lanes = jdk.incubator.vector.IntVector.SPECIES_PREFERRED.length();
        List<Integer> all = new ArrayList<>();
        for (long b = 0; b <= 0xFFFF_FFFFL; b += 65_537) {
            all.add((int) b);
        }
        int[] edges = {0x387F_FFFF, 0x3880_0000, 0x387F_F000, 0x3300_0000, 0x3300_0001, 0x33C0_0000,
                0x477F_EFFF, 0x477F_F000, 0x477F_FFFF, 0x4780_0000, 0x7F7F_FFFF, 0x7F80_0000, 0x7F80_0001,
                0x7FC0_0000, 0x7FF0_0000, 0x3F80_8000, 0x3F81_8000, 0x3F80_7FFF, 0x7F7F_8000, 0x0000_0001, 0x0000_8000};
        for (int e : edges) {
            all.add(e);
            all.add(e | 0x8000_0000);
        }
        if (quietNansOnly) {
            all.replaceAll(bits -> (bits & 0x7FFF_FFFF) > 0x7F80_0000 ? (bits & 0xFFFF_0000) | 0x0040_0000 : bits);
        }
        List<int[]> out = new ArrayList<>();
        for (int i = 0; i < all.size(); i += lanes) {
            int[] batch = new int[lanes];
            for (int j = 0; j < lanes; j++) batch[j] = all.get(Math.min(all.size() - 1, i + j));
            out.add(batch);
        }
        return out;
    }
}
