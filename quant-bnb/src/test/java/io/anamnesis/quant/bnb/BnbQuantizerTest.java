package io.anamnesis.quant.bnb;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;

/** The bitsandbytes quantizer through the api's forget path, on small models built in code. */
class BnbQuantizerTest {
    static final Anamnesis AMN = Anamnesis.of(List.of(), List.of(), List.of(new BnbDequantizer()), List.of(new BnbQuantizer()));
    static final String GATE = "model.layers.0.mlp.gate_proj.weight";

    static byte[] bf16(float[] v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putShort(Fixtures.bf16(f));
        return b.array();
    }

    static float[] weights(int n, long seed) {
        Random r = new Random(seed);
        float[] w = new float[n];
        for (int i = 0; i < n; i++) w[i] = Float.intBitsToFloat(Fixtures.bf16((float) r.nextGaussian() * 0.02f) << 16);
        return w;
    }

    /** A small llama-like model: embeddings, one MLP projection with a bias, a norm, the head. */
    static MemoryArchive model(float[] gate) {
        return new MemoryArchive()
                .add("model.embed_tokens.weight", DType.BF16, new long[]{8, 64}, bf16(weights(512, 1)))
                .add(GATE, DType.BF16, new long[]{16, gate.length / 16}, bf16(gate))
                .add("model.layers.0.mlp.gate_proj.bias", DType.BF16, new long[]{16}, bf16(weights(16, 2)))
                .add("model.norm.weight", DType.BF16, new long[]{64}, bf16(weights(64, 3)))
                .add("lm_head.weight", DType.BF16, new long[]{8, 64}, bf16(weights(512, 4)));
    }

    /** Every planned tensor produced in two chunks (the second first), as an archive a dequantizer can read. */
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

    static float[] f32(byte[] b) {
        float[] f = new float[b.length / 4];
        MemorySegment.copy(MemorySegment.ofArray(b), LittleEndian.F32, 0, f, 0, f.length);
        return f;
    }

    static ForgetOptions settings(Map<String, String> s) {
        return new ForgetOptions(s, Optional.empty(), false, List.of());
    }

