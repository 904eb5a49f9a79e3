package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * One hand-built block per type. Every expected value is worked out by hand from the
 * block layout of ggml-common.h and the formula of ggml-quants.c (comments show the
 * arithmetic); none comes from the decoder under test.
 */
class GgufKernelsTest {

    static void put16(byte[] b, int at, int v) {
        b[at] = (byte) v;
        b[at + 1] = (byte) (v >>> 8);
    }

    static void put32(byte[] b, int at, int v) {
        put16(b, at, v);
        put16(b, at + 2, v >>> 16);
    }

    static float[] decode(GgufBlockType type, byte[] block) {
        assertThat(block).hasSize(type.blockBytes());
        float[] y = new float[type.blockElements()];
        type.decode(block, 0, y, 0, 1);
        return y;
    }

    /** Compares bit patterns, so -0.0 and 0.0 differ. */
    static void assertBits(float actual, float expected) {
        assertThat(Float.floatToRawIntBits(actual)).as("%s vs expected %s", actual, expected)
                .isEqualTo(Float.floatToRawIntBits(expected));
    }

    @Test
    void q8_0MultipliesSignedBytesByTheHalfScale() {
        byte[] b = new byte[34];
        put16(b, 0, 0x3800); // d = 0.5
        b[2] = -3;
        b[3] = 1;
        b[33] = 127;
        float[] y = decode(GgufBlockType.Q8_0, b);
        assertBits(y[0], -1.5f);
        assertBits(y[1], 0.5f);
        assertBits(y[2], 0.0f);
        assertBits(y[31], 63.5f);
    }

    @Test
    void q8_1IgnoresTheSumAndReadsQuantsAfterFourBytes() {
        byte[] b = new byte[36];
        put16(b, 0, 0x3800); // d = 0.5
        put16(b, 2, 0x7BFF); // s = 65504, must not matter
        b[4] = -3;
        b[35] = -128;
        float[] y = decode(GgufBlockType.Q8_1, b);
        assertBits(y[0], -1.5f);
        assertBits(y[1], 0.0f);
        assertBits(y[31], -64.0f);
    }

    @Test
    void q4_0PutsLowNibblesFirstAndCentresOnEight() {
        byte[] b = new byte[18];
        put16(b, 0, 0x4000); // d = 2
        b[2] = 0x1F;         // low 15 -> (15-8)*2 = 14, high 1 -> (1-8)*2 = -14
        b[17] = (byte) 0x80; // low 0 -> -16 at 15, high 8 -> 0 at 31
        float[] y = decode(GgufBlockType.Q4_0, b);
        assertBits(y[0], 14f);
        assertBits(y[16], -14f);
        assertBits(y[15], -16f);
        assertBits(y[31], 0f);
    }

    @Test
    void q4_1AddsTheMinAfterScaling() {
        byte[] b = new byte[20];
        put16(b, 0, 0x3C00); // d = 1
        put16(b, 2, 0xBC00); // m = -1
        b[4] = 0x2F;         // 15*1 - 1 = 14; 2*1 - 1 = 1
        float[] y = decode(GgufBlockType.Q4_1, b);
        assertBits(y[0], 14f);
        assertBits(y[16], 1f);
        assertBits(y[1], -1f);
    }

    @Test
    void q5_0TakesTheFifthBitFromQh() {
        byte[] b = new byte[22];
        put16(b, 0, 0x3C00);            // d = 1
        put32(b, 2, 0x0001_0005);       // bits 0, 2 (elements 0, 2) and 16 (element 16)
        b[6 + 2] = (byte) 0xF3;         // element 2: 3|16 - 16 = 3; element 18: 15 - 16 = -1
        float[] y = decode(GgufBlockType.Q5_0, b);
        assertBits(y[0], 0f);           // 0|16 - 16
        assertBits(y[16], 0f);
        assertBits(y[1], -16f);
        assertBits(y[17], -16f);
        assertBits(y[2], 3f);
        assertBits(y[18], -1f);
    }

    @Test
    void q5_1ScalesThenAddsTheMin() {
        byte[] b = new byte[24];
        put16(b, 0, 0x3800);            // d = 0.5
        put16(b, 2, 0x4000);            // m = 2
        put32(b, 4, 0x8000_0000);       // bit 31: element 31
        b[8 + 15] = (byte) 0xF0;        // element 31: (15|16)*0.5 + 2 = 17.5; element 15: 0*0.5 + 2
        float[] y = decode(GgufBlockType.Q5_1, b);
        assertBits(y[31], 17.5f);
        assertBits(y[15], 2f);
    }

