package io.anamnesis.quant.bnb;

import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.Kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

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
     * Whether the BF16 kernels may run on {@code jdk.incubator.vector}:
     * {@link Kernels#vectorAllowed()} (the incubating module is resolved and
     * {@code anamnesis.kernels} is not {@code scalar}) and the CPU offers 256-bit vectors or
     * wider. Both give identical bytes.
     */
    static final boolean VECTOR = vectorAvailable();

    /** Whether those vectors are 512 bits wide, which the 4-bit kernel needs to pay off. */
    static final boolean VECTOR_512 = VECTOR && VectorKernels.WIDE;

    /**
     * Whether to take the vector kernels now: available, and compiled far enough to beat the
     * scalar ones (see {@link KernelRace}); chosen per chunk.
     */
    static boolean vectorNow() {
        return VECTOR && RACE.getAsBoolean();
    }

    private static final KernelRace RACE = new KernelRace("bnb", () -> Probe.run(false), () -> Probe.run(true));

    /** The race's private work: 8 rows of 2048 int8 and 16 Ki NF4 codes, to BF16. */
    static final class Probe {
        private static final int ROWS = 8;
        private static final int COLS = 2048;
        private static final MemorySegment INT8 = Arena.global().allocate((long) ROWS * COLS);
        private static final MemorySegment SCB = Arena.global().allocate(4L * ROWS);
        private static final MemorySegment PACKED = Arena.global().allocate((long) ROWS * COLS / 2);
        private static final MemorySegment ABSMAX = Arena.global().allocate(4L * ROWS * COLS / 64);
        private static final MemorySegment DEST = Arena.global().allocate(2L * ROWS * COLS);
        private static final float[] NF4 = new float[16];

        static {
            for (long i = 0; i < INT8.byteSize(); i++) INT8.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 31));
            for (long i = 0; i < PACKED.byteSize(); i++) PACKED.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 13));
            for (int r = 0; r < ROWS; r++) SCB.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, r, 0.5f + r);
            for (long b = 0; b < ABSMAX.byteSize() / 4; b++) ABSMAX.setAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED, b, 0.25f + b);
            for (int c = 0; c < 16; c++) NF4[c] = (c - 7.5f) / 7.5f;
        }

        static void run(boolean vector) {
            long n = (long) ROWS * COLS;
            Int8Rows.decodeWith(INT8, SCB, COLS, n, 0, n, DType.BF16, DEST, vector);
            FourBit.decodeWith(PACKED, new FourBit.PlainAbsmax(ABSMAX), FourBit.codeValues(NF4, false), 64,
                    n, 0, n, DType.BF16, DEST, vector);
        }
    }

    private static boolean vectorAvailable() {
        if (!Kernels.vectorAllowed()) return false;
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
