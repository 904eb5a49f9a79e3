package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * TQ1_0 and TQ2_0 from the ternary formulas: d = max |x|, trit = lroundf(x/d) in {-1, 0, 1},
 * code = trit + 1; TQ2_0 stores codes as bit pairs, TQ1_0 as base-3 numbers turned into
 * fractions of 256 by ceiling division.
 */
class TernaryEncodersTest {

    static byte[] encode(String type, float[] row) {
        return GgufEncoding.encode(type, row, 1, row.length, null);
    }

    static float[] decode(GgufBlockType type, byte[] b) {
        float[] y = new float[b.length / type.blockBytes() * type.blockElements()];
        type.decode(b, 0, y, 0, b.length / type.blockBytes());
        return y;
    }

    static int u16(byte[] b, int at) {
        return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8;
    }

    /** -0.5, 0, 0.5 in a pattern that is not periodic in 32. */
    static float[] ternaryGrid() {
        float[] x = new float[256];
        for (int i = 0; i < 256; i++) x[i] = ((i * 7 + i / 13) % 3 - 1) * 0.5f;
        x[5] = 0.5f;
        return x;
    }

    @Test
    void tq2_0StoresTritPlusOneInBitPairs() {
        float[] x = ternaryGrid();
        byte[] b = encode("tq2_0", x);
        assertThat(u16(b, 64)).isEqualTo(0x3800); // d = 0.5
        for (int j = 0; j < 64; j += 32) {
            for (int m = 0; m < 32; m++) {
                for (int n = 0; n < 4; n++) {
                    int code = (int) (x[4 * j + m + 32 * n] * 2) + 1;
                    assertThat((b[j + m] >> (2 * n)) & 3).isEqualTo(code);
                }
            }
        }
        assertThat(decode(GgufBlockType.TQ2_0, b)).containsExactly(x);
    }

    @Test
    void tq2_0RoundsHalfAwayFromZero() {
        // d = 1: lroundf(0.5) = 1 -> code 2, lroundf(-0.5) = -1 -> code 0, lroundf(0.49) = 0 -> code 1.
        float[] x = new float[256];
        x[0] = 1f;
        x[32] = 0.5f;
        x[64] = -0.5f;
        x[96] = 0.49f;
        byte[] b = encode("tq2_0", x);
        assertThat(b[0] & 0xFF).isEqualTo(2 | 2 << 2 | 0 << 4 | 1 << 6);
    }

    @Test
    void tq1_0PacksFiveTritsAsACeilingFraction() {
        // All zero: every code 1; five of them make 121, ceil(121 * 256 / 243) = 128; the qh bytes
        // hold four (40), times 3 = 120, ceil(120 * 256 / 243) = 127. d = 0.
        byte[] zero = encode("tq1_0", new float[256]);
        assertThat(Arrays.copyOfRange(zero, 0, 48)).containsOnly((byte) 128);
        assertThat(Arrays.copyOfRange(zero, 48, 52)).containsOnly((byte) 127);
        assertThat(u16(zero, 52)).isEqualTo(0);
        // Constant 0.5: d = 0.5, every code 2: 242 -> ceil(242 * 256 / 243) = 255; qh: 80 * 3 = 240 -> 253.
        float[] half = new float[256];
        Arrays.fill(half, 0.5f);
        byte[] c = encode("tq1_0", half);
        assertThat(Arrays.copyOfRange(c, 0, 48)).containsOnly((byte) 255);
        assertThat(Arrays.copyOfRange(c, 48, 52)).containsOnly((byte) 253);
        assertThat(u16(c, 52)).isEqualTo(0x3800);
    }

    @Test
    void tq1_0OfATernaryRowDecodesBack() {
        float[] x = ternaryGrid();
        byte[] b = encode("tq1_0", x);
        // Byte m of the first 32: digits of elements m, m+32, ..., m+128, most significant first.
        for (int m = 0; m < 32; m++) {
            int q = 0;
            for (int n = 0; n < 5; n++) q = q * 3 + (int) (x[m + 32 * n] * 2) + 1;
            assertThat(b[m] & 0xFF).isEqualTo((q * 256 + 242) / 243);
        }
        assertThat(decode(GgufBlockType.TQ1_0, b)).containsExactly(x);
    }
}
