package io.anamnesis.quant.bnb;

/**
 * The bitsandbytes 4-bit encoders (NF4, FP4) as pure static functions: F32 values in, the
 * per-block absmax and the packed codes out, the inverse of {@link FourBit}.
 *
 * <p>Arithmetic, as bitsandbytes' {@code kQuantizeBlockwise} kernel does it (which wrote the
 * checkpoints people publish): a block's {@code absmax} is the largest {@code |x|} with NaN
 * ignored ({@code fmaxf}); every value is multiplied by the float32 reciprocal
 * {@code 1.0f / absmax} (rounded to nearest here; the CUDA build's fast-math reciprocal may
 * differ by an ulp, which moves a code only for a value within an ulp of a threshold); the
 * product picks its code by the kernel's decision tree ({@code dQuantizeNF4},
 * {@code dQuantizeFP4}): strictly greater than a threshold goes up, so a value on a threshold
 * takes the lower code. An all-zero block has absmax 0, its reciprocal is infinite and
 * {@code 0 * inf} is NaN, which both trees send to code 0, exactly as the kernel does.
 *
 * <p>FP4 signed zero: the kernel's sign bit is {@code x < 0}; here {@code -0.0} takes the
 * sign bit too (code 8, which the decoder reads as {@code -0.0}), so that decoding then
 * encoding gives the codes back. Any other value gets the kernel's code.
 *
 * <p>Codes are packed two to a byte, the even element in the high nibble. An odd element
 * count leaves the last low nibble to the kernel's zero padding: the code of {@code 0.0}
 * scaled like the rest of the block.
 */
public final class FourBitEncoder {
    private FourBitEncoder() {
    }

    /** bitsandbytes' NF4 code book ({@code get_4bit_type("nf4")}), as its checkpoints store it in {@code quant_map}. */
    public static final float[] NF4_MAP = {
            -1.0f, -0.6961928009986877f, -0.5250730514526367f, -0.39491748809814453f,
            -0.28444138169288635f, -0.18477343022823334f, -0.09105003625154495f, 0.0f,
            0.07958029955625534f, 0.16093020141124725f, 0.24611230194568634f, 0.33791524171829224f,
            0.44070982933044434f, 0.5626170039176941f, 0.7229568362236023f, 1.0f};

    /**
     * bitsandbytes' FP4 code book ({@code get_4bit_type("fp4")}: the E2M1 values with bias 3,
     * {@code [0, 0.0625, 8, 12, 4, 6, 2, 3]} and their negatives, divided by 12), as stored:
     * entry 8 is +0.0 (Python's {@code -0} there is the integer zero; the decoder gives it its sign).
     */
    public static final float[] FP4_MAP = fp4Map();

    private static float[] fp4Map() {
        float[] magnitudes = {0f, 0.0625f, 8f, 12f, 4f, 6f, 2f, 3f};
        float[] m = new float[16];
        for (int c = 0; c < 8; c++) {
            m[c] = magnitudes[c] / 12f;
            m[c + 8] = c == 0 ? 0f : -magnitudes[c] / 12f;
        }
        return m;
    }

    /**
     * {@code dQuantizeNF4}'s thresholds in ascending order: code {@code c} is the number of
     * thresholds a value exceeds. Each is the decimal midpoint of two neighbouring NF4 values
     * as the kernel writes it, a float literal (so rounded once to float32; the lowest lands an
     * ulp away from the float32 midpoint that PyTorch's fallback would compute).
     */
    static final float[] NF4_THRESHOLDS = {
            -0.8480964004993439f, -0.6106329262256622f, -0.4599952697753906f, -0.33967943489551544f,
            -0.23460740596055984f, -0.13791173323988914f, -0.045525018125772476f, 0.03979014977812767f,
            0.1202552504837513f, 0.2035212516784668f, 0.2920137718319893f, 0.3893125355243683f,
            0.5016634166240692f, 0.6427869200706482f, 0.8614784181118011f};

