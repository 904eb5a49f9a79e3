package io.anamnesis.api;

import io.anamnesis.api.numeric.Floats;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

class FloatsTest {
    @Test
    void bf16NarrowingRoundsToNearestEven() {
        // 1.0 + 2^-8 is exactly half-way between BF16 1.0 and 1.0078125: ties go to the even (1.0).
        assertThat(Floats.f32ToBf16(Float.intBitsToFloat(0x3F80_8000))).isEqualTo((short) 0x3F80);
        // 1.0078125 + 2^-8 is half-way with an odd lower neighbour: rounds up to 0x3F82.
        assertThat(Floats.f32ToBf16(Float.intBitsToFloat(0x3F81_8000))).isEqualTo((short) 0x3F82);
        // Just above half-way rounds up.
        assertThat(Floats.f32ToBf16(Float.intBitsToFloat(0x3F80_8001))).isEqualTo((short) 0x3F81);
        // Negative zero keeps its sign.
        assertThat(Floats.f32ToBf16(-0.0f)).isEqualTo((short) 0x8000);
    }

    @Test
    void bf16NarrowingKeepsNanANan() {
        // The plain rounding formula carries this NaN into +infinity (0x7F80).
        short narrowed = Floats.f32ToBf16(0x7F80_8001 | 0x7FFF);
        assertThat(Float.isNaN(Floats.bf16ToF32(narrowed))).isTrue();
        assertThat(Floats.f32ToBf16(Float.intBitsToFloat(0xFFC0_0000))).isEqualTo((short) 0xFFC0);
    }

    @Test
    void bf16NarrowingOfAnArrayRoundsEveryValueAsTheRuleSays() {
        // {F32 bits, BF16 bits}: ties to even, just above a tie, signed zero, the largest finite
        // float carried to infinity, infinities, NaNs kept quiet with sign and upper payload,
        // subnormals rounding to zero or up
        int[][] cases = {
                {0x3F80_8000, 0x3F80}, {0x3F81_8000, 0x3F82}, {0x3F80_8001, 0x3F81}, {0x8000_0000, 0x8000},
                {0x7F7F_FFFF, 0x7F80}, {0xFF7F_FFFF, 0xFF80}, {0x7F80_0000, 0x7F80}, {0xFF80_0000, 0xFF80},
                {0x7F80_0001, 0x7FC0}, {0xFFFF_FFFF, 0xFFFF}, {0x7FBF_FFFF, 0x7FFF}, {0xFF81_0000, 0xFFC1},
                {0x0000_0001, 0x0000}, {0x0000_8000, 0x0000}, {0x0001_8000, 0x0002}, {0x8000_8001, 0x8001},
                {0x4049_0FDB, 0x4049}, {0xC2F6_E979, 0xC2F7},
        };
        // the cases repeated past a vector width, at an offset in both arrays
        int n = cases.length * 5;
        float[] values = new float[n + 3];
        short[] out = new short[n + 7];
        for (int i = 0; i < n; i++) values[3 + i] = Float.intBitsToFloat(cases[i % cases.length][0]);
        Floats.f32ToBf16(values, 3, n, out, 7, new int[n]);
        for (int i = 0; i < n; i++) {
            int[] c = cases[i % cases.length];
            assertThat(out[7 + i] & 0xFFFF).as("F32 %08x", c[0]).isEqualTo(c[1]);
        }
        assertThat(out[6]).isZero();
    }

    @Test
    void f16NarrowingHandlesSubnormalsAndOverflow() {
        assertThat(Floats.f32ToF16(65504f)).isEqualTo((short) 0x7BFF);   // largest finite
        assertThat(Floats.f32ToF16(65520f)).isEqualTo((short) 0x7C00);   // rounds to infinity
        assertThat(Floats.f32ToF16(0x1p-24f)).isEqualTo((short) 0x0001); // smallest subnormal
        assertThat(Floats.f16ToF32((short) 0x3C00)).isEqualTo(1.0f);
    }
}
