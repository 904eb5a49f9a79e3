package io.anamnesis.quant.fp8;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The vector FP8 encoder gives the scalar encoder's codes and decoded values, on random and edge
 * values, for every format: the FNUZ formats share the path, so their NaN and signless zero are
 * checked here too.
 */
class Fp8EncodeVectorsTest {

    /** Scale round 0's divisor, so that value hits the half of the smallest subnormal. */
    private static float scaleHint(Fp8Format f) {
        return 0.01f / Fp8Encoder.maxFinite(f);
    }

    @Test
    void codesAbsmaxAndDecodedValuesMatchTheScalarPath() {
        Assumptions.assumeTrue(Fp8Encoder.VECTOR, "jdk.incubator.vector with 512-bit vectors is not available");
        Random r = new Random(8);
        for (Fp8Format f : Fp8Format.values()) {
            for (int round = 0; round < 200; round++) {
                int n = 1 + r.nextInt(1000);
                float[] x = new float[n];
                for (int i = 0; i < n; i++) {
                    x[i] = switch (r.nextInt(30)) {
                        case 0 -> Float.NaN;
                        case 1 -> -0f;
                        case 2 -> Float.POSITIVE_INFINITY;
                        case 3 -> Float.NEGATIVE_INFINITY;
                        case 4 -> Float.MIN_VALUE * r.nextInt(1000);
                        case 5 -> f.decode(r.nextInt(256)) * 0.01f;
                        // negative values that round to zero: FNUZ must give 0x00, never its NaN 0x80
                        case 6 -> -Float.MIN_VALUE * r.nextInt(1000);
                        case 7 -> -f.decode(1) * 0.5f * scaleHint(f);
                        default -> (float) (r.nextGaussian() * Math.pow(10, r.nextInt(8) - 4));
                    };
                }
                float scale = switch (round % 4) {
                    case 0 -> 0.01f / Fp8Encoder.maxFinite(f);
                    case 1 -> 1f;
                    case 2 -> Float.MIN_VALUE;
                    default -> (float) Math.exp(r.nextGaussian() * 10);
                };
                assertThat(Fp8EncodeVectors.finiteAbsmax(x, 0, n)).isEqualTo(Fp8Encoder.finiteAbsmaxScalar(x, 0, n));
                byte[] c1 = new byte[n];
                byte[] c2 = new byte[n];
                float[] d1 = new float[n];
                float[] d2 = new float[n];
                Fp8Encoder.encodeScalar(f, x, 0, n, scale, c1, 0, d1);
                Fp8EncodeVectors.encode(f, x, 0, n, scale, c2, 0, d2);
                assertThat(c2).as("%s round %d", f, round).containsExactly(c1);
                for (int i = 0; i < n; i++) {
                    if (Float.isNaN(d1[i])) assertThat(d2[i]).isNaN();
                    // signed zeros compare too: FNUZ's zero has no sign on either path
                    else assertThat(Float.floatToRawIntBits(d2[i])).as("%s decoded[%d]", f, i).isEqualTo(Float.floatToRawIntBits(d1[i]));
                }
            }
        }
    }
}