    /**
     * {@code dQuantizeFP4}'s thresholds on {@code |x|}, ascending (the kernel's literals, a few
     * ulps off the exact midpoints): the rank of a magnitude is how many it exceeds.
     */
    static final float[] FP4_THRESHOLDS = {0.00260417f, 0.0859375f, 0.20833333f, 0.29166667f, 0.4166667f,
            0.583333f, 0.8333333f};

    /** The FP4 code of each magnitude rank: 0, 0.0625, 2, 3, 4, 6, 8, 12 (over 12). */
    static final int[] FP4_RANK_CODE = {0b000, 0b001, 0b110, 0b111, 0b100, 0b101, 0b010, 0b011};

    /*
     * The codes of every float by table, as for FP8: a float's top 16 bits (sign, exponent, 7
     * mantissa bits) name a class of 65,536 consecutive floats (FloatClassTable). A class that
     * no threshold divides has one code, its entry. A class that one threshold divides (one per
     * threshold: the closest two are 0.08 apart, a class under 1 is at most 2^-7 wide) holds
     * the code below it, marked, and one comparison decides; the infinities' classes, which
     * hold NaNs too, take the definition. The lookup is a shift and a load, no float
     * arithmetic, and a branch the data takes a few times in a hundred: faster than the table
     * of 4096 uniform cells over [-1, 1] it replaced, whose index took an add, a multiply, a
     * conversion and a clamp (docs/benchmarks.md).
     */
    private static final byte[] NF4_BY_CLASS = FloatClassTable.build(new Rank(false));
    /** FP4 by class: the code of a class, or for a divided one {@code DIVIDED | sign << 3 | the lower magnitude rank}. */
    private static final byte[] FP4_BY_CLASS = fp4Codes(FloatClassTable.build(new Rank(true)));
    /** The threshold above each NF4 code, +inf above the last. */
    private static final float[] NF4_UPPER = new float[16];
    /** The threshold above each FP4 magnitude rank, +inf above the last. */
    private static final float[] FP4_UPPER = new float[8];

    static {
        for (int c = 0; c < 16; c++) NF4_UPPER[c] = c < 15 ? NF4_THRESHOLDS[c] : Float.POSITIVE_INFINITY;
        for (int r = 0; r < 8; r++) FP4_UPPER[r] = r < 7 ? FP4_THRESHOLDS[r] : Float.POSITIVE_INFINITY;
    }

    /**
     * A code's rank, of a float's raw bits: NF4's code; for FP4 the sign bit above the rank of
     * the magnitude (monotone for each sign, as FloatClassTable needs; FP4's codes are not).
     * A named class, not a lambda: nothing to spin at start-up.
     */
    private record Rank(boolean fp4) implements java.util.function.IntUnaryOperator {
        @Override
        public int applyAsInt(int bits) {
            float v = Float.intBitsToFloat(bits);
            if (!fp4) return nf4Counted(v);
            int sign = (bits >>> 31) & (v == v ? 1 : 0);
            return sign << 3 | (v == v ? fp4Rank(Math.abs(v)) : 0);
        }
    }

    /** FP4's class table with each uniform class's rank turned into its code. */
    private static byte[] fp4Codes(byte[] ranks) {
        for (int i = 0; i < ranks.length; i++) {
            int r = ranks[i];
            if (r >= 0) ranks[i] = (byte) (FP4_RANK_CODE[r & 7] | (r & 8));
        }
        return ranks;
    }

    /**
     * Whether the 512-bit vector encoders exist here ({@code jdk.incubator.vector} resolved, as
     * for the decoders, and 16-lane vectors); they give the same bytes as the scalar ones.
     */
    static final boolean VECTOR = OutputBits.VECTOR && vectorUsable();

    private static boolean vectorUsable() {
        try {
            return EncodeVectors.usable();
        } catch (LinkageError e) {
            return false;
        }
    }

    /** Starts on the scalar encoders, switches once C2 has made the vector ones faster (see KernelRace). */
    private static final io.anamnesis.api.numeric.KernelRace RACE = new io.anamnesis.api.numeric.KernelRace("bnb-encode",
            () -> Probe.run(false), () -> Probe.run(true));

