package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;

/** The lookup kernel writes the scalar kernel's bytes, where it applies, and knows where it does not. */
class GptqTableKernelTest {

    @ParameterizedTest(name = "{0}-bit, in {1}, out {2}, group {3}, {4}")
    @CsvSource({
            "4, 1024, 96, 128, BF16",
            "4, 1024, 96, 128, F16",
            "4, 1024, 96, 128, F32",
            "4, 4096, 33, 128, BF16",  // a partial tile of output rows
            "4, 520, 40, 8, BF16",     // in not a multiple of the 256-input tile; group = one word
            "4, 200, 64, -1, F32",     // one group over all inputs
            "2, 2048, 70, 64, BF16",
            "2, 1056, 40, 32, F32",
            "2, 1056, 40, 32, F16",
    })
    void equalsTheScalarKernelBitForBit(int bits, int in, int out, int groupSize, String target) {
        GptqLayer l = GptqLayer.random(in * 11L + out, bits, in, out, groupSize, false, false, DType.F16);
        compare(l, DType.standard(target).orElseThrow());
    }

    @Test
    void equalsTheScalarKernelOnNonFiniteScales() {
        GptqLayer l = GptqLayer.random(98, 4, 512, 96, 64, false, false, DType.F16);
        l.scaleBits[1][5] = (short) 0x7E00;  // NaN
        l.scaleBits[3][40] = (short) 0x7C00; // +inf (times a zero difference: NaN)
        l.scaleBits[0][70] = (short) 0xFC00; // -inf
        compare(l, DType.BF16);
        compare(l, DType.F32);
        compare(l, DType.F16);
    }

    @Test
    void appliesOnlyWhenEveryWordHasOneGroup() {
        GptqKernel.Layout four = new GptqKernel.Layout(4, 64, 8, 2, 1, 1, DType.F16);
        int[] sequential = GptqKernel.sequentialGroups(64, 32);
        assertThat(GptqKernel.wordGroups(four, sequential)).hasSize(8).startsWith(0, 0, 0, 0, 1);
        int[] actOrder = sequential.clone();
        actOrder[3] = 1;
        assertThat(GptqKernel.wordGroups(four, actOrder)).isNull();
        assertThat(GptqKernel.wordGroups(new GptqKernel.Layout(8, 64, 8, 2, 2, 1, DType.F16), sequential))
                .hasSize(16).startsWith(0, 0, 0, 0, 0, 0, 0, 0, 1); // the 8-bit word kernel's
        assertThat(GptqKernel.wordGroups(new GptqKernel.Layout(8, 64, 8, 2, 2, 1, DType.F16), actOrder)).isNull();
        assertThat(GptqKernel.wordGroups(new GptqKernel.Layout(3, 64, 8, 2, 1, 1, DType.F16), sequential)).isNull();
    }

    private static void compare(GptqLayer l, DType target) {
        try (Arena arena = Arena.ofConfined()) {
            GptqLayer.Packed p = l.packed(arena);
            MemorySegment qw = p.qweight();
            MemorySegment qz = p.qzeros();
            MemorySegment sc = p.scales();
            var layout = p.layout();
            int[] wordGroups = GptqKernel.wordGroups(layout, l.gIdx);
            assertThat(wordGroups).as("the table kernel applies").isNotNull();
            long bytes = target.byteSize((long) l.in * l.out);
            MemorySegment table = arena.allocate(bytes);
            MemorySegment scalar = arena.allocate(bytes);
            GptqTableKernel.dequantizeRows(qw, qz, sc, wordGroups, layout, 0, l.out, target, table);
            GptqKernel.dequantizeRowsScalar(qw, qz, sc, l.gIdx, layout, 0, l.out, target, scalar);
            assertThat(table.mismatch(scalar)).isEqualTo(-1);
            // a row range that starts mid-tile, through the dispatcher amn uses
            l.checkRowRangeMidTile(arena, p, target, scalar);
        }
    }
}
