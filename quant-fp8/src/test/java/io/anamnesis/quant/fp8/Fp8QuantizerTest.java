package io.anamnesis.quant.fp8;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

/** The FP8 quantizer through the api's forget path, on small models built in code. */
class Fp8QuantizerTest {
    static final Anamnesis AMN = Anamnesis.of(List.of(), List.of(), List.of(new Fp8Dequantizer()), List.of(new Fp8Quantizer()));
    static final String DOWN = "model.layers.0.mlp.down_proj.weight";
    static final int ROWS = 256;
    static final int COLS = 384;

    static float[] weights(int n, long seed) {
        Random r = new Random(seed);
        float[] w = new float[n];
        for (int i = 0; i < n; i++) w[i] = Floats.bf16ToF32(Floats.f32ToBf16((float) (r.nextGaussian() * 0.02 * (1 + i % 7))));
        return w;
    }

    static byte[] bf16(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putShort(Floats.f32ToBf16(f));
        return b.array();
    }

    static MemoryArchive model(float[] down) {
        return new MemoryArchive()
                .add("model.embed_tokens.weight", DType.BF16, new long[]{16, COLS}, bf16(weights(16 * COLS, 1)))
                .add(DOWN, DType.BF16, new long[]{ROWS, COLS}, bf16(down))
                .add("model.norm.weight", DType.BF16, new long[]{COLS}, bf16(weights(COLS, 2)))
                .add("lm_head.weight", DType.BF16, new long[]{16, COLS}, bf16(weights(16 * COLS, 3)));
    }

    /** Every planned tensor, produced in two chunks (the second first). */
    static MemoryArchive produce(ForgetPlan plan) {
        return produce(plan.tensors());
    }

