package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * gpt-oss's packed experts as the converter lays them out: the MXFP4 block re-laid from
 * transformers' nibble order into ggml's, checked by decoding both layouts as each format's
 * description says (not through the code under test), and the dense experts split and
 * transposed, checked element by element against the index arithmetic of
 * {@code w.transpose(-1, -2)[:, offset::step, :]}.
 */
class PackedExpertTensorsTest {
    /** FP4 E2M1 codes 0..15 (OCP MX spec), the value a code stands for before its block's scale. */
    private static final float[] E2M1 = {0f, 0.5f, 1f, 1.5f, 2f, 3f, 4f, 6f, -0f, -0.5f, -1f, -1.5f, -2f, -3f, -4f, -6f};

    /**
     * transformers' {@code convert_moe_packed_tensors}: value {@code 2j} of a block is the low
     * nibble of byte {@code j}, value {@code 2j + 1} its high nibble, times 2^(scale - 127).
     */
    private static float[] transformersValues(byte[] block16, int scale) {
        float[] v = new float[32];
        for (int j = 0; j < 16; j++) {
            v[2 * j] = Math.scalb(E2M1[block16[j] & 0xF], scale - 127);
            v[2 * j + 1] = Math.scalb(E2M1[(block16[j] >> 4) & 0xF], scale - 127);
        }
        return v;
    }

    /**
     * ggml's {@code dequantize_row_mxfp4}: the block's first byte is the E8M0 scale; value
     * {@code j} is the low nibble of byte {@code 1 + j}, value {@code j + 16} its high nibble,
     * each {@code kvalues_mxfp4[code] * 2^(e - 127) / 2} ({@code kvalues} being E2M1 doubled).
     */
    private static float[] ggmlValues(byte[] block17) {
        int e = block17[0] & 0xFF;
        float[] v = new float[32];
        for (int j = 0; j < 16; j++) {
            v[j] = Math.scalb(2 * E2M1[block17[1 + j] & 0xF], e - 127) / 2;
            v[j + 16] = Math.scalb(2 * E2M1[(block17[1 + j] >> 4) & 0xF], e - 127) / 2;
        }
        return v;
    }

    @Test
    void mxfp4BlocksKeepEveryValueInGgmlsLayout() {
        Random random = new Random(7);
        int groups = 5;
        byte[] hf = new byte[16 * groups], scales = new byte[groups], out = new byte[17 * groups];
        random.nextBytes(hf);
        for (int g = 0; g < groups; g++) scales[g] = (byte) (110 + random.nextInt(30));
        // a block of every code in order, so that a wrong nibble order cannot hide behind repeats
        for (int j = 0; j < 16; j++) hf[j] = (byte) ((2 * j % 16) | ((2 * j + 1) % 16) << 4);
        PackedExpertTensors.ggmlBlocks(hf, scales, groups, out);
        for (int g = 0; g < groups; g++) {
            byte[] in = java.util.Arrays.copyOfRange(hf, 16 * g, 16 * g + 16);
            byte[] ggml = java.util.Arrays.copyOfRange(out, 17 * g, 17 * g + 17);
            assertThat(ggml[0]).as("the scale byte first").isEqualTo(scales[g]);
            float[] want = transformersValues(in, scales[g] & 0xFF), got = ggmlValues(ggml);
            for (int k = 0; k < 32; k++) {
                assertThat(Float.floatToRawIntBits(got[k])).as("block %d value %d", g, k).isEqualTo(Float.floatToRawIntBits(want[k]));
            }
        }
    }

    /** A dense F32 tensor of {@code shape} holding {@code values}, read through its planned producer. */
    private static DenseTensor dense(String name, Shape shape, float[] values) {
        PlannedTensor p = new PlannedTensor(name, DType.F32, shape, 1, arena -> (first, count, dest) ->
                MemorySegment.copy(values, (int) first, dest, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, (int) count));
        return new DenseTensor(name, shape, DType.F32, Optional.empty(), p, Optional.of(p), false);
    }

