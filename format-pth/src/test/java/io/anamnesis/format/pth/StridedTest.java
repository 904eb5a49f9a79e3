package io.anamnesis.format.pth;

import org.junit.jupiter.api.Test;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class StridedTest {
    @Test
    void lastElementIsOffsetPlusTheFarCornerAndNoneForEmptyViews() {
        assertThat(Strided.lastElement(2, new long[]{4, 4}, new long[]{4, 1})).isEqualTo(17);
        assertThat(Strided.lastElement(5, new long[]{}, new long[]{})).isEqualTo(5);
        assertThat(Strided.lastElement(0, new long[]{3, 0}, new long[]{1, 1})).isEqualTo(-1);
        assertThat(Strided.lastElement(0, new long[]{4, 6}, new long[]{0, 1})).isEqualTo(5);
        assertThatThrownBy(() -> Strided.lastElement(0, new long[]{1L << 40, 2}, new long[]{1L << 40, 1}))
                .isInstanceOf(ArithmeticException.class);
    }

    @Test
    void contiguityIgnoresTheStridesOfSizeOneDimensions() {
        assertThat(Strided.isContiguous(new long[]{2, 3}, new long[]{3, 1})).isTrue();
        assertThat(Strided.isContiguous(new long[]{1, 3}, new long[]{99, 1})).isTrue();
        assertThat(Strided.isContiguous(new long[]{}, new long[]{})).isTrue();
        assertThat(Strided.isContiguous(new long[]{3, 2}, new long[]{1, 3})).isFalse();
        assertThat(Strided.isContiguous(new long[]{2, 3}, new long[]{0, 1})).isFalse();
    }

    @Test
    void gathersAPermutedThreeDimensionalView() {
        // Storage 0..23 as (2, 3, 4) permuted to (4, 2, 3): strides (1, 12, 4); [i][j][k] = 12 j + 4 k + i.
        MemorySegment src = MemorySegment.ofArray(new int[24]);
        for (int i = 0; i < 24; i++) src.setAtIndex(ValueLayout.JAVA_INT, i, i);
        MemorySegment dest = MemorySegment.ofArray(new int[24]);
        Strided.gather(src, 0, new long[]{4, 2, 3}, new long[]{1, 12, 4}, 4, dest);
        int[] expected = new int[24];
        int n = 0;
        for (int i = 0; i < 4; i++) for (int j = 0; j < 2; j++) for (int k = 0; k < 3; k++) expected[n++] = 12 * j + 4 * k + i;
        assertThat(dest.toArray(ValueLayout.JAVA_INT)).containsExactly(expected);
    }

    @Test
    void gathersATransposeForEveryElementWidth() {
        // Six elements, element e's bytes all equal e; (3, 2) stride (1, 3) reads 0, 3, 1, 4, 2, 5.
        for (int es : new int[]{1, 2, 4, 8, 16}) {
            byte[] storage = new byte[6 * es];
            for (int i = 0; i < storage.length; i++) storage[i] = (byte) (i / es);
            MemorySegment dest = MemorySegment.ofArray(new byte[6 * es]);
            Strided.gather(MemorySegment.ofArray(storage), 0, new long[]{3, 2}, new long[]{1, 3}, es, dest);
            byte[] expected = new byte[6 * es];
            int[] order = {0, 3, 1, 4, 2, 5};
            for (int k = 0; k < 6; k++) for (int b = 0; b < es; b++) expected[k * es + b] = (byte) order[k];
            assertThat(dest.toArray(ValueLayout.JAVA_BYTE)).as("width " + es).containsExactly(expected);
        }
    }

    @Test
    void gathersATransposeLargerThanOneTileWithPartialEdgeTiles() {
        // A 13 x 20 row-major storage read as its 20 x 13 transpose: [i][j] = storage[20 j + i].
        MemorySegment src = MemorySegment.ofArray(new int[260]);
        for (int i = 0; i < 260; i++) src.setAtIndex(ValueLayout.JAVA_INT, i, i);
        MemorySegment dest = MemorySegment.ofArray(new int[260]);
        Strided.gather(src, 0, new long[]{20, 13}, new long[]{1, 20}, 4, dest);
        int[] expected = new int[260];
        for (int i = 0; i < 20; i++) for (int j = 0; j < 13; j++) expected[13 * i + j] = 20 * j + i;
        assertThat(dest.toArray(ValueLayout.JAVA_INT)).containsExactly(expected);
    }

    @Test
    void swapsEachValueOfTheGivenWidth() {
        MemorySegment s = MemorySegment.ofArray(new byte[]{1, 2, 3, 4, 5, 6, 7, 8});
        Strided.swapBytes(s, 4);
        assertThat(s.toArray(ValueLayout.JAVA_BYTE)).containsExactly(4, 3, 2, 1, 8, 7, 6, 5);
        Strided.swapBytes(s, 2);
        assertThat(s.toArray(ValueLayout.JAVA_BYTE)).containsExactly(3, 4, 1, 2, 7, 8, 5, 6);
        Strided.swapBytes(s, 8);
        assertThat(s.toArray(ValueLayout.JAVA_BYTE)).containsExactly(6, 5, 8, 7, 2, 1, 4, 3);
    }
}
