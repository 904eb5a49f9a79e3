package io.anamnesis.quant.gguf;

import static io.anamnesis.quant.gguf.IqArith.bestIndex;
import static io.anamnesis.quant.gguf.IqArith.fp16;
import static io.anamnesis.quant.gguf.IqArith.nearestInt;
import static io.anamnesis.quant.gguf.IqArith.putShort;

/**
 * IQ4_NL and IQ4_XS: 4-bit indices into the non-linear codebook {@code kvalues_iq4nl}, one
 * f16 scale per 32 values (IQ4_NL) or a 6-bit scale per 32 under an f16 per 256 (IQ4_XS).
 * ggml-quants.c {@code quantize_iq4_nl} / {@code quantize_iq4_xs}, both through
 * {@code quantize_row_iq4_nl_impl} with 7 trial scales either side (the chunk path; the
 * {@code _ref} IQ4_NL routine tries none and is not what {@code ggml_quantize_chunk} runs).
 */
final class Iq4Encoder implements RowEncoder {
    private static final float[] VALUES = new float[16];
    private static final int TRIES = 7;
    private static final float GROUP_MAX_EPS = 1e-15f;

    static {
        for (int i = 0; i < 16; i++) VALUES[i] = GgufTables.KVALUES_IQ4NL[i];
    }

    static final Iq4Encoder NL = new Iq4Encoder(32, 18);
    static final Iq4Encoder XS = new Iq4Encoder(256, 136);

    private final int superBlock;
    private final int blockBytes;

    private Iq4Encoder(int superBlock, int blockBytes) {
        this.superBlock = superBlock;
        this.blockBytes = blockBytes;
    }

    @Override
    public void encode(float[] src, int srcOffset, byte[] dst, int dstOffset, int rows, int perRow, float[] importance) {
        float[] scales = new float[superBlock / 32];
        float[] weight = new float[32];
        byte[] levels = new byte[superBlock];
        int blocks = perRow / superBlock;
        for (int r = 0; r < rows; r++) {
            for (int b = 0; b < blocks; b++) {
                block(src, srcOffset + r * perRow + b * superBlock, importance, b * superBlock,
                        dst, dstOffset + (r * blocks + b) * blockBytes, scales, weight, levels);
            }
        }
    }

    private void block(float[] x, int xo, float[] importance, int col, byte[] y, int yo,
                       float[] scales, float[] weight, byte[] levels) {
        float sigma2 = sigma2(x, xo, superBlock);

        for (int ib = 0; ib < superBlock / 32; ib++) {
            int xb = xo + 32 * ib;
            if (importance != null) {
                for (int j = 0; j < 32; j++) {
                    weight[j] = importance[col + 32 * ib + j] * (float) Math.sqrt(sigma2 + x[xb + j] * x[xb + j]);
                }
            } else {
                for (int j = 0; j < 32; j++) weight[j] = x[xb + j] * x[xb + j];
            }
            float amax = 0;
            float max = 0;
            for (int j = 0; j < 32; j++) {
                float ax = Math.abs(x[xb + j]);
                if (ax > amax) {
                    amax = ax;
                    max = x[xb + j];
                }
            }
            if (amax < GROUP_MAX_EPS) {
                scales[ib] = 0;
                continue;
            }
            // First guess: the extreme value on the codebook's extreme (-127), then least squares.
            float d = -max / VALUES[0];
            float id = 1 / d;
            float sumqx = 0;
            float sumq2 = 0;
            for (int j = 0; j < 32; j++) {
                float q = VALUES[bestIndex(VALUES, id * x[xb + j])];
                float w = weight[j];
                sumqx += w * q * x[xb + j];
                sumq2 += w * q * q;
            }
            d = sumq2 > 0 ? sumqx / sumq2 : 0f;
            float best = d * sumqx;
            for (int itry = -TRIES; itry <= TRIES; itry++) {
                id = (itry + GgufTables.KVALUES_IQ4NL[0]) / max;
                sumqx = 0;
                sumq2 = 0;
                for (int j = 0; j < 32; j++) {
                    float q = VALUES[bestIndex(VALUES, id * x[xb + j])];
                    float w = weight[j];
                    sumqx += w * q * x[xb + j];
                    sumq2 += w * q * q;
                }
                if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
                    d = sumqx / sumq2;
                    best = d * sumqx;
                }
            }
            scales[ib] = d;
        }

        float[] inverse = weight; // the weights are spent: each block's inverse scale goes here
        storeScales(superBlock, scales, 0, y, yo, inverse);
        for (int ib = 0; ib < superBlock / 32; ib++) {
            for (int j = 0; j < 32; j++) levels[32 * ib + j] = (byte) bestIndex(VALUES, inverse[ib] * x[xo + 32 * ib + j]);
        }
        pack(levels, y, yo + (superBlock == 32 ? 2 : 8));
    }

    /** ggml's sigma2 of a super-block for the importance weights: its sum of squares in order, times 2 / superBlock. */
    static float sigma2(float[] x, int xo, int superBlock) {
        float sum = 0;
        for (int j = 0; j < superBlock; j++) sum += x[xo + j] * x[xo + j];
        return sum * (2f / superBlock);
    }

    /**
     * The stored scales of one super-block whose blocks' fitted scales are
     * {@code scales[first..]}: IQ4_NL the block's f16 scale; IQ4_XS an f16 d of the signed
     * extreme of its eight block scales over -32, and each block's 6-bit l of it, stored
     * l + 32 (low nibbles in bytes 4..7, high bits in the short at 2). The inverse scale each
     * block's values are then looked up with goes to {@code inverse[first..]}.
     */
    static void storeScales(int superBlock, float[] scales, int first, byte[] y, int yo, float[] inverse) {
        if (superBlock == 32) {
            putShort(y, yo, fp16(scales[first]));
            inverse[first] = scales[first] != 0 ? 1 / scales[first] : 0;
            return;
        }
        float maxScale = 0;
        float amaxScale = 0;
        for (int ib = 0; ib < superBlock / 32; ib++) {
            float abs = Math.abs(scales[first + ib]);
            if (abs > amaxScale) {
                amaxScale = abs;
                maxScale = scales[first + ib];
            }
        }
        float d = -maxScale / 32;
        putShort(y, yo, fp16(d));
        float id = d != 0 ? 1 / d : 0f;
        int scalesH = 0;
        for (int ib = 0; ib < superBlock / 32; ib++) {
            int l = nearestInt(id * scales[first + ib]);
            l = Math.max(-32, Math.min(31, l));
            float dl = d * l;
            inverse[first + ib] = dl != 0 ? 1 / dl : 0f;
            l += 32;
            if (ib % 2 == 0) y[yo + 4 + ib / 2] = (byte) (l & 0xF);
            else y[yo + 4 + ib / 2] |= (byte) ((l & 0xF) << 4);
            scalesH |= (l >> 4) << (2 * ib);
        }
        putShort(y, yo + 2, scalesH);
    }

    /** Per 32 values, 16 bytes: element j in the low nibble of byte j, element j + 16 in its high nibble. */
    private void pack(byte[] levels, byte[] y, int at) {
        for (int i = 0; i < superBlock / 32; i++) {
            for (int j = 0; j < 16; j++) {
                y[at + 16 * i + j] = (byte) (levels[32 * i + j] | (levels[32 * i + 16 + j] << 4));
            }
        }
    }
}
