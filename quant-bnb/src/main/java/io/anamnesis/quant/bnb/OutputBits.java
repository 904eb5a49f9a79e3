package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;

/**
 * The three output encodings of recovery as small ints, so that kernels can precompute a
 * table of output bit patterns once per block or row and then only look values up.
 * BF16 and F16 are the round-to-nearest-even narrowing of the exact F32 result.
 */
final class OutputBits {
    static final int F32 = 0;
    static final int BF16 = 1;
    static final int F16 = 2;

    private OutputBits() {
    }

    /**
     * Whether the BF16 kernels run on {@code jdk.incubator.vector}: the module must be in the
     * boot layer (it is incubating; {@code --add-modules jdk.incubator.vector}) and the CPU
     * must offer 512-bit vectors. {@code -Dio.anamnesis.quant.bnb.vector=false} forces the
     * scalar kernels. Both give identical bytes.
     */
    static final boolean VECTOR = vectorAvailable();

    private static boolean vectorAvailable() {
        if (!Boolean.parseBoolean(System.getProperty("io.anamnesis.quant.bnb.vector", "true"))) return false;
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return false;
        try {
            return VectorKernels.usable();
        } catch (LinkageError e) {
            return false;
        }
    }

    static int kind(DType target) {
        if (target.equals(DType.F32)) return F32;
        if (target.equals(DType.BF16)) return BF16;
        if (target.equals(DType.F16)) return F16;
        throw new IllegalArgumentException("recovery produces BF16, F16 or F32, not " + target);
    }

    static int bytes(int kind) {
        return kind == F32 ? 4 : 2;
    }

    /** The output bit pattern of {@code v}, zero-extended to a long (16 or 32 significant bits). */
    static long encode(float v, int kind) {
        return switch (kind) {
            case F32 -> Float.floatToRawIntBits(v) & 0xFFFF_FFFFL;
            case BF16 -> Floats.f32ToBf16(v) & 0xFFFFL;
            default -> Floats.f32ToF16(v) & 0xFFFFL;
        };
    }

    /** Checks a chunk request against the tensor and the destination; a mismatch is a caller bug. */
    static void checkChunk(long first, long count, long elements, int kind, long destBytes) {
        if (first < 0 || count < 0 || first > elements - count) {
            throw new IllegalArgumentException("chunk [" + first + ", +" + count + ") outside a tensor of "
                    + elements + " elements");
        }
        if (destBytes != count * bytes(kind)) {
            throw new IllegalArgumentException("destination holds " + destBytes + " bytes, the chunk needs "
                    + count * bytes(kind));
        }
    }
}
