package io.anamnesis.api;

import io.anamnesis.api.numeric.E8M0;
import io.anamnesis.api.numeric.Float4E2M1;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.PackedInts;
import io.anamnesis.api.numeric.ScaleGrid;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The number formats of {@code io.anamnesis.api.numeric}, with values worked out from their definitions. */
class NumberFormatsTest {
    private static int bits(Float8 f, int code) {
        return Float.floatToRawIntBits(f.decode(code));
    }

    /** sign x 2^(e - bias) x (1 + m/2^M), or m/2^M x 2^(1 - bias) for e = 0, in double. */
    private static double formula(Float8 f, int code) {
        int m = f.mantissaBits();
        int e = (code >>> m) & ((1 << f.exponentBits()) - 1);
        int man = code & ((1 << m) - 1);
        double v = e == 0 ? man / (double) (1 << m) * Math.pow(2, 1 - f.bias())
                : (1 + man / (double) (1 << m)) * Math.pow(2, e - f.bias());
        return (code & 0x80) != 0 ? -v : v;
    }

    @Test
    void e4m3fnKeepsItsKnownValuesAndTwoNans() {
        Float8 f = Float8.E4M3FN;
        assertThat(f.decode(0x38)).isEqualTo(1.0f);
        assertThat(f.decode(0x7E)).isEqualTo(448.0f);
        assertThat(f.decode(0x01)).isEqualTo(0x1p-9f);
        assertThat(bits(f, 0x80)).isEqualTo(0x8000_0000);
        assertThat(bits(f, 0x7F)).isEqualTo(0x7FF0_0000);
        assertThat(bits(f, 0xFF)).isEqualTo(0xFFF0_0000);
        assertThat(f.hasInfinities()).isFalse();
    }

    @Test
    void e4m3fnuzHasBiasEightNoNegativeZeroAndOneNan() {
        Float8 f = Float8.E4M3FNUZ;
        assertThat(f.decode(0x40)).isEqualTo(1.0f);          // 0.1000.000: 2^(8-8)
        assertThat(f.decode(0x38)).isEqualTo(0.5f);          // the E4M3FN code of 1.0 is half here
        assertThat(f.decode(0x7F)).isEqualTo(240.0f);        // 0.1111.111 is a number: 1.875 x 2^7
        assertThat(f.decode(0x01)).isEqualTo(0x1p-10f);      // 1/8 x 2^(1-8)
        assertThat(f.decode(0xFF)).isEqualTo(-240.0f);
        assertThat(bits(f, 0x00)).isEqualTo(0);
        assertThat(bits(f, 0x80)).isEqualTo(0x7F80_0001);    // c10's NaN for 0x80, not -0.0
        int nans = 0;
        for (int c = 0; c < 256; c++) {
            if (Float.isNaN(f.decode(c))) nans++;
            assertThat(Float.isInfinite(f.decode(c))).isFalse();
        }
        assertThat(nans).isEqualTo(1);
    }

    @Test
    void e5m2fnuzHasBiasSixteenAndNoInfinity() {
        Float8 f = Float8.E5M2FNUZ;
        assertThat(f.decode(0x40)).isEqualTo(1.0f);          // 0.10000.00: 2^(16-16)
        assertThat(f.decode(0x7F)).isEqualTo(57344.0f);      // 1.75 x 2^15
        assertThat(f.decode(0x7C)).isEqualTo(32768.0f);      // exponent 11111 is a number
        assertThat(f.decode(0x01)).isEqualTo(0x1p-17f);      // 1/4 x 2^(1-16)
        assertThat(bits(f, 0x80)).isEqualTo(0x7F80_0001);
        assertThat(f.nanIsNegativeZero()).isTrue();
    }

