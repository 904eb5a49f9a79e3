package io.anamnesis.quant.gguf;

import static io.anamnesis.quant.gguf.GgmlMath.GROUP_MAX_EPS;
import static io.anamnesis.quant.gguf.GgmlMath.nearestInt;

/**
 * ggml's searches for the scale (and min) of one group of values, shared by the legacy
 * importance paths and the K-quants (ggml-quants.c {@code make_qx_quants},
 * {@code make_q3_quants}, {@code make_qkx2_quants}/{@code make_qkx3_quants},
 * {@code make_qp_quants}). The output is both the float they return and the integer levels
 * they leave in {@code L}; the bytes of the block depend on the last bit of each, so every
 * sum accumulates in ggml's order, in float, with products grouped left to right as C
 * groups {@code w*x*l}, and each int level is converted to float where C converts it.
 */
final class ScaleSearch {
    private ScaleSearch() {
    }

    /**
     * {@code make_qx_quants} with {@code rmse_type} 1: symmetric levels in
     * [0, 2 nmax) around nmax, scale from the weighted least squares fit, refined over the 18
     * trial scales -(nmax + 0.1 is)/max. Weights are {@code qw[qwo..]}, or x^2 when
     * {@code qw} is null. Levels go to {@code L[lo..lo+n)}, {@code tmp} holds n scratch levels.
     */
    static float symmetric(int n, int nmax, float[] x, int xo, int[] L, int lo, float[] qw, int qwo, int[] tmp) {
        float max = 0;
        float amax = 0;
        for (int i = 0; i < n; i++) {
            float ax = Math.abs(x[xo + i]);
            if (ax > amax) {
                amax = ax;
                max = x[xo + i];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            for (int i = 0; i < n; i++) L[lo + i] = 0;
            return 0f;
        }
        float iscale = -nmax / max;
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; i++) {
            float xi = x[xo + i];
            int l = Math.max(-nmax, Math.min(nmax - 1, nearestInt(iscale * xi)));
            L[lo + i] = l + nmax;
            float w = qw != null ? qw[qwo + i] : xi * xi;
            sumlx += w * xi * l;
            suml2 += w * l * l;
        }
        float scale = suml2 != 0 ? sumlx / suml2 : 0.0f;
        float best = scale * sumlx;
        for (int is = -9; is <= 9; is++) {
            if (is == 0) continue;
            iscale = -(nmax + 0.1f * is) / max;
            sumlx = 0;
            suml2 = 0;
            for (int i = 0; i < n; i++) {
                float xi = x[xo + i];
                int l = Math.max(-nmax, Math.min(nmax - 1, nearestInt(iscale * xi)));
                tmp[i] = l;
                float w = qw != null ? qw[qwo + i] : xi * xi;
                sumlx += w * xi * l;
                suml2 += w * l * l;
            }
            if (suml2 > 0 && sumlx * sumlx > best * suml2) {
                for (int i = 0; i < n; i++) L[lo + i] = nmax + tmp[i];
                scale = sumlx / suml2;
                best = scale * sumlx;
            }
        }
        return scale;
    }

