package io.anamnesis.quant.gguf;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

import static io.anamnesis.quant.gguf.GgmlMath.LONGS;
import static io.anamnesis.quant.gguf.GgmlMath.putFp16;
import static io.anamnesis.quant.gguf.GgmlMath.putInt;
import static io.anamnesis.quant.gguf.GgmlMath.roundHalfAway;
import static io.anamnesis.quant.gguf.GgmlMath.truncate;

/**
 * Encoders of ggml's 32-element block types Q4_0, Q4_1, Q5_0, Q5_1 and Q8_0, as
 * {@code ggml_quantize_chunk} runs them: without an importance matrix every block goes
 * through {@code quantize_row_*_ref} (one scale from the extreme value, levels by
 * truncating x/d plus a half); with one, Q4_0..Q5_1 fit each block's scale to the weights
 * {@code qw[j] * sqrt(sigma2 + x[j]^2)} (sigma2 the row's mean square) by
 * {@link ScaleSearch}. Q8_0 ignores the importance, as ggml does.
 */
final class LegacyEncoders {
    private LegacyEncoders() {
    }

    private static final int QK = 32;

    // ---------------------------------------------------------------- Q8_0 {f16 d; i8 qs[32]}

    /** d = amax/127, q = roundf(x/d); NaN never wins ggml's MAX(amax, |x|) unless last. */
    static void q8_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / QK);
        Piece t = PIECES.get();
        for (int b = 0; b < blocks; b += PIECE_BLOCKS) {
            q8_0Piece(src, s + b * QK, dst, o + b * 34, Math.min(PIECE_BLOCKS, blocks - b), t);
        }
    }

    /** Blocks a piece of the Q8_0 and Q4_0 encoders holds: 8 Ki values, so that its scratch stays in the L1/L2 cache. */
    private static final int PIECE_BLOCKS = 256;

    /**
     * Each thread's scratch, made once: the encoders are called a batch of rows at a time (8 Ki
     * values), and a new 90 KB of scratch per call was 2-3 % of a forget's CPU samples.
     */
    private static final ThreadLocal<Piece> PIECES = ThreadLocal.withInitial(Piece::new);

    /**
     * A piece's scratch: each value's reciprocal scale, its level, the blocks ggml's scan must
     * redo, and the halving buffers of {@link #largestMagnitudes}.
     */
    private static final class Piece {
        final float[] inverse;
        final byte[] levels;
        final int[] special;
        final int[] largest;
        final long[] pairs;
        final int[] halved;
        final MemorySegment pairsView;
        final MemorySegment halvedView;

        Piece() {
            int n = PIECE_BLOCKS;
            inverse = new float[n * QK];
            levels = new byte[n * QK];
            special = new int[n];
            largest = new int[n];
            pairs = new long[n * QK / 2];
            halved = new int[n * QK / 2];
            pairsView = MemorySegment.ofArray(pairs);
            halvedView = MemorySegment.ofArray(halved);
        }

        /**
         * The bits of the largest {@code |x|} of each of {@code blocks} blocks from {@code s}, in
         * {@link #largest} (returned): for floats without their sign the bit patterns order as
         * the values do (an infinity at 0x7F800000, a NaN above it), so an integer maximum stands for ggml's
         * float scan with its NaN rule (the blocks with a NaN or an infinity are redone by that
         * scan). A maximum over 32 values is a chain of compare-and-branch C2 does not vectorize
         * (0.6-0.9 ns a value, most of it mispredicted branches); five halvings of the whole
         * piece are loops it does: the values copied into a {@code long[]}, each long's two ints
         * reduced to their larger magnitude in an {@code int[]} at the same index (a loop between
         * arrays of two types, which C2 need not suspect of overlapping), copied back into the
         * longs, four more times.
         */
        int[] largestMagnitudes(float[] src, int s, int blocks) {
            int n = blocks * QK / 2;
            MemorySegment.copy(src, s, pairsView, ValueLayout.JAVA_FLOAT, 0, 2 * n);
            halve(pairs, halved, n);
            for (int round = 1; round < 5; round++) {
                MemorySegment.copy(halvedView, 0, pairsView, 0, 4L * n);
                n /= 2;
                halve(pairs, halved, n);
            }
            System.arraycopy(halved, 0, largest, 0, blocks);
            return largest;
        }

        /** halved[j] = the larger magnitude of the two floats' (or magnitudes') bits in pairs[j]. */
        private static void halve(long[] pairs, int[] halved, int n) {
            for (int j = 0; j < n; j++) {
                long two = pairs[j];
                halved[j] = Math.max((int) two & 0x7FFF_FFFF, (int) (two >>> 32) & 0x7FFF_FFFF);
            }
        }
    }

    /**
     * quantize_row_q8_0_ref for {@code blocks} blocks, in passes so that those per value are
     * loops C2 vectorizes: the blocks' largest magnitudes ({@link Piece#largestMagnitudes}), each
     * block's scale (its reciprocal copied to each of its values), then every level of the
     * piece in one loop, then the levels copied into place
     * behind each scale. A block that needs ggml's scan (an infinity, a NaN, an overflowing
     * reciprocal) is done by it afterwards, over what the loop wrote. The level loop rounds
     * half away by adding {@code signum(v)} times the float below a half, which is
     * {@link GgmlMath#roundHalfAwaySmall}'s sum (checked over every float of |v| <= 130 and
     * NaN beside the project): C2 vectorizes {@code signum}, not {@code copySign}. Per block
     * of 32 the loop was too short to vectorize: 2.6-3.5 ns a value before, docs/benchmarks.md.
     */
    private static void q8_0Piece(float[] src, int s, byte[] dst, int o, int blocks, Piece t) {
        float[] inverse = t.inverse;
        byte[] levels = t.levels;
        int[] special = t.special;
        int specials = 0;
        int[] largest = t.largestMagnitudes(src, s, blocks);
        for (int b = 0; b < blocks; b++) {
            int bits = largest[b];
            float d = Float.intBitsToFloat(bits) / 127;
            float id = d != 0 ? 1.0f / d : 0.0f;
            if (bits >= 0x7F80_0000 || !(Math.abs(id) < Float.POSITIVE_INFINITY)) {
                special[specials++] = b;
                id = 0f;
            } else {
                putFp16(dst, o + b * 34, d);
            }
            java.util.Arrays.fill(inverse, b * QK, b * QK + QK, id);
        }
        int n = blocks * QK;
        for (int j = 0; j < n; j++) {
            float v = src[s + j] * inverse[j];
            levels[j] = (byte) (int) (v + Math.signum(v) * BELOW_HALF);
        }
        for (int b = 0; b < blocks; b++) {
            // a block's 32 levels as four longs: System.arraycopy of 32 bytes was 10 ns a block
            // (a call each), a sixth of the encoder's time (docs/benchmarks.md)
            int from = b * QK;
            int to = o + b * 34 + 2;
            LONGS.set(dst, to, (long) LONGS.get(levels, from));
            LONGS.set(dst, to + 8, (long) LONGS.get(levels, from + 8));
            LONGS.set(dst, to + 16, (long) LONGS.get(levels, from + 16));
            LONGS.set(dst, to + 24, (long) LONGS.get(levels, from + 24));
        }
        for (int k = 0; k < specials; k++) q8_0Reference(src, s + special[k] * QK, dst, o + special[k] * 34);
    }

    /** The float just below one half: {@link GgmlMath#roundHalfAwaySmall}'s. */
    private static final float BELOW_HALF = Math.nextDown(0.5f);

    /**
     * quantize_row_q8_0_ref for one block as ggml writes it: NaN never wins MAX(amax, |x|) unless
     * last. The blocks the fast paths leave (an infinity, a NaN, an overflowing reciprocal).
     */
    static void q8_0Reference(float[] src, int s, byte[] dst, int o) {
        float amax = 0.0f;
        for (int j = 0; j < QK; j++) {
            float a = Math.abs(src[s + j]);
            amax = amax > a ? amax : a;
        }
        float d = amax / 127;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putFp16(dst, o, d);
        if (Math.abs(amax) < Float.POSITIVE_INFINITY && Math.abs(id) < Float.POSITIVE_INFINITY) {
            // every |x * id| is at most 127 and a rounding (a NaN x, which amax skips, gives level 0 either way)
            for (int j = 0; j < QK; j++) dst[o + 2 + j] = (byte) GgmlMath.roundHalfAwaySmall(src[s + j] * id);
            return;
        }
        for (int j = 0; j < QK; j++) dst[o + 2 + j] = (byte) roundHalfAway(src[s + j] * id);
    }

    // ---------------------------------------------------------------- Q8_1 {f16 d; f16 s; i8 qs[32]}

    /**
     * quantize_row_q8_1_ref, the activation type of Q4_1/Q5_1 dot products (ggml's chunk path
     * has no Q8_1 case): Q8_0's levels plus s = f16(sum(q) * d) over the block's 32 levels.
     */
    static void q8_1(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / QK);
        for (int b = 0; b < blocks; b++, s += QK, o += 36) {
            float amax = 0.0f;
            for (int j = 0; j < QK; j++) {
                float a = Math.abs(src[s + j]);
                amax = amax > a ? amax : a;
            }
            float d = amax / 127;
            float id = d != 0 ? 1.0f / d : 0.0f;
            putFp16(dst, o, d);
            int sum = 0;
            for (int j = 0; j < QK; j++) {
                byte q = (byte) roundHalfAway(src[s + j] * id);
                dst[o + 4 + j] = q;
                sum += q;
            }
            putFp16(dst, o + 2, sum * d);
        }
    }

    // ---------------------------------------------------------------- Q4_0 {f16 d; u8 qs[16]}

    static void q4_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance == null) {
            q4_0Ref(src, s, dst, o, rows * (perRow / QK));
            return;
        }
        int[] levels = new int[QK];
        int[] tmp = new int[QK];
        float[] weight = new float[QK];
        for (int r = 0; r < rows; r++, s += perRow) {
            float sigma2 = meanSquare(src, s, perRow);
            for (int ib = 0; ib < perRow / QK; ib++, o += 18) {
                int xb = s + QK * ib;
                blockWeights(src, xb, importance, QK * ib, sigma2, weight);
                float d = ScaleSearch.symmetric(QK, 8, src, xb, levels, 0, weight, 0, tmp);
                putFp16(dst, o, d);
                for (int j = 0; j < 16; j++) dst[o + 2 + j] = (byte) (levels[j] | levels[j + 16] << 4);
            }
        }
    }

    /** quantize_row_q4_0_ref: d = max/-8 (the signed extreme), q = min(15, (int8)(x/d + 8.5)). */
    private static void q4_0Ref(float[] src, int s, byte[] dst, int o, int blocks) {
        Piece t = PIECES.get();
        for (int b = 0; b < blocks; b += PIECE_BLOCKS) {
            q4_0Piece(src, s + b * QK, dst, o + b * 18, Math.min(PIECE_BLOCKS, blocks - b), t);
        }
    }

    /**
     * {@link #q4_0RefBlock} for {@code blocks} blocks in passes, as {@link #q8_0Piece}: the
     * largest magnitudes, each block's scale (its reciprocal copied to its values), every level
     * of the piece in one loop C2 vectorizes, then the levels packed two to a byte behind each
     * scale. The signed extreme
     * without ggml's branch per larger value (a coin toss per block, mispredicted): the largest
     * magnitude from the bits, then the first value that has it, which is the one ggml's scan
     * (replacing only on a strictly larger magnitude) keeps. With every value and the
     * reciprocal finite, {@code |x * id| <= 8} within a rounding, so the sum plus 8.5 converts
     * to int in Java as in C; other blocks are done by ggml's scan afterwards.
     */
    private static void q4_0Piece(float[] src, int s, byte[] dst, int o, int blocks, Piece t) {
        float[] inverse = t.inverse;
        byte[] levels = t.levels;
        int[] special = t.special;
        int specials = 0;
        int[] largest = t.largestMagnitudes(src, s, blocks);
        for (int b = 0; b < blocks; b++) {
            int at = s + b * QK;
            int bits = largest[b];
            float id = 0f;
            if (bits < 0x7F80_0000) {
                int first = 0;
                while ((Float.floatToRawIntBits(src[at + first]) & 0x7FFF_FFFF) != bits) first++;
                float d = src[at + first] / -8;
                id = d != 0 ? 1.0f / d : 0.0f;
                if (Math.abs(id) < Float.POSITIVE_INFINITY) putFp16(dst, o + b * 18, d);
                else special[specials++] = b;
            } else {
                special[specials++] = b;
            }
            java.util.Arrays.fill(inverse, b * QK, b * QK + QK, id);
        }
        // 0..16 here; ggml's MIN(15, ...) is taken while packing (a min in this loop keeps C2 from vectorizing it)
        int n = blocks * QK;
        for (int j = 0; j < n; j++) levels[j] = (byte) (int) (src[s + j] * inverse[j] + 8.5f);
        for (int b = 0; b < blocks; b++) {
            int l = b * QK;
            int at = o + b * 18 + 2;
            for (int j = 0; j < 16; j++) {
                dst[at + j] = (byte) (Math.min(15, levels[l + j]) | Math.min(15, levels[l + 16 + j]) << 4);
            }
        }
        for (int k = 0; k < specials; k++) q4_0RefBlock(src, s + special[k] * QK, dst, o + special[k] * 18);
    }

    static void q4_0RefBlock(float[] src, int s, byte[] dst, int o) {
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < QK; j++) {
            float v = src[s + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -8;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putFp16(dst, o, d);
        for (int j = 0; j < 16; j++) {
            int lo = Math.min(15, (byte) truncate(src[s + j] * id + 8.5f)) & 0xFF;
            int hi = Math.min(15, (byte) truncate(src[s + 16 + j] * id + 8.5f)) & 0xFF;
            dst[o + 2 + j] = (byte) (lo | hi << 4);
        }
    }

    // ---------------------------------------------------------------- Q4_1 {f16 d; f16 m; u8 qs[16]}

    static void q4_1(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance == null) {
            q4_1Ref(src, s, dst, o, rows * (perRow / QK));
            return;
        }
        int[] levels = new int[QK];
        int[] aux = new int[QK];
        float[] weight = new float[QK];
        float[] min = new float[1];
        for (int r = 0; r < rows; r++, s += perRow) {
            float sigma2 = meanSquare(src, s, perRow);
            for (int ib = 0; ib < perRow / QK; ib++, o += 20) {
                int xb = s + QK * ib;
                blockWeights(src, xb, importance, QK * ib, sigma2, weight);
                float d = ScaleSearch.affine(QK, 15, src, xb, weight, 0, levels, 0, aux, -0.9f, 0.05f, 36, false, min, 0);
                putFp16(dst, o, d);
                putFp16(dst, o + 2, -min[0]);
                for (int j = 0; j < 16; j++) dst[o + 4 + j] = (byte) (levels[j] | levels[j + 16] << 4);
            }
        }
    }

    /** quantize_row_q4_1_ref: d = (max - min)/15, m = min, q = min(15, (int8)((x - min)/d + 0.5)). */
    private static void q4_1Ref(float[] src, int s, byte[] dst, int o, int blocks) {
        for (int b = 0; b < blocks; b++, s += QK, o += 20) q4_1RefBlock(src, s, dst, o);
    }

    static void q4_1RefBlock(float[] src, int s, byte[] dst, int o) {
        float min = Float.MAX_VALUE;
        float max = -Float.MAX_VALUE;
        for (int j = 0; j < QK; j++) {
            float v = src[s + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        float d = (max - min) / 15;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putFp16(dst, o, d);
        putFp16(dst, o + 2, min);
        for (int j = 0; j < 16; j++) {
            int lo = Math.min(15, (byte) truncate((src[s + j] - min) * id + 0.5f)) & 0xFF;
            int hi = Math.min(15, (byte) truncate((src[s + 16 + j] - min) * id + 0.5f)) & 0xFF;
            dst[o + 4 + j] = (byte) (lo | hi << 4);
        }
    }

    // ---------------------------------------------------------------- Q5_0 {f16 d; u32 qh; u8 qs[16]}

    static void q5_0(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance == null) {
            q5_0Ref(src, s, dst, o, rows * (perRow / QK));
            return;
        }
        int[] levels = new int[QK];
        int[] tmp = new int[QK];
        float[] weight = new float[QK];
        for (int r = 0; r < rows; r++, s += perRow) {
            float sigma2 = meanSquare(src, s, perRow);
            for (int ib = 0; ib < perRow / QK; ib++, o += 22) {
                int xb = s + QK * ib;
                blockWeights(src, xb, importance, QK * ib, sigma2, weight);
                float d = ScaleSearch.symmetric(QK, 16, src, xb, levels, 0, weight, 0, tmp);
                putFp16(dst, o, d);
                packFiveBits(levels, dst, o + 2);
            }
        }
    }

    /** quantize_row_q5_0_ref: d = max/-16, q = min(31, (int8)(x/d + 16.5)). */
    private static void q5_0Ref(float[] src, int s, byte[] dst, int o, int blocks) {
        int[] levels = new int[QK];
        for (int b = 0; b < blocks; b++, s += QK, o += 22) q5_0RefBlock(src, s, dst, o, levels);
    }

    static void q5_0RefBlock(float[] src, int s, byte[] dst, int o, int[] levels) {
        float amax = 0.0f;
        float max = 0.0f;
        for (int j = 0; j < QK; j++) {
            float v = src[s + j];
            if (amax < Math.abs(v)) {
                amax = Math.abs(v);
                max = v;
            }
        }
        float d = max / -16;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putFp16(dst, o, d);
        for (int j = 0; j < QK; j++) levels[j] = Math.min(31, (byte) truncate(src[s + j] * id + 16.5f)) & 0xFF;
        packFiveBits(levels, dst, o + 2);
    }

    // ---------------------------------------------------------------- Q5_1 {f16 d; f16 m; u32 qh; u8 qs[16]}

    static void q5_1(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        if (importance == null) {
            q5_1Ref(src, s, dst, o, rows * (perRow / QK));
            return;
        }
        int[] levels = new int[QK];
        int[] aux = new int[QK];
        float[] weight = new float[QK];
        float[] min = new float[1];
        for (int r = 0; r < rows; r++, s += perRow) {
            float sigma2 = meanSquare(src, s, perRow);
            for (int ib = 0; ib < perRow / QK; ib++, o += 24) {
                int xb = s + QK * ib;
                blockWeights(src, xb, importance, QK * ib, sigma2, weight);
                float d = ScaleSearch.affine(QK, 31, src, xb, weight, 0, levels, 0, aux, -0.9f, 0.05f, 36, false, min, 0);
                putFp16(dst, o, d);
                putFp16(dst, o + 2, -min[0]);
                packFiveBits(levels, dst, o + 4);
            }
        }
    }

    /** quantize_row_q5_1_ref: d = (max - min)/31, m = min, q = (uint8)((x - min)/d + 0.5). */
    private static void q5_1Ref(float[] src, int s, byte[] dst, int o, int blocks) {
        int[] levels = new int[QK];
        for (int b = 0; b < blocks; b++, s += QK, o += 24) q5_1RefBlock(src, s, dst, o, levels);
    }

    static void q5_1RefBlock(float[] src, int s, byte[] dst, int o, int[] levels) {
        float min = Float.MAX_VALUE;
        float max = -Float.MAX_VALUE;
        for (int j = 0; j < QK; j++) {
            float v = src[s + j];
            if (v < min) min = v;
            if (v > max) max = v;
        }
        float d = (max - min) / 31;
        float id = d != 0 ? 1.0f / d : 0.0f;
        putFp16(dst, o, d);
        putFp16(dst, o + 2, min);
        for (int j = 0; j < QK; j++) levels[j] = truncate((src[s + j] - min) * id + 0.5f) & 0xFF;
        packFiveBits(levels, dst, o + 4);
    }

    // ---------------------------------------------------------------- shared

    /** Q5 layout: bit 4 of element j goes to bit j of the u32 qh, the low nibbles pair j with j + 16. */
    static void packFiveBits(int[] levels, byte[] dst, int at) {
        int qh = 0;
        for (int j = 0; j < 16; j++) {
            int lo = levels[j];
            int hi = levels[j + 16];
            dst[at + 4 + j] = (byte) ((lo & 0xF) | (hi & 0xF) << 4);
            qh |= ((lo & 0x10) >>> 4) << j;
            qh |= ((hi & 0x10) >>> 4) << (j + 16);
        }
        putInt(dst, at, qh);
    }

    /** sum of x^2 over the row, divided by its length, in ggml's order. */
    static float meanSquare(float[] x, int from, int n) {
        float sum = 0;
        for (int j = 0; j < n; j++) sum += x[from + j] * x[from + j];
        return sum / n;
    }

    /** weight[j] = qw[j] * sqrtf(sigma2 + x[j]^2) for the 32 values of one block. */
    private static void blockWeights(float[] x, int xb, float[] qw, int qwo, float sigma2, float[] weight) {
        for (int j = 0; j < QK; j++) {
            float v = x[xb + j];
            weight[j] = qw[qwo + j] * (float) Math.sqrt(sigma2 + v * v);
        }
    }
}
