package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
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
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Gemma3ForCausalLM folders, and the text model of Gemma3ForConditionalGeneration ones, to
 * GGUF as convert_hf_to_gguf.py's {@code Gemma3Model} writes them (ca01960e6a): TextModel's
 * keys with the local rope base ({@code rope.freq_base_swa}) and a linear rope scaling, then
 * Gemma3Model's over them, a key keeping the place TextModel gave it (gguf-py's writer
 * overwrites in place); gemma2's four norms per block with per-head q/k norms, every norm
 * weight w written as 1 + w; an lm_head kept as output when the checkpoint has one; a
 * multimodal checkpoint's {@code text_config} merged over its top level, its
 * {@code language_model.} prefix removed and its vision tower and projector left out (and
 * said so); Gemma3TextConfig's defaults for what its config files leave out; the embeddings
 * cut to the vocabulary; and what is refused because llama.cpp would compute another model.
 * The expected keys, order and values are read off the converter's and llama.cpp's source,
 * not produced by amn. With the oracles ({@code ORACLE_CACHE}) and the corpus's SentencePiece
 * {@code tokenizer.model}, llama.cpp's logits of converted files are checked against
 * {@code bench/scripts/decoder_reference.py}'s independent forward pass, with local and global
 * layers and a sequence longer than the sliding window; each part is skipped, saying so,
 * without what it needs.
 */
class Gemma3ToGgufTest {
    /** Seven layers with a pattern of 6: layers 0-4 and 6 local, layer 5 global; head_dim not hidden/heads. */
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 7, HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16;
    static final String TOKENS = "2,45,100,7,250,31,12,300,88,5,19,64";
    @TempDir
    Path tmp;

    /** A complete gemma-3-1b-it-style config.json of the tiny model (every key the converter reads). */
    static Map<String, Object> config() {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("architectures", List.of("Gemma3ForCausalLM"));
        c.put("model_type", "gemma3_text");
        c.put("vocab_size", VOCAB);
        c.put("hidden_size", HIDDEN);
        c.put("intermediate_size", FF);
        c.put("num_hidden_layers", LAYERS);
        c.put("num_attention_heads", HEADS);
        c.put("num_key_value_heads", KV_HEADS);
        c.put("head_dim", HEAD_DIM);
        c.put("max_position_embeddings", 32768);
        c.put("rms_norm_eps", 1e-6);
        c.put("rope_theta", 1000000.0);
        c.put("rope_local_base_freq", 10000.0);
        c.put("rope_scaling", null);
        c.put("sliding_window", 512);
        c.put("sliding_window_pattern", 6);
        c.put("query_pre_attn_scalar", HEAD_DIM);
        c.put("attn_logit_softcapping", null);
        c.put("final_logit_softcapping", null);
        c.put("hidden_activation", "gelu_pytorch_tanh");
        c.put("bos_token_id", 2);
        c.put("eos_token_id", List.of(1, 106));
        c.put("pad_token_id", 0);
        c.put("torch_dtype", "float32");
        return c;
    }

    /**
     * A Gemma3ForConditionalGeneration config.json as gemma-3-4b-it's is laid out: the text
     * config names the sizes, the layer count, the rope scaling and the sliding window (and
     * here the heads, head_dim, query_pre_attn_scalar and vocabulary, which the tiny model
     * changes); everything else is Gemma3TextConfig's default.
     */
    static Map<String, Object> multimodalConfig() {
        Map<String, Object> text = new LinkedHashMap<>();
        text.put("hidden_size", HIDDEN);
        text.put("intermediate_size", FF);
        text.put("model_type", "gemma3_text");
        text.put("num_hidden_layers", LAYERS);
        text.put("num_attention_heads", HEADS);
        text.put("num_key_value_heads", KV_HEADS);
        text.put("head_dim", HEAD_DIM);
        text.put("query_pre_attn_scalar", HEAD_DIM);
        text.put("rope_scaling", Map.of("factor", 8.0, "rope_type", "linear"));
        text.put("sliding_window", 1024);
        text.put("vocab_size", VOCAB);
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("architectures", List.of("Gemma3ForConditionalGeneration"));
        c.put("boi_token_index", 255999);
        c.put("eoi_token_index", 256000);
        c.put("eos_token_id", List.of(1, 106));
        c.put("image_token_index", 262144);
        c.put("mm_tokens_per_image", 256);
        c.put("model_type", "gemma3");
        c.put("text_config", text);
        c.put("vision_config", Map.of("hidden_size", 16, "model_type", "siglip_vision_model", "num_hidden_layers", 1));
        c.put("torch_dtype", "float32");
        return c;
    }