    @Test
    void nf4QuantizesLinearWeightsAndLeavesTheRestAsTransformersDoes() {
        float[] gate = weights(16 * 64, 5);
        gate[100] = -0f;
        MemoryArchive model = model(gate);
        LossMeter loss = new LossMeter();
        ForgetPlan plan = AMN.planForget(model, "nf4", ForgetOptions.defaults(), loss);

        assertThat(plan.decisions()).extracting(ForgetPlan.Decision::tensor, ForgetPlan.Decision::becomes, ForgetPlan.Decision::why)
                .containsExactly(
                        tuple("model.embed_tokens.weight", "BF16", "embeddings stay"),
                        tuple(GATE, "nf4", "linear layer"),
                        tuple("model.layers.0.mlp.gate_proj.bias", "BF16", "biases stay"),
                        tuple("model.norm.weight", "BF16", "norms and other vectors stay"),
                        tuple("lm_head.weight", "BF16", "lm_head stays"));
        assertThat(plan.tensors()).extracting(PlannedTensor::name, t -> t.dtype().name(), t -> t.shape().toString())
                .containsExactly(
                        tuple("model.embed_tokens.weight", "BF16", Shape.of(8, 64).toString()),
                        tuple(GATE, "U8", Shape.of(512, 1).toString()),
                        tuple(GATE + ".absmax", "F32", Shape.of(16).toString()),
                        tuple(GATE + ".quant_map", "F32", Shape.of(16).toString()),
                        tuple(GATE + ".quant_state.bitsandbytes__nf4", "U8", Shape.of(78).toString()),
                        tuple("model.layers.0.mlp.gate_proj.bias", "BF16", Shape.of(16).toString()),
                        tuple("model.norm.weight", "BF16", Shape.of(64).toString()),
                        tuple("lm_head.weight", "BF16", Shape.of(8, 64).toString()));
        assertThat(plan.metadata()).containsEntry("format", "pt").containsEntry("quantization_config",
                "{\"_load_in_4bit\": true, \"_load_in_8bit\": false, \"bnb_4bit_compute_dtype\": \"bfloat16\", "
                        + "\"bnb_4bit_quant_storage\": \"uint8\", \"bnb_4bit_quant_type\": \"nf4\", "
                        + "\"bnb_4bit_use_double_quant\": false, \"llm_int8_enable_fp32_cpu_offload\": false, "
                        + "\"llm_int8_has_fp16_weight\": false, \"llm_int8_skip_modules\": null, \"llm_int8_threshold\": 6.0, "
                        + "\"load_in_4bit\": true, \"load_in_8bit\": false, \"quant_method\": \"bitsandbytes\"}");

        MemoryArchive out = produce(plan);
        byte[] state = out.bytes(GATE + ".quant_state.bitsandbytes__nf4");
        assertThat(new String(state, StandardCharsets.UTF_8))
                .isEqualTo("{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"bfloat16\", \"shape\": [16, 64]}");
        assertThat(f32(out.bytes(GATE + ".quant_map"))).containsExactly(Fixtures.NF4);

        // codes and absmax from the kernel's formulas, block by block
        float[] absmax = new float[16];
        byte[] expected = FourBitEncoderTest.expectedPacked(gate, 64, false, absmax);
        assertThat(out.bytes(GATE)).containsExactly(expected);
        assertThat(f32(out.bytes(GATE + ".absmax"))).containsExactly(absmax);
        assertThat(out.bytes("lm_head.weight")).containsExactly(bf16(weights(512, 4)));
        // the absmax tensor above copied what the weight's producer left (made after it, as the
        // writer makes it); made alone from a fresh plan it reads the weight: the same floats
        ForgetPlan fresh = AMN.planForget(model, "nf4", ForgetOptions.defaults(), new LossMeter());
        PlannedTensor weight = fresh.tensors().stream().filter(t -> t.name().equals(GATE)).findFirst().orElseThrow();
        PlannedTensor absmaxTensor = fresh.tensors().stream().filter(t -> t.name().equals(GATE + ".absmax")).findFirst().orElseThrow();
        assertThat(absmaxTensor.producer()).isInstanceOf(io.anamnesis.api.spi.TensorProducer.After.class);
        assertThat(((io.anamnesis.api.spi.TensorProducer.After) absmaxTensor.producer()).first()).isSameAs(weight.producer());
        assertThat(f32(produce(List.of(absmaxTensor)).bytes(GATE + ".absmax"))).containsExactly(absmax);
        // and made whole after the weight made whole, as the writer's aligned chunks make them: copied
        ForgetPlan again = AMN.planForget(model, "nf4", ForgetOptions.defaults(), new LossMeter());
        MemoryArchive whole = new MemoryArchive();
        for (PlannedTensor t : again.tensors()) {
            try (Arena arena = Arena.ofConfined()) {
                MemorySegment dest = arena.allocate(Math.max(1, t.byteSize())).asSlice(0, t.byteSize());
                t.producer().open(arena).fill(0, t.elementCount(), dest);
                whole.add(t.name(), t.dtype(), t.shape().toArray(), dest.toArray(ValueLayout.JAVA_BYTE));
            }
        }
        assertThat(f32(whole.bytes(GATE + ".absmax"))).containsExactly(absmax);

        // the project's decoder reads it back, and the loss is what it decodes to
        float[] decoded = f32(Fixtures.recover(out, DType.F32));
        double sq = 0;
        for (int i = 0; i < gate.length; i++) sq += ((double) decoded[i] - gate[i]) * ((double) decoded[i] - gate[i]);
        assertThat(loss.perTensor().keySet()).containsExactly(GATE);
        assertThat(loss.total().count()).isEqualTo(gate.length);
        assertThat(loss.total().sumSq()).isCloseTo(sq, org.assertj.core.data.Offset.offset(sq * 1e-12));
    }

    @Test
    void theWeightsBlockAbsmaxAreTakenOncePerWholePiece() {
        FourBitTensors.PieceAbsmax left = new FourBitTensors.PieceAbsmax(3 * 1024, 1024);
        left.put(0, new float[]{1, 2});
        left.put(1024, new float[]{3, 4});
        left.put(512, new float[]{9, 9}); // not where a piece starts: not kept
        float[] dest = new float[2];
        assertThat(left.copyBlockAbsmax(512, 2, dest)).isFalse();
        assertThat(left.copyBlockAbsmax(1024, 1, dest)).as("another piece length").isFalse();
        assertThat(left.copyBlockAbsmax(1024, 2, dest)).as("taken by the failed call above").isFalse();
        assertThat(left.copyBlockAbsmax(0, 2, dest)).isTrue();
        assertThat(dest).containsExactly(1, 2);
        assertThat(left.copyBlockAbsmax(0, 2, dest)).as("taken once").isFalse();
        assertThat(left.copyBlockAbsmax(2048, 2, dest)).as("never left").isFalse();
    }

