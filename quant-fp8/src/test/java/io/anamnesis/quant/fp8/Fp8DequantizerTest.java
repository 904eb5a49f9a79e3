package io.anamnesis.quant.fp8;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class Fp8DequantizerTest {
    static final Anamnesis AMN = Anamnesis.of(List.of(), List.of(), List.of(new Fp8Dequantizer()));
    static final String P = "model.layers.0.mlp.down_proj";
    static final String W = P + ".weight";

    private static int[] f32(TensorArchive archive, String name) {
        RecoveryPlan plan = AMN.plan(archive, DType.F32);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = plan.materialize(name, arena);
            int[] bits = new int[(int) (out.byteSize() / 4)];
            for (int i = 0; i < bits.length; i++) bits[i] = out.get(LittleEndian.I32, 4L * i);
            return bits;
        }
    }

    private static short[] half(TensorArchive archive, String name, DType target) {
        RecoveryPlan plan = AMN.plan(archive, target);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment out = plan.materialize(name, arena);
            short[] bits = new short[(int) (out.byteSize() / 2)];
            for (int i = 0; i < bits.length; i++) bits[i] = out.get(LittleEndian.I16, 2L * i);
            return bits;
        }
    }

    private static int b(float f) {
        return Float.floatToRawIntBits(f);
    }

    @Test
    void perTensorScaleMultipliesEveryElement() {
        // E4M3 1.0, -1.0, 448, 2^-9, +0, -0, 1.5, 2.0 times an F32 scale of 0.25 (shape [])
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 2, 4, 0x38, 0xB8, 0x7E, 0x01, 0x00, 0x80, 0x3C, 0x40)
                .f32(P + ".weight_scale_inv", new long[0], 0.25f);
        assertThat(f32(a, W)).containsExactly(b(0.25f), b(-0.25f), b(112f), b(0x1p-11f), b(0f), b(-0f), b(0.375f), b(0.5f));
        Recovery r = new Fp8Dequantizer().claim(new io.anamnesis.api.spi.ClaimContext(a, io.anamnesis.api.ParseLimits.defaults())).getFirst();
        assertThat(r.description()).isEqualTo("FP8 E4M3, per-tensor scale (F32)");
        assertThat(r.outputShape()).isEqualTo(Shape.of(2, 4));
    }

    @Test
    void perTensorScaleOfShapeOneAndBf16Output() {
        // scale [1] BF16 0x4040 = 3.0; 1.5 x 3 = 4.5 (BF16 0x4090), 448 x 3 = 1344 (0x44A8), -2^-9 x 3 (0xBBC0)
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 1, 3, 0x3C, 0x7E, 0x81)
                .half(P + ".weight_scale", DType.BF16, new long[]{1}, 0x4040);
        assertThat(half(a, W, DType.BF16)).containsExactly((short) 0x4090, (short) 0x44A8, (short) 0xBBC0);
        // F16: 4.5 = 0x4480, 1344 = 0x6540, -3 x 2^-9 = -1.5 x 2^-8 = 0x9E00
        assertThat(half(a, W, DType.F16)).containsExactly((short) 0x4480, (short) 0x6540, (short) 0x9E00);
    }

    @Test
    void perChannelScaleHasOneValuePerRow() {
        // rows scaled by BF16 1.0, 2.0, -0.5
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 3, 2, 0x38, 0x40, 0x38, 0x40, 0x38, 0x40)
                .half(P + ".weight_scale", DType.BF16, new long[]{3, 1}, 0x3F80, 0x4000, 0xBF00)
                .f32(P + ".input_scale", new long[0], 0.5f);
        assertThat(f32(a, W)).containsExactly(b(1f), b(2f), b(2f), b(4f), b(-0.5f), b(-1f));
        RecoveryPlan plan = AMN.plan(a, DType.BF16);
        assertThat(plan.roles()).containsEntry(W, Role.QUANTIZED).containsEntry(P + ".weight_scale", Role.SCALE)
                .containsEntry(P + ".input_scale", Role.PASSTHROUGH);
        assertThat(plan.schemeDescriptions()).containsExactly("FP8 E4M3, per-channel scales (BF16)");
    }

    @Test
    void blockScalesCoverPartialEdgeBlocks() {
        // 3 x 5 weight, 2 x 2 blocks from the metadata: scale [2, 3] (F16 1..6); every code is 1.0 but
        // (0,0) = 2.0 and (2,4) = -1.5, so out[r][c] = code x S[r/2][c/2]
        int[] codes = new int[15];
        java.util.Arrays.fill(codes, 0x38);
        codes[0] = 0x40;
        codes[14] = 0xBC;
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", "{\"quant_method\": \"fp8\", \"weight_block_size\": [2, 2]}")
                .fp8(W, DType.F8_E4M3, 3, 5, codes)
                .half(P + ".weight_scale_inv", DType.F16, new long[]{2, 3}, 0x3C00, 0x4000, 0x4200, 0x4400, 0x4500, 0x4600);
        assertThat(f32(a, W)).containsExactly(
                b(2f), b(1f), b(2f), b(2f), b(3f),
                b(1f), b(1f), b(2f), b(2f), b(3f),
                b(4f), b(4f), b(5f), b(5f), b(-9f));
        assertThat(AMN.plan(a, DType.F32).schemeDescriptions()).containsExactly("FP8 E4M3, 2x2 block scales (F16)");
    }

    @Test
    void defaultBlockIs128By128() {
        // 130 x 129 weight of 1.0 codes, BF16 scale [2, 2] = 1, 2, 3, 4
        int[] codes = new int[130 * 129];
        java.util.Arrays.fill(codes, 0x38);
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 130, 129, codes)
                .half(P + ".weight_scale_inv", DType.BF16, new long[]{2, 2}, 0x3F80, 0x4000, 0x4040, 0x4080);
        int[] out = f32(a, W);
        assertThat(out[127 * 129 + 127]).isEqualTo(b(1f));
        assertThat(out[127 * 129 + 128]).isEqualTo(b(2f));
        assertThat(out[128 * 129]).isEqualTo(b(3f));
        assertThat(out[129 * 129 + 128]).isEqualTo(b(4f));
        assertThat(AMN.plan(a, DType.BF16).schemeDescriptions()).containsExactly("FP8 E4M3, 128x128 block scales (BF16)");
    }

    @Test
    void blockSizeComesFromConfigJsonBesideTheFile(@TempDir Path dir) throws IOException {
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["X"], "quantization_config": {"activation_scheme": "dynamic",
                 "fmt": "e4m3", "quant_method": "fp8", "weight_block_size": [1, 3]}}""");
        // 2 x 4 weight, 1 x 3 blocks: scale [2, 2]
        MemoryArchive a = new MemoryArchive().at(dir.resolve("model.safetensors"))
                .fp8(W, DType.F8_E4M3, 2, 4, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38)
                .f32(P + ".weight_scale_inv", new long[]{2, 2}, 1f, 2f, 3f, 4f);
        assertThat(f32(a, W)).containsExactly(b(1f), b(1f), b(1f), b(2f), b(3f), b(3f), b(3f), b(4f));
    }

    @Test
    void compressedTensorsCheckpointsAreLeftToTheirOwnModule() {
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", """
                        {"quant_method": "compressed-tensors", "format": "float-quantized",
                         "config_groups": {"group_0": {"targets": ["Linear"],
                           "weights": {"num_bits": 8, "type": "float", "strategy": "channel"}}}}""")
                .fp8(W, DType.F8_E4M3, 1, 2, 0x38, 0x40)
                .half(P + ".weight_scale", DType.BF16, new long[]{1, 1}, 0x3F80);
        assertThat(new Fp8Dequantizer().claim(new io.anamnesis.api.spi.ClaimContext(a, io.anamnesis.api.ParseLimits.defaults()))).isEmpty();
    }

    @Test
    void configGroupBlockStructureAndNullBlockSizeAreRead() {
        // the compressed-tensors spelling, config_groups.<g>.weights.block_structure = [2, 2], in a
        // config that does not name that method; weight_block_size null
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", """
                        {"weight_block_size": null,
                         "config_groups": {"group_0": {"targets": ["Linear"],
                           "weights": {"num_bits": 8, "type": "float", "strategy": "block", "block_structure": [2, 2]}}}}""")
                .fp8(W, DType.F8_E4M3, 2, 4, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38, 0x38)
                .f32(P + ".weight_scale", new long[]{1, 2}, 5f, 7f);
        assertThat(f32(a, W)).containsExactly(b(5f), b(5f), b(7f), b(7f), b(5f), b(5f), b(7f), b(7f));
    }

    @Test
    void fnuzWeightsUseTheirOwnBiasAndNan() {
        // E4M3FNUZ 1.0 (0x40), 240 (0x7F), -2^-10 (0x81), NaN (0x80) times 0.5; E5M2FNUZ 1.0 (0x40), 57344 (0x7F)
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3FNUZ, 1, 4, 0x40, 0x7F, 0x81, 0x80)
                .f32(P + ".weight_scale", new long[0], 0.5f)
                .fp8("m.weight", DType.F8_E5M2FNUZ, 1, 2, 0x40, 0x7F)
                .f32("m.weight_scale", new long[0], 2f);
        // 0x7F800001 (c10's FNUZ NaN) times 0.5 in float32 is the quiet 0x7FC00001
        assertThat(f32(a, W)).containsExactly(b(0.5f), b(120f), b(-0x1p-11f), 0x7FC0_0001);
        assertThat(f32(a, "m.weight")).containsExactly(b(2f), b(114688f));
        assertThat(AMN.plan(a, DType.F32).schemeDescriptions())
                .containsExactly("FP8 E4M3FNUZ, per-tensor scale (F32)", "FP8 E5M2FNUZ, per-tensor scale (F32)");
    }

    @Test
    void e5m2WeightsKeepInfinitiesAndSubnormals() {
        // E5M2 1.0, +inf, 2^-16, -57344 times 2
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E5M2, 1, 4, 0x3C, 0x7C, 0x01, 0xFB)
                .f32(P + ".weight_scale", new long[0], 2f);
        assertThat(f32(a, W)).containsExactly(b(2f), b(Float.POSITIVE_INFINITY), b(0x1p-15f), b(-114688f));
        assertThat(AMN.plan(a, DType.F32).schemeDescriptions()).containsExactly("FP8 E5M2, per-tensor scale (F32)");
    }

    @Test
    void anyChunkGivesTheSameBytesAsTheWhole() {
        int rows = 37, cols = 300;
        int[] codes = new int[rows * cols];
        for (int i = 0; i < codes.length; i++) codes[i] = (i * 31 + 7) & 0xFF;
        int[] scales = new int[(rows + 15) / 16 * ((cols + 63) / 64)];
        for (int i = 0; i < scales.length; i++) scales[i] = 0x3C00 + 37 * i;
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", "{\"weight_block_size\": [16, 64]}")
                .fp8(W, DType.F8_E4M3, rows, cols, codes)
                .half(P + ".weight_scale_inv", DType.BF16, new long[]{(rows + 15) / 16, (cols + 63) / 64}, scales);
        for (DType t : new DType[]{DType.F32, DType.BF16, DType.F16}) {
            RecoveryPlan plan = AMN.plan(a, t);
            int width = Fp8Kernels.outputBytes(t);
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment whole = plan.materialize(W, arena);
                MemorySegment pieces = arena.allocate(whole.byteSize());
                ChunkFiller filler = plan.output(W).orElseThrow().producer().open(arena);
                long n = (long) rows * cols;
                for (long first = 0, step = 1; first < n; first += step, step = step * 3 + 1) {
                    long count = Math.min(step, n - first);
                    filler.fill(first, count, pieces.asSlice(first * width, count * width));
                }
                assertThat(pieces.mismatch(whole)).as(t.name()).isEqualTo(-1L);
                // and one element by hand: (20, 130) has code (20*300+130)*31+7 & 0xFF, scale block (1, 2)
                int code = ((20 * 300 + 130) * 31 + 7) & 0xFF;
                float expected = Fp8Format.E4M3.decode(code) * Float.intBitsToFloat((0x3C00 + 37 * (5 + 2)) << 16);
                if (t.equals(DType.F32)) {
                    assertThat(whole.get(LittleEndian.I32, 4L * (20 * 300 + 130))).isEqualTo(b(expected));
                }
            }
        }
    }

    @Test
    void fp8WeightWithoutScaleIsNotClaimed() {
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 1, 2, 0x38, 0x40)
                .f32(P + ".input_scale", new long[0], 1f)
                .fp8("lm_head.weight", DType.F8_E5M2, 1, 1, 0x3C);
        assertThat(new Fp8Dequantizer().claim(new io.anamnesis.api.spi.ClaimContext(a, io.anamnesis.api.ParseLimits.defaults()))).isEmpty();
        RecoveryPlan plan = AMN.plan(a, DType.BF16);
        assertThat(plan.roles().values()).containsOnly(Role.PASSTHROUGH);
        assertThat(plan.output(W).orElseThrow().dtype()).isEqualTo(DType.F8_E4M3);
    }

    @Test
    void scaleShapeThatFitsNoLayoutIsMalformedNamingTheScale() {
        MemoryArchive a = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 4, 5, new int[20])
                .f32(P + ".weight_scale", new long[]{3}, 1f, 1f, 1f);
        assertThatThrownBy(() -> AMN.plan(a, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(P + ".weight_scale").hasMessageContaining("[4, 1]")
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".weight_scale"));
        // [2, 2] would be 2 x 2 blocks of 128; the weight is one block
        MemoryArchive b = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 4, 5, new int[20])
                .f32(P + ".weight_scale_inv", new long[]{2, 2}, 1f, 1f, 1f, 1f);
        assertThatThrownBy(() -> AMN.plan(b, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("[1, 1] for 128x128 block scales");
    }

    @Test
    void unsupportedScaleDtypeAndTwoScalesAreTypedErrors() {
        MemoryArchive e8m0 = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 1, 32, new int[32])
                .add(P + ".weight_scale", DType.F8_E8M0, new long[]{1}, new byte[]{127});
        assertThatThrownBy(() -> AMN.plan(e8m0, DType.BF16)).isInstanceOf(UnsupportedFeatureException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".weight_scale"));
        MemoryArchive both = new MemoryArchive()
                .fp8(W, DType.F8_E4M3, 1, 1, 0x38)
                .f32(P + ".weight_scale", new long[0], 1f)
                .f32(P + ".weight_scale_inv", new long[0], 1f);
        assertThatThrownBy(() -> AMN.plan(both, DType.BF16)).isInstanceOf(UnsupportedFeatureException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(W));
    }

    @Test
    void malformedQuantizationConfigIsATypedError() {
        MemoryArchive a = new MemoryArchive()
                .meta("quantization_config", "{\"weight_block_size\": [128, ")
                .fp8(W, DType.F8_E4M3, 2, 2, 0, 0, 0, 0)
                .f32(P + ".weight_scale_inv", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> AMN.plan(a, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("quantization_config");
        MemoryArchive zero = new MemoryArchive()
                .meta("quantization_config", "{\"weight_block_size\": [0, 128]}")
                .fp8(W, DType.F8_E4M3, 2, 2, 0, 0, 0, 0)
                .f32(P + ".weight_scale_inv", new long[]{1, 1}, 1f);
        assertThatThrownBy(() -> AMN.plan(zero, DType.BF16)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("two positive integers");
    }

    @Test
    void truncatedPayloadIsMalformedWhenOpened() {
        MemoryArchive a = new MemoryArchive()
                .addRaw(TensorEntry.of(W, DType.F8_E4M3, Shape.of(2, 2)), new byte[3])
                .f32(P + ".weight_scale", new long[0], 1f);
        RecoveryPlan plan = AMN.plan(a, DType.BF16);
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> plan.materialize(W, arena)).isInstanceOf(MalformedFileException.class)
                    .hasMessageContaining(W);
        }
    }
}