    @Test
    void e5m2IsIeeeLike() {
        Float8 f = Float8.E5M2;
        assertThat(f.decode(0x3C)).isEqualTo(1.0f);
        assertThat(f.decode(0x7C)).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(f.decode(0xFC)).isEqualTo(Float.NEGATIVE_INFINITY);
        assertThat(bits(f, 0x7E)).isEqualTo(0x7FC0_0000);
        assertThat(f.hasInfinities()).isTrue();
    }

    @Test
    void everyFiniteCodeOfEveryFormatFollowsItsFormula() {
        for (Float8 f : Float8.values()) {
            for (int c = 0; c < 256; c++) {
                float v = f.decode(c);
                if (Float.isNaN(v) || Float.isInfinite(v)) {
                    assertThat(f.isSpecial(c)).isTrue();
                    continue;
                }
                assertThat((double) v).as("%s 0x%02x", f, c).isEqualTo(formula(f, c));
            }
        }
    }

    @Test
    void fnuzIsHalfOfFnForEveryOtherCode() {
        // vLLM's normalize_e4m3fn_to_e4m3fnuz relies on fnuz(bits) = fn(bits) / 2
        for (int c = 0; c < 256; c++) {
            if (c == 0x80 || Float8.E4M3FN.isSpecial(c)) continue;
            assertThat(Float8.E4M3FNUZ.decode(c)).isEqualTo(Float8.E4M3FN.decode(c) / 2);
        }
    }

    @Test
    void float8MapsSafetensorsDtypes() {
        assertThat(Float8.of(DType.F8_E4M3)).contains(Float8.E4M3FN);
        assertThat(Float8.of(DType.F8_E5M2FNUZ)).contains(Float8.E5M2FNUZ);
        assertThat(Float8.of(DType.F8_E8M0)).isEmpty();
        assertThat(Float8.of(DType.U8)).isEmpty();
    }

    @Test
    void tablesAreCopies() {
        float[] t = Float8.E4M3FN.table();
        t[0x38] = 7f;
        assertThat(Float8.E4M3FN.decode(0x38)).isEqualTo(1.0f);
        float[] four = Float4E2M1.table();
        four[2] = 7f;
        assertThat(Float4E2M1.decode(2)).isEqualTo(1.0f);
    }

    @Test
    void fp4E2M1HasEightMagnitudesAndSignedZero() {
        float[] expected = {0f, 0.5f, 1f, 1.5f, 2f, 3f, 4f, 6f};
        for (int c = 0; c < 8; c++) {
            assertThat(Float4E2M1.decode(c)).isEqualTo(expected[c]);
            assertThat(Float4E2M1.decode(c | 8)).isEqualTo(-expected[c]);
        }
        assertThat(Float.floatToRawIntBits(Float4E2M1.decode(0))).isEqualTo(0);
        assertThat(Float.floatToRawIntBits(Float4E2M1.decode(8))).isEqualTo(0x8000_0000);   // -0.0
        assertThat(Float4E2M1.low(0xA7)).isEqualTo(0x7);
        assertThat(Float4E2M1.high(0xA7)).isEqualTo(0xA);
    }

    @Test
    void e8m0IsAPowerOfTwoAndTwoFiftyFiveIsNan() {
        assertThat(E8M0.decode(127)).isEqualTo(1.0f);
        assertThat(E8M0.decode(128)).isEqualTo(2.0f);
        assertThat(E8M0.decode(120)).isEqualTo(0x1p-7f);
        assertThat(E8M0.decode(254)).isEqualTo(0x1p127f);
        assertThat(E8M0.decode(0)).isEqualTo(0x1p-127f);      // an F32 subnormal, exact
        assertThat(Float.floatToRawIntBits(E8M0.decode(0))).isEqualTo(0x0040_0000);
        assertThat(E8M0.decode(255)).isNaN();
        assertThat(E8M0.isNaN(255)).isTrue();
        assertThat(E8M0.isNaN(254)).isFalse();
    }

