package io.anamnesis.quant.bnb;

import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The NF4/FP4 encoders against the published formulas, restated here independently of the
 * implementation: bitsandbytes' {@code kQuantizeBlockwise} takes each block's NaN-ignoring
 * absmax, multiplies by its float32 reciprocal and walks {@code dQuantizeNF4} /
 * {@code dQuantizeFP4}, whose NF4 thresholds are the float32 midpoints of the code book and
 * whose FP4 thresholds are the literals below; codes pack high nibble first.
 */
class FourBitEncoderTest {

    /** dQuantizeNF4's tree with its float literals (strictly greater goes up; NaN goes down every time). */
    static int nf4Reference(float x) {
        if (x > 0.03979014977812767f) {
            if (x > 0.3893125355243683f) {
                if (x > 0.6427869200706482f) return x > 0.8614784181118011f ? 0b1111 : 0b1110;
                return x > 0.5016634166240692f ? 0b1101 : 0b1100;
            }
            if (x > 0.2035212516784668f) return x > 0.2920137718319893f ? 0b1011 : 0b1010;
            return x > 0.1202552504837513f ? 0b1001 : 0b1000;
        }
        if (x > -0.33967943489551544f) {
            if (x > -0.13791173323988914f) return x > -0.045525018125772476f ? 0b0111 : 0b0110;
            return x > -0.23460740596055984f ? 0b0101 : 0b0100;
        }
        if (x > -0.6106329262256622f) return x > -0.4599952697753906f ? 0b0011 : 0b0010;
        return x > -0.8480964004993439f ? 0b0001 : 0b0000;
    }

    /** dQuantizeFP4's tree, with this project's rule for -0.0 (sign bit set, code 8). */
    static int fp4Reference(float x) {
        int sign = x < 0 || (x == 0 && 1 / x < 0) ? 0b1000 : 0;
        float a = Math.abs(x);
        int code;
        if (a > 0.29166667f) {
            if (a > 0.583333f) code = a > 0.8333333f ? 0b011 : 0b010;
            else code = a > 0.4166667f ? 0b101 : 0b100;
        } else if (a > 0.0859375f) {
            code = a > 0.20833333f ? 0b111 : 0b110;
        } else {
            code = a > 0.00260417f ? 0b001 : 0b000;
        }
        return code + sign;
    }

    /** Values that probe every decision: each threshold and cell edge with its neighbours, specials, random ones. */
    static List<Float> probes() {
        List<Float> v = new ArrayList<>();
        List<Float> anchors = new ArrayList<>();
        for (float t : FourBitEncoder.NF4_THRESHOLDS) anchors.add(t);
        for (float t : FourBitEncoder.FP4_THRESHOLDS) {
            anchors.add(t);
            anchors.add(-t);
        }
        // the first and last float of each table class (top 16 bits) that holds a threshold
        List<Float> thresholds = new ArrayList<>(anchors);
        for (float t : thresholds) {
            int top = Float.floatToRawIntBits(t) & 0xFFFF_0000;
            anchors.add(Float.intBitsToFloat(top));
            anchors.add(Float.intBitsToFloat(top | 0xFFFF));
        }
        for (float c : Fixtures.NF4) anchors.add(c);
        for (float a : anchors) {
            float x = a;
            float y = a;
            for (int i = 0; i < 40; i++) {
                v.add(x);
                v.add(y);
                x = Math.nextUp(x);
                y = Math.nextDown(y);
            }
        }
        Random r = new Random(42);
        for (int i = 0; i < 200_000; i++) v.add(r.nextFloat() * 2.2f - 1.1f);
        for (float s : new float[]{Float.NaN, Float.POSITIVE_INFINITY, Float.NEGATIVE_INFINITY, 0f, -0f,
                Float.MIN_VALUE, -Float.MIN_VALUE, 1.0000001f, -1.0000001f, 3f, -3f}) {
            v.add(s);
        }
        return v;
    }

    @Test
    void nf4TakesTheCodeOfTheKernelsDecisionTree() {
        for (float v : probes()) {
            assertThat(FourBitEncoder.nf4(v)).as("nf4(%s)", v).isEqualTo(nf4Reference(v));
        }
        // the NaN branch of every comparison is "not greater": the tree ends at code 0
        assertThat(FourBitEncoder.nf4(Float.NaN)).isZero();
        // a value on a threshold takes the lower code
        float t = 0.03979014977812767f;
        assertThat(FourBitEncoder.nf4(t)).isEqualTo(7);
        assertThat(FourBitEncoder.nf4(Math.nextUp(t))).isEqualTo(8);
    }

    @Test
    void nf4ThresholdsAreTheMidpointsOfTheCodeBookWithinAnUlp() {
        // the kernel's literals are decimal midpoints rounded once to float32; the lowest one
        // is an ulp from the float32 sum-and-halve of its neighbours
        for (int c = 0; c < 15; c++) {
            float midpoint = (Fixtures.NF4[c] + Fixtures.NF4[c + 1]) / 2f;
            assertThat(Math.abs(FourBitEncoder.NF4_THRESHOLDS[c] - midpoint)).isLessThanOrEqualTo(Math.ulp(midpoint));
        }
        assertThat(FourBitEncoder.NF4_MAP).containsExactly(Fixtures.NF4);
    }

