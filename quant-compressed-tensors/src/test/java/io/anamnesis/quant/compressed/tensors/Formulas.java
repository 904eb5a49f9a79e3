package io.anamnesis.quant.compressed.tensors;

/**
 * Expected values worked out in the tests from the published format definitions, apart from
 * the code under test: FP4 E2M1, FP8 E4M3FN, E8M0, and round-to-nearest-even narrowing.
 */
final class Formulas {
    private Formulas() {
    }

    /** FP4 E2M1: sign, 2 exponent bits (bias 1), 1 mantissa bit; e = 0 is m x 0.5. */
    static double e2m1(int code) {
        int s = (code >>> 3) & 1;
        int e = (code >>> 1) & 3;
        int m = code & 1;
        double v = e == 0 ? m * 0.5 : (1 + m / 2.0) * Math.pow(2, e - 1);
        return s == 1 ? -v : v;
    }

    /** FP8 E4M3FN: bias 7, e = 0 subnormal m/8 x 2^-6, S.1111.111 NaN. */
    static double e4m3(int code) {
        int s = (code >>> 7) & 1;
        int e = (code >>> 3) & 15;
        int m = code & 7;
        if (e == 15 && m == 7) return Double.NaN;
        double v = e == 0 ? m / 8.0 * Math.pow(2, -6) : (1 + m / 8.0) * Math.pow(2, e - 7);
        return s == 1 ? -v : v;
    }

    /** E8M0: 2^(b - 127), 255 NaN. */
    static double e8m0(int b) {
        return b == 255 ? Double.NaN : Math.pow(2, b - 127);
    }

    /** BF16 value bits: round-to-nearest-even of the F32 bits (ties to even), NaN kept quiet. */
    static short bf16(float v) {
        int bits = Float.floatToRawIntBits(v);
        if (Float.isNaN(v)) return (short) ((bits >>> 16) | 0x40);
        int lower = bits & 0xFFFF;
        int upper = bits >>> 16;
        if (lower > 0x8000 || (lower == 0x8000 && (upper & 1) == 1)) upper++;
        return (short) upper;
    }
}
