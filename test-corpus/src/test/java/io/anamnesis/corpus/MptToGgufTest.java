package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * MosaicML's MPT folders ({@code MPTForCausalLM}) to GGUF as the converter's {@code MPTModel} writes them: the
 * {@code transformer.*} names, the fused Wqkv kept in blocks, no biases, the output tied to the embeddings, its own keys
 * from the top level and the nested {@code attn_config} (no file type); the bad inputs. {@link ConverterParityTest}
 * compares such folders with the converter's own files; with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer
 * ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against {@code bench/scripts/decoder_reference.py}'s
 * forward pass.
 */
class MptToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 4;

    @TempDir
    Path tmp;

    /** mpt-7b-instruct's config.json shape, sizes shrunk (heads of 8), with {@code clip} as clip_qkv and {@code attn} more attn_config. */
    static String config(String clip, String attn) {
        return "{\"architectures\": [\"MPTForCausalLM\"], \"attn_config\": {\"alibi\": true, \"alibi_bias_max\": 8, "
                + "\"attn_impl\": \"torch\", \"attn_type\": \"multihead_attention\", " + attn + "\"clip_qkv\": " + clip + ", "
                + "\"prefix_lm\": false, \"qk_ln\": false, \"softmax_scale\": null}, \"d_model\": " + HIDDEN + ", "
                + "\"expansion_ratio\": 4, \"learned_pos_emb\": false, \"logit_scale\": null, \"max_seq_len\": 2048, "
                + "\"model_type\": \"mpt\", \"n_heads\": " + HEADS + ", \"n_layers\": " + LAYERS + ", \"no_bias\": true, "
                + "\"norm_type\": \"low_precision_layernorm\", \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random MPT as F32, Wqkv of {@code kv} key/value heads. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, int kv) {
        Map<String, long[]> shapes = new TreeMap<>();
        int d = HIDDEN / HEADS;
        shapes.put("transformer.wte.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("transformer.norm_f.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "transformer.blocks." + i + ".";
            shapes.put(p + "norm_1.weight", new long[]{HIDDEN});
            shapes.put(p + "norm_2.weight", new long[]{HIDDEN});
            shapes.put(p + "attn.Wqkv.weight", new long[]{(long) (HEADS + 2 * kv) * d, HIDDEN});
            shapes.put(p + "attn.out_proj.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "ffn.up_proj.weight", new long[]{4L * HIDDEN, HIDDEN});
            shapes.put(p + "ffn.down_proj.weight", new long[]{HIDDEN, 4L * HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float f32(ReferenceGguf.Kv kv) {
        return ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN).getFloat();
    }

    @Test
    void itsOwnKeysFromTheNestedAttentionConfig() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(1001, HEADS);
        Path out = tmp.resolve("mpt.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("mpt-7b-tiny", config("6", ""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "mpt";
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".context_length", a + ".embedding_length", a + ".block_count",
                a + ".feed_forward_length", a + ".attention.head_count", a + ".attention.layer_norm_epsilon",
                a + ".attention.clamp_kqv", a + ".attention.max_alibi_bias", "general.quantization_version")
                .doesNotContain("general.file_type", a + ".attention.head_count_kv", a + ".rope.freq_base");
        assertThat(g.kv.get(a + ".feed_forward_length").asLong()).isEqualTo(4 * HIDDEN);
        assertThat(f32(g.kv.get(a + ".attention.clamp_kqv"))).isEqualTo(6f);
        assertThat(f32(g.kv.get(a + ".attention.max_alibi_bias"))).isEqualTo(8f);
        // Wqkv kept fused as stored (llama.cpp's mpt splits its blocks itself); tied: no output tensor
        assertThat(g.tensor("blk.1.attn_qkv.weight").bytes()).isEqualTo(in.get("transformer.blocks.1.attn.Wqkv.weight").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("output_norm.weight", "blk.0.ffn_up.weight")
                .doesNotContain("output.weight");
        // no clamp, and grouped-query attention: no clamp key, the key/value heads after the heads
        Path gqa = tmp.resolve("gqa.gguf");
        assertThat(DecoderReference.convert(folder("mpt-gqa", config("null", "\"kv_n_heads\": 2, "), tensors(1002, 2)), "f16", gqa, false)
                .code()).isZero();
        ReferenceGguf h = ReferenceGguf.read(gqa);
        assertThat(h.kv.get(a + ".attention.head_count_kv").asLong()).isEqualTo(2);
        assertThat(h.kv).doesNotContainKey(a + ".attention.clamp_kqv");
    }

    /** A folder with a SentencePiece model and no tokenizer.json (SEA-LION's, which the converter gives ids of its own): exit 6. */
    @Test
    void aSentencePieceModelAloneIsNotConverted() throws IOException {
        Path dir = folder("sea-lion-tiny", config("null", ""), tensors(1006, HEADS));
        java.nio.file.Files.write(dir.resolve("tokenizer.model"), new byte[]{0x0A, 0x07, 0x0A, 0x05, '<', 'u', 'n', 'k', '>'});
        Path out = tmp.resolve("sea-lion.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, "f16", out, true);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("tokenizer.model").contains("no tokenizer.json").contains("--no-vocab").doesNotContain("Exception");
        assertThat(out).doesNotExist();
        // without the vocabulary it converts
        assertThat(DecoderReference.convert(dir, "f16", out, false).code()).isZero();
    }

    /** What llama.cpp's mpt would compute as another model (exit 6); what config.json lacks or gives wrong (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"alibi\": true|\"alibi\": false|6|attn_config.alibi",
            "\"qk_ln\": false|\"qk_ln\": true|6|qk_ln",
            "\"softmax_scale\": null|\"softmax_scale\": 0.5|6|softmax_scale",
            "\"no_bias\": true|\"no_bias\": false|6|no_bias",
            "\"learned_pos_emb\": false, ||6|learned_pos_emb",
            "\"expansion_ratio\": 4|\"expansion_ratio\": 8|6|expansion_ratio",
            "\"logit_scale\": null|\"logit_scale\": 2.0|6|logit_scale",
            "\"clip_qkv\": null, ||3|clip_qkv",
            "\"attn_type\": \"multihead_attention\", |\"kv_n_heads\": 2, |3|kv_n_heads",
            "\"d_model\": 32|\"d_model\": 48|3|d_model"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config("null", ""), from, to, tensors(1003, HEADS), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass computed with llama.cpp's GELU (tanh, from ggml's F16
     * table), 12 tokens: F32 within 1e-4 of the largest logit (measured 2.5e-7 with a clamp of 1; grouped-query 1.9e-6),
     * F16 3e-3 (5.8-6.7e-4). transformers' exact GELU is 3.0-3.5e-4 apart (llama.cpp's approximation); without ALiBi
     * 0.29 and without the clamp 0.59 off.
     */
    @ParameterizedTest
    @CsvSource({"f32, --clip;1, no-clip", "f16, --clip;1, ", "f32, --kv-heads;2, no-alibi"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String make, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("mpt-forward");
        List<String> args = new ArrayList<>(List.of("mpt", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "3"));
        args.addAll(List.of(make.split(";")));
        DecoderReference.make(tmp, args.toArray(String[]::new));
        Path out = tmp.resolve("mpt-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        String tokens = "1,7,42,100,3,250,17,64,5,9,200,300";
        JsonNode cmp = DecoderReference.compare(tmp, dir, out, dtype, tokens, "--variant", "gelu-tanh");
        JsonNode llamaGelu = cmp.path("kv_f16");
        assertThat(llamaGelu.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(llamaGelu.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
        JsonNode exact = DecoderReference.compare(tmp, dir, out, dtype, tokens).path("kv_f16");
        assertThat(exact.path("max_rel_diff").asDouble()).as("transformers' exact GELU: " + exact).isLessThan(3e-3);
        if (wrong != null) {
            JsonNode w = DecoderReference.compare(tmp, dir, out, dtype, tokens, "--variant", wrong).path("kv_f16");
            assertThat(w.path("max_rel_diff").asDouble()).as(wrong + " is told apart: " + w).isGreaterThan(0.1);
        }
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("mpt-7b-tiny", config("null", ""), tensors(1004, HEADS), all),
                new ConverterParityTest.Folder("mpt-30b-tiny-bf16", config("8", "\"kv_n_heads\": 2, "),
                        ConverterParityTest.as("BF16", tensors(1005, 2)), withAuto));
    }
}