    @Test
    void fp4WithABlockSizeOf128() {
        float[] gate = weights(16 * 64, 6);
        ForgetPlan plan = AMN.planForget(model(gate), "fp4", settings(Map.of("block-size", "128")), new LossMeter());
        MemoryArchive out = produce(plan);
        float[] absmax = new float[8];
        assertThat(out.bytes(GATE)).containsExactly(FourBitEncoderTest.expectedPacked(gate, 128, true, absmax));
        assertThat(f32(out.bytes(GATE + ".absmax"))).containsExactly(absmax);
        assertThat(new String(out.bytes(GATE + ".quant_state.bitsandbytes__fp4"), StandardCharsets.UTF_8))
                .isEqualTo("{\"quant_type\": \"fp4\", \"blocksize\": 128, \"dtype\": \"bfloat16\", \"shape\": [16, 64]}");
        assertThat(f32(out.bytes(GATE + ".quant_map"))).containsExactly(Fixtures.FP4);
    }

    @Test
    void doubleQuantStoresCodesNestedScalesAndTheOffset() {
        int n = 16 * 1040; // 260 blocks of 64: a full nested block of 256 and a short one
        float[] gate = weights(n, 7);
        gate[5] = 0.5f; // an outlier block
        ForgetPlan plan = AMN.planForget(model(gate), "nf4", settings(Map.of("double-quant", "true")), new LossMeter());
        MemoryArchive out = produce(plan);

        float[] absmax = new float[260];
        byte[] expectedCodes = FourBitEncoderTest.expectedPacked(gate, 64, false, absmax);
        assertThat(out.bytes(GATE)).containsExactly(expectedCodes);
        double sum = 0;
        for (float a : absmax) sum += a;
        float offset = (float) (sum / 260);
        float[] map = DoubleQuant.dynamicMap();
        byte[] codes = new byte[260];
        float[] scales = new float[2];
        for (int nb = 0; nb < 2; nb++) {
            float s = 0;
            for (int b = nb * 256; b < Math.min(260, nb * 256 + 256); b++) s = Math.max(s, Math.abs(absmax[b] - offset));
            scales[nb] = s;
            for (int b = nb * 256; b < Math.min(260, nb * 256 + 256); b++) {
                codes[b] = (byte) DoubleQuantTest.kernelSearch(map, (absmax[b] - offset) * (1.0f / s));
            }
        }
        assertThat(out.bytes(GATE + ".absmax")).containsExactly(codes);
        assertThat(f32(out.bytes(GATE + ".nested_absmax"))).containsExactly(scales);
        assertThat(f32(out.bytes(GATE + ".nested_quant_map"))).containsExactly(map);
        // the two made of the offset pass's kept block absmax above; made again from the same
        // plan, once the pass has let them go, they read and compute the blocks: the same bytes
        MemoryArchive again = produce(plan.tensors().stream()
                .filter(t -> t.name().equals(GATE + ".absmax") || t.name().equals(GATE + ".nested_absmax")).toList());
        assertThat(again.bytes(GATE + ".absmax")).containsExactly(codes);
        assertThat(f32(again.bytes(GATE + ".nested_absmax"))).containsExactly(scales);

        byte[] blob = out.bytes(GATE + ".quant_state.bitsandbytes__nf4");
        String json = new String(blob, StandardCharsets.UTF_8);
        assertThat(json).startsWith("{\"quant_type\": \"nf4\", \"blocksize\": 64, \"dtype\": \"bfloat16\", \"shape\": [16, 1040], "
                + "\"nested_blocksize\": 256, \"nested_dtype\": \"float32\", \"nested_offset\": ");
        assertThat(json.strip()).endsWith("}");
        QuantState qs = QuantState.parse(GATE, blob, ParseLimits.defaults());
        assertThat(qs.nested().orElseThrow().offset()).isEqualTo(offset);
        // and the decoder agrees with the double-quantized scales
        float[] decoded = f32(Fixtures.recover(out, DType.F32));
        float[] values = FourBit.codeValues(Fixtures.NF4, false);
        for (int i = 0; i < n; i += 97) {
            int b = i / 64;
            float a = map[codes[b] & 0xFF] * scales[b / 256] + offset;
            int code = ((expectedCodes[i / 2] & 0xFF) >> (i % 2 == 0 ? 4 : 0)) & 15;
            assertThat(decoded[i]).isEqualTo(values[code] * a);
        }
    }

