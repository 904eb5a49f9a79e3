package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.testing.MemoryArchive;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * compressed-tensors layers built in code as the library lays them out (pack_to_int32,
 * pack_fp4_to_uint8, E8M0 and FP8 scales), with the expected values worked out in the test
 * from the reference's formula, {@code (q - zero) * scale} in float32.
 */
class CompressedTensorsDequantizerTest {
    static final Anamnesis AMN = Anamnesis.of(List.of(), List.of(), List.of(new CompressedTensorsDequantizer()));
    static final String M = "model.layers.0.mlp.down_proj";
    static final String W = M + ".weight";

    static String config(String format, String weights) {
        return "{\"quant_method\": \"compressed-tensors\", \"format\": \"" + format + "\", \"quantization_status\": \"compressed\","
                + " \"ignore\": [\"lm_head\"], \"config_groups\": {\"group_0\": {\"targets\": [\"Linear\"], \"weights\": "
                + weights + ", \"format\": \"" + format + "\"}}}";
    }

    static String intArgs(int bits, boolean symmetric, String strategy, Integer groupSize, String actorder) {
        return "{\"num_bits\": " + bits + ", \"type\": \"int\", \"symmetric\": " + symmetric + ", \"strategy\": \"" + strategy
                + "\", \"group_size\": " + groupSize + ", \"actorder\": " + (actorder == null ? "null" : "\"" + actorder + "\"") + "}";
    }

    /** pack_to_int32 along dim 1: element c of a row at bits c*bits of the row's words, stored as value + 2^(bits-1). */
    static int[] packRows(int[][] q, int bits) {
        int words = (q[0].length * bits + 31) / 32;
        int[] out = new int[q.length * words];
        for (int r = 0; r < q.length; r++) {
            for (int c = 0; c < q[r].length; c++) {
                long field = (q[r][c] + (1 << (bits - 1))) & ((1L << bits) - 1);
                long bit = (long) c * bits;
                int w = (int) (bit / 32);
                int shift = (int) (bit % 32);
                out[r * words + w] |= (int) (field << shift);
                if (shift + bits > 32) out[r * words + w + 1] |= (int) (field >>> (32 - shift));
            }
        }
        return out;
    }

    /** pack_to_int32 along dim 0 (zero points): element r of column g at bits r*bits of that column's words. */
    static int[] packColumns(int[][] z, int bits) {
        int rows = z.length;
        int cols = z[0].length;
        int words = (rows * bits + 31) / 32;
        int[] out = new int[words * cols];
        for (int r = 0; r < rows; r++) {
            for (int g = 0; g < cols; g++) {
                long field = (z[r][g] + (1 << (bits - 1))) & ((1L << bits) - 1);
                long bit = (long) r * bits;
                int w = (int) (bit / 32);
                int shift = (int) (bit % 32);
                out[w * cols + g] |= (int) (field << shift);
                if (shift + bits > 32) out[(w + 1) * cols + g] |= (int) (field >>> (32 - shift));
            }
        }
        return out;
    }

    static int[][] randomInts(SplittableRandom r, int rows, int cols, int bits) {
        int[][] q = new int[rows][cols];
        int lo = -(1 << (bits - 1));
        for (int[] row : q) for (int c = 0; c < cols; c++) row[c] = lo + r.nextInt(1 << bits);
        return q;
    }

    /** BF16 scales with every bit pattern a real scale may have (tiny, large, negative). */
    static int[] bf16Scales(SplittableRandom r, int n) {
        int[] s = new int[n];
        for (int i = 0; i < n; i++) s[i] = Float.floatToRawIntBits((float) (r.nextDouble(1e-4, 0.05) * (r.nextInt(8) == 0 ? -1 : 1))) >>> 16;
        return s;
    }

    static float bf16Value(int bits) {
        return Float.intBitsToFloat(bits << 16);
    }

