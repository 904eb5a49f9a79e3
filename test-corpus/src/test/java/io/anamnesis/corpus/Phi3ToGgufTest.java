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
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Phi3ForCausalLM folders to GGUF, as convert_hf_to_gguf.py's {@code Phi3MiniModel} writes
 * them: the fused {@code qkv_proj}/{@code gate_up_proj} kept fused as {@code attn_qkv}/
 * {@code ffn_up}, rows unpermuted; its own keys in its order (no TextModel keys, the rope
 * width from {@code partial_rotary_factor}, {@code sliding_window} 0 when absent); its
 * SentencePiece reading with added tokens over the pieces; the bad inputs. The folders are
 * made here, tiny and random; the vocabulary part needs the corpus's SentencePiece
 * tokenizer.model, and llama.cpp's logits ({@code ORACLE_CACHE}) are checked against
 * {@code bench/scripts/decoder_reference.py}'s independent forward pass. Each part is
 * skipped, saying so, without what it needs.
 */
class Phi3ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS;
    @TempDir
    Path tmp;

    static String config(String extra) {
        return "{\"architectures\": [\"Phi3ForCausalLM\"], \"model_type\": \"phi3\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + "\"max_position_embeddings\": 4096, \"original_max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-05, "
                + "\"rope_theta\": 10000.0, \"rope_scaling\": null, " + extra
                + "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, int qkvRows, int gateUpRows) {
        Random random = new Random(seed);
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.qkv_proj.weight", new long[]{qkvRows, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "mlp.gate_up_proj.weight", new long[]{gateUpRows, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, random);
    }

    private Path folder(String name, String extraConfig) throws IOException {
        return folder(name, extraConfig, (HEADS + 2 * KV_HEADS) * HEAD, 2 * FF);
    }

    private Path folder(String name, String extraConfig, int qkvRows, int gateUpRows) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config(extraConfig));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors(name.hashCode(), qkvRows, gateUpRows));
        return dir;
    }

    private ReferenceGguf converted(Path dir, String dtype, boolean vocab) throws IOException {
        return DecoderReference.converted(dir, dtype, vocab, tmp);
    }

    private static List<String> keysAfterGeneral(ReferenceGguf g) {
        List<String> keys = new ArrayList<>(g.kv.keySet());
        int from = keys.indexOf("phi3.context_length");
        assertThat(from).as("context_length written first of phi3's").isPositive();
        assertThat(keys.subList(0, from)).as("only general.* keys before it").allMatch(k -> k.startsWith("general."));
        return keys.subList(from, keys.size());
    }

    private static float f32(ReferenceGguf g, String key) {
        return Float.intBitsToFloat((int) g.kv.get(key).asLong());
    }

    /** Phi3MiniModel.set_gguf_parameters: none of TextModel's keys, its own in its order, sliding_window 0 without one. */
    @Test
    void keysArePhi3MiniModelsInItsOrder() throws IOException {
        ReferenceGguf g = converted(folder("Phi-3-tiny", ""), "f16", false);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("phi3");
        assertThat(keysAfterGeneral(g)).containsExactly("phi3.context_length", "phi3.rope.scaling.original_context_length",
                "phi3.embedding_length", "phi3.feed_forward_length", "phi3.block_count", "phi3.attention.head_count",
                "phi3.attention.head_count_kv", "phi3.attention.layer_norm_rms_epsilon", "phi3.rope.dimension_count",
                "phi3.rope.freq_base", "general.file_type", "phi3.attention.sliding_window", "general.quantization_version",
                "tokenizer.ggml.model");
        assertThat(g.kv.get("phi3.context_length").asLong()).isEqualTo(4096);
        assertThat(g.kv.get("phi3.rope.scaling.original_context_length").asLong()).isEqualTo(4096);
        assertThat(g.kv.get("phi3.feed_forward_length").asLong()).isEqualTo(FF);
        assertThat(g.kv.get("phi3.attention.head_count_kv").asLong()).isEqualTo(KV_HEADS);
        assertThat(g.kv.get("phi3.rope.dimension_count").asLong()).isEqualTo(HEAD);
        assertThat(f32(g, "phi3.rope.freq_base")).isEqualTo(10000f);
        assertThat(f32(g, "phi3.attention.layer_norm_rms_epsilon")).isEqualTo(1e-5f);
        assertThat(g.kv.get("phi3.attention.sliding_window").asLong()).as("absent: 0").isZero();
        assertThat(g.kv.get("general.file_type").asLong()).isEqualTo(1);
        assertThat(g.kv).doesNotContainKeys("phi3.vocab_size", "phi3.attention.key_length");
    }

    /** int(partial_rotary_factor * hidden_size) // num_attention_heads, and a sliding window as config.json says. */
    @ParameterizedTest
    @CsvSource({"0.5,4", "0.75,6", "1.0,8"})
    void ropeWidthFollowsThePartialRotaryFactor(double factor, long dims) throws IOException {
        ReferenceGguf g = converted(folder("phi3-partial-" + factor, "\"partial_rotary_factor\": " + factor
                + ", \"sliding_window\": 2047, "), "f32", false);
        assertThat(g.kv.get("phi3.rope.dimension_count").asLong()).isEqualTo(dims);
        assertThat(g.kv.get("phi3.attention.sliding_window").asLong()).isEqualTo(2047);
        assertThat(g.kv.get("general.file_type").asLong()).isZero();
    }

    /** Fused tensors keep their rows in order (no permutation, no split); weights in the output type, vectors F32. */
    @Test
    void namesTypesAndFusedRowsAsTheyAre() throws IOException {
        Path dir = folder("phi3-names", "");
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf f16 = converted(dir, "f16", false), f32 = converted(dir, "f32", false), bf16 = converted(dir, "bf16", false);
        Map<String, String> names = new LinkedHashMap<>();
        names.put("model.embed_tokens.weight", "token_embd.weight");
        names.put("model.norm.weight", "output_norm.weight");
        names.put("lm_head.weight", "output.weight");
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".", b = "blk." + i + ".";
            names.put(p + "input_layernorm.weight", b + "attn_norm.weight");
            names.put(p + "self_attn.qkv_proj.weight", b + "attn_qkv.weight");
            names.put(p + "self_attn.o_proj.weight", b + "attn_output.weight");
            names.put(p + "post_attention_layernorm.weight", b + "ffn_norm.weight");
            names.put(p + "mlp.gate_up_proj.weight", b + "ffn_up.weight");
            names.put(p + "mlp.down_proj.weight", b + "ffn_down.weight");
        }
        assertThat(f16.tensors.stream().map(ReferenceGguf.Tensor::name).sorted().toList())
                .containsExactlyElementsOf(names.values().stream().sorted().toList());
        for (var e : names.entrySet()) {
            ReferenceSafetensors.Tensor t = in.get(e.getKey());
            boolean vector = t.shape().length == 1;
            assertThat(f16.tensor(e.getValue()).type()).as(e.getValue() + " in an F16 file").isEqualTo(vector ? 0 : 1);
            assertThat(bf16.tensor(e.getValue()).type()).as(e.getValue() + " in a BF16 file").isEqualTo(vector ? 0 : 30);
            assertThat(f32.tensor(e.getValue()).bytes()).as(e.getValue() + ": the stored F32 values, rows in their order")
                    .isEqualTo(t.bytes());
        }
        assertThat(f32.tensor("blk.0.attn_qkv.weight").ne()).containsExactly(HIDDEN, (HEADS + 2 * KV_HEADS) * HEAD);
        assertThat(f32.tensor("blk.0.ffn_up.weight").ne()).containsExactly(HIDDEN, 2 * FF);
    }

    @ParameterizedTest
    @CsvSource({"original_max_position_embeddings", "rope_theta", "num_key_value_heads", "rms_norm_eps", "vocab_size",
            "intermediate_size"})
    void aMissingKeyIsMalformedNamingIt(String key) throws IOException {
        Path dir = folder("phi3-no-" + key, "");
        String config = Files.readString(dir.resolve("config.json"));
        String without = config.replaceAll("\"" + key + "\": [^,}]+, ", "");
        assertThat(without).isNotEqualTo(config);
        Files.writeString(dir.resolve("config.json"), without);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("config.json " + key + " is missing");
        assertThat(Files.exists(tmp.resolve("out.gguf"))).as("no half-written output").isFalse();
    }

    /** Fused rows that are not the config's heads (or twice its feed-forward width) are malformed, naming the tensor. */
    @ParameterizedTest
    @CsvSource({"qkv,model.layers.0.self_attn.qkv_proj.weight", "gate_up,model.layers.0.mlp.gate_up_proj.weight"})
    void fusedRowsThatDisagreeWithTheConfigAreMalformed(String which, String tensor) throws IOException {
        boolean qkv = which.equals("qkv");
        // q and k and v of equal head counts (3 x 4 heads) where the config says 4 + 2 x 2; gate only, no up
        Path dir = folder("phi3-bad-" + which, "", qkv ? 3 * HEADS * HEAD : (HEADS + 2 * KV_HEADS) * HEAD, qkv ? 2 * FF : FF);
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains(tensor).contains(qkv ? "num_key_value_heads" : "intermediate_size");
        assertThat(Files.exists(tmp.resolve("out.gguf"))).isFalse();
    }

    @Test
    void unknownArchitectureListsPhi3() throws IOException {
        Path dir = folder("phi3-other", "");
        Files.writeString(dir.resolve("config.json"), config("").replace("Phi3ForCausalLM", "PhiMoEForCausalLM"));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("PhiMoEForCausalLM").contains("Phi3ForCausalLM").contains("LlamaForCausalLM");
    }

    private static Optional<Path> sentencePiece() {
        return DecoderReference.sentencePiece();
    }

    /** A folder with the corpus tokenizer.model and vocab_size {@code vocab}. */
    private Path vocabularyFolder(String name, int vocab) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config("").replace("\"vocab_size\": " + VOCAB, "\"vocab_size\": " + vocab));
        Map<String, ReferenceSafetensors.Tensor> t = tensors(3, (HEADS + 2 * KV_HEADS) * HEAD, 2 * FF);
        for (String n : List.of("model.embed_tokens.weight", "lm_head.weight")) {
            t.put(n, new ReferenceSafetensors.Tensor("F32", new long[]{vocab, HIDDEN}, new byte[4 * vocab * HIDDEN]));
        }
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), t);
        Files.copy(sentencePiece().orElseThrow(), dir.resolve("tokenizer.model"));
        return dir;
    }

    static List<String> strings(ReferenceGguf.Kv kv) {
        ByteBuffer b = ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.getInt()).as("an array of strings").isEqualTo(8);
        long n = b.getLong();
        List<String> out = new ArrayList<>();
        for (long i = 0; i < n; i++) {
            byte[] s = new byte[(int) b.getLong()];
            b.get(s);
            out.add(new String(s, StandardCharsets.UTF_8));
        }
        return out;
    }

    private static List<Number> numbers(ReferenceGguf.Kv kv) {
        ByteBuffer b = ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN);
        int type = b.getInt();
        long n = b.getLong();
        List<Number> out = new ArrayList<>();
        for (long i = 0; i < n; i++) out.add(type == 6 ? (Number) b.getFloat() : (Number) b.getInt());
        return out;
    }

    /**
     * Phi3MiniModel.set_vocab: the pieces, [PAD<i>] fillers (score -10000, unused) up to
     * vocab_size, then added_tokens.json, tokenizer_config.json's added_tokens_decoder and
     * tokenizer.json's added_tokens over them (score -1000; control when special, else
     * user-defined; the content as it is); model llama, pre default.
     */
    @Test
    void sentencePieceVocabularyWithAddedTokens() throws IOException {
        Assumptions.assumeTrue(sentencePiece().isPresent(), "the corpus's hf-to-gguf tokenizer.model is not there: not checked");
        ReferenceGguf plain = converted(vocabularyFolder("phi3-sp-plain", 4096), "f16", true);
        List<String> plainTokens = strings(plain.kv.get("tokenizer.ggml.tokens"));
        int pieces = (int) plainTokens.stream().filter(s -> !s.startsWith("[PAD")).count();
        assertThat(plainTokens).hasSize(4096);
        assertThat(plainTokens.subList(pieces, 4096)).as("fillers after the pieces").allMatch(s -> s.startsWith("[PAD"));
        Path dir = vocabularyFolder("phi3-sp", pieces + 64);
        Files.writeString(dir.resolve("added_tokens.json"), "{\"<|endoftext|>\": " + pieces + ", \"<|user|>\": " + (pieces + 1)
                + ", \"<|far|>\": " + (pieces + 64) + "}");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"tokenizer_class\": \"LlamaTokenizer\", \"added_tokens_decoder\": {"
                + "\"" + pieces + "\": {\"content\": \"<|endoftext|>\", \"special\": true}, "
                + "\"" + (pieces + 2) + "\": {\"content\": \"\u2581spaced\", \"special\": false}}, "
                + "\"bos_token\": \"<s>\", \"eos_token\": \"<|endoftext|>\"}");
        Files.writeString(dir.resolve("tokenizer.json"), "{\"added_tokens\": [{\"id\": " + (pieces + 3)
                + ", \"content\": \"<|end|>\", \"special\": true}]}");
        ReferenceGguf g = converted(dir, "f16", true);
        List<String> tokens = strings(g.kv.get("tokenizer.ggml.tokens"));
        List<Number> scores = numbers(g.kv.get("tokenizer.ggml.scores")), types = numbers(g.kv.get("tokenizer.ggml.token_type"));
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("llama");
        assertThat(g.kv.get("tokenizer.ggml.pre").asString()).isEqualTo("default");
        assertThat(tokens).hasSize(pieces + 64);
        assertThat(tokens.subList(pieces, pieces + 5)).containsExactly("<|endoftext|>", "<|user|>", "\u2581spaced", "<|end|>",
                "[PAD" + (pieces + 4) + "]");
        assertThat(types.subList(pieces, pieces + 5)).containsExactly(3, 4, 4, 3, 5);
        assertThat(scores.subList(pieces, pieces + 5)).containsExactly(-1000f, -1000f, -1000f, -1000f, -10000f);
        assertThat(g.kv).as("LlamaModel.set_vocab's key, not Phi3MiniModel's").doesNotContainKey("tokenizer.ggml.add_space_prefix");
    }

    @Test
    void tokenizerConfigWithoutTokenizerClassOrGpt2WithoutTokenizerJsonIsMalformed() throws IOException {
        Path dir = folder("phi3-no-class", "");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"bos_token\": \"<s>\"}");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), true);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("tokenizer_class");
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"tokenizer_class\": \"GPT2Tokenizer\"}");
        r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), true);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("GPT2Tokenizer").contains("tokenizer.json");
        Files.delete(dir.resolve("tokenizer_config.json"));
        r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), true);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("tokenizer.model");
    }

    /**
     * llama.cpp's logits of our conversion = an independent forward pass of the folder
     * ({@code bench/scripts/decoder_reference.py}, fused q/k/v and gate/up split as Hugging
     * Face's Phi3 does, llama.cpp's F16 KV cache modelled): within 1e-4 of the largest logit
     * for F32 (measured 2e-6), 3e-3 for F16 (measured 1e-3); full and 0.75 partial rotary.
     * Swapped gate/up halves or k/v blocks differ by 0.77 and 1.4 of the largest logit.
     */
    @ParameterizedTest
    @CsvSource({"f32,1.0", "f16,1.0", "f32,0.75", "f16,0.75"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String partial) throws Exception {
        Assumptions.assumeTrue(sentencePiece().isPresent(), "the corpus's hf-to-gguf tokenizer.model is not there: not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve("phi3-forward");
        run(List.of("python3", script.toString(), "make", "phi3", dir.toString(), "--sp-tokenizer", sentencePiece().get().toString(),
                "--partial-rotary", partial, "--seed", "7"));
        Path out = tmp.resolve("phi3-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(List.of("python3", script.toString(), "compare", dir.toString(),
                out.toString(), oracles.toString(), "--weights", dtype, "--tokens", "1,7,42,100,3,250,17,64,5,99,12,300")));
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    private String run(List<String> cmd) throws Exception {
        return DecoderReference.run(tmp, cmd);
    }
}