    static MemoryArchive produce(List<PlannedTensor> tensors) {
        MemoryArchive out = new MemoryArchive();
        for (PlannedTensor t : tensors) {
            long n = t.elementCount();
            long half = Math.min(n, Math.max(t.granule(), n / 2 / t.granule() * t.granule()));
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment dest = arena.allocate(Math.max(1, t.byteSize())).asSlice(0, t.byteSize());
                ChunkFiller f = t.producer().open(arena);
                if (half < n) f.fill(half, n - half, dest.asSlice(t.dtype().byteSize(half)));
                f.fill(0, half, dest.asSlice(0, t.dtype().byteSize(half)));
                out.add(t.name(), t.dtype(), t.shape().toArray(), dest.toArray(ValueLayout.JAVA_BYTE));
            }
        }
        return out;
    }

    static float[] floats(byte[] b, DType d) {
        int w = d.equals(DType.F32) ? 4 : 2;
        float[] f = new float[b.length / w];
        MemorySegment s = MemorySegment.ofArray(b);
        for (int i = 0; i < f.length; i++) {
            f[i] = d.equals(DType.F32) ? s.get(LittleEndian.F32, 4L * i)
                    : d.equals(DType.BF16) ? Floats.bf16ToF32(s.get(LittleEndian.I16, 2L * i)) : Floats.f16ToF32(s.get(LittleEndian.I16, 2L * i));
        }
        return f;
    }

    static ForgetOptions settings(Map<String, String> s) {
        return new ForgetOptions(s, Optional.empty(), false, List.of());
    }

    /** Expected codes and scales of a [ROWS, COLS] weight for groups of bh x bw, from the published steps. */
    static void expect(float[] w, Fp8Format f, DType sd, int bh, int bw, byte[] codes, float[] scales) {
        expect(w, ROWS, COLS, f, sd, bh, bw, codes, scales);
    }

    static void expect(float[] w, int rows, int cols, Fp8Format f, DType sd, int bh, int bw, byte[] codes, float[] scales) {
        int sc = (cols + bw - 1) / bw;
        for (int br = 0; br * bh < rows; br++) {
            for (int bc = 0; bc < sc; bc++) {
                int gh = Math.min(bh, rows - br * bh);
                int gw = Math.min(bw, cols - bc * bw);
                float[] x = new float[gh * gw];
                for (int r = 0; r < gh; r++) System.arraycopy(w, (br * bh + r) * cols + bc * bw, x, r * gw, gw);
                float[] s = new float[1];
                byte[] q = Fp8EncoderTest.expected(f, x, sd, s);
                scales[br * sc + bc] = s[0];
                for (int r = 0; r < gh; r++) System.arraycopy(q, r * gw, codes, (br * bh + r) * cols + bc * bw, gw);
            }
        }
    }

    @Test
    void blockScalesAsDeepSeekAndQwenShipThem() {
        float[] down = weights(ROWS * COLS, 5);
        down[1000] = Float.NaN;
        LossMeter loss = new LossMeter();
        ForgetPlan plan = AMN.planForget(model(down), "fp8", ForgetOptions.defaults(), loss);
        assertThat(plan.decisions()).extracting(ForgetPlan.Decision::tensor, ForgetPlan.Decision::becomes, ForgetPlan.Decision::why)
                .containsExactly(tuple("model.embed_tokens.weight", "BF16", "embeddings stay"), tuple(DOWN, "fp8", "linear layer"),
                        tuple("model.norm.weight", "BF16", "norms and other vectors stay"),
                        tuple("lm_head.weight", "BF16", "lm_head stays"));
        assertThat(plan.tensors()).extracting(PlannedTensor::name, t -> t.dtype().name(), t -> t.shape().toString())
                .contains(tuple(DOWN, "F8_E4M3", Shape.of(ROWS, COLS).toString()),
                        tuple("model.layers.0.mlp.down_proj.weight_scale_inv", "F32", Shape.of(2, 3).toString()));
        assertThat(plan.metadata()).containsEntry("quantization_config",
                "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3\", \"quant_method\": \"fp8\", \"weight_block_size\": [128, 128]}")
                .containsEntry("format", "pt");
        MemoryArchive out = produce(plan);
        byte[] codes = new byte[ROWS * COLS];
        float[] scales = new float[6];
        expect(down, Fp8Format.E4M3, DType.F32, 128, 128, codes, scales);
        assertThat(out.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(out.bytes("model.layers.0.mlp.down_proj.weight_scale_inv"), DType.F32)).containsExactly(scales);
        assertThat(codes[1000]).isEqualTo((byte) 0x7F);

        // the project's decoder reads it back; the loss is what it decodes to (NaN left out)
        Recovery r = new Fp8Dequantizer().claim(new io.anamnesis.api.spi.ClaimContext(out, io.anamnesis.api.ParseLimits.defaults())).getFirst();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment dest = arena.allocate(4L * ROWS * COLS);
            r.kernel().open(out, arena, DType.F32).fill(0, (long) ROWS * COLS, dest);
            double sq = 0;
            for (int i = 0; i < down.length; i++) {
                if (i == 1000) continue;
                double e = (double) dest.get(LittleEndian.F32, 4L * i) - down[i];
                sq += e * e;
            }
            assertThat(loss.total().count()).isEqualTo(down.length - 1);
            assertThat(loss.total().nonFinite()).isEqualTo(1);
            assertThat(loss.total().sumSq()).isCloseTo(sq, org.assertj.core.data.Offset.offset(sq * 1e-12));
        }
    }

    @Test
    void blockAndChannelScalesAreTheSameWhetherTheWeightLeftThemOrNot() {
        float[] down = weights(ROWS * COLS, 9);
        for (String granularity : List.of("block", "channel")) {
            ForgetOptions options = settings(Map.of("granularity", granularity));
            // the scale tensor alone, no weight made: every band read and computed
            ForgetPlan alone = AMN.planForget(model(down), "fp8", options, new LossMeter());
            PlannedTensor weight = alone.tensors().stream().filter(t -> t.name().equals(DOWN)).findFirst().orElseThrow();
            PlannedTensor scale = alone.tensors().stream().filter(t -> t.name().startsWith(DOWN + "_scale")).findFirst().orElseThrow();
            assertThat(scale.producer()).as(granularity).isInstanceOf(io.anamnesis.api.spi.TensorProducer.After.class);
            assertThat(((io.anamnesis.api.spi.TensorProducer.After) scale.producer()).first()).isSameAs(weight.producer());
            byte[] computed = produce(List.of(scale)).bytes(scale.name());
            // after the weight (produce() makes the tensors in plan order): what its encoder left
            MemoryArchive both = produce(AMN.planForget(model(down), "fp8", options, new LossMeter()));
            assertThat(both.bytes(scale.name())).as(granularity).containsExactly(computed);
            // and both are the published steps' scales
            int bh = granularity.equals("block") ? 128 : 1;
            int bw = granularity.equals("block") ? 128 : COLS;
            float[] scales = new float[((ROWS + bh - 1) / bh) * ((COLS + bw - 1) / bw)];
            expect(down, Fp8Format.E4M3, DType.F32, bh, bw, new byte[ROWS * COLS], scales);
            assertThat(floats(computed, scale.dtype())).as(granularity).containsExactly(scales);
        }
    }

    @Test
    void perTensorAndPerChannelScalesInBf16() {
        float[] down = weights(ROWS * COLS, 6);
        MemoryArchive tensor = produce(AMN.planForget(model(down), "fp8",
                settings(Map.of("granularity", "tensor", "scale-dtype", "bf16")), new LossMeter()));
        byte[] codes = new byte[ROWS * COLS];
        float[] scales = new float[1];
        expect(down, Fp8Format.E4M3, DType.BF16, ROWS, COLS, codes, scales);
        assertThat(tensor.bytes(DOWN)).containsExactly(codes);
        assertThat(tensor.tensors()).filteredOn(e -> e.name().endsWith("weight_scale")).singleElement()
                .satisfies(e -> assertThat(e.shape()).isEqualTo(Shape.SCALAR)).satisfies(e -> assertThat(e.dtype()).isEqualTo(DType.BF16));
        assertThat(floats(tensor.bytes("model.layers.0.mlp.down_proj.weight_scale"), DType.BF16)).containsExactly(scales);

        ForgetPlan channelPlan = AMN.planForget(model(down), "fp8", settings(Map.of("granularity", "channel")), new LossMeter());
        MemoryArchive channel = produce(channelPlan);
        float[] rowScales = new float[ROWS];
        expect(down, Fp8Format.E4M3, DType.F32, 1, COLS, codes, rowScales);
        assertThat(channel.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(channel.bytes("model.layers.0.mlp.down_proj.weight_scale"), DType.F32)).containsExactly(rowScales);
        assertThat(channelPlan.metadata().get("quantization_config")).contains("\"quant_method\": \"compressed-tensors\"",
                "\"strategy\": \"channel\"", "\"format\": \"float-quantized\"", "\"ignore\": [\"lm_head\"]");
    }

    @Test
    void wideWeightsAreWorkedInStripsOfBlocksWithTheSameBytes() {
        // 1200 columns: 128x128 strips of 512 columns, the last one 176 wide with a partial block
        int rows = 300;
        int cols = 1200;
        float[] wide = weights(rows * cols, 12);
        MemoryArchive model = new MemoryArchive().add(DOWN, DType.BF16, new long[]{rows, cols}, bf16(wide));
        MemoryArchive ref = new MemoryArchive()
                .add(DOWN, DType.F8_E4M3, new long[]{rows, cols}, new byte[rows * cols])
                .add("model.layers.0.mlp.down_proj.weight_scale_inv", DType.F32, new long[]{3, 10}, new byte[4 * 30]);
        // partial edge blocks come only by imitation: a reference that has them
        MemoryArchive out = produce(AMN.planForget(model, "fp8", ForgetOptions.defaults().imitating(ref), new LossMeter()));
        byte[] codes = new byte[rows * cols];
        float[] scales = new float[30];
        expect(wide, rows, cols, Fp8Format.E4M3, DType.F32, 128, 128, codes, scales);
        assertThat(out.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(out.bytes("model.layers.0.mlp.down_proj.weight_scale_inv"), DType.F32)).containsExactly(scales);
    }

    @Test
    void e5m2WithSixtyFourBlocks() {
        float[] down = weights(ROWS * COLS, 7);
        ForgetPlan plan = AMN.planForget(model(down), "fp8_e5m2", settings(Map.of("block-size", "64")), new LossMeter());
        MemoryArchive out = produce(plan);
        byte[] codes = new byte[ROWS * COLS];
        float[] scales = new float[4 * 6];
        expect(down, Fp8Format.E5M2, DType.F32, 64, 64, codes, scales);
        assertThat(out.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(out.bytes("model.layers.0.mlp.down_proj.weight_scale_inv"), DType.F32)).containsExactly(scales);
        assertThat(plan.metadata().get("quantization_config")).contains("\"fmt\": \"e5m2\"", "\"weight_block_size\": [64, 64]");
    }

    @Test
    void settingsFp8CannotTakeAreInvalidRequestsAndUntiledShapesUnsupported() {
        MemoryArchive m = model(weights(ROWS * COLS, 8));
        for (String bad : new String[]{"100", "63", "8", "8192", "abc"}) {
            assertThatThrownBy(() -> AMN.planForget(m, "fp8", settings(Map.of("block-size", bad)), new LossMeter()))
                    .as(bad).isInstanceOf(InvalidRequestException.class).hasMessageContaining("block size");
        }
        assertThatThrownBy(() -> AMN.planForget(m, "fp8", settings(Map.of("granularity", "row")), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("granularity");
        assertThatThrownBy(() -> AMN.planForget(m, "fp8", settings(Map.of("granularity", "tensor", "block-size", "128")),
                new LossMeter())).isInstanceOf(InvalidRequestException.class).hasMessageContaining("--block-size");
        assertThatThrownBy(() -> AMN.planForget(m, "fp8", settings(Map.of("scale-dtype", "f8")), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("scale dtype");
        assertThatThrownBy(() -> AMN.planForget(m, "fp8", settings(Map.of("double-quant", "true")), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("not --double-quant");
        // 384 columns are not a whole number of 256-wide blocks
        assertThatThrownBy(() -> AMN.planForget(m, "fp8", settings(Map.of("block-size", "256")), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("do not tile");
    }

    @Test
    void likeFollowsEachWeightsScaleNameDtypeAndLayout() {
        float[] down = weights(ROWS * COLS, 9);
        // a reference as Ministral ships it: per-tensor BF16 scale named weight_scale_inv
        MemoryArchive ref = produce(AMN.planForget(model(down), "fp8",
                settings(Map.of("granularity", "tensor", "scale-dtype", "bf16")), new LossMeter()));
        byte[] scale = ref.bytes("model.layers.0.mlp.down_proj.weight_scale");
        MemoryArchive reference = new MemoryArchive()
                .add(DOWN, DType.F8_E4M3, new long[]{ROWS, COLS}, ref.bytes(DOWN))
                .add("model.layers.0.mlp.down_proj.weight_scale_inv", DType.BF16, new long[]{}, scale);
        assertThat(AMN.imitation(reference)).isEqualTo("fp8");
        float[] tuned = weights(ROWS * COLS, 10);
        ForgetPlan plan = AMN.planForget(model(tuned), "fp8", ForgetOptions.defaults().imitating(reference), new LossMeter());
        assertThat(plan.tensors()).extracting(PlannedTensor::name).contains("model.layers.0.mlp.down_proj.weight_scale_inv");
        MemoryArchive out = produce(plan);
        byte[] codes = new byte[ROWS * COLS];
        float[] s = new float[1];
        expect(tuned, Fp8Format.E4M3, DType.BF16, ROWS, COLS, codes, s);
        assertThat(out.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(out.bytes("model.layers.0.mlp.down_proj.weight_scale_inv"), DType.BF16)).containsExactly(s);

        // imitating the file itself (recovered on the fly) gives its bytes back
        MemoryArchive again = produce(AMN.planForget(reference, "fp8", ForgetOptions.defaults().imitating(reference), new LossMeter()));
        assertThat(again.bytes(DOWN)).containsExactly(reference.bytes(DOWN));
        assertThat(again.bytes("model.layers.0.mlp.down_proj.weight_scale_inv")).containsExactly(scale);

        MemoryArchive narrow = new MemoryArchive().add(DOWN, DType.BF16, new long[]{ROWS / 2, COLS}, bf16(weights(ROWS * COLS / 2, 11)));
        assertThatThrownBy(() -> AMN.planForget(narrow, "fp8", ForgetOptions.defaults().imitating(reference), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("same shapes");
    }

    static final String SCALE = "model.layers.0.mlp.down_proj.weight_scale";
    static final String SCALE_INV = "model.layers.0.mlp.down_proj.weight_scale_inv";

    @Test
    void fnuzPerTensorPerChannelAndBlocks() {
        float[] down = weights(ROWS * COLS, 13);
        down[77] = Float.NaN;
        down[78] = -1e-12f; // rounds to zero: 0x00, never FNUZ's NaN 0x80
        ForgetPlan tensorPlan = AMN.planForget(model(down), "fp8_e4m3fnuz", settings(Map.of("granularity", "tensor")), new LossMeter());
        assertThat(tensorPlan.decisions()).extracting(ForgetPlan.Decision::tensor, ForgetPlan.Decision::becomes)
                .contains(tuple(DOWN, "fp8_e4m3fnuz"));
        assertThat(tensorPlan.metadata()).containsEntry("quantization_config",
                "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e4m3fnuz\", \"quant_method\": \"fp8\"}");
        MemoryArchive tensor = produce(tensorPlan);
        assertThat(tensor.tensors()).filteredOn(e -> e.name().equals(DOWN)).singleElement()
                .satisfies(e -> assertThat(e.dtype()).isEqualTo(DType.F8_E4M3FNUZ));
        byte[] codes = new byte[ROWS * COLS];
        float[] scale = new float[1];
        expect(down, Fp8Format.E4M3FNUZ, DType.F32, ROWS, COLS, codes, scale);
        assertThat(tensor.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(tensor.bytes(SCALE), DType.F32)).containsExactly(scale);
        assertThat(codes[77]).isEqualTo((byte) 0x80);
        assertThat(codes[78]).isEqualTo((byte) 0x00);
        assertThat(maxMagnitude(codes)).as("native: the amax takes 240").isEqualTo(0x7F);

        ForgetPlan channelPlan = AMN.planForget(model(down), "fp8_e5m2fnuz",
                settings(Map.of("granularity", "channel", "scale-dtype", "bf16")), new LossMeter());
        MemoryArchive channel = produce(channelPlan);
        float[] rowScales = new float[ROWS];
        expect(down, Fp8Format.E5M2FNUZ, DType.BF16, 1, COLS, codes, rowScales);
        assertThat(channel.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(channel.bytes(SCALE), DType.BF16)).containsExactly(rowScales);
        // compressed-tensors' float type is E4M3: the other formats get the fp8 config, fmt naming them
        assertThat(channelPlan.metadata()).containsEntry("quantization_config",
                "{\"activation_scheme\": \"dynamic\", \"fmt\": \"e5m2fnuz\", \"quant_method\": \"fp8\"}");

        ForgetPlan blockPlan = AMN.planForget(model(down), "fp8_e5m2fnuz", settings(Map.of("block-size", "64")), new LossMeter());
        MemoryArchive block = produce(blockPlan);
        float[] blockScales = new float[4 * 6];
        expect(down, Fp8Format.E5M2FNUZ, DType.F32, 64, 64, codes, blockScales);
        assertThat(block.bytes(DOWN)).containsExactly(codes);
        assertThat(floats(block.bytes(SCALE_INV), DType.F32)).containsExactly(blockScales);
        assertThat(blockPlan.metadata().get("quantization_config")).contains("\"fmt\": \"e5m2fnuz\"", "\"weight_block_size\": [64, 64]");
    }

    static int maxMagnitude(byte[] codes) {
        int m = 0;
        for (byte c : codes) m = Math.max(m, c & 0x7F);
        return m;
    }

    /**
     * Expected codes and scales of vLLM's normalize_e4m3fn_to_e4m3fnuz, from its steps: E4M3 as
     * the definition gives it (scale amax / 448), byte 0x80 (E4M3's -0) to 0, E4M3's NaN to
     * FNUZ's NaN 0x80, the scale doubled.
     */
    static void expectVllm(float[] w, DType sd, int bh, int bw, byte[] codes, float[] scales) {
        expect(w, Fp8Format.E4M3, sd, bh, bw, codes, scales);
        for (int i = 0; i < codes.length; i++) {
            if (codes[i] == (byte) 0x80) codes[i] = 0;
            else if ((codes[i] & 0x7F) == 0x7F) codes[i] = (byte) 0x80;
        }
        for (int i = 0; i < scales.length; i++) scales[i] *= 2;
    }

    @Test
    void fnuzAsVllmMakesItFromE4m3() {
        float[] down = weights(ROWS * COLS, 14);
        down[5] = Float.NaN;
        down[6] = -1e-12f;
        down[7] = -0f;
        for (DType sd : new DType[]{DType.F32, DType.BF16}) {
            ForgetPlan plan = AMN.planForget(model(down), "fp8_e4m3fnuz_vllm", settings(Map.of("scale-dtype",
                    sd.name().toLowerCase(java.util.Locale.ROOT))), new LossMeter());
            assertThat(plan.metadata().get("quantization_config")).contains("\"fmt\": \"e4m3fnuz\"", "\"weight_block_size\": [128, 128]");
            MemoryArchive out = produce(plan);
            byte[] codes = new byte[ROWS * COLS];
            float[] scales = new float[6];
            expectVllm(down, sd, 128, 128, codes, scales);
            assertThat(out.bytes(DOWN)).as("%s", sd).containsExactly(codes);
            assertThat(floats(out.bytes(SCALE_INV), sd)).containsExactly(scales);
            assertThat(codes[5]).isEqualTo((byte) 0x80);
            assertThat(codes[6]).isEqualTo((byte) 0);
            assertThat(codes[7]).isEqualTo((byte) 0);
            assertThat(maxMagnitude(codes)).as("normalized: the amax takes 224, never 240").isEqualTo(0x7E);
        }
    }

    /** A one-weight FNUZ reference: these codes and one F32 scale. */
    static MemoryArchive reference(DType dtype, byte[] codes, float scale) {
        byte[] s = new byte[4];
        ByteBuffer.wrap(s).order(ByteOrder.LITTLE_ENDIAN).putFloat(scale);
        return new MemoryArchive().add(DOWN, dtype, new long[]{ROWS, COLS}, codes).add(SCALE, DType.F32, new long[]{}, s);
    }

    @Test
    void likeAnFnuzReferenceFollowsTheConventionItsCodesShow() {
        float[] down = weights(ROWS * COLS, 15);
        MemoryArchive nativeRef = produce(AMN.planForget(model(down), "fp8_e4m3fnuz", settings(Map.of("granularity", "tensor")),
                new LossMeter()));
        MemoryArchive vllmRef = produce(AMN.planForget(model(down), "fp8_e4m3fnuz_vllm", settings(Map.of("granularity", "tensor")),
                new LossMeter()));
        MemoryArchive e5m2Ref = produce(AMN.planForget(model(down), "fp8_e5m2fnuz", settings(Map.of("granularity", "tensor")),
                new LossMeter()));
        assertThat(AMN.imitation(nativeRef)).isEqualTo("fp8_e4m3fnuz");
        assertThat(AMN.imitation(vllmRef)).isEqualTo("fp8_e4m3fnuz_vllm");
        assertThat(AMN.imitation(e5m2Ref)).isEqualTo("fp8_e5m2fnuz");

        // hand-made references: a 0x7F anywhere is native; 0x7E and no 0x7F normalized; neither, the default
        byte[] codes = new byte[ROWS * COLS];
        assertThat(AMN.imitation(reference(DType.F8_E4M3FNUZ, codes, 1f))).isEqualTo("fp8_e4m3fnuz");
        codes[ROWS * COLS - 1] = (byte) 0xFE;
        assertThat(AMN.imitation(reference(DType.F8_E4M3FNUZ, codes, 1f))).isEqualTo("fp8_e4m3fnuz_vllm");
        codes[3] = (byte) 0xFF;
        assertThat(AMN.imitation(reference(DType.F8_E4M3FNUZ, codes, 1f))).isEqualTo("fp8_e4m3fnuz");

        // each imitated from another model's values: the reference's convention, layout and config
        float[] tuned = weights(ROWS * COLS, 16);
        for (MemoryArchive ref : List.of(nativeRef, vllmRef)) {
            String target = AMN.imitation(ref);
            ForgetPlan plan = AMN.planForget(model(tuned), target, ForgetOptions.defaults().imitating(ref), new LossMeter());
            assertThat(plan.metadata().get("quantization_config")).contains("\"fmt\": \"e4m3fnuz\"");
            MemoryArchive out = produce(plan);
            byte[] want = new byte[ROWS * COLS];
            float[] s = new float[1];
            if (target.equals("fp8_e4m3fnuz")) expect(tuned, Fp8Format.E4M3FNUZ, DType.F32, ROWS, COLS, want, s);
            else expectVllm(tuned, DType.F32, ROWS, COLS, want, s);
            assertThat(out.bytes(DOWN)).as(target).containsExactly(want);
            assertThat(floats(out.bytes(SCALE), DType.F32)).as(target).containsExactly(s);
            // and the reference itself, recovered on the fly, gives its own bytes back
            MemoryArchive again = produce(AMN.planForget(ref, target, ForgetOptions.defaults().imitating(ref), new LossMeter()));
            assertThat(again.bytes(DOWN)).as(target).containsExactly(ref.bytes(DOWN));
            assertThat(again.bytes(SCALE)).as(target).containsExactly(ref.bytes(SCALE));
        }

        // asked for another target than the reference's, the quantizer says which one it is
        assertThatThrownBy(() -> AMN.planForget(model(tuned), "fp8_e4m3fnuz", ForgetOptions.defaults().imitating(vllmRef),
                new LossMeter())).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("is quantized to fp8_e4m3fnuz_vllm, not fp8_e4m3fnuz");
        assertThatThrownBy(() -> AMN.planForget(model(tuned), "fp8", ForgetOptions.defaults().imitating(e5m2Ref),
                new LossMeter())).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("is quantized to fp8_e5m2fnuz, not fp8");
        // one format per reference
        MemoryArchive mixed = reference(DType.F8_E4M3FNUZ, new byte[ROWS * COLS], 1f)
                .add("model.layers.0.mlp.up_proj.weight", DType.F8_E5M2FNUZ, new long[]{ROWS, COLS}, new byte[ROWS * COLS])
                .add("model.layers.0.mlp.up_proj.weight_scale", DType.F32, new long[]{}, new byte[4]);
        assertThatThrownBy(() -> AMN.planForget(model(tuned), "fp8_e4m3fnuz", ForgetOptions.defaults().imitating(mixed),
                new LossMeter())).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("mixes F8_E4M3FNUZ and F8_E5M2FNUZ weights");
    }

    @Test
    void theTargetsAreListedWithWhatTheyWrite() {
        assertThat(new Fp8Quantizer().targets().keySet())
                .containsExactly("fp8", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz", "fp8_e4m3fnuz_vllm");
        assertThat(new Fp8Quantizer().targets().get("fp8_e4m3fnuz_vllm")).contains("vLLM", "0x7E");
    }

    /** A meter that is off makes the producers skip the decoded values; no byte changes, nothing is recorded. */
    @Test
    void aMeterThatIsOffChangesNoByte() {
        float[] down = weights(ROWS * COLS, 11);
        for (String granularity : List.of("block", "channel", "tensor")) {
            ForgetOptions options = settings(Map.of("granularity", granularity));
            LossMeter on = new LossMeter();
            LossMeter off = LossMeter.off();
            MemoryArchive measured = produce(AMN.planForget(model(down), "fp8", options, on));
            MemoryArchive unmeasured = produce(AMN.planForget(model(down), "fp8", options, off));
            assertThat(unmeasured.tensors()).as(granularity).isEqualTo(measured.tensors());
            for (var t : measured.tensors()) {
                assertThat(unmeasured.bytes(t.name())).as(granularity + " " + t.name()).containsExactly(measured.bytes(t.name()));
            }
            assertThat(on.perTensor().get(DOWN).count()).as(granularity).isEqualTo((long) ROWS * COLS);
            assertThat(off.perTensor()).as(granularity).isEmpty();
        }
    }
}