    /**
     * {@code make_q3_quants} with {@code do_rmse}: levels in [-nmax, nmax) from -nmax/max,
     * then up to five passes moving single levels while the x^2-weighted fit improves;
     * {@code L} ends shifted by nmax. Returns the fitted scale.
     */
    static float symmetricRefined(int n, int nmax, float[] x, int xo, int[] L, int lo) {
        float max = 0;
        float amax = 0;
        for (int i = 0; i < n; i++) {
            float ax = Math.abs(x[xo + i]);
            if (ax > amax) {
                amax = ax;
                max = x[xo + i];
            }
        }
        if (amax < GROUP_MAX_EPS) {
            for (int i = 0; i < n; i++) L[lo + i] = 0;
            return 0f;
        }
        float iscale = -nmax / max;
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; i++) {
            float xi = x[xo + i];
            int l = Math.max(-nmax, Math.min(nmax - 1, nearestInt(iscale * xi)));
            L[lo + i] = l;
            float w = xi * xi;
            sumlx += w * xi * l;
            suml2 += w * l * l;
        }
        for (int itry = 0; itry < 5; itry++) {
            int changed = 0;
            for (int i = 0; i < n; i++) {
                float xi = x[xo + i];
                float w = xi * xi;
                int li = L[lo + i];
                float slx = sumlx - w * xi * li;
                if (slx > 0) {
                    float sl2 = suml2 - w * li * li;
                    int newL = Math.max(-nmax, Math.min(nmax - 1, nearestInt(xi * sl2 / slx)));
                    if (newL != li) {
                        slx += w * xi * newL;
                        sl2 += w * newL * newL;
                        if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[lo + i] = newL;
                            sumlx = slx;
                            suml2 = sl2;
                            changed++;
                        }
                    }
                }
            }
            if (changed == 0) break;
        }
        for (int i = 0; i < n; i++) L[lo + i] += nmax;
        return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
    }

    /**
     * {@code make_qkx2_quants} / {@code make_qkx3_quants} (the same search; they differ only
     * in a degenerate-range test that is equivalent for ordered floats): levels in [0, nmax]
     * over [min, max] with min clamped to at most 0, then nstep + 1 trial scales
     * (rmin + rdelta is + nmax)/(max - min), each refit by weighted least squares for scale
     * and min, kept when the weighted error (absolute when {@code useMad}, else squared)
     * drops. Weights are {@code weights[wo..]}. Returns the scale; {@code mins[mi]} receives
     * -min, as ggml's {@code the_min}.
     */
    static float affine(int n, int nmax, float[] x, int xo, float[] weights, int wo, int[] L, int lo, int[] aux,
                        float rmin, float rdelta, int nstep, boolean useMad, float[] mins, int mi) {
        float min = x[xo];
        float max = x[xo];
        float sumW = weights[wo];
        float sumX = sumW * x[xo];
        for (int i = 1; i < n; i++) {
            float xi = x[xo + i];
            if (xi < min) min = xi;
            if (xi > max) max = xi;
            float w = weights[wo + i];
            sumW += w;
            sumX += w * xi;
        }
        if (min > 0) min = 0;
        if (max == min) {
            for (int i = 0; i < n; i++) L[lo + i] = 0;
            mins[mi] = -min;
            return 0.f;
        }
        float iscale = nmax / (max - min);
        float scale = 1 / iscale;
        float bestError = 0;
        for (int i = 0; i < n; i++) {
            float xi = x[xo + i];
            int l = Math.max(0, Math.min(nmax, nearestInt(iscale * (xi - min))));
            L[lo + i] = l;
            float diff = scale * l + min - xi;
            diff = useMad ? Math.abs(diff) : diff * diff;
            bestError += weights[wo + i] * diff;
        }
        if (nstep < 1) {
            mins[mi] = -min;
            return scale;
        }
        for (int is = 0; is <= nstep; is++) {
            iscale = (rmin + rdelta * is + nmax) / (max - min);
            float sumL = 0;
            float sumL2 = 0;
            float sumXL = 0;
            for (int i = 0; i < n; i++) {
                float xi = x[xo + i];
                int l = Math.max(0, Math.min(nmax, nearestInt(iscale * (xi - min))));
                aux[i] = l;
                float w = weights[wo + i];
                sumL += w * l;
                sumL2 += w * l * l;
                sumXL += w * l * xi;
            }
            float det = sumW * sumL2 - sumL * sumL;
            if (det > 0) {
                float thisScale = (sumW * sumXL - sumX * sumL) / det;
                float thisMin = (sumL2 * sumX - sumL * sumXL) / det;
                if (thisMin > 0) {
                    thisMin = 0;
                    thisScale = sumXL / sumL2;
                }
                float error = 0;
                for (int i = 0; i < n; i++) {
                    float diff = thisScale * aux[i] + thisMin - x[xo + i];
                    diff = useMad ? Math.abs(diff) : diff * diff;
                    error += weights[wo + i] * diff;
                }
                if (error < bestError) {
                    System.arraycopy(aux, 0, L, lo, n);
                    bestError = error;
                    scale = thisScale;
                    min = thisMin;
                }
            }
        }
        mins[mi] = -min;
        return scale;
    }

    /**
     * {@code make_qp_quants}: levels in [0, nmax] for non-negative values (the sub-block
     * scales or mins of a K-quant super-block) weighted by {@code qw}: the best of nine
     * trial scales (nmax + 0.1 is)/max by weighted squared error, then up to five passes
     * moving single levels. Values and weights are {@code x[xo..]}, {@code qw[xo..]}; levels
     * go to {@code L[0..n)} as ggml's uint8, so a negative one wraps as it does there.
     */
    static float positive(int n, int nmax, float[] x, float[] qw, int xo, int[] L) {
        float max = 0;
        for (int i = 0; i < n; i++) max = max > x[xo + i] ? max : x[xo + i];
        if (max < GROUP_MAX_EPS) {
            for (int i = 0; i < n; i++) L[i] = 0;
            return 0.f;
        }
        float iscale = nmax / max;
        for (int i = 0; i < n; i++) L[i] = nearestInt(iscale * x[xo + i]) & 0xFF;
        float scale = 1 / iscale;
        float bestMse = 0;
        for (int i = 0; i < n; i++) {
            float diff = x[xo + i] - scale * L[i];
            bestMse += qw[xo + i] * diff * diff;
        }
        for (int is = -4; is <= 4; is++) {
            if (is == 0) continue;
            float iscaleIs = (0.1f * is + nmax) / max;
            float scaleIs = 1 / iscaleIs;
            float mse = 0;
            for (int i = 0; i < n; i++) {
                int l = Math.min(nmax, nearestInt(iscaleIs * x[xo + i]));
                float diff = x[xo + i] - scaleIs * l;
                mse += qw[xo + i] * diff * diff;
            }
            if (mse < bestMse) {
                bestMse = mse;
                iscale = iscaleIs;
            }
        }
        float sumlx = 0;
        float suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = Math.min(nmax, nearestInt(iscale * x[xo + i]));
            L[i] = l & 0xFF;
            float w = qw[xo + i];
            sumlx += w * x[xo + i] * l;
            suml2 += w * l * l;
        }
        for (int itry = 0; itry < 5; itry++) {
            int changed = 0;
            for (int i = 0; i < n; i++) {
                float w = qw[xo + i];
                int li = L[i];
                float slx = sumlx - w * x[xo + i] * li;
                float sl2 = suml2 - w * li * li;
                if (slx > 0 && sl2 > 0) {
                    int newL = Math.min(nmax, nearestInt(x[xo + i] * sl2 / slx));
                    if (newL != li) {
                        slx += w * x[xo + i] * newL;
                        sl2 += w * newL * newL;
                        if (slx * slx * suml2 > sumlx * sumlx * sl2) {
                            L[i] = newL & 0xFF;
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
