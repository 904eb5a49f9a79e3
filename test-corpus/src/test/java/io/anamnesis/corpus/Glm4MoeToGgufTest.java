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
 * A GLM-4.5 folder ({@code Glm4MoeForCausalLM}) to GGUF as the converter's {@code Glm4MoeModel}
 * writes it: q/k/v biases, optional per-head q/k norms, the rope over half of each head, the norm
 * before the MLP as {@code post_attention_norm}, a dense lead block, sigmoid routing with its
 * selection bias, the experts stacked, the shared experts, and the multi-token-prediction layer
 * written as {@code blk.N.nextn.*} and counted in {@code block_count}; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Glm4MoeToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 3, HEADS = 4, KV_HEADS = 2, HEAD = 32, EXPERTS = 8, WIDTH = 32;

    @TempDir
    Path tmp;

    /** A tiny GLM-4.5-Air config.json (its keys, sizes shrunk); {@code extra} more top-level entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"Glm4MoeForCausalLM\"], \"model_type\": \"glm4_moe\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"moe_intermediate_size\": " + WIDTH + ", "
                + "\"num_hidden_layers\": " + LAYERS + ", \"num_nextn_predict_layers\": 1, \"num_attention_heads\": " + HEADS + ", "
                + "\"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", \"partial_rotary_factor\": 0.5, "
                + "\"attention_bias\": true, \"use_qk_norm\": false, \"n_shared_experts\": 1, \"n_routed_experts\": " + EXPERTS + ", "
                + "\"num_experts_per_tok\": 2, \"n_group\": 1, \"topk_group\": 1, \"first_k_dense_replace\": 1, "
                + "\"norm_topk_prob\": true, \"routed_scaling_factor\": 1.0, " + extra
                + "\"hidden_act\": \"silu\", \"max_position_embeddings\": 131072, \"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000, "
                + "\"rope_scaling\": null, \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    /** Layer 0 dense, 1 and 2 with experts, layer 3 the multi-token-prediction layer (a MoE layer with its own extras). */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean qkNorm) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i <= LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                long rows = (n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD;
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, HIDDEN});
                shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
            }
            if (qkNorm) {
                shapes.put(p + "self_attn.q_norm.weight", new long[]{HEAD});
                shapes.put(p + "self_attn.k_norm.weight", new long[]{HEAD});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            if (i == 0) {
                shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
                continue;
            }
            shapes.put(p + "mlp.gate.weight", new long[]{EXPERTS, HIDDEN});
            shapes.put(p + "mlp.gate.e_score_correction_bias", new long[]{EXPERTS});
            for (int x = 0; x < EXPERTS; x++) {
                shapes.put(p + "mlp.experts." + x + ".gate_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "mlp.experts." + x + ".up_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "mlp.experts." + x + ".down_proj.weight", new long[]{HIDDEN, WIDTH});
            }
            shapes.put(p + "mlp.shared_experts.gate_proj.weight", new long[]{WIDTH, HIDDEN});
            shapes.put(p + "mlp.shared_experts.up_proj.weight", new long[]{WIDTH, HIDDEN});
            shapes.put(p + "mlp.shared_experts.down_proj.weight", new long[]{HIDDEN, WIDTH});
            if (i == LAYERS) {
                shapes.put(p + "embed_tokens.weight", new long[]{VOCAB, HIDDEN});
                shapes.put(p + "enorm.weight", new long[]{HIDDEN});
                shapes.put(p + "hnorm.weight", new long[]{HIDDEN});
                shapes.put(p + "eh_proj.weight", new long[]{HIDDEN, 2L * HIDDEN});
                shapes.put(p + "shared_head.norm.weight", new long[]{HIDDEN});
                shapes.put(p + "shared_head.head.weight", new long[]{VOCAB, HIDDEN});
            }
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void theMoeBlocksAndTheMultiTokenPredictionLayerAsTheConverterWritesThem() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(301, false);
        Path out = tmp.resolve("glm45.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4.5-Air-tiny", config(""), in), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("glm4moe");
        // num_hidden_layers + num_nextn_predict_layers
        assertThat(g.kv.get("glm4moe.block_count").asLong()).isEqualTo(LAYERS + 1);
        assertThat(g.kv.get("glm4moe.nextn_predict_layers").asLong()).isEqualTo(1);
        assertThat(g.kv.get("glm4moe.rope.dimension_count").asLong()).isEqualTo(HEAD / 2);
        assertThat(g.kv.get("glm4moe.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("glm4moe.expert_used_count").asLong()).isEqualTo(2);
        assertThat(g.kv.get("glm4moe.expert_group_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get("glm4moe.expert_shared_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get("glm4moe.leading_dense_block_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get("glm4moe.expert_gating_func").asLong()).isEqualTo(2);
        assertThat(g.kv.get("glm4moe.expert_weights_norm").value()).containsExactly(1);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.0.ffn_gate.weight", "blk.1.post_attention_norm.weight", "blk.1.attn_q.bias",
                "blk.2.exp_probs_b.bias", "blk.3.ffn_gate_exps.weight", "blk.3.nextn.eh_proj.weight", "blk.3.nextn.embed_tokens.weight",
                "blk.3.nextn.enorm.weight", "blk.3.nextn.hnorm.weight", "blk.3.nextn.shared_head_head.weight",
                "blk.3.nextn.shared_head_norm.weight").noneMatch(n -> n.contains("ffn_norm"));
        assertThat(g.tensor("blk.3.nextn.eh_proj.weight").ne()).containsExactly(2L * HIDDEN, HIDDEN);
        assertThat(g.tensor("blk.2.exp_probs_b.bias").type()).isZero();
        assertThat(g.tensor("blk.1.ffn_gate_inp.weight").type()).isZero();
        // the biases as stored (F32), q not permuted
        assertThat(g.tensor("blk.1.attn_q.bias").bytes()).isEqualTo(in.get("model.layers.1.self_attn.q_proj.bias").bytes());
    }

    @Test
    void perHeadQkNormsWhenTheModelHasThem() throws IOException {
        Path out = tmp.resolve("qk.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4.5-qk-tiny", config("").replace("\"use_qk_norm\": false",
                "\"use_qk_norm\": true"), tensors(302, true)), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(ReferenceGguf.read(out).tensor("blk.2.attn_k_norm.weight").ne()).containsExactly(HEAD);
    }

    /** The multi-token-prediction layer is counted and stacked like the others: without its experts the file is refused. */
    @Test
    void aMissingMultiTokenPredictionLayerIsRefusedNamingIt() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = new TreeMap<>(tensors(303, false));
        in.keySet().removeIf(n -> n.startsWith("model.layers.3.mlp.experts."));
        Path out = tmp.resolve("mtp.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4.5-no-mtp", config(""), in), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("model.layers.3.mlp.experts.0").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void aMissingDenseLeadIsRefusedNotGuessed() throws IOException {
        Path out = tmp.resolve("lead.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4.5-lead", config("").replace("\"first_k_dense_replace\": 1, ", ""),
                tensors(304, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("first_k_dense_replace").doesNotContain("Exception");
    }

    /**
     * llama.cpp's logits against the reference forward pass (written from transformers' Glm4Moe),
     * 12 tokens, relative to the largest logit, llama.cpp's F16 KV cache modelled. Measured: with q/k
     * norms 4.2e-7 (seed 6) and 2.1e-4 (seed 5), without 5.6e-5 to 1.0e-4 (seeds 5 to 7): single
     * cache values that F32 and float64 arithmetic round to neighbouring float16s, as many as chance
     * gives a seed (one token alone 4.1e-5 with seed 5), hence 1e-3; F16 weights 5.9e-4 to 8.6e-4.
     * Deliberately wrong models 0.21 (the rotation on adjacent pairs) to 0.84 (no q/k/v biases) off.
     *
     * @param make  {@code make glm4moe} options beside the tokenizer ({@code ;}-separated)
     * @param wrong the compare options of a deliberately wrong model ({@code ;}-separated), or none
     */
    @ParameterizedTest
    @CsvSource({
            "--seed;6,              f32, ,                          0,    1e-3",
            "--seed;6,              f16, ,                          0,    3e-3",
            "--seed;6;--qk-norm,    f32, ,                          0,    1e-3",
            "--seed;6,              f32, --variant;interleaved-rope, 0.1,  1e-3",
            "--seed;6,              f32, --variant;full-rope,        0.2,  1e-3",
            "--seed;6,              f32, --variant;no-qkv-bias,      0.3,  1e-3",
            "--seed;6,              f32, --mutate;no-expert-bias,    0.2,  1e-3",
            "--seed;6,              f32, --mutate;no-shared-expert,  0.1,  1e-3",
            "--seed;6,              f32, --variant;softmax-router,   0.2,  1e-3"})
    void llamaCppComputesTheReferenceForwardPass(String make, String dtype, String wrong, double apart, double limit) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("glm4moe-forward");
        List<String> args = new java.util.ArrayList<>(List.of("glm4moe", dir.toString(), "--tokenizer", tok.get().toString()));
        args.addAll(List.of(make.split(";")));
        DecoderReference.make(tmp, args.toArray(String[]::new));
        DecoderReference.asGlmVocabulary(dir);
        DecoderReference.llamaCppComputesTheReferenceOf(tmp, dir, dtype, DecoderReference.options(wrong), apart, limit);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("GLM-4.5-Air-tiny", config(""), tensors(305, false), all),
                new ConverterParityTest.Folder("GLM-4.5-qk-tiny-bf16", config("").replace("\"use_qk_norm\": false", "\"use_qk_norm\": true"),
                        ConverterParityTest.as("BF16", tensors(306, true)), withAuto));
    }
}
