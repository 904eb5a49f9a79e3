package io.anamnesis.quant.mxfp4;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

/**
 * The transposed kernel's two implementations: the vector one gives the scalar one's bytes
 * for every scale byte, nibble and target, any shape and any chunk of output rows; and both
 * give the values the E2M1 and E8M0 definitions say, worked out here without the project's code.
 */
class Mxfp4KernelsTest {
    static final DType[] TARGETS = {DType.F32, DType.BF16, DType.F16};
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @Test
    void vectorModuleIsResolvedInThisModulesTests() {
        // the pom adds --add-modules jdk.incubator.vector; without it the comparisons below would test nothing
        assertThat(ModuleLayer.boot().findModule("jdk.incubator.vector")).isPresent();
    }

    /**
     * The vector kernel needs 512-bit vectors (and a kernel choice other than scalar); where it
     * cannot run, the comparisons are skipped.
     */
    static void assumeVector() {
        assumeTrue(Mxfp4Kernels.vectorAvailable(), "no 512-bit vectors here, or -Danamnesis.kernels=scalar");
    }

    static int width(DType t) {
        return t.equals(DType.F32) ? 4 : 2;
    }

    /** The blocks {@code [experts, rows, groups, 16]} and scales of a tensor. */
    record Input(int experts, int rows, int groups, MemorySegment blocks, MemorySegment scales) {
        long outRows() {
            return (long) experts * groups * Mxfp4Kernels.BLOCK;
        }

        long outBytes(DType t) {
            return outRows() * rows * width(t);
        }

        MemorySegment run(Arena arena, Mxfp4Kernels.Impl impl, DType t) {
            MemorySegment out = arena.allocate(outBytes(t));
            Mxfp4Kernels.transposed(impl, blocks, scales, rows, groups, Mxfp4Kernels.Tables.of(t), 0, outRows(), out);
            return out;
        }
    }

