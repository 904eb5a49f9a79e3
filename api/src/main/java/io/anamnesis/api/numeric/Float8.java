package io.anamnesis.api.numeric;

import io.anamnesis.api.DType;

import java.util.Optional;

/**
 * The 8-bit floating-point number formats, each with the exact F32 value of its 256 codes.
 * The table is worked out from the format's definition (sign, exponent, mantissa, bias and
 * which codes are special), so decoding is one lookup and every value is exact in F32.
 *
 * <p>NaN codes widen to the F32 NaN that PyTorch's {@code .to(torch.float32)} gives, so a
 * product with a NaN code has the reference's bits: {@link #E4M3FN} and {@link #E5M2} keep
 * their mantissa as the top bits of the F32 payload; the FNUZ formats' single NaN,
 * {@code 0x80}, becomes {@code 0x7F800001} (c10's {@code fp8_fnuz_to_fp32_value}).
 */
public enum Float8 {
    /**
     * {@code float8_e4m3fn} (OCP "E4M3"): bias 7, subnormals, no infinities; only
     * {@code S.1111.111} is NaN, which frees {@code S.1111.110} = 448 as the largest finite.
     */
    E4M3FN(DType.F8_E4M3, 4, 3, 7, Specials.MAX_MANTISSA_NAN),
    /** {@code float8_e5m2}: IEEE 754 rules, bias 15; exponent 11111 is infinity (mantissa 0) or NaN. */
    E5M2(DType.F8_E5M2, 5, 2, 15, Specials.IEEE),
    /**
     * {@code float8_e4m3fnuz} (AMD, Graphcore): bias 8, no infinities, no negative zero: the
     * one code {@code 1.0000.000} ({@code 0x80}) is NaN, {@code 0x7F} = 240 the largest finite.
     */
    E4M3FNUZ(DType.F8_E4M3FNUZ, 4, 3, 8, Specials.NEGATIVE_ZERO_NAN),
    /** {@code float8_e5m2fnuz}: bias 16, no infinities, {@code 0x80} is the only NaN, 57344 the largest. */
    E5M2FNUZ(DType.F8_E5M2FNUZ, 5, 2, 16, Specials.NEGATIVE_ZERO_NAN);

    /** Which codes are not numbers. */
    private enum Specials {
        /** An all-ones exponent is infinity (mantissa 0) or NaN. */
        IEEE,
        /** Only the all-ones exponent with the all-ones mantissa is NaN; no infinity. */
        MAX_MANTISSA_NAN,
        /** Only the sign bit alone ({@code 0x80}, "negative zero") is NaN; no infinity, no -0. */
        NEGATIVE_ZERO_NAN
    }

    /** The F32 NaN c10 widens an FNUZ NaN to. */
    private static final int FNUZ_NAN_BITS = 0x7F80_0001;

    private final DType dtype;
    private final int exponentBits;
    private final int mantissaBits;
    private final int bias;
    private final Specials specials;
    private final float[] table = new float[256];

    Float8(DType dtype, int exponentBits, int mantissaBits, int bias, Specials specials) {
        this.dtype = dtype;
        this.exponentBits = exponentBits;
        this.mantissaBits = mantissaBits;
        this.bias = bias;
        this.specials = specials;
        for (int code = 0; code < 256; code++) table[code] = Float.intBitsToFloat(widen(code));
    }

    /** The format stored under a safetensors dtype, if it is an 8-bit float with a sign. */
    public static Optional<Float8> of(DType dtype) {
        for (Float8 f : values()) {
            if (f.dtype.equals(dtype)) return Optional.of(f);
        }
        return Optional.empty();
    }

    /** The safetensors dtype of this format ({@code F8_E4M3}, {@code F8_E5M2}, {@code F8_E4M3FNUZ}, ...). */
    public DType dtype() {
        return dtype;
    }

    public int exponentBits() {
        return exponentBits;
    }

    public int mantissaBits() {
        return mantissaBits;
    }

    public int bias() {
        return bias;
    }

    /** True when an all-ones exponent means infinity or NaN (E5M2 only). */
    public boolean hasInfinities() {
        return specials == Specials.IEEE;
    }

    /** True for the FNUZ formats, whose only NaN is {@code 0x80} and which have no -0. */
    public boolean nanIsNegativeZero() {
        return specials == Specials.NEGATIVE_ZERO_NAN;
    }

    /** Whether a code (0..255) is NaN or infinite. */
    public boolean isSpecial(int code) {
        float v = table[code & 0xFF];
        return Float.isNaN(v) || Float.isInfinite(v);
    }

    /** The F32 value of a code (0..255; higher bits are ignored), exact. */
    public float decode(int code) {
        return table[code & 0xFF];
    }

    /** The values of all 256 codes, as a new array a kernel may keep. */
    public float[] table() {
        return table.clone();
    }

    /** F32 bits of one code, from the format's fields. */
    private int widen(int code) {
        int sign = (code >>> 7) & 1;
        int exponentMax = (1 << exponentBits) - 1;
        int mantissaMax = (1 << mantissaBits) - 1;
        int e = (code >>> mantissaBits) & exponentMax;
        int m = code & mantissaMax;
        switch (specials) {
            case IEEE -> {
                if (e == exponentMax) return (sign << 31) | 0x7F80_0000 | (m << (23 - mantissaBits));
            }
            case MAX_MANTISSA_NAN -> {
                if (e == exponentMax && m == mantissaMax) return (sign << 31) | 0x7F80_0000 | (m << (23 - mantissaBits));
            }
            case NEGATIVE_ZERO_NAN -> {
                if (code == 0x80) return FNUZ_NAN_BITS;
            }
        }
        float magnitude = e == 0
                // subnormal: m x 2^(1 - bias - mantissaBits)
                ? Math.scalb((float) m, 1 - bias - mantissaBits)
                // normal: 1.m x 2^(e - bias) = (2^mantissaBits + m) x 2^(e - bias - mantissaBits)
                : Math.scalb((float) ((1 << mantissaBits) | m), e - bias - mantissaBits);
        return Float.floatToRawIntBits(sign == 1 ? -magnitude : magnitude);
    }
}
