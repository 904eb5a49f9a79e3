package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MXFP4 and NVFP4 from the OCP MX / NVFP4 formulas as ggml applies them: the E2M1 values
 * {0, 0.5, 1, 1.5, 2, 3, 4, 6} and their negatives, an E8M0 scale 2^(floor(log2 amax) - 2)
 * (MXFP4) or a UE4M3 scale amax/6 (NVFP4) per block, nearest code with the first on a tie.
 */
class Fp4EncodersTest {

    /** E2M1 value of each code in ggml's order (kvalues_mxfp4 / 2). */
    static final float[] E2M1 = {0, 0.5f, 1, 1.5f, 2, 3, 4, 6, 0, -0.5f, -1, -1.5f, -2, -3, -4, -6};

    static float[] decode(GgufBlockType type, byte[] b) {
        float[] y = new float[b.length / type.blockBytes() * type.blockElements()];
        type.decode(b, 0, y, 0, b.length / type.blockBytes());
        return y;
    }

    static int code(byte[] b, int at, int element, int half) {
        int v = b[at + element % half] & 0xFF;
        return element < half ? v & 0xF : v >> 4;
    }

    @Test
    void mxfp4OnTheE2M1GridIsExact() {
        // amax = 6: floor(log2 6) = 2 -> e = 2 - 2 + 127 = 127, scale 2^0 = 1: codes are the values.
        float[] x = new float[32];
        for (int j = 0; j < 32; j++) x[j] = E2M1[(j * 5) % 16];
        x[3] = 6f;
        byte[] b = GgufEncoding.encode("mxfp4", x, 1, 32, null);
        assertThat(b[0] & 0xFF).isEqualTo(127);
        for (int j = 0; j < 32; j++) {
            int c = code(b, 1, j, 16);
            assertThat(E2M1[c]).as("element %d", j).isEqualTo(x[j]);
        }
        assertThat(decode(GgufBlockType.MXFP4, b)).containsExactly(x);
    }

    @Test
    void mxfp4TiesTakeTheFirstCodeAndTheExponentFollowsTheBinade() {
        // amax = 8 -> e = 3 - 2 + 127 = 128, scale 2: grid {0, 1, 2, 3, 4, 6, 8, 12}.
        // 2.5 is halfway between 2 (code 2) and 3 (code 3) -> 2; 7 between 6 (5) and 8 (6) -> 5;
        // -0.5 between 0 (code 0) and -1 (code 9) -> 0; 0.4 -> 0.
        float[] x = new float[32];
        x[0] = 8f;
        x[1] = 2.5f;
        x[2] = 7f;
        x[3] = -0.5f;
        x[4] = 0.4f;
        x[5] = -12f; // amax is now 12: floor(log2 12) = 3 still
        byte[] b = GgufEncoding.encode("mxfp4", x, 1, 32, null);
        assertThat(b[0] & 0xFF).isEqualTo(128);
        assertThat(new int[] {code(b, 1, 0, 16), code(b, 1, 1, 16), code(b, 1, 2, 16), code(b, 1, 3, 16),
                code(b, 1, 4, 16), code(b, 1, 5, 16)}).containsExactly(6, 2, 5, 0, 0, 15);
        // A zero block: e = 0 and every code 0.
        assertThat(GgufEncoding.encode("mxfp4", new float[32], 1, 32, null)).containsOnly(0);
    }

    @Test
    void ue4m3RoundsTheMantissaByItsNextBit() {
        assertThat(Fp4Encoders.ue4m3(1.0f)).isEqualTo(7 << 3);            // 2^0: exponent 0 + 7
        assertThat(Fp4Encoders.ue4m3(1.0625f)).isEqualTo(7 << 3 | 1);     // 1.0001b: round bit set -> up
        assertThat(Fp4Encoders.ue4m3(1.03125f)).isEqualTo(7 << 3);        // 1.00001b: below the round bit
        assertThat(Fp4Encoders.ue4m3(1.9375f)).isEqualTo(8 << 3);         // 1.1111b rounds to 2.0
        assertThat(Fp4Encoders.ue4m3(448f)).isEqualTo(0x7E);              // 1.75 * 2^8: exponent 15
        assertThat(Fp4Encoders.ue4m3(1e9f)).isEqualTo(0x7E);
        assertThat(Fp4Encoders.ue4m3(0x1p-8f)).isEqualTo(2);              // subnormal: (int)(2^-8 * 512 + 0.5) = 2
        assertThat(Fp4Encoders.ue4m3(0x1p-11f)).isEqualTo(0);             // (int)(0.25 + 0.5) = 0
        assertThat(Fp4Encoders.ue4m3(0f)).isEqualTo(0);
        assertThat(Fp4Encoders.ue4m3(-1f)).isEqualTo(0);
        assertThat(Fp4Encoders.ue4m3(Float.NaN)).isEqualTo(0);
    }

    @Test
    void nvfp4OnTheE2M1GridIsExact() {
        // Each 16 with amax 6: 6/6 = 1 -> UE4M3 0x38, which decodes to 1 (0.5 as ggml's half scale
        // times the doubled codes): codes are the values, four sub-blocks of 16.
        float[] x = new float[64];
        for (int j = 0; j < 64; j++) x[j] = E2M1[(j * 3) % 16];
        for (int sub = 0; sub < 4; sub++) x[16 * sub + 1] = -6f;
        byte[] b = GgufEncoding.encode("nvfp4", x, 1, 64, null);
        for (int sub = 0; sub < 4; sub++) assertThat(b[sub] & 0xFF).isEqualTo(0x38);
        for (int j = 0; j < 64; j++) {
            int c = code(b, 4 + 8 * (j / 16), j % 16, 8);
            assertThat(E2M1[c]).as("element %d", j).isEqualTo(x[j]);
        }
        assertThat(decode(GgufBlockType.NVFP4, b)).containsExactly(x);
    }
}
