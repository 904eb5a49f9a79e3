package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The Vector API encoders must give the scalar encoders' bytes (which the oracle vectors tie
 * to ggml) on any input: weight-like blocks, blocks built to reach every fallback (zero,
 * signed zeros at the extremes, constants, NaN of either sign, infinities, subnormals, huge values),
 * and rows quantized before (exact ties between trial scales), with and without an importance row.
 */
class GgufEncoderParityTest {

    static float[] mixedRows(int rows, int cols, long seed) {
        return mixedRows(rows, cols, seed, true);
    }

    /** {@code bothNaNSigns} false: every NaN positive (see {@link RowEncoder} on rows that mix NaN signs). */
    static float[] mixedRows(int rows, int cols, long seed, boolean bothNaNSigns) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] x = new float[rows * cols];
        for (int i = 0; i < x.length; i++) x[i] = (float) (rnd.nextGaussian() * 0.02);
        // Every 32 values one flavour of trouble, chosen per block.
        for (int b = 0; b < x.length / 32; b++) {
            int at = 32 * b;
            switch (rnd.nextInt(12)) {
                case 0 -> java.util.Arrays.fill(x, at, at + 32, 0f);
                case 1 -> { java.util.Arrays.fill(x, at, at + 32, 0f); x[at + 3] = -0.0f; x[at + 9] = 0.0f; }
                case 2 -> java.util.Arrays.fill(x, at, at + 32, -0.75f);
                case 3 -> x[at + rnd.nextInt(32)] = Float.NaN;
                case 4 -> x[at + rnd.nextInt(32)] = rnd.nextBoolean() ? Float.POSITIVE_INFINITY : Float.NEGATIVE_INFINITY;
                case 5 -> { for (int j = 0; j < 32; j++) x[at + j] = (float) (rnd.nextGaussian() * 1e-39); }
                case 6 -> { for (int j = 0; j < 32; j++) x[at + j] *= 1e36f; }
                case 7 -> { for (int j = 0; j < 32; j++) x[at + j] = Math.abs(x[at + j]); x[at + 5] = -0.0f; }
                case 8 -> { for (int j = 0; j < 32; j++) x[at + j] = -Math.abs(x[at + j]); x[at + 7] = 0.0f; }
                case 9 -> { x[at] = 0.5f; x[at + 1] = -0.5f; }
                // a NaN with its sign bit set: the extremes are taken on the bits, where it sorts low
                case 10 -> x[at + rnd.nextInt(32)] = Float.intBitsToFloat(bothNaNSigns ? 0xFFC0_0000 : 0x7FC0_0000);
                default -> { }
            }
        }
        return x;
    }

    /**
     * Rows that were quantized before (what re-quantizing a dequantized GGUF gives): each
     * 32 values on a grid of 16 levels, a third of the blocks with noise a millionth of the
     * step, and every sixth block on three values only; trial scales then tie exactly and
     * levels sit on rounding boundaries.
     */
    static float[] gridRows(int rows, int cols, long seed) {
        SplittableRandom rnd = new SplittableRandom(seed);
        float[] x = new float[rows * cols];
        for (int b = 0; b < x.length / 32; b++) {
            double step = 0.002 * Math.exp(rnd.nextGaussian() * 0.5);
            double min = -step * rnd.nextInt(16);
            for (int j = 0; j < 32; j++) {
                double v = b % 6 == 5 ? step * (rnd.nextInt(3) - 1) : min + step * rnd.nextInt(16);
                if (b % 3 == 0) v += step * 1e-6 * rnd.nextGaussian();
                x[32 * b + j] = (float) v;
            }
        }
        return x;
    }

    @ParameterizedTest
    @EnumSource(GgufBlockType.class)
    void vectorEncodersGiveTheScalarBytesOnQuantizedRows(GgufBlockType type) {
        RowEncoder[] pair = encoders(type);
        int rows = 8;
        int cols = 1024;
        float[] x = gridRows(rows, cols, 31L * type.ordinal() + 5);
        SplittableRandom rnd = new SplittableRandom(type.ordinal() + 99);
        float[] importance = new float[cols];
        for (int i = 0; i < cols; i++) importance[i] = (float) Math.exp(rnd.nextGaussian());
        assertSameBytes(type, pair, x, rows, cols, importance);
    }

    @ParameterizedTest
    @EnumSource(GgufBlockType.class)
    void vectorEncodersGiveTheScalarBytes(GgufBlockType type) {
        RowEncoder[] pair = encoders(type);
        // 24 super-blocks (whole batches of lane groups), then 15 and 1 (a last batch of three, a
        // group of two lanes groups with the second partly filled, and a lone group)
        for (int[] shape : new int[][] {{6, 1024}, {5, 768}, {1, 256}}) {
            int rows = shape[0];
            int cols = shape[1];
            // the first shape's rows mix NaN signs; the others' (about the lane groups) do not
            float[] x = mixedRows(rows, cols, type.ordinal() * 31L + 7 + (cols == 1024 ? 0 : cols), cols == 1024);
            SplittableRandom rnd = new SplittableRandom(type.ordinal());
            float[] importance = new float[cols];
            for (int i = 0; i < cols; i++) importance[i] = i % 19 == 0 ? 0f : (float) Math.exp(rnd.nextGaussian());
            assertSameBytes(type, pair, x, rows, cols, importance);
        }
    }

    /** The scalar and the Vector API encoder of {@code type}; the test is skipped where there are not two. */
    private static RowEncoder[] encoders(GgufBlockType type) {
        Assumptions.assumeTrue(GgufEncoders.VECTOR, "Vector API not available on this JVM/CPU");
        RowEncoder scalar = GgufEncoders.forType(type, false).orElse(null);
        Assumptions.assumeTrue(scalar != null, type + " has no encoder");
        RowEncoder vector = GgufEncoders.forType(type, true).orElseThrow();
        // the grid i-quants (static encoder objects) and a few others have one path for both
        Assumptions.assumeTrue(vector != scalar, type + " has no Vector API path");
        return new RowEncoder[] {scalar, vector};
    }

    /** Both encoders give the same bytes for the rows, without and with the importance row. */
    private static void assertSameBytes(GgufBlockType type, RowEncoder[] pair, float[] x, int rows, int cols,
                                        float[] importance) {
        int bytes = rows * cols / type.blockElements() * type.blockBytes();
        for (float[] im : new float[][] {null, importance}) {
            byte[] a = new byte[bytes];
            byte[] b = new byte[bytes];
            pair[0].encode(x, 0, a, 0, rows, cols, im);
            pair[1].encode(x, 0, b, 0, rows, cols, im);
            int first = java.util.Arrays.mismatch(a, b);
            assertThat(first).as("%s %s, %d x %d: first differing byte %d (block %d)", type,
                    im == null ? "" : "+imatrix", rows, cols, first, first / type.blockBytes()).isEqualTo(-1);
        }
    }
}
