package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * FP8 encoding against the OCP FP8 definition, worked out here by brute force: the code of a
 * value is the finite code nearest to it (a tie goes to the even code), past the largest
 * finite it saturates, NaN is the format's NaN with the value's sign; codes divide by the
 * stored scale in float32 ({@code x / s}).
 */
class Fp8EncoderTest {

    /** The nearest finite code by exhaustive search over the format's grid (exact in double). */
    static int nearest(Fp8Format f, float v) {
        int sign = Float.floatToRawIntBits(v) < 0 ? 0x80 : 0;
        if (Float.isNaN(v)) return sign | 0x7F;
        // past the largest finite value (infinity included): the largest finite code
        double a = Math.min(Math.abs((double) v), Fp8Encoder.maxFinite(f));
        int best = 0;
        double bestDistance = Double.MAX_VALUE;
        for (int c = 0; c < 0x80; c++) {
            float value = f.decode(c);
            if (!Float.isFinite(value)) continue;
            double d = Math.abs(a - value);
            if (d < bestDistance || (d == bestDistance && (c & 1) == 0)) {
                best = c;
                bestDistance = d;
            }
        }
        return sign | best;
    }

    static List<Float> probes(Fp8Format f) {
        List<Float> v = new ArrayList<>();
        List<Float> grid = new ArrayList<>();
        for (int c = 0; c < 0x80; c++) if (Float.isFinite(f.decode(c))) grid.add(f.decode(c));
        grid.sort(Float::compare);
        List<Float> anchors = new ArrayList<>(grid);
        for (int i = 0; i + 1 < grid.size(); i++) anchors.add((grid.get(i) + grid.get(i + 1)) / 2);
        for (float a : anchors) {
            for (float s : new float[]{a, -a}) {
                v.add(s);
                v.add(Math.nextUp(s));
                v.add(Math.nextDown(s));
            }
        }
        Random r = new Random(1);
        float max = Fp8Encoder.maxFinite(f);
        for (int i = 0; i < 50_000; i++) v.add((float) (r.nextGaussian() * Math.pow(2, r.nextInt(40) - 20)));
        for (float s : new float[]{Float.NaN, Float.intBitsToFloat(0xFFC0_0000), Float.POSITIVE_INFINITY,
                Float.NEGATIVE_INFINITY, 0f, -0f, Float.MIN_VALUE, -Float.MIN_VALUE, Float.MAX_VALUE, max, -max,
                Math.nextUp(max), max * 1.04f, max * 1.1f}) {
            v.add(s);
        }
        return v;
    }

    @Test
    void e4m3IsTheNearestFiniteCodeTiesToEvenSaturating() {
        for (float v : probes(Fp8Format.E4M3)) {
            assertThat(Fp8Encoder.e4m3(v)).as("e4m3(%s)", v).isEqualTo(nearest(Fp8Format.E4M3, v));
        }
        assertThat(Fp8Encoder.e4m3(448f)).isEqualTo(0x7E);
        assertThat(Fp8Encoder.e4m3(1e9f)).isEqualTo(0x7E);
        assertThat(Fp8Encoder.e4m3(Float.NEGATIVE_INFINITY)).isEqualTo(0xFE);
        assertThat(Fp8Encoder.e4m3(Float.NaN)).isEqualTo(0x7F);
        assertThat(Fp8Encoder.e4m3(-0f)).isEqualTo(0x80);
        // 2^-10 is halfway between 0 and the smallest subnormal 2^-9: to even, 0
        assertThat(Fp8Encoder.e4m3(0x1p-10f)).isEqualTo(0);
        assertThat(Fp8Encoder.e4m3(0x1.8p-9f)).isEqualTo(2);
    }

    @Test
    void e5m2IsTheNearestFiniteCodeTiesToEvenSaturating() {
        for (float v : probes(Fp8Format.E5M2)) {
            assertThat(Fp8Encoder.e5m2(v)).as("e5m2(%s)", v).isEqualTo(nearest(Fp8Format.E5M2, v));
        }
        assertThat(Fp8Encoder.e5m2(Float.POSITIVE_INFINITY)).as("saturates, never infinity").isEqualTo(0x7B);
        assertThat(Fp8Encoder.e5m2(Float.NaN)).isEqualTo(0x7F);
    }

    @Test
    void theScaleIsAmaxOverMaxFiniteRoundedIntoItsDtype() {
        float amax = 0.0731f;
        assertThat(Fp8Encoder.scale(Fp8Format.E4M3, amax, DType.F32)).isEqualTo(amax / 448f);
        assertThat(Fp8Encoder.scale(Fp8Format.E5M2, amax, DType.F32)).isEqualTo(amax / 57344f);
        assertThat(Fp8Encoder.scale(Fp8Format.E4M3, amax, DType.BF16)).isEqualTo(Floats.bf16ToF32(Floats.f32ToBf16(amax / 448f)));
        assertThat(Fp8Encoder.scale(Fp8Format.E4M3, amax, DType.F16)).isEqualTo(Floats.f16ToF32(Floats.f32ToF16(amax / 448f)));
        assertThat(Fp8Encoder.scale(Fp8Format.E4M3, 0f, DType.BF16)).isEqualTo(1f);
        // underflow in the scale's dtype: the smallest positive value instead of 0
        assertThat(Fp8Encoder.scale(Fp8Format.E4M3, 1e-10f, DType.F16)).isEqualTo(Floats.f16ToF32((short) 1));
    }

