package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/** Values worked out by hand from the bit layouts (sign, exponent, mantissa, bias). */
class Fp8FormatTest {
    private static int bits(Fp8Format f, int code) {
        return Float.floatToRawIntBits(f.decode(code));
    }

    @Test
    void e4m3DecodesNormalsFromBiasSeven() {
        Fp8Format f = Fp8Format.E4M3;
        assertThat(f.decode(0x38)).isEqualTo(1.0f);       // 0.0111.000: 2^(7-7)
        assertThat(f.decode(0x3C)).isEqualTo(1.5f);       // 0.0111.100: 1.5 x 2^0
        assertThat(f.decode(0x40)).isEqualTo(2.0f);       // 0.1000.000
        assertThat(f.decode(0xC0)).isEqualTo(-2.0f);      // 1.1000.000
        assertThat(f.decode(0x77)).isEqualTo(240.0f);     // 0.1110.111: 1.875 x 2^7
        assertThat(f.decode(0x78)).isEqualTo(256.0f);     // 0.1111.000: exponent 1111 is a number here
        assertThat(f.decode(0x7E)).isEqualTo(448.0f);     // 0.1111.110: the largest finite, 1.75 x 2^8
        assertThat(f.decode(0x08)).isEqualTo(0x1p-6f);    // 0.0001.000: smallest normal
    }

    @Test
    void e4m3DecodesSubnormalsAndSignedZero() {
        Fp8Format f = Fp8Format.E4M3;
        assertThat(f.decode(0x01)).isEqualTo(0x1p-9f);        // 0.0000.001: 1/8 x 2^-6
        assertThat(f.decode(0x07)).isEqualTo(7 * 0x1p-9f);    // 0.0000.111
        assertThat(f.decode(0x81)).isEqualTo(-0x1p-9f);
        assertThat(bits(f, 0x00)).isEqualTo(0x0000_0000);
        assertThat(bits(f, 0x80)).isEqualTo(0x8000_0000);     // -0.0
    }

    @Test
    void e4m3HasOnlyTwoNansAndNoInfinity() {
        Fp8Format f = Fp8Format.E4M3;
        int nans = 0;
        for (int c = 0; c < 256; c++) {
            assertThat(Float.isInfinite(f.decode(c))).as("code 0x%02x", c).isFalse();
            if (Float.isNaN(f.decode(c))) nans++;
        }
        assertThat(nans).isEqualTo(2);
        // S.1111.111: F32 all-ones exponent, mantissa 111 as the payload's top bits
        assertThat(bits(f, 0x7F)).isEqualTo(0x7FF0_0000);
        assertThat(bits(f, 0xFF)).isEqualTo(0xFFF0_0000);
    }

    @Test
    void e5m2FollowsIeeeWithBiasFifteen() {
        Fp8Format f = Fp8Format.E5M2;
        assertThat(f.decode(0x3C)).isEqualTo(1.0f);           // 0.01111.00
        assertThat(f.decode(0x3E)).isEqualTo(1.5f);           // 0.01111.10
        assertThat(f.decode(0x7B)).isEqualTo(57344.0f);       // 0.11110.11: 1.75 x 2^15, largest finite
        assertThat(f.decode(0x04)).isEqualTo(0x1p-14f);       // smallest normal
        assertThat(f.decode(0x01)).isEqualTo(0x1p-16f);       // 0.00000.01: 1/4 x 2^-14
        assertThat(f.decode(0x03)).isEqualTo(3 * 0x1p-16f);
        assertThat(f.decode(0x7C)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(f.decode(0xFC)).isEqualTo(Float.NEGATIVE_INFINITY);
        assertThat(bits(f, 0x80)).isEqualTo(0x8000_0000);
        int nans = 0;
        for (int c = 0; c < 256; c++) if (Float.isNaN(f.decode(c))) nans++;
        assertThat(nans).isEqualTo(6);                         // S.11111.{01,10,11}
        assertThat(bits(f, 0x7E)).isEqualTo(0x7FC0_0000);      // mantissa 10 -> payload top bits
    }

    @Test
    void everyFiniteCodeRoundTripsThroughItsOwnFields() {
        // A code's value is sign x 2^(e - bias) x (1 + m / 2^M) (or the subnormal rule); check the
        // table against a straightforward double computation of the same formula.
        for (Fp8Format f : Fp8Format.values()) {
            int m = f.mantissaBits();
            int eBits = 7 - m;
            for (int c = 0; c < 256; c++) {
                float v = f.decode(c);
                if (Float.isNaN(v) || Float.isInfinite(v)) continue;
                int e = (c >>> m) & ((1 << eBits) - 1);
                int man = c & ((1 << m) - 1);
                double expected = e == 0 ? man / (double) (1 << m) * Math.pow(2, 1 - f.bias())
                        : (1 + man / (double) (1 << m)) * Math.pow(2, e - f.bias());
                if ((c & 0x80) != 0) expected = -expected;
                assertThat((double) v).as("%s code 0x%02x", f, c).isEqualTo(expected);
            }
        }
    }

    @Test
    void mapsSafetensorsDtypes() {
        assertThat(Fp8Format.of(DType.F8_E4M3)).contains(Fp8Format.E4M3);
        assertThat(Fp8Format.of(DType.F8_E5M2)).contains(Fp8Format.E5M2);
        assertThat(Fp8Format.of(DType.F8_E4M3FNUZ)).contains(Fp8Format.E4M3FNUZ);
        assertThat(Fp8Format.of(DType.F8_E5M2FNUZ)).contains(Fp8Format.E5M2FNUZ);
        assertThat(Fp8Format.of(DType.F8_E8M0)).isEmpty();
        assertThat(Fp8Format.of(DType.BF16)).isEmpty();
    }

    @Test
    void fnuzFormatsHaveBiasEightAndSixteenAndNanAtNegativeZero() {
        Fp8Format f = Fp8Format.E4M3FNUZ;
        assertThat(f.decode(0x40)).isEqualTo(1.0f);           // 0.1000.000: 2^(8-8)
        assertThat(f.decode(0x7F)).isEqualTo(240.0f);         // 0.1111.111: 1.875 x 2^7, a number here
        assertThat(f.decode(0x08)).isEqualTo(0x1p-7f);        // smallest normal 2^(1-8)
        assertThat(f.decode(0x01)).isEqualTo(0x1p-10f);       // 1/8 x 2^-7
        assertThat(f.decode(0xC0)).isEqualTo(-1.0f);
        assertThat(bits(f, 0x80)).isEqualTo(0x7F80_0001);     // NaN, never -0.0
        Fp8Format g = Fp8Format.E5M2FNUZ;
        assertThat(g.decode(0x40)).isEqualTo(1.0f);           // 0.10000.00
        assertThat(g.decode(0x7F)).isEqualTo(57344.0f);       // 0.11111.11: 1.75 x 2^15
        assertThat(g.decode(0x01)).isEqualTo(0x1p-17f);       // 1/4 x 2^(1-16)
        assertThat(Float.isNaN(g.decode(0x80))).isTrue();
        for (int c = 0; c < 256; c++) {
            assertThat(Float.isInfinite(f.decode(c)) || Float.isInfinite(g.decode(c))).isFalse();
            if (c != 0x80) assertThat(Float.isNaN(f.decode(c)) || Float.isNaN(g.decode(c))).isFalse();
        }
    }
}