    @Test
    void aMeterThatIsOffSkipsTheMeasureAndChangesNoByte() {
        float[] gate = weights(16 * 1040, 7);
        int n = gate.length;
        byte[] expectedCodes = FourBitEncoderTest.expectedPacked(gate, 64, false, new float[n / 64]);
        for (String target : List.of("nf4", "int8")) {
            ForgetOptions opts = target.equals("nf4") ? settings(Map.of("double-quant", "true")) : ForgetOptions.defaults();
            LossMeter on = new LossMeter();
            LossMeter off = LossMeter.off();
            MemoryArchive measured = produce(AMN.planForget(model(gate), target, opts, on));
            MemoryArchive unmeasured = produce(AMN.planForget(model(gate), target, opts, off));
            assertThat(unmeasured.tensors()).isEqualTo(measured.tensors());
            for (var t : measured.tensors()) {
                assertThat(unmeasured.bytes(t.name())).as(target + " " + t.name()).containsExactly(measured.bytes(t.name()));
            }
            assertThat(on.perTensor().get(GATE).count()).as(target).isEqualTo(n);
            assertThat(off.perTensor()).as(target).isEmpty();
        }
        assertThat(produce(AMN.planForget(model(gate), "nf4", settings(Map.of("double-quant", "true")), LossMeter.off()))
                .bytes(GATE)).containsExactly(expectedCodes);
    }

    @Test
    void int8WritesRowsTheirScalesAndTheRowFormat() {
        float[] gate = weights(16 * 64, 8);
        ForgetPlan plan = AMN.planForget(model(gate), "int8", ForgetOptions.defaults(), new LossMeter());
        MemoryArchive out = produce(plan);
        String prefix = "model.layers.0.mlp.gate_proj";
        byte[] codes = out.bytes(GATE);
        float[] scb = f32(out.bytes(prefix + ".SCB"));
        for (int r = 0; r < 16; r++) {
            float[] row = java.util.Arrays.copyOfRange(gate, r * 64, (r + 1) * 64);
            float[] want = new float[1];
            assertThat(java.util.Arrays.copyOfRange(codes, r * 64, (r + 1) * 64)).containsExactly(Int8EncoderTest.expectedCodes(row, want));
            assertThat(scb[r]).isEqualTo(want[0]);
        }
        assertThat(out.bytes(prefix + ".weight_format")).containsExactly(0);
        assertThat(plan.metadata().get("quantization_config")).contains("\"load_in_8bit\": true", "\"_load_in_4bit\": false");
        // the SCB above are the ones the weight's encoder left (made after it); made alone from
        // a fresh plan they are read and computed: the same bits, rows of NaN and overflow included
        float[] odd = gate.clone();
        odd[3 * 64 + 5] = Float.NaN;
        odd[7 * 64] = 1e6f; // beyond float16: the row's SCB is infinity
        ForgetPlan left = AMN.planForget(model(odd), "int8", ForgetOptions.defaults(), new LossMeter());
        ForgetPlan fresh = AMN.planForget(model(odd), "int8", ForgetOptions.defaults(), new LossMeter());
        PlannedTensor scbTensor = fresh.tensors().stream().filter(t -> t.name().equals(prefix + ".SCB")).findFirst().orElseThrow();
        assertThat(scbTensor.producer()).isInstanceOf(io.anamnesis.api.spi.TensorProducer.After.class);
        byte[] computed = produce(List.of(scbTensor)).bytes(prefix + ".SCB");
        assertThat(produce(left).bytes(prefix + ".SCB")).containsExactly(computed);
        assertThat(f32(computed)[7]).isEqualTo(Float.POSITIVE_INFINITY);
        assertThat(f32(Fixtures.recover(out, DType.F32))).hasSize(16 * 64);
    }

    @Test
    void keptLinearLayersAreListedForTransformersToSkip() {
        ForgetOptions keep = new ForgetOptions(Map.of(), Optional.empty(), false, List.of(java.util.regex.Pattern.compile("gate_proj")));
        ForgetPlan plan = AMN.planForget(model(weights(1024, 9)), "nf4", keep, new LossMeter());
        assertThat(plan.encodedCount()).isZero();
        assertThat(plan.metadata().get("quantization_config")).contains("\"llm_int8_skip_modules\": [\"model.layers.0.mlp.gate_proj\"]");
    }

