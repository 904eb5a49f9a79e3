package io.anamnesis.api;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.math.MathContext;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

/**
 * LossMeter's figures must be the sums they claim to be (checked against exact decimal sums),
 * whether the values go in whole chunks, pairwise, or one at a time (a short tail, a chunk
 * with a non-finite original), and must not depend on how a run splits its values among
 * threads beyond the chunks the producers record.
 */
class LossMeterLanesTest {

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
    void theFiguresAreTheExactSumsToDoublePrecision() {
        // whole chunks and a tail; a decoded NaN in chunk 3, an infinite original in chunk 4, a NaN one in the tail
        exactSums(10_007, 2);
        // shorter than a chunk: element by element only
        exactSums(700, 2);
        // whole chunks only, both troubles in chunks
        exactSums(4096, 1);
    }

    @Test
    void theLargestErrorIsFoundInAChunkInATailAndBesideANonFiniteOriginal() {
        for (int at : new int[]{0, 511, 512, 1023, 1500, 2047, 2100}) {
            float[] x = new float[2100 + 3];
            float[] y = new float[x.length];
            for (int i = 0; i < x.length; i++) {
                x[i] = i * 0.001f;
                y[i] = x[i] + 1e-6f;
            }
            y[at] = x[at] + 2.5f;
            LossMeter.Loss l = LossMeter.measure(x, 0, y, 0, x.length);
            assertThat(l.maxAbs()).as("at %d", at).isEqualTo(Math.abs((double) y[at] - x[at]));
            // the same beside an infinite original in its chunk (that chunk goes element by element)
            x[(at / 1024) * 1024 + (at % 1024 == 7 ? 8 : 7)] = Float.NEGATIVE_INFINITY;
            l = LossMeter.measure(x, 0, y, 0, x.length);
            assertThat(l.maxAbs()).as("at %d beside -inf", at).isEqualTo(Math.abs((double) y[at] - x[at]));
            assertThat(l.nonFinite()).isEqualTo(1);
        }
    }

    @Test
    void aChunkMeasuredAtAnOffsetGivesTheSameFigures() {
        float[][] p = pair(3000, 11, false);
        float[] x = new float[3005];
        float[] y = new float[3007];
        System.arraycopy(p[0], 0, x, 5, 3000);
        System.arraycopy(p[1], 0, y, 7, 3000);
        assertThat(LossMeter.measure(x, 5, y, 7, 3000)).isEqualTo(LossMeter.measure(p[0], 0, p[1], 0, 3000));
    }

    private static void exactSums(int n, int expectedNonFinite) {
        float[][] p = pair(n, 7, true);
        float[] x = p[0];
        float[] y = p[1];
        if (expectedNonFinite == 1) x[n - 3] = 1.5f;
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
            // the decoded NaN: its original's square counts; its error, once it is put back, is 0
            signal = signal.add(new BigDecimal(x[i]).multiply(new BigDecimal(x[i])));
            if (Float.isNaN(y[i])) {
                nanError = true;
                continue;
            }
            BigDecimal e = new BigDecimal(y[i]).subtract(new BigDecimal(x[i]));
            abs = abs.add(e.abs());
            sq = sq.add(e.multiply(e));
            max = Math.max(max, e.abs().doubleValue());
        }
        assertThat(l.count()).isEqualTo(count);
        assertThat(l.nonFinite()).isEqualTo(nonFinite).isEqualTo(expectedNonFinite);
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
