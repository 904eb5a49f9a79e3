package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;

/**
 * The FP8 encoders as pure static functions: F32 values and a scale in, codes of any of the
 * four formats out (E4M3, E5M2 and AMD's E4M3FNUZ, E5M2FNUZ). The inverse of
 * {@link Fp8Kernels}' {@code code x scale}.
 *
 * <p>Rounding, and why:
 * <ul>
 * <li>The scale of a group is {@code amax / max finite} (448 for E4M3, 57344 for E5M2 and
 *     E5M2FNUZ, 240 for E4M3FNUZ), one float32 division rounded to nearest, then rounded to
 *     nearest even into the scale's stored dtype. {@code amax} is the group's largest finite
 *     {@code |x|}: an infinity saturates instead of wiping out its group, a NaN stays NaN. An
 *     all-zero group gets scale 1 (any positive scale encodes zeros as zeros), and a scale
 *     that would underflow to 0 in its dtype gets the dtype's smallest positive value.</li>
 * <li>Codes divide by the scale as stored (the one a loader multiplies by): {@code x / s}
 *     rounded once to float32, as PyTorch, vLLM and llm-compressor compute it, then rounded to
 *     nearest even onto the FP8 grid, as {@code tensor.to(torch.float8_e4m3fn)} does, after a
 *     clamp to {@code +-max finite} (saturation). NaN keeps its sign bit and becomes
 *     {@code S.1111.111} (E4M3) or {@code S.11111.11} (E5M2).</li>
 * <li>The FNUZ formats have one NaN, {@code 0x80}, where the others have -0: every NaN
 *     becomes {@code 0x80}, and whatever rounds to zero, of either sign, {@code 0x00}
 *     (a negative value too small for the grid must not turn into NaN).</li>
 * </ul>
 * {@code x / s} is computed as {@code (float) (x * (1.0 / s))} in double: for float operands
 * the quotient is never a float32 rounding tie away from the subnormal range and the double
 * product is within 2^-52 of it, so both round to the same float32; a multiply costs a
 * fraction of a divide. (In the subnormal range a tie can differ, but every such value is far
 * below the smallest FP8 subnormal and encodes as zero either way.)
 *
 * <p>One encoder serves all four formats, parameterized by the format's {@link Fp8Grid}; the
 * vector encoder ({@link Fp8EncodeVectors}) takes the same parameters, so no format has a
 * path of its own to drift.
 */
public final class Fp8Encoder {
    private Fp8Encoder() {
    }

    /** 1.5 x 2^23: adding and subtracting it rounds a float below 2^22 to an integer, half to even. */
    private static final float RNE_MAGIC = 12582912f;

    /**
     * Whether the 512-bit vector encoders exist here ({@code jdk.incubator.vector} resolved,
     * 16-lane vectors, not switched off with {@code -Danamnesis.fp8.scalar=true}).
     */
    static final boolean VECTOR = vectorAvailable();