    /** Every value of {@code t}, produced in chunks of {@code chunkRows} rows. */
    private static float[] all(DenseTensor t, long chunkRows) {
        PlannedTensor p = t.values().orElseThrow();
        long row = t.shape().lastDim(), n = t.elementCount();
        float[] out = new float[(int) n];
        try (Arena arena = Arena.ofConfined()) {
            var filler = p.producer().open(arena);
            MemorySegment buf = arena.allocate(4 * n);
            for (long first = 0; first < n; first += chunkRows * row) {
                long count = Math.min(chunkRows * row, n - first);
                filler.fill(first, count, buf.asSlice(0, 4 * count));
                MemorySegment.copy(buf, ValueLayout.JAVA_FLOAT_UNALIGNED, 0, out, (int) first, (int) count);
            }
        }
        return out;
    }

    @Test
    void gateAndUpAreTheEvenAndOddColumnsEachExpertTransposed() {
        int experts = 3, in = 5, cols = 2 * 70; // 70 output rows each: more than one band of 64
        float[] w = new float[experts * in * cols];
        for (int i = 0; i < w.length; i++) w[i] = i;
        DenseTensor gateUp = dense("gate_up_proj", Shape.of(experts, in, cols), w);
        for (int offset = 0; offset < 2; offset++) {
            DenseTensor t = PackedExpertTensors.transposed(gateUp, "x", 2, offset);
            assertThat(t.shape()).isEqualTo(Shape.of(experts, cols / 2, in));
            for (long chunk : new long[]{1, 7, 1000}) {
                float[] got = all(t, chunk);
                for (int e = 0; e < experts; e++) {
                    for (int j = 0; j < cols / 2; j++) {
                        for (int i = 0; i < in; i++) {
                            float want = w[(e * in + i) * cols + offset + 2 * j];
                            assertThat(got[(e * (cols / 2) + j) * in + i]).as("e %d j %d i %d", e, j, i).isEqualTo(want);
                        }
                    }
                }
            }
        }
    }

    /** More source rows than one step reads (4096): each output row is written in pieces. */
    @Test
    void longColumnsAreTransposedInPieces() {
        int in = 5000, cols = 4;
        float[] w = new float[2 * in * cols];
        for (int i = 0; i < w.length; i++) w[i] = i;
        DenseTensor t = PackedExpertTensors.transposed(dense("gate_up_proj", Shape.of(2, in, cols), w), "x", 2, 1);
        float[] got = all(t, 1);
        for (int e = 0; e < 2; e++) {
            for (int j = 0; j < cols / 2; j++) {
                for (int i = 0; i < in; i++) {
                    assertThat(got[(e * (cols / 2) + j) * in + i]).as("e %d j %d i %d", e, j, i).isEqualTo(w[(e * in + i) * cols + 1 + 2 * j]);
                }
            }
        }
    }

    @Test
    void downIsEachExpertTransposed() {
        float[] w = new float[2 * 3 * 4];
        for (int i = 0; i < w.length; i++) w[i] = 100 + i;
        float[] got = all(PackedExpertTensors.transposed(dense("down_proj", Shape.of(2, 3, 4), w), "x", 1, 0), 2);
        // expert 0 [[100 101 102 103] [104 ..] [108 ..]] transposed: rows (100 104 108), (101 105 109), ...
        assertThat(got).startsWith(100f, 104f, 108f, 101f, 105f, 109f, 102f, 106f, 110f, 103f, 107f, 111f, 112f, 116f, 120f);
    }

    @Test
    void biasesSplitIntoEvenAndOddColumns() {
        float[] b = {0, 1, 2, 3, 4, 5, 10, 11, 12, 13, 14, 15};
        DenseTensor bias = dense("gate_up_proj_bias", Shape.of(2, 6), b);
        assertThat(all(PackedExpertTensors.columns(bias, "g", 2, 0), 1)).containsExactly(0f, 2f, 4f, 10f, 12f, 14f);
        assertThat(all(PackedExpertTensors.columns(bias, "u", 2, 1), 1)).containsExactly(1f, 3f, 5f, 11f, 13f, 15f);
    }
}
