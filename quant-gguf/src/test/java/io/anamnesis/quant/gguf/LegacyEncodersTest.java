package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0 blocks built from ggml's published reference formulas
 * (ggml-quants.c {@code quantize_row_*_ref}): the expected bytes are worked out in each test
 * from d, m and the level rule, and where the input lies on the grid the block decodes back
 * to it through the existing decoders.
 */
class LegacyEncodersTest {

    static byte[] encode(String type, float[] row) {
        return GgufEncoding.encode(type, row, 1, row.length, null);
    }

    static int u16(byte[] b, int at) {
        return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8;
    }

    static float[] decode(GgufBlockType type, byte[] blocks) {
        float[] y = new float[blocks.length / type.blockBytes() * type.blockElements()];
        type.decode(blocks, 0, y, 0, blocks.length / type.blockBytes());
        return y;
    }

    @Test
    void zeroRowsGiveZeroScalesAndTheMidLevel() {
        float[] zeros = new float[32];
        // Q8_0: d = 0, id = 0, roundf(0) = 0.
        assertThat(encode("q8_0", zeros)).containsOnly(0);
        // Q4_0: d = 0/-8 = -0 (f16 0x8000), id = 0, level (int)(0 + 8.5) = 8 in both nibbles.
        byte[] q4 = encode("q4_0", zeros);
        assertThat(u16(q4, 0)).isEqualTo(0x8000);
        assertThat(Arrays.copyOfRange(q4, 2, 18)).containsOnly((byte) 0x88);
        // Q5_0: level (int)(0 + 16.5) = 16: low nibbles 0, every qh bit set.
        byte[] q5 = encode("q5_0", zeros);
        assertThat(u16(q5, 0)).isEqualTo(0x8000);
        assertThat(Arrays.copyOfRange(q5, 2, 6)).containsOnly((byte) 0xFF);
        assertThat(Arrays.copyOfRange(q5, 6, 22)).containsOnly(0);
        // Q4_1/Q5_1: d = (0 - 0)/n = 0 and m = 0; levels (int)(0 + 0.5) = 0.
        assertThat(encode("q4_1", zeros)).containsOnly(0);
        assertThat(encode("q5_1", zeros)).containsOnly(0);
    }

    @Test
    void q8_0OnItsGridIsExactAndDecodesBack() {
        // amax = 127 * 0.5 -> d = 0.5 (f16 0x3800), 1/d = 2, q = x * 2.
        float[] x = new float[32];
        for (int j = 0; j < 32; j++) x[j] = (j * 8 - 127) * 0.5f; // -127 .. 121 step 8
        x[31] = 63.5f;
        byte[] b = encode("q8_0", x);
        assertThat(u16(b, 0)).isEqualTo(0x3800);
        for (int j = 0; j < 32; j++) assertThat(b[2 + j]).as("q[%d]", j).isEqualTo((byte) (x[j] * 2));
        assertThat(decode(GgufBlockType.Q8_0, b)).containsExactly(x);
    }

    @Test
    void q8_0RoundsHalfAwayFromZero() {
        // amax = 127 -> d = 1 (0x3C00): roundf(2.5) = 3, roundf(-2.5) = -3, roundf(0.5) = 1, roundf(-0.49) = 0.
        float[] x = new float[32];
        x[0] = 127f;
        x[1] = 2.5f;
        x[2] = -2.5f;
        x[3] = 0.5f;
        x[4] = -0.49f;
        x[5] = -126.5f;
        byte[] b = encode("q8_0", x);
        assertThat(u16(b, 0)).isEqualTo(0x3C00);
        assertThat(Arrays.copyOfRange(b, 2, 8)).containsExactly(127, 3, -3, 1, 0, -127);
    }