    @Test
    void packedIntsReadLeastSignificantBitFirstAcrossWords() {
        try (Arena arena = Arena.ofConfined()) {
            // 4-bit values 0..15 then 15..0 in two words: value n at bits 4n
            MemorySegment w = arena.allocate(12);
            w.set(io.anamnesis.api.numeric.LittleEndian.I32, 0, 0x7654_3210);
            w.set(io.anamnesis.api.numeric.LittleEndian.I32, 4, 0xFEDC_BA98);
            for (int n = 0; n < 16; n++) assertThat(PackedInts.get(w, 0, n, 4)).isEqualTo(n);
            assertThat(PackedInts.get(w, 0, 1, 8)).isEqualTo(0x32);
            // 3-bit value 10 sits at bits 30..32: two bits of word 0 (01 of 0x7...) and one of word 1 (0 of ...8)
            int lo = 0x7654_3210 >>> 30;                  // bits 30, 31
            int hi = (0xFEDC_BA98 & 1) << 2;              // bit 32
            assertThat(PackedInts.get(w, 0, 10, 3)).isEqualTo(lo | hi);
            int[] out = new int[4];
            PackedInts.unpack(w, 0, 2, 4, 8, out, 0, 4);
            assertThat(out).containsExactly(2 - 8, 3 - 8, 4 - 8, 5 - 8);
            assertThat(PackedInts.get(w, 0, 0, 32)).isEqualTo(0x7654_3210);
        }
        assertThat(PackedInts.words(512, 4)).isEqualTo(64);
        assertThat(PackedInts.words(10, 3)).isEqualTo(1);
        assertThat(PackedInts.words(11, 3)).isEqualTo(2);
        assertThat(PackedInts.perWord(4)).isEqualTo(8);
        assertThat(PackedInts.perWord(3)).isZero();
        assertThatThrownBy(() -> PackedInts.words(1, 0)).isInstanceOf(IllegalArgumentException.class);
    }

    @Test
    void scaleGridsAddressEveryGranularity() {
        ScaleGrid tensor = ScaleGrid.perTensor(96, 512);
        assertThat(tensor.scaleCount()).isEqualTo(1);
        assertThat(tensor.index(95, 511)).isZero();
        ScaleGrid channel = ScaleGrid.perRow(96, 512);
        assertThat(channel.scaleRows()).isEqualTo(96);
        assertThat(channel.scaleCols()).isEqualTo(1);
        assertThat(channel.index(7, 300)).isEqualTo(7);
        ScaleGrid groups = ScaleGrid.groups(96, 500, 128);   // the last group holds 116 columns
        assertThat(groups.scaleCols()).isEqualTo(4);
        assertThat(groups.index(2, 499)).isEqualTo(2 * 4 + 3);
        assertThat(groups.index(2, 128)).isEqualTo(2 * 4 + 1);
        ScaleGrid blocks = ScaleGrid.blocks(300, 200, 128, 128);
        assertThat(blocks.scaleRows()).isEqualTo(3);
        assertThat(blocks.scaleCols()).isEqualTo(2);
        assertThat(blocks.index(257, 129)).isEqualTo(2 * 2 + 1);
    }

    @Test
    void narrowingToATargetIsTheRoundingOfItsDtype() {
        float v = Float.intBitsToFloat(0x3F80_8001);     // just above a BF16 tie
        assertThat(Floats.narrow(v, DType.F32)).isEqualTo(0x3F80_8001);
        assertThat(Floats.narrow(v, DType.BF16)).isEqualTo(0x3F81);
        assertThat(Floats.narrow(65520f, DType.F16)).isEqualTo(0x7C00);
        assertThat(Floats.narrow(-0.0f, DType.BF16)).isEqualTo(0x8000);
        // a NaN keeps its sign and top payload bits in F16 whichever conversion the JIT picks
        assertThat(Floats.f32BitsToF16(0xFFC0_2000)).isEqualTo((short) 0xFE01);
        assertThatThrownBy(() -> Floats.narrow(1f, DType.I8)).isInstanceOf(IllegalArgumentException.class);
    }
}