    @Test
    void q1_0MapsSetBitsToDAndClearBitsToMinusD() {
        byte[] b = new byte[18];
        put16(b, 0, 0x3800);
        b[2] = 0x01;
        b[17] = (byte) 0x80;
        float[] y = decode(GgufBlockType.Q1_0, b);
        assertBits(y[0], 0.5f);
        assertBits(y[1], -0.5f);
        assertBits(y[126], -0.5f);
        assertBits(y[127], 0.5f);
    }

    @Test
    void q2_0DecodesTwoBitCodesLowBitsFirst() {
        byte[] b = new byte[18];
        put16(b, 0, 0x4000);     // d = 2
        b[2] = (byte) 0xE4;      // codes 0, 1, 2, 3 -> -1, 0, 1, 2 times 2
        float[] y = decode(GgufBlockType.Q2_0, b);
        assertBits(y[0], -2f);
        assertBits(y[1], 0f);
        assertBits(y[2], 2f);
        assertBits(y[3], 4f);
        assertBits(y[4], -2f);
    }

    @Test
    void q2_kUsesNibbleScalesAndMins() {
        byte[] b = new byte[84];
        put16(b, 80, 0x3C00);   // d = 1
        put16(b, 82, 0x3800);   // dmin = 0.5
        b[0] = 0x21;            // elements 0..15: sc 1, m 2
        b[1] = 0x03;            // elements 16..31: sc 3, m 0
        b[2] = 0x11;            // elements 32..47 (shift 2): sc 1, m 1
        b[16] = 0b0111;         // element 0: code 3; element 32: code 1
        b[16 + 16] = 0b10;      // element 16: code 2
        float[] y = decode(GgufBlockType.Q2_K, b);
        assertBits(y[0], 2f);    // 1*3 - 0.5*2
        assertBits(y[1], -1f);   // 1*0 - 1
        assertBits(y[16], 6f);   // 3*2 - 0
        assertBits(y[32], 0.5f); // 1*1 - 0.5
    }

    @Test
    void q3_kSubtractsFourWhereTheHighBitIsClear() {
        byte[] b = new byte[110];
        put16(b, 108, 0x3C00);  // d = 1
        b[96] = 0x01;           // scale 0 low nibble 1
        b[104] = 0x02;          // scale 0 high bits 2 -> 33 -> 33 - 32 = 1
        b[100] = 0x50;          // scale 12 low nibble 5 (high nibble of byte 4) -> 5 - 32 = -27
        b[0] = 0x41;            // hmask[0]: bit 0 (element 0), bit 6 (element 192)
        b[32] = 2;              // element 0 code 2
        b[33] = 2;              // element 1 code 2, high bit clear
        b[64] = 0x30;           // element 192: second half, shift 4 -> code 3
        float[] y = decode(GgufBlockType.Q3_K, b);
        assertBits(y[0], 2f);      // 1 * 2
        assertBits(y[1], -2f);     // 1 * (2 - 4)
        assertBits(y[16], 128f);   // scale 1 = 0 -> -32 * (0 - 4)
        assertBits(y[192], -81f);  // -27 * 3
    }

    @Test
    void q4_kComputesScaleTimesQuantMinusMin() {
        byte[] b = new byte[144];
        put16(b, 0, 0x3C00);    // d = 1
        put16(b, 2, 0x3800);    // dmin = 0.5
        b[4] = (byte) 0xC3;     // sc0 = 3, top bits 3 -> sc4 high part
        b[5] = 0x42;            // sc1 = 2, top bits 1 -> sc5 high part
        b[8] = 0x02;            // m0 = 2
        b[12] = 0x31;           // sc4 = 1 | 3<<4 = 49, m4 = 3
        b[16] = 0x25;           // element 0: 5, element 32: 2
        b[80] = 0x27;           // element 128: 7, element 160: 2
        float[] y = decode(GgufBlockType.Q4_K, b);
        assertBits(y[0], 14f);      // 3*5 - 0.5*2
        assertBits(y[32], 4f);      // 2*2 - 0
        assertBits(y[128], 341.5f); // 49*7 - 0.5*3
        assertBits(y[160], 32f);    // sc5 = 0 | 1<<4 = 16; 16*2 - 0
    }

