package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.testing.MemoryArchive;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.Random;

/**
 * One GPTQ layer built in test code: known small integers, zeros and scales, packed here by
 * the published layouts (AutoGPTQ's pack loops), with the expected weight computed by the
 * published formula, never by the code under test.
 */
final class GptqLayer {
    final int bits;
    final int in;
    final int out;
    final int groupSize;
    final int groups;
    final int[] gIdx;      // group of each input row
    final int[][] q;       // [in][out]
    final int[][] zStored; // [groups][out], as stored in the checkpoint
    final short[][] scaleBits; // [groups][out], F16 or BF16 bits
    final DType scaleType;

    GptqLayer(int bits, int in, int out, int groupSize, int[] gIdx, int[][] q, int[][] zStored, short[][] scaleBits,
              DType scaleType) {
        this.bits = bits;
        this.in = in;
        this.out = out;
        this.groupSize = groupSize;
        this.groups = zStored.length;
        this.gIdx = gIdx;
        this.q = q;
        this.zStored = zStored;
        this.scaleBits = scaleBits;
        this.scaleType = scaleType;
    }

    /** Random codes, zeros (symmetric: all 2^(bits-1) - 1) and F16/BF16 scales; act-order permutes the group rows. */
    static GptqLayer random(long seed, int bits, int in, int out, int groupSize, boolean actOrder, boolean sym,
                            DType scaleType) {
        Random r = new Random(seed);
        int gs = groupSize == -1 ? in : groupSize;
        int groups = (in + gs - 1) / gs;
        int[] perm = new int[in];
        for (int i = 0; i < in; i++) perm[i] = i;
        if (actOrder) {
            for (int i = in - 1; i > 0; i--) {
                int j = r.nextInt(i + 1);
                int t = perm[i];
                perm[i] = perm[j];
                perm[j] = t;
            }
        }
        int[] gIdx = new int[in];
        for (int i = 0; i < in; i++) gIdx[i] = perm[i] / gs;
        int max = (1 << bits) - 1;
        int[][] q = new int[in][out];
        for (int[] row : q) for (int o = 0; o < out; o++) row[o] = r.nextInt(max + 1);
        int[][] z = new int[groups][out];
        short[][] s = new short[groups][out];
        for (int g = 0; g < groups; g++) {
            for (int o = 0; o < out; o++) {
                z[g][o] = sym ? (1 << (bits - 1)) - 1 : r.nextInt(max + 1);
                float v = (r.nextInt(4000) + 1) / 65536f * (r.nextBoolean() ? 1 : -1);
                s[g][o] = scaleType.equals(DType.F16) ? Float.floatToFloat16(v)
                        : (short) (Float.floatToRawIntBits(v) >>> 16);
            }
        }
        return new GptqLayer(bits, in, out, groupSize, gIdx, q, z, s, scaleType);
    }

    float scale(int g, int o) {
        short b = scaleBits[g][o];
        return scaleType.equals(DType.F16) ? Float.float16ToFloat(b) : Float.intBitsToFloat((b & 0xFFFF) << 16);
    }

    /** GPTQModel's dequantize_weight with float32 scales: scale * (q - zero), zero = stored + 1 for v1. */
    float expected(int o, int i, int zeroOffset) {
        int g = gIdx[i];
        return scale(g, o) * (float) (q[i][o] - (zStored[g][o] + zeroOffset));
    }

    int packedRows() {
        return (in * bits + 31) / 32;
    }

    int zeroWords() {
        return (out * bits + 31) / 32;
    }

    /** qweight [packedRows, out]: input rows packed into each column's words, LSB first. */
    int[] qweight() {
        int rows = packedRows();
        int[] w = new int[rows * out];
        for (int o = 0; o < out; o++) {
            int col = o;
            int[] column = pack(i -> q[i][col], in);
            for (int r = 0; r < rows; r++) w[r * out + o] = column[r];
        }
        return w;
    }

    /** qzeros [groups, zeroWords]: output columns packed along each group row. */
    int[] qzeros() {
        int words = zeroWords();
        int[] w = new int[groups * words];
        for (int g = 0; g < groups; g++) {
            int row = g;
            int[] packed = pack(o -> zStored[row][o], out);
            System.arraycopy(packed, 0, w, g * words, words);
        }
        return w;
    }

