package io.anamnesis.quant.gguf;

import io.anamnesis.api.UnsupportedFeatureException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.Arrays;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Edge rows of the i-quant encoders with expected bytes worked out from the block layouts
 * of ggml-common.h and the arithmetic of ggml-quants.c (comments show the reasoning), plus
 * properties that arithmetic implies: values on the IQ4 grids come back exactly, scaling a
 * row by a power of two changes only its f16 scale, negating it only its sign bits. The
 * bytes of ordinary rows are checked against ggml itself in {@link IqEncodersOracleTest}.
 */
class IqEncodersTest {

    static byte[] encode(GgufBlockType type, float[] x, int rows, float[] importance) {
        return GgufEncoding.encode(type.name(), x, rows, x.length / rows, importance);
    }

    /** Positive, uneven weights, as an importance row looks. */
    static float[] importance(int n) {
        float[] w = new float[n];
        for (int i = 0; i < n; i++) w[i] = 0.25f + (i * 7 % 11) / 4f;
        return w;
    }

    /** Values of about +-2 with no exact zeros, scaled so every f16 scale below stays a normal number. */
    static float[] weightLike(long seed, int n) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            double g = 0;
            for (int k = 0; k < 4; k++) g += r.nextDouble() - 0.5;   // a bell shape, no exact zeros
            x[i] = (float) (g * 4 + (g < 0 ? -0.01 : 0.01));
        }
        return x;
    }

    static float[] imp(GgufBlockType type, int n, boolean withImportance) {
        return withImportance || GgufEncoders.requiresImportance(type) ? importance(n) : null;
    }

    // ------------------------------------------------------------ all-zero rows

    /**
     * A zero row: every grid type skips every block (its max is below the group threshold)
     * and keeps the block as zeroed, d = 0 included; IQ1_S/IQ1_M leave qh's scale bits unset
     * as the super-block scale stays 0.
     */
    @ParameterizedTest
    @EnumSource(value = GgufBlockType.class, names = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"})
    void zeroRowsGiveZeroBlocksOnTheGrids(GgufBlockType type) {
        for (boolean withImportance : new boolean[]{false, true}) {
            byte[] q = encode(type, new float[512], 2, imp(type, 256, withImportance));
            assertThat(q).hasSize(2 * type.blockBytes()).containsOnly(0);
        }
    }

    /**
     * IQ4_NL, zero block: scale 0 is stored as f16 0x0000, and with id = 0 every value
     * becomes 0, whose nearest codebook entry is +1 (index 8; -10 is farther), so each
     * byte packs 8 | 8 << 4 = 0x88.
     */
    @Test
    void iq4NlZeroBlockIsScaleZeroAndTheCodeOfOne() {
        byte[] q = encode(GgufBlockType.IQ4_NL, new float[64], 1, null);
        byte[] block = new byte[18];
        Arrays.fill(block, 2, 18, (byte) 0x88);
        assertThat(Arrays.copyOfRange(q, 0, 18)).isEqualTo(block);
        assertThat(Arrays.copyOfRange(q, 18, 36)).isEqualTo(block);
    }

    /**
     * IQ4_XS, zero super-block: d = -max_scale/32 = -0/32 = -0.0, f16 0x8000; each block's
     * 6-bit scale is nearest_int(0) + 32 = 32, so scales_l nibbles are 0 and every 2-bit
     * scales_h field is 0b10 (0xAAAA); the values code as in IQ4_NL (0x88).
     */
    @Test
    void iq4XsZeroBlockIsNegativeZeroScaleAndMidScales() {
        byte[] q = encode(GgufBlockType.IQ4_XS, new float[256], 1, null);
        byte[] block = new byte[136];
        block[1] = (byte) 0x80;
        block[2] = (byte) 0xAA;
        block[3] = (byte) 0xAA;
        Arrays.fill(block, 8, 136, (byte) 0x88);
        assertThat(q).isEqualTo(block);
    }

    /**
     * IQ4_NL with a NaN (ggml does not abort here): NaN poisons sumqx and sumq2, so every
     * {@code sumq2 > 0} test fails and the scale is 0 (f16 0x0000); with id = 0 each value
     * maps to 0 (code 8), but 0 * NaN stays NaN, for which best_index_int8's search never
     * lowers its upper bound: code 15.
     */
    @Test
    void iq4NlNanGivesScaleZeroAndTopCode() {
        float[] x = new float[32];
        for (int i = 0; i < 32; i++) x[i] = -1 + i / 16f;
        x[3] = Float.NaN;
        byte[] q = encode(GgufBlockType.IQ4_NL, x, 1, null);
        byte[] expected = new byte[18];
        Arrays.fill(expected, 2, 18, (byte) 0x88);
        expected[2 + 3] = (byte) 0x8F;
        assertThat(q).isEqualTo(expected);
    }

    // ------------------------------------------------------------ values on the IQ4 grids

    /**
     * IQ4_NL: a block that is 2^-6 times codebook values (each twice) is fitted exactly:
     * the trial with id = 1/c finds every index, and with c a power of two every w*q*x is
     * c times w*q*q bit for bit, so d = sumqx/sumq2 = c; f16(2^-6) = 0x2400 and the values
     * decode back unchanged.
     */
    @Test
    void iq4NlReproducesValuesOnItsGrid() {
        float c = 0x1p-6f;
        float[] x = new float[64];
        for (int i = 0; i < 64; i++) x[i] = c * GgufTables.KVALUES_IQ4NL[(i * 5 + i / 32) % 16];
        for (float[] importance : new float[][]{null, importance(64)}) {
            byte[] q = encode(GgufBlockType.IQ4_NL, x, 1, importance);
            assertThat(q[0] & 0xFF | (q[1] & 0xFF) << 8).isEqualTo(0x2400);
            float[] back = new float[64];
            GgufBlockType.IQ4_NL.decode(q, 0, back, 0, 2);
            assertThat(back).containsExactly(x);
        }
    }

    /**
     * IQ4_XS: blocks of c_b times codebook values with c_b = 2^-4, 2^-5, 2^-6 in turn. Each
     * block fits c_b exactly (as IQ4_NL), d = -2^-4/32 = -2^-9 (f16 0x9800) and the block
     * scales are -32, -16, -8 (stored 0, 16, 24), so d * l = c_b and every value comes back.
     */
    @Test
    void iq4XsReproducesValuesOnItsGrid() {
        float[] x = new float[256];
        for (int i = 0; i < 256; i++) {
            float c = new float[]{0x1p-4f, 0x1p-5f, 0x1p-6f}[(i / 32) % 3];
            x[i] = c * GgufTables.KVALUES_IQ4NL[(i * 3 + i / 16) % 16];
        }
        for (float[] importance : new float[][]{null, importance(256)}) {
            byte[] q = encode(GgufBlockType.IQ4_XS, x, 1, importance);
            assertThat(q[0] & 0xFF | (q[1] & 0xFF) << 8).isEqualTo(0x9800);
            for (int ib = 0; ib < 8; ib++) {
                int l = (q[4 + ib / 2] >> (4 * (ib % 2)) & 0xF) | ((q[2] & 0xFF | (q[3] & 0xFF) << 8) >> (2 * ib) & 3) << 4;
                assertThat(l).as("block %d scale", ib).isEqualTo(new int[]{0, 16, 24}[ib % 3]);
            }
            float[] back = new float[256];
            GgufBlockType.IQ4_XS.decode(q, 0, back, 0, 1);
            assertThat(back).containsExactly(x);
        }
    }

    // ------------------------------------------------------------ properties of the arithmetic

    /**
     * Every step of these encoders is homogeneous in the values (products and quotients of
     * values, weights x^2 or w*sqrt(sigma2 + x^2), rounding of value ratios), so a row times
     * 2^k is coded with the same indices and block scales and an f16 scale 2^k times larger
     * (as long as both scales are normal f16 numbers, whose rounding does not depend on the exponent).
     */
    @ParameterizedTest
    @EnumSource(value = GgufBlockType.class, names = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S",
            "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS"})
    void scalingByAPowerOfTwoOnlyScalesTheF16Scale(GgufBlockType type) {
        float[] x = weightLike(type.ordinal(), 1024);
        for (boolean withImportance : new boolean[]{false, true}) {
            float[] importance = imp(type, 512, withImportance);
            byte[] base = encode(type, x, 2, importance);
            for (float factor : new float[]{8f, 0.25f}) {
                float[] scaled = x.clone();
                for (int i = 0; i < scaled.length; i++) scaled[i] *= factor;
                byte[] q = encode(type, scaled, 2, importance);
                for (int b = 0; b < base.length / type.blockBytes(); b++) {
                    int o = b * type.blockBytes();
                    float d0 = Float.float16ToFloat((short) superScale(type, base, o));
                    float d1 = Float.float16ToFloat((short) superScale(type, q, o));
                    assertThat(d1).as("%s block %d scale", type, b).isEqualTo(d0 * factor);
                    assertThat(withoutSuperScale(type, q, o)).as("%s block %d", type, b)
                            .isEqualTo(withoutSuperScale(type, base, o));
                }
            }
        }
    }

    /** The f16 super-block scale; IQ1_M spreads it over the top nibbles of its four scale words. */
    static int superScale(GgufBlockType type, byte[] q, int o) {
        if (type != GgufBlockType.IQ1_M) return q[o] & 0xFF | (q[o + 1] & 0xFF) << 8;
        int s = 0;
        for (int i = 0; i < 4; i++) s |= ((q[o + 48 + 2 * i + 1] & 0xFF) >> 4) << (4 * i);
        return s;
    }

    static byte[] withoutSuperScale(GgufBlockType type, byte[] q, int o) {
        byte[] b = Arrays.copyOfRange(q, o, o + type.blockBytes());
        if (type != GgufBlockType.IQ1_M) {
            b[0] = 0;
            b[1] = 0;
        } else {
            for (int i = 0; i < 4; i++) b[48 + 2 * i + 1] &= 0x0F;
        }
        return b;
    }

    /**
     * The grid types code |x| and keep signs apart, with weights that do not see the sign, so
     * -x differs from x only in its sign bits, all inverted: the 8-bit sign bytes of IQ2_S and
     * IQ3_S, the 7-bit codes of the even-parity types (8 - n negatives keeps n's parity, and the
     * least important value flipped is the same).
     */
    @ParameterizedTest
    @EnumSource(value = GgufBlockType.class, names = {"IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S"})
    void negatingARowInvertsOnlyItsSignBits(GgufBlockType type) {
        float[] x = weightLike(100 + type.ordinal(), 512);
        float[] minus = x.clone();
        for (int i = 0; i < minus.length; i++) minus[i] = -minus[i];
        for (boolean withImportance : new boolean[]{false, true}) {
            float[] importance = imp(type, 512, withImportance);
            byte[] q = encode(type, x, 1, importance);
            byte[] expected = q.clone();
            for (int o = 0; o < q.length; o += type.blockBytes()) {
                switch (type) {
                    case IQ2_S -> flip(expected, o + 34, 32, 0xFF);
                    case IQ3_S -> flip(expected, o + 74, 32, 0xFF);
                    case IQ3_XXS -> {
                        for (int ib = 0; ib < 8; ib++) flipWord(expected, o + 66 + 4 * ib, 0x0FFF_FFFF);
                    }
                    case IQ2_XXS -> {
                        for (int ib = 0; ib < 8; ib++) flipWord(expected, o + 2 + 8 * ib + 4, 0x0FFF_FFFF);
                    }
                    case IQ2_XS -> {
                        for (int i = 0; i < 32; i++) expected[o + 2 + 2 * i + 1] ^= (byte) 0xFE;
                    }
                    default -> throw new AssertionError(type);
                }
            }
            assertThat(encode(type, minus, 1, importance)).isEqualTo(expected);
        }
    }

    static void flip(byte[] b, int at, int n, int mask) {
        for (int i = 0; i < n; i++) b[at + i] ^= (byte) mask;
    }

    static void flipWord(byte[] b, int at, int mask) {
        for (int i = 0; i < 4; i++) b[at + i] ^= (byte) (mask >>> (8 * i));
    }

    /** Rows are independent: encoding them together or one by one gives the same bytes. */
    @Test
    void rowsAreEncodedIndependently() {
        GgufBlockType type = GgufBlockType.IQ3_S;
        float[] x = weightLike(7, 768);
        byte[] all = encode(type, x, 3, null);
        for (int r = 0; r < 3; r++) {
            byte[] one = encode(type, Arrays.copyOfRange(x, 256 * r, 256 * (r + 1)), 1, null);
            assertThat(Arrays.copyOfRange(all, 110 * r, 110 * (r + 1))).isEqualTo(one);
        }
    }

    // ------------------------------------------------------------ refusals

    @ParameterizedTest
    @EnumSource(value = GgufBlockType.class, names = {"IQ2_XXS", "IQ2_XS", "IQ1_S"})
    void typesGgmlRequiresAnImportanceMatrixForRefuseNone(GgufBlockType type) {
        assertThatThrownBy(() -> encode(type, new float[256], 1, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("importance matrix");
    }

    /** ggml aborts (GGML_ASSERT in the grid search) on a NaN in an IQ3_S or IQ2_S row. */
    @ParameterizedTest
    @EnumSource(value = GgufBlockType.class, names = {"IQ2_S", "IQ3_S"})
    void rowsGgmlAbortsOnAreRefused(GgufBlockType type) {
        float[] x = weightLike(3, 256);
        x[10] = Float.NaN;
        assertThatThrownBy(() -> encode(type, x, 1, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("ggml aborts");
    }

    @Test
    void entryPointChecksItsArguments() {
        assertThatThrownBy(() -> GgufEncoding.encode("iq9_s", new float[32], 1, 32, null))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("unknown ggml type");
        assertThatThrownBy(() -> GgufEncoding.encode("iq3_s", new float[128], 1, 128, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("block of 256");
        assertThatThrownBy(() -> GgufEncoding.encode("iq4_nl", new float[32], 2, 32, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32 values given");
        assertThatThrownBy(() -> GgufEncoding.encode("iq4_xs", new float[256], 1, 256, new float[255]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("importance has 255 values");
        assertThat(GgufEncoding.encode("IQ4_NL", new float[64], 2, 32, null)).hasSize(36);
    }
}
