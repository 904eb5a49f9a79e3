package io.anamnesis.api.numeric;

/**
 * E8M0 (OCP Microscaling scale format): an unsigned 8-bit biased exponent, no sign, no
 * mantissa. Byte {@code b} is {@code 2^(b - 127)} for {@code b} in 0..254 (0 is 2^-127, an F32
 * subnormal, still exact) and {@code 0xFF} is NaN.
 *
 * <p>The libraries compute the scale as {@code 2 ** (b - 127)} (compressed-tensors) or
 * {@code ldexp(x, b - 127)} (gpt-oss), which give infinity for 255 instead of NaN; no real
 * scale is 2^128, and the format's definition, which this follows, says NaN.
 */
public final class E8M0 {
    private E8M0() {
    }

    public static final int NAN_CODE = 0xFF;

    private static final float[] VALUES = new float[256];

    static {
        for (int b = 0; b < 255; b++) VALUES[b] = Math.scalb(1.0f, b - 127);
        VALUES[NAN_CODE] = Float.NaN;
    }

    /** The scale a byte stands for (0..255; higher bits are ignored), exact. */
    public static float decode(int code) {
        return VALUES[code & 0xFF];
    }

    public static boolean isNaN(int code) {
        return (code & 0xFF) == NAN_CODE;
    }
}