    @Test
    void fp4TakesTheCodeOfTheKernelsDecisionTreeAndSignedZeroKeepsItsSign() {
        for (float v : probes()) {
            if (Float.isNaN(v)) continue;
            assertThat(FourBitEncoder.fp4(v)).as("fp4(%s)", v).isEqualTo(fp4Reference(v));
        }
        assertThat(FourBitEncoder.fp4(0f)).isEqualTo(0);
        assertThat(FourBitEncoder.fp4(-0f)).isEqualTo(8);
        assertThat(FourBitEncoder.fp4(Float.NaN)).isZero();
        assertThat(FourBitEncoder.fp4(Float.intBitsToFloat(0xFFC0_0000))).as("negative NaN").isZero();
        // the code book as bitsandbytes writes it: code 8 stored as +0.0 (the decoder gives it the sign)
        for (int c = 0; c < 16; c++) assertThat(Float.floatToRawIntBits(FourBitEncoder.FP4_MAP[c]))
                .isEqualTo(Float.floatToRawIntBits(Fixtures.FP4[c]));
    }

    /** The expected packed bytes and absmax of a block, from the reference decisions above. */
    static byte[] expectedPacked(float[] x, int blocksize, boolean fp4, float[] absmaxOut) {
        int[] codes = new int[x.length];
        for (int b = 0; b * blocksize < x.length; b++) {
            float max = 0;
            for (int i = b * blocksize; i < Math.min(x.length, (b + 1) * blocksize); i++) {
                if (!Float.isNaN(x[i])) max = Math.max(max, Math.abs(x[i]));
            }
            absmaxOut[b] = max;
            float inv = 1.0f / max;
            for (int i = b * blocksize; i < Math.min(x.length, (b + 1) * blocksize); i++) {
                codes[i] = fp4 ? fp4Reference(x[i] * inv) : nf4Reference(x[i] * inv);
            }
        }
        int[] padded = codes;
        if (x.length % 2 == 1) {
            padded = java.util.Arrays.copyOf(codes, x.length + 1);
            float inv = 1.0f / absmaxOut[(x.length - 1) / blocksize];
            padded[x.length] = fp4 ? fp4Reference(0f * inv) : nf4Reference(0f * inv);
        }
        return Fixtures.pack(padded);
    }

    static byte[] encode(float[] x, int blocksize, boolean fp4, float[] absmax) {
        FourBitEncoder.blockAbsmax(x, 0, x.length, blocksize, absmax, 0);
        byte[] packed = new byte[(x.length + 1) / 2];
        FourBitEncoder.encode(fp4, x, 0, x.length, blocksize, absmax, 0, packed, 0);
        return packed;
    }

    @Test
    void edgeBlocksEncodeAsTheFormulasSay() {
        int bs = 32;
        List<float[]> blocks = new ArrayList<>();
        blocks.add(new float[bs]);                                    // all zero
        float[] outlier = new float[bs];
        for (int i = 0; i < bs; i++) outlier[i] = (i % 3 - 1) * 0.001f;
        outlier[5] = 1000f;                                           // one outlier
        blocks.add(outlier);
        float[] extremes = new float[bs];
        for (int i = 0; i < bs; i++) extremes[i] = i % 2 == 0 ? Float.MAX_VALUE : -Float.MAX_VALUE;
        blocks.add(extremes);                                         // +-max finite
        float[] withNaN = new float[bs];
        for (int i = 0; i < bs; i++) withNaN[i] = (i - 16) / 16f;
        withNaN[3] = Float.NaN;
        blocks.add(withNaN);                                          // NaN is ignored by absmax
        float[] subnormal = new float[bs];
        for (int i = 0; i < bs; i++) subnormal[i] = (i - 16) * Float.MIN_VALUE;
        blocks.add(subnormal);                                        // subnormals, no flush to zero
        float[] signedZeros = new float[bs];
        for (int i = 0; i < bs; i++) signedZeros[i] = i % 2 == 0 ? -0f : 0f;
        signedZeros[1] = 0.5f;
        blocks.add(signedZeros);
        for (boolean fp4 : new boolean[]{false, true}) {
            for (float[] x : blocks) {
                float[] want = new float[1];
                float[] got = new float[1];
                byte[] expected = expectedPacked(x, bs, fp4, want);
                assertThat(encode(x, bs, fp4, got)).as("%s %s", fp4 ? "fp4" : "nf4", java.util.Arrays.toString(x))
                        .containsExactly(expected);
                assertThat(Float.floatToRawIntBits(got[0])).isEqualTo(Float.floatToRawIntBits(want[0]));
            }
        }
        float[] zeros = new float[bs];
        float[] a = new float[1];
        // all zero: absmax 0, 0 * (1/0) is NaN, code 0 -- NF4 decodes it to -1 * 0 = -0.0
        assertThat(encode(zeros, bs, false, a)).containsOnly((byte) 0x00);
        assertThat(a[0]).isZero();
        // the outlier takes the top code, the small values the zero code
        assertThat(encode(outlier, bs, false, a)[2] & 0xFF).isEqualTo(7 << 4 | 15);
        assertThat(a[0]).isEqualTo(1000f);
        // FP4: -0.0 next to a nonzero absmax is code 8
        byte[] sz = encode(signedZeros, bs, true, a);
        assertThat(sz[0] & 0xFF).isEqualTo(0x8 << 4 | FourBitEncoder.fp4(0.5f / 0.5f));
        assertThat(sz[1] & 0xFF).isEqualTo(0x80);
    }

