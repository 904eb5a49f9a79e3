package io.anamnesis.quant.gguf;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

import static io.anamnesis.quant.gguf.GgmlMath.putFp16;

/**
 * TQ1_0, TQ2_0 and Q2_0, whose values are trits times the block's largest magnitude, with
 * the rounding on vectors. With d = max |x| finite and 1/d finite, |x/d| < 1.5, so
 * ggml's {@code lroundf}/{@code roundf} (half away from zero) gives 1 from 0.5 up, -1 from
 * -0.5 down and 0 between: two comparisons. Blocks outside that (a NaN, an infinity, a
 * subnormal maximum whose reciprocal overflows) go through the scalar encoders, which
 * reproduce C's conversions of such values. The packing reads the codes in ggml's order.
 *
 * <p>Only loaded when the {@code jdk.incubator.vector} module is present.
 */
final class TritVectorEncoders {
    private TritVectorEncoders() {
    }

    private static final VectorSpecies<Float> F = GgufVectorKernels.F;
    private static final int L = F.length();

    /** Whether the two-comparison rounding is ggml's for this block: d finite (not NaN) and 1/d finite. */
    private static boolean plain(float d, float id) {
        return d < Float.POSITIVE_INFINITY && id < Float.POSITIVE_INFINITY;
    }

    /** trit + 1 of each of {@code n} values: 0, 1 or 2. */
    private static void codes(float[] src, int s, int n, float id, int[] out) {
        for (int k = 0; k < n; k += L) {
            FloatVector v = FloatVector.fromArray(F, src, s + k).mul(id);
            FloatVector c = FloatVector.broadcast(F, 1f)
                    .add(1f, v.compare(VectorOperators.GE, 0.5f))
                    .sub(1f, v.compare(VectorOperators.LE, -0.5f));
            c.convert(VectorOperators.F2I, 0).reinterpretAsInts().intoArray(out, k);
        }
    }

    static void tq1_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int[] c = new int[256];
        int blocks = rows * (perRow / 256);
        for (int b = 0; b < blocks; b++, s += 256, o += 54) {
            float d = GgufVectorKernels.absMax(src, s, 256);
            float id = d != 0 ? 1.0f / d : 0.0f;
            if (!plain(d, id)) {
                TernaryEncoders.tq1_0(src, s, dst, o, 1, 256, null);
                continue;
            }
            putFp16(dst, o + 52, d);
            codes(src, s, 256, id, c);
            for (int m = 0; m < 32; m++) {
                int q = (((c[m] * 3 + c[m + 32]) * 3 + c[m + 64]) * 3 + c[m + 96]) * 3 + c[m + 128];
                dst[o + m] = (byte) ((q * 256 + 242) / 243);
            }
            for (int m = 0; m < 16; m++) {
                int q = (((c[160 + m] * 3 + c[176 + m]) * 3 + c[192 + m]) * 3 + c[208 + m]) * 3 + c[224 + m];
                dst[o + 32 + m] = (byte) ((q * 256 + 242) / 243);
            }
            for (int j = 0; j < 4; j++) {
                int q = (((c[240 + j] * 3 + c[244 + j]) * 3 + c[248 + j]) * 3 + c[252 + j]) * 3;
                dst[o + 48 + j] = (byte) ((q * 256 + 242) / 243);
            }
        }
    }

    static void tq2_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int[] c = new int[256];
        int blocks = rows * (perRow / 256);
        for (int b = 0; b < blocks; b++, s += 256, o += 66) {
            float d = GgufVectorKernels.absMax(src, s, 256);
            float id = d != 0 ? 1.0f / d : 0.0f;
            if (!plain(d, id)) {
                TernaryEncoders.tq2_0(src, s, dst, o, 1, 256, null);
                continue;
            }
            putFp16(dst, o + 64, d);
            codes(src, s, 256, id, c);
            for (int j = 0; j < 64; j += 32) {
                for (int m = 0; m < 32; m++) {
                    int e = 4 * j + m;
                    dst[o + j + m] = (byte) (c[e] | c[e + 32] << 2 | c[e + 64] << 4 | c[e + 96] << 6);
                }
            }
        }
    }

    static void q2_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int[] c = new int[64];
        int blocks = rows * (perRow / 64);
        for (int b = 0; b < blocks; b++, s += 64, o += 18) {
            float amax = GgufVectorKernels.absMax(src, s, 64);
            float id = amax > 0.0f ? 1.0f / amax : 0.0f;
            if (!plain(amax, id)) {
                BitEncoders.q2_0(src, s, dst, o, 1, 64, null);
                continue;
            }
            putFp16(dst, o, amax);
            codes(src, s, 64, id, c);
            for (int k = 0; k < 16; k++) {
                dst[o + 2 + k] = (byte) (c[4 * k] | c[4 * k + 1] << 2 | c[4 * k + 2] << 4 | c[4 * k + 3] << 6);
            }
        }
    }
}
