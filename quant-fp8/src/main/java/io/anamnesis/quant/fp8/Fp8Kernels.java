package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;

import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.Kernels;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * FP8 recovery arithmetic as pure static functions over memory segments: FP8 codes in,
 * little-endian F32, BF16 or F16 values out, for any element range.
 *
 * <p>The reference (PyTorch) widens both operands to float32, which is exact, and
 * multiplies once in float32; BF16 and F16 are the round-to-nearest-even narrowing of that
 * product. Two implementations compute the same bits: a scalar loop over the decode table
 * ({@link Impl#SCALAR}) and a Vector API loop ({@link Impl#VECTOR}), which exists only when
 * the {@code jdk.incubator.vector} module is resolved at run time.
 */
public final class Fp8Kernels {
    private Fp8Kernels() {
    }

    /**
     * Which implementation runs a kernel: the scalar reference loop, the lookup kernel (each
     * scale's 256 results made once, the codes then only looked up: what {@code amn} runs
     * without the Vector API), or the Vector API loop.
     */
    public enum Impl { SCALAR, TABLE, VECTOR }

    private static final boolean VECTOR_AVAILABLE = detectVector();

    private static boolean detectVector() {
        if (!Kernels.vectorAllowed()) return false;
        try {
            return Fp8VectorKernels.supported();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** True when {@link Kernels#vectorAllowed()} and the hardware has 256-bit vectors or wider. */
    public static boolean vectorAvailable() {
        return VECTOR_AVAILABLE;
    }

    /**
     * The fastest implementation on this JVM right now: the vector kernel once it has beaten
     * the scalar one (see {@link KernelRace}; before C2 compiles it, it is far slower), else
     * the lookup kernel, which is fast from its first call.
     */
    public static Impl best() {
        return VECTOR_AVAILABLE && RACE.getAsBoolean() ? Impl.VECTOR : Impl.TABLE;
    }

    /** Races the kernels on a 128 x 256 E4M3 grid, per-tensor and 128x128-block scaled, to BF16. */
    private static final KernelRace RACE = new KernelRace("fp8", () -> probe(Impl.SCALAR), () -> probe(Impl.VECTOR));
    private static final int PROBE_ROWS = 128;
    private static final int PROBE_COLS = 256;

    private static void probe(Impl impl) {
        Probe p = Probe.INSTANCE;
        long n = (long) PROBE_ROWS * PROBE_COLS;
        dequantizeGrid(impl, Fp8Format.E4M3, DType.BF16, p.codes, PROBE_COLS, new float[]{0.75f},
                Long.MAX_VALUE, Long.MAX_VALUE, 0, n, p.dest);
        dequantizeGrid(impl, Fp8Format.E4M3, DType.BF16, p.codes, PROBE_COLS, new float[]{0.5f, 0.25f},
                128, 128, 0, n, p.dest);
    }

    /** The race's private input and output, made when the race starts. */
    private static final class Probe {
        static final Probe INSTANCE = new Probe();
        final MemorySegment codes = Arena.global().allocate((long) PROBE_ROWS * PROBE_COLS);
        final MemorySegment dest = Arena.global().allocate(2L * PROBE_ROWS * PROBE_COLS);

        Probe() {
            // Every finite E4M3 code but the NaNs (0x7F, 0xFF), as weights have them.
            for (long i = 0; i < codes.byteSize(); i++) {
                int code = (int) (i * 37 % 254);
                codes.set(ValueLayout.JAVA_BYTE, i, (byte) (code < 127 ? code : code + 1));
            }
        }
    }

    /** Elements per vector kernel call under one scale (a multiple of every vector step). */
    private static final long PIECE = 1 << 15;

    static final int F32 = 0;
    static final int BF16 = 1;
    static final int F16 = 2;

    /** The target as a small int, resolved once per call rather than once per scale run. */
    private static int targetCode(DType target) {
        if (target.equals(DType.F32)) return F32;
        if (target.equals(DType.BF16)) return BF16;
        if (target.equals(DType.F16)) return F16;
        throw new IllegalArgumentException("FP8 recovers to BF16, F16 or F32, not " + target);
    }

    /** Output bytes per element of a recovery target. */
    static int outputBytes(DType target) {
        return targetCode(target) == F32 ? 4 : 2;
    }

    /**
     * Elements {@code [first, first + count)} of a row-major FP8 matrix with {@code cols}
     * columns whose element {@code (r, c)} is scaled by
     * {@code scales[(r / blockRows) * ceil(cols / blockCols) + c / blockCols]}, written to
     * {@code dest} from its start. One scale is per-tensor whatever the shape; per-channel
     * is {@code blockRows = 1, blockCols = cols}.
     */
    public static void dequantizeGrid(Impl impl, Fp8Format format, DType target, MemorySegment codes,
                                      long cols, float[] scales, long blockRows, long blockCols,
                                      long first, long count, MemorySegment dest) {
        int t = targetCode(target);
        int width = t == F32 ? 4 : 2;
        if (impl == Impl.TABLE) {
            Fp8TableKernel.grid(format, t, codes, cols, scales, blockRows, blockCols, first, count, dest);
            return;
        }
        boolean vector = vectorImpl(impl);
        // The vector kernel runs a whole row in one loop when every scale folds and a block
        // is a row (shift 63) or a power of two wide, a multiple of its step.
        int blockShift = scales.length == 1 || blockCols >= cols ? 63
                : Long.bitCount(blockCols) == 1 && vector && blockCols % Fp8VectorKernels.step() == 0
                ? Long.numberOfTrailingZeros(blockCols) : -1;
        float[] factors = vector && blockShift >= 0 ? Fp8VectorKernels.foldedFactors(format, scales) : new float[0];
        if (scales.length == 1) {
            if (factors.length > 0) {
                // In pieces: a kernel entered a few times with huge counts runs as on-stack-replaced
                // code for a long while; entered often, it gets compiled whole, which is faster.
                for (long done = 0; done < count; done += PIECE) {
                    Fp8VectorKernels.row(t, format, codes, first + done, 0, 63, scales, factors, 0,
                            dest, done * width, Math.min(PIECE, count - done));
                }
            } else {
                run(vector, format, t, codes, first, scales[0], dest, 0, count);
            }
            return;
        }
        long scaleCols = (cols + blockCols - 1) / blockCols;
        long end = first + count;
        long e = first;
        while (e < end) {
            long r = e / cols;
            long rowStart = r * cols;
            long rowEnd = Math.min(end, rowStart + cols);
            int scaleRow = Math.toIntExact((r / blockRows) * scaleCols);
            if (factors.length > 0) {
                Fp8VectorKernels.row(t, format, codes, e, e - rowStart, blockShift, scales, factors, scaleRow,
                        dest, (e - first) * width, rowEnd - e);
                e = rowEnd;
                continue;
            }
            long block = (e - rowStart) / blockCols;
            long blockEnd = rowStart + (block + 1) * blockCols;
            while (e < rowEnd) {
                long runEnd = Math.min(rowEnd, blockEnd);
                run(vector, format, t, codes, e, scales[scaleRow + (int) block], dest, (e - first) * width, runEnd - e);
                e = runEnd;
                block++;
                blockEnd += blockCols;
            }
        }
    }

    /**
     * {@code count} codes from byte {@code codeOffset} of {@code codes}, times one scale, to
     * {@code target} values at byte {@code destOffset} of {@code dest}.
     */
    public static void dequantize(Impl impl, Fp8Format format, DType target, MemorySegment codes, long codeOffset,
                                  float scale, MemorySegment dest, long destOffset, long count) {
        if (impl == Impl.TABLE) {
            int t = targetCode(target);
            int[] table = new int[256];
            Fp8TableKernel.fill(format, t, scale, table, 0);
            Fp8TableKernel.run(t == F32, table, codes, codeOffset, dest, destOffset, count);
            return;
        }
        run(vectorImpl(impl), format, targetCode(target), codes, codeOffset, scale, dest, destOffset, count);
    }

    /**
     * The output bits of one code times one scale, exactly as the scalar kernels compute them
     * (the {@link #multiply} product, then the same narrowing): {@link Fp8TableKernel}'s entries.
     */
    static int outputBits(int target, float w, float scale) {
        float product = multiply(w, scale);
        return switch (target) {
            case F32 -> Float.floatToRawIntBits(product);
            case BF16 -> Floats.f32ToBf16(Float.floatToRawIntBits(product)) & 0xFFFF;
            default -> f32ToF16(product) & 0xFFFF;
        };
    }

    private static boolean vectorImpl(Impl impl) {
        if (impl == Impl.VECTOR && !VECTOR_AVAILABLE) throw new IllegalStateException("the Vector API is not available");
        return impl == Impl.VECTOR;
    }

    private static void run(boolean vector, Fp8Format format, int target, MemorySegment codes, long codeOffset,
                            float scale, MemorySegment dest, long destOffset, long count) {
        if (vector) {
            switch (target) {
                case F32 -> Fp8VectorKernels.toF32(format, codes, codeOffset, scale, dest, destOffset, count);
                case BF16 -> Fp8VectorKernels.toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
                default -> Fp8VectorKernels.toF16(format, codes, codeOffset, scale, dest, destOffset, count);
            }
        } else {
            switch (target) {
                case F32 -> toF32(format, codes, codeOffset, scale, dest, destOffset, count);
                case BF16 -> toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
                default -> toF16(format, codes, codeOffset, scale, dest, destOffset, count);
            }
        }
    }

    // ------------------------------------------------------------------ scalar kernels

    /** Scalar: {@code count} codes times {@code scale} as little-endian F32. */
    public static void toF32(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                             MemorySegment dest, long destOffset, long count) {
        float[] table = format.table();
        for (long i = 0; i < count; i++) {
            float w = table[codes.get(ValueLayout.JAVA_BYTE, codeOffset + i) & 0xFF];
            dest.set(LittleEndian.I32, destOffset + 4 * i, Float.floatToRawIntBits(multiply(w, scale)));
        }
    }

    /** Scalar: {@code count} codes times {@code scale} as little-endian BF16, round-to-nearest-even. */
    public static void toBf16(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                              MemorySegment dest, long destOffset, long count) {
        float[] table = format.table();
        for (long i = 0; i < count; i++) {
            float w = table[codes.get(ValueLayout.JAVA_BYTE, codeOffset + i) & 0xFF];
            dest.set(LittleEndian.I16, destOffset + 2 * i, Floats.f32ToBf16(Float.floatToRawIntBits(multiply(w, scale))));
        }
    }

    /** Scalar: {@code count} codes times {@code scale} as little-endian F16, round-to-nearest-even. */
    public static void toF16(Fp8Format format, MemorySegment codes, long codeOffset, float scale,
                             MemorySegment dest, long destOffset, long count) {
        float[] table = format.table();
        for (long i = 0; i < count; i++) {
            float w = table[codes.get(ValueLayout.JAVA_BYTE, codeOffset + i) & 0xFF];
            dest.set(LittleEndian.I16, destOffset + 2 * i, f32ToF16(multiply(w, scale)));
        }
    }

    /**
     * The float32 product the reference computes. IEEE 754 leaves open which NaN comes out
     * of {@code NaN x NaN}; x86, where the reference runs, returns the first operand (the
     * weight) made quiet, so that case is spelled out and every other is the plain multiply.
     */
    static float multiply(float w, float scale) {
        if (Float.isNaN(scale)) return quiet(Float.isNaN(w) ? w : scale);
        return w * scale;
    }

    private static float quiet(float nan) {
        return Float.intBitsToFloat(Float.floatToRawIntBits(nan) | 0x0040_0000);
    }

    /**
     * F32 to F16, round-to-nearest-even ({@link Floats#f32BitsToF16}): a NaN becomes the quiet
     * F16 NaN with the top ten payload bits, as x86's {@code vcvtps2ph} does, so that the result
     * does not depend on whether the JIT intrinsified the conversion.
     */
    static short f32ToF16(float value) {
        return Floats.f32BitsToF16(Float.floatToRawIntBits(value));
    }
}