    /** Expected codes of a group: divide by the stored scale in float32, then the nearest code. */
    static byte[] expected(Fp8Format f, float[] x, DType sd, float[] scaleOut) {
        float amax = 0;
        for (float v : x) if (Float.isFinite(v)) amax = Math.max(amax, Math.abs(v));
        float s = amax == 0 ? 1f : amax / Fp8Encoder.maxFinite(f);
        if (sd.equals(DType.BF16)) s = Floats.bf16ToF32(Floats.f32ToBf16(s));
        // a scale that underflows its dtype: the smallest positive one
        if (s == 0) s = sd.equals(DType.BF16) ? Floats.bf16ToF32((short) 1) : Float.MIN_VALUE;
        scaleOut[0] = s;
        byte[] q = new byte[x.length];
        for (int i = 0; i < x.length; i++) q[i] = (byte) nearest(f, x[i] / s);
        return q;
    }

    static byte[] encode(Fp8Format f, float[] x, DType sd, float[] scaleOut, float[] decoded) {
        float s = Fp8Encoder.scale(f, Fp8Encoder.finiteAbsmax(x, 0, x.length), sd);
        scaleOut[0] = s;
        byte[] q = new byte[x.length];
        Fp8Encoder.encode(f, x, 0, x.length, s, q, 0, decoded);
        return q;
    }

    @Test
    void edgeGroupsEncodeAsTheFormulasSay() {
        Random r = new Random(2);
        float[] outlier = new float[128];
        for (int i = 0; i < outlier.length; i++) outlier[i] = (float) r.nextGaussian() * 0.01f;
        outlier[77] = 9f;
        float[] sub = new float[64];
        for (int i = 0; i < sub.length; i++) sub[i] = (i - 32) * Float.MIN_VALUE * 3;
        float[][] groups = {new float[64], outlier, {Float.MAX_VALUE, -Float.MAX_VALUE, 1f, -0f},
                {Float.NaN, 0.5f, -0.25f, Float.intBitsToFloat(0xFFC0_0001)}, sub,
                {Float.POSITIVE_INFINITY, 0.5f, -1f, Float.NEGATIVE_INFINITY}};
        for (Fp8Format f : new Fp8Format[]{Fp8Format.E4M3, Fp8Format.E5M2}) { // the formats the encoder writes
            for (DType sd : new DType[]{DType.F32, DType.BF16}) {
                for (float[] x : groups) {
                    float[] want = new float[1];
                    float[] got = new float[1];
                    float[] decoded = new float[x.length];
                    assertThat(encode(f, x, sd, got, decoded)).as("%s %s %s", f, sd, java.util.Arrays.toString(x))
                            .containsExactly(expected(f, x, sd, want));
                    assertThat(got[0]).isEqualTo(want[0]);
                    for (int i = 0; i < x.length; i++) {
                        byte[] q = expected(f, x, sd, want);
                        assertThat(Float.floatToRawIntBits(decoded[i])).isEqualTo(Float.floatToRawIntBits(f.decode(q[i]) * want[0]));
                    }
                }
            }
        }
        float[] s = new float[1];
        // infinities saturate: the finite values set the scale
        assertThat(encode(Fp8Format.E4M3, new float[]{Float.POSITIVE_INFINITY, 1f}, DType.F32, s, null)).containsExactly(0x7E, 0x7E);
        assertThat(s[0]).isEqualTo(1f / 448f);
        // an all-zero group: scale 1, codes 0
        assertThat(encode(Fp8Format.E4M3, new float[8], DType.F32, s, null)).containsOnly(0);
        assertThat(s[0]).isEqualTo(1f);
    }

    @Test
    void decodingThenEncodingGivesCodesAndF32ScaleBack() {
        Random r = new Random(4);
        for (Fp8Format f : new Fp8Format[]{Fp8Format.E4M3, Fp8Format.E5M2}) { // the formats the encoder writes
            for (int g = 0; g < 300; g++) {
                int n = 1 + r.nextInt(200);
                byte[] codes = new byte[n];
                for (int i = 0; i < n; i++) {
                    int c;
                    do c = r.nextInt(256); while (!Float.isFinite(f.decode(c)));
                    codes[i] = (byte) c;
                }
                codes[r.nextInt(n)] = (byte) (f == Fp8Format.E4M3 ? 0x7E : 0xFB); // the group's max
                float scale = Fp8Encoder.scale(f, (float) Math.exp(r.nextGaussian() * 3), DType.F32);
                float[] x = new float[n];
                for (int i = 0; i < n; i++) x[i] = f.decode(codes[i]) * scale;
                float[] s = new float[1];
                byte[] again = encode(f, x, DType.F32, s, null);
                if (s[0] == scale) assertThat(again).containsExactly(codes);
            }
        }
    }

    @Test
    void theFnuzFormatsAreNotEncoded() {
        for (Fp8Format f : new Fp8Format[]{Fp8Format.E4M3FNUZ, Fp8Format.E5M2FNUZ}) {
            assertThatThrownBy(() -> Fp8Encoder.encode(f, 1f)).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("read, not written");
            assertThatThrownBy(() -> Fp8Encoder.encode(f, new float[4], 0, 4, 1f, new byte[4], 0, null))
                    .isInstanceOf(IllegalArgumentException.class);
        }
    }
}
