package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** The codebooks against sizes and entries stated in ggml-common.h, and their structure. */
class GgufTablesTest {

    @Test
    void tablesHaveGgmlSizes() {
        assertThat(GgufTables.IQ2XXS_GRID).hasSize(256);
        assertThat(GgufTables.IQ2XS_GRID).hasSize(512);
        assertThat(GgufTables.IQ2S_GRID).hasSize(1024);
        assertThat(GgufTables.IQ3XXS_GRID).hasSize(256);
        assertThat(GgufTables.IQ3S_GRID).hasSize(512);
        assertThat(GgufTables.IQ1S_GRID).hasSize(2048);
        assertThat(GgufTables.KSIGNS_IQ2XS).hasSize(128);
        assertThat(GgufTables.KMASK_IQ2XS).containsExactly(1, 2, 4, 8, 16, 32, 64, 128);
    }

    @Test
    void knownEntries() {
        assertThat(GgufTables.IQ2XXS_GRID[0]).isEqualTo(0x0808080808080808L);
        assertThat(GgufTables.IQ2XXS_GRID[1]).isEqualTo(0x080808080808082bL);
        assertThat(GgufTables.IQ3XXS_GRID[0]).isEqualTo(0x04040404);
        assertThat(GgufTables.IQ3S_GRID[0]).isEqualTo(0x01010101);
        assertThat(GgufTables.IQ1S_GRID[0]).isEqualTo(0xffffffffffffffffL);
        assertThat(GgufTables.IQ1S_GRID[2047]).isEqualTo(0x0101010101010101L);
        assertThat(GgufTables.KVALUES_IQ4NL).containsExactly(
                -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113);
        assertThat(GgufTables.KVALUES_FP4).containsExactly(0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12);
    }

    /** ksigns_iq2xs[i] is the 7 sign bits i plus an eighth bit that makes the count of negatives even. */
    @Test
    void signCodesHaveEvenParity() {
        for (int i = 0; i < 128; i++) {
            int s = GgufTables.KSIGNS_IQ2XS[i];
            assertThat(s & 127).isEqualTo(i);
            assertThat(Integer.bitCount(s) % 2).as("parity of %d", i).isZero();
        }
    }

    /** Grid bytes take only the levels ggml's i-quants use. */
    @Test
    void gridsHoldOnlyTheirLevels() {
        for (byte v : GgufKernels.IQ2XXS) assertThat(v).isIn((byte) 8, (byte) 25, (byte) 43);
        for (byte v : GgufKernels.IQ1S) assertThat(v).isIn((byte) -1, (byte) 0, (byte) 1);
        for (byte v : GgufKernels.IQ3XXS) assertThat(v & 0xFF).isIn(4, 12, 20, 28, 36, 44, 52, 62);
    }

    @Test
    void halfScaleTablesMatchTheirDefinitions() {
        assertThat(GgufKernels.e8m0Half(127)).isEqualTo(0.5f);
        assertThat(GgufKernels.e8m0Half(1)).isEqualTo(Float.intBitsToFloat(0x0040_0000));
        assertThat(GgufKernels.UE4M3_HALF[0x38]).isEqualTo(0.5f);   // 1.0 / 2
        assertThat(GgufKernels.UE4M3_HALF[0x7E]).isEqualTo(224f);   // 1.75 * 2^8 / 2
        assertThat(GgufKernels.UE4M3_HALF[0x07]).isEqualTo(7f / 1024); // 7 * 2^-9 / 2
    }
}
