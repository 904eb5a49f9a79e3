package io.anamnesis.quant.gguf;

import java.util.Arrays;

import static io.anamnesis.quant.gguf.IqArith.aborts;
import static io.anamnesis.quant.gguf.IqArith.fp16;
import static io.anamnesis.quant.gguf.IqArith.max;
import static io.anamnesis.quant.gguf.IqArith.nearestInt;
import static io.anamnesis.quant.gguf.IqArith.putShort;

/**
 * IQ1_S and IQ1_M: ternary values (-1, 0, 1) shifted by +-1/8, eight at a time from the
 * 2048-point {@code iq1s_grid}. ggml-quants.c {@code quantize_row_iq1_s_impl} (blocks of 32,
 * one shift per block, a 3-bit scale under an f16 per 256, importance required) and
 * {@code quantize_row_iq1_m_impl} (blocks of 16, a shift per 8 values, 3-bit scales, the
 * super-block scale an f16 spread over the top nibbles of the four scale words).
 *
 * <p>Both solve the weighted fit exactly: with three values the best assignment splits the
 * sorted values into three runs, so every pair of split points (i1, i2) is scored. A split
 * that is off the grid is moved to the nearest grid point. The sort is stable (glibc's
 * qsort sorts these small arrays with a merge sort), so equal values keep column order.
 *
 * <p>IQ1_M scores a split in closed form from prefix sums kept per half block, as the
 * reference library does (the ggml build the corpus and {@code ggml_ref.py} use). ggml's
 * source at commit ca01960e6a still re-sums every split term by term; the two round
 * differently, and on rows where several splits score alike (an outlier among small values,
 * an all-negative row) they choose different grid points, so only this form gives the
 * reference's bytes.
 */
final class Iq1Encoder implements RowEncoder {
    private static final float DELTA = 0.125f;
    /** Values of levels 0, 1, 2 with the shift +delta (x_p) and -delta (x_m). */
    private static final float[] PLUS = {-1 + DELTA, DELTA, 1 + DELTA};
    private static final float[] MINUS = {-1 - DELTA, -DELTA, 1 - DELTA};
    /** IQ1_M qh bits for its shift choices: ++, +-, -+, -- (group 0 in bit 3, group 1 in bit 7). */
    private static final int[] M_SHIFT_BITS = {0x00, 0x80, 0x08, 0x88};
    /** v0^2 - v1^2 and v1^2 - v2^2 of either shift, the weights' steps in IQ1_M's closed-form split sums. */
    private static final float PLUS_STEP1 = PLUS[0] * PLUS[0] - PLUS[1] * PLUS[1];
    private static final float PLUS_STEP2 = PLUS[1] * PLUS[1] - PLUS[2] * PLUS[2];
    private static final float MINUS_STEP1 = MINUS[0] * MINUS[0] - MINUS[1] * MINUS[1];
    private static final float MINUS_STEP2 = MINUS[1] * MINUS[1] - MINUS[2] * MINUS[2];

    static final Iq1Encoder S = new Iq1Encoder(false);
    static final Iq1Encoder M = new Iq1Encoder(true);

    private final boolean m;
    private final int bs;
    private final int blockBytes;

    private Iq1Encoder(boolean m) {
        this.m = m;
        this.bs = m ? 16 : 32;
        this.blockBytes = m ? 56 : 50;
    }

    private String type() {
        return m ? "IQ1_M" : "IQ1_S";
    }

