package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * The llama3 rope factors against values not computed by {@link RopeFreqs}: the factors torch
 * computes with the converter's code for Llama 3.1, 3.2 and 3.3 (constants below, from
 * {@code bench/scripts/llama3_rope_factors.py} on torch 1.13), the same formula in double
 * (Hugging Face's {@code _compute_llama3_parameters}, written out here), and with
 * {@code AMN_ROPE_FACTORS_TORCH} (that script's output) every configuration of the sweep.
 */
class RopeFreqsTest {
    /**
     * {@code count} factors: 1 below the smooth band, {@code band} (torch's float32 bits) from
     * index {@code first}, {@code factor} after it.
     */
    private static float[] expected(int count, int first, float factor, int... band) {
        float[] e = new float[count];
        for (int k = 0; k < count; k++) {
            e[k] = k < first ? 1f : k < first + band.length ? Float.intBitsToFloat(band[k - first]) : factor;
        }
        return e;
    }

    @Test
    void llama31And33AreTorchsBitForBit() {
        // Llama 3.1 8B/70B/405B and 3.3 70B: head 128, rope_theta 500000, factor 8, low 1, high 4, 8192
        float[] torch = expected(64, 29, 8f, 0x3f9a8ed5, 0x3fc6d64a, 0x4001af1d, 0x402c732e, 0x406bcace, 0x40a83c06);
        assertThat(RopeFreqs.factors(500000.0, 128, 8.0, 1.0, 4.0, 8192)).containsExactly(torch);
    }

    @Test
    void llama32AreTorchsBitForBit() {
        // Llama 3.2 1B: head 64; 3B: head 128; factor 32
        assertThat(RopeFreqs.factors(500000.0, 64, 32.0, 1.0, 4.0, 8192))
                .containsExactly(expected(32, 15, 32f, 0x3fd35ec2, 0x4052b46f, 0x411aaaee));
        assertThat(RopeFreqs.factors(500000.0, 128, 32.0, 1.0, 4.0, 8192))
                .containsExactly(expected(64, 29, 32f, 0x3f9e126b, 0x3fd35ec2, 0x4011b4ca, 0x4052b46f, 0x40a57db9, 0x411aaaee));
    }

    @Test
    void otherHeadSizesAreTorchsBitForBit() {
        assertThat(RopeFreqs.factors(500000.0, 80, 8.0, 1.0, 4.0, 8192))
                .containsExactly(expected(40, 18, 8f, 0x3f932881, 0x3fdcb75c, 0x402c732e, 0x4090fbef));
        assertThat(RopeFreqs.factors(500000.0, 120, 8.0, 1.0, 4.0, 8192))
                .containsExactly(expected(60, 27, 8f, 0x3f932881, 0x3fc02224, 0x3ffeaddb, 0x402c732e, 0x4071131b, 0x40b13357));
        // an odd head: arange(0, 81, 2) has 41 elements
        assertThat(RopeFreqs.factors(500000.0, 81, 8.0, 1.0, 4.0, 8192))
                .containsExactly(expected(41, 18, 8f, 0x3f86fe44, 0x3fc81bf6, 0x4019a997, 0x407ae103, 0x40e74120));
        assertThat(RopeFreqs.factors(10000.0, 16, 8.0, 1.0, 4.0, 64)).containsExactly(expected(8, 1, 8f, 0x3fa5a100, 0x40f55b38));
        assertThat(RopeFreqs.factors(250000.0, 64, 16.0, 1.5, 3.5, 3000))
                .containsExactly(expected(32, 13, 16f, 0x3fa10ddb, 0x404054f2));
    }

    /** Hugging Face's formula in double: the scaled inverse frequency is inv_freq / factor. */
    @Test
    void theFormulaInDoubleAgreesToFloatPrecision() {
        double[][] configs = {{500000, 128, 8, 1, 4, 8192}, {500000, 64, 32, 1, 4, 8192}, {10000, 96, 4, 1, 4, 2048},
                {1e6, 256, 16, 2, 8, 4096}, {10000, 16, 8, 1, 4, 64}};
        for (double[] c : configs) {
            double base = c[0], factor = c[2], low = c[3], high = c[4], old = c[5];
            int dim = (int) c[1];
            float[] got = RopeFreqs.factors(base, dim, factor, low, high, (long) old);
            assertThat(got).hasSize(dim / 2);
            for (int k = 0; k < dim / 2; k++) {
                double invFreq = Math.pow(base, -2.0 * k / dim);
                double wavelen = 2 * Math.PI / invFreq;
                double scaled;
                if (wavelen < old / high) scaled = invFreq;
                else if (wavelen > old / low) scaled = invFreq / factor;
                else {
                    double smooth = (old / wavelen - low) / (high - low);
                    scaled = (1 - smooth) * invFreq / factor + smooth * invFreq;
                }
                assertThat((double) got[k]).as("factor %d of %s", k, java.util.Arrays.toString(c))
                        .isCloseTo(invFreq / scaled, within(1e-5 * invFreq / scaled));
            }
        }
    }

    @Test
    void anOutOfBandFactorIsTheConfigsExactly() {
        float[] f = RopeFreqs.factors(500000.0, 128, 7.3, 1.0, 4.0, 8192);
        assertThat(f[0]).isEqualTo(1f);
        assertThat(f[63]).isEqualTo((float) 7.3);
    }

    /**
     * Every configuration of {@code llama3_rope_factors.py torch --sweep}: the real ones bit
     * for bit; over the sweep, torch's vectorized pow (SLEEF, within 1 ulp, not correctly
     * rounded) gives some inverse frequencies 1 or 2 ulp from the correctly rounded ones, and
     * a factor in the smooth band computed from such a frequency differs by a few ulp.
     */
    @Test
    void torchsFactorsForEveryConfigurationOfTheSweep() throws IOException {
        String file = System.getenv("AMN_ROPE_FACTORS_TORCH");
        Assumptions.assumeTrue(file != null && Files.isRegularFile(Path.of(file)),
                "AMN_ROPE_FACTORS_TORCH does not name the output of llama3_rope_factors.py torch: not checked");
        Map<?, ?> doc = (Map<?, ?>) Json.parse(Files.readString(Path.of(file)), 64);
        int configs = 0, factors = 0, differ = 0, configsDiffering = 0, bandFactors = 0;
        long worstUlps = 0;
        for (Object o : (List<?>) doc.get("configs")) {
            Map<?, ?> c = (Map<?, ?>) o;
            float[] got = RopeFreqs.factors(num(c, "base"), (long) num(c, "dim"), num(c, "factor"), num(c, "low"), num(c, "high"),
                    (long) num(c, "old"));
            List<?> bits = (List<?>) c.get("bits");
            assertThat(got).hasSize(bits.size());
            int here = 0;
            for (int k = 0; k < got.length; k++) {
                int want = Integer.parseUnsignedInt((String) bits.get(k), 16);
                float w = Float.intBitsToFloat(want);
                if (w != 1f && w != (float) num(c, "factor")) bandFactors++;
                if (Float.floatToRawIntBits(got[k]) != want) {
                    here++;
                    worstUlps = Math.max(worstUlps, Math.abs((long) Float.floatToRawIntBits(got[k]) - want));
                }
            }
            if (!"sweep".equals(c.get("name"))) assertThat(here).as("%s differs from torch", c.get("name")).isZero();
            configs++;
            factors += got.length;
            differ += here;
            if (here > 0) configsDiffering++;
        }
        System.out.printf("llama3 rope factors vs torch %s: %d configurations, %d factors (%d in the smooth band); "
                        + "%d factors of %d configurations differ, by at most %d ulp%n",
                doc.get("torch"), configs, factors, bandFactors, differ, configsDiffering, worstUlps);
        assertThat(worstUlps).as("ulps from torch").isLessThanOrEqualTo(8);
    }

    private static double num(Map<?, ?> c, String key) {
        return ((Number) c.get(key)).doubleValue();
    }
}