    @Test
    void q8_0ScaleUnderflowsAndOverflowsF16ButLevelsUseTheF32Scale() {
        // amax = 1e-7: d = 1e-7/127 is below half the smallest f16 subnormal (2^-25) -> stored 0,
        // while the levels still come from the float d: q = roundf(x * 127/1e-7).
        float[] tiny = new float[32];
        tiny[0] = 1e-7f;
        tiny[1] = -0.5e-7f;
        byte[] b = encode("q8_0", tiny);
        assertThat(u16(b, 0)).isEqualTo(0);
        assertThat(b[2]).isEqualTo((byte) 127);
        assertThat(b[3]).isEqualTo((byte) -64); // -63.5 rounds away from zero
        // amax = 127 * 70000: d = 70000 > 65504 -> f16 +inf (0x7C00).
        float[] huge = new float[32];
        huge[0] = 127 * 70000f;
        huge[1] = -70000f;
        b = encode("q8_0", huge);
        assertThat(u16(b, 0)).isEqualTo(0x7C00);
        assertThat(b[2]).isEqualTo((byte) 127);
        assertThat(b[3]).isEqualTo((byte) -1);
    }

    @Test
    void q8_0OfSubnormalsFollowsTheX86Conversion() {
        // x = 1e-40 everywhere: d = 1e-40/127 is an F32 subnormal whose reciprocal overflows to inf,
        // so x * id = inf; C's (int8_t) roundf(inf) on x86-64 (cvttss2si) is INT_MIN's low byte, 0.
        float[] x = new float[32];
        Arrays.fill(x, 1e-40f);
        x[1] = 0.0f; // 0 * inf = NaN -> also INT_MIN -> 0
        byte[] b = encode("q8_0", x);
        assertThat(u16(b, 0)).isEqualTo(0);
        assertThat(Arrays.copyOfRange(b, 2, 34)).containsOnly(0);
    }

