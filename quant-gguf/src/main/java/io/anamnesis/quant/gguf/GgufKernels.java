package io.anamnesis.quant.gguf;

import static io.anamnesis.quant.gguf.GgmlMath.LONGS;
import static io.anamnesis.quant.gguf.GgufTables.IQ1S_GRID;
import static io.anamnesis.quant.gguf.GgufTables.IQ2S_GRID;
import static io.anamnesis.quant.gguf.GgufTables.IQ2XS_GRID;
import static io.anamnesis.quant.gguf.GgufTables.IQ2XXS_GRID;
import static io.anamnesis.quant.gguf.GgufTables.IQ3S_GRID;
import static io.anamnesis.quant.gguf.GgufTables.IQ3XXS_GRID;
import static io.anamnesis.quant.gguf.GgufTables.KSIGNS_IQ2XS;


/**
 * Scalar block decoders, one per ggml block type: {@code blocks} consecutive blocks of
 * {@code src} starting at byte {@code s} become F32 values in {@code y} from {@code o}.
 *
 * <p>Each follows the block layout of ggml-common.h and the order of floating-point
 * operations of ggml-quants.c {@code dequantize_row_*} (the scalar C reference, no fused
 * multiply-add), which gguf-py's {@code quants.dequantize} reproduces: a product written
 * {@code a * b * c} in the reference is {@code (a * b) * c} here, and Java never contracts
 * {@code a * b - c} into an FMA. Integer-to-float conversions are exact (|q| < 2^24).
 */
final class GgufKernels {
    private GgufKernels() {
    }

    /** IQ1_S/IQ1_M grid offset: ggml's IQ1S_DELTA = IQ1M_DELTA = 0.125f. */
    static final float IQ1_DELTA = 0.125f;

    /** e2m1 values doubled (ggml kvalues_mxfp4), paired with half-scales. */
    static final float[] FP4_DOUBLED = toFloats(GgufTables.KVALUES_FP4);
    /** ggml kvalues_iq4nl. */
    static final float[] IQ4NL = toFloats(GgufTables.KVALUES_IQ4NL);
    /** UE4M3 scale byte to ggml_ue4m3_to_fp32 (the value times 0.5), all 256 codes. */
    static final float[] UE4M3_HALF = ue4m3HalfTable();
    /** IQ grids unpacked to one byte per element, so element j of entry i is at 8i+j (4i+j). */
    static final byte[] IQ2XXS = unpack(IQ2XXS_GRID);
    static final byte[] IQ2XS = unpack(IQ2XS_GRID);
    static final byte[] IQ2S = unpack(IQ2S_GRID);
    static final byte[] IQ1S = unpack(IQ1S_GRID);
    static final byte[] IQ3XXS = unpack(IQ3XXS_GRID);
    static final byte[] IQ3S = unpack(IQ3S_GRID);
    /** The same grids as floats (exact), so the inner loops are plain float multiplies. */
    static final float[] IQ2XXS_F = toFloats(IQ2XXS);
    static final float[] IQ2XS_F = toFloats(IQ2XS);
    static final float[] IQ2S_F = toFloats(IQ2S);
    static final float[] IQ1S_F = toFloats(IQ1S);
    static final float[] IQ3XXS_F = toFloats(IQ3XXS);
    static final float[] IQ3S_F = toFloats(IQ3S);
    /**
     * SIGNS[8*b + j] = -1 when bit j of sign byte b is set, else +1: ggml multiplies by
     * {@code (signs & kmask_iq2xs[j] ? -1.f : 1.f)}; a table keeps the loops branch-free.
     */
    static final float[] SIGNS = signTable();

    private static float[] toFloats(byte[] values) {
        float[] f = new float[values.length];
        for (int i = 0; i < values.length; i++) f[i] = values[i];
        return f;
    }

    private static float[] signTable() {
        float[] t = new float[256 * 8];
        for (int b = 0; b < 256; b++) {
            for (int j = 0; j < 8; j++) t[8 * b + j] = ((b >> j) & 1) != 0 ? -1.0f : 1.0f;
        }
        return t;
    }