    @Test
    void q5_kAddsSixteenFromTheHighBitPlane() {
        byte[] b = new byte[176];
        put16(b, 0, 0x3C00);    // d = 1
        put16(b, 2, 0x3C00);    // dmin = 1
        b[4] = 1;               // sc0
        b[5] = 2;               // sc1
        b[6] = 1;               // sc2
        b[8] = 1;               // m0
        b[16] = 0x07;           // qh[0]: bit 0 (element 0), bit 1 (element 32), bit 2 (element 64)
        b[48] = 0x03;           // element 0 low nibble 3, element 32 high nibble 0
        b[48 + 32] = 0x0A;      // element 64 low nibble 10
        float[] y = decode(GgufBlockType.Q5_K, b);
        assertBits(y[0], 18f);   // 1*(3+16) - 1*1
        assertBits(y[1], -1f);   // 1*0 - 1
        assertBits(y[32], 32f);  // 2*(0+16) - 0
        assertBits(y[64], 26f);  // 1*(10+16) - 0
    }

    @Test
    void q6_kCombinesLowNibblesAndHighPairs() {
        byte[] b = new byte[210];
        put16(b, 208, 0x3800);  // d = 0.5
        b[192] = 2;
        b[194] = -1;
        b[196] = 3;
        b[198] = 1;
        b[0] = 0x21;            // ql[0]: element 0 low 1, element 64 low 2
        b[32] = 0x43;           // ql[32]: element 32 low 3, element 96 low 4
        b[128] = (byte) 0xE4;   // qh[0]: pairs 0, 1, 2, 3
        float[] y = decode(GgufBlockType.Q6_K, b);
        assertBits(y[0], -31f);  // (0.5*2) * (1 - 32)
        assertBits(y[32], 6.5f); // (0.5*-1) * (19 - 32)
        assertBits(y[64], 3f);   // (0.5*3) * (34 - 32)
        assertBits(y[96], 10f);  // (0.5*1) * (52 - 32)
    }

    /**
     * Every 5-bit code at many positions of two blocks, read at offsets: element e is in
     * chunk c = e / 64 (qs[32c + l], l = e % 32), the low nibble for sub-block 2c (e % 64 < 32)
     * and the high one for 2c + 1, its fifth bit bit (e / 32) of qh[l]; the scales and mins of
     * sub-blocks 0-3 are 6-bit fields of bytes 0-7, those of 4-7 split between bytes 8-11
     * (low four bits) and the top two bits of bytes 0-7. Expected (d*sc) * q - (dmin*m).
     */
    @Test
    void q5_kDecodesEveryCodeAtEveryPositionOfTwoBlocks() {
        float[] d = {0.5f, 0.0625f};
        float[] dmin = {0.25f, -3.0f};
        byte[] src = new byte[7 + 2 * 176];
        int[][] codes = new int[2][256];
        int[][] sc = new int[2][8];
        int[][] mn = new int[2][8];
        for (int blk = 0; blk < 2; blk++) {
            int base = 7 + 176 * blk;
            put16(src, base, Float.floatToFloat16(d[blk]));
            put16(src, base + 2, Float.floatToFloat16(dmin[blk]));
            for (int j = 0; j < 8; j++) {
                sc[blk][j] = (j * 9 + 5 * blk + 1) % 64;
                mn[blk][j] = (j * 23 + 11 * blk + 7) % 64;
                if (j < 4) {
                    src[base + 4 + j] |= (byte) sc[blk][j];
                    src[base + 8 + j] |= (byte) mn[blk][j];
                } else {
                    src[base + 4 + j + 4] |= (byte) ((sc[blk][j] & 0xF) | ((mn[blk][j] & 0xF) << 4));
                    src[base + 4 + j - 4] |= (byte) ((sc[blk][j] >> 4) << 6);
                    src[base + 4 + j] |= (byte) ((mn[blk][j] >> 4) << 6);
                }
            }
            for (int e = 0; e < 256; e++) {
                int code = (e * 5 + blk * 11 + e / 32) % 32;
                codes[blk][e] = code;
                int c = e / 64, l = e % 32;
                boolean high = e % 64 >= 32;
                src[base + 48 + 32 * c + l] |= (byte) (high ? (code & 0xF) << 4 : code & 0xF);
                src[base + 16 + l] |= (byte) ((code >> 4) << (e / 32));
            }
        }
        float[] y = new float[5 + 512];
        GgufBlockType.Q5_K.decode(src, 7, y, 5, 2);
        for (int blk = 0; blk < 2; blk++) {
            for (int e = 0; e < 256; e++) {
                int j = e / 32;
                float want = (d[blk] * sc[blk][j]) * codes[blk][e] - (dmin[blk] * mn[blk][j]);
                assertBits(y[5 + 256 * blk + e], want);
            }
        }
        assertBits(y[4], 0f);
    }

