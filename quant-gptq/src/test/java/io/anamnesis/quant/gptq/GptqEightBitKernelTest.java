package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The 8-bit word kernel writes what GPTQModel's formula gives (GptqLayer, computed in the test)
 * and the scalar kernel's bytes, on every target, with NaN and infinite scales, partial tiles
 * and a row range that starts mid-tile.
 */
class GptqEightBitKernelTest {
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    @ParameterizedTest(name = "in {0}, out {1}, group {2}, {3}, sym {4}, {5} scales")
    @CsvSource({
            "1024, 96, 128, BF16, false, F16",
            "1024, 96, 128, F16, false, F16",
            "1024, 96, 128, F32, true, F16",
            "4096, 33, 128, BF16, true, F16", // a partial tile of output rows
            "520, 40, 4, BF16, false, BF16",  // in not a multiple of the 256-input tile; group = one word
            "200, 64, -1, BF16, false, F16",  // one group over all inputs
            "264, 70, 8, F32, false, BF16",
    })
    void equalsTheFormulaAndTheScalarKernel(int in, int out, int groupSize, String target, boolean sym, String scaleType) {
        GptqLayer l = GptqLayer.random(in * 7L + out, 8, in, out, groupSize, false, sym, DType.standard(scaleType).orElseThrow());
        compare(l, DType.standard(target).orElseThrow());
    }

    @Test
    void equalsTheScalarKernelOnNonFiniteScales() {
        GptqLayer l = GptqLayer.random(99, 8, 512, 96, 64, false, false, DType.F16);
        l.scaleBits[1][5] = (short) 0x7FFF;  // NaN with every payload bit set: rounding its bits without the NaN test would give -0
        l.scaleBits[3][40] = (short) 0x7C00; // +inf (times a zero difference: NaN)
        l.q[3 * 64][40] = 10;
        l.zStored[3][40] = 9; // v1 zeros are stored minus one: that value is inf * 0
        l.scaleBits[0][70] = (short) 0xFC00; // -inf
        compare(l, DType.BF16);
        compare(l, DType.F32);
        compare(l, DType.F16);
    }

    @Test
    void appliesToEightBitsWithAGroupPerWordOnly() {
        var eight = new GptqKernel.Layout(8, 64, 8, 2, 2, 1, DType.F16);
        int[] sequential = GptqKernel.sequentialGroups(64, 32);
        assertThat(GptqEightBitKernel.applies(eight, GptqKernel.wordGroups(eight, sequential))).isTrue();
        int[] actOrder = sequential.clone();
        actOrder[1] = 1;
        assertThat(GptqEightBitKernel.applies(eight, GptqKernel.wordGroups(eight, actOrder))).isFalse();
        var four = new GptqKernel.Layout(4, 64, 8, 2, 1, 1, DType.F16);
        assertThat(GptqEightBitKernel.applies(four, GptqKernel.wordGroups(four, sequential))).isFalse();
    }

    private static void compare(GptqLayer l, DType target) {
        try (Arena arena = Arena.ofConfined()) {
            GptqLayer.Packed p = l.packed(arena);
            MemorySegment qw = p.qweight();
            MemorySegment qz = p.qzeros();
            MemorySegment sc = p.scales();
            var layout = p.layout();
            int[] wordGroups = GptqKernel.wordGroups(layout, l.gIdx);
            assertThat(GptqEightBitKernel.applies(layout, wordGroups)).isTrue();
            long bytes = target.byteSize((long) l.in * l.out);
            MemorySegment word = arena.allocate(bytes);
            MemorySegment scalar = arena.allocate(bytes);
            GptqEightBitKernel.dequantizeRows(qw, qz, sc, wordGroups, layout, 0, l.out, target, word);
            GptqKernel.dequantizeRowsScalar(qw, qz, sc, l.gIdx, layout, 0, l.out, target, scalar);
            assertThat(word.mismatch(scalar)).isEqualTo(-1);
            // the published formula, element by element, narrowed by the api's rounding
            for (int o = 0; o < l.out; o++) {
                for (int i = 0; i < l.in; i++) {
                    float v = l.expected(o, i, 1);
                    long at = (long) o * l.in + i;
                    if (target.equals(DType.F32)) {
                        assertThat(Float.floatToRawIntBits(word.get(F32, at * 4)))
                                .as("[%d, %d]", o, i).isEqualTo(Float.floatToRawIntBits(v));
                    } else {
                        short want = target.equals(DType.BF16) ? Floats.f32ToBf16(v) : Float.floatToFloat16(v);
                        assertThat(word.get(I16, at * 2)).as("[%d, %d]", o, i).isEqualTo(want);
                    }
                }
            }
            // a row range that starts mid-tile, through the dispatcher amn uses
            l.checkRowRangeMidTile(arena, p, target, scalar);
        }
    }
}
