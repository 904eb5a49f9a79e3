package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;

import java.util.Optional;

/**
 * The two FP8 encodings checkpoints ship, with the F32 value of every one of their 256
 * codes. The table is worked out from each format's bit layout (sign, exponent, mantissa,
 * bias), so decoding is one lookup and every value is exact in F32.
 */
public enum Fp8Format {
    /**
     * {@code float8_e4m3fn} (OCP "E4M3"): bias 7, subnormals, no infinities; only
     * {@code S.1111.111} is NaN, which frees {@code S.1111.110} = 448 as the largest finite.
     */
    E4M3(DType.F8_E4M3, 4, 3, 7, false),
    /** {@code float8_e5m2}: IEEE 754 rules, bias 15; exponent 11111 is infinity (mantissa 0) or NaN. */
    E5M2(DType.F8_E5M2, 5, 2, 15, true);

    private final DType dtype;
    private final int exponentBits;
    private final int mantissaBits;
    private final int bias;
    private final boolean ieeeSpecials;
    private final float[] table = new float[256];

    Fp8Format(DType dtype, int exponentBits, int mantissaBits, int bias, boolean ieeeSpecials) {
        this.dtype = dtype;
        this.exponentBits = exponentBits;
        this.mantissaBits = mantissaBits;
        this.bias = bias;
        this.ieeeSpecials = ieeeSpecials;
        for (int code = 0; code < 256; code++) table[code] = Float.intBitsToFloat(widen(code));
    }

    /** The format stored under a safetensors dtype, if it is one of these two. */
    public static Optional<Fp8Format> of(DType dtype) {
        for (Fp8Format f : values()) {
            if (f.dtype.equals(dtype)) return Optional.of(f);
        }
        return Optional.empty();
    }

    public DType dtype() {
        return dtype;
    }

    public int mantissaBits() {
        return mantissaBits;
    }

    public int bias() {
        return bias;
    }

    /** The F32 value of a code (0..255), exact. */
    public float decode(int code) {
        return table[code & 0xFF];
    }

    /** The decode table, shared: callers must not write to it. */
    float[] table() {
        return table;
    }

    /**
     * F32 bits of one code. NaN codes keep their mantissa as the top bits of the F32
     * payload (what widening a float8 in PyTorch does), infinities stay infinite.
     */
    private int widen(int code) {
        int sign = (code >>> 7) & 1;
        int exponentMax = (1 << exponentBits) - 1;
        int mantissaMax = (1 << mantissaBits) - 1;
        int e = (code >>> mantissaBits) & exponentMax;
        int m = code & mantissaMax;
        boolean special = ieeeSpecials ? e == exponentMax : e == exponentMax && m == mantissaMax;
        if (special) {
            // infinity when m == 0 (E5M2 only), NaN otherwise
            return (sign << 31) | 0x7F80_0000 | (m << (23 - mantissaBits));
        }
        float magnitude = e == 0
                // subnormal: m x 2^(1 - bias - mantissaBits)
                ? Math.scalb((float) m, 1 - bias - mantissaBits)
                // normal: 1.m x 2^(e - bias) = (2^mantissaBits + m) x 2^(e - bias - mantissaBits)
                : Math.scalb((float) ((1 << mantissaBits) | m), e - bias - mantissaBits);
        return Float.floatToRawIntBits(sign == 1 ? -magnitude : magnitude);
    }
}
