package io.anamnesis.quant.gguf;

import java.util.Arrays;

import static io.anamnesis.quant.gguf.IqArith.aborts;
import static io.anamnesis.quant.gguf.IqArith.fp16;
import static io.anamnesis.quant.gguf.IqArith.max;
import static io.anamnesis.quant.gguf.IqArith.nearestInt;
import static io.anamnesis.quant.gguf.IqArith.putInt;
import static io.anamnesis.quant.gguf.IqArith.putShort;

/**
 * IQ2_XXS, IQ2_XS and IQ2_S: magnitudes of 8 values at a time from a 256-, 512- or
 * 1024-point grid of levels (2l+1, l in 0..2), signs apart, a 4-bit scale per 32 (XXS) or 16
 * values under an f16 per 256. ggml-quants.c {@code quantize_row_iq2_xxs_impl},
 * {@code quantize_row_iq2_xs_impl}, {@code quantize_row_iq2_s_impl}. Where they differ:
 *
 * <ul>
 * <li>XXS and XS need an importance matrix (ggml asserts one) and take sigma2 as the mean
 *     square; S takes twice that and, without importance, weights {@code sigma2/4 + x^2}.</li>
 * <li>XXS and XS keep 7 sign bits per 8 (even parity, as IQ3_XXS); S stores all 8.</li>
 * <li>XXS blocks are 32 values: it seeds its scale with {@code make_qp_quants} and tries 13
 *     scales around {@code 5 / (3 scale)}, then re-fits every group; XS and S blocks are 16
 *     values: 19 scales around {@code 5 / max}, then re-fit the groups that fell off the grid.</li>
 * <li>block skip thresholds 1e-15 (XXS, XS) and 1e-8 (S); super-block scale max/31, times
 *     0.9875 for S.</li>
 * </ul>
 */
final class Iq2Encoder implements RowEncoder {
    private static final int K_MAX_Q = 3;

    enum Kind { XXS, XS, S }

    static final Iq2Encoder XXS = new Iq2Encoder(Kind.XXS, 66);
    static final Iq2Encoder XS = new Iq2Encoder(Kind.XS, 74);
    static final Iq2Encoder S = new Iq2Encoder(Kind.S, 82);

    private final Kind kind;
    private final int blockBytes;
    /** Values per block scale: 32 for XXS, 16 otherwise. */
    private final int bs;

    private Iq2Encoder(Kind kind, int blockBytes) {
        this.kind = kind;
        this.blockBytes = blockBytes;
        this.bs = kind == Kind.XXS ? 32 : 16;
    }

    private String type() {
        return "IQ2_" + kind;
    }

    @Override
    public void encode(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance) {
        if (importance == null && kind != Kind.S) {
            throw new IllegalArgumentException(type() + " needs an importance matrix (ggml_quantize_requires_imatrix)");
        }
        IqGridSearch grid = switch (kind) {
            case XXS -> IqGridSearch.iq2xxs();
            case XS -> IqGridSearch.iq2xs();
            case S -> IqGridSearch.iq2s();
        };
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
        final float[] scales = new float[16];
        final float[] weight = new float[32];
        final float[] waux = new float[32];
        final float[] xval = new float[32];
        final byte[] levels = new byte[32];
        final byte[] trial = new byte[32];
        final boolean[] onGrid = new boolean[4];
        final boolean[] trialOnGrid = new boolean[4];
        final int[] signs = new int[4];
        final int[] gridIndex = new int[4];
        final int[] qpLevels = new int[32];
        final int[] words = new int[16];
    }

