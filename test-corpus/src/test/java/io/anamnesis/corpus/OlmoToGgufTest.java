package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * AI2's first OLMo folders ({@code OlmoForCausalLM}) to GGUF as the converter's {@code OlmoModel} writes them: no norm
 * tensors (its LayerNorms have no weights), q/k rows permuted as llama's, TextModel's keys then the layer-norm epsilon
 * and the q/k/v clamp; the bad inputs. {@link ConverterParityTest} compares such folders with the converter's own
 * files; with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class OlmoToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV = 2;

    @TempDir
    Path tmp;

    /** OLMo-1B-hf's config.json shape, sizes shrunk (heads of 8), {@code extra} more entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"OlmoForCausalLM\"], \"attention_bias\": false, " + extra + "\"hidden_act\": \"silu\", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"max_position_embeddings\": 2048, "
                + "\"model_type\": \"olmo\", \"num_attention_heads\": " + HEADS + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_key_value_heads\": " + KV + ", \"rope_scaling\": null, \"rope_theta\": 10000.0, "
                + "\"tie_word_embeddings\": false, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random OLMo as F32, in name order: no norm tensors at all. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        int d = HIDDEN / HEADS;
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * d, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV * d, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV * d, HIDDEN});
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
    void noNormsPermutedRowsAndItsKeys() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(301);
        Path out = tmp.resolve("olmo.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("OLMo-7B-0424-tiny", config("\"clip_qkv\": 8.0, "), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "olmo";
        // TextModel's keys, then OlmoModel's two
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".context_length", a + ".embedding_length",
                a + ".feed_forward_length", a + ".attention.head_count", a + ".attention.head_count_kv", a + ".rope.freq_base",
                a + ".attention.layer_norm_epsilon", a + ".attention.clamp_kqv");
        // F32 values (type 6)
        assertThat(g.kv.get(a + ".attention.clamp_kqv").type()).isEqualTo(6);
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".attention.clamp_kqv").asLong())).isEqualTo(8.0f);
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".attention.layer_norm_epsilon").asLong())).isEqualTo(1e-5f);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).noneMatch(n -> n.contains("norm"));
        // q permuted for llama's rope (rows interleaved by halves of each head), v as stored
        assertThat(g.tensor("blk.0.attn_q.weight").bytes()).isNotEqualTo(in.get("model.layers.0.self_attn.q_proj.weight").bytes());
        assertThat(g.tensor("blk.0.attn_v.weight").bytes()).isEqualTo(in.get("model.layers.0.self_attn.v_proj.weight").bytes());
        // clip_qkv null (OLMo-1B's): no clamp key
        Path none = tmp.resolve("none.gguf");
        assertThat(DecoderReference.convert(folder("OLMo-1B-tiny", config("\"clip_qkv\": null, "), in), "f16", none, false).code()).isZero();
        assertThat(ReferenceGguf.read(none).kv).doesNotContainKey(a + ".attention.clamp_kqv");
    }

    /** What llama.cpp's olmo would not load or compute (exit 6); shapes config.json does not give (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"attention_bias\": false|\"attention_bias\": true|6|attention_bias",
            "\"hidden_act\": \"silu\"|\"hidden_act\": \"gelu\"|6|hidden_act",
            "\"intermediate_size\": 48|\"intermediate_size\": 64|3|intermediate_size",
            "\"num_key_value_heads\": 2|\"num_key_value_heads\": 4|3|num_key_value_heads"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(""), from, to, tensors(302), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (weightless LayerNorms, the q/k/v clamp, grouped-query
     * attention, SwiGLU): F32 within 1e-4 of the largest logit (measured 1.0e-7, 1.9e-6 with a clamp of 1), F16 with
     * the clamp 3e-3 (8.1e-4; 3.1e-3 without it, whose sharper attention the F16 weights move more); RMS norms in the
     * LayerNorms' place 0.83 off, the clamp left out 1.25.
     */
    @ParameterizedTest
    @CsvSource({"f32, , ", "f32, 1.0, ", "f16, 1.0, ", "f32, , rms-norm", "f32, 1.0, no-clip"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String clip, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (clip != null) make.addAll(List.of("--clip", clip));
        DecoderReference.llamaCppComputesTheReference(tmp, "olmo", make, dtype, wrong, 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("OLMo-1B-tiny", config("\"clip_qkv\": null, "), tensors(303), all),
                new ConverterParityTest.Folder("OLMo-7B-0424-tiny-bf16", config("\"clip_qkv\": 8.0, "),
                        ConverterParityTest.as("BF16", tensors(304)), withAuto));
    }
}
