package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;

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

    /** Which implementation runs a kernel. */
    public enum Impl { SCALAR, VECTOR }

    private static final boolean VECTOR_AVAILABLE = detectVector();

    private static boolean detectVector() {
        if (Boolean.parseBoolean(System.getProperty("anamnesis.fp8.scalar", "false"))) return false;
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return false;
        try {
            return Fp8VectorKernels.supported();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** True when the Vector API module is resolved and the hardware has 256-bit vectors or wider. */
    public static boolean vectorAvailable() {
        return VECTOR_AVAILABLE;
    }

    /** The fastest implementation on this JVM. */
    public static Impl best() {
        return VECTOR_AVAILABLE ? Impl.VECTOR : Impl.SCALAR;
    }

    /** Output bytes per element of a recovery target. */
    static int outputBytes(DType target) {
        if (target.equals(DType.F32)) return 4;
        if (target.equals(DType.BF16) || target.equals(DType.F16)) return 2;
        throw new IllegalArgumentException("FP8 recovers to BF16, F16 or F32, not " + target);
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
        int width = outputBytes(target);
        if (scales.length == 1) {
            dequantize(impl, format, target, codes, first, scales[0], dest, 0, count);
            return;
        }
        long scaleCols = (cols + blockCols - 1) / blockCols;
        long end = first + count;
        long e = first;
        while (e < end) {
            long r = e / cols;
            long rowStart = r * cols;
            long rowEnd = Math.min(end, rowStart + cols);
            long scaleRow = (r / blockRows) * scaleCols;
            while (e < rowEnd) {
                long block = (e - rowStart) / blockCols;
                long runEnd = Math.min(rowEnd, rowStart + (block + 1) * blockCols);
                float scale = scales[Math.toIntExact(scaleRow + block)];
                dequantize(impl, format, target, codes, e, scale, dest, (e - first) * width, runEnd - e);
                e = runEnd;
            }
        }
    }

    /**
     * {@code count} codes from byte {@code codeOffset} of {@code codes}, times one scale, to
     * {@code target} values at byte {@code destOffset} of {@code dest}.
     */
    public static void dequantize(Impl impl, Fp8Format format, DType target, MemorySegment codes, long codeOffset,
                                  float scale, MemorySegment dest, long destOffset, long count) {
        int width = outputBytes(target);
        if (impl == Impl.VECTOR) {
            if (!VECTOR_AVAILABLE) throw new IllegalStateException("the Vector API is not available");
            if (width == 4) {
                Fp8VectorKernels.toF32(format, codes, codeOffset, scale, dest, destOffset, count);
            } else if (target.equals(DType.BF16)) {
                Fp8VectorKernels.toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
            } else {
                Fp8VectorKernels.toF16(format, codes, codeOffset, scale, dest, destOffset, count);
            }
        } else if (width == 4) {
            toF32(format, codes, codeOffset, scale, dest, destOffset, count);
        } else if (target.equals(DType.BF16)) {
            toBf16(format, codes, codeOffset, scale, dest, destOffset, count);
        } else {
            toF16(format, codes, codeOffset, scale, dest, destOffset, count);
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
     * F32 to F16, round-to-nearest-even ({@link Floats#f32ToF16}). A NaN becomes the quiet F16
     * NaN with the top ten payload bits, as x86's {@code vcvtps2ph} does, so that the result
     * does not depend on whether the JIT intrinsified the conversion.
     */
    static short f32ToF16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return (short) (((bits >>> 16) & 0x8000) | 0x7E00 | ((bits >>> 13) & 0x3FF));
        }
        return Floats.f32ToF16(value);
    }
}
