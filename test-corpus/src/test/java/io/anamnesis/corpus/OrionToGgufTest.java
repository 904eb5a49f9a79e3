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
 * OrionStar's Orion folders ({@code OrionForCausalLM}) to GGUF as the converter's {@code OrionModel} writes them: llama's
 * names with LayerNorm weights and biases, unpermuted, its own keys in its order; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and the corpus's SentencePiece model, llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class OrionToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4;

    @TempDir
    Path tmp;

    /** Orion-14B-Chat's config.json shape, sizes shrunk (heads of 8), {@code context} its context keys. */
    static String config(String context) {
        return "{\"architectures\": [\"OrionForCausalLM\"], \"attention_bias\": false, \"hidden_act\": \"silu\", \"hidden_size\": "
                + HIDDEN + ", \"intermediate_size\": " + FF + ", " + context + "\"model_type\": \"orion\", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_hidden_layers\": " + LAYERS + ", \"num_key_value_heads\": " + HEADS
                + ", \"rms_norm_eps\": 1e-05, \"rope_scaling\": null, \"rope_theta\": 10000.0, \"tie_word_embeddings\": false, "
                + "\"vocab_size\": " + VOCAB + "}";
    }

    static final String BOTH = "\"max_position_embeddings\": 4096, \"max_sequence_length\": 2048, ";

    /** The tensors of a tiny random Orion as F32 under llama's names, with LayerNorm biases. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        shapes.put("model.norm.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String n : List.of("input_layernorm", "post_attention_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            for (String n : List.of("q", "k", "v", "o")) shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{HIDDEN, HIDDEN});
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
    void itsOwnKeysInItsOrderAndTheRowsAsStored() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(901);
        Path out = tmp.resolve("orion.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Orion-14B-tiny", config(BOTH), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "orion";
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence("general.file_type", a + ".tensor_data_layout", a + ".context_length",
                a + ".embedding_length", a + ".block_count", a + ".feed_forward_length", a + ".attention.head_count",
                a + ".attention.head_count_kv", a + ".attention.layer_norm_epsilon")
                .doesNotContain(a + ".rope.freq_base", a + ".attention.layer_norm_rms_epsilon", a + ".rope.dimension_count");
        assertThat(g.kv.get(a + ".tensor_data_layout").asString()).isEqualTo("Meta AI original pth");
        assertThat(g.kv.get(a + ".context_length").asLong()).as("max_sequence_length first").isEqualTo(2048);
        assertThat(ByteBuffer.wrap(g.kv.get(a + ".attention.layer_norm_epsilon").value()).order(ByteOrder.LITTLE_ENDIAN).getFloat())
                .isEqualTo(1e-5f);
        assertThat(g.tensor("blk.0.attn_q.weight").bytes()).isEqualTo(in.get("model.layers.0.self_attn.q_proj.weight").bytes());
        assertThat(g.tensor("blk.1.ffn_norm.bias").bytes()).isEqualTo(in.get("model.layers.1.post_attention_layernorm.bias").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("output_norm.bias", "output.weight");
        // without max_sequence_length the context is max_position_embeddings; without either, model_max_length
        Path other = tmp.resolve("other.gguf");
        assertThat(DecoderReference.convert(folder("Orion-ctx", config("\"model_max_length\": 8192, "), tensors(902)), "f16", other, false)
                .code()).isZero();
        assertThat(ReferenceGguf.read(other).kv.get(a + ".context_length").asLong()).isEqualTo(8192);
    }

    /** What llama.cpp's orion would not compute (exit 6); what config.json must give or gives wrong (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"rope_theta\": 10000.0|\"rope_theta\": 500000.0|6|rope_theta",
            "\"rope_scaling\": null|\"rope_scaling\": {\"type\": \"linear\", \"factor\": 2.0}|6|rope_scaling",
            "\"attention_bias\": false|\"attention_bias\": true|6|attention_bias",
            "\"hidden_act\": \"silu\"|\"hidden_act\": \"gelu\"|6|hidden_act",
            "\"max_position_embeddings\": 4096, \"max_sequence_length\": 2048, ||3|context_length",
            "\"rms_norm_eps\": 1e-05, ||3|rms_norm_eps",
            "\"intermediate_size\": 48|\"intermediate_size\": 64|3|intermediate_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(BOTH), from, to, tensors(903), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (LayerNorms with biases, rotate-half rope, SwiGLU), 12 tokens:
     * F32 within 1e-4 of the largest logit (measured 2.1e-7), F16 3e-3 (1.0e-3); RMS norms instead 0.37 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,--variant;rms-norm,0.1"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong, Double apart) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "orion", List.of("--sp", sp.get().toString(), "--seed", "1"), dtype,
                DecoderReference.options(wrong), apart == null ? 0 : apart);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Orion-14B-Chat-tiny", config(BOTH), tensors(904), all),
                new ConverterParityTest.Folder("Orion-14B-Base-tiny-bf16", config("\"max_position_embeddings\": 4096, "),
                        ConverterParityTest.as("BF16", tensors(905)), withAuto));
    }
}