    private static float[] toFloats(int[] values) {
        float[] f = new float[values.length];
        for (int i = 0; i < values.length; i++) f[i] = values[i];
        return f;
    }

    private static byte[] unpack(long[] grid) {
        byte[] b = new byte[grid.length * 8];
        for (int i = 0; i < grid.length; i++) {
            for (int j = 0; j < 8; j++) b[8 * i + j] = (byte) (grid[i] >>> (8 * j));
        }
        return b;
    }

    private static byte[] unpack(int[] grid) {
        byte[] b = new byte[grid.length * 4];
        for (int i = 0; i < grid.length; i++) {
            for (int j = 0; j < 4; j++) b[4 * i + j] = (byte) (grid[i] >>> (8 * j));
        }
        return b;
    }

    /**
     * ggml_ue4m3_to_fp32: codes 0 and 0x7F give 0; exponent field (bits 3..6, bias 7) 0 is
     * subnormal man * 2^-9, otherwise (1 + man/8) * 2^(e-7); the result is halved. Bit 7 is
     * ignored, as in ggml. Every step is exact in float.
     */
    private static float[] ue4m3HalfTable() {
        float[] t = new float[256];
        for (int x = 0; x < 256; x++) {
            if (x == 0 || x == 0x7F) continue;
            int exp = (x >> 3) & 0xF;
            int man = x & 7;
            float raw = exp == 0 ? Math.scalb((float) man, -9) : Math.scalb(1.0f + man / 8.0f, exp - 7);
            t[x] = raw * 0.5f;
        }
        return t;
    }

    /** ggml_e8m0_to_fp32_half: 2^(e-128), with the subnormals 2^-128 and 2^-127 for e = 0, 1. */
    static float e8m0Half(int e) {
        int bits = e < 2 ? 0x0020_0000 << e : (e - 1) << 23;
        return Float.intBitsToFloat(bits);
    }

    static int u8(byte[] b, int i) {
        return b[i] & 0xFF;
    }

    static int u16(byte[] b, int i) {
        return (b[i] & 0xFF) | (b[i + 1] & 0xFF) << 8;
    }

    static int i32(byte[] b, int i) {
        return (b[i] & 0xFF) | (b[i + 1] & 0xFF) << 8 | (b[i + 2] & 0xFF) << 16 | (b[i + 3] & 0xFF) << 24;
    }

    static float f16(byte[] b, int i) {
        return Float.float16ToFloat((short) u16(b, i));
    }

    // ---------------------------------------------------------------- legacy 32-blocks

