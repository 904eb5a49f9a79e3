package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * DeepSeek-V2 and V3 folders ({@code DeepseekV2ForCausalLM}, {@code DeepseekV3ForCausalLM}) to
 * GGUF as the converter's {@code DeepseekV2Model} writes them: latent attention with
 * {@code kv_b_proj} split per head (the key part transposed), one key/value head, the leading
 * dense block, the routers and V3's selection bias in F32, the experts stacked, the shared
 * experts, the multi-token-prediction layer left out, DeepSeek's keys; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class DeepSeek2ToGgufTest {
    /** DeepSeek-V2-Lite's layer count: llama.cpp takes a model without the low-rank query pair by it. */
    static final int LITE_LAYERS = 27;
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 3, HEADS = 4, Q_RANK = 48, KV_RANK = 32, NOPE = 32, ROPE = 16,
            V = 32, EXPERTS = 8, WIDTH = 32, SHARED = 1;

    @TempDir
    Path tmp;

    /** A tiny DeepSeek-V3 config.json (its keys, sizes shrunk); {@code extra} more top-level entries. */
    static String v3(String extra) {
        return "{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"model_type\": \"deepseek_v3\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"moe_intermediate_size\": " + WIDTH + ", "
                + "\"num_hidden_layers\": " + LAYERS + ", \"num_nextn_predict_layers\": 1, \"num_attention_heads\": " + HEADS + ", "
                + "\"num_key_value_heads\": " + HEADS + ", \"n_shared_experts\": " + SHARED + ", \"n_routed_experts\": " + EXPERTS + ", "
                + "\"routed_scaling_factor\": 2.5, \"kv_lora_rank\": " + KV_RANK + ", \"q_lora_rank\": " + Q_RANK + ", "
                + "\"qk_rope_head_dim\": " + ROPE + ", \"v_head_dim\": " + V + ", \"qk_nope_head_dim\": " + NOPE + ", "
                + "\"topk_method\": \"noaux_tc\", \"n_group\": 4, \"topk_group\": 2, \"num_experts_per_tok\": 2, \"moe_layer_freq\": 1, "
                + "\"first_k_dense_replace\": 1, \"norm_topk_prob\": true, \"scoring_func\": \"sigmoid\", " + extra
                + "\"hidden_act\": \"silu\", \"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000, "
                + "\"rope_scaling\": null, \"tie_word_embeddings\": false, \"attention_bias\": false, \"torch_dtype\": \"float32\"}";
    }

    /** DeepSeek-V3's YaRN rope scaling (its config.json's, the original context shrunk), with mscale {@code mscale}. */
    static String yarn(double mscale) {
        return "\"rope_scaling\": {\"beta_fast\": 32, \"beta_slow\": 1, \"factor\": 40, \"mscale\": " + mscale + ", "
                + "\"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 64, \"type\": \"yarn\"}, ";
    }

    /** GLM-4.7-Flash's config.json as V3's (its class is a DeepseekV3Config): the same keys, its own class and model type. */
    static String glm47Flash() {
        return v3("").replace("DeepseekV3ForCausalLM", "Glm4MoeLiteForCausalLM").replace("deepseek_v3", "glm4_moe_lite");
    }

    /** A tiny DeepSeek-V2-Lite config.json: one query projection (no q_lora_rank), softmax routing, one group, 27 layers. */
    static String v2Lite(String extra) {
        return v3(extra).replace("\"num_hidden_layers\": " + LAYERS, "\"num_hidden_layers\": " + LITE_LAYERS).replace("DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM").replace("deepseek_v3", "deepseek_v2")
                .replace("\"q_lora_rank\": " + Q_RANK, "\"q_lora_rank\": null").replace("\"noaux_tc\"", "\"greedy\"")
                .replace("\"n_group\": 4, \"topk_group\": 2", "\"n_group\": 1, \"topk_group\": 1")
                .replace("\"norm_topk_prob\": true", "\"norm_topk_prob\": false").replace("\"sigmoid\"", "\"softmax\"")
                .replace("\"routed_scaling_factor\": 2.5", "\"routed_scaling_factor\": 1.0")
                .replace("\"num_nextn_predict_layers\": 1, ", "");
    }

    /**
     * The tensors of {@code layers} layers as the checkpoints name them: layer 0 dense, the others
     * with experts (and V3's selection bias with {@code v3}); {@code qLora} the low-rank query pair
     * instead of one projection; {@code mtp} a multi-token-prediction layer after them.
     */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean qLora, boolean v3, boolean mtp) {
        return tensors(seed, qLora, v3, mtp, LAYERS);
    }

    /** DeepSeek-V2-Lite's tensors: one query projection, no selection bias, {@link #LITE_LAYERS} layers. */
    static Map<String, ReferenceSafetensors.Tensor> liteTensors(long seed) {
        return tensors(seed, false, false, false, LITE_LAYERS);
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean qLora, boolean v3, boolean mtp, int layers) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < layers + (mtp ? 1 : 0); i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            if (qLora) {
                shapes.put(p + "self_attn.q_a_proj.weight", new long[]{Q_RANK, HIDDEN});
                shapes.put(p + "self_attn.q_a_layernorm.weight", new long[]{Q_RANK});
                shapes.put(p + "self_attn.q_b_proj.weight", new long[]{(long) HEADS * (NOPE + ROPE), Q_RANK});
            } else {
                shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * (NOPE + ROPE), HIDDEN});
            }
            shapes.put(p + "self_attn.kv_a_proj_with_mqa.weight", new long[]{KV_RANK + ROPE, HIDDEN});
            shapes.put(p + "self_attn.kv_a_layernorm.weight", new long[]{KV_RANK});
            shapes.put(p + "self_attn.kv_b_proj.weight", new long[]{(long) HEADS * (NOPE + V), KV_RANK});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * V});
            if (i == 0) {
                shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
                continue;
            }
            shapes.put(p + "mlp.gate.weight", new long[]{EXPERTS, HIDDEN});
            if (v3) shapes.put(p + "mlp.gate.e_score_correction_bias", new long[]{EXPERTS});
            for (int x = 0; x < EXPERTS; x++) {
                shapes.put(p + "mlp.experts." + x + ".gate_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "mlp.experts." + x + ".up_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "mlp.experts." + x + ".down_proj.weight", new long[]{HIDDEN, WIDTH});
            }
            shapes.put(p + "mlp.shared_experts.gate_proj.weight", new long[]{(long) WIDTH * SHARED, HIDDEN});
            shapes.put(p + "mlp.shared_experts.up_proj.weight", new long[]{(long) WIDTH * SHARED, HIDDEN});
            shapes.put(p + "mlp.shared_experts.down_proj.weight", new long[]{HIDDEN, (long) WIDTH * SHARED});
            if (i == layers) {
                // DeepSeek-V3's multi-token-prediction layer: its own embeddings, norms, projection and head
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

    private static float f32(ReferenceGguf.Kv kv) {
        assertThat(kv.type()).isEqualTo(6); // float32
        return ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    }

    private static float at(ReferenceSafetensors.Tensor t, long i) {
        return ByteBuffer.wrap(t.bytes()).order(ByteOrder.LITTLE_ENDIAN).getFloat(Math.toIntExact(4 * i));
    }

    @Test
    void latentAttentionExpertsAndKeysAsTheConverterWritesThem() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(201, true, true, true);
        Path out = tmp.resolve("v3.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V3-tiny", v3(""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("deepseek2");
        assertThat(g.kv.get("deepseek2.attention.head_count").asLong()).isEqualTo(HEADS);
        assertThat(g.kv.get("deepseek2.attention.head_count_kv").asLong()).isEqualTo(1);
        assertThat(g.kv.get("deepseek2.leading_dense_block_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get("deepseek2.attention.q_lora_rank").asLong()).isEqualTo(Q_RANK);
        assertThat(g.kv.get("deepseek2.attention.kv_lora_rank").asLong()).isEqualTo(KV_RANK);
        assertThat(g.kv.get("deepseek2.attention.key_length").asLong()).isEqualTo(KV_RANK + ROPE);
        assertThat(g.kv.get("deepseek2.attention.value_length").asLong()).isEqualTo(KV_RANK);
        assertThat(g.kv.get("deepseek2.attention.key_length_mla").asLong()).isEqualTo(NOPE + ROPE);
        assertThat(g.kv.get("deepseek2.attention.value_length_mla").asLong()).isEqualTo(V);
        assertThat(g.kv.get("deepseek2.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("deepseek2.expert_used_count").asLong()).isEqualTo(2);
        assertThat(g.kv.get("deepseek2.expert_shared_count").asLong()).isEqualTo(SHARED);
        assertThat(g.kv.get("deepseek2.expert_group_count").asLong()).isEqualTo(4);
        assertThat(g.kv.get("deepseek2.expert_group_used_count").asLong()).isEqualTo(2);
        assertThat(g.kv.get("deepseek2.expert_gating_func").asLong()).isEqualTo(2); // sigmoid
        assertThat(g.kv.get("deepseek2.expert_weights_norm").type()).isEqualTo(7); // bool
        assertThat(g.kv.get("deepseek2.expert_weights_norm").value()).containsExactly(1);
        assertThat(f32(g.kv.get("deepseek2.expert_weights_scale"))).isEqualTo(2.5f);
        assertThat(g.kv.get("deepseek2.rope.dimension_count").asLong()).isEqualTo(ROPE);
        assertThat(f32(g.kv.get("deepseek2.attention.layer_norm_rms_epsilon"))).isEqualTo(1e-6f);

        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.0.ffn_gate.weight", "blk.1.ffn_gate_exps.weight", "blk.2.ffn_down_shexp.weight",
                "blk.1.attn_q_a.weight", "blk.1.attn_q_a_norm.weight", "blk.1.attn_kv_a_mqa.weight", "blk.1.exp_probs_b.bias")
                .doesNotContain("blk.0.ffn_gate_exps.weight", "blk.1.ffn_gate.weight")
                .noneMatch(n -> n.startsWith("blk.3.") || n.contains("kv_b"));
        assertThat(g.tensor("blk.1.exp_probs_b.bias").type()).isZero();
        assertThat(g.tensor("blk.2.ffn_gate_exps.weight").ne()).containsExactly(HIDDEN, WIDTH, EXPERTS);

        // kv_b_proj [heads x (nope + v), rank] split per head: k_b [heads, rank, nope] (GGUF dims reversed), each
        // element (h, l, n) the stored kv_b[h (nope + v) + n][l]; v_b [heads, v, rank], kv_b[h (nope + v) + nope + j][l]
        ReferenceSafetensors.Tensor kvB = in.get("model.layers.2.self_attn.kv_b_proj.weight");
        ReferenceGguf.Tensor kB = g.tensor("blk.2.attn_k_b.weight"), vB = g.tensor("blk.2.attn_v_b.weight");
        assertThat(kB.ne()).containsExactly(NOPE, KV_RANK, HEADS);
        assertThat(vB.ne()).containsExactly(KV_RANK, V, HEADS);
        ByteBuffer k = ByteBuffer.wrap(kB.bytes()).order(ByteOrder.LITTLE_ENDIAN), v = ByteBuffer.wrap(vB.bytes()).order(ByteOrder.LITTLE_ENDIAN);
        for (int h = 0; h < HEADS; h++) {
            for (int l = 0; l < KV_RANK; l++) {
                for (int n = 0; n < NOPE; n++) {
                    assertThat(k.getFloat(4 * ((h * KV_RANK + l) * NOPE + n))).isEqualTo(at(kvB, (long) (h * (NOPE + V) + n) * KV_RANK + l));
                }
                for (int j = 0; j < V; j++) {
                    assertThat(v.getFloat(4 * ((h * V + j) * KV_RANK + l))).isEqualTo(at(kvB, (long) (h * (NOPE + V) + NOPE + j) * KV_RANK + l));
                }
            }
        }
        assertThat(r.out() + r.err()).doesNotContain("layer 3 (past");
    }

    @Test
    void theMultiTokenPredictionLayerIsLeftOutAndSaidSo() throws IOException {
        Path out = tmp.resolve("mtp.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("DeepSeek-V3-mtp", v3(""), tensors(202, true, true, true)).toString(),
                "--to", "gguf", "--dtype", "f16", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("layer 3").contains("multi-token-prediction");
        assertThat(ReferenceGguf.read(out).tensors).noneMatch(t -> t.name().startsWith("blk.3."));
    }

    @Test
    void deepSeekV2LiteHasOneQueryProjectionAndSoftmaxRouting() throws IOException {
        Path out = tmp.resolve("v2.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V2-Lite-tiny", v2Lite(""), liteTensors(203)),
                "q8_0", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv).doesNotContainKeys("deepseek2.attention.q_lora_rank", "deepseek2.expert_weights_norm");
        assertThat(g.kv.get("deepseek2.expert_gating_func").asLong()).isEqualTo(1); // softmax
        assertThat(g.kv.get("deepseek2.expert_group_count").asLong()).isEqualTo(1);
        assertThat(g.tensor("blk.0.attn_q.weight").ne()).containsExactly(HIDDEN, (long) HEADS * (NOPE + ROPE));
        // q8_0 (type 8) where the rows are whole blocks of 32, as the converter quantizes them
        assertThat(g.tensor("blk.1.attn_k_b.weight").type()).isEqualTo(8);
        assertThat(g.tensor("blk.1.ffn_gate_inp.weight").type()).isZero();
    }

    /** DeepSeek-V2's group_limited_greedy picks groups by their best score; llama.cpp's graph sums the two best. */
    @Test
    void groupLimitedGreedyRoutingOverSeveralGroupsIsRefused() throws IOException {
        Path out = tmp.resolve("groups.gguf");
        String config = v2Lite("").replace("\"n_group\": 1, \"topk_group\": 1", "\"n_group\": 4, \"topk_group\": 2")
                .replace("\"greedy\"", "\"group_limited_greedy\"");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V2-groups", config, liteTensors(204)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("group_limited_greedy").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's deepseek2 tells DeepSeek-V2-Lite's single query projection from the low-rank pair by
     * the layer count alone (26 or 27): other layouts would give files it does not load.
     */
    @Test
    void queryLayoutsLlamaCppWouldNotLoadAreRefused() throws IOException {
        Path out = tmp.resolve("layout.gguf");
        CorpusCliTest.Run single = DecoderReference.convert(folder("DeepSeek-V2-3-layers",
                v2Lite("").replace("\"num_hidden_layers\": " + LITE_LAYERS, "\"num_hidden_layers\": " + LAYERS),
                tensors(210, false, false, false)), "f16", out, false);
        assertThat(single.code()).as(single.err()).isEqualTo(6);
        assertThat(single.err()).contains("q_lora_rank is null").contains("26 or 27 layers").doesNotContain("Exception");
        CorpusCliTest.Run pair = DecoderReference.convert(folder("DeepSeek-V3-27-layers",
                v3("").replace("\"num_hidden_layers\": " + LAYERS, "\"num_hidden_layers\": " + LITE_LAYERS),
                tensors(211, true, true, false, LITE_LAYERS)), "f16", out, false);
        assertThat(pair.code()).as(pair.err()).isEqualTo(6);
        assertThat(pair.err()).contains("q_lora_rank is " + Q_RANK).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** GLM-4.7-Flash ({@code Glm4MoeLiteForCausalLM}) is DeepSeek-V3's layout under arch deepseek2. */
    @Test
    void glm47FlashIsDeepSeekV3sLayout() throws IOException {
        Path out = tmp.resolve("flash.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("GLM-4.7-Flash-tiny", glm47Flash(), tensors(216, true, true, true)),
                "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("deepseek2");
        assertThat(g.kv.get("deepseek2.attention.kv_lora_rank").asLong()).isEqualTo(KV_RANK);
        assertThat(g.tensor("blk.1.attn_k_b.weight").ne()).containsExactly(NOPE, KV_RANK, HEADS);
    }

    /** transformers rotates the halves of the rotary part when rope_interleave is false; llama.cpp's deepseek2 adjacent pairs. */
    @Test
    void rotateHalfRopeIsRefused() throws IOException {
        Path out = tmp.resolve("interleave.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V3-halves", v3("\"rope_interleave\": false, "),
                tensors(217, true, true, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("rope_interleave").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** DeepSeek-V2's code renormalizes or scales the chosen experts' weights; llama.cpp would do both. */
    @Test
    void renormalizedAndScaledV2RoutingIsRefused() throws IOException {
        Path out = tmp.resolve("norm.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V2-norm", v2Lite("").replace("\"norm_topk_prob\": false",
                "\"norm_topk_prob\": true").replace("\"routed_scaling_factor\": 1.0", "\"routed_scaling_factor\": 16.0"),
                liteTensors(212)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("norm_topk_prob").contains("routed_scaling_factor").doesNotContain("Exception");
    }

    /** YaRN's attention factor as DeepSeek's: llama.cpp's deepseek2 takes it from yarn_log_multiplier (0.1 mscale_all_dim). */
    @Test
    void yarnWritesTheLogMultiplierAndRefusesARotationScaleLlamaCppLacks() throws IOException {
        Path out = tmp.resolve("yarn.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V3-yarn", v3(yarn(1.0)).replace("\"rope_scaling\": null, ", ""),
                tensors(213, true, true, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("deepseek2.rope.scaling.type").asString()).isEqualTo("yarn");
        assertThat(f32(g.kv.get("deepseek2.rope.scaling.factor"))).isEqualTo(40f);
        assertThat(g.kv.get("deepseek2.rope.scaling.original_context_length").asLong()).isEqualTo(64);
        assertThat(f32(g.kv.get("deepseek2.rope.scaling.yarn_log_multiplier"))).isEqualTo(0.1f);
        // mscale 0.707 with mscale_all_dim 1 scales transformers' cos and sin by 0.94: no key says so to llama.cpp
        Path refused = tmp.resolve("mscale.gguf");
        CorpusCliTest.Run m = DecoderReference.convert(folder("DeepSeek-V3-mscale", v3(yarn(0.707)).replace("\"rope_scaling\": null, ", ""),
                tensors(214, true, true, false)), "f16", refused, false);
        assertThat(m.code()).as(m.err()).isEqualTo(6);
        assertThat(m.err()).contains("mscale 0.707").doesNotContain("Exception");
        assertThat(refused).doesNotExist();
    }

    @Test
    void aLatentProjectionOfAnotherSizeIsRefusedNamingTheKey() throws IOException {
        Path out = tmp.resolve("size.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V3-size",
                v3("").replace("\"kv_lora_rank\": " + KV_RANK, "\"kv_lora_rank\": 24"), tensors(205, true, true, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("kv_lora_rank").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** Sizes that would overflow the split's arithmetic are refused before any tensor is read. */
    @Test
    void anAbsurdLatentSizeIsRefusedNamingTheKey() throws IOException {
        Path out = tmp.resolve("absurd.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V3-absurd",
                v3("").replace("\"qk_nope_head_dim\": " + NOPE, "\"qk_nope_head_dim\": 4611686018427387904"),
                tensors(219, true, true, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("qk_nope_head_dim").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void aMissingDenseLeadIsRefusedNotGuessed() throws IOException {
        Path out = tmp.resolve("lead.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("DeepSeek-V3-lead", v3("").replace("\"first_k_dense_replace\": 1, ", ""),
                tensors(206, true, true, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("first_k_dense_replace").doesNotContain("Exception");
    }

    /**
     * llama.cpp's logits against the reference forward pass (written from DeepSeek's modeling code),
     * llama.cpp's absorbed attention with its F16 cache of the compressed keys and values modelled;
     * 12 tokens, relative to the largest logit. Measured: V3 with YaRN 1.7e-7 (F32); one token through
     * DeepSeek-V2-Lite's 27 layers 2.8e-7; over 12 tokens without YaRN 4.4e-5 (V3, 3 layers; FP8 1.4e-4)
     * to 3.0e-4 (27 layers): single cache values that F32 and float64 round to neighbouring float16s, as
     * chance gives a seed (GLM-4.7-Flash's relabelled V3 folder 5.1e-7), hence 1e-3 here, and F16
     * weights 7.8e-4 to 2.9e-3. Deliberately wrong models are 0.07 (no selection bias) to 1.06 (no
     * shared experts) off.
     *
     * @param make  {@code make deepseek2} options beside the tokenizer (the layout; {@code ;}-separated)
     * @param wrong the compare options of a deliberately wrong model ({@code ;}-separated), or none
     */
    @ParameterizedTest
    @CsvSource({
            "--layers;27,        f32, ,                          0,    1e-3",
            "--layers;27,        f16, ,                          0,    6e-3",
            "--layers;27,        f32, --mutate;no-shared-expert, 0.5,  1e-3",
            "--v3,               f32, ,                          0,    1e-3",
            "--v3,               f16, ,                          0,    3e-3",
            "--v3,               f32, --variant;neox-rope,       0.3,  1e-3",
            "--v3,               f32, --mutate;no-expert-bias,   0.05, 1e-3",
            "--v3,               f32, --variant;no-groups,       0.05, 1e-3",
            "--v3,               f32, --variant;softmax-router,  0.3,  1e-3",
            "--v3;--yarn;64,     f32, ,                          0,    1e-4",
            "--v3;--yarn;64,     f32, --mutate;no-attn-factor,   0.3,  1e-4",
            "--v3;--fp8,         f32, ,                          0,    1e-3",
            "--v3;--glm47-flash, f32, ,                          0,    1e-3"})
    void llamaCppComputesTheReferenceForwardPass(String make, String dtype, String wrong, double apart, double limit) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("deepseek2-forward");
        List<String> args = new java.util.ArrayList<>(List.of("deepseek2", dir.toString(), "--tokenizer", tok.get().toString(),
                "--seed", "5"));
        boolean flash = make.endsWith(";--glm47-flash");
        args.addAll(List.of(make.replace(";--glm47-flash", "").split(";")));
        DecoderReference.make(tmp, args.toArray(String[]::new));
        if (flash) {
            // the V3 folder relabelled GLM-4.7-Flash, with the vocabulary GLM's rule reads
            Files.writeString(dir.resolve("config.json"), Files.readString(dir.resolve("config.json"))
                    .replace("DeepseekV3ForCausalLM", "Glm4MoeLiteForCausalLM").replace("deepseek_v3", "glm4_moe_lite"));
            DecoderReference.asGlmVocabulary(dir);
        }
        DecoderReference.llamaCppComputesTheReferenceOf(tmp, dir, dtype, DecoderReference.options(wrong), apart, limit);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("DeepSeek-V3-tiny", v3(""), tensors(207, true, true, true), all),
                new ConverterParityTest.Folder("DeepSeek-V3-tiny-bf16", v3(""), ConverterParityTest.as("BF16", tensors(208, true, true, false)), withAuto),
                new ConverterParityTest.Folder("DeepSeek-V3-yarn-tiny", v3(yarn(1.0)).replace("\"rope_scaling\": null, ", ""),
                        tensors(215, true, true, false), List.of("f32")),
                new ConverterParityTest.Folder("DeepSeek-V2-Lite-tiny", v2Lite(""), liteTensors(209), all),
                new ConverterParityTest.Folder("GLM-4.7-Flash-tiny", glm47Flash(), tensors(218, true, true, true), List.of("f16", "q8_0")));
    }
}
