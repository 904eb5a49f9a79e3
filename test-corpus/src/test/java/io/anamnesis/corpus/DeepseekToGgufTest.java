package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The first DeepSeek MoE's folders ({@code DeepseekForCausalLM}: deepseek-moe-16b) to GGUF as the converter's
 * {@code DeepseekModel} writes them: llama's attention with q/k permuted, a dense first block, then the router, the
 * routed experts stacked per block (down, gate, up) and the shared experts; TextModel's keys then DeepSeek's; the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class DeepseekToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 3, HEADS = 4, EXPERTS = 4, WIDTH = 16, SHARED = 2;

    @TempDir
    Path tmp;

    /** deepseek-moe-16b-base's config.json shape, sizes shrunk: a dense first block, 4 routed experts (2 used), 2 shared. */
    static String config() {
        return "{\"architectures\": [\"DeepseekForCausalLM\"], \"attention_bias\": false, \"first_k_dense_replace\": 1, "
                + "\"hidden_act\": \"silu\", \"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", "
                + "\"max_position_embeddings\": 4096, \"model_type\": \"deepseek\", \"moe_intermediate_size\": " + WIDTH + ", "
                + "\"moe_layer_freq\": 1, \"n_routed_experts\": " + EXPERTS + ", \"n_shared_experts\": " + SHARED + ", "
                + "\"norm_topk_prob\": false, \"num_attention_heads\": " + HEADS + ", \"num_experts_per_tok\": 2, "
                + "\"num_hidden_layers\": " + LAYERS + ", \"num_key_value_heads\": " + HEADS + ", \"rms_norm_eps\": 1e-06, "
                + "\"rope_scaling\": null, \"rope_theta\": 10000, \"scoring_func\": \"softmax\", \"tie_word_embeddings\": false, "
                + "\"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random DeepSeek MoE as F32: block 0 dense, blocks 1 and 2 with their experts. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v", "o")) shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{HIDDEN, HIDDEN});
            if (i == 0) {
                mlp(shapes, p + "mlp.", FF);
                continue;
            }
            shapes.put(p + "mlp.gate.weight", new long[]{EXPERTS, HIDDEN});
            for (int e = 0; e < EXPERTS; e++) mlp(shapes, p + "mlp.experts." + e + ".", WIDTH);
            mlp(shapes, p + "mlp.shared_experts.", SHARED * WIDTH);
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private static void mlp(Map<String, long[]> shapes, String p, long width) {
        shapes.put(p + "gate_proj.weight", new long[]{width, HIDDEN});
        shapes.put(p + "up_proj.weight", new long[]{width, HIDDEN});
        shapes.put(p + "down_proj.weight", new long[]{HIDDEN, width});
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void theKeysTheDenseLeadAndTheStackedExperts() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(701);
        Path out = tmp.resolve("deepseek.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("deepseek-moe-tiny", config(), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "deepseek";
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".block_count", a + ".attention.layer_norm_rms_epsilon",
                a + ".expert_used_count", a + ".expert_gating_func", "general.file_type", a + ".rope.dimension_count",
                a + ".rope.scaling.type", a + ".leading_dense_block_count", a + ".vocab_size", a + ".expert_feed_forward_length",
                a + ".expert_weights_scale", a + ".expert_count", a + ".expert_shared_count");
        assertThat(g.kv.get(a + ".expert_gating_func").asLong()).as("softmax").isEqualTo(1);
        assertThat(g.kv.get(a + ".leading_dense_block_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get(a + ".expert_count").asLong()).isEqualTo(EXPERTS);
        // block 0 dense, blocks 1 and 2 with experts stacked down, gate, up (in that order in the file)
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.0.ffn_gate.weight", "blk.1.ffn_gate_inp.weight", "blk.2.ffn_up_shexp.weight")
                .doesNotContain("blk.0.ffn_gate_exps.weight", "blk.1.ffn_gate.weight");
        assertThat(names.indexOf("blk.1.ffn_down_exps.weight")).isLessThan(names.indexOf("blk.1.ffn_gate_exps.weight"));
        assertThat(names.indexOf("blk.1.ffn_gate_exps.weight")).isLessThan(names.indexOf("blk.1.ffn_up_exps.weight"));
        assertThat(g.tensor("blk.2.ffn_gate_exps.weight").ne()).containsExactly(HIDDEN, WIDTH, EXPERTS);
        // expert 3's gate is the stack's last slice, as stored
        byte[] stack = g.tensor("blk.2.ffn_gate_exps.weight").bytes(), e3 = in.get("model.layers.2.mlp.experts.3.gate_proj.weight").bytes();
        assertThat(Arrays.copyOfRange(stack, stack.length - e3.length, stack.length)).isEqualTo(e3);
        // q permuted as llama's (row 1 of head 0 is its row d / 2), v as stored
        int d = HIDDEN / HEADS, row = 4 * HIDDEN;
        byte[] q = g.tensor("blk.1.attn_q.weight").bytes(), stored = in.get("model.layers.1.self_attn.q_proj.weight").bytes();
        assertThat(Arrays.copyOfRange(q, row, 2 * row)).isEqualTo(Arrays.copyOfRange(stored, d / 2 * row, (d / 2 + 1) * row));
        assertThat(g.tensor("blk.1.attn_v.weight").bytes()).isEqualTo(in.get("model.layers.1.self_attn.v_proj.weight").bytes());
    }

    /** Routing llama.cpp's deepseek would compute as another model (exit 6); a width or count the tensors do not have (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"norm_topk_prob\": false|\"norm_topk_prob\": true|6|norm_topk_prob",
            "\"scoring_func\": \"softmax\"|\"scoring_func\": \"sigmoid\"|6|scoring_func",
            "\"rope_scaling\": null|\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}|6|rope_scaling",
            "\"moe_layer_freq\": 1|\"moe_layer_freq\": 2|6|moe_layer_freq",
            "\"first_k_dense_replace\": 1, ||3|first_k_dense_replace",
            "\"moe_intermediate_size\": 16|\"moe_intermediate_size\": 32|3|moe_intermediate_size",
            "\"n_routed_experts\": 4|\"n_routed_experts\": 8|3|n_routed_experts"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(), from, to, tensors(702), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (llama's attention, softmax routing to 2 of 4 experts
     * without renormalizing, the shared experts), 12 tokens: F32 within 1e-4 of the largest logit (measured 1.7e-5, an
     * F16 cache value rounded to its neighbour, as deepseek2's docs describe), F16 3e-3 (7.2e-4); without the shared
     * experts 0.47 off, the experts' order reversed 0.25.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,--mutate;no-shared-expert,0.1", "f32,--mutate;reverse-experts,0.1"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong, Double apart) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "deepseek", List.of("--tokenizer", tok.get().toString(), "--seed", "1"),
                dtype, DecoderReference.options(wrong), apart == null ? 0 : apart);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("deepseek-moe-16b-tiny", config(), tensors(703), all),
                new ConverterParityTest.Folder("deepseek-moe-16b-chat-tiny-bf16", config(), ConverterParityTest.as("BF16", tensors(704)),
                        withAuto));
    }
}