    static boolean vectorNow() {
        return VECTOR && RACE.getAsBoolean();
    }

    /** The race's private work: 16 Ki values to NF4 and FP4, 8 int8 rows of 2048. */
    private static final class Probe {
        static final float[] X = new float[1 << 14];
        static final float[] ABSMAX = new float[(1 << 14) / 64];
        static final byte[] PACKED = new byte[1 << 13];
        static final byte[] CODES = new byte[1 << 14];
        static final float[] HALF = new float[2048];

        static {
            java.util.SplittableRandom r = new java.util.SplittableRandom(1);
            for (int i = 0; i < X.length; i++) X[i] = (float) r.nextGaussian();
        }

        static void run(boolean vector) {
            int n = X.length;
            if (vector) {
                EncodeVectors.blockAbsmax(X, 0, n, 64, ABSMAX, 0);
                EncodeVectors.encode(false, X, 0, n, 64, ABSMAX, 0, PACKED, 0);
                EncodeVectors.encode(true, X, 0, n, 64, ABSMAX, 0, PACKED, 0);
                for (int r = 0; r < 8; r++) EncodeVectors.encodeRow(X, r * 2048, 2048, CODES, r * 2048, HALF);
            } else {
                blockAbsmaxScalar(X, 0, n, 64, ABSMAX, 0);
                encodeScalar(false, X, 0, n, 64, ABSMAX, 0, PACKED, 0);
                encodeScalar(true, X, 0, n, 64, ABSMAX, 0, PACKED, 0);
                for (int r = 0; r < 8; r++) Int8Encoder.encodeRowScalar(X, r * 2048, 2048, CODES, r * 2048, HALF);
            }
        }
    }

    /** NF4 code of a normalized value by counting the thresholds it exceeds: the definition. */
    static int nf4Counted(float v) {
        int c = 0;
        for (float t : NF4_THRESHOLDS) c += v > t ? 1 : 0;
        return c;
    }

    /** Magnitude rank of {@code |v|} among the FP4 thresholds. */
    static int fp4Rank(float magnitude) {
        int r = 0;
        for (float t : FP4_THRESHOLDS) r += magnitude > t ? 1 : 0;
        return r;
    }

    /** The NF4 code of a value already multiplied by its block's reciprocal absmax. */
    public static int nf4(float v) {
        int c = NF4_BY_CLASS[Float.floatToRawIntBits(v) >>> 16];
        if (c >= 0) return c;
        if (c == FloatClassTable.SPECIAL) return nf4Counted(v);
        c &= 0x7F;
        return v > NF4_UPPER[c] ? c + 1 : c;
    }

    /** The FP4 code of a value already multiplied by its block's reciprocal absmax. */
    public static int fp4(float v) {
        int c = FP4_BY_CLASS[Float.floatToRawIntBits(v) >>> 16];
        if (c >= 0) return c;
        if (c == FloatClassTable.SPECIAL) return fp4Defined(v);
        int rank = (c & 7) + (Math.abs(v) > FP4_UPPER[c & 7] ? 1 : 0);
        return FP4_RANK_CODE[rank] | (c & 8);
    }

    /** FP4 by its definition: the magnitude's rank, and the sign bit of the value (so -0.0 too); a NaN is code 0 like the kernel's. */
    static int fp4Defined(float v) {
        int sign = (Float.floatToRawIntBits(v) >>> 31) & (v == v ? 1 : 0);
        return FP4_RANK_CODE[fp4Rank(Math.abs(v))] | sign << 3;
    }

    /** The largest {@code |x|} of {@code x[from, to)} with NaN ignored ({@code fmaxf}); 0 when all are NaN. */
    public static float absmax(float[] x, int from, int to) {
        // |x| as bits: for non-NaN floats, the magnitude order is the integer order
        int max = 0;
        for (int i = from; i < to; i++) {
            int m = Float.floatToRawIntBits(x[i]) & 0x7FFF_FFFF;
            if (m <= 0x7F80_0000) max = Math.max(max, m);
        }
        return Float.intBitsToFloat(max);
    }

