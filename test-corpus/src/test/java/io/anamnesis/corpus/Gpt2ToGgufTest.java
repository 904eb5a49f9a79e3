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
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * OpenAI's GPT-2 folders ({@code GPT2LMHeadModel}) to GGUF as the converter's {@code GPT2Model} writes them: the
 * {@code Conv1D} weights ({@code [in, out]}) transposed, learned position embeddings kept F32, names with and
 * without {@code transformer.}, the causal-mask buffers left out, its own keys; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the oracles
 * ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked
 * against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Gpt2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 4, POSITIONS = 48;

    @TempDir
    Path tmp;

    /** openai-community/gpt2's config.json shape, sizes shrunk (heads of 8), {@code extra} more entries. */
    static String config(String extra) {
        return "{\"activation_function\": \"gelu_new\", \"architectures\": [\"GPT2LMHeadModel\"], \"bos_token_id\": 50256, "
                + "\"eos_token_id\": 50256, \"layer_norm_epsilon\": 1e-05, \"model_type\": \"gpt2\", \"n_ctx\": " + POSITIONS + ", "
                + "\"n_embd\": " + HIDDEN + ", \"n_head\": " + HEADS + ", \"n_inner\": null, \"n_layer\": " + LAYERS + ", "
                + "\"n_positions\": " + POSITIONS + ", \"reorder_and_upcast_attn\": false, \"scale_attn_by_inverse_layer_idx\": false, "
                + extra + "\"scale_attn_weights\": true, \"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random GPT-2 as F32, in name order, under {@code prefix} ("" or "transformer."). */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, String prefix) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put(prefix + "wte.weight", new long[]{VOCAB, HIDDEN});
        shapes.put(prefix + "wpe.weight", new long[]{POSITIONS, HIDDEN});
        shapes.put(prefix + "ln_f.weight", new long[]{HIDDEN});
        shapes.put(prefix + "ln_f.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = prefix + "h." + i + ".";
            for (String n : List.of("ln_1", "ln_2")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            // Conv1D: [in, out]
            shapes.put(p + "attn.c_attn.weight", new long[]{HIDDEN, 3L * HIDDEN});
            shapes.put(p + "attn.c_attn.bias", new long[]{3L * HIDDEN});
            shapes.put(p + "attn.c_proj.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "attn.c_proj.bias", new long[]{HIDDEN});
            shapes.put(p + "mlp.c_fc.weight", new long[]{HIDDEN, 4L * HIDDEN});
            shapes.put(p + "mlp.c_fc.bias", new long[]{4L * HIDDEN});
            shapes.put(p + "mlp.c_proj.weight", new long[]{4L * HIDDEN, HIDDEN});
            shapes.put(p + "mlp.c_proj.bias", new long[]{HIDDEN});
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
    void theConv1dWeightsTransposedAndItsOwnKeys() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(261, "");
        Path out = tmp.resolve("gpt2.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("gpt2-tiny", config(""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "gpt2";
        // GPT2Model.set_gguf_parameters' keys in its order, block count first, none of TextModel's
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".block_count", a + ".context_length", a + ".embedding_length",
                a + ".feed_forward_length", a + ".attention.head_count", a + ".attention.layer_norm_epsilon", "general.file_type")
                .doesNotContain(a + ".rope.freq_base", a + ".attention.head_count_kv", a + ".attention.layer_norm_rms_epsilon");
        assertThat(g.kv.get(a + ".context_length").asLong()).isEqualTo(POSITIONS);
        assertThat(g.kv.get(a + ".feed_forward_length").asLong()).isEqualTo(4L * HIDDEN);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("token_embd.weight", "position_embd.weight", "output_norm.bias", "blk.1.attn_qkv.bias",
                "blk.0.ffn_down.weight").doesNotContain("output.weight");
        // written (out, in) = stored (in, out): GGUF dims [in, out] of a [out, in] row-major matrix
        for (String[] w : new String[][]{{"h.1.attn.c_attn.weight", "blk.1.attn_qkv.weight", "32", "96"},
                {"h.0.mlp.c_proj.weight", "blk.0.ffn_down.weight", "128", "32"}}) {
            byte[] stored = in.get(w[0]).bytes(), written = g.tensor(w[1]).bytes();
            long inDim = Long.parseLong(w[2]), outDim = Long.parseLong(w[3]);
            assertThat(g.tensor(w[1]).ne()).containsExactly(inDim, outDim);
            for (long o = 0; o < outDim; o += 7) {
                for (long i = 0; i < inDim; i += 5) assertThat(at(written, o * inDim + i)).isEqualTo(at(stored, i * outDim + o));
            }
        }
        // the position embeddings are F32 in every output type (prepare_tensors' POS_EMBD)
        Path f16 = tmp.resolve("gpt2-f16.gguf");
        assertThat(DecoderReference.convert(folder("gpt2-tiny-f16", config(""), in), "q8_0", f16, false).code()).isZero();
        ReferenceGguf q = ReferenceGguf.read(f16);
        assertThat(q.tensor("position_embd.weight").type()).isZero();
        assertThat(q.tensor("blk.0.attn_qkv.weight").type()).as("Q8_0").isEqualTo(8);
    }

    /**
     * The names {@code GPT2LMHeadModel.save_pretrained} writes ({@code transformer.*}) and the causal-mask buffers
     * older checkpoints carry ({@code attn.bias}, {@code attn.masked_bias}, which the converter at its pinned commit
     * cannot map) give the same file as the bare names; an {@code lm_head.weight} of its own is written as
     * {@code output}.
     */
    @Test
    void prefixedNamesAndMaskBuffersGiveTheSameFile() throws IOException {
        Path bare = tmp.resolve("bare.gguf"), prefixed = tmp.resolve("prefixed.gguf");
        assertThat(DecoderReference.convert(folder("a/gpt2-tiny", config(""), tensors(262, "")), "f16", bare, false).code()).isZero();
        Map<String, ReferenceSafetensors.Tensor> withMasks = new LinkedHashMap<>(tensors(262, "transformer."));
        Map<String, long[]> masks = new TreeMap<>();
        for (int i = 0; i < LAYERS; i++) {
            masks.put("transformer.h." + i + ".attn.bias", new long[]{1, 1, POSITIONS, POSITIONS});
            masks.put("transformer.h." + i + ".attn.masked_bias", new long[]{});
        }
        withMasks.putAll(DecoderReference.randomF32(masks, new Random(1)));
        CorpusCliTest.Run r = DecoderReference.convert(folder("b/gpt2-tiny", config(""), new TreeMap<>(withMasks)), "f16", prefixed,
                false);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(Files.readAllBytes(prefixed)).isEqualTo(Files.readAllBytes(bare));
        Map<String, ReferenceSafetensors.Tensor> untied = new TreeMap<>(tensors(263, ""));
        untied.putAll(DecoderReference.randomF32(Map.of("lm_head.weight", new long[]{VOCAB, HIDDEN}), new Random(2)));
        Path own = tmp.resolve("own.gguf");
        assertThat(DecoderReference.convert(folder("gpt2-own-head", config(""), untied), "f32", own, false).code()).isZero();
        assertThat(ReferenceGguf.read(own).tensor("output.weight").bytes()).isEqualTo(untied.get("lm_head.weight").bytes());
    }

    /** What llama.cpp's gpt2 would compute otherwise (exit 6), or shapes config.json does not give (exit 3), naming the key. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"activation_function\": \"gelu_new\"|\"activation_function\": \"relu\"|6|activation_function",
            "\"scale_attn_weights\": true|\"scale_attn_weights\": false|6|scale_attn_weights",
            "\"scale_attn_by_inverse_layer_idx\": false|\"scale_attn_by_inverse_layer_idx\": true|6|scale_attn_by_inverse_layer_idx",
            "\"n_inner\": null|\"n_inner\": 96|3|n_inner",
            "\"n_embd\": 32|\"n_embd\": 24|3|n_embd",
            "\"n_ctx\": 48|\"n_ctx\": 64|3|n_ctx",
            "\"vocab_size\": 64|\"vocab_size\": 80|3|vocab_size"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(""), from, to, tensors(264, ""), exit, key);
    }

    /**
     * llama.cpp's logits against the reference forward pass (learned positions, Conv1D layers, fused q/k/v in blocks,
     * GELU's tanh approximation from ggml's F16 table): F32 within 1e-4 of the largest logit (measured 1.4e-7), F16
     * 3e-3 (7.2e-4), also with the names of {@code GPT2LMHeadModel.save_pretrained} and the mask buffers; without the
     * position embeddings 0.42 off, q/k/v read per head 0.58.
     */
    @ParameterizedTest
    @CsvSource({"f32, , ", "f16, , ", "f32, --prefix;--masks, ", "f32, , no-positions", "f32, , qkv-per-head"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String layout, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (layout != null) make.addAll(List.of(layout.split(";")));
        DecoderReference.llamaCppComputesTheReference(tmp, "gpt2", make, dtype, wrong, 0.1);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("gpt2-tiny", config(""), tensors(265, ""), all),
                new ConverterParityTest.Folder("distilgpt2-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(266, "transformer.")),
                        withAuto));
    }
}
