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
 * Stability AI's StableLM folders ({@code StableLmForCausalLM}, and {@code StableLMEpochForCausalLM} with its older
 * keys) to GGUF as the converter's {@code StableLMModel} writes them: llama's names with LayerNorms and q/k/v
 * biases, no permutation, its own keys (the partial rope's dimension count, the parallel residual true when absent);
 * the bad inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class StableLmToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV = 2;

    @TempDir
    Path tmp;

    /** stablelm-2-1_6b's config.json shape, sizes shrunk (heads of 8, half of each rotated), {@code extra} more entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"StableLmForCausalLM\"], \"hidden_act\": \"silu\", \"hidden_size\": " + HIDDEN + ", "
                + "\"intermediate_size\": " + FF + ", \"layer_norm_eps\": 1e-05, \"max_position_embeddings\": 4096, "
                + "\"model_type\": \"stablelm\", \"num_attention_heads\": " + HEADS + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_key_value_heads\": " + KV + ", \"partial_rotary_factor\": 0.5, \"qk_layernorm\": false, \"rope_scaling\": null, "
                + extra + "\"rope_theta\": 10000, \"tie_word_embeddings\": false, \"use_qkv_bias\": true, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random StableLM as F32, in name order; without post-attention norms when {@code parallel}. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean parallel) {
        Map<String, long[]> shapes = new TreeMap<>();
        int d = HIDDEN / HEADS;
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        shapes.put("model.norm.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String n : parallel ? List.of("input_layernorm") : List.of("input_layernorm", "post_attention_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            for (String n : List.of("q", "k", "v")) {
                long rows = (n.equals("q") ? HEADS : KV) * (long) d;
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, HIDDEN});
                shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, HIDDEN});
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
    void itsOwnKeysAndTheRowsAsStored() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(291, false);
        Path out = tmp.resolve("stablelm.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("stablelm-2-tiny", config("\"use_parallel_residual\": false, "), in),
                "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "stablelm";
        // StableLMModel.set_gguf_parameters' keys in its order, none of TextModel's
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".context_length", a + ".embedding_length", a + ".block_count",
                a + ".feed_forward_length", a + ".rope.dimension_count", a + ".attention.head_count", a + ".attention.head_count_kv",
                a + ".use_parallel_residual", a + ".attention.layer_norm_epsilon", "general.file_type")
                .doesNotContain(a + ".rope.freq_base", a + ".attention.layer_norm_rms_epsilon");
        assertThat(g.kv.get(a + ".rope.dimension_count").asLong()).as("int(0.5 x 8)").isEqualTo(4);
        assertThat(g.kv.get(a + ".use_parallel_residual").asLong()).isZero();
        // no permutation: q and k as stored (llama's rows would be interleaved)
        assertThat(g.tensor("blk.1.attn_q.weight").bytes()).isEqualTo(in.get("model.layers.1.self_attn.q_proj.weight").bytes());
        assertThat(g.tensor("blk.0.attn_k.bias").bytes()).isEqualTo(in.get("model.layers.0.self_attn.k_proj.bias").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).contains("output_norm.bias", "blk.1.ffn_norm.bias");
        // without use_parallel_residual the converter writes true (transformers' default is false: it says so in the key)
        Path absent = tmp.resolve("absent.gguf");
        assertThat(DecoderReference.convert(folder("stablelm-absent", config(""), tensors(292, true)), "f16", absent, false).code())
                .isZero();
        assertThat(ReferenceGguf.read(absent).kv.get(a + ".use_parallel_residual").asLong()).isEqualTo(1);
    }

    /** StableLMEpochForCausalLM's older keys ({@code rope_pct}, {@code norm_eps}) give the same file as the new ones. */
    @Test
    void theRemoteCodeClassWithItsOlderKeys() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(293, false);
        String now = config("\"use_parallel_residual\": false, ");
        String epoch = now.replace("StableLmForCausalLM", "StableLMEpochForCausalLM").replace("\"partial_rotary_factor\"", "\"rope_pct\"")
                .replace("\"layer_norm_eps\"", "\"norm_eps\"");
        Path a = tmp.resolve("a.gguf"), b = tmp.resolve("b.gguf");
        assertThat(DecoderReference.convert(folder("x/stablelm-3b-tiny", now, in), "f16", a, false).code()).isZero();
        CorpusCliTest.Run r = DecoderReference.convert(folder("y/stablelm-3b-tiny", epoch, in), "f16", b, false);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(Files.readAllBytes(b)).isEqualTo(Files.readAllBytes(a));
    }

    /** What llama.cpp's stablelm would compute otherwise, or what is not converted (exit 6); shapes config.json does not give (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"rope_theta\": 10000|\"rope_theta\": 500000|6|rope_theta",
            "\"qk_layernorm\": false|\"qk_layernorm\": true|6|qk_layernorm",
            "\"rope_scaling\": null|\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}|6|rope_scaling",
            "\"hidden_act\": \"silu\"|\"hidden_act\": \"gelu\"|6|hidden_act",
            "\"num_key_value_heads\": 2|\"num_key_value_heads\": 4|3|num_key_value_heads",
            "\"intermediate_size\": 48|\"intermediate_size\": 64|3|intermediate_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(""), from, to, tensors(294, true), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (LayerNorms, q/k/v biases, grouped-query attention, the
     * partial rope, SwiGLU): F32 within 1e-4 of the largest logit (measured 1.7e-7 in sequence, 1.5e-7 parallel), F16
     * 3e-3 (5.8e-4); every dimension rotated 0.54 off, a parallel model run in sequence 0.62.
     */
    @ParameterizedTest
    @CsvSource({"f32, , ", "f16, , ", "f32, --parallel, ", "f32, , full-rope", "f32, --parallel, not-parallel"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String parallel, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (parallel != null) make.add(parallel);
        DecoderReference.llamaCppComputesTheReference(tmp, "stablelm", make, dtype, wrong, 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("stablelm-2-tiny", config("\"use_parallel_residual\": false, "), tensors(295, false), all),
                new ConverterParityTest.Folder("stablelm-3b-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(296, true)), withAuto));
    }
}
