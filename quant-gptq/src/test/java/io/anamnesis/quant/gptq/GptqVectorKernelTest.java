package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/** The Vector API kernel and the scalar kernel produce the same bytes, NaN and infinity included. */
class GptqVectorKernelTest {

    @Test
    void runsWithTheVectorModule() {
        assertThat(GptqKernel.VECTOR).as("tests run with --add-modules jdk.incubator.vector").isTrue();
        assertThat(GptqVectorKernel.supports(new GptqKernel.Layout(4, 64, 64, 1, 8, 1, DType.F16), DType.BF16)).isTrue();
    }

    @ParameterizedTest(name = "{0}-bit, in {1}, out {2}, group {3}, act-order {4}, {5}")
    @CsvSource({
            "2, 2048, 70, 64, false, BF16",
            "2, 1056, 40, 32, true, F32",
            "4, 1040, 96, 128, false, BF16",
            "4, 2048, 33, 32, true, BF16",
            "4, 200, 64, -1, false, F32",
            "4, 4100, 8, 100, false, BF16",
            "8, 1200, 65, 128, true, BF16",
            "8, 1028, 40, 32, false, F32",
            "8, 96, 16, 48, false, BF16",
    })
    void equalsTheScalarKernelBitForBit(int bits, int in, int out, int groupSize, boolean actOrder, String target) {
        GptqLayer l = GptqLayer.random(in * 7L + out, bits, in, out, groupSize, actOrder, false, DType.F16);
        compare(l, DType.standard(target).orElseThrow(), null);
    }

    @Test
    void equalsTheScalarKernelOnNonFiniteScales() {
        GptqLayer l = GptqLayer.random(99, 4, 512, 96, 64, false, false, DType.F16);
        l.scaleBits[1][5] = (short) 0x7E00;  // NaN
        l.scaleBits[3][40] = (short) 0x7C00; // +inf (times a zero difference: NaN)
        l.scaleBits[0][70] = (short) 0xFC00; // -inf
        compare(l, DType.BF16, null);
        compare(l, DType.F32, null);
    }

    private static void compare(GptqLayer l, DType target, Object unused) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment qw = segment(arena, l.qweight());
            MemorySegment qz = segment(arena, l.qzeros());
            short[] s = l.scalesFlat();
            MemorySegment sc = arena.allocate(s.length * 2L);
            MemorySegment.copy(s, 0, sc, ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, s.length);
            var layout = new GptqKernel.Layout(l.bits, l.in, l.out, l.groups, l.zeroWords(), 1, DType.F16);
            long bytes = target.byteSize((long) l.in * l.out);
            MemorySegment vector = arena.allocate(bytes);
            MemorySegment scalar = arena.allocate(bytes);
            // 2-bit needs 16 lanes (AVX-512): on narrower vectors the dispatcher keeps it scalar
            org.junit.jupiter.api.Assumptions.assumeTrue(GptqVectorKernel.supports(layout, target),
                    "no vector kernel for this layout with " + GptqVectorKernel.L + " lanes");
            GptqVectorKernel.dequantizeRows(qw, qz, sc, l.gIdx, layout, 0, l.out, target, vector);
            GptqKernel.dequantizeRowsScalar(qw, qz, sc, l.gIdx, layout, 0, l.out, target, scalar);
            assertThat(vector.mismatch(scalar)).isEqualTo(-1);
            // a row range that starts mid-tile
            int first = Math.min(5, l.out - 1);
            int rows = l.out - first;
            MemorySegment part = arena.allocate(target.byteSize((long) rows * l.in));
            GptqVectorKernel.dequantizeRows(qw, qz, sc, l.gIdx, layout, first, rows, target, part);
            assertThat(part.mismatch(scalar.asSlice(target.byteSize((long) first * l.in)))).isEqualTo(-1);
        }
    }

    private static MemorySegment segment(Arena arena, int[] values) {
        MemorySegment m = arena.allocate(values.length * 4L);
        MemorySegment.copy(values, 0, m, ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
        return m;
    }
}
