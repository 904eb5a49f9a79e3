package io.anamnesis.quant.awq;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/** The lookup kernel writes the scalar kernel's bytes, NaN and infinity included, and knows where it applies. */
class AwqTableKernelTest {
    static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @ParameterizedTest(name = "in {0}, out {1}, group {2}, {3}")
    @CsvSource({
            "1024, 128, 128, BF16",
            "1024, 128, 128, F16",
            "1024, 128, 128, F32",
            "600, 72, 64, F32",      // in not a multiple of the 256-input tile
            "1100, 40, 100, BF16",   // groups of 100
            "520, 8, 40, BF16",
            "64, 200, 32, F16",
    })
    void equalsTheScalarKernelBitForBit(int in, int out, int groupSize, String target) {
        compare(in, out, groupSize, DType.standard(target).orElseThrow(), false);
    }

    @Test
    void equalsTheScalarKernelOnNonFiniteScales() {
        compare(512, 136, 128, DType.BF16, true);
        compare(512, 136, 128, DType.F32, true);
        compare(512, 136, 128, DType.F16, true);
    }

    @Test
    void appliesWhenFourInputsShareAGroup() {
        assertThat(AwqTableKernel.applies(new AwqKernel.Layout(1024, 128, 128, 8, DType.F16))).isTrue();
        assertThat(AwqTableKernel.applies(new AwqKernel.Layout(1024, 128, 2, 512, DType.F16))).isFalse();
        assertThat(AwqTableKernel.applies(new AwqKernel.Layout(1026, 128, 1026, 1, DType.F16))).isFalse();
    }

    private static void compare(int in, int out, int gs, DType target, boolean nonFinite) {
        SplittableRandom r = new SplittableRandom(in * 17L + out);
        int groups = (in + gs - 1) / gs;
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment qw = arena.allocate((long) in * out / 2);
            for (long i = 0; i < qw.byteSize(); i += 4) qw.set(I32, i, r.nextInt());
            MemorySegment qz = arena.allocate((long) groups * out / 2);
            for (long i = 0; i < qz.byteSize(); i += 4) qz.set(I32, i, r.nextInt());
            MemorySegment sc = arena.allocate((long) groups * out * 2);
            for (long i = 0; i < sc.byteSize(); i += 2) sc.set(I16, i, Float.floatToFloat16((float) r.nextDouble(-0.05, 0.05)));
            if (nonFinite) {
                sc.set(I16, 2L * 7, (short) 0x7E00);
                sc.set(I16, 2L * (out + 100), (short) 0x7C00);
                sc.set(I16, 2L * (3 * out - 1), (short) 0xFC00);
            }
            var layout = new AwqKernel.Layout(in, out, gs, groups, DType.F16);
            assertThat(AwqTableKernel.applies(layout)).isTrue();
            long bytes = target.byteSize((long) in * out);
            MemorySegment table = arena.allocate(bytes);
            MemorySegment scalar = arena.allocate(bytes);
            AwqTableKernel.dequantizeRows(qw, qz, sc, layout, 0, out, target, table);
            AwqKernel.dequantizeRowsScalar(qw, qz, sc, layout, 0, out, target, scalar);
            assertThat(table.mismatch(scalar)).isEqualTo(-1);
            int first = 3; // a row range that starts inside a word, through the dispatcher amn uses
            MemorySegment part = arena.allocate(target.byteSize((long) (out - first) * in));
            AwqKernel.dequantizeRowsNoVector(qw, qz, sc, layout, first, out - first, target, part);
            assertThat(part.mismatch(scalar.asSlice(target.byteSize((long) first * in)))).isEqualTo(-1);
        }
    }
}
