package io.anamnesis.quant.bnb;

/**
 * The LLM.int8() row-wise encoder as a pure static function: one row of F32 values in, its
 * int8 codes and its {@code SCB} (the row's absmax) out. The inverse of {@link Int8Rows}.
 *
 * <p>What bitsandbytes does, in order: {@code Int8Params._quantize} casts the weight to
 * float16 (round to nearest even), and {@code int8_vectorwise_quant} takes each row's largest
 * {@code |x|} (NaN ignored, {@code fmaxf}) as {@code SCB}, multiplies every value by the
 * float32 {@code 127.0f / SCB} and rounds half to even ({@code __float2int_rn}). The division
 * is rounded to nearest here, as the PyTorch backend does; the CUDA build's fast division may
 * differ by an ulp, which moves a code only for a value within an ulp of a half-integer. An
 * all-zero row has SCB 0 and codes 0 ({@code 0 * inf} is NaN, which converts to 0).
 */
public final class Int8Encoder {
    private Int8Encoder() {
    }

    /** 1.5 x 2^23: adding and subtracting it rounds a float below 2^22 to an integer, half to even. */
    private static final float RNE_MAGIC = 12582912f;

    /**
     * Encodes {@code x[off, off + n)} into {@code codes[codesOff, codesOff + n)}, using
     * {@code half} (at least {@code n} long) as scratch, and returns the row's SCB.
     */
    public static float encodeRow(float[] x, int off, int n, byte[] codes, int codesOff, float[] half) {
        return FourBitEncoder.vectorNow() ? EncodeVectors.encodeRow(x, off, n, codes, codesOff, half)
                : encodeRowScalar(x, off, n, codes, codesOff, half);
    }

    /**
     * {@link #encodeRow} on the scalar path: the fallback, and the reference the vector path is
     * tested against. It keeps no float16 copy of the row ({@code half} is the vector path's):
     * the largest float16 magnitude is the largest of their bit patterns (the infinity
     * included, a NaN above it), and converting a value again costs less than storing it. Each
     * loop is one C2 vectorizes, where a row of floats with a NaN test per value was not
     * (docs/benchmarks.md).
     */
    static float encodeRowScalar(float[] x, int off, int n, byte[] codes, int codesOff, float[] half) {
        int max = 0;
        for (int i = 0; i < n; i++) max = Math.max(max, Float.floatToFloat16(x[off + i]) & 0x7FFF);
        if (max > 0x7C00) {
            // a NaN: fmaxf ignores it
            max = 0;
            for (int i = 0; i < n; i++) {
                int m = Float.floatToFloat16(x[off + i]) & 0x7FFF;
                if (m <= 0x7C00) max = Math.max(max, m);
            }
        }
        float scb = Float.float16ToFloat((short) max);
        float scale = 127.0f / scb;
        for (int i = 0; i < n; i++) {
            codes[codesOff + i] = (byte) round(Float.float16ToFloat(Float.floatToFloat16(x[off + i])) * scale);
        }
        return scb;
    }

    /** Round half to even to an int for {@code |v| <= 2^22}; NaN gives 0, as the CUDA conversion does. */
    static int round(float v) {
        return (int) ((v + RNE_MAGIC) - RNE_MAGIC);
    }
}
