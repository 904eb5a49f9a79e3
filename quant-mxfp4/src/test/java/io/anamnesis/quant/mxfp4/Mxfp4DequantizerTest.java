package io.anamnesis.quant.mxfp4;

import io.anamnesis.api.testing.MemoryArchive;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.SplittableRandom;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * gpt-oss MXFP4 blocks built in code ({@code [E, rows, G, 16]} FP4 pairs, low nibble first,
 * E8M0 scales), expected values from the format: {@code fp4 x 2^(scale - 127)}, transposed
 * to {@code [E, G*32, rows]} as transformers' {@code convert_moe_packed_tensors} does.
 */
class Mxfp4DequantizerTest {
    static final Anamnesis AMN = Anamnesis.of(List.of(), List.of(), List.of(new Mxfp4Dequantizer()));
    static final String P = "model.layers.0.mlp.experts.gate_up_proj";

    /** FP4 E2M1 by its definition: sign, 2 exponent bits (bias 1), 1 mantissa bit. */
    static double e2m1(int code) {
        int e = (code >>> 1) & 3;
        int m = code & 1;
        double v = e == 0 ? m * 0.5 : (1 + m / 2.0) * Math.pow(2, e - 1);
        return (code & 8) != 0 ? -v : v;
    }

    static double e8m0(int b) {
        return b == 255 ? Double.NaN : Math.pow(2, b - 127);
    }

    /** W[e][r][c] from blocks and scales, as gpt-oss's _get_mxfp4_tensor computes it. */
    static double weight(int[] blocks, int[] scales, int rows, int groups, int e, int r, int c) {
        int block = (e * rows + r) * groups + c / 32;
        int k = c % 32;
        int b = blocks[block * 16 + k / 2];
        int code = k % 2 == 0 ? b & 15 : b >>> 4;
        return e2m1(code) * e8m0(scales[block]);
    }

