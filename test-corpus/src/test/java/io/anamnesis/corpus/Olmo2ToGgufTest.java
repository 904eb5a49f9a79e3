package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * An OLMo 2 folder ({@code Olmo2ForCausalLM}), and an OLMo 3 one ({@code Olmo3ForCausalLM}:
 * its window and which layers have it as keys), to GGUF as the converter's {@code Olmo2Model}
 * writes it: no norm before attention or the MLP, one after each
 * ({@code post_attention_norm}, {@code post_ffw_norm}), q/k norms over the whole projection,
 * no row permutation, TextModel's keys only; and the bad inputs. {@link ConverterParityTest}
 * compares such folders with the converter's own files; with the oracles ({@code ORACLE_CACHE})
 * and Qwen3's byte-level BPE tokenizer ({@code AMN_TOKENIZER_QWEN3}), llama.cpp's logits of a
 * converted folder are checked against {@code bench/scripts/decoder_reference.py}'s forward
 * pass (skipped, saying so, without them).
 */
class Olmo2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS;

    @TempDir
    Path tmp;

    /** A tiny OLMo 2 config.json; {@code extra} more top-level entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"Olmo2ForCausalLM\"], \"model_type\": \"olmo2\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + "\"max_position_embeddings\": 512, \"rms_norm_eps\": 1e-06, \"rope_theta\": 500000.0, \"rope_scaling\": null, "
                + extra + "\"attention_bias\": false, \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    /** OLMo 2's tensors, random F32; {@code qNorm} the length of each q norm (HEADS x HEAD when right). */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, int qNorm) {
        Map<String, long[]> shapes = new java.util.TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "self_attn.q_norm.weight", new long[]{qNorm});
            shapes.put(p + "self_attn.k_norm.weight", new long[]{(long) KV_HEADS * HEAD});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_feedforward_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void normsAfterAttentionAndMlpWholeQkNormsAndNoPermutation() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> t = tensors(51, HEADS * HEAD);
        Path out = tmp.resolve("olmo2.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-2-tiny", config(""), t), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("olmo2");
        assertThat(g.kv).containsKeys("olmo2.attention.layer_norm_rms_epsilon", "olmo2.rope.freq_base")
                .doesNotContainKeys("olmo2.vocab_size", "olmo2.rope.dimension_count", "olmo2.attention.sliding_window");
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.0.post_attention_norm.weight", "blk.0.post_ffw_norm.weight", "blk.1.attn_q_norm.weight",
                "blk.1.attn_k_norm.weight").noneMatch(n -> n.contains("attn_norm.") || n.contains("ffn_norm."));
        // no permutation: llama.cpp's olmo2 rope is NEOX, Hugging Face's rotate-half, so q and k are stored as they are
        assertThat(g.tensor("blk.1.attn_q.weight").bytes()).isEqualTo(t.get("model.layers.1.self_attn.q_proj.weight").bytes());
        assertThat(g.tensor("blk.1.attn_k.weight").bytes()).isEqualTo(t.get("model.layers.1.self_attn.k_proj.weight").bytes());
        assertThat(g.tensor("blk.1.attn_q_norm.weight").ne()).containsExactly((long) HEADS * HEAD);
    }

    /** An OLMo 3 config.json: OLMo 2's with its window; {@code layerTypes} the layer_types entry (or nothing). */
    static String olmo3(String layerTypes) {
        return config("\"sliding_window\": 4096, " + layerTypes).replace("Olmo2ForCausalLM", "Olmo3ForCausalLM")
                .replace("\"olmo2\"", "\"olmo3\"");
    }

    /** The bools of an array-of-bool key/value (GGUF: element type 7, a u64 count, a byte each). */
    static List<Boolean> bools(ReferenceGguf.Kv kv) {
        java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(kv.value()).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        assertThat(kv.type()).as("an array").isEqualTo(9);
        assertThat(b.getInt()).as("of bools").isEqualTo(7);
        long n = b.getLong();
        List<Boolean> out = new java.util.ArrayList<>();
        for (long i = 0; i < n; i++) out.add(b.get() != 0);
        return out;
    }

    /** OLMo 3: the converter's Olmo2Model writes the window and which layers have it, from layer_types. */
    @Test
    void olmo3sWindowAndItsLayers() throws IOException {
        Path out = tmp.resolve("olmo3.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-3-tiny",
                olmo3("\"layer_types\": [\"full_attention\", \"sliding_attention\"], "), tensors(52, HEADS * HEAD)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("olmo2");
        assertThat(g.kv.get("olmo2.attention.sliding_window").type()).isEqualTo(4);
        assertThat(g.kv.get("olmo2.attention.sliding_window").asLong()).isEqualTo(4096);
        assertThat(bools(g.kv.get("olmo2.attention.sliding_window_pattern"))).containsExactly(false, true);
        // the last keys, after TextModel's (general.file_type among them)
        List<String> keys = List.copyOf(g.kv.keySet());
        assertThat(keys.indexOf("olmo2.attention.sliding_window")).isGreaterThan(keys.indexOf("general.file_type"));
        assertThat(keys.indexOf("olmo2.attention.sliding_window_pattern")).isEqualTo(keys.indexOf("olmo2.attention.sliding_window") + 1);
    }

    /** Without layer_types the converter lays out Olmo 3's default: every fourth layer global. */
    @Test
    void olmo3WithoutLayerTypesHasEveryFourthLayerGlobal() throws IOException {
        Path out = tmp.resolve("olmo3-default.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-3-default", olmo3(""), tensors(55, HEADS * HEAD)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        // two layers: (il + 1) % 4 != 0 for both
        assertThat(bools(ReferenceGguf.read(out).kv.get("olmo2.attention.sliding_window_pattern"))).containsExactly(true, true);
    }

    @Test
    void olmo3LayerTypesThatDoNotFitAreRefused() throws IOException {
        Path out = tmp.resolve("olmo3-bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-3-short", olmo3("\"layer_types\": [\"full_attention\"], "),
                tensors(56, HEADS * HEAD)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("layer_types").doesNotContain("Exception");
        r = DecoderReference.convert(folder("OLMo-3-chunked", olmo3("\"layer_types\": [\"chunked_attention\", \"full_attention\"], "),
                tensors(57, HEADS * HEAD)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("chunked_attention").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void aQNormOfOneHeadIsRefusedNamingTheKey() throws IOException {
        Path out = tmp.resolve("qnorm.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-qnorm", config(""), tensors(53, HEAD)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("num_attention_heads").contains("q_norm").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void aMissingRopeThetaIsRefusedNotGuessed() throws IOException {
        Path out = tmp.resolve("theta.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-theta", config("").replace("\"rope_theta\": 500000.0, ", ""),
                tensors(54, HEADS * HEAD)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("rope_theta").doesNotContain("Exception");
    }

    /**
     * llama.cpp's logits against the reference forward pass: F32 within 1e-4 relative (measured
     * 1.1e-7), F16 3e-3 (4.6e-4); the same file against q/k norms taken per head 0.13 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,per-head-qk-norm"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "olmo2", List.of("--tokenizer", tok.get().toString(), "--seed", "9"), dtype, variant,
                0.05);
    }

    /**
     * OLMo 3 through llama.cpp against the reference forward pass (8 layers, three local to one
     * global, a window of 4; 12 tokens): F32 within 1e-4 relative (measured 2.0e-7), F16 3e-3
     * (1.1e-3); with Olmo 3's yarn on the global layers only (transformers 4.57's and main's
     * reading, which llama.cpp's olmo2 takes) 1.8e-7, against yarn on every layer 0.32 off,
     * against no window 1.2.
     */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {"5|f32|", "5|f16|", "7|f32|", "5|f32|--variant no-window", "7|f32|--variant yarn-everywhere"})
    void llamaCppComputesOlmo3(int seed, String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new java.util.ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", Integer.toString(seed)));
        if (seed == 7) make.addAll(List.of("--yarn", "16"));
        DecoderReference.llamaCppComputesTheReference(tmp, "olmo3", make, dtype, wrong == null ? null : List.of(wrong.split(" ")), 0.1);
    }
}
