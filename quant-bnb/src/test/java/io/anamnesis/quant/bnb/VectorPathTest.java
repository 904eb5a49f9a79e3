package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.LittleEndian;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The vector kernels give the scalar kernels' bytes, including NaN, infinities, ties and short tails. */
class VectorPathTest {

    private static void requireVector() {
        Assumptions.assumeTrue(OutputBits.VECTOR,
                "jdk.incubator.vector not resolved or no 512-bit vectors on this CPU: only the scalar path exists here");
    }

    @Test
    void vectorPathIsActiveWhereTheModuleAndHardwareAreThere() {
        assertThat(OutputBits.VECTOR).isEqualTo(
                ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent() && VectorKernels.usable());
    }

    private static float randomScale(SplittableRandom r) {
        return switch (r.nextInt(12)) {
            case 0 -> Float.NaN;
            case 1 -> Float.POSITIVE_INFINITY;
            case 2 -> 0.0f;
            case 3 -> -0.0f;
            case 4 -> Float.MIN_VALUE;
            case 5 -> Float.intBitsToFloat(0x3F80_8000); // a BF16 tie
            case 6 -> 3.0e38f;
            default -> Float.intBitsToFloat(r.nextInt(0x3000_0000, 0x4400_0000)) * (r.nextBoolean() ? 1 : -1);
        };
    }

    @ParameterizedTest
    @ValueSource(ints = {32, 64, 128, 4096})
    void fourBitVectorMatchesScalar(int blocksize) {
        requireVector();
        SplittableRandom r = new SplittableRandom(blocksize);
        long n = 5L * blocksize + 31;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment packed = arena.allocate((n + 1) / 2);
            for (long i = 0; i < packed.byteSize(); i++) packed.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
            long blocks = (n + blocksize - 1) / blocksize;
            MemorySegment absmax = arena.allocate(blocks * 4);
            for (long b = 0; b < blocks; b++) absmax.set(LittleEndian.F32, 4 * b, randomScale(r));
            for (boolean fp4 : new boolean[]{false, true}) {
                float[] values = FourBit.codeValues(fp4 ? Fixtures.FP4 : Fixtures.NF4, fp4);
                FourBit.Absmax a = new FourBit.PlainAbsmax(absmax);
                // whole tensor, a mid-tensor block-aligned chunk, and an odd start (not granule-aligned)
                long[][] ranges = {{0, n}, {blocksize, 2L * blocksize + 1}, {1, n - 1}, {n - 1, 1}};
                for (long[] range : ranges) {
                    MemorySegment v = arena.allocate(range[1] * 2);
                    MemorySegment s = arena.allocate(range[1] * 2);
                    FourBit.decode(packed, a, values, blocksize, n, range[0], range[1], DType.BF16, v);
                    FourBit.decodeScalar(packed, a, values, blocksize, n, range[0], range[1], DType.BF16, s);
                    assertThat(v.toArray(ValueLayout.JAVA_BYTE)).as("fp4=%s range %d+%d", fp4, range[0], range[1])
                            .isEqualTo(s.toArray(ValueLayout.JAVA_BYTE));
                }
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {1, 15, 16, 17, 100, 1024})
    void int8VectorMatchesScalar(int rowLength) {
        requireVector();
        SplittableRandom r = new SplittableRandom(rowLength);
        long rows = 7;
        long n = rows * rowLength;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = arena.allocate(n);
            for (long i = 0; i < n; i++) w.set(ValueLayout.JAVA_BYTE, i, (byte) r.nextInt());
            MemorySegment scb = arena.allocate(rows * 4);
            for (long i = 0; i < rows; i++) scb.set(LittleEndian.F32, 4 * i, randomScale(r));
            MemorySegment v = arena.allocate(n * 2);
            MemorySegment s = arena.allocate(n * 2);
            Int8Rows.decode(w, scb, rowLength, n, 0, n, DType.BF16, v);
            Int8Rows.decodeScalar(w, scb, rowLength, n, 0, n, DType.BF16, s);
            assertThat(v.toArray(ValueLayout.JAVA_BYTE)).isEqualTo(s.toArray(ValueLayout.JAVA_BYTE));
        }
    }
}
