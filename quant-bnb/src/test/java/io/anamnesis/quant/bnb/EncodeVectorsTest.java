package io.anamnesis.quant.bnb;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/** The vector encoders give the scalar encoders' bytes, on random values and on every edge the scalar tests probe. */
class EncodeVectorsTest {

    static float[] values(int n, long seed) {
        Random r = new Random(seed);
        float[] x = new float[n];
        for (int i = 0; i < n; i++) {
            x[i] = switch (r.nextInt(40)) {
                case 0 -> Float.NaN;
                case 1 -> -0f;
                case 2 -> 0f;
                case 3 -> Float.MIN_VALUE * r.nextInt(100) * (r.nextBoolean() ? 1 : -1);
                case 4 -> r.nextBoolean() ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
                case 5 -> (float) (r.nextGaussian() * 70000);
                case 6 -> (float) (r.nextGaussian() * 1e-6);
                default -> (float) (r.nextGaussian() * 0.02);
            };
        }
        // whole blocks of zeros and of signed zeros
        for (int i = 0; i < Math.min(64, n); i++) x[i] = 0f;
        for (int i = 64; i < Math.min(128, n); i++) x[i] = i % 2 == 0 ? -0f : 0f;
        return x;
    }

    @Test
    void fourBitBlocksAndAbsmaxMatchTheScalarPath() {
        Assumptions.assumeTrue(FourBitEncoder.VECTOR, "jdk.incubator.vector with 512-bit vectors is not available");
        for (int bs : new int[]{32, 64, 128, 4096}) {
            int n = 3 * 4096 + bs / 2 + 1; // a short last block, an odd tail
            float[] x = values(n, bs);
            // blocks that hold exactly a threshold times their absmax
            for (int i = 0; i < 15; i++) x[256 + i] = FourBitEncoder.NF4_THRESHOLDS[i];
            x[256 + 15] = 1f;
            float[] a1 = new float[(n + bs - 1) / bs];
            float[] a2 = new float[a1.length];
            FourBitEncoder.blockAbsmaxScalar(x, 0, n, bs, a1, 0);
            EncodeVectors.blockAbsmax(x, 0, n, bs, a2, 0);
            assertThat(a2).containsExactly(a1);
            for (boolean fp4 : new boolean[]{false, true}) {
                byte[] p1 = new byte[(n + 1) / 2];
                byte[] p2 = new byte[(n + 1) / 2];
                FourBitEncoder.encodeScalar(fp4, x, 0, n, bs, a1, 0, p1, 0);
                EncodeVectors.encode(fp4, x, 0, n, bs, a1, 0, p2, 0);
                assertThat(p2).as("%s block %d", fp4 ? "fp4" : "nf4", bs).containsExactly(p1);
            }
        }
    }

    @Test
    void nf4CodesAroundEveryThresholdAreTheCountOfThresholdsExceeded() {
        Assumptions.assumeTrue(FourBitEncoder.VECTOR, "jdk.incubator.vector with 512-bit vectors is not available");
        // with absmax 1 the normalized value is x itself: each threshold, its neighbours, the ends
        float[] t = FourBitEncoder.NF4_THRESHOLDS;
        float[] x = new float[64];
        int n = 0;
        for (float v : t) {
            x[n++] = Math.nextDown(v);
            x[n++] = v;
            x[n++] = Math.nextUp(v);
        }
        float[] ends = {-1f, 1f, -0f, 0f, Float.NaN, -2f, 2f, Float.NEGATIVE_INFINITY, Float.POSITIVE_INFINITY, 0.5f, -0.5f, 0.99f, -0.99f, 1e-30f, -1e-30f, 0.25f, -0.25f, 0.75f, -0.75f};
        for (float v : ends) x[n++] = v;
        float[] absmax = {1f};
        byte[] packed = new byte[32];
        EncodeVectors.encode(false, x, 0, 64, 64, absmax, 0, packed, 0);
        for (int i = 0; i < 64; i++) {
            // the definition: how many thresholds the value is strictly above (NaN none)
            int expected = 0;
            for (float th : t) expected += x[i] > th ? 1 : 0;
            int code = (packed[i / 2] >> (i % 2 == 0 ? 4 : 0)) & 15;
            assertThat(code).as("nf4 code of %s", x[i]).isEqualTo(expected);
        }
    }

    @Test
    void int8RowsMatchTheScalarPath() {
        Assumptions.assumeTrue(FourBitEncoder.VECTOR, "jdk.incubator.vector with 512-bit vectors is not available");
        Random r = new Random(3);
        for (int row = 0; row < 300; row++) {
            int n = 1 + r.nextInt(3000);
            float[] x = values(n + 7, row);
            // float16 edge values: halfway between float16 neighbours, around 65504 and 2^-14
            if (n > 20) {
                float[] edges = {65504f, 65519.99f, 65520f, 0x1p-14f, Math.nextDown(0x1p-14f), 0x1p-25f, 0x1.8p-24f,
                        1f + 0x1p-11f, 1f + 0x3p-11f, 3.4999f, -2.5f, 6e-8f};
                System.arraycopy(edges, 0, x, 7, edges.length);
            }
            if (row % 10 == 0) java.util.Arrays.fill(x, 0f);
            byte[] c1 = new byte[n];
            byte[] c2 = new byte[n];
            float s1 = Int8Encoder.encodeRowScalar(x, 7, n, c1, 0, new float[n]);
            float s2 = EncodeVectors.encodeRow(x, 7, n, c2, 0, new float[n]);
            assertThat(Float.floatToRawIntBits(s2)).as("row %d SCB", row).isEqualTo(Float.floatToRawIntBits(s1));
            assertThat(c2).as("row %d", row).containsExactly(c1);
        }
    }
}