    /**
     * quantize_row_q8_0_ref restated: amax by ggml's {@code MAX(amax, fabsf(x))} (a NaN wins only
     * when last), d = amax / 127 stored as f16, q = roundf(x * id) converted as x86-64 does (a
     * result outside int, NaN included, is INT_MIN, whose low byte is 0).
     */
    static byte[] q8_0Expected(float[] x) {
        byte[] out = new byte[x.length / 32 * 34];
        for (int b = 0; b < x.length / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) {
                float a = Math.abs(x[b * 32 + j]);
                amax = amax > a ? amax : a;
            }
            float d = amax / 127;
            float id = d != 0 ? 1.0f / d : 0.0f;
            short h = Float.floatToFloat16(d);
            out[b * 34] = (byte) h;
            out[b * 34 + 1] = (byte) (h >> 8);
            for (int j = 0; j < 32; j++) {
                float v = x[b * 32 + j] * id;
                double r = Math.signum(v) * Math.floor(Math.abs((double) v) + 0.5);
                out[b * 34 + 2 + j] = (byte) (Double.isNaN(r) || Math.abs(r) >= 0x1p31 ? Integer.MIN_VALUE : (int) r);
            }
        }
        return out;
    }

    /**
     * 300 blocks of 32, more than one piece of the encoders' scratch: ordinary values over seven
     * orders of magnitude, and blocks with a NaN (first, last), an infinity of either sign,
     * subnormals whose reciprocal scale overflows (block 100) and zeros (block 101).
     */
    static float[] rowWithSpecialBlocks(long seed) {
        java.util.Random r = new java.util.Random(seed);
        float[] x = new float[300 * 32];
        for (int i = 0; i < x.length; i++) x[i] = (float) (r.nextGaussian() * Math.pow(10, r.nextInt(7) - 4));
        x[7 * 32] = Float.NaN;
        x[8 * 32 + 31] = Float.NaN;
        x[255 * 32 + 3] = Float.POSITIVE_INFINITY;
        x[256 * 32 + 5] = Float.NEGATIVE_INFINITY;
        Arrays.fill(x, 100 * 32, 101 * 32, 1e-40f);
        Arrays.fill(x, 101 * 32, 102 * 32, 0f);
        return x;
    }

    @Test
    void q8_0RowsOfManyBlocksWithSpecialOnesInBetween() {
        float[] x = rowWithSpecialBlocks(5);
        for (int j = 0; j < 32; j++) x[299 * 32 + j] = (j - 16) * 0.5f + 0.25f; // ties after scaling
        assertThat(encode("q8_0", x)).containsExactly(q8_0Expected(x));
    }

    /** C's (int) of a float on x86-64: truncation, INT_MIN for NaN and what is out of range. */
    static int x86Int(float f) {
        return Float.isNaN(f) || Math.abs((double) f) >= 0x1p31 ? Integer.MIN_VALUE : (int) f;
    }

    /**
     * quantize_row_q4_0_ref restated: the first value of the largest magnitude by ggml's scan
     * ({@code if (amax < fabsf(v))}: NaN never, ties keep the first), d = max / -8 as f16,
     * {@code MIN(15, (int8_t)(x * id + 8.5f))} into a uint8_t, element j low and j + 16 high.
     */
    static byte[] q4_0Expected(float[] x) {
        byte[] out = new byte[x.length / 32 * 18];
        for (int b = 0; b < x.length / 32; b++) {
            float amax = 0;
            float max = 0;
            for (int j = 0; j < 32; j++) {
                float v = x[b * 32 + j];
                if (amax < Math.abs(v)) {
                    amax = Math.abs(v);
                    max = v;
                }
            }
            float d = max / -8;
            float id = d != 0 ? 1.0f / d : 0.0f;
            short h = Float.floatToFloat16(d);
            out[b * 18] = (byte) h;
            out[b * 18 + 1] = (byte) (h >> 8);
            for (int j = 0; j < 16; j++) {
                int lo = Math.min(15, (byte) x86Int(x[b * 32 + j] * id + 8.5f)) & 0xFF;
                int hi = Math.min(15, (byte) x86Int(x[b * 32 + 16 + j] * id + 8.5f)) & 0xFF;
                out[b * 18 + 2 + j] = (byte) (lo | hi << 4);
            }
        }
        return out;
    }

    @Test
    void q4_0RowsOfManyBlocksWithSpecialOnesInBetween() {
        float[] x = rowWithSpecialBlocks(6);
        // ties of magnitude with both signs: the first wins
        x[3 * 32 + 4] = 1e6f;
        x[3 * 32 + 9] = -1e6f;
        x[4 * 32 + 2] = -1e6f;
        x[4 * 32 + 30] = 1e6f;
        Arrays.fill(x, 102 * 32, 103 * 32, -3e-39f);
        assertThat(encode("q4_0", x)).containsExactly(q4_0Expected(x));
    }

    @Test
    void q4_0ScalesByTheSignedExtremeAndTruncatesPlusEightAndAHalf() {
        // max (largest |x|, signed) = -8 -> d = -8/-8 = 1 (0x3C00), id = 1; q = min(15, (int)(x + 8.5)).
        float[] x = new float[32];
        x[0] = -8f;   // 0
        x[1] = 7f;    // 15
        x[2] = 0.5f;  // (int) 9.0 = 9
        x[3] = 0.49f; // 8
        x[4] = -0.6f; // (int) 7.9 = 7
        x[16] = 6.6f; // (int) 15.1 = 15
        x[17] = 7.9f; // (int) 16.4 = 16 -> 15
        byte[] b = encode("q4_0", x);
        assertThat(u16(b, 0)).isEqualTo(0x3C00);
        // byte j holds element j (low nibble) and element j + 16 (high nibble); zeros give 8.
        assertThat(b[2] & 0xFF).isEqualTo(0 | 15 << 4);
        assertThat(b[3] & 0xFF).isEqualTo(15 | 15 << 4);
        assertThat(b[4] & 0xFF).isEqualTo(9 | 8 << 4);
        assertThat(b[5] & 0xFF).isEqualTo(8 | 8 << 4);
        assertThat(b[6] & 0xFF).isEqualTo(7 | 8 << 4);
        assertThat(b[7] & 0xFF).isEqualTo(8 | 8 << 4);
        // A positive extreme flips the sign of d: max = 4 -> d = -0.5 (0xB800), x = 4 -> (int)(-8 + 8.5) = 0.
        float[] y = new float[32];
        y[0] = 4f;
        y[1] = -3.5f; // -3.5 * -2 + 8.5 = 15.5 -> 15
        byte[] c = encode("q4_0", y);
        assertThat(u16(c, 0)).isEqualTo(0xB800);
        assertThat(c[2] & 0xF).isEqualTo(0);
        assertThat(c[3] & 0xF).isEqualTo(15);
        assertThat(decode(GgufBlockType.Q4_0, c)[0]).isEqualTo(4f);
    }

    @Test
    void q4_1SpansMinToMaxInFifteenSteps() {
        // min = -1, max = 2 -> d = 3/15 = 0.2 (f16 0x3266), m = -1 (0xBC00); q = min(15, (int)((x + 1)/0.2 + 0.5)).
        float[] x = new float[32];
        Arrays.fill(x, -1f);
        x[1] = 2f;    // 15
        x[2] = 0f;    // 1 * 5 + 0.5 -> 5
        x[16] = 0.5f; // 1/0.2f rounds to exactly 5: 1.5 * 5 + 0.5 = 8 -> 8
        byte[] b = encode("q4_1", x);
        assertThat(u16(b, 0)).isEqualTo(Float.floatToFloat16(0.2f) & 0xFFFF).isEqualTo(0x3266);
        assertThat(u16(b, 2)).isEqualTo(0xBC00);
        assertThat(1 / (3f / 15)).isEqualTo(5f);
        assertThat(b[4] & 0xFF).isEqualTo(0 | 8 << 4);
        assertThat(b[5] & 0xF).isEqualTo(15);
        assertThat(b[6] & 0xF).isEqualTo(5);
    }

    @Test
    void q5_0PutsTheFifthBitsInQh() {
        // max = -16 -> d = 1; q = min(31, (int)(x + 16.5)): -16 -> 0, 15 -> 31, 0 -> 16 (bit 4 set), -1 -> 15.
        float[] x = new float[32];
        x[0] = -16f;
        x[1] = 15f;
        x[2] = -1f;
        x[16] = -16f;
        byte[] b = encode("q5_0", x);
        assertThat(u16(b, 0)).isEqualTo(0x3C00);
        int qh = u16(b, 2) | u16(b, 4) << 16;
        // levels: [0]=0, [1]=31, [2]=15, [3..15]=16, [16]=0, [17..31]=16
        int expectedQh = 0;
        int[] levels = new int[32];
        Arrays.fill(levels, 16);
        levels[0] = 0;
        levels[1] = 31;
        levels[2] = 15;
        levels[16] = 0;
        for (int j = 0; j < 32; j++) expectedQh |= (levels[j] >> 4 & 1) << j;
        assertThat(qh).isEqualTo(expectedQh);
        for (int j = 0; j < 16; j++) {
            assertThat(b[6 + j] & 0xFF).as("qs[%d]", j).isEqualTo((levels[j] & 0xF) | (levels[j + 16] & 0xF) << 4);
        }
        assertThat(decode(GgufBlockType.Q5_0, b)).containsExactly(
                Arrays.copyOf(new float[] {-16f, 15f, -1f}, 32)[0], 15f, -1f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f,
                -16f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f, 0f);
    }

    @Test
    void q5_1OnItsGridDecodesBack() {
        // min = -2, max = 29 -> d = 31/31 = 1, m = -2: x = -2 + q for q = 0..31 is exact.
        float[] x = new float[32];
        for (int j = 0; j < 32; j++) x[j] = -2f + (j * 7 % 32);
        byte[] b = encode("q5_1", x);
        assertThat(u16(b, 0)).isEqualTo(0x3C00);
        assertThat(u16(b, 2)).isEqualTo(0xC000);
        assertThat(decode(GgufBlockType.Q5_1, b)).containsExactly(x);
    }

    @Test
    void q4_1OfAConstantRowStoresItAsTheMin() {
        // max == min: d = 0, id = 0, every level (int)(0 * 0 + 0.5) = 0, m = the constant.
        float[] x = new float[32];
        Arrays.fill(x, 0.5f);
        byte[] b = encode("q4_1", x);
        assertThat(u16(b, 0)).isEqualTo(0);
        assertThat(u16(b, 2)).isEqualTo(0x3800);
        assertThat(Arrays.copyOfRange(b, 4, 20)).containsOnly(0);
        assertThat(decode(GgufBlockType.Q4_1, b)).containsOnly(0.5f);
    }
}