    @Override
    public void encode(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance) {
        if (importance == null && !m) {
            throw new IllegalArgumentException("IQ1_S needs an importance matrix (ggml_quantize_requires_imatrix)");
        }
        IqGridSearch grid = IqGridSearch.iq1s();
        Scratch s = new Scratch(bs);
        int blocks = perRow / 256;
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < blocks; b++) {
                int xo = srcOffset + r * perRow + b * 256;
                int yo = dstOffset + (r * blocks + b) * blockBytes;
                if (m) blockM(grid, src, xo, importance, b * 256, dst, yo, s);
                else blockS(grid, src, xo, importance, b * 256, dst, yo, s);
            }
        }
    }

    private static final class Scratch {
        final float[] scales = new float[16];
        final int[] shifts = new int[16];
        final float[] weight;
        final float[] sorted;
        final int[] order;
        final float[] sumx;
        final float[] sumw;
        final byte[] levels;
        final int[] index = new int[4];
        /** IQ1_M: prefix sums of w*x and w per half, [half * 17 + j]. */
        final float[] halfSumX = new float[34];
        final float[] halfSumW = new float[34];
        /** IQ1_M: the four shift combinations' sums of one split. */
        final float[] sumqx = new float[4];
        final float[] sumq2 = new float[4];
        /** IQ1_S qh words, IQ1_M scale words. */
        final int[] words = new int[8];

        Scratch(int bs) {
            weight = new float[bs];
            sorted = new float[bs];
            order = new int[bs];
            sumx = new float[bs + 1];
            sumw = new float[bs + 1];
            levels = new byte[bs];
        }
    }

    private void weights(float[] x, int xb, float[] importance, int col, float sigma2, float[] weight) {
        if (importance != null) {
            for (int i = 0; i < bs; i++) weight[i] = importance[col + i] * (float) Math.sqrt(sigma2 + x[xb + i] * x[xb + i]);
        } else {
            for (int i = 0; i < bs; i++) weight[i] = x[xb + i] * x[xb + i];
        }
    }

    /** Column indices of the block in ascending order of value, equal values in column order. */
    private void sortBlock(float[] x, int xb, Scratch s) {
        float[] v = s.sorted;
        int[] order = s.order;
        for (int j = 0; j < bs; j++) {
            float xj = x[xb + j];
            int at = j;
            while (at > 0 && v[at - 1] > xj) {
                v[at] = v[at - 1];
                order[at] = order[at - 1];
                at--;
            }
            v[at] = xj;
            order[at] = j;
        }
    }

    /** Levels from the best split: runs [0, i1), [i1, i2), [i2, bs) of the sorted block get 0, 1, 2. */
    private void splitLevels(int[] order, int i1, int i2, byte[] levels) {
        for (int j = 0; j < bs; j++) levels[order[j]] = (byte) (j < i1 ? 0 : j < i2 ? 1 : 2);
    }

    /** Grid indices of the block's groups of 8; a group off the grid is moved to its best neighbour. */
    private boolean toGrid(IqGridSearch grid, float[] x, int xb, float[] weight, float scale, float[] shift0,
                           float[] shift1, Scratch s) {
        boolean allOnGrid = true;
        for (int k = 0; k < bs / 8; k++) {
            int key = grid.key(s.levels, 8 * k);
            int g = grid.map[key];
            if (g < 0) {
                allOnGrid = false;
                g = bestNeighbour(grid, key, x, xb + 8 * k, weight, 8 * k, scale, k == 0 ? shift0 : shift1);
                grid.levelsOf(g, s.levels, 8 * k);
            }
            s.index[k] = g;
        }
        return allOnGrid;
    }

    /**
     * ggml's {@code iq1_find_best_neighbour2}: the neighbour with the least weighted squared
     * error at this scale. When no neighbour has an error below FLT_MAX, ggml scans the whole
     * grid but reads {@code xval[i]} with the grid index i, past the 8 values (undefined
     * behaviour, reached only by overflowing values); the scan here reads the intended value.
     */
    private int bestNeighbour(IqGridSearch grid, int key, float[] x, int xAt, float[] weight, int wAt,
                              float scale, float[] values) {
        int list = -1 - grid.map[key];
        int count = grid.neighbours[list];
        float best = Float.MAX_VALUE;
        int bestIndex = -1;
        for (int j = 1; j <= count; j++) {
            int g = grid.neighbours[list + j];
            float d2 = error(grid, g, x, xAt, weight, wAt, scale, values);
            if (d2 < best) {
                best = d2;
                bestIndex = g;
            }
        }
        for (int g = 0; bestIndex < 0 && g < grid.size; g++) {
            float d2 = error(grid, g, x, xAt, weight, wAt, scale, values);
            if (d2 < best) {
                best = d2;
                bestIndex = g;
            }
        }
        if (bestIndex < 0) throw aborts(type(), "no grid point at a finite distance");
        return bestIndex;
    }

    private static float error(IqGridSearch grid, int g, float[] x, int xAt, float[] weight, int wAt, float scale, float[] values) {
        float d2 = 0;
        for (int i = 0; i < 8; i++) {
            float q = values[grid.level(g, i)];
            float w = weight[wAt + i];
            float diff = scale * q - x[xAt + i];
            d2 += w * diff * diff;
        }
        return d2;
    }

    // ------------------------------------------------------------------ IQ1_S

    /** {f16 d; u8 qs[32]; u16 qh[8]}: qh[ib] holds bits 8..10 of 4 indices, the 3-bit scale at 12, the shift sign at 15. */
    private void blockS(IqGridSearch grid, float[] x, int xo, float[] importance, int col, byte[] y, int yo, Scratch s) {
        Arrays.fill(y, yo, yo + blockBytes, (byte) 0);
        float[] weight = s.weight;
        float[] sumx = s.sumx;
        float[] sumw = s.sumw;

        float sumx2 = 0;
        for (int i = 0; i < 256; i++) sumx2 += x[xo + i] * x[xo + i];
        float sigma2 = 2 * sumx2 / 256;

        int[] qh = s.words;
        Arrays.fill(qh, 0);
        float maxScale = 0;
        for (int ib = 0; ib < 8; ib++) {
            int xb = xo + 32 * ib;
            weights(x, xb, importance, col + 32 * ib, sigma2, weight);
            float max = Math.abs(x[xb]);
            for (int i = 1; i < 32; i++) max = max(max, Math.abs(x[xb + i]));
            if (max < 1e-12f) {
                s.scales[ib] = 0;
                s.shifts[ib] = 1;
                continue;
            }
            sortBlock(x, xb, s);
            sumx[0] = 0;
            sumw[0] = 0;
            for (int j = 0; j < 32; j++) {
                int i = s.order[j];
                sumx[j + 1] = sumx[j] + weight[i] * x[xb + i];
                sumw[j + 1] = sumw[j] + weight[i];
            }
            float bestScore = -Float.MAX_VALUE;
            float scale = max;
            int besti1 = -1;
            int besti2 = -1;
            int bestShift = 0;
            for (int i1 = 0; i1 <= 32; i1++) {
                for (int i2 = i1; i2 <= 32; i2++) {
                    float sumqx = (sumx[i1] - sumx[0]) * PLUS[0] + (sumx[i2] - sumx[i1]) * PLUS[1] + (sumx[32] - sumx[i2]) * PLUS[2];
                    float sumq2 = (sumw[i1] - sumw[0]) * PLUS[0] * PLUS[0] + (sumw[i2] - sumw[i1]) * PLUS[1] * PLUS[1]
                            + (sumw[32] - sumw[i2]) * PLUS[2] * PLUS[2];
                    if (sumq2 > 0 && sumqx * sumqx > bestScore * sumq2) {
                        scale = sumqx / sumq2;
                        bestScore = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        bestShift = 1;
                    }
                    sumqx = (sumx[i1] - sumx[0]) * MINUS[0] + (sumx[i2] - sumx[i1]) * MINUS[1] + (sumx[32] - sumx[i2]) * MINUS[2];
                    sumq2 = (sumw[i1] - sumw[0]) * MINUS[0] * MINUS[0] + (sumw[i2] - sumw[i1]) * MINUS[1] * MINUS[1]
                            + (sumw[32] - sumw[i2]) * MINUS[2] * MINUS[2];
                    if (sumq2 > 0 && sumqx * sumqx > bestScore * sumq2) {
                        scale = sumqx / sumq2;
                        bestScore = scale * sumqx;
                        besti1 = i1;
                        besti2 = i2;
                        bestShift = -1;
                    }
                }
            }
            if (besti1 < 0 || besti2 < 0 || bestShift == 0) {
                s.scales[ib] = 0;
                s.shifts[ib] = 1;
                continue;
            }
            splitLevels(s.order, besti1, besti2, s.levels);
            if (scale < 0) {
                for (int j = 0; j < 32; j++) s.levels[j] = (byte) (2 - s.levels[j]);
                scale = -scale;
                bestShift = -bestShift;
            }
            float[] values = bestShift == 1 ? PLUS : MINUS;
            if (!toGrid(grid, x, xb, weight, scale, values, values, s)) {
                float sumqx = 0;
                float sumq2 = 0;
                for (int k = 0; k < 4; k++) {
                    for (int j = 0; j < 8; j++) {
                        float w = weight[8 * k + j];
                        float q = values[grid.level(s.index[k], j)];
                        sumqx += w * q * x[xb + 8 * k + j];
                        sumq2 += w * q * q;
                    }
                }
                if (sumqx > 0 && sumq2 > 0) scale = sumqx / sumq2;
            }
            int h = 0;
            for (int k = 0; k < 4; k++) {
                y[yo + 2 + 4 * ib + k] = (byte) s.index[k];
                h |= (s.index[k] >> 8) << (3 * k);
            }
            qh[ib] = h;
            if (!(scale >= 0)) throw aborts(type(), "a block scale that is not a number");
            s.scales[ib] = scale;
            s.shifts[ib] = bestShift;
            maxScale = max(maxScale, scale);
        }

        if (maxScale != 0) {
            float d = maxScale / 15;
            putShort(y, yo, fp16(d * 1.125f));
            float id = 1 / d;
            for (int ib = 0; ib < 8; ib++) {
                int l = nearestInt(0.5f * (id * s.scales[ib] - 1));
                l = Math.max(0, Math.min(7, l));
                if (s.shifts[ib] == -1) l |= 8;
                qh[ib] |= l << 12;
            }
        }
        for (int ib = 0; ib < 8; ib++) putShort(y, yo + 34 + 2 * ib, qh[ib]);
    }

    // ------------------------------------------------------------------ IQ1_M

    /**
     * {u8 qs[32]; u8 qh[16]; u8 scales[8]}: qh[ib] holds bits 8..10 of the two indices (low
     * and high nibble) and their shift bits; scales is four u16 of four 3-bit scales, their
     * top nibbles the f16 super-block scale.
     */
    private void blockM(IqGridSearch grid, float[] x, int xo, float[] importance, int col, byte[] y, int yo, Scratch s) {
        Arrays.fill(y, yo, yo + blockBytes, (byte) 0);
        float[] weight = s.weight;

        float sumx2 = 0;
        for (int i = 0; i < 256; i++) sumx2 += x[xo + i] * x[xo + i];
        float sigma2 = 2 * sumx2 / 256;

        float[] sumqx = s.sumqx;
        float[] sumq2 = s.sumq2;
        float maxScale = 0;
        for (int ib = 0; ib < 16; ib++) {
            int xb = xo + 16 * ib;
            weights(x, xb, importance, col + 16 * ib, sigma2, weight);
            float max = Math.abs(x[xb]);
            for (int i = 1; i < 16; i++) max = max(max, Math.abs(x[xb + i]));
            if (max < 1e-7f) {
                s.scales[ib] = 0;
                s.shifts[ib] = 0;
                continue;
            }
            sortBlock(x, xb, s);
            // Prefix sums of w*x and w along the sorted order, kept per half (group of 8), as
            // each half picks its own shift. With v0 - v1 = v1 - v2 = -1 for either shift, a
            // split's sum is T*v2 - P(i1) - P(i2): ggml's closed form, in its order of operations.
            float[] px = s.halfSumX;
            float[] pw = s.halfSumW;
            px[0] = px[17] = 0;
            pw[0] = pw[17] = 0;
            for (int j = 0; j < 16; j++) {
                int i = s.order[j];
                int h = i < 8 ? 0 : 17;
                int other = 17 - h;
                px[h + j + 1] = px[h + j] + weight[i] * x[xb + i];
                px[other + j + 1] = px[other + j];
                pw[h + j + 1] = pw[h + j] + weight[i];
                pw[other + j + 1] = pw[other + j];
            }
            float bestScore = -Float.MAX_VALUE;
            float scale = max;
            int besti1 = -1;
            int besti2 = -1;
            int bestK = -1;
            // Per half h: T*v2 for either shift, and T_w*v2*v2 (the products ggml forms first).
            float tp0 = px[16] * PLUS[2];
            float tm0 = px[16] * MINUS[2];
            float tp1 = px[33] * PLUS[2];
            float tm1 = px[33] * MINUS[2];
            float wp0 = pw[16] * PLUS[2] * PLUS[2];
            float wm0 = pw[16] * MINUS[2] * MINUS[2];
            float wp1 = pw[33] * PLUS[2] * PLUS[2];
            float wm1 = pw[33] * MINUS[2] * MINUS[2];
            // k: shift of group 0 in bit 1, of group 1 in bit 0 (0 = +delta, 1 = -delta).
            for (int i1 = 0; i1 <= 16; i1++) {
                for (int i2 = i1; i2 <= 16; i2++) {
                    float sx0 = px[i1] + px[i2];
                    float sx1 = px[17 + i1] + px[17 + i2];
                    float qxp0 = tp0 - sx0;
                    float qxm0 = tm0 - sx0;
                    float qxp1 = tp1 - sx1;
                    float qxm1 = tm1 - sx1;
                    float q2p0 = wp0 + pw[i1] * PLUS_STEP1 + pw[i2] * PLUS_STEP2;
                    float q2m0 = wm0 + pw[i1] * MINUS_STEP1 + pw[i2] * MINUS_STEP2;
                    float q2p1 = wp1 + pw[17 + i1] * PLUS_STEP1 + pw[17 + i2] * PLUS_STEP2;
                    float q2m1 = wm1 + pw[17 + i1] * MINUS_STEP1 + pw[17 + i2] * MINUS_STEP2;
                    sumqx[0] = qxp0 + qxp1;
                    sumqx[1] = qxp0 + qxm1;
                    sumqx[2] = qxm0 + qxp1;
                    sumqx[3] = qxm0 + qxm1;
                    sumq2[0] = q2p0 + q2p1;
                    sumq2[1] = q2p0 + q2m1;
                    sumq2[2] = q2m0 + q2p1;
                    sumq2[3] = q2m0 + q2m1;
                    for (int k = 0; k < 4; k++) {
                        if (sumq2[k] > 0 && sumqx[k] * sumqx[k] > bestScore * sumq2[k]) {
                            scale = sumqx[k] / sumq2[k];
                            bestScore = scale * sumqx[k];
                            besti1 = i1;
                            besti2 = i2;
                            bestK = k;
                        }
                    }
                }
            }
            if (besti1 < 0 || besti2 < 0 || bestK < 0) {
                s.scales[ib] = 0;
                s.shifts[ib] = 0;
                continue;
            }
            splitLevels(s.order, besti1, besti2, s.levels);
            if (scale < 0) {
                for (int j = 0; j < 16; j++) s.levels[j] = (byte) (2 - s.levels[j]);
                scale = -scale;
                bestK = 3 - bestK;
            }
            float[] values0 = bestK < 2 ? PLUS : MINUS;
            float[] values1 = bestK % 2 == 0 ? PLUS : MINUS;
            if (!toGrid(grid, x, xb, weight, scale, values0, values1, s)) {
                float fx = 0;
                float f2 = 0;
                for (int k = 0; k < 2; k++) {
                    float[] values = k == 0 ? values0 : values1;
                    for (int j = 0; j < 8; j++) {
                        float w = weight[8 * k + j];
                        float q = values[grid.level(s.index[k], j)];
                        fx += w * q * x[xb + 8 * k + j];
                        f2 += w * q * q;
                    }
                }
                if (fx > 0 && f2 > 0) scale = fx / f2;
            }
            y[yo + 2 * ib] = (byte) s.index[0];
            y[yo + 2 * ib + 1] = (byte) s.index[1];
            y[yo + 32 + ib] = (byte) ((s.index[0] >> 8) | ((s.index[1] >> 8) << 4));
            if (!(scale >= 0)) throw aborts(type(), "a block scale that is not a number");
            s.scales[ib] = scale;
            s.shifts[ib] = bestK;
            maxScale = max(maxScale, scale);
        }

        if (maxScale == 0) return;

        // The super-block scale is refitted over all 256 values with the 3-bit block scales chosen.
        int[] sc = s.words;
        Arrays.fill(sc, 0);
        float d = maxScale / 15;
        float id = 1 / d;
        float fx = 0;
        float f2 = 0;
        for (int ib = 0; ib < 16; ib++) {
            int l = nearestInt(0.5f * (id * s.scales[ib] - 1));
            l = Math.max(0, Math.min(7, l));
            sc[ib / 4] |= l << (3 * (ib % 4));
            int qh = (y[yo + 32 + ib] & 0xFF) | M_SHIFT_BITS[s.shifts[ib]];
            y[yo + 32 + ib] = (byte) qh;
            int xb = xo + 16 * ib;
            weights(x, xb, importance, col + 16 * ib, sigma2, weight);
            for (int k = 0; k < 2; k++) {
                float[] values = (k == 0 ? s.shifts[ib] < 2 : s.shifts[ib] % 2 == 0) ? PLUS : MINUS;
                int g = (y[yo + 2 * ib + k] & 0xFF) | ((qh << (8 - 4 * k)) & 0x700);
                for (int j = 0; j < 8; j++) {
                    float w = weight[8 * k + j];
                    float q = values[grid.level(g, j)] * (2 * l + 1);
                    fx += w * q * x[xb + 8 * k + j];
                    f2 += w * q * q;
                }
            }
        }
        if (f2 > 0) d = fx / f2;
        int f16 = fp16(d * 1.1125f) & 0xFFFF;
        sc[0] |= (f16 & 0x000F) << 12;
        sc[1] |= (f16 & 0x00F0) << 8;
        sc[2] |= (f16 & 0x0F00) << 4;
        sc[3] |= f16 & 0xF000;
        for (int i = 0; i < 4; i++) putShort(y, yo + 48 + 2 * i, sc[i]);
    }
}