    /**
     * Every 6-bit code at many positions of two blocks, read at offsets: the blocks are built
     * from codes chosen per element (element e of a 128-value half: ql[l] low nibble for
     * quarter 0, ql[l+32] low for 1, ql[l] high for 2, ql[l+32] high for 3, where l = e % 32,
     * and the top two bits in qh[l] at 2*quarter), expected values (d*sc[e/16]) * (code - 32).
     */
    @Test
    void q6_kDecodesEveryCodeAtEveryPositionOfTwoBlocks() {
        float[] d = {0.25f, 3.0f};
        byte[] src = new byte[5 + 2 * 210];
        int[][] codes = new int[2][256];
        for (int blk = 0; blk < 2; blk++) {
            int base = 5 + 210 * blk;
            put16(src, base + 208, Float.floatToFloat16(d[blk]));
            for (int j = 0; j < 16; j++) src[base + 192 + j] = (byte) (blk == 0 ? j - 8 : 127 - 17 * j);
            for (int e = 0; e < 256; e++) {
                int code = (e * 7 + blk * 3 + e / 64) % 64;
                codes[blk][e] = code;
                int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
                int ql = base + 64 * half + l + 32 * (quarter & 1);
                src[ql] |= (byte) (quarter < 2 ? code & 0xF : (code & 0xF) << 4);
                src[base + 128 + 32 * half + l] |= (byte) ((code >> 4) << (2 * quarter));
            }
        }
        float[] y = new float[3 + 512];
        GgufBlockType.Q6_K.decode(src, 5, y, 3, 2);
        for (int blk = 0; blk < 2; blk++) {
            for (int e = 0; e < 256; e++) {
                int sc = src[5 + 210 * blk + 192 + e / 16];
                assertBits(y[3 + 256 * blk + e], (d[blk] * sc) * (codes[blk][e] - 32));
            }
        }
        assertBits(y[2], 0f);
    }

    @Test
    void q8_kReadsAnF32Scale() {
        byte[] b = new byte[292];
        put32(b, 0, Float.floatToRawIntBits(0.25f));
        b[4] = -4;
        b[259] = 100;
        put16(b, 260, 0x7FFF); // bsums: not part of the values
        float[] y = decode(GgufBlockType.Q8_K, b);
        assertBits(y[0], -1f);
        assertBits(y[255], 25f);
    }

    @Test
    void tq1_0ReadsBaseThreeDigitsAsFixedPointFractions() {
        byte[] b = new byte[54];
        put16(b, 52, 0x4000);    // d = 2
        b[0] = 0x55;             // 85: digits (85*3^n mod 256)*3 >> 8 = 0, 2, 2, 2, 2
        b[32] = (byte) 0x80;     // 128: every digit 1
        b[48] = (byte) 0xFF;     // 255: every digit 2
        float[] y = decode(GgufBlockType.TQ1_0, b);
        assertBits(y[0], -2f);
        assertBits(y[32], 2f);
        assertBits(y[128], 2f);
        assertBits(y[1], -2f);   // byte 0: digit 0
        assertBits(y[160], 0f);
        assertBits(y[224], 0f);
        assertBits(y[240], 2f);
        assertBits(y[252], 2f);
        assertBits(y[241], -2f);
    }

    @Test
    void tq2_0WalksBitPairsAcrossThirtyTwoBytes() {
        byte[] b = new byte[66];
        put16(b, 64, 0x3C00);
        b[0] = (byte) 0xE4;
        b[32] = 0x02;
        float[] y = decode(GgufBlockType.TQ2_0, b);
        assertBits(y[0], -1f);
        assertBits(y[32], 0f);
        assertBits(y[64], 1f);
        assertBits(y[96], 2f);
        assertBits(y[128], 1f);
        assertBits(y[1], -1f);
    }

