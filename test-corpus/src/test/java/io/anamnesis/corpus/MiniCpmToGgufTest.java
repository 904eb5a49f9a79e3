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
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * OpenBMB's MiniCPM folders ({@code MiniCPMForCausalLM}) to GGUF as the converter's {@code MiniCPMModel} writes them:
 * llama's tensors with q/k permuted, TextModel's keys then the three scales, the SentencePiece vocabulary; the bad
 * inputs. {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and the corpus's SentencePiece model, llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class MiniCpmToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 48, LAYERS = 3, HEADS = 4, KV = 2;

    @TempDir
    Path tmp;

    /** MiniCPM-2B-sft's config.json shape (scale_emb 12, scale_depth 1.4, dim_model_base 256), sizes shrunk (heads of 8). */
    static String config(boolean tied) {
        return "{\"architectures\": [\"MiniCPMForCausalLM\"], \"bos_token_id\": 1, \"dim_model_base\": 256, \"eos_token_id\": 2, "
                + "\"hidden_act\": \"silu\", \"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", "
                + "\"max_position_embeddings\": 4096, \"model_type\": \"minicpm\", \"num_attention_heads\": " + HEADS + ", "
                + "\"num_hidden_layers\": " + LAYERS + ", \"num_key_value_heads\": " + KV + ", \"rms_norm_eps\": 1e-05, "
                + "\"rope_scaling\": null, \"rope_theta\": 10000.0, \"scale_depth\": 1.4, \"scale_emb\": 12, "
                + "\"tie_word_embeddings\": " + tied + ", \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random MiniCPM as F32 under llama's names; no {@code lm_head} when {@code tied}. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean tied) {
        Map<String, long[]> shapes = new TreeMap<>();
        int d = HIDDEN / HEADS;
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        if (!tied) shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{(n.equals("q") ? HEADS : KV) * (long) d, HIDDEN});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * d});
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
    void textModelsKeysThenTheScalesAndLlamasRows() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(401, true);
        Path out = tmp.resolve("minicpm.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("MiniCPM-2B-tiny", config(true), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "minicpm";
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".block_count", a + ".context_length", a + ".embedding_length",
                a + ".feed_forward_length", a + ".attention.head_count", a + ".attention.head_count_kv", a + ".rope.freq_base",
                a + ".attention.layer_norm_rms_epsilon", "general.file_type", a + ".embedding_scale", a + ".residual_scale",
                a + ".logit_scale").doesNotContain(a + ".vocab_size", a + ".rope.dimension_count");
        // the scales as MiniCPM's modeling applies them: scale_emb, scale_depth / sqrt(layers), hidden / dim_model_base
        assertThat(f32(g.kv.get(a + ".embedding_scale"))).isEqualTo(12f);
        assertThat(f32(g.kv.get(a + ".residual_scale"))).isEqualTo((float) (1.4 / Math.sqrt(LAYERS)));
        assertThat(f32(g.kv.get(a + ".logit_scale"))).isEqualTo((float) (HIDDEN / 256.0));
        // q and k permuted as llama's (each head's rotate-half pairs made adjacent): row 1 of a head is its row d / 2
        int d = HIDDEN / HEADS;
        byte[] q = g.tensor("blk.0.attn_q.weight").bytes(), stored = in.get("model.layers.0.self_attn.q_proj.weight").bytes();
        int row = HIDDEN * 4;
        assertThat(Arrays.copyOfRange(q, row, 2 * row)).isEqualTo(Arrays.copyOfRange(stored, d / 2 * row, (d / 2 + 1) * row));
        assertThat(Arrays.copyOfRange(q, d * row + row, d * row + 2 * row))
                .isEqualTo(Arrays.copyOfRange(stored, (d + d / 2) * row, (d + d / 2 + 1) * row));
        assertThat(g.tensor("blk.2.attn_v.weight").bytes()).isEqualTo(in.get("model.layers.2.self_attn.v_proj.weight").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).doesNotContain("output.weight");
    }

    /** MiniCPMModel.set_vocab is _set_vocab_sentencepiece: tokenizer.model alone, nothing after it. */
    @Test
    void theSentencePieceVocabulary() throws IOException {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's hf-to-gguf SentencePiece tokenizer.model is not here: not checked");
        Path dir = folder("MiniCPM-vocab", config(true), tensors(402, true));
        Files.copy(sp.get(), dir.resolve("tokenizer.model"));
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"add_prefix_space\": false}");
        Path out = tmp.resolve("vocab.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("tokenizer.ggml.model").asString()).isEqualTo("llama");
        // unlike ERNIE's and llama's rules, the config's space prefix is not read
        assertThat(g.kv).doesNotContainKey("tokenizer.ggml.add_space_prefix");
        Files.delete(dir.resolve("tokenizer.model"));
        Path none = tmp.resolve("none.gguf");
        CorpusCliTest.Run missing = DecoderReference.convert(dir, "f16", none, true);
        assertThat(missing.code()).as(missing.err()).isEqualTo(3);
        assertThat(missing.err()).contains("tokenizer.model").contains("--no-vocab").doesNotContain("Exception");
        assertThat(none).doesNotExist();
    }

    /** What is not converted (exit 6); the scales' keys missing and shapes config.json does not give (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"rope_scaling\": null|\"rope_scaling\": {\"rope_type\": \"longrope\", \"long_factor\": [1, 1], \"short_factor\": [1, 1]}|6|rope_scaling",
            "\"rope_scaling\": null|\"rope_scaling\": null, \"num_experts\": 8|6|mixture-of-experts MiniCPMForCausalLM",
            "\"hidden_act\": \"silu\"|\"hidden_act\": \"gelu\"|6|hidden_act",
            "\"scale_emb\": 12, ||3|scale_emb",
            "\"dim_model_base\": 256, ||3|dim_model_base",
            "\"dim_model_base\": 256|\"dim_model_base\": 0|3|dim_model_base",
            "\"num_key_value_heads\": 2|\"num_key_value_heads\": 4|3|num_key_value_heads"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(true), from, to, tensors(403, true), exit, key);
    }

    /**
     * llama.cpp's logits (granite's graph with MiniCPM's scales) against the reference forward pass, 12 tokens: F32
     * within 1e-4 of the largest logit (measured 7.1e-7), F16 3e-3 (7.2e-4); the three scales left out 5.7 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,,,", "f16,,,", "f32,--untied,,", "f32,,--variant;no-multipliers,1.0"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String untied, String wrong, Double apart) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; "
                + "not checked");
        List<String> args = new java.util.ArrayList<>(List.of("--sp", sp.get().toString(), "--seed", "1"));
        if (untied != null) args.add(untied);
        DecoderReference.llamaCppComputesTheReference(tmp, "minicpm", args, dtype, DecoderReference.options(wrong),
                apart == null ? 0 : apart);
    }

    private static float f32(ReferenceGguf.Kv kv) {
        return ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("MiniCPM-2B-tiny", config(true), tensors(404, true), all),
                new ConverterParityTest.Folder("MiniCPM-1B-tiny-bf16", config(false), ConverterParityTest.as("BF16", tensors(405, false)),
                        withAuto));
    }
}
