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
 * InternLM2 and InternLM2.5 folders ({@code InternLM2ForCausalLM}) to GGUF as the converter's {@code InternLM2Model}
 * writes them: its own names, the grouped fused {@code attention.wqkv} split into q, k and v with q and k permuted,
 * TextModel's keys; the bad inputs. {@link ConverterParityTest} compares such folders with the converter's own files,
 * and format-gguf's {@code InternLm2VocabularyTest} the vocabulary's reading; with the oracles ({@code ORACLE_CACHE})
 * and the corpus's SentencePiece model, llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class InternLm2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 2, HEADS = 4, KV = 2;

    @TempDir
    Path tmp;

    /** internlm2_5-7b-chat's config.json shape, sizes shrunk (heads of 8 in 2 groups), with {@code rope} as its rope scaling. */
    static String config(String rope) {
        return "{\"architectures\": [\"InternLM2ForCausalLM\"], \"bias\": false, \"bos_token_id\": 1, \"eos_token_id\": 2, "
                + "\"hidden_act\": \"silu\", \"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", "
                + "\"max_position_embeddings\": 32768, \"model_type\": \"internlm2\", \"num_attention_heads\": " + HEADS + ", "
                + "\"num_hidden_layers\": " + LAYERS + ", \"num_key_value_heads\": " + KV + ", \"rms_norm_eps\": 1e-05, "
                + "\"rope_scaling\": " + rope + ", \"rope_theta\": 1000000, \"tie_word_embeddings\": false, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random InternLM2 as F32 under its names, wqkv of the 2 groups' 2 queries, key and value. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        int d = HIDDEN / HEADS;
        shapes.put("model.tok_embeddings.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("output.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "attention_norm.weight", new long[]{HIDDEN});
            shapes.put(p + "ffn_norm.weight", new long[]{HIDDEN});
            shapes.put(p + "attention.wqkv.weight", new long[]{(long) (HEADS + 2 * KV) * d, HIDDEN});
            shapes.put(p + "attention.wo.weight", new long[]{HIDDEN, (long) HEADS * d});
            shapes.put(p + "feed_forward.w1.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "feed_forward.w3.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "feed_forward.w2.weight", new long[]{HIDDEN, FF});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static byte[] row(byte[] t, int r) {
        return Arrays.copyOfRange(t, r * 4 * HIDDEN, (r + 1) * 4 * HIDDEN);
    }

    @Test
    void theGroupedQkvSplitAndPermuted() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(801);
        Path out = tmp.resolve("internlm2.gguf");
        Path dir = folder("internlm2_5-tiny", config("{\"type\": \"dynamic\", \"factor\": 2.0}"), in);
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "f32", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        // the converter writes no key for dynamic NTK scaling; amn says what that means
        assertThat(r.out() + r.err()).contains("rope_scaling dynamic").contains("the same up to 32768 tokens");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.keySet()).noneMatch(k -> k.contains("rope.scaling") || k.endsWith(".vocab_size"));
        int d = HIDDEN / HEADS;
        byte[] wqkv = in.get("model.layers.1.attention.wqkv.weight").bytes();
        byte[] q = g.tensor("blk.1.attn_q.weight").bytes(), k = g.tensor("blk.1.attn_k.weight").bytes(), v = g.tensor("blk.1.attn_v.weight").bytes();
        assertThat(g.tensor("blk.1.attn_q.weight").ne()).containsExactly(HIDDEN, (long) HEADS * d);
        assertThat(g.tensor("blk.1.attn_k.weight").ne()).containsExactly(HIDDEN, (long) KV * d);
        // stored rows: group g's query heads, its key, its value (4 heads of d rows a group); q and k then permuted so that
        // a head's row 1 is its row d / 2
        assertThat(row(q, 0)).isEqualTo(row(wqkv, 0));
        assertThat(row(q, 1)).isEqualTo(row(wqkv, d / 2));
        assertThat(row(q, d)).isEqualTo(row(wqkv, d));                 // query 1 of group 0
        assertThat(row(q, 2 * d)).isEqualTo(row(wqkv, 4 * d));         // query 0 of group 1
        assertThat(row(k, 0)).isEqualTo(row(wqkv, 2 * d));             // group 0's key
        assertThat(row(k, d + 1)).isEqualTo(row(wqkv, 6 * d + d / 2)); // group 1's key, permuted
        assertThat(row(v, 1)).isEqualTo(row(wqkv, 3 * d + 1));         // group 0's value, as stored
        assertThat(row(v, d)).isEqualTo(row(wqkv, 7 * d));             // group 1's value
        assertThat(g.tensor("blk.0.ffn_gate.weight").bytes()).isEqualTo(in.get("model.layers.0.feed_forward.w1.weight").bytes());
        assertThat(g.tensor("blk.0.ffn_up.weight").bytes()).isEqualTo(in.get("model.layers.0.feed_forward.w3.weight").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name).toList()).containsSubsequence("blk.0.attn_q.weight",
                "blk.0.attn_k.weight", "blk.0.attn_v.weight").doesNotContain("blk.0.attn_qkv.weight");
    }

    /** Biases or another activation (exit 6); a fused q/k/v or MLP config.json does not describe (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"bias\": false|\"bias\": true|6|bias",
            "\"hidden_act\": \"silu\"|\"hidden_act\": \"gelu\"|6|hidden_act",
            "\"rope_scaling\": null|\"rope_scaling\": {\"type\": \"ntk\", \"factor\": 2.0}|6|ntk",
            "\"num_key_value_heads\": 2|\"num_key_value_heads\": 4|3|wqkv",
            "\"num_key_value_heads\": 2, ||3|num_key_value_heads",
            "\"intermediate_size\": 48|\"intermediate_size\": 64|3|intermediate_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config("null"), from, to, tensors(802), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (the grouped wqkv read per group, rotate-half rope, SwiGLU
     * of w1 and w3), 12 tokens, with the vocabulary read by InternLM2's rule (its chat EOS over id 2): F32 within 1e-4
     * of the largest logit (measured 6.7e-6), F16 3e-3 (9.2e-4); wqkv read as q, k, v blocks 0.75 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,--variant;qkv-blocks,0.2"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong, Double apart) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "internlm2", List.of("--sp", sp.get().toString(), "--seed", "1", "--dynamic"),
                dtype, DecoderReference.options(wrong), apart == null ? 0 : apart);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("internlm2_5-7b-chat-tiny", config("{\"type\": \"dynamic\", \"factor\": 2.0}"),
                        tensors(803), all),
                new ConverterParityTest.Folder("internlm2-chat-1_8b-tiny-bf16", config("null"), ConverterParityTest.as("BF16", tensors(804)),
                        withAuto));
    }
}
