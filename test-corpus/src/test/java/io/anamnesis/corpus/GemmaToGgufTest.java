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
 * GemmaForCausalLM and Gemma2ForCausalLM folders to GGUF, as convert_hf_to_gguf.py's
 * {@code GemmaModel}/{@code Gemma2Model} write them: tensor names (gemma2's four norms per
 * block), the converter's own key order (not TextModel's: no rope keys; gemma2's soft-caps
 * and sliding window), lm_head dropped (tied embeddings), 1 added to every norm weight (in
 * float32, or in float16 for an F16 tensor, as torch adds it), the SentencePiece vocabulary
 * with Gemma's specifics, and the bad inputs. The folders are made here, tiny and random;
 * the vocabulary needs the corpus's SentencePiece {@code tokenizer.model}, and llama.cpp's
 * logits of the converted files are checked against {@code bench/scripts/decoder_reference.py}'s
 * independent forward pass with the oracles ({@code ORACLE_CACHE}). Each part is skipped,
 * saying so, without what it needs.
 */
class GemmaToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD_DIM = 16;
    @TempDir
    Path tmp;

    /** head_dim is explicit and not hidden/heads (8), as in Gemma 7B's config (256 x 16 heads for a hidden 3072). */
    static String config(String arch) {
        boolean two = arch.equals("gemma2");
        return "{\"architectures\": [\"" + (two ? "Gemma2ForCausalLM" : "GemmaForCausalLM") + "\"], "
                + "\"model_type\": \"" + arch + "\", \"vocab_size\": " + VOCAB + ", \"hidden_size\": " + HIDDEN + ", "
                + "\"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + "\"head_dim\": " + HEAD_DIM + ", \"max_position_embeddings\": 8192, \"rms_norm_eps\": 1e-06, "
                + "\"rope_theta\": 10000.0, \"hidden_activation\": \"gelu_pytorch_tanh\", "
                + (two ? "\"attn_logit_softcapping\": 50.0, \"final_logit_softcapping\": 30.0, \"sliding_window\": 4096, "
                + "\"query_pre_attn_scalar\": " + HEAD_DIM + ", " : "")
                + "\"bos_token_id\": 2, \"eos_token_id\": 1, \"pad_token_id\": 0, \"torch_dtype\": \"float32\"}";
    }

    static List<String> norms(String arch) {
        return arch.equals("gemma2")
                ? List.of("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm")
                : List.of("input_layernorm", "post_attention_layernorm");
    }

    /** A tiny random model in {@code dtype} (F32 or F16), in name order; {@code lmHead} adds an lm_head.weight. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(String arch, String dtype, boolean lmHead, long seed) {
        Random random = new Random(seed);
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        if (lmHead) shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String n : norms(arch)) shapes.put(p + n + ".weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD_DIM, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD_DIM});
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        boolean half = dtype.equals("F16");
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        for (var e : shapes.entrySet()) {
            long n = 1;
            for (long d : e.getValue()) n *= d;
            ByteBuffer b = ByteBuffer.allocate((int) ((half ? 2 : 4) * n)).order(ByteOrder.LITTLE_ENDIAN);
            for (int i = 0; i < n; i++) {
                float v = (float) random.nextGaussian() * 0.3f;
                if (half) b.putShort(Float.floatToFloat16(v));
                else b.putFloat(v);
            }
            out.put(e.getKey(), new ReferenceSafetensors.Tensor(dtype, e.getValue(), b.array()));
        }
        return out;
    }

    private Path folder(String name, String arch, String dtype, boolean lmHead) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config(arch));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), tensors(arch, dtype, lmHead, name.hashCode()));
        return dir;
    }

    private ReferenceGguf converted(Path dir, String dtype, boolean vocab) throws IOException {
        return DecoderReference.converted(dir, dtype, vocab, tmp);
    }

    private static float f32(ReferenceGguf g, String key) {
        return Float.intBitsToFloat((int) g.kv.get(key).asLong());
    }

    /** GemmaModel.set_gguf_parameters' keys in its order, from the first after general.*: TextModel's are not written. */
    @Test
    void gemmaKeysAreItsOwnInTheConvertersOrder() throws IOException {
        ReferenceGguf g = converted(folder("gemma-keys", "gemma", "F32", false), "f16", false);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("gemma");
        assertThat(hyperKeys(g, "gemma.context_length")).containsExactly("gemma.context_length", "gemma.embedding_length",
                "gemma.block_count", "gemma.feed_forward_length", "gemma.attention.head_count", "gemma.attention.head_count_kv",
                "gemma.attention.layer_norm_rms_epsilon", "gemma.attention.key_length", "gemma.attention.value_length",
                "general.file_type", "general.quantization_version", "tokenizer.ggml.model");
        assertThat(g.kv.get("gemma.context_length").asLong()).isEqualTo(8192);
        assertThat(g.kv.get("gemma.block_count").asLong()).isEqualTo(LAYERS);
        assertThat(g.kv.get("gemma.attention.head_count_kv").asLong()).isEqualTo(KV_HEADS);
        assertThat(g.kv.get("gemma.attention.key_length").asLong()).isEqualTo(HEAD_DIM);
        assertThat(f32(g, "gemma.attention.layer_norm_rms_epsilon")).isEqualTo(1e-6f);
        assertThat(g.kv.get("general.file_type").asLong()).isEqualTo(1);
        assertThat(g.kv).doesNotContainKeys("gemma.rope.freq_base", "gemma.vocab_size", "gemma.rope.dimension_count");
    }

    @Test
    void gemma2AddsTheSoftCapsAndTheSlidingWindow() throws IOException {
        ReferenceGguf g = converted(folder("gemma2-keys", "gemma2", "F32", false), "f32", false);
        assertThat(hyperKeys(g, "gemma2.context_length")).containsExactly("gemma2.context_length", "gemma2.embedding_length",
                "gemma2.block_count", "gemma2.feed_forward_length", "gemma2.attention.head_count",
                "gemma2.attention.head_count_kv", "gemma2.attention.layer_norm_rms_epsilon", "gemma2.attention.key_length",
                "gemma2.attention.value_length", "general.file_type", "gemma2.attn_logit_softcapping",
                "gemma2.final_logit_softcapping", "gemma2.attention.sliding_window", "general.quantization_version",
                "tokenizer.ggml.model");
        assertThat(g.kv.get("gemma2.attn_logit_softcapping").type()).as("float32").isEqualTo(6);
        assertThat(f32(g, "gemma2.attn_logit_softcapping")).isEqualTo(50f);
        assertThat(f32(g, "gemma2.final_logit_softcapping")).isEqualTo(30f);
        assertThat(g.kv.get("gemma2.attention.sliding_window").type()).as("uint32").isEqualTo(4);
        assertThat(g.kv.get("gemma2.attention.sliding_window").asLong()).isEqualTo(4096);
    }

    /** Without num_key_value_heads the converter writes the attention heads as the key/value heads. */
    @Test
    void headCountKvFallsBackToTheAttentionHeads() throws IOException {
        Path dir = Files.createDirectories(tmp.resolve("gemma-mha"));
        Files.writeString(dir.resolve("config.json"), config("gemma").replace("\"num_key_value_heads\": " + KV_HEADS + ", ", ""));
        Map<String, ReferenceSafetensors.Tensor> t = tensors("gemma", "F32", false, 3);
        for (int i = 0; i < LAYERS; i++) {
            for (String kv : List.of("k", "v")) {
                t.put("model.layers." + i + ".self_attn." + kv + "_proj.weight", new ReferenceSafetensors.Tensor("F32",
                        new long[]{(long) HEADS * HEAD_DIM, HIDDEN}, new byte[4 * HEADS * HEAD_DIM * HIDDEN]));
            }
        }
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), t);
        ReferenceGguf g = converted(dir, "f32", false);
        assertThat(g.kv.get("gemma.attention.head_count_kv").asLong()).isEqualTo(HEADS);
    }

    /**
     * Names and types, and the values: weights as stored (no row permutation: llama.cpp's
     * gemma rope is NEOX), every norm weight w written as the float32 1 + w, lm_head dropped
     * (llama.cpp reads the output from token_embd).
     */
    @ParameterizedTest
    @CsvSource({"gemma,false", "gemma,true", "gemma2,false"})
    void namesNormPlusOneAndNoOutput(String arch, boolean lmHead) throws IOException {
        Path dir = folder(arch + "-names-" + lmHead, arch, "F32", lmHead);
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf f16 = converted(dir, "f16", false), f32 = converted(dir, "f32", false);
        Map<String, String> names = new LinkedHashMap<>();
        names.put("model.embed_tokens.weight", "token_embd.weight");
        names.put("model.norm.weight", "output_norm.weight");
        boolean two = arch.equals("gemma2");
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".", b = "blk." + i + ".";
            names.put(p + "input_layernorm.weight", b + "attn_norm.weight");
            if (two) {
                names.put(p + "post_attention_layernorm.weight", b + "post_attention_norm.weight");
                names.put(p + "pre_feedforward_layernorm.weight", b + "ffn_norm.weight");
                names.put(p + "post_feedforward_layernorm.weight", b + "post_ffw_norm.weight");
            } else {
                names.put(p + "post_attention_layernorm.weight", b + "ffn_norm.weight");
            }
            names.put(p + "self_attn.q_proj.weight", b + "attn_q.weight");
            names.put(p + "self_attn.k_proj.weight", b + "attn_k.weight");
            names.put(p + "self_attn.v_proj.weight", b + "attn_v.weight");
            names.put(p + "self_attn.o_proj.weight", b + "attn_output.weight");
            names.put(p + "mlp.gate_proj.weight", b + "ffn_gate.weight");
            names.put(p + "mlp.up_proj.weight", b + "ffn_up.weight");
            names.put(p + "mlp.down_proj.weight", b + "ffn_down.weight");
        }
        assertThat(f16.tensors.stream().map(ReferenceGguf.Tensor::name).sorted().toList())
                .as("no output.weight, whether or not the folder has an lm_head")
                .containsExactlyElementsOf(names.values().stream().sorted().toList());
        for (var e : names.entrySet()) {
            ReferenceSafetensors.Tensor t = in.get(e.getKey());
            boolean norm = e.getKey().endsWith("norm.weight");
            assertThat(f16.tensor(e.getValue()).type()).as(e.getValue() + " in an F16 file").isEqualTo(norm ? 0 : 1);
            byte[] want = norm ? plusOneF32(t.bytes()) : t.bytes();
            assertThat(f32.tensor(e.getValue()).bytes()).as(e.getValue() + (norm ? ": 1 + w in float32" : ": as stored"))
                    .isEqualTo(want);
            if (norm) assertThat(f16.tensor(e.getValue()).bytes()).as(e.getValue() + " in an F16 file").isEqualTo(want);
        }
    }

    /** An F16 norm weight: the converter adds 1 to the float16 tensor (float16 sum, round to nearest even), then writes float32. */
    @Test
    void anF16NormIsShiftedInFloat16() throws IOException {
        Path dir = folder("gemma-f16", "gemma", "F16", false);
        Map<String, ReferenceSafetensors.Tensor> in = ReferenceSafetensors.read(dir.resolve("model.safetensors"));
        ReferenceGguf g = converted(dir, "f32", false);
        byte[] stored = in.get("model.norm.weight").bytes();
        ByteBuffer src = ByteBuffer.wrap(stored).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer want = ByteBuffer.allocate(2 * stored.length).order(ByteOrder.LITTLE_ENDIAN);
        boolean differsFromF32Sum = false;
        for (int i = 0; i < HIDDEN; i++) {
            float w = Float.float16ToFloat(src.getShort());
            float sum = Float.float16ToFloat(Float.floatToFloat16(w + 1f));
            differsFromF32Sum |= sum != w + 1f;
            want.putFloat(sum);
        }
        assertThat(differsFromF32Sum).as("the test data tells float16 from float32 arithmetic").isTrue();
        assertThat(g.tensor("output_norm.weight").type()).isZero();
        assertThat(g.tensor("output_norm.weight").bytes()).isEqualTo(want.array());
        assertThat(g.tensor("token_embd.weight").bytes()).as("F16 widened exactly").isEqualTo(widen(in.get("model.embed_tokens.weight").bytes()));
    }

    private static byte[] plusOneF32(byte[] f32) {
        ByteBuffer src = ByteBuffer.wrap(f32).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = ByteBuffer.allocate(f32.length).order(ByteOrder.LITTLE_ENDIAN);
        while (src.hasRemaining()) out.putFloat(src.getFloat() + 1f);
        return out.array();
    }

    private static byte[] widen(byte[] f16) {
        ByteBuffer src = ByteBuffer.wrap(f16).order(ByteOrder.LITTLE_ENDIAN);
        ByteBuffer out = ByteBuffer.allocate(2 * f16.length).order(ByteOrder.LITTLE_ENDIAN);
        while (src.hasRemaining()) out.putFloat(Float.float16ToFloat(src.getShort()));
        return out.array();
    }

    /**
     * The keys from {@code first} on; only general.* before it. Gemma's set_gguf_parameters
     * starts with the context length, not TextModel's block count.
     */
    private static List<String> hyperKeys(ReferenceGguf g, String first) {
        List<String> keys = new ArrayList<>(g.kv.keySet());
        int from = keys.indexOf(first);
        assertThat(from).as(first + " written").isPositive();
        assertThat(keys.subList(0, from)).as("only general.* keys before it").allMatch(k -> k.startsWith("general."));
        return keys.subList(from, keys.size());
    }

    @ParameterizedTest
    @CsvSource({"gemma,head_dim", "gemma,rms_norm_eps", "gemma,max_position_embeddings", "gemma,vocab_size",
            "gemma2,attn_logit_softcapping", "gemma2,final_logit_softcapping", "gemma2,sliding_window"})
    void aMissingKeyIsMalformedNamingIt(String arch, String key) throws IOException {
        Path dir = folder(arch + "-no-" + key, arch, "F32", false);
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
    void unknownArchitectureListsTheGemmaFamilies() throws IOException {
        Path dir = folder("other", "gemma", "F32", false);
        Files.writeString(dir.resolve("config.json"), config("gemma").replace("GemmaForCausalLM", "Gemma3nForCausalLM"));
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("Gemma3nForCausalLM").contains("GemmaForCausalLM").contains("Gemma2ForCausalLM")
                .contains("LlamaForCausalLM");
    }

    @Test
    void aGemmaWithoutTokenizerModelIsRefusedNamingIt() throws IOException {
        Path dir = folder("gemma-no-sp", "gemma", "F32", false);
        Files.writeString(dir.resolve("tokenizer.json"), "{\"model\": {\"type\": \"BPE\", \"vocab\": {}, \"merges\": []}}");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", tmp.resolve("out.gguf"), true);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("tokenizer.model").contains("GemmaForCausalLM");
    }

    /**
     * The vocabulary: SentencePiece's tokens, then for gemma the second SpecialVocab's EOT (107;
     * gguf-py writes no prefix/suffix/middle/fsep ids) and add_space_prefix false; for gemma2
     * only add_space_prefix false.
     */
    @ParameterizedTest
    @CsvSource({"gemma", "gemma2"})
    void sentencePieceVocabularyWithGemmasSpecifics(String arch) throws IOException {
        Optional<Path> sp = sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's hf-to-gguf SentencePiece tokenizer.model is not here: not checked");
        Path dir = Files.createDirectories(tmp.resolve(arch + "-vocab"));
        Files.writeString(dir.resolve("config.json"), config(arch).replace("\"vocab_size\": " + VOCAB, "\"vocab_size\": 320"));
        Map<String, ReferenceSafetensors.Tensor> t = tensors(arch, "F32", false, 9);
        t.put("model.embed_tokens.weight", new ReferenceSafetensors.Tensor("F32", new long[]{320, HIDDEN}, new byte[4 * 320 * HIDDEN]));
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), t);
        Files.copy(sp.get(), dir.resolve("tokenizer.model"));
        ReferenceGguf g = converted(dir, "f16", true);
        List<String> keys = new ArrayList<>(g.kv.keySet());
        List<String> vocab = keys.subList(keys.indexOf("tokenizer.ggml.model"), keys.size());
        List<String> want = new ArrayList<>(List.of("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                "tokenizer.ggml.scores", "tokenizer.ggml.token_type", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                "tokenizer.ggml.padding_token_id"));
        if (arch.equals("gemma")) want.add("tokenizer.ggml.eot_token_id");
        want.add("tokenizer.ggml.add_space_prefix");
        assertThat(vocab).containsExactlyElementsOf(want);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("llama");
        assertThat(g.kv.get("tokenizer.ggml.add_space_prefix").asLong()).as("false").isZero();
        if (arch.equals("gemma")) assertThat(g.kv.get("tokenizer.ggml.eot_token_id").asLong()).isEqualTo(107);
    }

    /**
     * llama.cpp's logits of our conversion = an independent forward pass of the folder
     * ({@code bench/scripts/decoder_reference.py}, with llama.cpp's F16 KV cache, its Q
     * scaled before it meets K, and ggml's F16 GELU table modelled), over 12 tokens with a
     * sliding window of 4 for gemma2: within 5e-4 of the largest logit for F32 (measured 9e-8
     * for gemma; 2.2e-6 to 9.2e-5 for gemma2 by seed: values on F16 rounding boundaries of the
     * modelled cache, rounded from float64 here and from float32 by ggml, through four
     * layers), 3e-3 for F16 (measured 5e-4 and 6.6e-4: ggml's F16 products round the
     * activations too). A wrong layout is far off: the norms without the 1 differ by 4.3 to 5.3
     * of the largest logit, unscaled embeddings 1.5, gemma2 without its window 0.55, without
     * its soft-caps 0.028.
     */
    @ParameterizedTest
    @CsvSource({"gemma,f32", "gemma,f16", "gemma2,f32", "gemma2,f16"})
    void llamaCppComputesTheReferenceForwardPass(String arch, String dtype) throws Exception {
        Optional<Path> sp = sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path script = DecoderReference.SCRIPT;

        Path dir = tmp.resolve(arch + "-forward");
        run(List.of("python3", script.toString(), "make", arch, dir.toString(), "--sp", sp.get().toString(), "--seed", "7"));
        Path out = tmp.resolve(arch + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = LlamaRunOracleTest.JSON.readTree(run(List.of("python3", script.toString(), "compare", dir.toString(),
                out.toString(), oracles.toString(), "--weights", dtype, "--tokens", "2,45,100,7,250,31,12,300,88,5,19,64")));
        JsonNode f16cache = cmp.path("kv_f16");
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 5e-4 : 3e-3);
    }

    private String run(List<String> cmd) throws Exception {
        return DecoderReference.run(tmp, cmd);
    }

    private static Optional<Path> sentencePiece() {
        return DecoderReference.sentencePiece();
    }
}