    static Input random(Arena arena, SplittableRandom r, int experts, int rows, int groups) {
        long n = (long) experts * rows * groups;
        MemorySegment blocks = arena.allocate(n * Mxfp4Kernels.BLOCK_BYTES);
        for (long i = 0; i < blocks.byteSize(); i++) blocks.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        MemorySegment scales = arena.allocate(n);
        for (long i = 0; i < n; i++) scales.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt(256));
        return new Input(experts, rows, groups, blocks, scales);
    }

    /**
     * 256 source rows x 16 groups: block (r, g) has scale {@code (r + 37 g) mod 256} and bytes
     * {@code 16 g + j}, so every scale meets every byte, hence every nibble in both places.
     */
    static Input exhaustive(Arena arena) {
        int rows = 256, groups = 16;
        MemorySegment blocks = arena.allocate((long) rows * groups * Mxfp4Kernels.BLOCK_BYTES);
        MemorySegment scales = arena.allocate((long) rows * groups);
        for (int r = 0; r < rows; r++) {
            for (int g = 0; g < groups; g++) {
                long block = (long) r * groups + g;
                scales.set(ValueLayout.JAVA_BYTE, block, (byte) (r + 37 * g));
                for (int j = 0; j < 16; j++) blocks.set(ValueLayout.JAVA_BYTE, block * 16 + j, (byte) (16 * g + j + r));
            }
        }
        return new Input(1, rows, groups, blocks, scales);
    }

    @Test
    void vectorGivesTheScalarBytesForEveryScaleAndNibble() {
        assumeVector();
        try (Arena arena = Arena.ofConfined()) {
            Input in = exhaustive(arena);
            for (DType t : TARGETS) {
                MemorySegment scalar = in.run(arena, Mxfp4Kernels.Impl.SCALAR, t);
                MemorySegment vector = in.run(arena, Mxfp4Kernels.Impl.VECTOR, t);
                assertThat(vector.mismatch(scalar)).as(t.name()).isEqualTo(-1L);
            }
        }
    }

    @Test
    void vectorGivesTheScalarBytesForAnyShapeAndChunk() {
        assumeVector();
        SplittableRandom r = new SplittableRandom(13);
        // rows: under, at and over the 16- and 32-row tiles, ragged, and past the 2,048 rows of one
        // pass down a band (4,100: three passes of 1,376, chunks of 256 ending mid-pass); groups:
        // one block column to several bands of 16 (17: a whole band and a single column)
        int[][] shapes = {{1, 1, 1}, {1, 31, 1}, {1, 32, 2}, {2, 33, 3}, {1, 16, 1}, {3, 17, 2}, {2, 70, 3}, {1, 100, 5},
                {4, 64, 1}, {2, 5, 4}, {1, 95, 2}, {2, 40, 17}, {1, 4100, 2}, {1, 2049, 33}};
        try (Arena arena = Arena.ofConfined()) {
            for (int[] s : shapes) {
                Input in = random(arena, r, s[0], s[1], s[2]);
                for (DType t : TARGETS) {
                    String what = "[" + s[0] + ", " + s[1] + ", " + s[2] + "] to " + t;
                    MemorySegment scalar = in.run(arena, Mxfp4Kernels.Impl.SCALAR, t);
                    assertThat(in.run(arena, Mxfp4Kernels.Impl.VECTOR, t).mismatch(scalar)).as(what).isEqualTo(-1L);
                    // chunks of output rows starting and ending anywhere: inside a block, across experts
                    long rowBytes = (long) in.rows() * width(t);
                    Mxfp4Kernels.Tables tables = Mxfp4Kernels.Tables.of(t);
                    for (int trial = 0; trial < 20; trial++) {
                        long first = r.nextLong(in.outRows());
                        long count = 1 + r.nextLong(Math.min(in.outRows() - first, 1 + r.nextInt(80)));
                        MemorySegment part = arena.allocate(count * rowBytes);
                        Mxfp4Kernels.transposed(Mxfp4Kernels.Impl.VECTOR, in.blocks(), in.scales(), in.rows(), in.groups(),
                                tables, first, count, part);
                        assertThat(part.mismatch(scalar.asSlice(first * rowBytes, count * rowBytes)))
                                .as(what + " rows " + first + " + " + count).isEqualTo(-1L);
                    }
                }
            }
        }
    }

    @Test
    void chunkOfAWholeSegmentWritesNothingPastItsEnd() {
        assumeVector();
        // the last tile of a ragged row count is stored with masks: the bytes after the chunk stay
        try (Arena arena = Arena.ofConfined()) {
            Input in = random(arena, new SplittableRandom(5), 1, 45, 2);
            for (DType t : TARGETS) {
                long rowBytes = 45L * width(t);
                MemorySegment out = arena.allocate(4 * rowBytes + 64);
                out.fill((byte) 0x5A);
                Mxfp4Kernels.transposed(Mxfp4Kernels.Impl.VECTOR, in.blocks(), in.scales(), in.rows(), in.groups(),
                        Mxfp4Kernels.Tables.of(t), 30, 4, out);
                for (long b = 4 * rowBytes; b < out.byteSize(); b++) {
                    assertThat(out.get(ValueLayout.JAVA_BYTE, b)).as(t + " byte " + b).isEqualTo((byte) 0x5A);
                }
            }
        }
    }

    // ------------------------------------------------------------------ the definitions

    /** FP4 E2M1 by its definition: sign, 2 exponent bits (bias 1), 1 mantissa bit; subnormal 0.5 m. */
    static double e2m1(int code) {
        int e = (code >>> 1) & 3;
        int m = code & 1;
        double v = e == 0 ? m * 0.5 : (1 + m / 2.0) * Math.pow(2, e - 1);
        return (code & 8) != 0 ? -v : v;
    }

    /** E8M0 by its definition: 2^(b - 127), and 0xFF is NaN. */
    static double e8m0(int b) {
        return b == 255 ? Double.NaN : Math.pow(2, b - 127);
    }

    /** A value's bits in the target, rounded to nearest even (the products are exact in F32). */
    static int bits(DType t, double v) {
        float f = (float) v;
        if (t.equals(DType.F32)) return Float.floatToRawIntBits(f);
        if (t.equals(DType.F16)) return Float.floatToFloat16(f) & 0xFFFF;
        return Float.floatToRawIntBits(f) >>> 16;   // exact: at most 2 significant bits
    }

    static boolean isNaN(DType t, int bits) {
        if (t.equals(DType.F32)) return Float.isNaN(Float.intBitsToFloat(bits));
        if (t.equals(DType.F16)) return (bits & 0x7C00) == 0x7C00 && (bits & 0x3FF) != 0;
        return (bits & 0x7F80) == 0x7F80 && (bits & 0x7F) != 0;
    }

    static int read(MemorySegment out, DType t, long index) {
        return t.equals(DType.F32) ? out.get(I32, 4 * index) : out.get(I16, 2 * index) & 0xFFFF;
    }

    @Test
    void everyScaleAndCodeIsWhatTheDefinitionsSay() {
        try (Arena arena = Arena.ofConfined()) {
            Input in = exhaustive(arena);
            for (Mxfp4Kernels.Impl impl : Mxfp4Kernels.Impl.values()) {
                if (impl == Mxfp4Kernels.Impl.VECTOR && !Mxfp4Kernels.vectorAvailable()) continue;
                for (DType t : TARGETS) {
                    MemorySegment out = in.run(arena, impl, t);
                    for (int r = 0; r < in.rows(); r++) {
                        for (int c = 0; c < in.groups() * 32; c++) {
                            long block = (long) r * in.groups() + c / 32;
                            int b = in.blocks().get(ValueLayout.JAVA_BYTE, block * 16 + (c % 32) / 2) & 0xFF;
                            int code = c % 2 == 0 ? b & 15 : b >>> 4;
                            int scale = in.scales().get(ValueLayout.JAVA_BYTE, block) & 0xFF;
                            int got = read(out, t, (long) c * in.rows() + r);
                            String what = impl + " " + t + " scale " + scale + " code " + code;
                            if (scale == 255) assertThat(isNaN(t, got)).as(what).isTrue();
                            else assertThat(got).as(what).isEqualTo(bits(t, e2m1(code) * e8m0(scale)));
                        }
                    }
                }
            }
        }
    }

    /**
     * Blocks built by hand, the expected bits written out: one source row per block, so output
     * row k is value k of every block. Codes 0..15 in order, then the same block reversed.
     */
    @Test
    void handBuiltBlocks() {
        // bytes 0x10, 0x32, ...: values 0, 1, 2, ... 15 in storage order (low nibble first)
        byte[] ascending = new byte[16];
        for (int j = 0; j < 8; j++) ascending[j] = (byte) ((2 * j + 1) << 4 | 2 * j);
        for (int j = 8; j < 16; j++) ascending[j] = ascending[j - 8];
        int[] scales = {127, 128, 0, 254, 142, 255};
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment blocks = arena.allocate(16L * scales.length);
            MemorySegment s = arena.allocate(scales.length);
            for (int i = 0; i < scales.length; i++) {
                MemorySegment.copy(ascending, 0, blocks, ValueLayout.JAVA_BYTE, 16L * i, 16);
                s.set(ValueLayout.JAVA_BYTE, i, (byte) scales[i]);
            }
            Input in = new Input(1, scales.length, 1, blocks, s);
            for (Mxfp4Kernels.Impl impl : Mxfp4Kernels.Impl.values()) {
                if (impl == Mxfp4Kernels.Impl.VECTOR && !Mxfp4Kernels.vectorAvailable()) continue;
                MemorySegment bf16 = in.run(arena, impl, DType.BF16);
                MemorySegment f32 = in.run(arena, impl, DType.F32);
                MemorySegment f16 = in.run(arena, impl, DType.F16);
                // E2M1: 0, 0.5, 1, 1.5, 2, 3, 4, 6, then the negatives (code 8 is -0)
                int[] bf16At127 = {0x0000, 0x3F00, 0x3F80, 0x3FC0, 0x4000, 0x4040, 0x4080, 0x40C0,
                        0x8000, 0xBF00, 0xBF80, 0xBFC0, 0xC000, 0xC040, 0xC080, 0xC0C0};
                for (int k = 0; k < 32; k++) {
                    String what = impl + " value " + k;
                    int code = k % 16;
                    // scale 127: x1; scale 128: x2, one more in the exponent (zeros stay zeros)
                    assertThat(read(bf16, DType.BF16, (long) k * 6)).as(what).isEqualTo(bf16At127[code]);
                    int twice = (code & 7) == 0 ? bf16At127[code] : bf16At127[code] + 0x80;
                    assertThat(read(bf16, DType.BF16, (long) k * 6 + 1)).as(what).isEqualTo(twice);
                    // scale 0: 2^-127, F32 subnormals (0.5 x 2^-127 = 2^-128 is 0x00200000), F16 zeros
                    int[] f32At0 = {0, 0x0020_0000, 0x0040_0000, 0x0060_0000, 0x0080_0000, 0x00C0_0000, 0x0100_0000, 0x0140_0000};
                    int sign = (code & 8) != 0 ? 0x8000_0000 : 0;
                    assertThat(read(f32, DType.F32, (long) k * 6 + 2)).as(what).isEqualTo(sign | f32At0[code & 7]);
                    assertThat(read(f16, DType.F16, (long) k * 6 + 2)).as(what).isEqualTo(sign >>> 16);
                    // scale 254: 2^127; 1.5 x 2^127 is the largest finite, 2 x 2^127 overflows
                    int[] f32At254 = {0, 0x7E80_0000, 0x7F00_0000, 0x7F40_0000, 0x7F80_0000, 0x7F80_0000, 0x7F80_0000, 0x7F80_0000};
                    assertThat(read(f32, DType.F32, (long) k * 6 + 3)).as(what).isEqualTo(sign | f32At254[code & 7]);
                    // scale 142: 2^15 in F16: 1 x 2^15 is 0x7800, 1.5 x 2^15 0x7A00, 2 x 2^15 is infinite
                    int[] f16At142 = {0, 0x7400, 0x7800, 0x7A00, 0x7C00, 0x7C00, 0x7C00, 0x7C00};
                    assertThat(read(f16, DType.F16, (long) k * 6 + 4)).as(what).isEqualTo((sign >>> 16) | f16At142[code & 7]);
                    // scale 255: E8M0's NaN, whatever the code (0 x NaN too)
                    assertThat(isNaN(DType.BF16, read(bf16, DType.BF16, (long) k * 6 + 5))).as(what).isTrue();
                    assertThat(isNaN(DType.F16, read(f16, DType.F16, (long) k * 6 + 5))).as(what).isTrue();
                    assertThat(isNaN(DType.F32, read(f32, DType.F32, (long) k * 6 + 5))).as(what).isTrue();
                }
            }
        }
    }
}
