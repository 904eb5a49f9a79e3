package io.anamnesis.quant.gguf;

import static io.anamnesis.quant.gguf.GgmlMath.floorLog2;
import static io.anamnesis.quant.gguf.GgmlMath.truncate;

/**
 * Encoders of the FP4 (E2M1) types MXFP4 and NVFP4, as ggml's chunk path runs them
 * ({@code quantize_row_mxfp4_ref} / {@code quantize_row_nvfp4_ref}, no importance): each
 * value becomes the E2M1 code whose value times the block scale is nearest (the first code
 * on a tie, in ggml's table order 0, 1, 2, 3, 4, 6, 8, 12, -0, -1, ... -12).
 */
final class Fp4Encoders {
    private Fp4Encoders() {
    }

    /** ggml kvalues_mxfp4 (doubled E2M1 values) as floats, in code order. */
    private static final float[] KV = GgufKernels.FP4_DOUBLED;

    /**
     * MXFP4 {u8 e (E8M0); u8 qs[16]}: e = floor(log2(amax)) - 2 + 127 (so the largest
     * value lands in the top binade of E2M1), stored as C's (uint8_t) of that float; the
     * doubled codes are paired with the half scale 2^(e - 128).
     */
    static void mxfp4(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / 32);
        for (int b = 0; b < blocks; b++, s += 32, o += 17) {
            float amax = 0.0f;
            for (int j = 0; j < 32; j++) {
                float a = Math.abs(src[s + j]);
                if (amax < a) amax = a;
            }
            int e = mxfp4Exponent(amax);
            float d = GgufKernels.e8m0Half(e);
            dst[o] = (byte) e;
            for (int j = 0; j < 16; j++) {
                dst[o + 1 + j] = (byte) (nearestCode(src[s + j], d) | nearestCode(src[s + 16 + j], d) << 4);
            }
        }
    }

    /** The E8M0 byte of a block whose largest magnitude is {@code amax} (never NaN: ggml's scan skips NaN). */
    static int mxfp4Exponent(float amax) {
        if (!(amax > 0.0f)) return 0;
        if (amax == Float.POSITIVE_INFINITY) return truncate(amax) & 0xFF; // floorf(log2f(inf)) = inf
        return (floorLog2(amax) - 2 + 127) & 0xFF;
    }

    /**
     * NVFP4 {u8 d[4] (UE4M3); u8 qs[32]}: per 16 values the scale amax/6 as UE4M3
     * ({@code ggml_fp32_to_ue4m3}), and codes against the value that byte decodes to.
     */
    static void nvfp4(float[] src, int s, byte[] dst, int o, int rows, int perRow, float[] importance) {
        int blocks = rows * (perRow / 64);
        for (int b = 0; b < blocks; b++, o += 36) {
            for (int sub = 0; sub < 4; sub++, s += 16) nvfp4Sub(src, s, dst, o, sub);
        }
    }

    /** One 16-value sub-block of an NVFP4 block at {@code dst[o]}: its scale byte and 8 code bytes. */
    static void nvfp4Sub(float[] src, int s, byte[] dst, int o, int sub) {
        float amax = 0.0f;
        for (int j = 0; j < 16; j++) {
            float a = Math.abs(src[s + j]);
            if (amax < a) amax = a;
        }
        int ue = ue4m3(amax / 6.0f);
        dst[o + sub] = (byte) ue;
        float d = GgufKernels.UE4M3_HALF[ue];
        int qs = o + 4 + 8 * sub;
        for (int j = 0; j < 8; j++) {
            dst[qs + j] = (byte) (nearestCode(src[s + j], d) | nearestCode(src[s + 8 + j], d) << 4);
        }
    }

    /** ggml best_index_mxfp4: the first code minimising |kv * d - x| (a NaN x gives code 0). */
    static int nearestCode(float x, float d) {
        int best = 0;
        float bestErr = Math.abs(KV[0] * d - x);
        for (int i = 1; i < 16; i++) {
            float err = Math.abs(KV[i] * d - x);
            if (err < bestErr) {
                best = i;
                bestErr = err;
            }
        }
        return best;
    }

    /**
     * ggml_fp32_to_ue4m3: non-positive (and NaN) to 0; clamped to 448; below the normal
     * range the subnormal code (int)(x * 512 + 0.5) in 1..7 (0 below); otherwise the F32
     * mantissa's top 3 bits rounded by the next bit (ties up), with exponent bias 7 and
     * 0x7E for anything that reaches exponent 15.
     */
    static int ue4m3(float x) {
        if (!(x > 0.0f)) return 0;
        if (x > 448.0f) x = 448.0f;
        int bits = Float.floatToRawIntBits(x);
        int exp = ((bits >>> 23) & 0xFF) - 127 + 7;
        if (exp <= 0) {
            int man = truncate(x * 512.0f + 0.5f);
            if (man > 7) man = 7;
            return man < 1 ? 0 : man;
        }
        if (exp >= 15) return 0x7E;
        int man = ((bits >>> 20) & 7) + ((bits >>> 19) & 1);
        if (man > 7) {
            man = 0;
            exp++;
            if (exp >= 15) return 0x7E;
        }
        return exp << 3 | man;
    }
}
