package io.anamnesis.quant.fp8;

import io.anamnesis.api.numeric.Float8;

/**
 * What rounding onto one FP8 format's grid takes, worked out from the format's definition
 * ({@link Float8}: mantissa bits, bias, which codes are special), so that one scalar and one
 * vector encoder serve every format instead of one copy each.
 *
 * <p>A magnitude below the smallest normal is a whole number of subnormal steps, rounded as
 * a float; above it, the F32 bits with {@code drop} mantissa bits rounded off (to nearest
 * even, a carry moving into the exponent) and the exponent rebiased are the code's low 7 bits.
 *
 * @param max            the largest finite value: 448 (E4M3), 57344 (E5M2, E5M2FNUZ), 240 (E4M3FNUZ)
 * @param smallestNormal {@code 2^(1 - bias)}
 * @param stepsPerUnit   subnormal steps in 1: {@code 2^(bias - 1 + mantissaBits)}
 * @param step           the smallest subnormal, {@code 1 / stepsPerUnit}
 * @param drop           F32 mantissa bits the format does not keep: {@code 23 - mantissaBits}
 * @param rebias         {@code (127 - bias) << mantissaBits}, the F32 exponent moved to the format's
 * @param fnuz           {@code 0x80} is the one NaN and there is no -0 (E4M3FNUZ, E5M2FNUZ); otherwise
 *                       NaN is {@code S.1111.111} / {@code S.11111.11} with the value's sign
 */
record Fp8Grid(float max, float smallestNormal, float stepsPerUnit, float step, int drop, int rebias, boolean fnuz) {

    static Fp8Grid of(Float8 number) {
        int m = number.mantissaBits();
        int bias = number.bias();
        float max = 0;
        for (int c = 0; c < 0x80; c++) {
            float v = number.decode(c);
            if (Float.isFinite(v)) max = Math.max(max, v);
        }
        return new Fp8Grid(max, Math.scalb(1f, 1 - bias), Math.scalb(1f, bias - 1 + m), Math.scalb(1f, 1 - bias - m),
                23 - m, (127 - bias) << m, number.nanIsNegativeZero());
    }
}
