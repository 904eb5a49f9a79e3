package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Seed-OSS folder ({@code SeedOssForCausalLM}) to GGUF as the converter's {@code SeedOssModel}
 * writes it: qwen2's block with heads of {@code head_dim} (not hidden / heads), the norm before
 * the MLP named {@code post_attention_norm}, TextModel's keys; a missing key refused.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class SeedOssToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = 32;

    @TempDir
    Path tmp;

    /** A tiny Seed-OSS config.json (Seed-OSS-36B's keys, sizes shrunk). */
    static String config() {
        return "{\"architectures\": [\"SeedOssForCausalLM\"], \"model_type\": \"seed_oss\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", "
                + "\"max_position_embeddings\": 524288, \"rms_norm_eps\": 1e-06, \"rope_theta\": 10000000.0, \"rope_scaling\": {\"rope_type\": \"default\"}, "
                + "\"attention_bias\": true, \"attention_out_bias\": false, \"mlp_bias\": false, \"hidden_act\": \"silu\", "
                + "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                long rows = (n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD;
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, HIDDEN});
                shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
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
    void qwen2sBlockWithItsOwnHeadSizeAndNames() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(111);
        Path out = tmp.resolve("seed.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Seed-OSS-tiny", config(), in), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("seed_oss");
        assertThat(g.kv.get("seed_oss.attention.key_length").asLong()).isEqualTo(HEAD);
        assertThat(g.kv).doesNotContainKeys("seed_oss.vocab_size", "seed_oss.rope.dimension_count", "seed_oss.rope.scaling.type");
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.1.post_attention_norm.weight", "blk.1.attn_q.bias").noneMatch(n -> n.contains("ffn_norm"));
        // no permutation (NEOX rope); biases F32 in an F16 file
        assertThat(g.tensor("blk.1.attn_q.bias").type()).isZero();
        assertThat(g.tensor("blk.1.attn_q.bias").bytes()).isEqualTo(in.get("model.layers.1.self_attn.q_proj.bias").bytes());
        assertThat(g.tensor("blk.0.attn_k.weight").ne()).containsExactly(HIDDEN, (long) KV_HEADS * HEAD);
    }

    @Test
    void aMissingHeadCountIsRefusedNotGuessed() throws IOException {
        Path out = tmp.resolve("heads.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Seed-OSS-kv", config().replace("\"num_key_value_heads\": " + KV_HEADS + ", ", ""),
                tensors(112)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("num_key_value_heads").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass: F32 within 1e-4 relative (measured
     * 2.4e-7), F16 3e-3; without the q/k/v biases 1.0 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,no-qkv-bias"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "seed_oss", List.of("--tokenizer", tok.get().toString(), "--seed", "4"), dtype,
                variant, 0.3);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Seed-OSS-tiny", config(), tensors(113), all),
                new ConverterParityTest.Folder("Seed-OSS-tiny-bf16", config(), ConverterParityTest.as("BF16", tensors(114)), withAuto));
    }
}