    @Test
    void packsHighNibbleFirstAndPadsAnOddTailWithTheCodeOfZero() {
        float[] x = {1f, -1f, 0.5f};
        float[] a = new float[1];
        byte[] nf4 = encode(x, 64, false, a);
        assertThat(nf4).containsExactly((byte) (15 << 4), (byte) (nf4Reference(0.5f) << 4 | 7));
        byte[] fp4 = encode(x, 64, true, a);
        assertThat(fp4).containsExactly((byte) (0b0011 << 4 | 0b1011), (byte) (0b0101 << 4));
    }

    @Test
    void decodingThenEncodingGivesTheCodesBack() {
        Random r = new Random(7);
        for (boolean fp4 : new boolean[]{false, true}) {
            for (int bs : new int[]{32, 64, 256, 4096}) {
                int n = 3 * bs + bs / 2 + 1;
                int[] codes = new int[n];
                float[] absmax = new float[(n + bs - 1) / bs];
                for (int b = 0; b < absmax.length; b++) {
                    absmax[b] = (float) Math.exp(r.nextGaussian() * 3);
                    // every block holds its absmax code, as every encoded block does
                    for (int i = b * bs; i < Math.min(n, (b + 1) * bs); i++) codes[i] = r.nextInt(16);
                    codes[b * bs] = fp4 ? (r.nextBoolean() ? 3 : 11) : (r.nextBoolean() ? 15 : 0);
                }
                if (n % 2 == 1) codes = java.util.Arrays.copyOf(codes, n + 1);
                byte[] packed = Fixtures.pack(codes);
                float[] decoded = new float[n];
                FourBitEncoder.decode(packed, 0, n, bs, absmax, 0, FourBit.codeValues(fp4 ? Fixtures.FP4 : Fixtures.NF4, fp4),
                        decoded, 0);
                float[] again = new float[absmax.length];
                byte[] repacked = encode(decoded, bs, fp4, again);
                // the padding nibble is the code of 0 (NF4 7, FP4 0), not what the random codes put there
                if (n % 2 == 1) packed[packed.length - 1] = (byte) (packed[packed.length - 1] & 0xF0 | (fp4 ? 0 : 7));
                assertThat(repacked).as("%s block %d", fp4 ? "fp4" : "nf4", bs).containsExactly(packed);
                assertThat(again).containsExactly(absmax);
            }
        }
    }

    @Test
    void theLossPathDecodesBlocksThatStartInsideAByte() {
        // block size 3: blocks start on odd values too; each value is its nibble's code value times its block's absmax
        Random r = new Random(9);
        int n = 37;
        byte[] packed = new byte[(n + 1) / 2];
        r.nextBytes(packed);
        float[] absmax = new float[(n + 2) / 3];
        for (int b = 0; b < absmax.length; b++) absmax[b] = 0.5f + b;
        float[] values = FourBit.codeValues(Fixtures.NF4, false);
        float[] out = new float[n];
        FourBitEncoder.decode(packed, 0, n, 3, absmax, 0, values, out, 0);
        for (int i = 0; i < n; i++) {
            int code = ((packed[i / 2] & 0xFF) >> (i % 2 == 0 ? 4 : 0)) & 15;
            assertThat(out[i]).as("value %d", i).isEqualTo(values[code] * absmax[i / 3]);
        }
    }

    @Test
    void encodedBytesDecodeWithTheProjectsDecoderToWhatTheLossPathComputes() {
        Random r = new Random(3);
        int n = 1000;
        float[] x = new float[n];
        for (int i = 0; i < n; i++) x[i] = (float) r.nextGaussian() * 0.02f;
        float[] absmax = new float[(n + 63) / 64];
        byte[] packed = encode(x, 64, false, absmax);
        float[] viaLossPath = new float[n];
        FourBitEncoder.decode(packed, 0, n, 64, absmax, 0, FourBit.codeValues(Fixtures.NF4, false), viaLossPath, 0);
        int[] codes = new int[n + 1];
        for (int i = 0; i < n; i++) codes[i] = ((packed[i / 2] & 0xFF) >> (i % 2 == 0 ? 4 : 0)) & 15;
        MemoryArchive a = Fixtures.fourBit("nf4", 64, new long[]{n}, java.util.Arrays.copyOf(codes, n), absmax);
        byte[] recovered = Fixtures.recover(a, io.anamnesis.api.DType.F32);
        assertThat(recovered).containsExactly(Fixtures.encode(viaLossPath, io.anamnesis.api.DType.F32));
    }
}
