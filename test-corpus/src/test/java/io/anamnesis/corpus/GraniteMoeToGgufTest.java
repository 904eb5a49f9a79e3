package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * IBM Granite MoE folders ({@code GraniteMoeForCausalLM}, {@code GraniteMoeSharedForCausalLM}) to GGUF
 * as the converter's {@code GraniteMoeModel} writes them: granite's attention and keys, the experts'
 * fused {@code input_linear} split into its halves of rows (gate, then up), the shared MLP split the
 * same way; the bad inputs. {@link ConverterParityTest} compares such folders with the converter's own
 * files; with the oracles ({@code ORACLE_CACHE}) and the {@code hf-to-gguf} corpus's SentencePiece
 * tokenizer, llama.cpp's logits are checked against {@code bench/scripts/decoder_reference.py}'s
 * forward pass.
 */
class GraniteMoeToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, LAYERS = 2, HEADS = 4, KV_HEADS = 2, EXPERTS = 4, USED = 2, WIDTH = 32, SHARED = 48;

    @TempDir
    Path tmp;

    /** A tiny Granite MoE config.json ({@code shared}: GraniteMoeShared's, with its shared MLP's width). */
    static String config(boolean shared, String extra) {
        return "{\"architectures\": [\"" + (shared ? "GraniteMoeSharedForCausalLM" : "GraniteMoeForCausalLM") + "\"], "
                + "\"model_type\": \"" + (shared ? "granitemoeshared" : "granitemoe") + "\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + WIDTH + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", "
                + "\"num_local_experts\": " + EXPERTS + ", \"num_experts_per_tok\": " + USED + ", "
                + (shared ? "\"shared_intermediate_size\": " + SHARED + ", " : "") + GraniteToGgufTest.MULTIPLIERS + extra
                + "\"max_position_embeddings\": 4096, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000.0, \"rope_scaling\": null, "
                + "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    /** The tensors of a tiny random Granite MoE as F32, in name order. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(boolean shared, long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        int head = HIDDEN / HEADS;
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * head, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * head, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * head, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * head});
            shapes.put(p + "block_sparse_moe.router.layer.weight", new long[]{EXPERTS, HIDDEN});
            shapes.put(p + "block_sparse_moe.input_linear.weight", new long[]{EXPERTS, 2L * WIDTH, HIDDEN});
            shapes.put(p + "block_sparse_moe.output_linear.weight", new long[]{EXPERTS, HIDDEN, WIDTH});
            if (shared) {
                shapes.put(p + "shared_mlp.input_linear.weight", new long[]{2L * SHARED, HIDDEN});
                shapes.put(p + "shared_mlp.output_linear.weight", new long[]{HIDDEN, SHARED});
            }
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float at(byte[] bytes, long i) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getFloat(Math.toIntExact(4 * i));
    }

    @ParameterizedTest
    @CsvSource({"false", "true"})
    void theExpertsHalvesOfRowsAsGateAndUp(boolean shared) throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(shared, 191);
        Path out = tmp.resolve("granitemoe.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("granite-moe-tiny", config(shared, "\"head_dim\": 32, "), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("granitemoe");
        assertThat(g.kv.get("granitemoe.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("granitemoe.expert_used_count").asLong()).isEqualTo(USED);
        assertThat(g.kv.get("granitemoe.feed_forward_length").asLong()).as("the experts' width").isEqualTo(WIDTH);
        assertThat(Float.intBitsToFloat((int) g.kv.get("granitemoe.residual_scale").asLong())).isEqualTo(0.22f);
        // GraniteModel drops head_dim: the rope over hidden / heads, no key length
        assertThat(g.kv.get("granitemoe.rope.dimension_count").asLong()).isEqualTo(HIDDEN / HEADS);
        assertThat(g.kv).doesNotContainKey("granitemoe.attention.key_length");
        if (shared) {
            assertThat(g.kv.get("granitemoe.expert_shared_feed_forward_length").asLong()).isEqualTo(SHARED);
        } else {
            assertThat(g.kv).doesNotContainKey("granitemoe.expert_shared_feed_forward_length");
        }
        assertThat(g.tensor("blk.0.ffn_gate_inp.weight").type()).as("the router stays F32").isZero();
        // input_linear [E, 2 I, hidden]: ffn_gate_exps is each expert's first I rows, ffn_up_exps its last I, as stored
        byte[] fused = in.get("model.layers.1.block_sparse_moe.input_linear.weight").bytes();
        ReferenceGguf.Tensor gate = g.tensor("blk.1.ffn_gate_exps.weight"), up = g.tensor("blk.1.ffn_up_exps.weight");
        assertThat(gate.ne()).containsExactly(HIDDEN, WIDTH, EXPERTS);
        assertThat(up.ne()).containsExactly(HIDDEN, WIDTH, EXPERTS);
        for (int e = 0; e < EXPERTS; e++) {
            for (int j = 0; j < WIDTH; j += 3) {
                for (int h = 0; h < HIDDEN; h += 7) {
                    long src = ((long) e * 2 * WIDTH + j) * HIDDEN + h;
                    assertThat(at(gate.bytes(), ((long) e * WIDTH + j) * HIDDEN + h)).isEqualTo(at(fused, src));
                    assertThat(at(up.bytes(), ((long) e * WIDTH + j) * HIDDEN + h)).isEqualTo(at(fused, src + (long) WIDTH * HIDDEN));
                }
            }
        }
        assertThat(g.tensor("blk.0.ffn_down_exps.weight").ne()).containsExactly(WIDTH, HIDDEN, EXPERTS);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).noneMatch(n -> n.endsWith("ffn_gate.weight") || n.endsWith("ffn_up.weight"));
        if (!shared) {
            assertThat(names).noneMatch(n -> n.contains("shexp"));
            return;
        }
        byte[] sharedFused = in.get("model.layers.0.shared_mlp.input_linear.weight").bytes();
        ReferenceGguf.Tensor sGate = g.tensor("blk.0.ffn_gate_shexp.weight"), sUp = g.tensor("blk.0.ffn_up_shexp.weight");
        assertThat(sGate.ne()).containsExactly(HIDDEN, SHARED);
        assertThat(at(sGate.bytes(), 5L * HIDDEN + 9)).isEqualTo(at(sharedFused, 5L * HIDDEN + 9));
        assertThat(at(sUp.bytes(), 5L * HIDDEN + 9)).isEqualTo(at(sharedFused, (SHARED + 5L) * HIDDEN + 9));
        assertThat(g.tensor("blk.0.ffn_down_shexp.weight").ne()).containsExactly(SHARED, HIDDEN);
    }

    /** Fused experts of another width than config.json's intermediate_size: exit 3 naming the tensor. */
    @Test
    void expertsOfAnotherWidthAreRefused() throws IOException {
        Path out = tmp.resolve("width.gguf");
        String config = config(false, "").replace("\"intermediate_size\": " + WIDTH, "\"intermediate_size\": 24");
        CorpusCliTest.Run r = DecoderReference.convert(folder("granite-moe-width", config, tensors(false, 192)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("block_sparse_moe").contains("intermediate_size").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** A router without one row per expert. */
    @Test
    void aRouterOfAnotherExpertCountIsRefused() throws IOException {
        Path out = tmp.resolve("router.gguf");
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>(tensors(false, 193));
        t.put("model.layers.1.block_sparse_moe.router.layer.weight",
                DecoderReference.randomF32(Map.of("r", new long[]{EXPERTS + 1, HIDDEN}), new Random(1)).get("r"));
        CorpusCliTest.Run r = DecoderReference.convert(folder("granite-moe-router", config(false, ""), t), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("router.layer").contains("num_local_experts").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** No expert count: the experts' layout cannot be checked (exit 3); none at all: the converter's dense layout (exit 6). */
    @Test
    void theExpertCountIsRequiredAndNotZero() throws IOException {
        Path out = tmp.resolve("count.gguf");
        CorpusCliTest.Run missing = DecoderReference.convert(folder("granite-moe-nocount",
                config(false, "").replace("\"num_local_experts\": " + EXPERTS + ", ", ""), tensors(false, 194)), "f16", out, false);
        assertThat(missing.code()).as(missing.err()).isEqualTo(3);
        assertThat(missing.err()).contains("num_local_experts");
        CorpusCliTest.Run none = DecoderReference.convert(folder("granite-moe-zero",
                config(true, "").replace("\"num_local_experts\": " + EXPERTS, "\"num_local_experts\": 0"), tensors(true, 195)), "f16", out,
                false);
        assertThat(none.code()).as(none.err()).isEqualTo(6);
        assertThat(none.err()).contains("num_local_experts is 0");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (granite's multipliers, the renormalized
     * top-k experts, the shared MLP): the same argmax and F32 within 1e-4 of the largest logit
     * (measured 6.5e-8), F16 3e-3 (1.6e-4); gate and up swapped, or the shared MLP left out, more
     * than 0.1 off (0.15, 0.19).
     */
    @ParameterizedTest
    @CsvSource({"granitemoe, f32, ", "granitemoe, f16, ", "granitemoeshared, f32, ", "granitemoeshared, f16, ",
            "granitemoe, f32, --mutate;swap-gate-up", "granitemoeshared, f32, --mutate;no-shared-expert"})
    void llamaCppComputesTheReferenceForwardPass(String arch, String dtype, String wrong) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, arch, List.of("--sp", sp.get().toString(), "--seed", "3"), dtype,
                DecoderReference.options(wrong), 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("granite-3.0-1b-a400m-tiny", config(false, "\"head_dim\": 32, "), tensors(false, 196), all),
                new ConverterParityTest.Folder("granite-moe-shared-tiny-bf16", config(true, ""),
                        ConverterParityTest.as("BF16", tensors(true, 197)), withAuto));
    }
}