    static int[] f32(RecoveryPlan plan, String name) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = plan.materialize(name, arena);
            int[] bits = new int[(int) (out.byteSize() / 4)];
            for (int i = 0; i < bits.length; i++) bits[i] = out.get(LittleEndian.I32, 4L * i);
            return bits;
        }
    }

    static void assertBits(int got, double expected, String what) {
        float f = (float) expected;
        if (Float.isNaN(f)) assertThat(Float.isNaN(Float.intBitsToFloat(got))).as(what).isTrue();
        else assertThat(got).as(what + ": " + f).isEqualTo(Float.floatToRawIntBits(f));
    }

    @Test
    void expertsAreTransposedToTransformersLayout() {
        SplittableRandom random = new SplittableRandom(1);
        int experts = 2, rows = 3, groups = 2;
        int[] blocks = new int[experts * rows * groups * 16];
        for (int i = 0; i < blocks.length; i++) blocks[i] = random.nextInt(256);
        blocks[0] = 0x78;   // low nibble 8 (-0.0) is column 0, high nibble 7 (6.0) column 1
        int[] scales = new int[experts * rows * groups];
        for (int i = 0; i < scales.length; i++) scales[i] = 115 + random.nextInt(20);
        scales[1] = 255;    // E8M0 NaN
        scales[2] = 0;      // 2^-127: products are F32 subnormals
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", "{\"quant_method\": \"mxfp4\"}")
                .bytes(P + "_blocks", new long[]{experts, rows, groups, 16}, blocks)
                .bytes(P + "_scales", new long[]{experts, rows, groups}, scales)
                .half(P + "_bias", DType.BF16, new long[]{experts, rows}, 0x3F80, 0x4000, 0x4040, 0x4080, 0x40A0, 0x40C0);
        RecoveryPlan plan = AMN.plan(a, DType.F32);
        assertThat(plan.output(P).orElseThrow().shape()).isEqualTo(Shape.of(experts, 64, rows));
        assertThat(plan.roles()).containsEntry(P + "_blocks", Role.QUANTIZED).containsEntry(P + "_scales", Role.SCALE)
                .containsEntry(P + "_bias", Role.PASSTHROUGH);
        int[] got = f32(plan, P);
        for (int e = 0; e < experts; e++) {
            for (int c = 0; c < 64; c++) {
                for (int r = 0; r < rows; r++) {
                    assertBits(got[(e * 64 + c) * rows + r], weight(blocks, scales, rows, groups, e, r, c),
                            "out[" + e + "][" + c + "][" + r + "]");
                }
            }
        }
        assertThat(got[0]).isEqualTo(0x8000_0000);   // out[0][0][0]: code 8 is -0.0
        assertThat(Float.intBitsToFloat(got[rows])).isEqualTo((float) (6 * Math.pow(2, scales[0] - 127)));   // out[0][1][0]
        assertThat(plan.schemeDescriptions()).containsExactly(
                "MXFP4 (FP4 E2M1, E8M0 scales per 32), [experts, in, out] as transformers loads them");
    }

    @Test
    void gptOssOwnCheckpointKeepsTheStoredLayout() {
        int rows = 2, groups = 2;
        int[] blocks = new int[rows * groups * 16];
        for (int i = 0; i < blocks.length; i++) blocks[i] = (i * 37) & 0xFF;
        int[] scales = {127, 128, 126, 130};
        MemoryArchive a = new MemoryArchive()
                .bytes("block.0.mlp.mlp1_weight.blocks", new long[]{1, rows, groups, 16}, blocks)
                .bytes("block.0.mlp.mlp1_weight.scales", new long[]{1, rows, groups}, scales);
        RecoveryPlan plan = AMN.plan(a, DType.F32);
        assertThat(plan.output("block.0.mlp.mlp1_weight").orElseThrow().shape()).isEqualTo(Shape.of(1, rows, 64));
        int[] got = f32(plan, "block.0.mlp.mlp1_weight");
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < 64; c++) assertBits(got[r * 64 + c], weight(blocks, scales, rows, groups, 0, r, c), r + "," + c);
        }
    }

    @Test
    void anyChunkOfRowsGivesTheSameBytes() {
        SplittableRandom random = new SplittableRandom(4);
        int experts = 3, rows = 70, groups = 3;   // 70 source rows: a 64-row tile and a partial one
        byte[] blocks = new byte[experts * rows * groups * 16];
        random.nextBytes(blocks);
        byte[] scales = new byte[experts * rows * groups];
        for (int i = 0; i < scales.length; i++) scales[i] = (byte) (110 + random.nextInt(30));
        MemoryArchive a = new MemoryArchive()
                .add(P + "_blocks", DType.U8, new long[]{experts, rows, groups, 16}, blocks)
                .add(P + "_scales", DType.U8, new long[]{experts, rows, groups}, scales);
        for (DType t : new DType[]{DType.F32, DType.BF16, DType.F16}) {
            RecoveryPlan plan = AMN.plan(a, t);
            int width = t.equals(DType.F32) ? 4 : 2;
            long outRows = (long) experts * groups * 32;
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment whole = plan.materialize(P, arena);
                MemorySegment pieces = arena.allocate(whole.byteSize());
                ChunkFiller filler = plan.output(P).orElseThrow().producer().open(arena);
                // chunks that start and end inside a 32-column block, and cross experts
                for (long first = 0, n = 5; first < outRows; first += n, n = n * 2 + 3) {
                    long count = Math.min(n, outRows - first);
                    filler.fill(first * rows, count * rows, pieces.asSlice(first * rows * width, count * rows * width));
                }
                assertThat(pieces.mismatch(whole)).as(t.name()).isEqualTo(-1L);
                if (t.equals(DType.BF16)) {
                    // out[2][40][69] = W[2][69][40], narrowed (exact: FP4 x 2^k fits BF16)
                    int block = (2 * rows + 69) * groups + 1;
                    int b = blocks[block * 16 + 4] & 0xFF;
                    double v = e2m1(b & 15) * e8m0(scales[block] & 0xFF);
                    short bits = whole.get(LittleEndian.I16, 2L * ((2L * groups * 32 + 40) * rows + 69));
                    assertThat(Float.intBitsToFloat(bits << 16)).isEqualTo((float) v);
                }
            }
        }
    }

    @Test
    void malformedPairsAreRefusedNamingTheTensor() {
        MemoryArchive scales = new MemoryArchive()
                .bytes(P + "_blocks", new long[]{1, 2, 1, 16}, new int[32])
                .bytes(P + "_scales", new long[]{1, 2, 2}, new int[4]);
        assertThatThrownBy(() -> AMN.plan(scales, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(P + "_scales");
        MemoryArchive width = new MemoryArchive()
                .bytes(P + "_blocks", new long[]{1, 2, 1, 8}, new int[16])
                .bytes(P + "_scales", new long[]{1, 2, 1}, new int[2]);
        assertThatThrownBy(() -> AMN.plan(width, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(P + "_blocks");
        MemoryArchive rank = new MemoryArchive()
                .bytes(P + "_blocks", new long[]{2, 1, 16}, new int[32])
                .bytes(P + "_scales", new long[]{2, 1}, new int[2]);
        assertThatThrownBy(() -> AMN.plan(rank, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("[experts, rows, groups, 16]");
    }

    @Test
    void anotherMethodsCheckpointIsLeftAlone() {
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", "{\"quant_method\": \"compressed-tensors\"}")
                .bytes(P + "_blocks", new long[]{1, 1, 1, 16}, new int[16])
                .bytes(P + "_scales", new long[]{1, 1, 1}, new int[1]);
        assertThat(new Mxfp4Dequantizer().claim(new ClaimContext(a, ParseLimits.defaults()))).isEmpty();
    }
}