    @Test
    void mxfp4ScalesDoubledE2m1ByHalfTheE8m0Scale() {
        byte[] b = new byte[34];
        b[0] = (byte) 128;       // 2^(128-127) / 2 = 1
        b[1] = (byte) 0x97;      // low 7 -> e2m1 6.0 doubled = 12; high 9 -> -0.5 doubled = -1
        b[17] = 0;               // 2^-127 / 2 = 2^-128, subnormal
        b[18] = 0x02;            // e2m1 1.0 doubled = 2 -> 2^-127
        b[19] = 0x09;            // -1 -> -2^-128
        float[] y = new float[64];
        GgufBlockType.MXFP4.decode(b, 0, y, 0, 2);
        assertBits(y[0], 12f);
        assertBits(y[16], -1f);
        assertBits(y[1], 0f);
        assertBits(y[32], Float.intBitsToFloat(0x0040_0000));
        assertBits(y[33], -Float.intBitsToFloat(0x0020_0000));
    }

    @Test
    void nvfp4UsesOneUe4m3ScalePerSixteen() {
        byte[] b = new byte[36];
        b[0] = 0x38;             // exp 7, man 0: 1.0 -> half 0.5
        b[1] = 0x00;             // zero scale
        b[2] = 0x7F;             // treated as zero by ggml
        b[3] = 0x01;             // subnormal 1 * 2^-9 -> half 2^-10
        b[4] = 0x1F;             // element 0: code 15 = -12 (doubled -6); element 8: code 1 = 1
        b[12] = 0x0F;            // element 16: -12 * 0 = -0
        b[28] = 0x06;            // element 48: 8 * 2^-10
        float[] y = decode(GgufBlockType.NVFP4, b);
        assertBits(y[0], -6f);
        assertBits(y[8], 0.5f);
        assertBits(y[16], -0.0f);
        assertBits(y[17], 0.0f);
        assertBits(y[48], 0.0078125f);
    }

    @Test
    void iq4_nlLooksUpTheNonLinearCodebook() {
        byte[] b = new byte[18];
        put16(b, 0, 0x3800);     // 0.5
        b[2] = (byte) 0xF0;      // low 0 -> -127, high 15 -> 113
        float[] y = decode(GgufBlockType.IQ4_NL, b);
        assertBits(y[0], -63.5f);
        assertBits(y[16], 56.5f);
    }

    @Test
    void iq4_xsBuildsSixBitScalesFromLowAndHighParts() {
        byte[] b = new byte[136];
        put16(b, 0, 0x3C00);
        put16(b, 2, 0x0002);     // block 0 high bits 2 (-> 32); block 1 high bits 0
        b[4] = 0x01;             // block 0 low 1 -> 33 -> dl 1; block 1 low 0 -> dl -32
        b[8] = (byte) 0x98;      // element 0 code 8 = 1, element 16 code 9 = 13
        float[] y = decode(GgufBlockType.IQ4_XS, b);
        assertBits(y[0], 1f);
        assertBits(y[16], 13f);
        assertBits(y[32], 4064f); // -32 * -127
    }

    @Test
    void iq2_xxsAppliesGridScaleAndSignCode() {
        byte[] b = new byte[66];
        put16(b, 0, 0x3C00);
        b[2 + 1] = 1;                       // group 1 -> grid[1] = {43, 8, 8, 8, 8, 8, 8, 8}
        put32(b, 2 + 4, (1 << 28) | 1);     // scale 1 -> db = (0.5+1)*0.25 = 0.375; group 0 sign code 1 -> ksigns 129
        float[] y = decode(GgufBlockType.IQ2_XXS, b);
        assertBits(y[0], -3f);       // -(0.375*8)
        assertBits(y[1], 3f);
        assertBits(y[7], -3f);
        assertBits(y[8], 16.125f);   // 0.375*43
        assertBits(y[9], 3f);
    }

    @Test
    void iq2_xsSplitsNineBitIndexAndSignCode() {
        byte[] b = new byte[74];
        put16(b, 0, 0x3C00);
        put16(b, 2, (1 << 9) | 1); // grid[1], sign code 1 (elements 0 and 7)
        b[66] = 0x10;              // db0 = 0.5*0.25 = 0.125, db1 = 1.5*0.25 = 0.375
        float[] y = decode(GgufBlockType.IQ2_XS, b);
        assertBits(y[0], -5.375f); // -(0.125*43)
        assertBits(y[1], 1f);
        assertBits(y[7], -1f);
        assertBits(y[16], 3f);     // group 2 uses db1: 0.375*8
    }

