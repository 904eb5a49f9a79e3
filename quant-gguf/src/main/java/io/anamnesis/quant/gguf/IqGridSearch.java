package io.anamnesis.quant.gguf;

import java.util.Arrays;

/**
 * The search structure ggml builds at {@code ggml_quantize_init} for a grid of the i-quants
 * ({@code iq2xs_init_impl}, {@code iq3xs_init_impl} in ggml-quants.c): each grid point as
 * levels 0..k-1 per element, a map from any tuple of levels to the grid point it is (if any),
 * and for every tuple that is not a grid point the list of nearest grid points to try.
 *
 * <p>The encoders work in "odd units": level {@code l} stands for {@code 2l + 1}. The levels
 * are the rank of each decoded byte among the grid's distinct values (iq2: 0x08 0x19 0x2b;
 * iq1: -1 0 1; iq3_xxs: 4 12 ... 62; iq3_s: 1 3 ... 15), which is how ggml's compact
 * {@code kgrid_*} tables number them, so the grid tables of {@link GgufTables} are the only
 * source. A tuple's key packs level {@code i} at bit {@code bits * i}.
 *
 * <p>Neighbours: the grid points whose squared distance (in odd units) is one of the
 * {@code nearestDistances} smallest distinct distances, ordered by distance and then by
 * grid index: ggml's qsort of (distance, index) pairs, cut after that many distinct
 * distances. The order matters, as the encoders keep the first of equally good points.
 * Only tuples an encoder can produce (every level below {@link #levels}) get a list.
 *
 * <p>Each structure is built once, on first use, by the JVM's thread-safe lazy class
 * initialisation of its holder, and is immutable afterwards.
 */
final class IqGridSearch {
    /** Values per grid point: 8 (iq1, iq2) or 4 (iq3). */
    final int dims;
    /** Bits per element in a key: 2 or 3. */
    final int bits;
    /** Distinct levels an element takes: 3 (iq1, iq2) or 8 (iq3). */
    final int levels;
    /** Number of grid points. */
    final int size;
    /** {@code points[g * dims + i]}: level of element i of grid point g. */
    final byte[] points;
    /** {@code odd[g * dims + i]}: the same as the float 2 * level + 1, the unit of ggml's searches. */
    final float[] odd;
    /**
     * {@code map[key]}: the grid index of that tuple, or, for a tuple off the grid,
     * {@code -1 - offset} of its list in {@link #neighbours}.
     */
    final int[] map;
    /** Lists of {@code count, index...}. */
    final short[] neighbours;

