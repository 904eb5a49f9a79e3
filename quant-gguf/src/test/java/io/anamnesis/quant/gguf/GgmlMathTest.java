package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.math.RoundingMode;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The rounding helpers against C's definitions, worked out here another way: {@code roundf}
 * rounds half away from zero (C11 7.12.9.6), x86-64's {@code cvttss2si}/{@code cvttsd2si}
 * answer INT_MIN for NaN and for anything outside the int range, and glibc's {@code lroundf}
 * answers LONG_MIN (low 32 bits: 0) for NaN, infinities and values beyond the long range.
 * The reference rounds the exact decimal value of the float with {@link BigDecimal}, so it
 * shares no arithmetic with the helpers.
 */
class GgmlMathTest {

    private static final BigDecimal INT_MIN = BigDecimal.valueOf(Integer.MIN_VALUE);
    private static final BigDecimal INT_MAX = BigDecimal.valueOf(Integer.MAX_VALUE);
    private static final BigDecimal LONG_MIN = BigDecimal.valueOf(Long.MIN_VALUE);
    private static final BigDecimal LONG_MAX = BigDecimal.valueOf(Long.MAX_VALUE);

    /** {@code (int) roundf(f)} on x86-64. */
    static int roundfThenTruncate(float f) {
        if (!Float.isFinite(f)) return Integer.MIN_VALUE;
        BigDecimal r = new BigDecimal(f).setScale(0, RoundingMode.HALF_UP); // HALF_UP: half away from zero
        return r.compareTo(INT_MIN) < 0 || r.compareTo(INT_MAX) > 0 ? Integer.MIN_VALUE : r.intValueExact();
    }

    /** {@code (int) lroundf(f)} with glibc. */
    static int lroundfLow32(float f) {
        if (!Float.isFinite(f)) return 0;
        BigDecimal r = new BigDecimal(f).setScale(0, RoundingMode.HALF_UP);
        return r.compareTo(LONG_MIN) < 0 || r.compareTo(LONG_MAX) > 0 ? 0 : (int) r.longValueExact();
    }

    /** Every 4093rd bit pattern (about a million floats of every sign and exponent), then the edges. */
    private static float[] samples() {
        float[] edge = {0f, -0f, 0.5f, -0.5f, 1.5f, -1.5f, 2.5f, -2.5f, 0.49999997f, -0.49999997f, 127.5f, -127.5f,
                126.49999f, 8388607.5f, -8388607.5f, 8388608f, 2147483520f, 2147483648f, -2147483648f, -2147483904f,
                0x1p62f, 0x1p63f, -0x1p63f, -0x1p64f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MAX_VALUE, -Float.MAX_VALUE,
                Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, Float.NaN, Float.intBitsToFloat(0xFFC0_0001)};
        int strided = (int) (0x1_0000_0000L / 4093) + 1;
        float[] out = new float[strided + edge.length + 2 * 300];
        int n = 0;
        for (long u = 0; u <= 0xFFFF_FFFFL; u += 4093) out[n++] = Float.intBitsToFloat((int) u);
        for (float e : edge) out[n++] = e;
        // every tie k + 0.5 of the Q8_0 range and beyond, both signs
        for (int k = 0; k < 300; k++) {
            out[n++] = k + 0.5f;
            out[n++] = -(k + 0.5f);
        }
        return java.util.Arrays.copyOf(out, n);
    }

    @Test
    void roundHalfAwayIsRoundfThenTheX86Conversion() {
        for (float f : samples()) {
            assertThat(GgmlMath.roundHalfAway(f)).as("roundHalfAway(%s) bits %08x", f, Float.floatToRawIntBits(f))
                    .isEqualTo(roundfThenTruncate(f));
        }
    }

    @Test
    void theFloatRoundingAgreesWithRoundfUpTo129AndOnNaNsLowByte() {
        // every 1021st float of [-129, 129] (both signs), every tie k + 0.5 and its neighbours, NaN
        for (long u = 0; u <= Float.floatToRawIntBits(129f); u += 1021) {
            for (float f : new float[]{Float.intBitsToFloat((int) u), -Float.intBitsToFloat((int) u)}) {
                assertThat(GgmlMath.roundHalfAwaySmall(f)).as("%s bits %08x", f, Float.floatToRawIntBits(f))
                        .isEqualTo(roundfThenTruncate(f));
            }
        }
        for (int k = 0; k <= 128; k++) {
            for (float tie : new float[]{k + 0.5f, -(k + 0.5f)}) {
                for (float f : new float[]{tie, Math.nextDown(tie), Math.nextUp(tie)}) {
                    assertThat(GgmlMath.roundHalfAwaySmall(f)).as("%s", f).isEqualTo(roundfThenTruncate(f));
                }
            }
        }
        assertThat((byte) GgmlMath.roundHalfAwaySmall(Float.NaN)).isEqualTo((byte) GgmlMath.roundHalfAway(Float.NaN));
    }

    @Test
    void lroundToIntIsGlibcLroundfNarrowedToItsLow32Bits() {
        for (float f : samples()) {
            assertThat(GgmlMath.lroundToInt(f)).as("lroundToInt(%s) bits %08x", f, Float.floatToRawIntBits(f))
                    .isEqualTo(lroundfLow32(f));
        }
    }
}
