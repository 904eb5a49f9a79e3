package io.anamnesis.api;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * LossMeter's two ways of summing, the scalar lanes and the Vector API lanes, must give the
 * same bits (the figures a user reads must not depend on the kernels), and the figures must
 * be the sums they claim to be (checked against exact decimal sums).
 */
class LossMeterLanesTest {

    private static boolean vectorHere() {
        try {
            return ModuleLayer.boot().findModule("jdk.incubator.vector").isPresent() && LossVectors.wide();
        } catch (LinkageError e) {
            return false;
        }
    }

    private static float[][] pair(int n, long seed, boolean trouble) {
        SplittableRandom r = new SplittableRandom(seed);
        float[] x = new float[n];
        float[] y = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = (float) (r.nextGaussian() * Math.exp(r.nextGaussian() * 3));
            y[i] = x[i] + (float) (r.nextGaussian() * 1e-3 * Math.abs(x[i]));
        }
        if (trouble) {
            y[n / 3] = Float.NaN;
            x[n / 2 + 5] = Float.POSITIVE_INFINITY;
            x[n - 3] = Float.NaN;
        }
        return new float[][]{x, y};
    }

    @Test
    void vectorLanesAreTheScalarLanesBitForBit() {
        Assumptions.assumeTrue(vectorHere(), "jdk.incubator.vector not resolved or not 512 bits wide here");
        for (int n : new int[]{0, 5, 8, 64, 1000, 4099}) {
            for (int off : new int[]{0, 3}) {
                for (boolean trouble : new boolean[]{false, true}) {
                    if (trouble && n < 64) continue;
                    float[][] p = pair(n + off, n * 31L + off, trouble);
                    double[] scalar = new double[4 * LossMeter.LANES];
                    double[] vector = new double[4 * LossMeter.LANES];
                    int s = LossMeter.scalarSums(p[0], off, p[1], off, n, scalar);
                    int v = LossVectors.sums(p[0], off, p[1], off, n, vector);
                    assertThat(v).as("stop, n=%d off=%d", n, off).isEqualTo(s);
                    for (int k = 0; k < scalar.length; k++) {
                        // (any NaN equals any NaN here: which NaN a lane keeps is not a figure)
                        assertThat(Double.doubleToLongBits(vector[k])).as("lane value %d, n=%d off=%d trouble=%b", k, n, off, trouble)
                                .isEqualTo(Double.doubleToLongBits(scalar[k]));
                    }
                }
            }
        }
    }

    @Test
    void theFiguresAreTheExactSumsToDoublePrecision() {
        float[][] p = pair(10_007, 7, true);
        float[] x = p[0];
        float[] y = p[1];
        LossMeter.Loss l = LossMeter.measure(x, 0, y, 0, x.length);
        BigDecimal abs = BigDecimal.ZERO;
        BigDecimal sq = BigDecimal.ZERO;
        BigDecimal signal = BigDecimal.ZERO;
        double max = 0;
        long count = 0;
        long nonFinite = 0;
        boolean nanError = false;
        for (int i = 0; i < x.length; i++) {
            if (!Float.isFinite(x[i])) {
                nonFinite++;
                continue;
            }
            count++;
            if (Float.isNaN(y[i])) {
                nanError = true;
                continue;
            }
            BigDecimal e = new BigDecimal(y[i]).subtract(new BigDecimal(x[i]));
            abs = abs.add(e.abs());
            sq = sq.add(e.multiply(e));
            signal = signal.add(new BigDecimal(x[i]).multiply(new BigDecimal(x[i])));
            max = Math.max(max, e.abs().doubleValue());
        }
        assertThat(l.count()).isEqualTo(count);
        assertThat(l.nonFinite()).isEqualTo(nonFinite).isEqualTo(2);
        // the decoded NaN makes the sums NaN and is the largest error
        assertThat(nanError).isTrue();
        assertThat(l.maxAbs()).isNaN();
        assertThat(l.sumAbs()).isNaN();
        // without it, the sums agree with the exact ones to a few ulps
        y[x.length / 3] = x[x.length / 3];
        LossMeter.Loss clean = LossMeter.measure(x, 0, y, 0, x.length);
        assertThat(clean.sumAbs()).isCloseTo(abs.doubleValue(), within(1e-12 * abs.doubleValue()));
        assertThat(clean.sumSq()).isCloseTo(sq.doubleValue(), within(1e-12 * sq.doubleValue()));
        assertThat(clean.sumSignalSq()).isCloseTo(signal.round(MathContext.DECIMAL64).doubleValue(),
                within(1e-12 * signal.doubleValue()));
        assertThat(clean.maxAbs()).isEqualTo(max);
    }
}