    private IqGridSearch(long[] grid8, int[] grid4, int bits, int nearestDistances) {
        this.dims = grid8 != null ? 8 : 4;
        this.bits = bits;
        this.size = grid8 != null ? grid8.length : grid4.length;
        int[] bytes = new int[size * dims];
        for (int g = 0; g < size; g++) {
            for (int i = 0; i < dims; i++) {
                bytes[g * dims + i] = grid8 != null ? (byte) (grid8[g] >>> (8 * i)) : (byte) (grid4[g] >>> (8 * i));
            }
        }
        int[] distinct = Arrays.stream(bytes).distinct().sorted().toArray();
        this.levels = distinct.length;
        this.points = new byte[bytes.length];
        for (int k = 0; k < bytes.length; k++) points[k] = (byte) Arrays.binarySearch(distinct, bytes[k]);
        this.odd = new float[points.length];
        for (int k = 0; k < points.length; k++) odd[k] = 2 * points[k] + 1;

        this.map = new int[1 << (bits * dims)];
        Arrays.fill(map, Integer.MIN_VALUE);   // left only at keys with a level no encoder produces
        boolean[] onGrid = new boolean[map.length];
        for (int g = 0; g < size; g++) {
            int key = key(points, g * dims);
            map[key] = g;
            onGrid[key] = true;
        }

        int maxDistance = dims * 4 * (levels - 1) * (levels - 1);
        int[] bucketCount = new int[maxDistance + 1];
        int[][] buckets = new int[maxDistance + 1][size];
        byte[] tuple = new byte[dims];
        short[] lists = new short[1 << 16];
        int used = 0;
        int tuples = 1;
        for (int i = 0; i < dims; i++) tuples *= levels;
        // A point's squared distance to a tuple, split into the halves of its key: each half
        // table holds, for every half key, the sum of (2 * level difference)^2 over its elements.
        int half = dims / 2;
        int halfBits = bits * half;
        int halfMask = (1 << halfBits) - 1;
        int[] low = new int[1 << halfBits];
        int[] high = new int[1 << halfBits];
        int[] pointKeys = new int[size];
        for (int g = 0; g < size; g++) pointKeys[g] = key(points, g * dims);
        for (int t = 0; t < tuples; t++) {
            for (int i = 0, rest = t; i < dims; i++, rest /= levels) tuple[i] = (byte) (rest % levels);
            int key = key(tuple, 0);
            if (onGrid[key]) continue;
            for (int k = 0; k < low.length; k++) {
                int lo = 0;
                int hi = 0;
                for (int i = 0; i < half; i++) {
                    int level = (k >>> (bits * i)) & ((1 << bits) - 1);
                    int dl = 2 * (level - tuple[i]);
                    int dh = 2 * (level - tuple[half + i]);
                    lo += dl * dl;
                    hi += dh * dh;
                }
                low[k] = lo;
                high[k] = hi;
            }
            Arrays.fill(bucketCount, 0);
            for (int g = 0; g < size; g++) {
                int d2 = low[pointKeys[g] & halfMask] + high[pointKeys[g] >>> halfBits];
                buckets[d2][bucketCount[d2]++] = g;
            }
            int count = 0;
            for (int d2 = 0, taken = 0; d2 <= maxDistance && taken < nearestDistances; d2++) {
                if (bucketCount[d2] == 0) continue;
                count += bucketCount[d2];
                taken++;
            }
            if (used + 1 + count > lists.length) lists = Arrays.copyOf(lists, Math.max(2 * lists.length, used + 1 + count));
            map[key] = -1 - used;
            lists[used++] = (short) count;
            for (int d2 = 0, taken = 0; d2 <= maxDistance && taken < nearestDistances; d2++) {
                if (bucketCount[d2] == 0) continue;
                for (int j = 0; j < bucketCount[d2]; j++) lists[used++] = (short) buckets[d2][j];
                taken++;
            }
        }
        this.neighbours = Arrays.copyOf(lists, used);
    }

    /** The key of the {@code dims} levels at {@code from}. */
    int key(byte[] tupleLevels, int from) {
        int key = 0;
        for (int i = 0; i < dims; i++) key |= tupleLevels[from + i] << (bits * i);
        return key;
    }

    /** The levels of grid point {@code g} into {@code into[at...]}. */
    void levelsOf(int g, byte[] into, int at) {
        System.arraycopy(points, g * dims, into, at, dims);
    }

    /** Level {@code i} of grid point {@code g}. */
    int level(int g, int i) {
        return points[g * dims + i];
    }

    /**
     * The neighbour nearest to {@code scale * (2 level + 1)} in weighted squared distance
     * (ggml's {@code iq2_find_best_neighbour} / {@code iq3_find_best_neighbour}; the first
     * of equals wins), its levels written to {@code out[outAt...]}; -1 when no distance is
     * below FLT_MAX, where ggml aborts. The distance is summed element by element in ggml's
     * order; the loop is unrolled by hand for the two group sizes, as this is the encoders'
     * innermost loop.
     */
    int bestNeighbour(int key, float[] xval, int xAt, float[] weight, int wAt, float scale, byte[] out, int outAt) {
        int list = -1 - map[key];
        int bestIndex = dims == 8
                ? nearest8(list, xval, xAt, weight, wAt, scale)
                : nearest4(list, xval, xAt, weight, wAt, scale);
        if (bestIndex >= 0) levelsOf(bestIndex, out, outAt);
        return bestIndex;
    }

