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
 * An ERNIE 4.5 MoE folder ({@code Ernie4_5_MoeForCausalLM}) to GGUF as the converter's
 * {@code Ernie4_5MoeModel} writes it: a dense lead block, the router and the selection bias in F32,
 * the experts stacked gate, up, down, the shared experts and their width as the converter computes
 * it, the multi-token-prediction tensors left out; the bad inputs. {@link ConverterParityTest}
 * compares such folders with the converter's own files; with the oracles ({@code ORACLE_CACHE}) and
 * the corpus's SentencePiece model, llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Ernie45MoeToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, LAYERS = 3, HEADS = 4, KV_HEADS = 2, HEAD = 32, EXPERTS = 8, WIDTH = 32, SHARED = 2;
    /** The dense layers' width: intermediate_size // num_key_value_heads is what the converter writes as the shared experts' width. */
    static final int FF = WIDTH * SHARED * KV_HEADS;

    @TempDir
    Path tmp;

    /** A tiny ERNIE-4.5-21B-A3B-PT config.json; {@code extra} more top-level entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"Ernie4_5_MoeForCausalLM\"], \"model_type\": \"ernie4_5_moe\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", "
                + "\"moe_num_experts\": " + EXPERTS + ", \"moe_k\": 2, \"moe_intermediate_size\": " + WIDTH + ", "
                + "\"moe_num_shared_experts\": " + SHARED + ", \"moe_layer_start_index\": 1, \"moe_layer_end_index\": " + (LAYERS - 1) + ", "
                + "\"moe_layer_interval\": 1, \"moe_use_aux_free\": true, \"moe_norm_min\": 1e-12, " + extra
                + "\"use_bias\": false, \"rms_norm_eps\": 1e-05, \"rope_theta\": 500000.0, \"max_position_embeddings\": 4096, "
                + "\"tie_word_embeddings\": true, \"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean mtp) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{(n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD, HIDDEN});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            if (i == 0) {
                shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
                shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
                continue;
            }
            shapes.put(p + "mlp.gate.weight", new long[]{EXPERTS, HIDDEN});
            shapes.put(p + "mlp.moe_statics.e_score_correction_bias", new long[]{1, EXPERTS});
            for (int x = 0; x < EXPERTS; x++) {
                shapes.put(p + "mlp.experts." + x + ".gate_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "mlp.experts." + x + ".up_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "mlp.experts." + x + ".down_proj.weight", new long[]{HIDDEN, WIDTH});
            }
            shapes.put(p + "mlp.shared_experts.gate_proj.weight", new long[]{(long) WIDTH * SHARED, HIDDEN});
            shapes.put(p + "mlp.shared_experts.up_proj.weight", new long[]{(long) WIDTH * SHARED, HIDDEN});
            shapes.put(p + "mlp.shared_experts.down_proj.weight", new long[]{HIDDEN, (long) WIDTH * SHARED});
        }
        if (mtp) {
            shapes.put("model.mtp_emb_norm.0.weight", new long[]{HIDDEN});
            shapes.put("model.mtp_hidden_norm.0.weight", new long[]{HIDDEN});
            shapes.put("model.mtp_linear_proj.0.weight", new long[]{HIDDEN, 2L * HIDDEN});
            shapes.put("model.mtp_block.0.input_layernorm.weight", new long[]{HIDDEN});
            shapes.put("model.mtp_block.0.self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void theExpertsInTheConvertersOrderAndTheMultiTokenPredictionLeftOut() throws IOException {
        Path out = tmp.resolve("ernie-moe.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("ERNIE-4.5-21B-A3B-PT-tiny", config(""), tensors(701, true)).toString(),
                "--to", "gguf", "--dtype", "f16", "--no-vocab", "-o", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("multi-token-prediction layers").contains("model.mtp_block.* 2");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("ernie4_5-moe");
        assertThat(g.kv.get("ernie4_5-moe.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("ernie4_5-moe.expert_used_count").asLong()).isEqualTo(2);
        assertThat(g.kv.get("ernie4_5-moe.leading_dense_block_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get("ernie4_5-moe.interleave_moe_layer_step").asLong()).isEqualTo(1);
        assertThat(g.kv.get("ernie4_5-moe.expert_shared_feed_forward_length").asLong()).isEqualTo((long) WIDTH * SHARED);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).noneMatch(n -> n.contains("mtp"));
        // Ernie4_5MoeModel stacks gate, up, down (not down, gate, up)
        int gate = names.indexOf("blk.1.ffn_gate_exps.weight"), up = names.indexOf("blk.1.ffn_up_exps.weight"),
                down = names.indexOf("blk.1.ffn_down_exps.weight");
        assertThat(gate).isLessThan(up);
        assertThat(up).isLessThan(down);
        assertThat(g.tensor("blk.1.exp_probs_b.bias").type()).isZero();
    }

    /** The converter writes the shared experts' width as intermediate_size // num_key_value_heads; llama.cpp builds them from it. */
    @Test
    void aSharedWidthTheConvertersFormulaMissesIsRefused() throws IOException {
        Path out = tmp.resolve("shared.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("ERNIE-shared", config("").replace("\"moe_num_shared_experts\": " + SHARED,
                "\"moe_num_shared_experts\": 1"), tensors(702, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("moe_num_shared_experts").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (a helper's, from transformers'
     * Ernie4_5_Moe, itself checked against transformers 5.18 to 1.4e-6), 12 tokens, relative to the
     * largest logit, llama.cpp's F16 KV cache modelled: F32 8.1e-5 (seed 2: a float16 rounding of a
     * cache value, as chance gives a seed); the weights not renormalized 0.073, no selection bias
     * 0.0043, no shared experts 0.46, rotate-half pairs 0.36.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,--variant;no-renorm,0.03", "f32,--mutate;no-expert-bias,0.002",
            "f32,--mutate;no-shared-expert,0.2", "f32,--variant;neox-rope,0.1"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong, Double apart) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "ernie4_5_moe", List.of("--sp", sp.get().toString(), "--seed", "2", "--mtp"),
                dtype, DecoderReference.options(wrong), apart == null ? 0 : apart, dtype.equals("f32") ? 1e-3 : 3e-3);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("ERNIE-4.5-21B-A3B-PT-tiny", config(""), tensors(703, true), all),
                new ConverterParityTest.Folder("ERNIE-4.5-MoE-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(704, false)),
                        withAuto));
    }
}
