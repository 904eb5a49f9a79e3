package io.anamnesis.quant.gguf;

import java.util.Arrays;

import static io.anamnesis.quant.gguf.IqArith.aborts;
import static io.anamnesis.quant.gguf.IqArith.fp16;
import static io.anamnesis.quant.gguf.IqArith.max;
import static io.anamnesis.quant.gguf.IqArith.nearestInt;
import static io.anamnesis.quant.gguf.IqArith.putInt;
import static io.anamnesis.quant.gguf.IqArith.putShort;

/**
 * IQ3_XXS and IQ3_S: magnitudes of 4 values at a time taken from a 256- or 512-point grid
 * of levels (2l+1, l in 0..7), signs apart, a 4-bit scale per 32 values under an f16 per
 * 256. ggml-quants.c {@code quantize_row_iq3_xxs_impl} (grid 256) and
 * {@code quantize_row_iq3_s_impl} (grid 512, block 32), which differ in more than the grid:
 *
 * <ul>
 * <li>IQ3_XXS stores 7 sign bits per 8 values, the eighth implied by even parity, so an odd
 *     count of negatives flips the least important value; IQ3_S stores all 8.</li>
 * <li>IQ3_XXS skips a 32-value block below 1e-8, IQ3_S only an all-zero one.</li>
 * <li>trial scales: 31 for IQ3_XXS (15 +- 3 in steps of 0.2), 19 for IQ3_S.</li>
 * <li>after the trials, IQ3_XXS re-fits only the groups whose trial fell off the grid and
 *     counts a block nobody improved as on the grid; IQ3_S counts it as off the grid and then
 *     re-fits every group.</li>
 * <li>the super-block scale is max/31 times 1.0125 (IQ3_XXS) or 1.033 (IQ3_S), ggml's fudge
 *     factors; block scale l codes d*(2l+1) both ways.</li>
 * </ul>
 */
final class Iq3Encoder implements RowEncoder {
    private static final int K_MAX_Q = 8;

    static final Iq3Encoder XXS = new Iq3Encoder(true);
    static final Iq3Encoder S = new Iq3Encoder(false);

    private final boolean xxs;
    private final int blockBytes;

    private Iq3Encoder(boolean xxs) {
        this.xxs = xxs;
        this.blockBytes = xxs ? 98 : 110;
    }

