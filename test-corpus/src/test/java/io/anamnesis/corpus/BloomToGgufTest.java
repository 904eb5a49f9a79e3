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
 * BigScience's BLOOM folders ({@code BloomForCausalLM}) to GGUF as the converter's {@code BloomModel} writes them: the
 * fused q/k/v re-laid from per-head rows to three blocks, the embeddings' LayerNorm, names with and without
 * {@code transformer.}, its own keys (the context length from {@code seq_length}, else the embedding length); the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits (ALiBi) are checked
 * against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class BloomToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 4;

    @TempDir
    Path tmp;

    /** bigscience/bloom-560m's config.json shape, sizes shrunk (heads of 8), {@code extra} more entries. */
    static String config(String extra) {
        return "{\"apply_residual_connection_post_layernorm\": false, \"architectures\": [\"BloomForCausalLM\"], "
                + "\"attention_softmax_in_fp32\": true, \"bos_token_id\": 1, \"eos_token_id\": 2, \"hidden_size\": " + HIDDEN + ", "
                + "\"layer_norm_epsilon\": 1e-05, \"model_type\": \"bloom\", \"n_head\": " + HEADS + ", \"n_inner\": null, "
                + extra + "\"n_layer\": " + LAYERS + ", \"pad_token_id\": 3, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random BLOOM as F32, in name order, under {@code prefix} ("" or "transformer."). */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, String prefix) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put(prefix + "word_embeddings.weight", new long[]{VOCAB, HIDDEN});
        for (String n : List.of("word_embeddings_layernorm", "ln_f")) {
            shapes.put(prefix + n + ".weight", new long[]{HIDDEN});
            shapes.put(prefix + n + ".bias", new long[]{HIDDEN});
        }
        for (int i = 0; i < LAYERS; i++) {
            String p = prefix + "h." + i + ".";
            for (String n : List.of("input_layernorm", "post_attention_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            shapes.put(p + "self_attention.query_key_value.weight", new long[]{3L * HIDDEN, HIDDEN});
            shapes.put(p + "self_attention.query_key_value.bias", new long[]{3L * HIDDEN});
            shapes.put(p + "self_attention.dense.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "self_attention.dense.bias", new long[]{HIDDEN});
            shapes.put(p + "mlp.dense_h_to_4h.weight", new long[]{4L * HIDDEN, HIDDEN});
            shapes.put(p + "mlp.dense_h_to_4h.bias", new long[]{4L * HIDDEN});
            shapes.put(p + "mlp.dense_4h_to_h.weight", new long[]{HIDDEN, 4L * HIDDEN});
            shapes.put(p + "mlp.dense_4h_to_h.bias", new long[]{HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float at(byte[] b, long i) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getFloat(Math.toIntExact(4 * i));
    }

    @Test
    void theFusedQkvInBlocksAndItsOwnKeys() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(281, "transformer.");
        Path out = tmp.resolve("bloom.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("bloom-tiny", config(""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "bloom";
        // BloomModel.set_gguf_parameters' keys in its order, none of TextModel's
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".context_length", a + ".embedding_length",
                a + ".feed_forward_length", a + ".block_count", a + ".attention.head_count", a + ".attention.head_count_kv",
                a + ".attention.layer_norm_epsilon", "general.file_type").doesNotContain(a + ".rope.freq_base");
        assertThat(g.kv.get(a + ".context_length").asLong()).as("no seq_length: the embedding length, as the converter writes it")
                .isEqualTo(HIDDEN);
        assertThat(g.kv.get(a + ".attention.head_count_kv").asLong()).isEqualTo(HEADS);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).contains("token_embd_norm.weight", "token_embd_norm.bias")
                .doesNotContain("output.weight", "position_embd.weight");
        // stored row (h, which, j) of [heads, 3, head_dim] is written at (which, h, j)
        int d = HIDDEN / HEADS;
        byte[] stored = in.get("transformer.h.1.self_attention.query_key_value.weight").bytes(),
                written = g.tensor("blk.1.attn_qkv.weight").bytes();
        byte[] storedBias = in.get("transformer.h.1.self_attention.query_key_value.bias").bytes(),
                writtenBias = g.tensor("blk.1.attn_qkv.bias").bytes();
        for (int which = 0; which < 3; which++) {
            for (int h = 0; h < HEADS; h++) {
                for (int j = 0; j < d; j++) {
                    long outRow = (long) which * HIDDEN + (long) h * d + j, inRow = ((long) h * 3 + which) * d + j;
                    assertThat(at(written, outRow * HIDDEN + 3)).isEqualTo(at(stored, inRow * HIDDEN + 3));
                    assertThat(at(writtenBias, outRow)).isEqualTo(at(storedBias, inRow));
                }
            }
        }
        Path withLength = tmp.resolve("bloom-seq.gguf");
        assertThat(DecoderReference.convert(folder("bloom-seq", config("\"seq_length\": 2048, "), in), "f16", withLength, false).code())
                .isZero();
        assertThat(ReferenceGguf.read(withLength).kv.get(a + ".context_length").asLong()).isEqualTo(2048);
    }

    /** What llama.cpp's bloom would compute otherwise (exit 6), or shapes config.json does not give (exit 3), naming the key. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"apply_residual_connection_post_layernorm\": false|\"apply_residual_connection_post_layernorm\": true|6"
                    + "|apply_residual_connection_post_layernorm",
            "\"hidden_size\": 32|\"hidden_size\": 24|3|hidden_size",
            "\"n_head\": 4|\"n_head\": 3|3|n_head",
            "\"vocab_size\": 64|\"vocab_size\": 80|3|vocab_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(""), from, to, tensors(282, ""), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (ALiBi, the embeddings' LayerNorm, per-head q/k/v, GELU's
     * tanh approximation from ggml's F16 table): F32 within 1e-4 of the largest logit (measured 9.5e-8), F16 3e-3
     * (4.6e-4); without ALiBi 0.21 off, q/k/v taken as three blocks of the stored rows (a file that did not re-lay
     * them) 0.89.
     */
    @ParameterizedTest
    @CsvSource({"f32, ", "f16, ", "f32, no-alibi", "f32, qkv-blocks"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "bloom", List.of("--tokenizer", tok.get().toString(), "--seed", "3"), dtype,
                wrong, 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("bloom-tiny", config(""), tensors(283, ""), all),
                new ConverterParityTest.Folder("bloomz-tiny-bf16", config("\"seq_length\": 2048, "),
                        ConverterParityTest.as("BF16", tensors(284, "transformer.")), withAuto));
    }
}
