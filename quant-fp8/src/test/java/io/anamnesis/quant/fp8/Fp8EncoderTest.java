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
 * FP8 encoding against the format definitions (OCP FP8; AMD's FNUZ variants), worked out here
 * by brute force over the decode table: the code of a value is the finite code nearest to it
 * (a tie goes to the even code), past the largest finite it saturates, NaN is the format's
 * NaN (with the value's sign for E4M3/E5M2, the one {@code 0x80} for FNUZ, whose zero has no
 * sign); codes divide by the stored scale in float32 ({@code x / s}).
 */
class Fp8EncoderTest {

    static final Fp8Format[] ALL = Fp8Format.values();

    /** The largest finite value, from the decode table (not from the encoder). */
    static float max(Fp8Format f) {
        float max = 0;
        for (int c = 0; c < 0x80; c++) if (Float.isFinite(f.decode(c))) max = Math.max(max, f.decode(c));
        return max;
    }

    static boolean fnuz(Fp8Format f) {
        return f == Fp8Format.E4M3FNUZ || f == Fp8Format.E5M2FNUZ;
    }

    /** The nearest finite code by exhaustive search over the format's grid (exact in double). */
    static int nearest(Fp8Format f, float v) {
        int sign = Float.floatToRawIntBits(v) < 0 ? 0x80 : 0;
        if (Float.isNaN(v)) return fnuz(f) ? 0x80 : sign | 0x7F;
        // past the largest finite value (infinity included): the largest finite code
        double a = Math.min(Math.abs((double) v), max(f));
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
        // FNUZ has no -0: 0x80 is its NaN
        return best == 0 && fnuz(f) ? 0 : sign | best;
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
        float max = max(f);
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
        float s = amax == 0 ? 1f : amax / max(f);
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
        for (Fp8Format f : ALL) {
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
        // an all-zero group: scale 1, codes 0 (for FNUZ too, -0 included)
        for (Fp8Format f : ALL) {
            assertThat(encode(f, new float[8], DType.F32, s, null)).containsOnly(0);
            assertThat(s[0]).isEqualTo(1f);
        }
        assertThat(encode(Fp8Format.E4M3FNUZ, new float[]{-0f, 0f, -0f}, DType.F32, s, null)).containsOnly(0);
        // FNUZ: the finite values set the scale (amax / 240), NaN is 0x80, infinities saturate
        assertThat(encode(Fp8Format.E4M3FNUZ, new float[]{Float.NEGATIVE_INFINITY, 3f, Float.NaN, -1e-9f}, DType.F32, s, null))
                .containsExactly(0xFF, 0x7F, 0x80, 0x00);
        assertThat(s[0]).isEqualTo(3f / 240f);
    }

    @Test
    void decodingThenEncodingGivesCodesAndF32ScaleBack() {
        Random r = new Random(4);
        for (Fp8Format f : ALL) {
            for (int g = 0; g < 300; g++) {
                int n = 1 + r.nextInt(200);
                byte[] codes = new byte[n];
                for (int i = 0; i < n; i++) {
                    int c;
                    do c = r.nextInt(256); while (!Float.isFinite(f.decode(c)));
                    codes[i] = (byte) c;
                }
                codes[r.nextInt(n)] = (byte) (f == Fp8Format.E4M3 ? 0x7E : f == Fp8Format.E5M2 ? 0xFB : 0xFF); // the group's max
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
    void fnuzIsTheNearestFiniteCodeTiesToEvenSaturatingWithOneNanAndNoNegativeZero() {
        for (Fp8Format f : new Fp8Format[]{Fp8Format.E4M3FNUZ, Fp8Format.E5M2FNUZ}) {
            for (float v : probes(f)) {
                assertThat(Fp8Encoder.encode(f, v)).as("%s(%s)", f, v).isEqualTo(nearest(f, v));
            }
        }
    }

    /** Value and expected code, the codes worked out by hand from the bit layouts. */
    private static void codes(Fp8Format f, float... valueThenCode) {
        for (int i = 0; i < valueThenCode.length; i += 2) {
            float v = valueThenCode[i];
            int want = (int) valueThenCode[i + 1];
            assertThat(Fp8Encoder.encode(f, v)).as("%s(%s)", f, v).isEqualTo(want);
            // the one-value encoder and the array encoders agree
            byte[] out = new byte[1];
            Fp8Encoder.encodeScalar(f, new float[]{v}, 0, 1, 1f, out, 0, null);
            assertThat(out[0] & 0xFF).as("%s array(%s)", f, v).isEqualTo(want);
        }
    }

    @Test
    void e4m3fnuzEdgeValues() {
        // bias 8, 1.4.3: 0x7F = 1.875 x 2^7 = 240, 0x7E = 224, 0x08 = 2^-7, 0x01 = 2^-10
        codes(Fp8Format.E4M3FNUZ,
                240f, 0x7F, -240f, 0xFF,                       // +-max
                241f, 0x7F, 1e9f, 0x7F, -300f, 0xFF,            // above max: saturates
                Float.POSITIVE_INFINITY, 0x7F, Float.NEGATIVE_INFINITY, 0xFF,
                232f, 0x7E, Math.nextUp(232f), 0x7F,           // 224 | 240: the tie goes to the even 0x7E
                1.0625f, 0x40, 1.1875f, 0x42, -1.0625f, 0xC0,  // ties between 1, 1.125, 1.25: even mantissas
                1f, 0x40, -1f, 0xC0, 0.5f, 0x38,
                0x1p-7f, 0x08, 0x1.cp-8f, 0x07,                // smallest normal; the largest subnormal 7 x 2^-10
                0x1p-10f, 0x01, 0x3p-10f, 0x03, -0x1p-10f, 0x81,
                0x1.8p-10f, 0x02, 0x1.4p-9f, 0x02,             // 1.5 and 2.5 steps: ties to 2
                0x1p-11f, 0x00, Math.nextUp(0x1p-11f), 0x01,   // half the smallest subnormal rounds to 0
                -0x1p-11f, 0x00, -0x1p-12f, 0x00, -Float.MIN_VALUE, 0x00, -0f, 0x00, 0f, 0x00, // never 0x80
                Float.NaN, 0x80, Float.intBitsToFloat(0xFFC0_0000), 0x80, Float.intBitsToFloat(0x7F80_0001), 0x80);
    }

    @Test
    void e5m2fnuzEdgeValues() {
        // bias 16, 1.5.2: 0x7F = 1.75 x 2^15 = 57344, 0x7E = 49152, 0x04 = 2^-15, 0x01 = 2^-17
        codes(Fp8Format.E5M2FNUZ,
                57344f, 0x7F, -57344f, 0xFF,
                61440f, 0x7F, 65536f, 0x7F, 1e30f, 0x7F, -1e30f, 0xFF,
                Float.POSITIVE_INFINITY, 0x7F, Float.NEGATIVE_INFINITY, 0xFF,
                53248f, 0x7E, Math.nextUp(53248f), 0x7F,       // 49152 | 57344: to the even 0x7E
                1.125f, 0x40, 1.375f, 0x42, -1.375f, 0xC2,      // ties between 1, 1.25, 1.5
                1f, 0x40, 2f, 0x44, 0.5f, 0x3C,
                0x1p-15f, 0x04, 0x3p-17f, 0x03,
                0x1p-17f, 0x01, -0x1p-17f, 0x81, 0x1.8p-17f, 0x02, 0x1.4p-16f, 0x02,
                0x1p-18f, 0x00, Math.nextUp(0x1p-18f), 0x01,
                -0x1p-18f, 0x00, -0x1p-30f, 0x00, -0f, 0x00, 0f, 0x00,
                Float.NaN, 0x80, Float.intBitsToFloat(0xFFC0_0000), 0x80);
    }

    @Test
    void e4m3AndE5m2KeepTheirSignedZeroAndNans() {
        codes(Fp8Format.E4M3, -0x1p-11f, 0x80, -0f, 0x80, Float.intBitsToFloat(0xFFC0_0000), 0xFF, 464f, 0x7E);
        codes(Fp8Format.E5M2, -0x1p-18f, 0x80, -0f, 0x80, Float.intBitsToFloat(0xFFC0_0000), 0xFF, 61440f, 0x7B);
    }

    @Test
    void vllmsByteFixKeepsEveryNumberAtHalfItsValueAndNoNegativeZero() {
        for (int c = 0; c < 256; c++) {
            int fnuz = Fp8Encoder.e4m3ToFnuz(c);
            float e4m3 = Fp8Format.E4M3.decode(c);
            if (Float.isNaN(e4m3)) {
                assertThat(fnuz).as("E4M3 NaN 0x%02x", c).isEqualTo(0x80);
            } else if (c == 0x80) {
                assertThat(fnuz).as("E4M3 -0").isZero();
            } else {
                // the bits stay: read as E4M3FNUZ they are worth half, which the doubled scale makes up
                assertThat(fnuz).isEqualTo(c);
                assertThat(Fp8Format.E4M3FNUZ.decode(fnuz)).as("0x%02x", c).isEqualTo(e4m3 / 2);
            }
        }
    }

    @Test
    void maxFiniteIsTheFormatsLargestNumber() {
        assertThat(Fp8Encoder.maxFinite(Fp8Format.E4M3)).isEqualTo(448f);
        assertThat(Fp8Encoder.maxFinite(Fp8Format.E5M2)).isEqualTo(57344f);
        assertThat(Fp8Encoder.maxFinite(Fp8Format.E4M3FNUZ)).isEqualTo(240f);
        assertThat(Fp8Encoder.maxFinite(Fp8Format.E5M2FNUZ)).isEqualTo(57344f);
        float amax = 0.0731f;
        assertThat(Fp8Encoder.scale(Fp8Format.E4M3FNUZ, amax, DType.F32)).isEqualTo(amax / 240f);
        assertThat(Fp8Encoder.scale(Fp8Format.E5M2FNUZ, amax, DType.BF16)).isEqualTo(Floats.bf16ToF32(Floats.f32ToBf16(amax / 57344f)));
    }

    @Test
    void everyGridValueEncodesToItsCodeAndDecodesBackExactly() {
        for (Fp8Format f : ALL) {
            // every finite code, each times a scale that is a power of two, so x / s is exact
            List<Integer> finite = new ArrayList<>();
            for (int c = 0; c < 256; c++) if (Float.isFinite(f.decode(c))) finite.add(c);
            float scale = 0x1p-9f;
            float[] x = new float[finite.size()];
            for (int i = 0; i < x.length; i++) x[i] = f.decode(finite.get(i)) * scale;
            byte[] codes = new byte[x.length];
            float[] decoded = new float[x.length];
            Fp8Encoder.encode(f, x, 0, x.length, scale, codes, 0, decoded);
            // the group's scale is the one chosen above: its amax is the format's max times it
            assertThat(Fp8Encoder.scale(f, Fp8Encoder.finiteAbsmax(x, 0, x.length), DType.F32)).isEqualTo(scale);
            try (java.lang.foreign.Arena arena = java.lang.foreign.Arena.ofConfined()) {
                java.lang.foreign.MemorySegment in = arena.allocate(codes.length);
                java.lang.foreign.MemorySegment.copy(codes, 0, in, java.lang.foreign.ValueLayout.JAVA_BYTE, 0, codes.length);
                java.lang.foreign.MemorySegment back = arena.allocate(4L * codes.length);
                Fp8Kernels.dequantize(Fp8Kernels.Impl.SCALAR, f, DType.F32, in, 0, scale, back, 0, codes.length);
                for (int i = 0; i < x.length; i++) {
                    int c = finite.get(i);
                    // FNUZ has no -0; every other finite code comes back as itself
                    assertThat(codes[i] & 0xFF).as("%s code 0x%02x", f, c).isEqualTo(c);
                    assertThat(Float.floatToRawIntBits(back.get(io.anamnesis.api.numeric.LittleEndian.F32, 4L * i)))
                            .as("%s 0x%02x decoded", f, c).isEqualTo(Float.floatToRawIntBits(x[i]));
                    assertThat(Float.floatToRawIntBits(decoded[i])).isEqualTo(Float.floatToRawIntBits(x[i]));
                }
            }
            // and any value encodes to a code whose value is the grid value nearest to it
            Random r = new Random(5);
            for (int i = 0; i < 20_000; i++) {
                float v = (float) (r.nextGaussian() * Math.pow(2, r.nextInt(30) - 15));
                int c = Fp8Encoder.encode(f, v);
                assertThat(f.decode(c)).as("%s(%s)", f, v).isEqualTo(f.decode(nearest(f, v)));
            }
        }
    }
}