    /**
     * Absmax of each block of {@code x[off, off + count)}: blocks of {@code blocksize}, the
     * last one possibly short, into {@code out[outOff...]}.
     */
    public static void blockAbsmax(float[] x, int off, int count, int blocksize, float[] out, int outOff) {
        if (vectorNow()) EncodeVectors.blockAbsmax(x, off, count, blocksize, out, outOff);
        else blockAbsmaxScalar(x, off, count, blocksize, out, outOff);
    }

    /** {@link #blockAbsmax} on the scalar path: the fallback, and the reference the vector path is tested against. */
    static void blockAbsmaxScalar(float[] x, int off, int count, int blocksize, float[] out, int outOff) {
        for (int b = 0, s = 0; s < count; b++, s += blocksize) {
            out[outOff + b] = absmax(x, off + s, off + Math.min(count, s + blocksize));
        }
    }

    /**
     * Encodes {@code x[off, off + count)} (a whole number of blocks, the last one possibly
     * short, starting on a block boundary of the tensor) into {@code (count + 1) / 2} packed
     * bytes at {@code packed[packedOff...]}, with the blocks' absmax already in
     * {@code absmax[absmaxOff...]}.
     */
    public static void encode(boolean fp4, float[] x, int off, int count, int blocksize, float[] absmax, int absmaxOff,
                              byte[] packed, int packedOff) {
        if (vectorNow()) EncodeVectors.encode(fp4, x, off, count, blocksize, absmax, absmaxOff, packed, packedOff);
        else encodeScalar(fp4, x, off, count, blocksize, absmax, absmaxOff, packed, packedOff);
    }

    /** {@link #encode} on the scalar path. */
    static void encodeScalar(boolean fp4, float[] x, int off, int count, int blocksize, float[] absmax, int absmaxOff,
                             byte[] packed, int packedOff) {
        for (int b = 0, s = 0; s < count; b++, s += blocksize) {
            float inv = 1.0f / absmax[absmaxOff + b];
            int end = Math.min(count, s + blocksize);
            int i = s;
            int o = packedOff + (s >> 1);
            if (fp4) {
                for (; i + 1 < end; i += 2) packed[o++] = (byte) (fp4(x[off + i] * inv) << 4 | fp4(x[off + i + 1] * inv));
                if (i < end) packed[o] = (byte) (fp4(x[off + i] * inv) << 4 | fp4(0f * inv));
            } else {
                for (; i + 1 < end; i += 2) packed[o++] = (byte) (nf4(x[off + i] * inv) << 4 | nf4(x[off + i + 1] * inv));
                if (i < end) packed[o] = (byte) (nf4(x[off + i] * inv) << 4 | nf4(0f * inv));
            }
        }
    }

    /**
     * What the packed codes decode to, as {@link FourBit#decode} computes it in F32:
     * {@code values[code] * absmax}, into {@code out[outOff, outOff + count)}.
     *
     * @param values the 16 code values from {@link FourBit#codeValues}
     */
    public static void decode(byte[] packed, int packedOff, int count, int blocksize, float[] absmax, int absmaxOff,
                              float[] values, float[] out, int outOff) {
        float[] table = new float[16];
        for (int b = 0, s = 0; s < count; b++, s += blocksize) {
            float a = absmax[absmaxOff + b];
            for (int c = 0; c < 16; c++) table[c] = values[c] * a;
            int end = Math.min(count, s + blocksize);
            // a byte (two values) at a time; a block starts inside a byte only if its size is odd
            int i = s;
            if ((i & 1) != 0 && i < end) {
                out[outOff + i] = table[packed[packedOff + (i >> 1)] & 15];
                i++;
            }
            for (; i + 1 < end; i += 2) {
                int p = packed[packedOff + (i >> 1)];
                out[outOff + i] = table[(p >> 4) & 15];
                out[outOff + i + 1] = table[p & 15];
            }
            if (i < end) out[outOff + i] = table[(packed[packedOff + (i >> 1)] >> 4) & 15];
        }
    }
}
