package io.anamnesis.api.numeric;

import io.anamnesis.api.DType;

import java.lang.foreign.MemorySegment;

/**
 * Conversions between F32 and the 16-bit float formats, as pure static functions on bit
 * patterns. Narrowing is round-to-nearest-even, the rule every reference (PyTorch, numpy,
 * ggml) applies, so a BF16 or F16 output equals the reference's F32 narrowed.
 */
public final class Floats {
    private Floats() {
    }

    /**
     * F32 bits to BF16 bits, round-to-nearest-even. NaN stays NaN (quiet, sign and upper
     * payload kept), instead of the plain rounding formula's carry into infinity.
     */
    public static short f32ToBf16(int bits) {
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return (short) ((bits >>> 16) | 0x0040);
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    public static short f32ToBf16(float value) {
        return f32ToBf16(Float.floatToRawIntBits(value));
    }

    /**
     * {@code count} values of {@code values} from {@code from} to BF16 bits in {@code out} from
     * {@code to}, each as {@link #f32ToBf16(int)} narrows it; {@code scratch} (at least
     * {@code count} long) holds the rounded bits in between.
     *
     * <p>For the kernels' batches: C2 vectorizes neither {@link Float#floatToRawIntBits} in a
     * loop nor a shifted int stored as a short, so the per-value call runs scalar, with a
     * branch. Here the floats' bits are copied whole into {@code scratch}, rounded there in
     * place with the NaN case selected by masks, and narrowed by a second loop: both loops
     * vectorize (docs/benchmarks.md). Reading the bits element by element through a segment
     * over {@code values} vectorized in a small benchmark but not in the application, where
     * the segment accessors' shared profiles see native segments too.
     */
    public static void f32ToBf16(float[] values, int from, int count, short[] out, int to, int[] scratch) {
        java.util.Objects.checkFromIndexSize(to, count, out.length);
        MemorySegment.copy(MemorySegment.ofArray(values), 4L * from, MemorySegment.ofArray(scratch), 0, 4L * count);
        for (int i = 0; i < count; i++) {
            int b = scratch[i];
            int nan = (0x7F80_0000 - (b & 0x7FFF_FFFF)) >> 31;  // all ones for a NaN
            int rounded = (b + 0x7FFF + ((b >>> 16) & 1)) >>> 16;
            int quiet = (b >>> 16) | 0x0040;
            scratch[i] = (rounded & ~nan) | (quiet & nan);
        }
        for (int i = 0; i < count; i++) out[to + i] = (short) scratch[i];
    }

    /** BF16 bits to the F32 value (exact). */
    public static float bf16ToF32(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** F32 to F16 bits, round-to-nearest-even (IEEE 754 binary16, with subnormals). */
    public static short f32ToF16(float value) {
        return Float.floatToFloat16(value);
    }

    /**
     * F32 bits to F16 bits, round-to-nearest-even, with one NaN rule whatever the JIT does:
     * a NaN becomes the quiet F16 NaN with the same sign and the top ten payload bits, as
     * x86's {@code vcvtps2ph} (and so PyTorch on x86) narrows it. {@link #f32ToF16(float)} leaves a
     * NaN's payload to {@link Float#floatToFloat16}, whose intrinsic and Java fallback differ.
     */
    public static short f32BitsToF16(int bits) {
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            return (short) (((bits >>> 16) & 0x8000) | 0x7E00 | ((bits >>> 13) & 0x3FF));
        }
        return Float.floatToFloat16(Float.intBitsToFloat(bits));
    }

    /**
     * An F32 value as a recovery target stores it: its F32 bits, or the BF16 or F16 bits
     * (in the low 16 bits) of its round-to-nearest-even narrowing ({@link FloatTarget#bits};
     * resolve the target once where this runs per element).
     *
     * @throws IllegalArgumentException for a target other than F32, BF16 or F16
     */
    public static int narrow(float value, DType target) {
        return FloatTarget.of(target).bits(value);
    }

    /** F16 bits to the F32 value (exact). */
    public static float f16ToF32(short bits) {
        return Float.float16ToFloat(bits);
    }
}