    /** The text model's tensor shapes, by Hugging Face name, in name order. */
    static Map<String, long[]> shapes(boolean lmHead) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        if (lmHead) shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String n : List.of("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                    "post_feedforward_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
            }
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD_DIM});
            shapes.put(p + "self_attn.q_norm.weight", new long[]{HEAD_DIM});
            shapes.put(p + "self_attn.k_norm.weight", new long[]{HEAD_DIM});
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return shapes;
    }

    /** Hugging Face name to GGUF name, as gguf-py's tensor_mapping maps MODEL_ARCH.GEMMA3's tensors. */
    static Map<String, String> ggufNames(boolean lmHead) {
        Map<String, String> names = new LinkedHashMap<>();
        names.put("model.embed_tokens.weight", "token_embd.weight");
        if (lmHead) names.put("lm_head.weight", "output.weight");
        names.put("model.norm.weight", "output_norm.weight");
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".", b = "blk." + i + ".";
            names.put(p + "input_layernorm.weight", b + "attn_norm.weight");
            names.put(p + "post_attention_layernorm.weight", b + "post_attention_norm.weight");
            names.put(p + "pre_feedforward_layernorm.weight", b + "ffn_norm.weight");
            names.put(p + "post_feedforward_layernorm.weight", b + "post_ffw_norm.weight");
            names.put(p + "self_attn.q_proj.weight", b + "attn_q.weight");
            names.put(p + "self_attn.k_proj.weight", b + "attn_k.weight");
            names.put(p + "self_attn.v_proj.weight", b + "attn_v.weight");
            names.put(p + "self_attn.o_proj.weight", b + "attn_output.weight");
            names.put(p + "self_attn.q_norm.weight", b + "attn_q_norm.weight");
            names.put(p + "self_attn.k_norm.weight", b + "attn_k_norm.weight");
            names.put(p + "mlp.gate_proj.weight", b + "ffn_gate.weight");
            names.put(p + "mlp.up_proj.weight", b + "ffn_up.weight");
            names.put(p + "mlp.down_proj.weight", b + "ffn_down.weight");
        }
        return names;
    }

    private Path folder(String name, Map<String, Object> config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), LlamaRunOracleTest.JSON.writeValueAsString(config));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors);
        return dir;
    }

    private Path folder(String name, Map<String, Object> config) throws IOException {
        return folder(name, config, DecoderReference.randomF32(shapes(false), new Random(name.hashCode())));
    }

    private ReferenceGguf converted(Path dir, String dtype) throws IOException {
        return DecoderReference.converted(dir, dtype, false, tmp);
    }

    private static float f32(ReferenceGguf g, String key) {
        assertThat(g.kv.get(key).type()).as(key + " is a float32").isEqualTo(6);
        return Float.intBitsToFloat((int) g.kv.get(key).asLong());
    }

    private static long u32(ReferenceGguf g, String key) {
        assertThat(g.kv.get(key).type()).as(key + " is a uint32").isEqualTo(4);
        return g.kv.get(key).asLong();
    }

    /** The keys from gemma3.block_count on, TextModel's first; only general.* before it. */
    private static List<String> hyperKeys(ReferenceGguf g) {
        List<String> keys = new ArrayList<>(g.kv.keySet());
        int from = keys.indexOf("gemma3.block_count");
        assertThat(from).as("gemma3.block_count written").isPositive();
        assertThat(keys.subList(0, from)).as("only general.* keys before it").allMatch(k -> k.startsWith("general."));
        return keys.subList(from, keys.size());
    }

    /**
     * TextModel.set_gguf_parameters (block count, context, embedding and feed-forward lengths,
     * heads, key/value heads, rope base, the local rope base as rope.freq_base_swa, the RMS
     * epsilon, key/value lengths, file type), then Gemma3Model's: context length, heads, RMS
     * epsilon, key/value lengths, rope base and key/value heads overwrite TextModel's in place,
     * the sliding window is new; no final soft-cap (null), no attention soft-cap key.
     */
    @Test
    void textModelsKeysThenGemma3sOverThemInTheConvertersOrder() throws IOException {
        ReferenceGguf g = converted(folder("gemma3-keys", config()), "f16");
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("gemma3");
        assertThat(hyperKeys(g)).containsExactly("gemma3.block_count", "gemma3.context_length", "gemma3.embedding_length",
                "gemma3.feed_forward_length", "gemma3.attention.head_count", "gemma3.attention.head_count_kv",
                "gemma3.rope.freq_base", "gemma3.rope.freq_base_swa", "gemma3.attention.layer_norm_rms_epsilon",
                "gemma3.attention.key_length", "gemma3.attention.value_length", "general.file_type",
                "gemma3.attention.sliding_window", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(u32(g, "gemma3.block_count")).isEqualTo(LAYERS);
        assertThat(u32(g, "gemma3.context_length")).isEqualTo(32768);
        assertThat(u32(g, "gemma3.embedding_length")).isEqualTo(HIDDEN);
        assertThat(u32(g, "gemma3.feed_forward_length")).isEqualTo(FF);
        assertThat(u32(g, "gemma3.attention.head_count")).isEqualTo(HEADS);
        assertThat(u32(g, "gemma3.attention.head_count_kv")).isEqualTo(KV_HEADS);
        assertThat(f32(g, "gemma3.rope.freq_base")).isEqualTo(1e6f);
        assertThat(f32(g, "gemma3.rope.freq_base_swa")).isEqualTo(1e4f);
        assertThat(f32(g, "gemma3.attention.layer_norm_rms_epsilon")).isEqualTo(1e-6f);
        assertThat(u32(g, "gemma3.attention.key_length")).isEqualTo(HEAD_DIM);
        assertThat(u32(g, "gemma3.attention.value_length")).isEqualTo(HEAD_DIM);
        assertThat(u32(g, "general.file_type")).isEqualTo(1);
        assertThat(u32(g, "gemma3.attention.sliding_window")).isEqualTo(512);
    }

    /**
     * A linear rope scaling (gemma-3-4b's, factor 8) is TextModel's rope.scaling.type and
     * .factor before the rope base; a final soft-cap is written after the file type, before
     * the sliding window.
     */
    @Test
    void linearScalingAndFinalSoftcapWhereTheConverterWritesThem() throws IOException {
        Map<String, Object> c = config();
        c.put("rope_scaling", Map.of("factor", 8.0, "rope_type", "linear"));
        c.put("final_logit_softcapping", 30.0);
        ReferenceGguf g = converted(folder("gemma3-linear", c), "f32");
        assertThat(hyperKeys(g)).containsExactly("gemma3.block_count", "gemma3.context_length", "gemma3.embedding_length",
                "gemma3.feed_forward_length", "gemma3.attention.head_count", "gemma3.attention.head_count_kv",
                "gemma3.rope.scaling.type", "gemma3.rope.scaling.factor", "gemma3.rope.freq_base", "gemma3.rope.freq_base_swa",
                "gemma3.attention.layer_norm_rms_epsilon", "gemma3.attention.key_length", "gemma3.attention.value_length",
                "general.file_type", "gemma3.final_logit_softcapping", "gemma3.attention.sliding_window",
                "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("gemma3.rope.scaling.type").asString()).isEqualTo("linear");
        assertThat(f32(g, "gemma3.rope.scaling.factor")).isEqualTo(8f);
        assertThat(f32(g, "gemma3.final_logit_softcapping")).isEqualTo(30f);
    }

    /**
     * transformers 5's {@code rope_parameters} (a full_attention and a sliding_attention part)
     * say what rope_theta, rope_local_base_freq and rope_scaling say: the same keys and values.
     */
    @Test
    void ropeParametersGiveTheKeysOfTheOlderFields() throws IOException {
        Map<String, Object> old = config();
        old.put("rope_scaling", Map.of("factor", 8.0, "rope_type", "linear"));
        old.put("rope_local_base_freq", 500.0);
        Map<String, Object> parameters = config();
        parameters.remove("rope_theta");
        parameters.remove("rope_local_base_freq");
        parameters.remove("rope_scaling");
        parameters.put("rope_parameters", Map.of(
                "full_attention", Map.of("rope_type", "linear", "factor", 8.0, "rope_theta", 1000000.0),
                "sliding_attention", Map.of("rope_type", "default", "rope_theta", 500.0)));
        ReferenceGguf a = converted(folder("g3-old", old), "f32"), b = converted(folder("g3-new", parameters), "f32");
        assertThat(f32(b, "gemma3.rope.freq_base_swa")).isEqualTo(500f);
        assertThat(hyperKeys(b)).isEqualTo(hyperKeys(a));
        for (String k : hyperKeys(a)) {
            assertThat(b.kv.get(k).value()).as(k).isEqualTo(a.kv.get(k).value());
        }
    }

    /** sliding_window_pattern 1 is every layer global: the converter writes no sliding window (llama.cpp then has none). */
    @Test
    void aPatternOfOneWritesNoSlidingWindow() throws IOException {
        Map<String, Object> c = config();
        c.put("sliding_window_pattern", 1);
        ReferenceGguf g = converted(folder("gemma3-global", c), "f32");
        assertThat(g.kv).doesNotContainKey("gemma3.attention.sliding_window");
        assertThat(hyperKeys(g)).contains("general.file_type").endsWith("general.quantization_version", "tokenizer.ggml.model");
    }

    /**
     * What Gemma3TextConfig fills in for a key config.json leaves out (and the converter's own
     * fallbacks in Gemma3Model agree): context 131072, RMS epsilon 1e-6, rope bases 1e6 and
     * 1e4, a sliding window of 4096 with a pattern of 6.
     */
    @Test
    void missingKeysAreGemma3TextConfigsDefaults() throws IOException {
        Map<String, Object> c = config();
        for (String k : List.of("max_position_embeddings", "rms_norm_eps", "rope_theta", "rope_local_base_freq",
                "sliding_window", "sliding_window_pattern")) {
            c.remove(k);
        }
        ReferenceGguf g = converted(folder("gemma3-defaults", c), "f32");
        assertThat(u32(g, "gemma3.context_length")).isEqualTo(131072);
        assertThat(f32(g, "gemma3.attention.layer_norm_rms_epsilon")).isEqualTo(1e-6f);
        assertThat(f32(g, "gemma3.rope.freq_base")).isEqualTo(1e6f);
        assertThat(f32(g, "gemma3.rope.freq_base_swa")).isEqualTo(1e4f);
        assertThat(u32(g, "gemma3.attention.sliding_window")).isEqualTo(4096);
    }

    /**
     * Names (gemma2's norms, per-head q/k norms), types (norms F32, weights the output type),
     * values: weights as stored (no row permutation: llama.cpp's gemma3 rope is NEOX), every
     * norm weight w, q/k norms included, written as the float32 1 + w; an lm_head is kept as
     * output.weight (Gemma3Model does not drop it), none is written without one.
     */
    @ParameterizedTest
    @ValueSource(booleans = {false, true})
    void namesNormPlusOneAndAnOutputOnlyWhenStored(boolean lmHead) throws IOException {
        Path dir = folder("gemma3-names-" + lmHead, config(), DecoderReference.randomF32(shapes(lmHead), new Random(5)));
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf f16 = converted(dir, "f16"), f32 = converted(dir, "f32");
        Map<String, String> names = ggufNames(lmHead);
        assertThat(f16.tensors.stream().map(ReferenceGguf.Tensor::name).sorted().toList())
                .containsExactlyElementsOf(names.values().stream().sorted().toList());
        for (var e : names.entrySet()) {
            ReferenceSafetensors.Tensor t = in.get(e.getKey());
            boolean norm = e.getKey().endsWith("norm.weight");
            assertThat(f16.tensor(e.getValue()).type()).as(e.getValue() + " in an F16 file").isEqualTo(norm ? 0 : 1);
            long[] ne = f32.tensor(e.getValue()).ne();
            long[] reversed = new long[t.shape().length];
            for (int i = 0; i < reversed.length; i++) reversed[i] = t.shape()[t.shape().length - 1 - i];
            assertThat(ne).as(e.getValue() + " shape (ggml's ne: reversed)").isEqualTo(reversed);
            byte[] want = norm ? plusOneF32(t.bytes()) : t.bytes();
            assertThat(f32.tensor(e.getValue()).bytes()).as(e.getValue() + (norm ? ": 1 + w in float32" : ": as stored"))
                    .isEqualTo(want);
        }
    }

    /**
     * Gemma3ForConditionalGeneration: text_config over the top level (Gemma3TextConfig's defaults
     * under it), tensors language_model.model.* as the text model's, the vision tower and the
     * projector left out, and the summary says so.
     */
    @Test
    void aMultimodalCheckpointGivesItsTextModelAndSaysWhatItLeftOut() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> text = DecoderReference.randomF32(shapes(false), new Random(9));
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>();
        text.forEach((k, v) -> t.put("language_model." + k, v));
        Map<String, long[]> vision = new TreeMap<>();
        vision.put("vision_tower.vision_model.embeddings.patch_embedding.weight", new long[]{16, 3, 4, 4});
        vision.put("vision_tower.vision_model.post_layernorm.weight", new long[]{16});
        vision.put("multi_modal_projector.mm_input_projection_weight", new long[]{16, HIDDEN});
        vision.put("multi_modal_projector.mm_soft_emb_norm.weight", new long[]{16});
        t.putAll(DecoderReference.randomF32(vision, new Random(10)));
        Path dir = folder("gemma3-mm", multimodalConfig(), t);
        Path out = tmp.resolve("mm.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "f32", "-o", out.toString(),
                "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("left out 4 tensors of the vision tower and multimodal projector")
                .contains("multi_modal_projector.* 2").contains("vision_tower.* 2");
        ReferenceGguf g = ReferenceGguf.read(out);
        Map<String, String> names = ggufNames(false);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).sorted().toList())
                .containsExactlyElementsOf(names.values().stream().sorted().toList());
        for (var e : names.entrySet()) {
            if (e.getKey().endsWith("norm.weight")) continue;
            assertThat(g.tensor(e.getValue()).bytes()).as(e.getValue()).isEqualTo(text.get(e.getKey()).bytes());
        }
        assertThat(g.tensor("blk.0.attn_q_norm.weight").bytes())
                .isEqualTo(plusOneF32(text.get("model.layers.0.self_attn.q_norm.weight").bytes()));
        assertThat(hyperKeys(g)).containsExactly("gemma3.block_count", "gemma3.context_length", "gemma3.embedding_length",
                "gemma3.feed_forward_length", "gemma3.attention.head_count", "gemma3.attention.head_count_kv",
                "gemma3.rope.scaling.type", "gemma3.rope.scaling.factor", "gemma3.rope.freq_base", "gemma3.rope.freq_base_swa",
                "gemma3.attention.layer_norm_rms_epsilon", "gemma3.attention.key_length", "gemma3.attention.value_length",
                "general.file_type", "gemma3.attention.sliding_window", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(u32(g, "gemma3.block_count")).isEqualTo(LAYERS);
        assertThat(u32(g, "gemma3.context_length")).as("Gemma3TextConfig's default").isEqualTo(131072);
        assertThat(u32(g, "gemma3.attention.head_count_kv")).isEqualTo(KV_HEADS);
        assertThat(f32(g, "gemma3.rope.scaling.factor")).isEqualTo(8f);
        assertThat(f32(g, "gemma3.rope.freq_base")).isEqualTo(1e6f);
        assertThat(f32(g, "gemma3.rope.freq_base_swa")).isEqualTo(1e4f);
        assertThat(u32(g, "gemma3.attention.sliding_window")).isEqualTo(1024);
    }

    /**
     * Gemma3Model.modify_tensors cuts embed_tokens to the vocabulary it reads: with a
     * tokenizer.json (no tokenizer.model), its vocabulary and added tokens; the summary says so.
     */
    @Test
    void theEmbeddingsAreCutToTheVocabulary() throws IOException {
        Path dir = folder("gemma3-cut", config());
        StringBuilder vocab = new StringBuilder();
        for (int i = 0; i < 40; i++) vocab.append(i == 0 ? "" : ", ").append("\"t").append(i).append("\": ").append(i);
        Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": {" + vocab + "}, \"merges\": []}, "
                + "\"added_tokens\": [{\"id\": 40, \"content\": \"<a>\", \"special\": true}, "
                + "{\"id\": 41, \"content\": \"<b>\", \"special\": true}]}");
        Path out = tmp.resolve("cut.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "f32", "-o", out.toString(),
                "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("token_embd.weight: 64 rows cut to the vocabulary's 42");
        ReferenceGguf g = ReferenceGguf.read(out);
        byte[] stored = ReferenceSafetensors.read(dir.resolve("model.safetensors")).get("model.embed_tokens.weight").bytes();
        assertThat(g.tensor("token_embd.weight").ne()).containsExactly(HIDDEN, 42);
        assertThat(g.tensor("token_embd.weight").bytes()).isEqualTo(Arrays.copyOf(stored, 4 * HIDDEN * 42));
    }

    /**
     * Refused: what the converter stops at (an attention soft-cap), the sizes it needs
     * (exit 3), and what llama.cpp would compute differently from the checkpoint (exit 6): a
     * layer pattern other than its 6 (or 1), another layer_types layout, queries scaled by
     * other than 1/sqrt(head_dim), a rope scaling other than linear, a scaled local rope,
     * bidirectional attention.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "sliding_window_pattern|4|6|config.json sliding_window_pattern is 4",
            "layer_types|alternating|6|config.json layer_types makes layer 1 full_attention",
            "attn_logit_softcapping|50.0|6|attn_logit_softcapping is 50.0",
            "query_pre_attn_scalar|256|6|config.json query_pre_attn_scalar is 256",
            "rope_scaling|yarn|6|rope scaling type yarn",
            "rope_parameters|scaled-local|6|sliding_attention rope scaling linear",
            "use_bidirectional_attention|true|6|use_bidirectional_attention",
            "sliding_window|null|3|config.json sliding_window",
            "hidden_size|-|3|config.json hidden_size is missing",
            "intermediate_size|-|3|config.json intermediate_size is missing"})
    void refused(String key, String value, int code, String message) throws IOException {
        Map<String, Object> c = config();
        switch (value) {
            case "-" -> c.remove(key);
            case "null" -> c.put(key, null);
            case "alternating" -> {
                List<String> types = new ArrayList<>();
                for (int i = 0; i < LAYERS; i++) types.add(i % 2 == 1 ? "full_attention" : "sliding_attention");
                c.put(key, types);
            }
            case "yarn" -> c.put(key, Map.of("rope_type", "yarn", "factor", 4.0, "original_max_position_embeddings", 8192));
            case "scaled-local" -> {
                c.remove("rope_theta");
                c.remove("rope_local_base_freq");
                c.remove("rope_scaling");
                c.put(key, Map.of("full_attention", Map.of("rope_type", "default", "rope_theta", 1000000.0),
                        "sliding_attention", Map.of("rope_type", "linear", "factor", 8.0, "rope_theta", 10000.0)));
            }
            case "true" -> c.put(key, true);
            default -> c.put(key, value.contains(".") ? (Object) Double.parseDouble(value) : (Object) Integer.parseInt(value));
        }
        Path dir = folder("gemma3-refused-" + key, c);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(code);
        assertThat(r.err()).contains(message);
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();
    }

    /** The layout llama.cpp assumes, spelled out in layer_types (as newer transformers save it), is taken. */
    @Test
    void layerTypesOfThePatternAreTaken() throws IOException {
        Map<String, Object> c = config();
        List<String> types = new ArrayList<>();
        for (int i = 0; i < LAYERS; i++) types.add(i == 5 ? "full_attention" : "sliding_attention");
        c.put("layer_types", types);
        assertThat(u32(converted(folder("gemma3-layer-types", c), "f32"), "gemma3.attention.sliding_window")).isEqualTo(512);
    }

    /** Gemma3Model.set_vocab with tokenizer.model: SentencePiece, then add_space_prefix false (no CodeGemma EOT). */
    @Test
    void sentencePieceVocabularyWithoutSpacePrefix() throws IOException {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's hf-to-gguf SentencePiece tokenizer.model is not here: not checked");
        Map<String, Object> c = config();
        c.put("vocab_size", 320);
        Map<String, long[]> s = shapes(false);
        s.put("model.embed_tokens.weight", new long[]{320, HIDDEN});
        Path dir = folder("gemma3-vocab", c, DecoderReference.randomF32(s, new Random(3)));
        Files.copy(sp.get(), dir.resolve("tokenizer.model"));
        Path out = tmp.resolve("vocab.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        List<String> keys = new ArrayList<>(g.kv.keySet());
        // eos_token_id [1, 106] is a list: gguf-py's SpecialVocab takes integers only
        assertThat(keys.subList(keys.indexOf("tokenizer.ggml.model"), keys.size())).containsExactly("tokenizer.ggml.model",
                "tokenizer.ggml.pre", "tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                "tokenizer.ggml.bos_token_id", "tokenizer.ggml.padding_token_id", "tokenizer.ggml.add_space_prefix");
        assertThat(g.kv.get("tokenizer.ggml.add_space_prefix").asLong()).as("false").isZero();
        assertThat(g.tensor("token_embd.weight").ne()).as("320 rows: the vocabulary is vocab_size's").containsExactly(HIDDEN, 320);
    }

    /**
     * llama.cpp's logits of our conversion = an independent forward pass of the folder
     * ({@code decoder_reference.py}: 6 layers with a pattern of 6, so layers 0-4 local with a
     * window of 4 and the local rope base 1e4, layer 5 global with 1e6; 12 tokens, longer than
     * the window; llama.cpp's F16 KV cache modelled). The multimodal folder is a
     * Gemma3ForConditionalGeneration checkpoint (gemma-3-4b-it's sparse text_config) whose
     * global layer has a linear rope scaling of 8. Within 5e-4 of the largest logit for F32
     * (measured 2.3e-5 plain, 1.8e-5 linear, 3.8e-5 with a local base of 500), 3e-3 for F16
     * (measured 3.4e-4 plain, 2.8e-4 multimodal: the linear folder's weights). A wrong layout is far off (see
     * {@link #theComparisonSeesTheLocalAndGlobalLayers}).
     */
    @ParameterizedTest
    @CsvSource({"plain,f32", "plain,f16", "linear,f32", "local500,f32", "multimodal,f16"})
    void llamaCppComputesTheReferenceForwardPass(String kind, String dtype) throws Exception {
        JsonNode cmp = compareWithLlamaCpp(kind, dtype);
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(cmp.path("model_desc").asText()).as(cmp.toString()).startsWith("gemma3");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 5e-4 : 3e-3);
    }

    /**
     * The comparison tells a wrong model from the right one: against the linear folder's
     * file, a reference without the sliding window, with the global rope (base and scaling) on
     * the local layers, with the scaling on the local layers too, or without the scaling, is
     * more than 1e-2 of the largest logit off (measured 0.44, 0.12, 0.12, 0.016 on seed 7);
     * against the local-base-500 folder, the file of the same weights with the default local
     * base 1e4 is off by more than 1e-2 (measured 0.025): llama.cpp reads rope.freq_base_swa.
     */
    @Test
    void theComparisonSeesTheLocalAndGlobalLayers() throws Exception {
        Path dir = make("linear");
        Path gguf = tmp.resolve("linear.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f32", gguf, true);
        assertThat(r.code()).as(r.err()).isZero();
        for (List<String> wrong : List.of(List.of("--variant", "no-window"), List.of("--variant", "global-rope-everywhere"),
                List.of("--variant", "scaled-local"), List.of("--no-rope-scaling"))) {
            JsonNode cmp = DecoderReference.compare(tmp, dir, gguf, "f32", TOKENS, wrong.toArray(String[]::new));
            assertThat(cmp.path("kv_f16").path("max_rel_diff").asDouble()).as(wrong + ": " + cmp).isGreaterThan(1e-2);
        }
        Path local500 = make("local500");
        Path defaultBase = tmp.resolve("default-base.gguf");
        r = DecoderReference.convert(make("plain"), "f32", defaultBase, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = DecoderReference.compare(tmp, local500, defaultBase, "f32", TOKENS);
        assertThat(cmp.path("kv_f16").path("max_rel_diff").asDouble()).as(cmp.toString()).isGreaterThan(1e-2);
    }

    private JsonNode compareWithLlamaCpp(String kind, String dtype) throws Exception {
        Path dir = make(kind);
        Path out = tmp.resolve(kind + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        return DecoderReference.compare(tmp, dir, out, dtype, TOKENS);
    }

    /** {@code decoder_reference.py make gemma3} of seed 7 ({@code kind}: plain, linear, local500, multimodal), once per test. */
    private Path make(String kind) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a "
                + "vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("forward-" + kind);
        if (Files.isDirectory(dir)) return dir;
        List<String> args = new ArrayList<>(List.of("gemma3", dir.toString(), "--sp", sp.get().toString(), "--seed", "7"));
        switch (kind) {
            case "linear" -> args.addAll(List.of("--linear", "8"));
            case "local500" -> args.addAll(List.of("--local-theta", "500"));
            case "multimodal" -> args.addAll(List.of("--linear", "8", "--multimodal"));
            default -> {
            }
        }
        DecoderReference.make(tmp, args.toArray(String[]::new));
        return dir;
    }

    private static byte[] plusOneF32(byte[] f32) {
        ByteBuffer src = ByteBuffer.wrap(f32).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = ByteBuffer.allocate(f32.length).order(ByteOrder.LITTLE_ENDIAN);
        while (src.hasRemaining()) out.putFloat(src.getFloat() + 1f);
        return out.array();
    }
}
