package io.anamnesis.quant.fp8;

import org.junit.jupiter.api.Test;

import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The 128 KiB code tables against the rules they stand for: the per-value encoder on every
 * class of floats the table merges, and the brute-force nearest code of
 * {@link Fp8EncoderTest} on the array path that reads the table.
 */
class Fp8CodeTableTest {

    @Test
    void everyClassOfFloatsTheTableMergesHasOneCode() {
        for (Fp8Format f : Fp8Format.values()) {
            byte[] table = Fp8CodeTable.of(f);
            Fp8Grid g = f.grid();
            for (int top = 0; top < 1 << 16; top++) {
                int zero = top << 16;
                assertThat(table[Fp8CodeTable.index(zero)]).isEqualTo((byte) Fp8Encoder.code(Float.intBitsToFloat(zero), g));
                // low bits not zero: one code from the first to the last float of the class (rounding is monotone)
                for (int low : new int[]{1, 0x7FFF, 0x8000, 0xFFFF}) {
                    int bits = zero | low;
                    assertThat(table[Fp8CodeTable.index(bits)]).as("%s %08x", f, bits)
                            .isEqualTo((byte) Fp8Encoder.code(Float.intBitsToFloat(bits), g));
                }
            }
        }
    }

    @Test
    void theArrayPathGivesTheNearestCodeTiesToEven() {
        for (Fp8Format f : Fp8Format.values()) {
            List<Float> probes = Fp8EncoderTest.probes(f);
            float[] x = new float[probes.size()];
            for (int i = 0; i < x.length; i++) x[i] = probes.get(i);
            byte[] codes = new byte[x.length];
            Fp8Encoder.encodeScalar(f, x, 0, x.length, 1f, codes, 0, null);
            for (int i = 0; i < x.length; i++) {
                assertThat(codes[i] & 0xFF).as("%s %s", f, x[i]).isEqualTo(Fp8EncoderTest.nearest(f, x[i]));
            }
        }
        // E4M3 ties: 1 + 2^-4 is halfway between 1 (0x38) and 1.125 (0x39), to even; one ulp above rounds up
        byte[] codes = new byte[2];
        Fp8Encoder.encodeScalar(Fp8Format.E4M3, new float[]{1.0625f, Math.nextUp(1.0625f)}, 0, 2, 1f, codes, 0, null);
        assertThat(codes).containsExactly(0x38, 0x39);
    }
}