    @Test
    void iq2_sTakesExplicitSignBytes() {
        byte[] b = new byte[82];
        put16(b, 0, 0x3C00);
        b[2] = 1;           // grid[1]
        b[34] = 0x02;       // element 1 negative
        b[74] = 0x01;       // db0 = 1.5*0.25 = 0.375
        float[] y = decode(GgufBlockType.IQ2_S, b);
        assertBits(y[0], 16.125f);
        assertBits(y[1], -3f);
        assertBits(y[2], 3f);
    }

    @Test
    void iq3_xxsPairsTwoFourValueGridEntries() {
        byte[] b = new byte[98];
        put16(b, 0, 0x3C00);
        b[2] = 1;                        // first half grid[1] = {20, 4, 4, 4}; second half grid[0] = {4, 4, 4, 4}
        put32(b, 66, (2 << 28) | 3);     // db = (0.5+2)*0.5 = 1.25; sign code 3 -> elements 0, 1
        float[] y = decode(GgufBlockType.IQ3_XXS, b);
        assertBits(y[0], -25f);
        assertBits(y[1], -5f);
        assertBits(y[2], 5f);
        assertBits(y[4], 5f);
    }

    @Test
    void iq3_sUsesOddScalesAndSignBytes() {
        byte[] b = new byte[110];
        put16(b, 0, 0x3800);   // d = 0.5
        b[2] = 1;              // grid[1] = {3, 1, 1, 1}
        b[74] = 0x10;          // element 4 negative
        b[106] = 0x01;         // block 0: 0.5*(1+2*1) = 1.5; block 1: 0.5*(1+0) = 0.5
        float[] y = decode(GgufBlockType.IQ3_S, b);
        assertBits(y[0], 4.5f);
        assertBits(y[1], 1.5f);
        assertBits(y[4], -1.5f);
        assertBits(y[32], 0.5f);
    }

    @Test
    void iq1_sAddsTheDeltaBeforeScaling() {
        byte[] b = new byte[50];
        put16(b, 0, 0x3C00);
        b[2] = 1;                          // grid[1] = {+1, -1, ... -1}
        put16(b, 34, 0x8000 | (1 << 12));  // dl = 2*1+1 = 3, delta -0.125
        float[] y = decode(GgufBlockType.IQ1_S, b);
        assertBits(y[0], 2.625f);   // 3*(1 - 0.125)
        assertBits(y[1], -3.375f);  // 3*(-1 - 0.125)
        assertBits(y[8], -3.375f);  // grid[0]
        assertBits(y[32], -0.875f); // block 1: qh 0 -> dl 1, delta +0.125: -1 + 0.125
    }

    @Test
    void iq1_mAssemblesTheF16ScaleFromTopNibbles() {
        byte[] b = new byte[56];
        b[0] = 1;                  // group 0 grid[1]
        b[2] = 2;                  // group 2 grid[2] = {0, 0, -1, ...}
        b[32] = 0x08;              // group 0 delta negative
        b[33] = (byte) 0x80;       // group 3 delta negative
        put16(b, 48, 0x0001);      // block 0: dl1 = 3, dl2 = 1
        put16(b, 52, 0xC000);      // f16 scale 0x3C00 = 1.0 from the top nibbles
        put16(b, 54, 0x3000);
        float[] y = decode(GgufBlockType.IQ1_M, b);
        assertBits(y[0], 2.625f);   // 3*(1 - 0.125)
        assertBits(y[1], -3.375f);  // 3*(-1 - 0.125)
        assertBits(y[8], -2.625f);  // 3*(-1 + 0.125)
        assertBits(y[16], 0.125f);  // 1*(0 + 0.125)
        assertBits(y[18], -0.875f); // 1*(-1 + 0.125)
        assertBits(y[24], -1.125f); // 1*(-1 - 0.125)
    }

    @Test
    void negativeScaleTimesZeroGivesNegativeZero() {
        byte[] b = new byte[34];
        put16(b, 0, 0xB800); // d = -0.5
        float[] y = decode(GgufBlockType.Q8_0, b);
        assertBits(y[0], -0.0f);
    }
}