    private int nearest8(int list, float[] xval, int xAt, float[] weight, int wAt, float scale) {
        float x0 = xval[xAt], x1 = xval[xAt + 1], x2 = xval[xAt + 2], x3 = xval[xAt + 3];
        float x4 = xval[xAt + 4], x5 = xval[xAt + 5], x6 = xval[xAt + 6], x7 = xval[xAt + 7];
        float w0 = weight[wAt], w1 = weight[wAt + 1], w2 = weight[wAt + 2], w3 = weight[wAt + 3];
        float w4 = weight[wAt + 4], w5 = weight[wAt + 5], w6 = weight[wAt + 6], w7 = weight[wAt + 7];
        float[] v = odd;
        int count = neighbours[list];
        float best = Float.MAX_VALUE;
        int bestIndex = -1;
        for (int j = 1; j <= count; j++) {
            int g = neighbours[list + j] & 0xFFFF;
            int p = 8 * g;
            float d;
            float d2 = 0;
            d = scale * v[p] - x0;
            d2 += w0 * d * d;
            d = scale * v[p + 1] - x1;
            d2 += w1 * d * d;
            d = scale * v[p + 2] - x2;
            d2 += w2 * d * d;
            d = scale * v[p + 3] - x3;
            d2 += w3 * d * d;
            d = scale * v[p + 4] - x4;
            d2 += w4 * d * d;
            d = scale * v[p + 5] - x5;
            d2 += w5 * d * d;
            d = scale * v[p + 6] - x6;
            d2 += w6 * d * d;
            d = scale * v[p + 7] - x7;
            d2 += w7 * d * d;
            if (d2 < best) {
                best = d2;
                bestIndex = g;
            }
        }
        return bestIndex;
    }

    private int nearest4(int list, float[] xval, int xAt, float[] weight, int wAt, float scale) {
        float x0 = xval[xAt], x1 = xval[xAt + 1], x2 = xval[xAt + 2], x3 = xval[xAt + 3];
        float w0 = weight[wAt], w1 = weight[wAt + 1], w2 = weight[wAt + 2], w3 = weight[wAt + 3];
        float[] v = odd;
        int count = neighbours[list];
        float best = Float.MAX_VALUE;
        int bestIndex = -1;
        for (int j = 1; j <= count; j++) {
            int g = neighbours[list + j] & 0xFFFF;
            int p = 4 * g;
            float d;
            float d2 = 0;
            d = scale * v[p] - x0;
            d2 += w0 * d * d;
            d = scale * v[p + 1] - x1;
            d2 += w1 * d * d;
            d = scale * v[p + 2] - x2;
            d2 += w2 * d * d;
            d = scale * v[p + 3] - x3;
            d2 += w3 * d * d;
            if (d2 < best) {
                best = d2;
                bestIndex = g;
            }
        }
        return bestIndex;
    }

    static IqGridSearch iq2xxs() {
        return Iq2xxs.GRID;
    }

    static IqGridSearch iq2xs() {
        return Iq2xs.GRID;
    }

    static IqGridSearch iq2s() {
        return Iq2s.GRID;
    }

    /** Shared by IQ1_S and IQ1_M, as in ggml. */
    static IqGridSearch iq1s() {
        return Iq1s.GRID;
    }

    static IqGridSearch iq3xxs() {
        return Iq3xxs.GRID;
    }

    static IqGridSearch iq3s() {
        return Iq3s.GRID;
    }

    // Neighbour depth per grid as iq2xs_init_impl / iq3xs_init_impl choose it (nwant).
    private static final class Iq2xxs {
        static final IqGridSearch GRID = new IqGridSearch(GgufTables.IQ2XXS_GRID, null, 2, 2);
    }

    private static final class Iq2xs {
        static final IqGridSearch GRID = new IqGridSearch(GgufTables.IQ2XS_GRID, null, 2, 2);
    }

    private static final class Iq2s {
        static final IqGridSearch GRID = new IqGridSearch(GgufTables.IQ2S_GRID, null, 2, 1);
    }

    private static final class Iq1s {
        static final IqGridSearch GRID = new IqGridSearch(GgufTables.IQ1S_GRID, null, 2, 3);
    }

    private static final class Iq3xxs {
        static final IqGridSearch GRID = new IqGridSearch(null, GgufTables.IQ3XXS_GRID, 3, 2);
    }

    private static final class Iq3s {
        static final IqGridSearch GRID = new IqGridSearch(null, GgufTables.IQ3S_GRID, 3, 3);
    }
}