    @Override
    public void encode(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance) {
        IqGridSearch grid = xxs ? IqGridSearch.iq3xxs() : IqGridSearch.iq3s();
        Scratch s = new Scratch();
        int blocks = perRow / 256;
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < blocks; b++) {
                block(grid, src, srcOffset + r * perRow + b * 256, importance, b * 256,
                        dst, dstOffset + (r * blocks + b) * blockBytes, s);
            }
        }
    }

    private static final class Scratch {
        final float[] scales = new float[8];
        final float[] weight = new float[32];
        final float[] waux = new float[32];
        final float[] xval = new float[32];
        final byte[] levels = new byte[32];
        final byte[] trial = new byte[32];
        final boolean[] onGrid = new boolean[8];
        final boolean[] trialOnGrid = new boolean[8];
        final int[] signs = new int[4];
        final int[] gridIndex = new int[8];
    }

    private void block(IqGridSearch grid, float[] x, int xo, float[] importance, int col, byte[] y, int yo, Scratch s) {
        Arrays.fill(y, yo, yo + blockBytes, (byte) 0);
        float[] weight = s.weight;
        float[] waux = s.waux;
        float[] xval = s.xval;
        byte[] levels = s.levels;
        byte[] trial = s.trial;

        float sumx2 = 0;
        for (int i = 0; i < 256; i++) sumx2 += x[xo + i] * x[xo + i];
        float sigma2 = 2 * sumx2 / 256;

        float maxScale = 0;
        // IQ3_S writes grid bytes and signs through cursors that only move past a block it
        // codes, so a skipped (all-zero) block's slots go to the next coded block and the last
        // slots stay zero: ggml's layout, kept although it decodes the later blocks shifted.
        int coded = 0;
        for (int ib = 0; ib < 8; ib++) {
            int xb = xo + 32 * ib;
            if (importance != null) {
                for (int i = 0; i < 32; i++) {
                    weight[i] = importance[col + 32 * ib + i] * (float) Math.sqrt(sigma2 + x[xb + i] * x[xb + i]);
                }
            } else {
                for (int i = 0; i < 32; i++) weight[i] = x[xb + i] * x[xb + i];
            }
            for (int i = 0; i < 32; i++) waux[i] = (float) Math.sqrt(weight[i]);
            for (int k = 0; k < 4; k++) {
                int negatives = 0;
                int bits = 0;
                for (int i = 0; i < 8; i++) {
                    float v = x[xb + 8 * k + i];
                    if (v >= 0) {
                        xval[8 * k + i] = v;
                    } else {
                        xval[8 * k + i] = -v;
                        negatives++;
                        bits |= 1 << i;
                    }
                }
                if (xxs && negatives % 2 != 0) {
                    // Odd parity cannot be stored: flip the value that matters least.
                    int imin = 0;
                    float min = weight[8 * k] * x[xb + 8 * k] * x[xb + 8 * k];
                    for (int i = 1; i < 8; i++) {
                        float ax = weight[8 * k + i] * x[xb + 8 * k + i] * x[xb + 8 * k + i];
                        if (ax < min) {
                            min = ax;
                            imin = i;
                        }
                    }
                    xval[8 * k + imin] = -xval[8 * k + imin];
                    bits ^= 1 << imin;
                }
                s.signs[k] = xxs ? bits & 127 : bits;
            }
            float max = xval[0];
            for (int i = 1; i < 32; i++) max = max(max, xval[i]);
            Arrays.fill(levels, (byte) 0);
            if (xxs ? max < 1e-8f : max == 0) {
                s.scales[ib] = 0;
                continue;
            }
            float best = 0;
            float scale = max / (2 * K_MAX_Q - 1);
            Arrays.fill(s.onGrid, xxs);
            int steps = xxs ? 15 : 9;
            for (int is = -steps; is <= steps; is++) {
                float id = (2 * K_MAX_Q - 1 + is * 0.2f) / max;
                float thisScale = 1 / id;
                for (int k = 0; k < 8; k++) {
                    int key = roundToKey(grid, xval, 4 * k, id, trial);
                    s.trialOnGrid[k] = grid.map[key] >= 0;
                    if (!s.trialOnGrid[k] && grid.bestNeighbour(key, xval, 4 * k, waux, 4 * k, thisScale, trial, 4 * k) < 0) {
                        throw aborts(xxs ? "IQ3_XXS" : "IQ3_S", "no grid neighbour at a finite distance");
                    }
                }
                float sumqx = 0;
                float sumq2 = 0;
                for (int i = 0; i < 32; i++) {
                    float w = weight[i];
                    float q = 2 * trial[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    System.arraycopy(trial, 0, levels, 0, 32);
                    System.arraycopy(s.trialOnGrid, 0, s.onGrid, 0, 8);
                }
            }
            int offGrid = 0;
            for (int k = 0; k < 8; k++) if (!s.onGrid[k]) offGrid++;
            if (offGrid > 0 && scale > 0) {
                float id = 1 / scale;
                for (int k = 0; k < 8; k++) {
                    if (xxs && s.onGrid[k]) continue;
                    int key = roundToKey(grid, xval, 4 * k, id, levels);
                    int g = grid.map[key];
                    if (g < 0) {
                        g = grid.bestNeighbour(key, xval, 4 * k, waux, 4 * k, scale, levels, 4 * k);
                        if (g < 0) throw aborts(xxs ? "IQ3_XXS" : "IQ3_S", "no grid neighbour at a finite distance");
                    }
                    grid.levelsOf(g, levels, 4 * k);
                }
                float sumqx = 0;
                float sumq2 = 0;
                for (int i = 0; i < 32; i++) {
                    float w = weight[i];
                    float q = 2 * levels[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0) scale = sumqx / sumq2;
            }
            if (scale < 0) {
                // ggml: "should never happen"; a negative fit is stored as its mirror.
                scale = -scale;
                for (int k = 0; k < 4; k++) s.signs[k] = xxs ? ~s.signs[k] & 127 : ~s.signs[k] & 255;
            }
            for (int k = 0; k < 8; k++) {
                int g = grid.map[grid.key(levels, 4 * k)];
                if (g < 0) throw aborts(xxs ? "IQ3_XXS" : "IQ3_S", "a point off the grid");
                s.gridIndex[k] = g;
            }
            if (!(scale >= 0)) throw aborts(xxs ? "IQ3_XXS" : "IQ3_S", "a block scale that is not a number");
            if (xxs) {
                // {f16 d; u8 grid[64]; u32 scales_and_signs[8]}: 4 x 7 sign bits, scale in bits 28..31.
                for (int k = 0; k < 8; k++) y[yo + 2 + 8 * ib + k] = (byte) s.gridIndex[k];
                int signs = s.signs[0] | (s.signs[1] << 7) | (s.signs[2] << 14) | (s.signs[3] << 21);
                putInt(y, yo + 66 + 4 * ib, signs);
            } else {
                // {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]}: bit 8 of index 8ib+k in qh[ib] bit k.
                for (int k = 0; k < 8; k++) {
                    y[yo + 2 + 8 * coded + k] = (byte) s.gridIndex[k];
                    y[yo + 66 + ib] |= (byte) ((s.gridIndex[k] >> 8) << k);
                }
                for (int k = 0; k < 4; k++) y[yo + 74 + 4 * coded + k] = (byte) s.signs[k];
                coded++;
            }
            s.scales[ib] = scale;
            maxScale = max(maxScale, scale);
        }

        if (maxScale == 0) {
            // IQ3_XXS builds its bytes aside and keeps none of them; IQ3_S keeps what it wrote, under d = 0.
            if (xxs) Arrays.fill(y, yo, yo + blockBytes, (byte) 0);
            return;
        }
        float d = maxScale / 31;
        putShort(y, yo, fp16(d * (xxs ? 1.0125f : 1.033f)));
        float id = 1 / d;
        for (int ib = 0; ib < 8; ib++) {
            int l = nearestInt(0.5f * (id * s.scales[ib] - 1));
            l = Math.max(0, Math.min(15, l));
            if (xxs) y[yo + 66 + 4 * ib + 3] |= (byte) (l << 4);
            else if (ib % 2 == 0) y[yo + 106 + ib / 2] = (byte) l;
            else y[yo + 106 + ib / 2] |= (byte) (l << 4);
        }
    }

    /** The 4 levels nearest to {@code id * xval}: {@code (id x - 1) / 2} rounded, clamped to 0..7; returns their key. */
    private static int roundToKey(IqGridSearch grid, float[] xval, int at, float id, byte[] out) {
        for (int i = 0; i < 4; i++) {
            int l = nearestInt(0.5f * (id * xval[at + i] - 1));
            out[at + i] = (byte) Math.max(0, Math.min(K_MAX_Q - 1, l));
        }
        return grid.key(out, at);
    }
}
