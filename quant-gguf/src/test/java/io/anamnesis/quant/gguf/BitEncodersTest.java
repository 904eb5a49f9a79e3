package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Q1_0 (sign bits, d = mean |x|) and Q2_0 (codes round(x/d) + 1, d = max |x|) from their formulas. */
class BitEncodersTest {

    static int u16(byte[] b, int at) {
        return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8;
    }

    static float[] decode(GgufBlockType type, byte[] b) {
        float[] y = new float[b.length / type.blockBytes() * type.blockElements()];
        type.decode(b, 0, y, 0, b.length / type.blockBytes());
        return y;
    }

    @Test
    void q1_0StoresSignsAndTheMeanMagnitude() {
        // +-0.25 everywhere: d = 0.25 (0x3400); bit j set for x >= 0, which includes -0.0.
        float[] x = new float[128];
        for (int j = 0; j < 128; j++) x[j] = (j % 3 == 0) ? -0.25f : 0.25f;
        byte[] b = GgufEncoding.encode("q1_0", x, 1, 128, null);
        assertThat(u16(b, 0)).isEqualTo(0x3400);
        for (int j = 0; j < 128; j++) assertThat((b[2 + j / 8] >> (j % 8)) & 1).isEqualTo(x[j] >= 0 ? 1 : 0);
        assertThat(decode(GgufBlockType.Q1_0, b)).containsExactly(x);

        float[] signs = new float[128];
        signs[0] = -0.0f;   // >= 0 -> set
        signs[1] = -1e-30f; // < 0 -> clear
        signs[2] = Float.NaN; // NaN >= 0 is false -> clear
        byte[] s = GgufEncoding.encode("q1_0", signs, 1, 128, null);
        assertThat(s[2] & 7).isEqualTo(0b001);
    }

    @Test
    void q2_0RoundsHalfAwayAndDecodesTernaryRowsBack() {
        // d = max |x| = 2 (0x4000); x/d in {-1, 0, 1} -> codes 0, 1, 2 at bits 2(j % 4) of byte j / 4.
        float[] x = new float[64];
        for (int j = 0; j < 64; j++) x[j] = ((j * 5) % 3 - 1) * 2f;
        x[0] = 2f;
        byte[] b = GgufEncoding.encode("q2_0", x, 1, 64, null);
        assertThat(u16(b, 0)).isEqualTo(0x4000);
        for (int j = 0; j < 64; j++) assertThat((b[2 + j / 4] >> (2 * (j % 4))) & 3).isEqualTo((int) (x[j] / 2) + 1);
        assertThat(decode(GgufBlockType.Q2_0, b)).containsExactly(x);

        // Ties: roundf(0.5) = 1 -> code 2, roundf(-0.5) = -1 -> code 0.
        float[] t = new float[64];
        t[0] = 1f;
        t[1] = 0.5f;
        t[2] = -0.5f;
        t[3] = 0.49f;
        byte[] c = GgufEncoding.encode("q2_0", t, 1, 64, null);
        assertThat(c[2] & 0xFF).isEqualTo(2 | 2 << 2 | 0 << 4 | 1 << 6);
    }
}
