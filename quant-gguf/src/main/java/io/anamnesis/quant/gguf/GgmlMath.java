package io.anamnesis.quant.gguf;

/**
 * The scalar conversions ggml's quantizers rely on, bit for bit as its portable x86-64 build
 * computes them (SSE2 floats, no fused multiply-add, glibc's libm). Every encoder goes through
 * these, so a rounding rule lives in one place.
 *
 * <p>C converts a float to an integer type by truncation; x86-64 compiles it to
 * {@code cvttss2si}, which gives INT_MIN for NaN and for anything outside the int range, and a
 * narrower target keeps the low bits. Java saturates instead, so {@link #truncate} and the
 * rounding helpers put the x86 answer back: the two disagree only for infinities, NaN and
 * huge values, which a row with an inf or a subnormal scale does produce.
 */
final class GgmlMath {
    private GgmlMath() {
    }

    /** ggml's GROUP_MAX_EPS: a group whose largest magnitude is below it is all zero. */
    static final float GROUP_MAX_EPS = 1e-15f;

    /**
     * GGML_FP32_TO_FP16 (ggml_compute_fp32_to_fp16, the FP16 library's bit trick): round to
     * nearest even with subnormals, overflow to infinity, every NaN to the quiet NaN 0x7E00
     * with its sign. Java's conversion rounds the same way (checked over all 2^32 floats)
     * but keeps NaN payload bits, hence the NaN case.
     */
    static short fp16(float f) {
        if (f != f) return (short) ((Float.floatToRawIntBits(f) >>> 16 & 0x8000) | 0x7E00);
        return Float.floatToFloat16(f);
    }

    /** GGML_FP16_TO_FP32: exact. */
    static float fp32(short h) {
        return Float.float16ToFloat(h);
    }

    /**
     * Stores {@code GGML_FP32_TO_FP16(f)} little-endian at {@code dst[at]} and returns the
     * value it decodes to, which is what ggml's requantization steps read back.
     */
    static float putFp16(byte[] dst, int at, float f) {
        short h = fp16(f);
        dst[at] = (byte) h;
        dst[at + 1] = (byte) (h >> 8);
        return Float.float16ToFloat(h);
    }

    /**
     * Eight bytes of a byte array as one little-endian long ({@code (long) LONGS.get(b, at)},
     * {@code LONGS.set(b, at, v)}): the kernels' packed codes eight at a time, and copies of
     * 8-byte runs too short for {@code System.arraycopy}'s call to pay.
     */
    static final java.lang.invoke.VarHandle LONGS =
            java.lang.invoke.MethodHandles.byteArrayViewVarHandle(long[].class, java.nio.ByteOrder.LITTLE_ENDIAN);

    /** A little-endian u32 at {@code dst[at]}. */
    static void putInt(byte[] dst, int at, int v) {
        dst[at] = (byte) v;
        dst[at + 1] = (byte) (v >> 8);
        dst[at + 2] = (byte) (v >> 16);
        dst[at + 3] = (byte) (v >> 24);
    }

    /**
     * ggml's {@code nearest_int}: adds 1.5 * 2^23 so the float adder rounds to nearest even
     * and reads the integer from the low mantissa bits. Meant for |v| <= 2^22; beyond that
     * (and for NaN) the result is whatever those bits say, as in ggml.
     */
    static int nearestInt(float v) {
        return (Float.floatToRawIntBits(v + 12582912f) & 0x007F_FFFF) - 0x0040_0000;
    }

    /** C's {@code (int) f} on x86-64: truncation, INT_MIN for NaN and out-of-range values. */
    static int truncate(float f) {
        int i = (int) f;
        return i == Integer.MAX_VALUE || f != f ? Integer.MIN_VALUE : i;
    }

    /**
     * {@code (int) roundf(f)}: half away from zero, then the x86 conversion. Adding +-0.5 in
     * double is exact for every float that can round to a nonzero value, so truncating the
     * sum is the rounding. The half takes the value's sign by {@code copySign}, not by a
     * comparison: weights are positive or negative at random, and the mispredicted branch
     * made this function most of a scalar Q8_0 encode (the same result for all 2^32 floats,
     * GgmlMathTest; about 4x faster).
     */
    static int roundHalfAway(float f) {
        double r = f;
        int i = (int) (r + Math.copySign(0.5, r));
        return i == Integer.MAX_VALUE || f != f ? Integer.MIN_VALUE : i;
    }

    /** The float just below one half. */
    private static final float BELOW_HALF = Math.nextDown(0.5f);

    /**
     * {@link #roundHalfAway} for {@code |v| <= 129}, or NaN (which gives 0 here and INT_MIN
     * there: the same low byte), in float arithmetic: adding the float just below a half, with
     * the value's sign, and truncating rounds every such float half away from zero (a value
     * just below a tie stays below the next integer; a tie reaches it by round-to-even of the
     * sum). Equal to {@code roundHalfAway} on every float of that range (checked exhaustively
     * beside the project; GgmlMathTest checks a stride and every tie), and cheaper: no double
     * conversion, no range fix-up. Q8_0's levels are such values.
     */
    static int roundHalfAwaySmall(float v) {
        return (int) (v + Math.copySign(BELOW_HALF, v));
    }

    /**
     * {@code (int) lroundf(f)}: half away from zero to a long (glibc answers LONG_MIN for NaN,
     * infinities and values beyond the long range), then narrowed to its low 32 bits.
     */
    static int lroundToInt(float f) {
        double r = f;
        if (!(Math.abs(r) < 0x1p63)) return 0;
        return (int) (long) (r + Math.copySign(0.5, r));
    }

    /**
     * {@code floorf(log2f(a))} for a positive finite float. The binary exponent is the answer
     * unless the mantissa is within 2^-11 of 2, where glibc's correctly rounded log2f may round
     * up to the next integer (only when that integer's float spacing exceeds the distance, but
     * the double computation below decides it either way); subnormals go the same way.
     */
    static int floorLog2(float a) {
        int bits = Float.floatToRawIntBits(a);
        int exp = (bits >>> 23) & 0xFF;
        if (exp != 0 && (bits & 0x007F_FFFF) < 0x007F_F000) return exp - 127;
        int e = Math.getExponent((double) a);
        double m = a / Math.scalb(1.0, e);
        float log2 = (float) (e + Math.log(m) / Math.log(2.0));
        return (int) Math.floor(log2);
    }
}
