package io.anamnesis.quant.bnb;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Double quantization against bitsandbytes' published steps: the offset is the mean absmax;
 * {@code quantize_blockwise} takes the absmax of each nested block of 256 and searches the
 * dynamic map as {@code dQuantize<0>} does, restated here as that kernel's binary search.
 */
class DoubleQuantTest {

    /**
     * dQuantize's search, in words: start at the middle pivot 127, step by 64, 32, ... 1 toward
     * x (up when x is above the pivot's code), remember the last pivots passed below and
     * above; then between the final pivot and its neighbour on x's side pick the one whose
     * float32 midpoint x is beyond, staying on the pivot when x is exactly on the midpoint.
     */
    static int kernelSearch(float[] code, float x) {
        int pivot = 127;
        int upper = 255;
        int lower = 0;
        float upperValue = 1f;
        float lowerValue = -1f;
        float value = code[pivot];
        for (int step = 64; step > 0; step >>= 1) {
            if (x > value) {
                lower = pivot;
                lowerValue = value;
                pivot += step;
            } else {
                upper = pivot;
                upperValue = value;
                pivot -= step;
            }
            value = code[pivot];
        }
        if (upper == 255) upperValue = code[255];
        if (lower == 0) lowerValue = code[0];
        if (x > value) return x > (upperValue + value) * 0.5f ? upper : pivot;
        return x < (lowerValue + value) * 0.5f ? lower : pivot;
    }

    @Test
    void theDynamicMapIsAscendingAndSymmetric() {
        float[] m = DoubleQuant.dynamicMap();
        for (int i = 0; i < 255; i++) assertThat(m[i]).isLessThan(m[i + 1]);
        for (int i = 0; i < 255; i++) assertThat(m[i]).isEqualTo(-m[254 - i]);
        assertThat(m[127]).isZero();
        assertThat(m[255]).isEqualTo(1f);
    }

    @Test
    void codesAreTheKernelsSearchResultEverywhere() {
        float[] m = DoubleQuant.dynamicMap();
        float[] bounds = DoubleQuant.boundaries(m);
        Random r = new Random(5);
        for (int i = 0; i < 100_000; i++) {
            float x = i % 2 == 0 ? r.nextFloat() * 2.2f - 1.1f : (float) r.nextGaussian() * 0.01f;
            assertThat(DoubleQuant.code(bounds, x)).isEqualTo(kernelSearch(m, x));
        }
        for (int i = 0; i < 255; i++) {
            for (float x : new float[]{bounds[i], Math.nextUp(bounds[i]), Math.nextDown(bounds[i]), m[i]}) {
                assertThat(DoubleQuant.code(bounds, x)).as("x = %s near boundary %d", x, i).isEqualTo(kernelSearch(m, x));
            }
        }
        // on a midpoint: the even index of the two
        assertThat(DoubleQuant.code(bounds, bounds[1])).isEqualTo(2);
        assertThat(DoubleQuant.code(bounds, bounds[2])).isEqualTo(2);
        assertThat(DoubleQuant.code(bounds, Float.NaN)).isEqualTo(kernelSearch(m, Float.NaN)).isZero();
    }

    @Test
    void nestedBlocksSubtractTheOffsetAndScaleByTheirAbsmax() {
        int n = 300; // a full nested block of 256 and a short one of 44
        float[] absmax = new float[n];
        Random r = new Random(9);
        double sum = 0;
        for (int i = 0; i < n; i++) {
            absmax[i] = 0.01f + r.nextFloat() * 0.05f;
            sum += absmax[i];
        }
        absmax[17] = 0.9f; // one outlier sets the first nested scale
        sum += 0.9f - absmax[17] + (0.9f - 0.9f);
        float offset = DoubleQuant.mean(java.util.stream.IntStream.range(0, n).mapToDouble(i -> absmax[i]).sum(), n);
        byte[] codes = new byte[n];
        float[] scales = new float[2];
        float[] map = DoubleQuant.dynamicMap();
        DoubleQuant.encode(absmax, 0, n, offset, DoubleQuant.boundaries(map), codes, 0, scales, 0);
        for (int nb = 0; nb < 2; nb++) {
            int from = nb * 256;
            int to = Math.min(n, from + 256);
            float scale = 0;
            for (int i = from; i < to; i++) scale = Math.max(scale, Math.abs(absmax[i] - offset));
            assertThat(scales[nb]).isEqualTo(scale);
            for (int i = from; i < to; i++) {
                assertThat(codes[i] & 0xFF).isEqualTo(kernelSearch(map, (absmax[i] - offset) * (1.0f / scale)));
            }
        }
        assertThat(codes[17] & 0xFF).isEqualTo(255);
        assertThat(offset).isEqualTo((float) (java.util.stream.IntStream.range(0, n).mapToDouble(i -> absmax[i]).sum() / n));
    }
}
