package io.anamnesis.quant.bnb;

import org.junit.jupiter.api.Test;

import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * LLM.int8() rows against bitsandbytes' published steps, worked out here: cast to float16
 * (round to nearest even), SCB = the row's NaN-ignoring absmax, codes = round half to even of
 * {@code x16 * (127 / SCB)} in float32.
 */
class Int8EncoderTest {

    static byte[] expectedCodes(float[] x, float[] scbOut) {
        float[] h = new float[x.length];
        float max = 0;
        for (int i = 0; i < x.length; i++) {
            h[i] = Float.float16ToFloat(Float.floatToFloat16(x[i]));
            if (!Float.isNaN(h[i])) max = Math.max(max, Math.abs(h[i]));
        }
        scbOut[0] = max;
        float scale = 127.0f / max;
        byte[] q = new byte[x.length];
        for (int i = 0; i < x.length; i++) {
            float p = h[i] * scale;
            q[i] = (byte) (Float.isNaN(p) ? 0 : (int) Math.rint(p));
        }
        return q;
    }

    /** The scalar path's codes and SCB; the dispatching entry (vector or scalar) must agree. */
    static byte[] encode(float[] x, float[] scbOut) {
        byte[] q = new byte[x.length];
        scbOut[0] = Int8Encoder.encodeRowScalar(x, 0, x.length, q, 0, new float[x.length]);
        byte[] dispatched = new byte[x.length];
        float scb = Int8Encoder.encodeRow(x, 0, x.length, dispatched, 0, new float[x.length]);
        assertThat(Float.floatToRawIntBits(scb)).isEqualTo(Float.floatToRawIntBits(scbOut[0]));
        assertThat(dispatched).containsExactly(q);
        return q;
    }

    @Test
    void rowsRoundHalfToEvenAfterTheFloat16Cast() {
        // SCB 127 makes the scale exactly 1: the codes are the float16 values rounded half to even
        float[] x = {127f, 2.5f, 3.5f, -2.5f, -3.5f, 0.5f, -0.5f, 1.5f, 3.4999f};
        float[] scb = new float[1];
        byte[] q = encode(x, scb);
        // 3.4999 is 3.5 in float16 (spacing 2^-9 at 2..4), which rounds to 4; in float32 it would round to 3
        assertThat(q).containsExactly(127, 2, 4, -2, -4, 0, 0, 2, 4);
        assertThat(scb[0]).isEqualTo(127f);
    }

    @Test
    void edgeRowsEncodeAsTheFormulasSay() {
        float[][] rows = {
                new float[64],                                                  // all zero: SCB 0, codes 0
                {1000f, 0.001f, -0.002f, 0.0f, 3f, -7f},                          // one outlier
                {65504f, -65504f, 1f, -1f},                                       // +-max float16
                {Float.NaN, 0.25f, -0.5f, 0.125f},                                // NaN: ignored by SCB, code 0
                {Float.MIN_VALUE, -Float.MIN_VALUE, 1e-7f, -3e-8f, 6e-8f},        // subnormals: float16 flushes the tiniest
                {1.00001f, 0.3f, -0.7f},                                          // SCB is the float16 absmax
                {Float.NaN, 2f, Float.POSITIVE_INFINITY, -1f},                    // infinity: SCB inf, scale 0
                {70000f, -1f, Float.NaN},                                         // past float16's max: inf
                {-0f, Float.intBitsToFloat(0xFFC0_0000), 0.5f}};                  // a negative NaN, -0
        for (float[] x : rows) {
            float[] want = new float[1];
            float[] got = new float[1];
            assertThat(encode(x, got)).as(java.util.Arrays.toString(x)).containsExactly(expectedCodes(x, want));
            assertThat(got[0]).isEqualTo(want[0]);
        }
        float[] scb = new float[1];
        assertThat(encode(new float[64], scb)).containsOnly(0);
        assertThat(scb[0]).isZero();
        encode(new float[]{1.00001f, 0.3f}, scb);
        assertThat(scb[0]).isEqualTo(1.0f);
        assertThat(encode(new float[]{Float.NaN, 0.25f}, scb)).containsExactly(0, 127);
    }

    @Test
    void decodingThenEncodingGivesTheCodesBack() {
        Random r = new Random(11);
        for (int row = 0; row < 200; row++) {
            int n = 1 + r.nextInt(300);
            byte[] codes = new byte[n];
            for (int i = 0; i < n; i++) codes[i] = (byte) (r.nextInt(255) - 127);
            codes[r.nextInt(n)] = (byte) (r.nextBoolean() ? 127 : -127);
            // SCB as LLM.int8() makes it: a float16 value (the row's absmax)
            float scb = Float.float16ToFloat(Float.floatToFloat16((float) Math.exp(r.nextGaussian() * 2 - 3)));
            float[] x = new float[n];
            for (int i = 0; i < n; i++) x[i] = Int8Rows.value(codes[i], scb);
            float[] again = new float[1];
            assertThat(encode(x, again)).containsExactly(codes);
            assertThat(again[0]).isEqualTo(scb);
        }
    }
}
