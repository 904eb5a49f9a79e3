package io.anamnesis.quant.gguf;

import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * MXFP4 and NVFP4 with the nearest-code search on vectors: every lane is one value, and the
 * sixteen candidate codes are tried in ggml's order with the same error |kv d - x| and the
 * same strict comparison, so each lane keeps the code ggml's {@code best_index_mxfp4} keeps.
 * A block holding a NaN goes through the scalar encoder (ggml's magnitude scan skips NaN,
 * a vector maximum would not).
 *
 * <p>Only loaded when the {@code jdk.incubator.vector} module is present.
 */
final class Fp4VectorEncoders {
    private Fp4VectorEncoders() {
    }

    private static final VectorSpecies<Float> F = GgufVectorKernels.F;
    private static final VectorSpecies<Integer> I = F.vectorShape().withLanes(int.class);
    private static final VectorSpecies<Byte> B = GgufVectorKernels.B;
    private static final int L = F.length();
    private static final float[] KV = GgufKernels.FP4_DOUBLED;

    /** The first code whose value kv * d is nearest to each lane's x. */
    private static IntVector nearestCodes(FloatVector x, float d) {
        FloatVector best = FloatVector.broadcast(F, KV[0] * d).sub(x).abs();
        FloatVector code = FloatVector.zero(F);
        for (int i = 1; i < 16; i++) {
            FloatVector err = FloatVector.broadcast(F, KV[i] * d).sub(x).abs();
            VectorMask<Float> closer = err.lt(best);
            best = best.blend(err, closer);
            code = code.blend((float) i, closer);
        }
        return (IntVector) code.convert(VectorOperators.F2I, 0);
    }

    static void mxfp4(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / 32);
        for (int b = 0; b < blocks; b++, s += 32, o += 17) {
            float amax = GgufVectorKernels.absMax(src, s, 32);
            if (amax != amax) {
                Fp4Encoders.mxfp4(src, s, dst, o, 1, 32, null);
                continue;
            }
            int e = Fp4Encoders.mxfp4Exponent(amax);
            float d = GgufKernels.e8m0Half(e);
            dst[o] = (byte) e;
            for (int k = 0; k < 16; k += L) {
                IntVector lo = nearestCodes(FloatVector.fromArray(F, src, s + k), d);
                IntVector hi = nearestCodes(FloatVector.fromArray(F, src, s + 16 + k), d);
                ((ByteVector) lo.or(hi.lanewise(VectorOperators.LSHL, 4)).convertShape(VectorOperators.I2B, B, 0))
                        .intoArray(dst, o + 1 + k);
            }
        }
    }

    static void nvfp4(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int[] codes = new int[16];
        int blocks = rows * (perRow / 64);
        for (int b = 0; b < blocks; b++, o += 36) {
            for (int sub = 0; sub < 4; sub++, s += 16) {
                float amax = GgufVectorKernels.absMax(src, s, 16);
                if (amax != amax) {
                    Fp4Encoders.nvfp4Sub(src, s, dst, o, sub);
                    continue;
                }
                int ue = Fp4Encoders.ue4m3(amax / 6.0f);
                dst[o + sub] = (byte) ue;
                float d = GgufKernels.UE4M3_HALF[ue];
                for (int k = 0; k < 16; k += L) nearestCodes(FloatVector.fromArray(F, src, s + k), d).intoArray(codes, k);
                int qs = o + 4 + 8 * sub;
                for (int j = 0; j < 8; j++) dst[qs + j] = (byte) (codes[j] | codes[j + 8] << 4);
            }
        }
    }
}
