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
    void f16NarrowingHandlesSubnormalsAndOverflow() {
        assertThat(Floats.f32ToF16(65504f)).isEqualTo((short) 0x7BFF);   // largest finite
        assertThat(Floats.f32ToF16(65520f)).isEqualTo((short) 0x7C00);   // rounds to infinity
        assertThat(Floats.f32ToF16(0x1p-24f)).isEqualTo((short) 0x0001); // smallest subnormal
        assertThat(Floats.f16ToF32((short) 0x3C00)).isEqualTo(1.0f);
    }
}
