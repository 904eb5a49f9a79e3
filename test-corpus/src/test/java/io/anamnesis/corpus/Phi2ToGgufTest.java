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
 * Microsoft's Phi-2 and Phi-1.5 folders ({@code PhiForCausalLM}) to GGUF as the converter's {@code Phi2Model}
 * writes them: LayerNorms and biases everywhere, {@code fc1}/{@code fc2} as up and down, its own keys (the
 * feed-forward width 4 x hidden, the partial rope, no BOS); the bad inputs. {@link ConverterParityTest}
 * compares such folders with the converter's own files; with the oracles ({@code ORACLE_CACHE}) and Qwen3's
 * tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Phi2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 4;

    @TempDir
    Path tmp;

    /** phi-2's config.json shape, sizes shrunk (heads of 8, half of each rotated), {@code extra} more entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"PhiForCausalLM\"], \"model_type\": \"phi\", \"vocab_size\": " + VOCAB + ", \"hidden_size\": " + HIDDEN
                + ", \"intermediate_size\": " + 4 * HIDDEN + ", \"num_hidden_layers\": " + LAYERS + ", \"num_attention_heads\": " + HEADS
                + ", \"num_key_value_heads\": null, \"max_position_embeddings\": 2048, \"partial_rotary_factor\": 0.5, "
                + "\"rope_theta\": 10000.0, \"rope_scaling\": null, \"layer_norm_eps\": 1e-05, \"hidden_act\": \"gelu_new\", " + extra
                + "\"qk_layernorm\": false, \"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    /** The tensors of a tiny random Phi-2 as F32, in name order. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.bias", new long[]{VOCAB});
        shapes.put("model.final_layernorm.weight", new long[]{HIDDEN});
        shapes.put("model.final_layernorm.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "input_layernorm.bias", new long[]{HIDDEN});
            for (String n : List.of("q_proj", "k_proj", "v_proj", "dense")) {
                shapes.put(p + "self_attn." + n + ".weight", new long[]{HIDDEN, HIDDEN});
                shapes.put(p + "self_attn." + n + ".bias", new long[]{HIDDEN});
            }
            shapes.put(p + "mlp.fc1.weight", new long[]{4L * HIDDEN, HIDDEN});
            shapes.put(p + "mlp.fc1.bias", new long[]{4L * HIDDEN});
            shapes.put(p + "mlp.fc2.weight", new long[]{HIDDEN, 4L * HIDDEN});
            shapes.put(p + "mlp.fc2.bias", new long[]{HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void itsOwnKeysAndTensors() throws IOException {
        Path out = tmp.resolve("phi2.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("phi-2-tiny", config(""), tensors(241)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "phi2";
        List<String> keys = List.copyOf(g.kv.keySet());
        // Phi2Model.set_gguf_parameters' keys in its order, none of TextModel's (no rope base, no rms epsilon)
        List<String> own = List.of(a + ".context_length", a + ".embedding_length", a + ".feed_forward_length", a + ".block_count",
                a + ".attention.head_count", a + ".attention.head_count_kv", a + ".attention.layer_norm_epsilon",
                a + ".rope.dimension_count", "general.file_type", "tokenizer.ggml.add_bos_token");
        assertThat(keys).containsSubsequence(own).doesNotContain(a + ".rope.freq_base", a + ".attention.layer_norm_rms_epsilon");
        assertThat(g.kv.get(a + ".feed_forward_length").asLong()).isEqualTo(4L * HIDDEN);
        assertThat(g.kv.get(a + ".attention.head_count_kv").asLong()).isEqualTo(HEADS);
        assertThat(g.kv.get(a + ".rope.dimension_count").asLong()).as("int(0.5 x 32) // 4").isEqualTo(4);
        assertThat(g.kv.get("tokenizer.ggml.add_bos_token").asLong()).isZero();
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("output.bias", "output_norm.bias", "blk.1.attn_output.bias", "blk.0.ffn_up.bias")
                .noneMatch(n -> n.contains("ffn_norm") || n.contains("ffn_gate"));
        assertThat(g.tensor("output.bias").type()).isZero();
    }

    /** What llama.cpp's phi2 would compute otherwise, or could not load. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"hidden_act\": \"gelu_new\"|\"hidden_act\": \"relu\"|6|hidden_act",
            "\"qk_layernorm\": false|\"qk_layernorm\": true|6|qk_layernorm",
            "\"rope_theta\": 10000.0|\"rope_theta\": 500000.0|6|rope_theta",
            "\"intermediate_size\": 128|\"intermediate_size\": 96|3|intermediate_size"})
    void whatLlamaCppWouldRunOtherwiseIsRefused(String from, String to, int exit, String key) throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("phi-2-bad", config("").replace(from, to), tensors(242)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(key).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (parallel attention and MLP on one LayerNorm, partial
     * rope, lm_head's bias): F32 within 1e-4 of the largest logit (measured 2.3e-6), F16 3e-3 (4.0e-4); run in
     * sequence 0.70 off, without lm_head's bias 0.12.
     */
    @ParameterizedTest
    @CsvSource({"f32, ", "f16, ", "f32, --variant;not-parallel", "f32, --variant;no-lm-head-bias"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "phi2", List.of("--tokenizer", tok.get().toString(), "--seed", "3"), dtype,
                DecoderReference.options(wrong), 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("phi-2-tiny", config(""), tensors(243), all),
                new ConverterParityTest.Folder("phi-1_5-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(244)), withAuto));
    }
}
