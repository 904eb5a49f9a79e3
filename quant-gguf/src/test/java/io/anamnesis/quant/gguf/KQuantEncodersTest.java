package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * K-quant super-blocks whose bytes follow from ggml's formulas without running its search:
 * all-zero blocks, and blocks whose values lie exactly on the grid of the type (every
 * sub-block holding both ends of the level range), where the least-squares fit is exact,
 * so the sub-block scale is 1 and the stored bytes are the level rule applied to x.
 */
class KQuantEncodersTest {

    static byte[] encode(String type, float[] row) {
        return GgufEncoding.encode(type, row, 1, row.length, null);
    }

    static int u16(byte[] b, int at) {
        return (b[at] & 0xFF) | (b[at + 1] & 0xFF) << 8;
    }

    static float[] decode(GgufBlockType type, byte[] blocks) {
        float[] y = new float[blocks.length / type.blockBytes() * type.blockElements()];
        type.decode(blocks, 0, y, 0, blocks.length / type.blockBytes());
        return y;
    }

    /** 256 values cycling through lo..hi, so every 16 (and 32) holds both ends. */
    static float[] grid(int lo, int hi) {
        float[] x = new float[256];
        int span = hi - lo + 1;
        for (int i = 0; i < 256; i++) x[i] = lo + (i * 5 + i / span) % span;
        for (int g = 0; g < 256; g += 16) {
            x[g] = lo;
            x[g + 1] = hi;
        }
        return x;
    }

    static int f16(float v) {
        return Float.floatToFloat16(v) & 0xFFFF;
    }

    @Test
    void zeroSuperBlocksAreAllZeroBytes() {
        // Every search answers scale 0 for an all-zero group; d = dmin = 0 and no level moves.
        float[] zeros = new float[512];
        for (String t : new String[] {"q2_K", "q3_K", "q4_K", "q5_K", "q6_K"}) {
            assertThat(encode(t, zeros)).as(t).containsOnly(0);
        }
    }

    @Test
    void q6_kOnItsGridIsExact() {
        // Levels -32..31 with -32 (the signed extreme) in each 16: iscale = -32/-32 = 1, l = x, scale 1.
        // Super-scale: iscale = -128/1 -> d = f16(-1/128) = 0xA000, every int8 scale -128,
        // d * sc = 1, stored level x + 32 (low 4 bits in ql, high 2 in qh).
        float[] x = grid(-32, 31);
        byte[] b = encode("q6_K", x);
        assertThat(u16(b, 208)).isEqualTo(0xA000);
        assertThat(Arrays.copyOfRange(b, 192, 208)).containsOnly((byte) -128);
        for (int half = 0; half < 2; half++) {
            for (int l = 0; l < 32; l++) {
                int[] q = new int[4];
                for (int k = 0; k < 4; k++) q[k] = (int) x[128 * half + l + 32 * k] + 32;
                assertThat(b[64 * half + l] & 0xFF).isEqualTo((q[0] & 0xF) | (q[2] & 0xF) << 4);
                assertThat(b[64 * half + l + 32] & 0xFF).isEqualTo((q[1] & 0xF) | (q[3] & 0xF) << 4);
                assertThat(b[128 + 32 * half + l] & 0xFF).isEqualTo(q[0] >> 4 | (q[1] >> 4) << 2 | (q[2] >> 4) << 4 | (q[3] >> 4) << 6);
            }
        }
        assertThat(decode(GgufBlockType.Q6_K, b)).containsExactly(x);
    }

    @Test
    void q3_kOnItsGridIsExact() {
        // Levels -4..3 with -4 in each 16: make_q3_quants keeps l = x, scale 1. Scales: iscale = -32,
        // l = -32 + 32 = 0 for all -> scale bytes 0; d = f16(1/-32) = 0xA800; d * (0 - 32) = 1.
        // Stored level x + 4: bit 2 in hmask (bit j/32 of byte j%32), low 2 bits in qs.
        float[] x = grid(-4, 3);
        byte[] b = encode("q3_K", x);
        assertThat(u16(b, 108)).isEqualTo(0xA800);
        assertThat(Arrays.copyOfRange(b, 96, 108)).containsOnly(0);
        for (int j = 0; j < 256; j++) {
            int q = (int) x[j] + 4;
            assertThat((b[j % 32] >> (j / 32)) & 1).as("hmask bit of %d", j).isEqualTo(q >> 2);
            int byteAt = 32 + (j / 128) * 32 + (j % 32);
            int shift = 2 * ((j % 128) / 32);
            assertThat((b[byteAt] >> shift) & 3).as("qs of %d", j).isEqualTo(q & 3);
        }
        assertThat(decode(GgufBlockType.Q3_K, b)).containsExactly(x);
    }

    @Test
    void q2_kOnItsGridStoresFullScalesAndMins() {
        // Levels {-1, 0, 1, 2} with both ends in each 16: scale 1, min -1 (error 0, no trial beats it).
        // Scales: iscale = 15/1 -> 15 | 15 << 4 = 0xFF; d = dmin = f16(1/15); level x + 1.
        float[] x = grid(-1, 2);
        byte[] b = encode("q2_K", x);
        assertThat(Arrays.copyOfRange(b, 0, 16)).containsOnly((byte) 0xFF);
        assertThat(u16(b, 80)).isEqualTo(f16(1 / 15f));
        assertThat(u16(b, 82)).isEqualTo(f16(1 / 15f));
        for (int j = 0; j < 256; j++) {
            int byteAt = 16 + (j / 128) * 32 + (j % 32);
            int shift = 2 * ((j % 128) / 32);
            assertThat((b[byteAt] >> shift) & 3).as("level of %d", j).isEqualTo((int) x[j] + 1);
        }
    }

    @Test
    void q4_kAndQ5_kOnTheirGridsStoreFullScalesAndMins() {
        // Levels 0..nmax over x = -1 .. nmax - 1: scale 1, min -1 per 32; 6-bit scales and mins
        // 63/1 * 1 = 63 everywhere, so all 12 packed bytes are 0xFF; d = dmin = f16(1/63); level x + 1.
        float[] x4 = grid(-1, 14);
        byte[] b4 = encode("q4_K", x4);
        assertThat(u16(b4, 0)).isEqualTo(f16(1 / 63f));
        assertThat(u16(b4, 2)).isEqualTo(f16(1 / 63f));
        assertThat(Arrays.copyOfRange(b4, 4, 16)).containsOnly((byte) 0xFF);
        for (int j = 0; j < 256; j++) {
            int at = 16 + (j / 64) * 32 + (j % 32);
            int nibble = (j % 64) < 32 ? b4[at] & 0xF : (b4[at] >> 4) & 0xF;
            assertThat(nibble).as("q4_K level of %d", j).isEqualTo((int) x4[j] + 1);
        }
        float[] x5 = grid(-1, 30);
        byte[] b5 = encode("q5_K", x5);
        assertThat(u16(b5, 0)).isEqualTo(f16(1 / 63f));
        assertThat(Arrays.copyOfRange(b5, 4, 16)).containsOnly((byte) 0xFF);
        for (int j = 0; j < 256; j++) {
            int c = j / 64;
            boolean high = (j % 64) >= 32;
            int at = 48 + c * 32 + (j % 32);
            int low4 = high ? (b5[at] >> 4) & 0xF : b5[at] & 0xF;
            int bit4 = (b5[16 + j % 32] >> (2 * c + (high ? 1 : 0))) & 1;
            assertThat(low4 | bit4 << 4).as("q5_K level of %d", j).isEqualTo((int) x5[j] + 1);
        }
    }
}