    /** Q4_0 {f16 d; u8 qs[16]}: low nibbles are elements 0..15, high 16..31; (q - 8) * d. */
    static void q4_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 18, o += 32) {
            float d = f16(src, s);
            for (int j = 0; j < 16; j++) {
                int q = src[s + 2 + j];
                y[o + j] = ((q & 0xF) - 8) * d;
                y[o + j + 16] = (((q >> 4) & 0xF) - 8) * d;
            }
        }
    }

    /** Q4_1 {f16 d; f16 m; u8 qs[16]}: q * d + m. */
    static void q4_1(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 20, o += 32) {
            float d = f16(src, s);
            float m = f16(src, s + 2);
            for (int j = 0; j < 16; j++) {
                int q = src[s + 4 + j];
                y[o + j] = (q & 0xF) * d + m;
                y[o + j + 16] = ((q >> 4) & 0xF) * d + m;
            }
        }
    }

    /** Q5_0 {f16 d; u32 qh; u8 qs[16]}: bit j of qh is bit 4 of element j; (q - 16) * d. */
    static void q5_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 22, o += 32) {
            float d = f16(src, s);
            int qh = i32(src, s + 2);
            for (int j = 0; j < 16; j++) {
                int q = src[s + 6 + j];
                int x0 = ((q & 0xF) | ((qh >>> j) << 4 & 0x10)) - 16;
                int x1 = (((q >> 4) & 0xF) | ((qh >>> (j + 12)) & 0x10)) - 16;
                y[o + j] = x0 * d;
                y[o + j + 16] = x1 * d;
            }
        }
    }

    /** Q5_1 {f16 d; f16 m; u32 qh; u8 qs[16]}: q * d + m. */
    static void q5_1(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 24, o += 32) {
            float d = f16(src, s);
            float m = f16(src, s + 2);
            int qh = i32(src, s + 4);
            for (int j = 0; j < 16; j++) {
                int q = src[s + 8 + j];
                int x0 = (q & 0xF) | ((qh >>> j) << 4 & 0x10);
                int x1 = ((q >> 4) & 0xF) | ((qh >>> (j + 12)) & 0x10);
                y[o + j] = x0 * d + m;
                y[o + j + 16] = x1 * d + m;
            }
        }
    }

    /** Q8_0 {f16 d; i8 qs[32]}: q * d. */
    static void q8_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 34, o += 32) {
            float d = f16(src, s);
            for (int j = 0; j < 32; j++) y[o + j] = src[s + 2 + j] * d;
        }
    }

    /** Q8_1 as ggml lays it out {f16 d; f16 s; i8 qs[32]} (36 bytes): q * d; s is a sum for dot products. */
    static void q8_1(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 36, o += 32) {
            float d = f16(src, s);
            for (int j = 0; j < 32; j++) y[o + j] = src[s + 4 + j] * d;
        }
    }

    /** Q1_0 {f16 d; u8 qs[16]}: bit j (LSB first) set gives d, clear gives -d. */
    static void q1_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 18, o += 128) {
            float d = f16(src, s);
            float[] pm = {-d, d};
            for (int k = 0; k < 16; k++) {
                int q = src[s + 2 + k];
                for (int j = 0; j < 8; j++) y[o + 8 * k + j] = pm[(q >> j) & 1];
            }
        }
    }

    /** Q2_0 {f16 d; u8 qs[16]}: 2-bit codes, element j at bits 2(j%4) of byte j/4; (q - 1) * d. */
    static void q2_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 18, o += 64) {
            float d = f16(src, s);
            for (int j = 0; j < 64; j++) {
                int q = (src[s + 2 + (j >> 2)] >> ((j & 3) * 2)) & 3;
                y[o + j] = (q - 1) * d;
            }
        }
    }

    /** MXFP4 {u8 e (E8M0); u8 qs[16]}: doubled e2m1 value times the half scale 2^(e-128). */
    static void mxfp4(byte[] src, int s, float[] y, int o, int blocks) {
        float[] kv = FP4_DOUBLED;
        for (int i = 0; i < blocks; i++, s += 17, o += 32) {
            float d = e8m0Half(u8(src, s));
            for (int j = 0; j < 16; j++) {
                int q = src[s + 1 + j];
                y[o + j] = kv[q & 0xF] * d;
                y[o + j + 16] = kv[(q >> 4) & 0xF] * d;
            }
        }
    }

    /** NVFP4 {u8 d[4] (UE4M3); u8 qs[32]}: four sub-blocks of 16, each like an MXFP4 half-block pair. */
    static void nvfp4(byte[] src, int s, float[] y, int o, int blocks) {
        float[] kv = FP4_DOUBLED;
        for (int i = 0; i < blocks; i++, s += 36, o += 64) {
            for (int sb = 0; sb < 4; sb++) {
                float d = UE4M3_HALF[u8(src, s + sb)];
                int qs = s + 4 + sb * 8;
                int yb = o + sb * 16;
                for (int j = 0; j < 8; j++) {
                    int q = src[qs + j];
                    y[yb + j] = kv[q & 0xF] * d;
                    y[yb + j + 8] = kv[(q >> 4) & 0xF] * d;
                }
            }
        }
    }

    /** IQ4_NL {f16 d; u8 qs[16]}: d * kvalues_iq4nl[nibble]. */
    static void iq4_nl(byte[] src, int s, float[] y, int o, int blocks) {
        float[] kv = IQ4NL;
        for (int i = 0; i < blocks; i++, s += 18, o += 32) {
            float d = f16(src, s);
            for (int j = 0; j < 16; j++) {
                int q = src[s + 2 + j];
                y[o + j] = d * kv[q & 0xF];
                y[o + j + 16] = d * kv[(q >> 4) & 0xF];
            }
        }
    }

    // ---------------------------------------------------------------- plain floats

    /** F32, little-endian. */
    static void f32(byte[] src, int s, float[] y, int o, int n) {
        for (int i = 0; i < n; i++, s += 4) y[o + i] = Float.intBitsToFloat(i32(src, s));
    }

    /** F16, exact (ggml_fp16_to_fp32_row). */
    static void f16(byte[] src, int s, float[] y, int o, int n) {
        for (int i = 0; i < n; i++, s += 2) y[o + i] = f16(src, s);
    }

    /** BF16: the upper half of an F32. */
    static void bf16(byte[] src, int s, float[] y, int o, int n) {
        for (int i = 0; i < n; i++, s += 2) y[o + i] = Float.intBitsToFloat(u16(src, s) << 16);
    }

    // ---------------------------------------------------------------- k-quants (256)

    /** Q2_K {u8 scales[16]; u8 qs[64]; f16 d; f16 dmin}: (d*sc) * q - (dmin*m). */
    static void q2_k(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 84) {
            float d = f16(src, s + 80);
            float min = f16(src, s + 82);
            int is = 0;
            for (int n = 0; n < 2; n++) {
                int q = s + 16 + 32 * n;
                for (int shift = 0; shift < 8; shift += 2) {
                    for (int half = 0; half < 2; half++) {
                        int sc = u8(src, s + is++);
                        float dl = d * (sc & 0xF);
                        float ml = min * (sc >> 4);
                        int qq = q + 16 * half;
                        for (int l = 0; l < 16; l++) y[o++] = dl * ((src[qq + l] >> shift) & 3) - ml;
                    }
                }
            }
        }
    }

    /** Q3_K {u8 hmask[32]; u8 qs[64]; u8 scales[12]; f16 d}: (d*(sc-32)) * (q - (h ? 0 : 4)). */
    static void q3_k(byte[] src, int s, float[] y, int o, int blocks) {
        int[] scales = new int[16];
        for (int i = 0; i < blocks; i++, s += 110) {
            float dAll = f16(src, s + 108);
            // 16 six-bit scales: low 4 bits from bytes 0..7 (nibbles), high 2 bits from bytes 8..11.
            for (int k = 0; k < 16; k++) {
                int low = (src[s + 96 + (k & 7)] >> (4 * (k >> 3))) & 0xF;
                int high = (src[s + 96 + 8 + (k & 3)] >> (2 * (k >> 2))) & 3;
                scales[k] = low | high << 4;
            }
            int is = 0;
            int m = 1;
            for (int n = 0; n < 2; n++) {
                int q = s + 32 + 32 * n;
                for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                    for (int half = 0; half < 2; half++) {
                        float dl = dAll * (scales[is++] - 32);
                        int qq = q + 16 * half;
                        int hm = s + 16 * half;
                        for (int l = 0; l < 16; l++) {
                            // minus 4 where the high bit is clear
                            int v = ((src[qq + l] >> shift) & 3) - ((((src[hm + l] & m) - 1) >>> 31) << 2);
                            y[o++] = dl * v;
                        }
                    }
                }
            }
        }
    }

    /** ggml get_scale_min_k4: scale (sm = 0) or min (sm = 1) j of the 12-byte K_SCALE packing. */
    static int scaleMinK4(byte[] src, int sc, int j, int sm) {
        if (j < 4) return src[sc + j + 4 * sm] & 63;
        int lowByte = u8(src, sc + j + 4);
        int low = sm == 0 ? lowByte & 0xF : lowByte >> 4;
        return low | ((u8(src, sc + j - 4 + 4 * sm) >> 6) << 4);
    }

    /** Q4_K {f16 d; f16 dmin; u8 scales[12]; u8 qs[128]}: (d*sc) * q - (dmin*m). */
    static void q4_k(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 144) {
            float d = f16(src, s);
            float min = f16(src, s + 2);
            for (int c = 0; c < 4; c++) {
                float d1 = d * scaleMinK4(src, s + 4, 2 * c, 0);
                float m1 = min * scaleMinK4(src, s + 4, 2 * c, 1);
                float d2 = d * scaleMinK4(src, s + 4, 2 * c + 1, 0);
                float m2 = min * scaleMinK4(src, s + 4, 2 * c + 1, 1);
                int q = s + 16 + 32 * c;
                for (int l = 0; l < 32; l++) y[o + l] = d1 * (src[q + l] & 0xF) - m1;
                for (int l = 0; l < 32; l++) y[o + 32 + l] = d2 * ((src[q + l] >> 4) & 0xF) - m2;
                o += 64;
            }
        }
    }

    /** Q5_K {f16 d; f16 dmin; u8 scales[12]; u8 qh[32]; u8 qs[128]}: (d*sc) * q - (dmin*m). */
    static void q5_k(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 176) {
            float d = f16(src, s);
            float min = f16(src, s + 2);
            int qh = s + 16;
            for (int c = 0; c < 4; c++) {
                float d1 = d * scaleMinK4(src, s + 4, 2 * c, 0);
                float m1 = min * scaleMinK4(src, s + 4, 2 * c, 1);
                float d2 = d * scaleMinK4(src, s + 4, 2 * c + 1, 0);
                float m2 = min * scaleMinK4(src, s + 4, 2 * c + 1, 1);
                int q = s + 48 + 32 * c;
                int b1 = 2 * c;
                int b2 = 2 * c + 1;
                for (int l = 0; l < 32; l++) {
                    y[o + l] = d1 * ((src[q + l] & 0xF) + (((src[qh + l] >> b1) & 1) << 4)) - m1;
                }
                for (int l = 0; l < 32; l++) {
                    y[o + 32 + l] = d2 * (((src[q + l] >> 4) & 0xF) + (((src[qh + l] >> b2) & 1) << 4)) - m2;
                }
                o += 64;
            }
        }
    }

    /**
     * Q6_K {u8 ql[128]; u8 qh[64]; i8 scales[16]; f16 d}: (d*sc) * (q - 32), scale j for
     * values 16j..16j+15. Three passes that keep C2's loops long: the codes, eight to a long,
     * as signed bytes q - 32; each value's scale d*sc into {@code y}; then one product per
     * value over all the blocks, which vectorizes (a byte array times a float array). The
     * same two float operations per value as the per-value loop, so the same bits; 1.1-1.2
     * against 1.9-2.2 ns a value with the BF16 narrowing (docs/benchmarks.md).
     */
    static void q6_k(byte[] src, int s, float[] y, int o, int blocks) {
        byte[] centred = CODES.get();
        if (centred.length < 256 * blocks) CODES.set(centred = new byte[256 * blocks]);
        for (int i = 0, b = s, c = 0; i < blocks; i++, b += 210) {
            for (int half = 0; half < 2; half++, c += 128) {
                int ql = b + 64 * half;
                int qh = b + 128 + 32 * half;
                for (int l = 0; l < 32; l += 8) {
                    long low = (long) LONGS.get(src, ql + l);
                    long next = (long) LONGS.get(src, ql + l + 32);
                    long high = (long) LONGS.get(src, qh + l);
                    LONGS.set(centred, c + l, centre((low & NIBBLES) | ((high & PAIRS) << 4)));
                    LONGS.set(centred, c + l + 32, centre((next & NIBBLES) | (((high >>> 2) & PAIRS) << 4)));
                    LONGS.set(centred, c + l + 64, centre(((low >>> 4) & NIBBLES) | (((high >>> 4) & PAIRS) << 4)));
                    LONGS.set(centred, c + l + 96, centre(((next >>> 4) & NIBBLES) | (((high >>> 6) & PAIRS) << 4)));
                }
            }
        }
        for (int i = 0, b = s, v = o; i < blocks; i++, b += 210) {
            float d = f16(src, b + 208);
            for (int j = 0; j < 16; j++, v += 16) {
                float ds = d * src[b + 192 + j];
                for (int l = 0; l < 16; l++) y[v + l] = ds;
            }
        }
        for (int i = 0; i < 256 * blocks; i++) y[o + i] = y[o + i] * centred[i];
    }

    /**
     * Each thread's byte codes of a batch: allocated per call they were 8 KB of garbage per 8 Ki
     * values, and a 1 GiB remember's young generation grew by 86 MiB of peak RSS.
     */
    private static final ThreadLocal<byte[]> CODES = ThreadLocal.withInitial(() -> new byte[256 * 32]);

    private static final long NIBBLES = 0x0F0F_0F0F_0F0F_0F0FL;
    private static final long PAIRS = 0x0303_0303_0303_0303L;
    private static final long BIT5 = 0x2020_2020_2020_2020L;

    /**
     * Eight 6-bit codes q (one a byte) to the signed bytes q - 32: flipping bit 5 subtracts 32
     * from q >= 32; q < 32 becomes 224 + q, which is bit 5 flipped on with bits 6 and 7 set.
     */
    static long centre(long codes) {
        long flipped = codes ^ BIT5;
        long below = flipped & BIT5;  // bit 5 set again: the code was below 32
        return flipped | (below << 1) | (below << 2);
    }

    /** Q8_K {f32 d; i8 qs[256]; i16 bsums[16]}: d * q; bsums serve dot products only. */
    static void q8_k(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 292, o += 256) {
            float d = Float.intBitsToFloat(i32(src, s));
            for (int j = 0; j < 256; j++) y[o + j] = d * src[s + 4 + j];
        }
    }

    // ---------------------------------------------------------------- ternary

    /**
     * TQ1_0 {u8 qs[48]; u8 qh[4]; f16 d}: base-3 digits packed five (qs) or four (qh) to a
     * byte as fixed-point fractions; digit n is ((u8)(q * 3^n) * 3) >> 8. Order: qs[0..32)
     * digit-major, qs[32..48) digit-major, then qh digit-major; (digit - 1) * d.
     */
    static void tq1_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 54) {
            float d = f16(src, s + 52);
            o = ternaryRun(src, s, 32, 5, d, y, o);
            o = ternaryRun(src, s + 32, 16, 5, d, y, o);
            o = ternaryRun(src, s + 48, 4, 4, d, y, o);
        }
    }

    private static int ternaryRun(byte[] src, int from, int width, int digits, float d, float[] y, int o) {
        int pow = 1;
        for (int n = 0; n < digits; n++, pow *= 3) {
            for (int m = 0; m < width; m++) {
                int q = (u8(src, from + m) * pow) & 0xFF;
                int xi = (q * 3) >> 8;
                y[o++] = (xi - 1) * d;
            }
        }
        return o;
    }

    /** TQ2_0 {u8 qs[64]; f16 d}: 2-bit codes, per 32 bytes the four bit pairs in turn; (q - 1) * d. */
    static void tq2_0(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 66) {
            float d = f16(src, s + 64);
            for (int j = 0; j < 64; j += 32) {
                for (int l = 0; l < 4; l++) {
                    for (int m = 0; m < 32; m++) {
                        int q = (src[s + j + m] >> (2 * l)) & 3;
                        y[o++] = (q - 1) * d;
                    }
                }
            }
        }
    }

    // ---------------------------------------------------------------- i-quants


    /**
     * IQ2_XXS {f16 d; u16 qs[32]}: per 32 elements two u32: four grid indices (bytes of the
     * first) and four 7-bit sign codes plus a 4-bit scale (second); db = d*(0.5+s)*0.25.
     */
    static void iq2_xxs(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 66) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int a = s + 2 + 8 * ib;
                int aux1 = i32(src, a + 4);
                float db = d * (0.5f + (aux1 >>> 28)) * 0.25f;
                for (int l = 0; l < 4; l++) {
                    int g = 8 * u8(src, a + l);
                    int signs = KSIGNS_IQ2XS[(aux1 >>> (7 * l)) & 127];
                    int sg = 8 * signs;
                    for (int j = 0; j < 8; j++) y[o + j] = db * IQ2XXS_F[g + j] * SIGNS[sg + j];
                    o += 8;
                }
            }
        }
    }

    /** IQ2_XS {f16 d; u16 qs[32]; u8 scales[8]}: 9-bit grid index + 7-bit sign code per u16. */
    static void iq2_xs(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 74) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int sc = u8(src, s + 66 + ib);
                float db0 = d * (0.5f + (sc & 0xF)) * 0.25f;
                float db1 = d * (0.5f + (sc >> 4)) * 0.25f;
                for (int l = 0; l < 4; l++) {
                    int q = u16(src, s + 2 + 2 * (4 * ib + l));
                    int g = 8 * (q & 511);
                    int signs = KSIGNS_IQ2XS[q >> 9];
                    float db = l < 2 ? db0 : db1;
                    int sg = 8 * signs;
                    for (int j = 0; j < 8; j++) y[o + j] = db * IQ2XS_F[g + j] * SIGNS[sg + j];
                    o += 8;
                }
            }
        }
    }

    /** IQ2_S {f16 d; u8 qs[32]; u8 signs[32]; u8 qh[8]; u8 scales[8]}: 10-bit grid index, explicit signs. */
    static void iq2_s(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 82) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int sc = u8(src, s + 74 + ib);
                float db0 = d * (0.5f + (sc & 0xF)) * 0.25f;
                float db1 = d * (0.5f + (sc >> 4)) * 0.25f;
                int qh = u8(src, s + 66 + ib);
                for (int l = 0; l < 4; l++) {
                    int g = 8 * (u8(src, s + 2 + 4 * ib + l) | ((qh << (8 - 2 * l)) & 0x300));
                    int signs = u8(src, s + 34 + 4 * ib + l);
                    float db = l < 2 ? db0 : db1;
                    int sg = 8 * signs;
                    for (int j = 0; j < 8; j++) y[o + j] = db * IQ2S_F[g + j] * SIGNS[sg + j];
                    o += 8;
                }
            }
        }
    }

    /** IQ3_XXS {f16 d; u8 qs[64]; u32 scales_and_signs[8]}: two 4-value grid entries per 8 elements. */
    static void iq3_xxs(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 98) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int aux = i32(src, s + 66 + 4 * ib);
                float db = d * (0.5f + (aux >>> 28)) * 0.5f;
                int qs = s + 2 + 8 * ib;
                for (int l = 0; l < 4; l++) {
                    int signs = KSIGNS_IQ2XS[(aux >>> (7 * l)) & 127];
                    int g1 = 4 * u8(src, qs + 2 * l);
                    int g2 = 4 * u8(src, qs + 2 * l + 1);
                    int sg = 8 * signs;
                    for (int j = 0; j < 4; j++) {
                        y[o + j] = db * IQ3XXS_F[g1 + j] * SIGNS[sg + j];
                        y[o + j + 4] = db * IQ3XXS_F[g2 + j] * SIGNS[sg + j + 4];
                    }
                    o += 8;
                }
            }
        }
    }

    /** IQ3_S {f16 d; u8 qs[64]; u8 qh[8]; u8 signs[32]; u8 scales[4]}: 9-bit grid index, d*(1+2s). */
    static void iq3_s(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 110) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int sc = u8(src, s + 106 + ib / 2);
                float db = d * (1 + 2 * ((ib & 1) == 0 ? sc & 0xF : sc >> 4));
                int qh = u8(src, s + 66 + ib);
                int qs = s + 2 + 8 * ib;
                for (int l = 0; l < 4; l++) {
                    int g1 = 4 * (u8(src, qs + 2 * l) | ((qh << (8 - 2 * l)) & 256));
                    int g2 = 4 * (u8(src, qs + 2 * l + 1) | ((qh << (7 - 2 * l)) & 256));
                    int signs = u8(src, s + 74 + 4 * ib + l);
                    int sg = 8 * signs;
                    for (int j = 0; j < 4; j++) {
                        y[o + j] = db * IQ3S_F[g1 + j] * SIGNS[sg + j];
                        y[o + j + 4] = db * IQ3S_F[g2 + j] * SIGNS[sg + j + 4];
                    }
                    o += 8;
                }
            }
        }
    }

    /** IQ1_S {f16 d; u8 qs[32]; u16 qh[8]}: dl * (grid + delta), dl = d*(2s+1), delta = +-1/8. */
    static void iq1_s(byte[] src, int s, float[] y, int o, int blocks) {
        for (int i = 0; i < blocks; i++, s += 50) {
            float d = f16(src, s);
            for (int ib = 0; ib < 8; ib++) {
                int qh = u16(src, s + 34 + 2 * ib);
                float dl = d * (2 * ((qh >> 12) & 7) + 1);
                float delta = (qh & 0x8000) != 0 ? -IQ1_DELTA : IQ1_DELTA;
                for (int l = 0; l < 4; l++) {
                    int g = 8 * (u8(src, s + 2 + 4 * ib + l) | (((qh >> (3 * l)) & 7) << 8));
                    for (int j = 0; j < 8; j++) y[o + j] = dl * (IQ1S_F[g + j] + delta);
                    o += 8;
                }
            }
        }
    }

    /**
     * IQ1_M {u8 qs[32]; u8 qh[16]; u8 scales[8]}: the f16 super-scale is the top nibbles of
     * the four u16 scale words; per 16 elements a 3-bit scale, per 8 a delta sign.
     */
    static void iq1_m(byte[] src, int s, float[] y, int o, int blocks) {
        int[] sc = new int[4];
        for (int i = 0; i < blocks; i++, s += 56) {
            for (int k = 0; k < 4; k++) sc[k] = u16(src, s + 48 + 2 * k);
            int scale = (sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) | ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000);
            float d = Float.float16ToFloat((short) scale);
            for (int ib = 0; ib < 8; ib++) {
                int w = sc[ib / 2];
                int shift = 6 * (ib % 2);
                float dl1 = d * (2 * ((w >> shift) & 7) + 1);
                float dl2 = d * (2 * ((w >> (shift + 3)) & 7) + 1);
                int qs = s + 4 * ib;
                int qh0 = u8(src, s + 32 + 2 * ib);
                int qh1 = u8(src, s + 32 + 2 * ib + 1);
                for (int l = 0; l < 4; l++) {
                    int qhl = l < 2 ? qh0 : qh1;
                    int idx = u8(src, qs + l) | ((l & 1) == 0 ? (qhl << 8) & 0x700 : (qhl << 4) & 0x700);
                    float delta = (qhl & ((l & 1) == 0 ? 0x08 : 0x80)) != 0 ? -IQ1_DELTA : IQ1_DELTA;
                    float dl = l < 2 ? dl1 : dl2;
                    int g = 8 * idx;
                    for (int j = 0; j < 8; j++) y[o + j] = dl * (IQ1S_F[g + j] + delta);
                    o += 8;
                }
            }
        }
    }

    /** IQ4_XS {f16 d; u16 scales_h; u8 scales_l[4]; u8 qs[128]}: 6-bit scales, (d*(ls-32)) * kvalues. */
    static void iq4_xs(byte[] src, int s, float[] y, int o, int blocks) {
        float[] kv = IQ4NL;
        for (int i = 0; i < blocks; i++, s += 136) {
            float d = f16(src, s);
            int scalesH = u16(src, s + 2);
            for (int ib = 0; ib < 8; ib++) {
                int ls = ((u8(src, s + 4 + ib / 2) >> (4 * (ib % 2))) & 0xF) | (((scalesH >> (2 * ib)) & 3) << 4);
                float dl = d * (ls - 32);
                int qs = s + 8 + 16 * ib;
                for (int j = 0; j < 16; j++) {
                    int q = src[qs + j];
                    y[o + j] = dl * kv[q & 0xF];
                    y[o + j + 16] = dl * kv[(q >> 4) & 0xF];
                }
                o += 32;
            }
        }
    }
}
