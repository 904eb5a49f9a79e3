package io.anamnesis.api.numeric;

import io.anamnesis.api.DType;

/**
 * The float formats recovery writes, each with the one rule that turns an exact F32 result
 * into its bits: F32 as is, BF16 and F16 by round-to-nearest-even ({@link Floats}). Resolved
 * once per tensor, so that a kernel's inner loop switches on an enum, not on a dtype's name.
 */
public enum FloatTarget {
    F32(DType.F32),
    BF16(DType.BF16),
    F16(DType.F16);

    private final DType dtype;

    FloatTarget(DType dtype) {
        this.dtype = dtype;
    }

    /** @throws IllegalArgumentException for a dtype other than F32, BF16 or F16 */
    public static FloatTarget of(DType dtype) {
        if (dtype.equals(DType.BF16)) return BF16;
        if (dtype.equals(DType.F32)) return F32;
        if (dtype.equals(DType.F16)) return F16;
        throw new IllegalArgumentException("recovery produces F32, BF16 or F16, not " + dtype);
    }

    public DType dtype() {
        return dtype;
    }

    /** Bytes per element. */
    public int bytes() {
        return this == F32 ? 4 : 2;
    }

    /** The bits {@code value} is stored as: F32 bits, or BF16/F16 bits in the low 16 bits. */
    public int bits(float value) {
        int bits = Float.floatToRawIntBits(value);
        return switch (this) {
            case F32 -> bits;
            case BF16 -> Floats.f32ToBf16(bits) & 0xFFFF;
            case F16 -> Floats.f32BitsToF16(bits) & 0xFFFF;
        };
    }
}