    @Test
    void settingsBitsandbytesCannotTakeAreInvalidRequests() {
        MemoryArchive m = model(weights(1024, 10));
        for (String bad : new String[]{"48", "63", "16", "8192", "0", "-64", "abc"}) {
            assertThatThrownBy(() -> AMN.planForget(m, "nf4", settings(Map.of("block-size", bad)), new LossMeter()))
                    .as("block size " + bad).isInstanceOf(InvalidRequestException.class).hasMessageContaining("block size");
        }
        assertThatThrownBy(() -> AMN.planForget(m, "int8", settings(Map.of("block-size", "64")), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("no --block-size");
        assertThatThrownBy(() -> AMN.planForget(m, "fp4", settings(Map.of("granularity", "block")), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("not --granularity");
        assertThatThrownBy(() -> AMN.planForget(m, "nf4", new ForgetOptions(Map.of(), Optional.of(m), false, List.of()),
                new LossMeter())).isInstanceOf(InvalidRequestException.class).hasMessageContaining("importance");
    }

    @Test
    void likeTakesTensorsBlockSizeDoubleQuantAndDtypeFromTheReference() {
        float[] gate = weights(16 * 1040, 11);
        ForgetPlan refPlan = AMN.planForget(model(gate), "fp4",
                settings(Map.of("block-size", "256", "double-quant", "true")), new LossMeter());
        MemoryArchive reference = produce(refPlan);
        assertThat(AMN.imitation(reference)).isEqualTo("fp4");

        // a "fine-tuned" model: other values, stored in F32 this time
        float[] tuned = weights(16 * 1040, 12);
        ByteBuffer f = ByteBuffer.allocate(4 * tuned.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : tuned) f.putFloat(v);
        MemoryArchive model = model(tuned).add(GATE, DType.F32, new long[]{16, 1040}, f.array());
        ForgetPlan plan = AMN.planForget(model, "fp4", ForgetOptions.defaults().imitating(reference), new LossMeter());
        assertThat(plan.decisions()).filteredOn(ForgetPlan.Decision::encoded).extracting(ForgetPlan.Decision::tensor)
                .containsExactly(GATE);
        MemoryArchive out = produce(plan);
        QuantState qs = QuantState.parse(GATE, out.bytes(GATE + ".quant_state.bitsandbytes__fp4"), ParseLimits.defaults());
        // the reference's dtype (bfloat16), not the input's float32
        assertThat(qs.dtype()).isEqualTo("bfloat16");
        assertThat(qs.blocksize()).isEqualTo(256);
        assertThat(qs.nested()).isPresent();
        assertThat(out.bytes(GATE + ".absmax")).hasSize(65);
        assertThat(plan.metadata().get("quantization_config")).isEqualTo(refPlan.metadata().get("quantization_config"));

        // the reference quantizes [16, 1040]; a model of another shape cannot follow it
        MemoryArchive other = model(weights(16 * 64, 13));
        assertThatThrownBy(() -> AMN.planForget(other, "fp4", ForgetOptions.defaults().imitating(reference), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("same shapes");
        // a code book that is not bitsandbytes' own
        float[] odd = Fixtures.FP4.clone();
        odd[2] = 0.7f;
        MemoryArchive custom = produce(refPlan).f32(GATE + ".quant_map", odd);
        assertThatThrownBy(() -> AMN.planForget(model, "fp4", ForgetOptions.defaults().imitating(custom), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("code book");
        // the reference's quantization_config goes into the output: another scheme's, or no JSON object, is refused
        MemoryArchive gptqSays = produce(refPlan).meta("quantization_config", "{\"quant_method\": \"gptq\", \"bits\": 4}");
        assertThatThrownBy(() -> AMN.planForget(model, "fp4", ForgetOptions.defaults().imitating(gptqSays), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("quant_method 'gptq'");
        for (String bad : new String[]{"{{{", "5"}) {
            MemoryArchive notJson = produce(refPlan).meta("quantization_config", bad);
            assertThatThrownBy(() -> AMN.planForget(model, "fp4", ForgetOptions.defaults().imitating(notJson), new LossMeter()))
                    .as(bad).isInstanceOf(io.anamnesis.api.MalformedFileException.class).hasMessageContaining("quantization_config");
        }
    }

    @Test
    void decodingAQuantizedFileThenImitatingItGivesItsBytesBack() {
        float[] gate = weights(16 * 64, 14);
        for (String target : new String[]{"nf4", "fp4", "int8"}) {
            MemoryArchive reference = produce(AMN.planForget(model(gate), target, ForgetOptions.defaults(), new LossMeter()));
            // forget the reference like itself: recovered on the fly, encoded again
            MemoryArchive again = produce(AMN.planForget(reference, target, ForgetOptions.defaults().imitating(reference),
                    new LossMeter()));
            for (var e : reference.tensors()) {
                assertThat(again.bytes(e.name())).as(target + " " + e.name()).containsExactly(reference.bytes(e.name()));
            }
        }
    }
}
