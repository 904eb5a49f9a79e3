package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A GLM-4-0414 folder ({@code Glm4ForCausalLM}) to GGUF as the converter's {@code Glm4Model}
 * writes it: four norms a block, q/k/v biases, the fused gate/up kept fused, the rope over half
 * of each head ({@code rope.dimension_count}), no permutation; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Glm4ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = 32;

    @TempDir
    Path tmp;

    /** A tiny GLM-4-9B-0414 config.json; {@code extra} more top-level entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"Glm4ForCausalLM\"], \"model_type\": \"glm4\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", "
                + "\"partial_rotary_factor\": 0.5, \"attention_bias\": true, \"max_position_embeddings\": 32768, "
                + "\"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, " + extra + "\"hidden_act\": \"silu\", "
                + "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String norm : List.of("input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm")) {
                shapes.put(p + norm + ".weight", new long[]{HIDDEN});
            }
            for (String n : List.of("q", "k", "v")) {
                long rows = (n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD;
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, HIDDEN});
                shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "mlp.gate_up_proj.weight", new long[]{2L * FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void fourNormsAFusedMlpAndTheRopeOverHalfAHead() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(121);
        Path out = tmp.resolve("glm4.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4-tiny", config(""), in), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("glm4");
        // int(head_dim x 0.5), head_dim 32 (not hidden / heads)
        assertThat(g.kv.get("glm4.rope.dimension_count").asLong()).isEqualTo(HEAD / 2);
        assertThat(g.kv.get("glm4.attention.key_length").asLong()).isEqualTo(HEAD);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.1.attn_norm.weight", "blk.1.post_attention_norm.weight", "blk.1.ffn_norm.weight",
                "blk.1.post_ffw_norm.weight", "blk.1.attn_q.bias").noneMatch(n -> n.contains("ffn_gate"));
        // kept fused, rows gate then up, as stored; q not permuted
        assertThat(g.tensor("blk.0.ffn_up.weight").ne()).containsExactly(HIDDEN, 2L * FF);
        assertThat(g.tensor("blk.0.ffn_up.weight").type()).isEqualTo(1);
        assertThat(g.tensor("blk.1.attn_q.bias").bytes()).isEqualTo(in.get("model.layers.1.self_attn.q_proj.bias").bytes());
    }

    /** The converter reads the rotary share from the rope parameters only; a top-level one that differs would be dropped. */
    @Test
    void aTopLevelRotaryShareTheConverterWouldDropIsRefused() throws IOException {
        Path out = tmp.resolve("share.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4-share", config("").replace("\"partial_rotary_factor\": 0.5", "\"partial_rotary_factor\": 0.25"),
                tensors(122)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("partial_rotary_factor").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void aFusedMlpOfAnotherWidthIsRefusedNamingTheKey() throws IOException {
        Path out = tmp.resolve("width.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4-width", config("").replace("\"intermediate_size\": " + FF, "\"intermediate_size\": 80"),
                tensors(123)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("intermediate_size").doesNotContain("Exception");
    }

    /**
     * llama.cpp's logits against the reference forward pass: F32 within 1e-4 relative (measured
     * 3.8e-6), F16 3e-3 (7.9e-4); the rotation on rotate-half pairs 0.45 off, without the post
     * norms 0.61. The vocabulary is Qwen3's with {@code <|im_start|>} renamed {@code <|user|>}, an
     * added token Glm4Model.set_vocab needs (its check hash does not change: the check text holds
     * no added token).
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,neox-rope", "f32,no-post-norms"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("glm4-forward");
        DecoderReference.make(tmp, "glm4", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "4");
        DecoderReference.asGlmVocabulary(dir);
        DecoderReference.llamaCppComputesTheReferenceOf(tmp, dir, dtype, variant == null ? null : List.of("--variant", variant), 0.2,
                dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("GLM-4-tiny", config(""), tensors(124), all),
                new ConverterParityTest.Folder("GLM-4-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(125)), withAuto));
    }
}