    private void block(IqGridSearch grid, float[] x, int xo, float[] importance, int col, byte[] y, int yo, Scratch s) {
        Arrays.fill(y, yo, yo + blockBytes, (byte) 0);
        Arrays.fill(s.words, 0);
        float[] weight = s.weight;
        float[] waux = s.waux;
        float[] xval = s.xval;
        byte[] levels = s.levels;
        byte[] trial = s.trial;
        int groups = bs / 8;

        float sumx2 = 0;
        for (int i = 0; i < 256; i++) sumx2 += x[xo + i] * x[xo + i];
        float sigma2 = kind == Kind.S ? 2 * sumx2 / 256 : sumx2 / 256;

        float maxScale = 0;
        for (int ib = 0; ib < 256 / bs; ib++) {
            int xb = xo + bs * ib;
            if (importance != null) {
                for (int i = 0; i < bs; i++) {
                    weight[i] = importance[col + bs * ib + i] * (float) Math.sqrt(sigma2 + x[xb + i] * x[xb + i]);
                }
            } else {
                for (int i = 0; i < bs; i++) weight[i] = 0.25f * sigma2 + x[xb + i] * x[xb + i];
            }
            for (int i = 0; i < bs; i++) waux[i] = (float) Math.sqrt(weight[i]);
            for (int k = 0; k < groups; k++) {
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
                if (kind != Kind.S && negatives % 2 != 0) {
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
                s.signs[k] = kind == Kind.S ? bits : bits & 127;
            }
            float max = xval[0];
            for (int i = 1; i < bs; i++) max = max(max, xval[i]);
            Arrays.fill(levels, (byte) 0);
            if (max < (kind == Kind.S ? 1e-8f : 1e-15f)) {
                s.scales[ib] = 0;
                continue;
            }

            float scale;
            float searchMax;
            int steps;
            if (kind == Kind.XXS) {
                scale = makeQpQuants(bs, K_MAX_Q + 1, xval, s.qpLevels, weight);
                searchMax = scale * K_MAX_Q;
                if (searchMax <= 0) {
                    s.scales[ib] = 0;
                    continue;
                }
                steps = 6;
            } else {
                scale = max / (2 * K_MAX_Q - 1);
                searchMax = max;
                steps = 9;
            }
            float best = 0;
            Arrays.fill(s.onGrid, true);
            for (int is = -steps; is <= steps; is++) {
                float id = (2 * K_MAX_Q - 1 + is * 0.1f) / searchMax;
                float thisScale = 1 / id;
                for (int k = 0; k < groups; k++) {
                    int key = roundToKey(grid, xval, 8 * k, id, trial);
                    s.trialOnGrid[k] = grid.map[key] >= 0;
                    if (!s.trialOnGrid[k] && grid.bestNeighbour(key, xval, 8 * k, waux, 8 * k, thisScale, trial, 8 * k) < 0) {
                        throw aborts(type(), "no grid neighbour at a finite distance");
                    }
                }
                float sumqx = 0;
                float sumq2 = 0;
                for (int i = 0; i < bs; i++) {
                    float w = weight[i];
                    float q = 2 * trial[i] + 1;
                    sumqx += w * xval[i] * q;
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    scale = sumqx / sumq2;
                    best = scale * sumqx;
                    System.arraycopy(trial, 0, levels, 0, bs);
                    System.arraycopy(s.trialOnGrid, 0, s.onGrid, 0, groups);
                }
            }
            // XXS re-fits every group at the chosen scale; XS and S only those off the grid.
            boolean refit = kind == Kind.XXS;
            for (int k = 0; k < groups && !refit; k++) refit = !s.onGrid[k];
            if (refit && scale > 0) {
                float id = 1 / scale;
                for (int k = 0; k < groups; k++) {
                    if (kind != Kind.XXS && s.onGrid[k]) continue;
                    int key = roundToKey(grid, xval, 8 * k, id, levels);
                    int g = grid.map[key];
                    if (g < 0) {
                        g = grid.bestNeighbour(key, xval, 8 * k, waux, 8 * k, scale, levels, 8 * k);
                        if (g < 0) throw aborts(type(), "no grid neighbour at a finite distance");
                    }
                }
                float sumqx = 0;
                float sumq2 = 0;
                for (int i = 0; i < bs; i++) {
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
                for (int k = 0; k < groups; k++) s.signs[k] = kind == Kind.S ? ~s.signs[k] & 255 : ~s.signs[k] & 127;
            }
            for (int k = 0; k < groups; k++) {
                int g = grid.map[grid.key(levels, 8 * k)];
                if (g < 0) throw aborts(type(), "a point off the grid");
                s.gridIndex[k] = g;
            }
            if (!(scale >= 0)) throw aborts(type(), "a block scale that is not a number");
            switch (kind) {
                case XXS -> {
                    // Per 32 values two u32: four grid indices; four 7-bit sign codes (scale added below).
                    for (int k = 0; k < 4; k++) {
                        s.words[2 * ib] |= s.gridIndex[k] << (8 * k);
                        s.words[2 * ib + 1] |= s.signs[k] << (7 * k);
                    }
                }
                case XS -> {
                    // Per 8 values a u16: 9-bit grid index, 7-bit sign code.
                    for (int k = 0; k < 2; k++) putShort(y, yo + 2 + 2 * (2 * ib + k), s.gridIndex[k] | (s.signs[k] << 9));
                }
                case S -> {
                    // qs[32] low index bytes, signs[32], qh[8] with bits 8..9 of index i8 at 2*(i8%4).
                    for (int k = 0; k < 2; k++) {
                        int i8 = 2 * ib + k;
                        y[yo + 2 + i8] = (byte) s.gridIndex[k];
                        y[yo + 66 + i8 / 4] |= (byte) ((s.gridIndex[k] >> 8) << (2 * (i8 % 4)));
                        y[yo + 34 + i8] = (byte) s.signs[k];
                    }
                }
            }
            s.scales[ib] = scale;
            maxScale = max(maxScale, scale);
        }

        if (maxScale == 0) {
            // XXS and XS clear their indices; S keeps what it wrote. All leave d = 0.
            if (kind != Kind.S) Arrays.fill(y, yo, yo + blockBytes, (byte) 0);
            return;
        }
        float d = maxScale / 31;
        putShort(y, yo, fp16(kind == Kind.S ? d * 0.9875f : d));
        float id = 1 / d;
        int scalesAt = kind == Kind.XS ? 66 : 74;
        for (int ib = 0; ib < 256 / bs; ib++) {
            int l = nearestInt(0.5f * (id * s.scales[ib] - 1));
            l = Math.max(0, Math.min(15, l));
            if (kind == Kind.XXS) s.words[2 * ib + 1] |= l << 28;
            else if (ib % 2 == 0) y[yo + scalesAt + ib / 2] = (byte) l;
            else y[yo + scalesAt + ib / 2] |= (byte) (l << 4);
        }
        if (kind == Kind.XXS) {
            for (int i = 0; i < 16; i++) putInt(y, yo + 2 + 4 * i, s.words[i]);
        }
    }

    /** The 8 levels nearest to {@code id * xval}: {@code (id x - 1) / 2} rounded, clamped to 0..2; returns their key. */
    private static int roundToKey(IqGridSearch grid, float[] xval, int at, float id, byte[] out) {
        for (int i = 0; i < 8; i++) {
            int l = nearestInt(0.5f * (id * xval[at + i] - 1));
            out[at + i] = (byte) Math.max(0, Math.min(K_MAX_Q - 1, l));
        }
        return grid.key(out, at);
    }

    /**
     * ggml's {@code make_qp_quants}: a weighted least-squares scale for non-negative levels
     * 0..nmax, from 9 trial scales around {@code nmax / max} and up to 5 passes of single-level
     * moves. ggml writes the levels through a {@code uint8_t} view, so a negative level (the
     * parity-flipped value) is read back as 256 + l where it is read back: kept here.
     */
    static float makeQpQuants(int n, int nmax, float[] x, int[] levels, float[] weights) {
        float max = 0;
        for (int i = 0; i < n; i++) max = max(max, x[i]);
        if (max < 1e-15f) {
            Arrays.fill(levels, 0, n, 0);
            return 0f;
        }
        float iscale = nmax / max;
        for (int i = 0; i < n; i++) levels[i] = nearestInt(iscale * x[i]) & 0xFF;
        float scale = 1 / iscale;
        float bestMse = 0;
        for (int i = 0; i < n; i++) {
            float diff = x[i] - scale * levels[i];
            float w = weights[i];
            bestMse += w * diff * diff;
        }
        for (int is = -4; is <= 4; is++) {
            if (is == 0) continue;
            float iscaleIs = (0.1f * is + nmax) / max;
            float scaleIs = 1 / iscaleIs;
            float mse = 0;
            for (int i = 0; i < n; i++) {
                int l = Math.min(nmax, nearestInt(iscaleIs * x[i]));
                float diff = x[i] - scaleIs * l;
                float w = weights[i];
                mse += w * diff * diff;
            }
            if (mse < bestMse) {
                bestMse = mse;
                iscale = iscaleIs;
            }
        }
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = Math.min(nmax, nearestInt(iscale * x[i]));
            levels[i] = l & 0xFF;
            float w = weights[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        for (int pass = 0; pass < 5; pass++) {
            int changed = 0;
            for (int i = 0; i < n; i++) {
                float w = weights[i];
                float slx = sumlx - w * x[i] * levels[i];
                float sl2 = suml2 - w * levels[i] * levels[i];
                if (slx > 0 && sl2 > 0) {
                    int newL = Math.min(nmax, nearestInt(x[i] * sl2 / slx));
                    if (newL != levels[i]) {
                        slx += w * x[i] * newL;
                        sl2 += w * newL * newL;
                        if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                            levels[i] = newL & 0xFF;
                            sumlx = slx;
                            suml2 = sl2;
                            changed++;
                        }
                    }
                }
            }
            if (changed == 0) break;
        }
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }
}
