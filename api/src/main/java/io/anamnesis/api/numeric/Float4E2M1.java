package io.anamnesis.api.numeric;

/**
 * FP4 E2M1 (OCP Microscaling "FP4"): one sign bit, two exponent bits (bias 1), one mantissa
 * bit, no infinities and no NaN. The 16 codes are 0, 0.5, 1, 1.5, 2, 3, 4, 6 and, with the
 * sign bit ({@code 0x8}), their negatives; code 8 is -0.0. Two codes share a byte; which
 * nibble comes first is the container's business ({@link #low}, {@link #high}).
 */
public final class Float4E2M1 {
    private Float4E2M1() {
    }

    private static final float[] VALUES = new float[16];

    static {
        for (int code = 0; code < 16; code++) {
            int e = (code >>> 1) & 3;
            int m = code & 1;
            // e = 0: subnormal m x 2^(1 - bias - 1) = m / 2; else (2 + m) x 2^(e - bias - 1)
            float magnitude = e == 0 ? Math.scalb((float) m, -1) : Math.scalb((float) (2 | m), e - 2);
            VALUES[code] = (code & 8) != 0 ? -magnitude : magnitude;
        }
    }

    /** The value of a code (0..15; higher bits are ignored), exact. */
    public static float decode(int code) {
        return VALUES[code & 0xF];
    }

    /** All 16 values, as a new array a kernel may keep. */
    public static float[] table() {
        return VALUES.clone();
    }

    /** The code in a byte's low nibble (bits 0..3). */
    public static int low(int packed) {
        return packed & 0xF;
    }

    /** The code in a byte's high nibble (bits 4..7). */
    public static int high(int packed) {
        return (packed >>> 4) & 0xF;
    }
}