    static int[] f32(RecoveryPlan plan, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = plan.materialize(name, arena);
            int[] bits = new int[(int) (out.byteSize() / 4)];
            for (int i = 0; i < bits.length; i++) bits[i] = out.get(LittleEndian.I32, 4L * i);
            return bits;
        }
    }

    static short[] bf16(RecoveryPlan plan, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = plan.materialize(name, arena);
            short[] bits = new short[(int) (out.byteSize() / 2)];
            for (int i = 0; i < bits.length; i++) bits[i] = out.get(LittleEndian.I16, 2L * i);
            return bits;
        }
    }

    /** Both targets against one expected F32 matrix: F32 bits exactly, BF16 as their RNE narrowing. */
    static void assertRecovers(MemoryArchive a, float[] expected) {
        int[] got = f32(AMN.plan(a, DType.F32), W);
        assertThat(got).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            assertThat(got[i]).as("F32 element %d: %s", i, expected[i]).isEqualTo(Float.floatToRawIntBits(expected[i]));
        }
        short[] half = bf16(AMN.plan(a, DType.BF16), W);
        for (int i = 0; i < expected.length; i++) {
            assertThat(half[i]).as("BF16 element %d", i).isEqualTo(Formulas.bf16(expected[i]));
        }
    }

    @Test
    void packQuantizedInt4SymmetricGroupsWithPartialLastGroup() {
        // 40 columns in groups of 16: two whole groups and one of 8; 5 int32 words per row
        for (int gs : new int[]{16, 8, 32}) {
            SplittableRandom r = new SplittableRandom(gs);
            int rows = 3, cols = 40, groups = (cols + gs - 1) / gs;
            int[][] q = randomInts(r, rows, cols, 4);
            q[0][0] = -8;
            q[0][1] = 7;
            q[1][3] = 0;
            int[] s = bf16Scales(r, rows * groups);
            MemoryArchive a = new MemoryArchive()
                    .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", gs, null)))
                    .i32(M + ".weight_packed", new long[]{rows, 5}, packRows(q, 4))
                    .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                    .half(M + ".weight_scale", DType.BF16, new long[]{rows, groups}, s);
            float[] expected = new float[rows * cols];
            for (int i = 0; i < rows; i++) {
                for (int c = 0; c < cols; c++) expected[i * cols + c] = (float) q[i][c] * bf16Value(s[i * groups + c / gs]);
            }
            assertRecovers(a, expected);
            RecoveryPlan plan = AMN.plan(a, DType.BF16);
            assertThat(plan.schemeDescriptions()).containsExactly("compressed-tensors pack-quantized int4, group " + gs
                    + ", symmetric (BF16 scales)");
            assertThat(plan.roles()).containsEntry(M + ".weight_packed", Role.QUANTIZED).containsEntry(M + ".weight_scale", Role.SCALE)
                    .containsEntry(M + ".weight_shape", CompressedTensorsDequantizer.SHAPE);
            assertThat(plan.output(W).orElseThrow().shape()).isEqualTo(Shape.of(rows, cols));
        }
    }

    @Test
    void asymmetricZeroPointsArePackedAlongRows() {
        SplittableRandom r = new SplittableRandom(5);
        int rows = 11, cols = 64, gs = 32, groups = 2;   // 11 rows of zero points: two words per column, the last partial
        int[][] q = randomInts(r, rows, cols, 4);
        int[][] z = randomInts(r, rows, groups, 4);
        z[0][0] = -8;
        z[10][1] = 7;
        int[] s = bf16Scales(r, rows * groups);
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, false, "group", gs, null)))
                .i32(M + ".weight_packed", new long[]{rows, 8}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .half(M + ".weight_scale", DType.BF16, new long[]{rows, groups}, s)
                .i32(M + ".weight_zero_point", new long[]{2, groups}, packColumns(z, 4));
        float[] expected = new float[rows * cols];
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < cols; c++) {
                int g = c / gs;
                expected[i * cols + c] = (float) (q[i][c] - z[i][g]) * bf16Value(s[i * groups + g]);
            }
        }
        assertRecovers(a, expected);
        assertThat(AMN.plan(a, DType.F32).schemeDescriptions().getFirst()).contains("asymmetric");
    }

    @Test
    void activationOrderTakesEachColumnsGroupFromGIdx() {
        SplittableRandom r = new SplittableRandom(9);
        int rows = 4, cols = 48, gs = 16, groups = 3;
        int[][] q = randomInts(r, rows, cols, 4);
        int[] gIdx = new int[cols];
        for (int c = 0; c < cols; c++) gIdx[c] = c % groups;   // each group gets 16 columns, interleaved
        int[] s = bf16Scales(r, rows * groups);
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", gs, "group")))
                .i32(M + ".weight_packed", new long[]{rows, 6}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .half(M + ".weight_scale", DType.BF16, new long[]{rows, groups}, s)
                .i32(M + ".weight_g_idx", new long[]{cols}, gIdx);
        float[] expected = new float[rows * cols];
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < cols; c++) expected[i * cols + c] = (float) q[i][c] * bf16Value(s[i * groups + gIdx[c]]);
        }
        assertRecovers(a, expected);
        assertThat(AMN.plan(a, DType.F32).roles()).containsEntry(M + ".weight_g_idx", Role.G_IDX);

        // g_idx holding -1 is "not initialized": the library falls back to column order
        int[] unset = new int[cols];
        java.util.Arrays.fill(unset, -1);
        MemoryArchive b = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", gs, "group")))
                .i32(M + ".weight_packed", new long[]{rows, 6}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .half(M + ".weight_scale", DType.BF16, new long[]{rows, groups}, s)
                .i32(M + ".weight_g_idx", new long[]{cols}, unset);
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < cols; c++) expected[i * cols + c] = (float) q[i][c] * bf16Value(s[i * groups + c / gs]);
        }
        assertRecovers(b, expected);

        // FP8 scales (8-bit codes) under act-order: each column still takes its group's scale
        int[] f8 = new int[rows * groups];
        for (int i = 0; i < f8.length; i++) f8[i] = 0x20 + r.nextInt(0x40);
        MemoryArchive c8 = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", gs, "group")))
                .i32(M + ".weight_packed", new long[]{rows, 6}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .bytes(M + ".weight_scale", DType.F8_E4M3, new long[]{rows, groups}, f8)
                .i32(M + ".weight_g_idx", new long[]{cols}, gIdx);
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < cols; c++) {
                expected[i * cols + c] = (float) q[i][c] * (float) Formulas.e4m3(f8[i * groups + gIdx[c]]);
            }
        }
        assertRecovers(c8, expected);

        int[] outOfRange = gIdx.clone();
        outOfRange[5] = groups;
        MemoryArchive bad = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", gs, "group")))
                .i32(M + ".weight_packed", new long[]{rows, 6}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .half(M + ".weight_scale", DType.BF16, new long[]{rows, groups}, s)
                .i32(M + ".weight_g_idx", new long[]{cols}, outOfRange);
        RecoveryPlan plan = AMN.plan(bad, DType.BF16);
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> plan.materialize(W, arena)).isInstanceOf(MalformedFileException.class)
                    .hasMessageContaining("column 5 is in group 3");
        }
    }

    @Test
    void eightBitAndThreeBitPackingAndChannelAndTensorScales() {
        SplittableRandom r = new SplittableRandom(3);
        int rows = 5, cols = 37;
        // 8 bits per channel, F32 scales; q = field - 128
        int[][] q8 = randomInts(r, rows, cols, 8);
        q8[0][0] = -128;
        q8[0][1] = 127;
        float[] s8 = {0.01f, -0.5f, 3e-5f, 1f, 0.125f};
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(8, true, "channel", null, null)))
                .i32(M + ".weight_packed", new long[]{rows, 10}, packRows(q8, 8))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .f32(M + ".weight_scale", new long[]{rows, 1}, s8);
        float[] expected = new float[rows * cols];
        for (int i = 0; i < rows; i++) for (int c = 0; c < cols; c++) expected[i * cols + c] = (float) q8[i][c] * s8[i];
        assertRecovers(a, expected);
        // 3 bits per tensor: values straddle int32 words (value 10 takes bits 30..32)
        int[][] q3 = randomInts(r, rows, cols, 3);
        MemoryArchive b = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(3, true, "tensor", null, null)))
                .i32(M + ".weight_packed", new long[]{rows, 4}, packRows(q3, 3))
                .i32(M + ".weight_shape", new long[]{2}, rows, cols)
                .f32(M + ".weight_scale", new long[]{1}, 0.375f);
        for (int i = 0; i < rows; i++) for (int c = 0; c < cols; c++) expected[i * cols + c] = (float) q3[i][c] * 0.375f;
        assertRecovers(b, expected);
        assertThat(AMN.plan(b, DType.F32).schemeDescriptions().getFirst()).contains("int3, per-tensor");
    }

    @Test
    void naiveInt8AndFloatQuantizedFp8ArePerElementTimesScale() {
        // int-quantized (naive) int8 per channel with an int8 zero point per channel
        int[] w = {-128, 127, 0, 5, -1, 64};
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("int-quantized", intArgs(8, false, "channel", null, null)))
                .bytes(W, DType.I8, new long[]{2, 3}, w)
                .half(M + ".weight_scale", DType.BF16, new long[]{2, 1}, 0x3C00, 0xBF80)   // 2^-7, -1
                .bytes(M + ".weight_zero_point", DType.I8, new long[]{2, 1}, 3, -2);
        assertRecovers(a, new float[]{(-128 - 3) * 0x1p-7f, (127 - 3) * 0x1p-7f, (0 - 3) * 0x1p-7f,
                (5 + 2) * -1f, (-1 + 2) * -1f, (64 + 2) * -1f});

        // float-quantized FP8 E4M3 per channel: 1.0, -0.0, 448, the smallest subnormal, NaN (0x7F), 1.5
        int[] codes = {0x38, 0x80, 0x7E, 0x01, 0x7F, 0x3C};
        MemoryArchive b = new MemoryArchive()
                .meta("quantization_config", config("float-quantized",
                        "{\"num_bits\": 8, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"channel\"}"))
                .bytes(W, DType.F8_E4M3, new long[]{2, 3}, codes)
                .half(M + ".weight_scale", DType.BF16, new long[]{2, 1}, 0x3E80, 0x4040);   // 0.25, 3
        float[] expected = new float[6];
        for (int i = 0; i < 6; i++) expected[i] = (float) Formulas.e4m3(codes[i]) * (i < 3 ? 0.25f : 3f);
        int[] got = f32(AMN.plan(b, DType.F32), W);
        for (int i = 0; i < 6; i++) {
            if (Float.isNaN(expected[i])) assertThat(Float.isNaN(Float.intBitsToFloat(got[i]))).isTrue();
            else assertThat(got[i]).as("element %d", i).isEqualTo(Float.floatToRawIntBits(expected[i]));
        }
        assertThat(got[1]).isEqualTo(0x8000_0000);   // -0.0 x 0.25 keeps its sign
        assertThat(AMN.plan(b, DType.F32).schemeDescriptions())
                .containsExactly("compressed-tensors float-quantized FP8 E4M3, per-channel (BF16 scales)");
    }

    /** pack_fp4_to_uint8: element 2j in the low nibble of byte j, 2j+1 in the high one. */
    static int[] packFp4(int[][] codes) {
        int[] out = new int[codes.length * codes[0].length / 2];
        int n = 0;
        for (int[] row : codes) for (int j = 0; j < row.length; j += 2) out[n++] = row[j] | (row[j + 1] << 4);
        return out;
    }

    @Test
    void nvfp4DividesEachFp8ScaleByTheGlobalScaleOnce() {
        SplittableRandom r = new SplittableRandom(16);
        int rows = 3, cols = 64, groups = 4;
        int[][] codes = new int[rows][cols];
        for (int[] row : codes) for (int c = 0; c < cols; c++) row[c] = r.nextInt(16);
        codes[0][0] = 8;    // -0.0
        codes[0][1] = 15;   // -6
        codes[0][2] = 7;    // 6
        int[] scaleCodes = new int[rows * groups];
        for (int i = 0; i < scaleCodes.length; i++) scaleCodes[i] = 0x30 + r.nextInt(0x40);   // normal E4M3 values
        scaleCodes[5] = 0x01;   // a subnormal scale
        float global = 2688f / 0.1234f;   // 448 x 6 / amax, generate_gparam's choice: a large number
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("nvfp4-pack-quantized",
                        "{\"num_bits\": 4, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"tensor_group\", \"group_size\": 16}"))
                .f32(M + ".weight_global_scale", new long[]{1}, global)
                .bytes(M + ".weight_packed", DType.U8, new long[]{rows, cols / 2}, packFp4(codes))
                .bytes(M + ".weight_scale", DType.F8_E4M3, new long[]{rows, groups}, scaleCodes);
        float[] expected = new float[rows * cols];
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < cols; c++) {
                float effective = (float) Formulas.e4m3(scaleCodes[i * groups + c / 16]) / global;   // rounded once
                expected[i * cols + c] = (float) Formulas.e2m1(codes[i][c]) * effective;        // and once more
            }
        }
        assertRecovers(a, expected);
        assertThat(f32(AMN.plan(a, DType.F32), W)[0]).isEqualTo(0x8000_0000);
        RecoveryPlan plan = AMN.plan(a, DType.F32);
        assertThat(plan.roles()).containsEntry(M + ".weight_global_scale", CompressedTensorsDequantizer.GLOBAL_SCALE);
        assertThat(plan.schemeDescriptions()).containsExactly(
                "compressed-tensors nvfp4-pack-quantized FP4 E2M1, group 16 (F8_E4M3 scales, global scale)");
    }

    @Test
    void mxfp4ScalesArePowersOfTwoAndTwoFiftyFiveIsNan() {
        int rows = 2, cols = 64, groups = 2;
        int[][] codes = new int[rows][cols];
        for (int i = 0; i < rows; i++) for (int c = 0; c < cols; c++) codes[i][c] = (c * 7 + i) & 15;
        int[] e8m0 = {127, 0, 254, 255};   // 1, 2^-127 (products go subnormal), 2^127 (6 x that overflows), NaN
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("mxfp4-pack-quantized",
                        "{\"num_bits\": 4, \"type\": \"float\", \"symmetric\": true, \"strategy\": \"group\", \"group_size\": 32}"))
                .bytes(M + ".weight_packed", DType.U8, new long[]{rows, cols / 2}, packFp4(codes))
                .bytes(M + ".weight_scale", DType.U8, new long[]{rows, groups}, e8m0);
        float[] expected = new float[rows * cols];
        for (int i = 0; i < rows; i++) {
            for (int c = 0; c < cols; c++) {
                expected[i * cols + c] = (float) (Formulas.e2m1(codes[i][c]) * Formulas.e8m0(e8m0[i * groups + c / 32]));
            }
        }
        int[] got = f32(AMN.plan(a, DType.F32), W);
        for (int i = 0; i < expected.length; i++) {
            if (Float.isNaN(expected[i])) assertThat(Float.isNaN(Float.intBitsToFloat(got[i]))).as("element %d", i).isTrue();
            else assertThat(got[i]).as("element %d", i).isEqualTo(Float.floatToRawIntBits(expected[i]));
        }
        // row 0, column 33: code 7 (6.0) under 2^-127 is the F32 subnormal 3 x 2^-126
        assertThat(Float.intBitsToFloat(got[33])).isEqualTo(3 * 0x1p-126f);
        // row 1, column 10: code 7 (6.0) under 2^127 overflows
        assertThat(Float.intBitsToFloat(got[cols + 10])).isEqualTo(Float.POSITIVE_INFINITY);
    }

    @Test
    void anyChunkOfRowsGivesTheSameBytesAsTheWhole() {
        SplittableRandom r = new SplittableRandom(21);
        int rows = 9, cols = 128, gs = 32, groups = 4;
        int[][] q = randomInts(r, rows, cols, 4);
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", gs, null)))
                .i32(M + ".weight_packed", new long[]{rows, 16}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, rows, cols)
                .half(M + ".weight_scale", DType.BF16, new long[]{rows, groups}, bf16Scales(r, rows * groups));
        for (DType t : new DType[]{DType.F32, DType.BF16, DType.F16}) {
            RecoveryPlan plan = AMN.plan(a, t);
            int width = t.equals(DType.F32) ? 4 : 2;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment whole = plan.materialize(W, arena);
                MemorySegment pieces = arena.allocate(whole.byteSize());
                ChunkFiller filler = plan.output(W).orElseThrow().producer().open(arena);
                for (int first = 0, n = 1; first < rows; first += n, n++) {
                    int count = Math.min(n, rows - first);
                    filler.fill((long) first * cols, (long) count * cols,
                            pieces.asSlice((long) first * cols * width, (long) count * cols * width));
                }
                assertThat(pieces.mismatch(whole)).as(t.name()).isEqualTo(-1L);
            }
            assertThat(plan.output(W).orElseThrow().granule()).isEqualTo(cols);
        }
    }

    @Test
    void configFromConfigJsonBesideTheFileAndIgnoredModules(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("config.json"), "{\"quantization_config\": " + config("pack-quantized",
                intArgs(4, true, "group", 8, null)).replace("[\"lm_head\"]", "[\"re:.*self_attn.*\"]") + "}");
        int[][] q = {{1, 2, 3, 4, 5, 6, 7, -8}};
        MemoryArchive a = new MemoryArchive().at(dir.resolve("model.safetensors"))
                .i32(M + ".weight_packed", new long[]{1, 1}, packRows(q, 4))
                .i64(M + ".weight_shape", new long[]{2}, 1, 8)
                .f32(M + ".weight_scale", new long[]{1, 1}, 0.5f)
                // ignored: left as stored, not claimed
                .i32("model.layers.0.self_attn.o_proj.weight_packed", new long[]{1, 1}, 0)
                .f32("model.layers.0.self_attn.o_proj.weight_scale", new long[]{1, 1}, 1f);
        RecoveryPlan plan = AMN.plan(a, DType.F32);
        assertThat(f32(plan, W)).containsExactly(b(0.5f), b(1f), b(1.5f), b(2f), b(2.5f), b(3f), b(3.5f), b(-4f));
        assertThat(plan.roles()).containsEntry("model.layers.0.self_attn.o_proj.weight_packed", Role.PASSTHROUGH);
    }

    static int b(float f) {
        return Float.floatToRawIntBits(f);
    }

    @Test
    void refusalsNameWhatIsWrongFromTheHeaderAlone() {
        int[] packed = new int[64 * 60];
        // weight_packed too short for weight_shape (the corpus' reject case): malformed
        MemoryArchive shortPacked = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{64, 60}, packed)
                .i64(M + ".weight_shape", new long[]{2}, 64, 512)
                .half(M + ".weight_scale", DType.BF16, new long[]{64, 4}, new int[256]);
        assertThatThrownBy(() -> AMN.plan(shortPacked, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(M + ".weight_packed").hasMessageContaining("64 int32 words per row");
        // an unknown format: unsupported, naming it
        MemoryArchive unknown = new MemoryArchive()
                .meta("quantization_config", config("int3-lattice-quantized", intArgs(4, true, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{1, 1}, 0)
                .f32(M + ".weight_scale", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> AMN.plan(unknown, DType.BF16)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("'int3-lattice-quantized'");
        // scales that do not fit the strategy
        MemoryArchive scales = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{2, 32}, new int[64])
                .i64(M + ".weight_shape", new long[]{2}, 2, 256)
                .f32(M + ".weight_scale", new long[]{2, 3}, new float[6]);
        assertThatThrownBy(() -> AMN.plan(scales, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("expected [2, 2] for groups of 128");
        // zero points that do not fit the scales
        MemoryArchive zeros = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, false, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{2, 32}, new int[64])
                .i64(M + ".weight_shape", new long[]{2}, 2, 256)
                .f32(M + ".weight_scale", new long[]{2, 2}, new float[4])
                .i32(M + ".weight_zero_point", new long[]{3, 2}, new int[6]);
        assertThatThrownBy(() -> AMN.plan(zeros, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(M + ".weight_zero_point");
        // a negative weight_shape, a missing one
        MemoryArchive negative = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{1, 1}, 0)
                .i64(M + ".weight_shape", new long[]{2}, 1, -8)
                .f32(M + ".weight_scale", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> AMN.plan(negative, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("negative");
        MemoryArchive noShape = new MemoryArchive()
                .meta("quantization_config", config("pack-quantized", intArgs(4, true, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{1, 1}, 0)
                .f32(M + ".weight_scale", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> AMN.plan(noShape, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("weight_shape");
        // sparse and Marlin layouts are known by name and refused
        MemoryArchive sparse = new MemoryArchive()
                .meta("quantization_config", config("marlin-24", intArgs(4, true, "group", 128, null)))
                .i32(M + ".weight_packed", new long[]{1, 1}, 0)
                .f32(M + ".weight_scale", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> AMN.plan(sparse, DType.BF16)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("marlin-24");
    }

    @Test
    void aPatternThatBacktracksForEverIsRefused() {
        String evil = config("pack-quantized", intArgs(4, true, "group", 8, null))
                .replace("[\"lm_head\"]", "[\"re:(.*a){12}b\"]");
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", evil)
                .i32("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.weight_packed", new long[]{1, 1}, 0)
                .f32("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.weight_scale", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> new CompressedTensorsDequantizer().claim(new ClaimContext(a, ParseLimits.defaults())))
                .isInstanceOf(LimitExceededException.class);
    }

    @Test
    void otherMethodsAndPlainFilesAreNotClaimed() {
        MemoryArchive gptq = new MemoryArchive()
                .meta("quantization_config", "{\"quant_method\": \"gptq\"}")
                .i32(M + ".weight_packed", new long[]{1, 1}, 0)
                .f32(M + ".weight_scale", new long[]{1, 1}, 1f);
        assertThat(new CompressedTensorsDequantizer().claim(new ClaimContext(gptq, ParseLimits.defaults()))).isEmpty();
        MemoryArchive plain = new MemoryArchive().f32("norm.weight", new long[]{2}, 1f, 2f);
        assertThat(new CompressedTensorsDequantizer().claim(new ClaimContext(plain, ParseLimits.defaults()))).isEmpty();
    }
}