    short[] scalesFlat() {
        short[] s = new short[groups * out];
        for (int g = 0; g < groups; g++) System.arraycopy(scaleBits[g], 0, s, g * out, out);
        return s;
    }

    /**
     * AutoGPTQ's packing of n values into words: 2/4/8 bits, 32/bits values per word from the
     * low bits up; 3 bits, 32 values per 3 words, 10 in the first word, the 11th split 2+1
     * bits across words one and two, 10 more, the 22nd split 1+2 across words two and three,
     * then the last 10.
     */
    int[] pack(java.util.function.IntUnaryOperator value, int n) {
        int words = (n * bits + 31) / 32;
        int[] w = new int[words + 3];
        if (bits != 3) {
            int per = 32 / bits;
            for (int i = 0; i < n; i++) w[i / per] |= value.applyAsInt(i) << (bits * (i % per));
        } else {
            java.util.function.IntUnaryOperator v = i -> i < n ? value.applyAsInt(i) : 0;
            for (int b = 0; b * 32 < n; b++) {
                int base = b * 32;
                int row = b * 3;
                for (int j = 0; j < 10; j++) w[row] |= v.applyAsInt(base + j) << (3 * j);
                w[row] |= v.applyAsInt(base + 10) << 30;
                w[row + 1] |= (v.applyAsInt(base + 10) >> 2) & 1;
                for (int j = 0; j < 10; j++) w[row + 1] |= v.applyAsInt(base + 11 + j) << (3 * j + 1);
                w[row + 1] |= v.applyAsInt(base + 21) << 31;
                w[row + 2] |= (v.applyAsInt(base + 21) >> 1) & 3;
                for (int j = 0; j < 10; j++) w[row + 2] |= v.applyAsInt(base + 22 + j) << (3 * j + 2);
            }
        }
        return java.util.Arrays.copyOf(w, words);
    }

    /** Adds qweight, qzeros, scales and (optionally) g_idx under {@code prefix}. */
    MemoryArchive addTo(MemoryArchive a, String prefix, boolean withGIdx) {
        a.ints(prefix + ".qweight", qweight(), packedRows(), out);
        a.ints(prefix + ".qzeros", qzeros(), groups, zeroWords());
        a.shorts(prefix + ".scales", scaleType, scalesFlat(), groups, out);
        if (withGIdx) a.ints(prefix + ".g_idx", gIdx, in);
        return a;
    }

    /** The layer as the kernels take it: its three tensors in native memory and its layout (v1 zeros). */
    record Packed(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, GptqKernel.Layout layout) {
    }

    Packed packed(Arena arena) {
        short[] s = scalesFlat();
        MemorySegment sc = arena.allocate(s.length * 2L);
        MemorySegment.copy(s, 0, sc, ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, s.length);
        return new Packed(ints(arena, qweight()), ints(arena, qzeros()), sc,
                new GptqKernel.Layout(bits, in, out, groups, zeroWords(), 1, scaleType));
    }

    private static MemorySegment ints(Arena arena, int[] values) {
        MemorySegment m = arena.allocate(values.length * 4L);
        MemorySegment.copy(values, 0, m, ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN), 0, values.length);
        return m;
    }

    /**
     * Checks that the dispatcher amn runs ({@link GptqKernel#dequantizeRowsNoVector}) writes
     * {@code whole}'s rows for a row range that starts mid-tile.
     */
    void checkRowRangeMidTile(Arena arena, Packed p, DType target, MemorySegment whole) {
        int first = Math.min(5, out - 1);
        int rows = out - first;
        MemorySegment part = arena.allocate(target.byteSize((long) rows * in));
        GptqKernel.dequantizeRowsNoVector(p.qweight(), p.qzeros(), p.scales(), gIdx, p.layout(), first, rows, target, part);
        long mismatch = part.mismatch(whole.asSlice(target.byteSize((long) first * in)));
        if (mismatch != -1) throw new AssertionError("rows from " + first + " differ at byte " + mismatch);
    }
}
