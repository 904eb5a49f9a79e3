package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * F16 and BF16 encoding, expected bits worked out from IEEE 754 binary16 / bfloat16 with
 * round-to-nearest-even and ggml's NaN rules (F16: every NaN becomes 0x7E00 with its sign;
 * BF16: a NaN keeps its upper 16 bits with the quiet bit 0x0040 forced).
 */
class FloatEncodersTest {

    static int[] halves(String type, float... values) {
        byte[] b = GgufEncoding.encode(type, values, 1, values.length, null);
        int[] h = new int[values.length];
        for (int i = 0; i < h.length; i++) h[i] = (b[2 * i] & 0xFF) | (b[2 * i + 1] & 0xFF) << 8;
        return h;
    }

    static float bits(int b) {
        return Float.intBitsToFloat(b);
    }

    @Test
    void f16KeepsInfinitiesZerosAndCanonicalisesNaN() {
        assertThat(halves("f16", Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, -0.0f, 0.0f,
                Float.NaN, bits(0xFFC0_0000), bits(0x7F80_0001), bits(0xFFA1_2345)))
                .containsExactly(0x7C00, 0xFC00, 0x8000, 0x0000, 0x7E00, 0xFE00, 0x7E00, 0xFE00);
    }

    @Test
    void f16RoundsToNearestEvenAtTheTopOfTheRange() {
        // 65504 = max f16 (0x7BFF); the next step would be 65536, so 65520 is the tie: even is 65536 -> inf.
        assertThat(halves("f16", 65504f, 65519.996f, 65520f, -65520f, 1e5f, 3e38f))
                .containsExactly(0x7BFF, 0x7BFF, 0x7C00, 0xFC00, 0x7C00, 0x7C00);
    }

    @Test
    void f16SubnormalsAndTies() {
        // f16 subnormal step 2^-24: 2^-24 -> 0x0001; 2^-25 is the tie between 0 and 1 -> 0 (even);
        // 3 * 2^-25 = 1.5 steps -> 2 (even); a hair above 2^-25 -> 1.
        // 1 + 2^-11 is the tie between 1 (0x3C00) and 1 + 2^-10 (0x3C01) -> 0x3C00; 1 + 3 * 2^-11 -> 0x3C02.
        // 1e-40 (an F32 subnormal) is far below the f16 range -> +0 / -0.
        assertThat(halves("f16", 0x1p-24f, 0x1p-25f, 3 * 0x1p-25f, 0x1p-25f + 0x1p-40f,
                1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 1e-40f, -1e-40f, 0x1p-14f))
                .containsExactly(0x0001, 0x0000, 0x0002, 0x0001, 0x3C00, 0x3C02, 0x0000, 0x8000, 0x0400);
    }

    @Test
    void bf16RoundsToNearestEvenAndQuietsNaN() {
        // bf16 keeps 7 mantissa bits: 1 + 2^-8 is the tie between 0x3F80 and 0x3F81 -> 0x3F80;
        // 1 + 3 * 2^-8 ties between 0x3F81 and 0x3F82 -> 0x3F82; just above a tie rounds up.
        // FLT_MAX rounds up to inf; 1e-40 = 1.0019 * 2^-133 is one bf16 subnormal step.
        assertThat(halves("bf16", 1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 1 + 0x1p-8f + 0x1p-20f, -0.0f,
                Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, bits(0x7FA1_2345), bits(0xFF81_0000),
                bits(0x7F7F_FFFF), 1e-40f))
                .containsExactly(0x3F80, 0x3F82, 0x3F81, 0x8000, 0x7F80, 0xFF80, 0x7FE1, 0xFFC1,
                        0x7F80, 0x0001);
    }

    @Test
    void f32IsCopiedBitForBit() {
        float[] x = {1.5f, -0.0f, bits(0x7FA1_2345), Float.MIN_VALUE};
        byte[] b = GgufEncoding.encode("F32", x, 1, 4, null);
        for (int i = 0; i < 4; i++) {
            int v = (b[4 * i] & 0xFF) | (b[4 * i + 1] & 0xFF) << 8 | (b[4 * i + 2] & 0xFF) << 16 | (b[4 * i + 3] & 0xFF) << 24;
            assertThat(v).isEqualTo(Float.floatToRawIntBits(x[i]));
        }
    }
}
