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
 * EleutherAI's GPT-NeoX folders ({@code GPTNeoXForCausalLM}: Pythia and kin) to GGUF as the converter's
 * {@code GPTNeoXModel} writes them: the fused q/k/v re-laid from per-head rows to three blocks, LayerNorms and
 * biases, its own keys (parallel residual, the partial rope, no file type); the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked
 * against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class GptNeoxToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 128, LAYERS = 2, HEADS = 4;

    @TempDir
    Path tmp;

    /** Pythia's config.json shape, sizes shrunk (heads of 8, half of each rotated), {@code extra} more entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"GPTNeoXForCausalLM\"], \"model_type\": \"gpt_neox\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"max_position_embeddings\": 2048, \"rotary_pct\": 0.5, "
                + "\"rotary_emb_base\": 10000, \"layer_norm_eps\": 1e-05, \"hidden_act\": \"gelu\", " + extra
                + "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    /** The tensors of a tiny random GPT-NeoX as F32, in name order. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("gpt_neox.embed_in.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("embed_out.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("gpt_neox.final_layer_norm.weight", new long[]{HIDDEN});
        shapes.put("gpt_neox.final_layer_norm.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "gpt_neox.layers." + i + ".";
            for (String n : List.of("input_layernorm", "post_attention_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            shapes.put(p + "attention.query_key_value.weight", new long[]{3L * HIDDEN, HIDDEN});
            shapes.put(p + "attention.query_key_value.bias", new long[]{3L * HIDDEN});
            shapes.put(p + "attention.dense.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "attention.dense.bias", new long[]{HIDDEN});
            shapes.put(p + "mlp.dense_h_to_4h.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.dense_h_to_4h.bias", new long[]{FF});
            shapes.put(p + "mlp.dense_4h_to_h.weight", new long[]{HIDDEN, FF});
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
        Map<String, ReferenceSafetensors.Tensor> in = tensors(251);
        Path out = tmp.resolve("neox.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("pythia-tiny", config("\"use_parallel_residual\": false, "), in), "f32",
                out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "gptneox";
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".context_length", a + ".embedding_length", a + ".block_count",
                a + ".feed_forward_length", a + ".rope.dimension_count", a + ".attention.head_count", a + ".use_parallel_residual",
                a + ".attention.layer_norm_epsilon").doesNotContain("general.file_type", a + ".rope.freq_base");
        assertThat(g.kv.get(a + ".use_parallel_residual").asLong()).isZero();
        assertThat(g.kv.get(a + ".rope.dimension_count").asLong()).as("int(0.5 x 8)").isEqualTo(4);
        // stored row (h, which, j) of [heads, 3, head_dim] is written at (which, h, j)
        int d = HIDDEN / HEADS;
        byte[] stored = in.get("gpt_neox.layers.1.attention.query_key_value.weight").bytes(),
                written = g.tensor("blk.1.attn_qkv.weight").bytes();
        byte[] storedBias = in.get("gpt_neox.layers.1.attention.query_key_value.bias").bytes(),
                writtenBias = g.tensor("blk.1.attn_qkv.bias").bytes();
        for (int which = 0; which < 3; which++) {
            for (int h = 0; h < HEADS; h++) {
                for (int j = 0; j < d; j++) {
                    long outRow = (long) which * HIDDEN + (long) h * d + j, inRow = ((long) h * 3 + which) * d + j;
                    assertThat(at(written, outRow * HIDDEN + 5)).isEqualTo(at(stored, inRow * HIDDEN + 5));
                    assertThat(at(writtenBias, outRow)).isEqualTo(at(storedBias, inRow));
                }
            }
        }
    }

    /** A fused q/k/v of another shape than config.json gives (exit 3), another rope base (exit 6). */
    @Test
    void whatDoesNotFitIsRefused() throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run heads = DecoderReference.convert(folder("pythia-heads", config("").replace("\"hidden_size\": " + HIDDEN,
                "\"hidden_size\": 24"), tensors(252)), "f16", out, false);
        assertThat(heads.code()).as(heads.err()).isEqualTo(3);
        assertThat(heads.err()).doesNotContain("Exception");
        CorpusCliTest.Run base = DecoderReference.convert(folder("pythia-base", config("").replace("\"rotary_emb_base\": 10000",
                "\"rotary_emb_base\": 500000"), tensors(253)), "f16", out, false);
        assertThat(base.code()).as(base.err()).isEqualTo(6);
        assertThat(base.err()).contains("rotary_emb_base").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass computed with llama.cpp's GELU (tanh, from ggml's F16
     * table): F32 within 1e-4 of the largest logit (measured 6.8e-8), F16 3e-3 (5.7e-4), in parallel and in
     * sequence. transformers' exact GELU is 3e-4 apart (llama.cpp's approximation, in every converter's file too),
     * and q/k/v taken as three blocks of the stored rows (a file that did not re-lay them) 0.98.
     */
    @ParameterizedTest
    @CsvSource({"f32, ", "f16, ", "f32, --sequential"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String sequential) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("gptneox-forward");
        List<String> make = new ArrayList<>(List.of("gptneox", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "3"));
        if (sequential != null) make.add(sequential);
        DecoderReference.make(tmp, make.toArray(String[]::new));
        Path out = tmp.resolve("gptneox-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        String tokens = "1,7,42,100,3,250,17,64,5,9,200,300";
        JsonNode llamaGelu = DecoderReference.compare(tmp, dir, out, dtype, tokens, "--variant", "gelu-tanh").path("kv_f16");
        JsonNode exact = DecoderReference.compare(tmp, dir, out, dtype, tokens).path("kv_f16");
        JsonNode blocks = DecoderReference.compare(tmp, dir, out, dtype, tokens, "--variant", "qkv-blocks").path("kv_f16");
        assertThat(llamaGelu.path("max_rel_diff").asDouble()).as(llamaGelu.toString()).isLessThan(dtype.equals("f32") ? 1e-4 : 3e-3);
        assertThat(exact.path("max_rel_diff").asDouble()).as("transformers' exact GELU: " + exact).isLessThan(3e-3);
        assertThat(blocks.path("max_rel_diff").asDouble()).as("q/k/v not re-laid: " + blocks).isGreaterThan(0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("pythia-tiny", config(""), tensors(254), all),
                new ConverterParityTest.Folder("pythia-sequential-tiny-bf16", config("\"use_parallel_residual\": false, "),
                        ConverterParityTest.as("BF16", tensors(255)), withAuto));
    }
}
