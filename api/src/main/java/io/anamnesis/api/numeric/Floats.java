package io.anamnesis.api.numeric;

import io.anamnesis.api.DType;

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
