package io.anamnesis.quant.bnb;

import org.junit.jupiter.api.Test;

import java.util.Random;
import java.util.function.IntUnaryOperator;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The class tables against their functions: every class not marked has the entry's code on
 * its floats, and exactly the classes a threshold divides are marked.
 */
class FloatClassTableTest {

    /** How many of the thresholds {@code v} exceeds, like NF4's rule. */
    record Count(float... thresholds) implements IntUnaryOperator {
        @Override
        public int applyAsInt(int bits) {
            float v = Float.intBitsToFloat(bits);
            int c = 0;
            for (float t : thresholds) c += v > t ? 1 : 0;
            return c;
        }
    }

    @Test
    void marksTheClassesAThresholdDividesWithTheRankBelowAndNoOther() {
        Count count = new Count(-0.3f, 1e-30f, 0.75f, 2.5f);
        byte[] table = FloatClassTable.build(count);
        int marked = 0;
        for (int top = 0; top < 1 << 16; top++) {
            if (table[top] < 0) marked++;
        }
        // -0.3, 1e-30 and 2.5 each lie inside one class and divide it between two ranks
        assertThat(table[Float.floatToRawIntBits(-0.3f) >>> 16]).isEqualTo((byte) (FloatClassTable.DIVIDED | 0));
        assertThat(table[Float.floatToRawIntBits(1e-30f) >>> 16]).isEqualTo((byte) (FloatClassTable.DIVIDED | 1));
        assertThat(table[Float.floatToRawIntBits(2.5f) >>> 16]).isEqualTo((byte) (FloatClassTable.DIVIDED | 3));
        // 0.75 (0x3F400000) is the first float of its class: "exceeds" is strict, so 0.75 has rank 2
        // and the float after it 3, and that class is divided too
        assertThat(table[0x3F40]).isEqualTo((byte) (FloatClassTable.DIVIDED | 2));
        // the class below it ends just under 0.75: rank 2 throughout
        assertThat(table[0x3F3F]).isEqualTo((byte) 2);
        // +infinity (rank 4) shares its class with NaNs (rank 0): no one comparison sorts them
        assertThat(table[0x7F80]).isEqualTo(FloatClassTable.SPECIAL);
        assertThat(table[0x7FC0]).isEqualTo((byte) 0);
        // -infinity and the NaNs both rank 0
        assertThat(table[0xFF80]).isEqualTo((byte) 0);
        assertThat(marked).isEqualTo(5);
    }

    @Test
    void aClassTwoThresholdsDivideIsSpecial() {
        // 1.0 and 1.001 are in one class (1.0 .. 1.0078)
        byte[] table = FloatClassTable.build(new Count(1.0f, 1.001f));
        assertThat(table[0x3F80]).isEqualTo(FloatClassTable.SPECIAL);
    }

    @Test
    void everyUnmarkedClassHasItsEntrysCodeThroughout() {
        Count count = new Count(FourBitEncoder.NF4_THRESHOLDS);
        byte[] table = FloatClassTable.build(count);
        Random r = new Random(7);
        for (int top = 0; top < 1 << 16; top++) {
            if (table[top] < 0) continue;
            for (int low : new int[]{0, 1, 0x8000, 0xFFFF, r.nextInt(0x10000)}) {
                int bits = top << 16 | low;
                assertThat(table[top]).as("%08x", bits).isEqualTo((byte) count.applyAsInt(bits));
            }
        }
    }
}
