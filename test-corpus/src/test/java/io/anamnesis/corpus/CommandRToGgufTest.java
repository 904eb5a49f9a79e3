package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Cohere Command-R folder ({@code CohereForCausalLM}) to GGUF as the converter's
 * {@code CommandR2Model} writes it: one norm a block, Command R+'s per-head q/k norms, tied
 * embeddings, the context length from {@code model_max_length}, {@code logit_scale}; the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with
 * the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class CommandRToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 160, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS;

    @TempDir
    Path tmp;

    /** A tiny Command-R config.json (c4ai-command-r-08-2024's keys, sizes shrunk); {@code extra} more entries. */
    static String config(boolean qkNorm, String extra) {
        return "{\"architectures\": [\"CohereForCausalLM\"], \"model_type\": \"cohere\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"max_position_embeddings\": 8192, "
                + "\"layer_norm_eps\": 1e-05, \"logit_scale\": 0.0625, \"rope_theta\": 4000000.0, \"use_qk_norm\": " + qkNorm + ", "
                + extra + "\"attention_bias\": false, \"hidden_act\": \"silu\", \"bos_token_id\": 5, \"eos_token_id\": 255001, "
                + "\"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean qkNorm) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            if (qkNorm) {
                shapes.put(p + "self_attn.q_norm.weight", new long[]{HEADS, HEAD});
                shapes.put(p + "self_attn.k_norm.weight", new long[]{KV_HEADS, HEAD});
            }
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
    void oneNormABlockPerHeadQkNormsAndTheLogitScale() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(141, true);
        Path out = tmp.resolve("cr.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("c4ai-command-r-tiny", plus(config(true, "\"model_max_length\": 131072, ")), in),
                "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("command-r");
        // model_max_length over max_position_embeddings, as the converter's __init__ sets it
        assertThat(g.kv.get("command-r.context_length").asLong()).isEqualTo(131072);
        assertThat(g.kv.get("command-r.rope.scaling.type").asString()).isEqualTo("none");
        assertThat(g.kv).containsKeys("command-r.logit_scale", "command-r.attention.layer_norm_epsilon");
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.1.attn_norm.weight", "blk.1.ffn_gate.weight")
                .noneMatch(n -> n.contains("ffn_norm") || n.equals("output.weight"));
        // the per-head norms F32 [head_dim, heads] (ne reversed), as stored
        ReferenceGguf.Tensor qn = g.tensor("blk.0.attn_q_norm.weight");
        assertThat(qn.type()).isZero();
        assertThat(qn.ne()).containsExactly(HEAD, HEADS);
        assertThat(qn.bytes()).isEqualTo(in.get("model.layers.0.self_attn.q_norm.weight").bytes());
        // no permutation: q as stored
        assertThat(g.tensor("blk.1.attn_q.weight").type()).isEqualTo(1);
    }

    /**
     * Command R+'s q/k norms: llama.cpp's command-r loads them for 64 layers or more and for no
     * other, so the config says 64 layers (the converter reads the layer count, not the tensors,
     * for the block numbers it maps).
     */
    static String plus(String config) {
        return config.replace("\"num_hidden_layers\": " + LAYERS, "\"num_hidden_layers\": 64");
    }

    /** q/k norms with fewer than 64 layers, or none with 64: a file llama.cpp would not load. */
    @Test
    void qkNormsThatDoNotFitTheLayerCountAreRefused() throws IOException {
        Path out = tmp.resolve("qk.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("c4ai-qk", config(true, ""), tensors(145, true)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("use_qk_norm").contains("64").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @Test
    void aRopeScalingIsRefused() throws IOException {
        Path out = tmp.resolve("rope.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("c4ai-rope", config(false,
                "\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}, "), tensors(142, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("rope_scaling").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass: F32 within 1e-4 relative (measured
     * 1.2e-5), F16 3e-3 (2.8e-4); the block computed sequentially 0.22 relative off, the rotation
     * on rotate-half pairs 0.22 (a rope base of 4e6 turns little over 12 positions), without the
     * logit scale 0.94. Command R+'s q/k norms are compared byte for byte only: llama.cpp loads
     * them for 64 layers or more.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,,not-parallel", "f32,,neox-rope", "f32,,no-logit-scale"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String qkNorm, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (qkNorm != null) make.add(qkNorm);
        DecoderReference.llamaCppComputesTheReference(tmp, "cohere", make, dtype, variant, 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("c4ai-command-r-tiny", config(false, "\"model_max_length\": 131072, "), tensors(143, false), all),
                new ConverterParityTest.Folder("c4ai-command-r-plus-tiny-bf16", plus(config(true, "\"rope_scaling\": null, ")),
                        ConverterParityTest.as("BF16", tensors(144, true)), withAuto));
    }
}