    private static boolean vectorAvailable() {
        if (Boolean.parseBoolean(System.getProperty("anamnesis.fp8.scalar", "false"))) return false;
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return false;
        try {
            return Fp8EncodeVectors.usable();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** Starts on the scalar encoder, switches once C2 has made the vector one faster (see KernelRace). */
    private static final io.anamnesis.api.numeric.KernelRace RACE = new io.anamnesis.api.numeric.KernelRace("fp8-encode",
            () -> Probe.run(false), () -> Probe.run(true));

    static boolean vectorNow() {
        return VECTOR && RACE.getAsBoolean();
    }

    private static final class Probe {
        static final float[] X = new float[1 << 14];
        static final byte[] OUT = new byte[1 << 14];
        static final float[] DECODED = new float[1 << 14];

        static {
            java.util.SplittableRandom r = new java.util.SplittableRandom(1);
            for (int i = 0; i < X.length; i++) X[i] = (float) r.nextGaussian();
        }

        /**
         * The shapes the real work has, so that C2 compiles the kernel with their profile: 64
         * blocks of 128 values (128x128 block scales) and one run of 8192 (a channel or a
         * tensor), with and without the decoded values (a meter on, a meter off). A probe of
         * one shape only made C2 compile the vector kernel for it; the real calls then trapped
         * out of that code, and C2's recompilation of the kernel gave up ("Bad graph detected
         * in build_loop_late"), leaving it to C1 for good: the Vector API boxed, a 1 GiB
         * forget to FP8 blocks in auto 11 s instead of 2.
         */
        static void run(boolean vector) {
            for (int b = 0; b < 64; b++) encode(vector, b * 128, 128, (b & 1) == 0 ? null : DECODED);
            encode(vector, 8192, 8192, DECODED);
            encode(vector, 8192, 8192, null);
        }

        private static void encode(boolean vector, int off, int n, float[] decoded) {
            if (vector) {
                float s = Fp8EncodeVectors.finiteAbsmax(X, off, off + n) / 448f;
                Fp8EncodeVectors.encode(Fp8Format.E4M3, X, off, n, s, OUT, off, decoded);
            } else {
                float s = finiteAbsmaxScalar(X, off, off + n) / 448f;
                encodeScalar(Fp8Format.E4M3, X, off, n, s, OUT, off, decoded);
            }
        }
    }

    private static final Fp8Grid E4M3 = Fp8Format.E4M3.grid();
    private static final Fp8Grid E5M2 = Fp8Format.E5M2.grid();

    /** The largest finite value of a format: 448 (E4M3), 57344 (E5M2, E5M2FNUZ), 240 (E4M3FNUZ). */
    public static float maxFinite(Fp8Format format) {
        return format.maxFinite();
    }

    /** E4M3 (float8_e4m3fn) code of {@code v}: saturated, round to nearest even, NaN to 0x7F with its sign. */
    public static int e4m3(float v) {
        return code(v, E4M3);
    }

    /** E5M2 code of {@code v}: saturated (never infinity), round to nearest even, NaN to 0x7F with its sign. */
    public static int e5m2(float v) {
        return code(v, E5M2);
    }

    /** The code of {@code v} in {@code format}: saturated, round to nearest even; NaN and zero as the format has them. */
    public static int encode(Fp8Format format, float v) {
        return code(v, format.grid());
    }

    /** The code of {@code v} on grid {@code g} (see {@link Fp8Grid} for the steps). */
    static int code(float v, Fp8Grid g) {
        int sign = (Float.floatToRawIntBits(v) >>> 24) & 0x80;
        float a = Math.abs(v);
        if (!(a <= g.max())) {
            if (a != a) return g.fnuz() ? 0x80 : sign | 0x7F;
            a = g.max();
        }
        if (a < g.smallestNormal()) {
            // subnormals: multiples of the smallest one; the code of the smallest normal is one past the last
            int magnitude = (int) ((a * g.stepsPerUnit() + RNE_MAGIC) - RNE_MAGIC);
            // FNUZ: no -0 (its bits are the NaN), so a zero of either sign is 0x00
            return magnitude == 0 && g.fnuz() ? 0 : sign | magnitude;
        }
        int drop = g.drop();
        int b = Float.floatToRawIntBits(a);
        // keep the format's mantissa bits, round to nearest even (a carry moves into the exponent), rebias
        b += (1 << (drop - 1)) - 1 + ((b >>> drop) & 1);
        return sign | ((b >>> drop) - g.rebias());
    }

    /**
     * vLLM's {@code normalize_e4m3fn_to_e4m3fnuz} on one E4M3 code, whose bits are then read
     * as E4M3FNUZ: they stay (an E4M3FNUZ code is worth half the E4M3 code of the same bits,
     * which the doubled scale makes up), except E4M3's -0, {@code 0x80}, which would be FNUZ's
     * NaN and becomes 0x00 as vLLM makes it, and E4M3's NaN {@code S.1111.111}, which as FNUZ
     * would be +-240: it becomes FNUZ's NaN {@code 0x80} (vLLM leaves those bits alone, turning
     * a NaN weight into +-240; a NaN stays a NaN here).
     */
    public static int e4m3ToFnuz(int e4m3Code) {
        int c = e4m3Code & 0xFF;
        if (c == 0x80) return 0;
        return (c & 0x7F) == 0x7F ? 0x80 : c;
    }

    /** The largest finite {@code |x|} of {@code x[from, to)}; 0 when there is none. */
    public static float finiteAbsmax(float[] x, int from, int to) {
        return vectorNow() ? Fp8EncodeVectors.finiteAbsmax(x, from, to) : finiteAbsmaxScalar(x, from, to);
    }

    /** {@link #finiteAbsmax} on the scalar path. */
    static float finiteAbsmaxScalar(float[] x, int from, int to) {
        int max = 0;
        for (int i = from; i < to; i++) {
            int m = Float.floatToRawIntBits(x[i]) & 0x7FFF_FFFF;
            if (m < 0x7F80_0000) max = Math.max(max, m);
        }
        return Float.intBitsToFloat(max);
    }

    /** The stored scale of a group whose largest finite magnitude is {@code amax}, as a float. */
    public static float scale(Fp8Format format, float amax, DType scaleDtype) {
        if (amax == 0f) return 1f;
        float s = round(amax / maxFinite(format), scaleDtype);
        if (s == 0f) s = smallestPositive(scaleDtype);
        return s;
    }

    /** {@code s} rounded to nearest even into BF16, F16 or F32, widened back (exactly). */
    static float round(float s, DType dtype) {
        if (dtype.equals(DType.BF16)) return Floats.bf16ToF32(Floats.f32ToBf16(s));
        if (dtype.equals(DType.F16)) return Floats.f16ToF32(Floats.f32ToF16(s));
        return s;
    }

    private static float smallestPositive(DType dtype) {
        if (dtype.equals(DType.BF16)) return Floats.bf16ToF32((short) 1);
        if (dtype.equals(DType.F16)) return Floats.f16ToF32((short) 1);
        return Float.MIN_VALUE;
    }

    /**
     * Codes of {@code x[off, off + n)} divided by {@code scale}, into {@code out[outOff...]},
     * and what they decode to ({@code value(code) * scale}, the recovery's one float32
     * multiply) into {@code decoded[outOff...]} when it is not null.
     */
    public static void encode(Fp8Format format, float[] x, int off, int n, float scale, byte[] out, int outOff,
                              float[] decoded) {
        if (vectorNow()) Fp8EncodeVectors.encode(format, x, off, n, scale, out, outOff, decoded);
        else encodeScalar(format, x, off, n, scale, out, outOff, decoded);
    }

    /** {@link #encode} on the scalar path: the fallback, and the reference the vector path is tested against. */
    static void encodeScalar(Fp8Format format, float[] x, int off, int n, float scale, byte[] out, int outOff,
                             float[] decoded) {
        double inv = 1.0 / scale;
        byte[] codes = Fp8CodeTable.of(format);
        for (int i = 0; i < n; i++) {
            out[outOff + i] = codes[Fp8CodeTable.index(Float.floatToRawIntBits((float) (x[off + i] * inv)))];
        }
        if (decoded != null) {
            for (int i = 0; i < n; i++) decoded[outOff + i] = format.decode(out[outOff + i]) * scale;
        }
    }
}
