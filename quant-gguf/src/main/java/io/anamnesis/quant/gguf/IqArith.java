package io.anamnesis.quant.gguf;

/**
 * The few float idioms of ggml's quantizers (ggml-quants.c, ggml-impl.h) whose exact bits
 * the encoders depend on, as Java gives them. ggml is compiled without FMA and without
 * fast-math, so every other operation is plain IEEE float arithmetic in source order, which
 * Java's {@code float} reproduces; these are the ones where C and {@code java.lang.Math} differ.
 */
final class IqArith {
    private IqArith() {
    }

    /**
     * ggml's {@code nearest_int}: adding 1.5 * 2^23 makes the float adder round to nearest
     * (ties to even) into the low mantissa bits, which are then read back. Exact for
     * |v| <= 2^22; beyond that, and for inf and NaN, it gives the same garbage as the C code,
     * which is why it is not {@code Math.rint}.
     */
    static int nearestInt(float v) {
        int bits = Float.floatToRawIntBits(v + 12582912f);
        return (bits & 0x007F_FFFF) - 0x0040_0000;
    }

    /** ggml's {@code MAX(a, b)}, {@code a > b ? a : b}: unlike {@code Math.max}, b wins ties (0 vs -0) and NaN comparisons. */
    static float max(float a, float b) {
        return a > b ? a : b;
    }

    /**
     * {@code GGML_FP32_TO_FP16}: round to nearest even with subnormals and overflow to
     * infinity (what {@link Float#floatToFloat16} does), except that every NaN becomes the
     * quiet NaN 0x7E00 with its sign.
     */
    static short fp16(float f) {
        if (Float.isNaN(f)) {
            return (short) (((Float.floatToRawIntBits(f) >>> 16) & 0x8000) | 0x7E00);
        }
        return Float.floatToFloat16(f);
    }

    /**
     * ggml's {@code best_index_int8} over a sorted codebook: the index of the value nearest
     * to {@code x}; an exact tie between two neighbours goes to the upper one, and NaN to the
     * last entry (the binary search never moves its upper bound).
     */
    static int bestIndex(float[] values, float x) {
        int n = values.length;
        if (x <= values[0]) return 0;
        if (x >= values[n - 1]) return n - 1;
        int lo = 0;
        int hi = n - 1;
        while (hi - lo > 1) {
            int mid = (lo + hi) >>> 1;
            if (x < values[mid]) hi = mid;
            else lo = mid;
        }
        return x - values[hi - 1] < values[hi] - x ? hi - 1 : hi;
    }

    static void putShort(byte[] b, int at, int v) {
        b[at] = (byte) v;
        b[at + 1] = (byte) (v >>> 8);
    }

    static void putInt(byte[] b, int at, int v) {
        b[at] = (byte) v;
        b[at + 1] = (byte) (v >>> 8);
        b[at + 2] = (byte) (v >>> 16);
        b[at + 3] = (byte) (v >>> 24);
    }

    /** The grid encoders' answer to a row ggml would abort on (its GGML_ASSERT / GGML_ABORT). */
    static IllegalArgumentException aborts(String type, String why) {
        return new IllegalArgumentException(type + ": ggml aborts on this row (" + why
                + "); rows must hold finite values and importance weights must be finite and non-negative");
    }
}
