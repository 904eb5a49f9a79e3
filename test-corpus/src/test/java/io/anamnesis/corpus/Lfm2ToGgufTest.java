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
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Liquid AI LFM2 folder ({@code Lfm2ForCausalLM}) to GGUF as the converter's {@code LFM2Model}
 * writes it: short-convolution layers beside attention layers, the convolution weights squeezed,
 * {@code head_count_kv} one int32 per layer, the adjusted feed-forward width; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Lfm2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, LAYERS = 4, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS, L = 3;
    /** block_ff_dim 200: two thirds, 133, rounded up to a multiple of 32. */
    static final int FF = 160;

    @TempDir
    Path tmp;

    /** A tiny LFM2 config.json (LFM2-350M's keys, sizes shrunk); layers 0 and 2 convolutions. */
    static String config(String extra) {
        return "{\"architectures\": [\"Lfm2ForCausalLM\"], \"model_type\": \"lfm2\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"num_hidden_layers\": " + LAYERS + ", \"num_attention_heads\": " + HEADS + ", "
                + "\"num_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"max_position_embeddings\": 128000, "
                + "\"norm_eps\": 1e-05, \"rope_theta\": 1000000.0, \"conv_L_cache\": " + L + ", \"conv_bias\": false, "
                + "\"conv_dim\": " + HIDDEN + ", \"conv_dim_out\": " + HIDDEN + ", \"block_ff_dim\": 200, \"block_auto_adjust_ff_dim\": true, "
                + "\"block_ffn_dim_multiplier\": 1.0, \"block_multiple_of\": 32, " + extra
                + "\"layer_types\": [\"conv\", \"full_attention\", \"conv\", \"full_attention\"], \"tie_embedding\": true, "
                + "\"torch_dtype\": \"float32\"}";
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.embedding_norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "operator_norm.weight", new long[]{HIDDEN});
            shapes.put(p + "ffn_norm.weight", new long[]{HIDDEN});
            shapes.put(p + "feed_forward.w1.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "feed_forward.w3.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "feed_forward.w2.weight", new long[]{HIDDEN, FF});
            if (i % 2 == 0) {
                shapes.put(p + "conv.in_proj.weight", new long[]{3L * HIDDEN, HIDDEN});
                shapes.put(p + "conv.conv.weight", new long[]{HIDDEN, 1, L});
                shapes.put(p + "conv.out_proj.weight", new long[]{HIDDEN, HIDDEN});
            } else {
                shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
                shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
                shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
                shapes.put(p + "self_attn.out_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
                shapes.put(p + "self_attn.q_layernorm.weight", new long[]{HEAD});
                shapes.put(p + "self_attn.k_layernorm.weight", new long[]{HEAD});
            }
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    /** The int32 values of an array key/value (GGUF: element type 5, a u64 count, four bytes each). */
    static List<Integer> int32s(ReferenceGguf.Kv kv) {
        ByteBuffer b = ByteBuffer.wrap(kv.value()).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(kv.type()).as("an array").isEqualTo(9);
        assertThat(b.getInt()).as("of int32").isEqualTo(5);
        long n = b.getLong();
        List<Integer> out = new ArrayList<>();
        for (long i = 0; i < n; i++) out.add(b.getInt());
        return out;
    }

    @Test
    void convolutionLayersBesideAttentionLayers() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(131);
        Path out = tmp.resolve("lfm2.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("LFM2-tiny", config(""), in), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("lfm2");
        assertThat(int32s(g.kv.get("lfm2.attention.head_count_kv"))).containsExactly(0, KV_HEADS, 0, KV_HEADS);
        assertThat(g.kv.get("lfm2.feed_forward_length").asLong()).isEqualTo(FF);
        assertThat(g.kv.get("lfm2.shortconv.l_cache").asLong()).isEqualTo(L);
        assertThat(g.kv.get("lfm2.vocab_size").asLong()).isEqualTo(VOCAB);
        // the depthwise convolution squeezed to [channels, kernel] (ne reversed), its values as stored
        ReferenceGguf.Tensor conv = g.tensor("blk.2.shortconv.conv.weight");
        assertThat(conv.ne()).containsExactly(L, HIDDEN);
        assertThat(conv.type()).isZero();
        assertThat(conv.bytes()).isEqualTo(in.get("model.layers.2.conv.conv.weight").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("token_embd_norm.weight", "blk.1.attn_q_norm.weight",
                "blk.0.shortconv.in_proj.weight", "blk.3.ffn_gate.weight").noneMatch(n -> n.equals("output.weight") || n.startsWith("blk.0.attn_q"));
    }

    @Test
    void layerTypesThatDoNotFitTheLayersAreRefused() throws IOException {
        Path out = tmp.resolve("types.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("LFM2-types", config("").replace("\"conv\", \"full_attention\", \"conv\", \"full_attention\"",
                "\"conv\", \"full_attention\""), tensors(132)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("layer_types").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (two convolution and two attention
     * layers): F32 within 1e-4 relative (measured 5.9e-7), F16 3e-3 (1.2e-3; F16 files of other
     * seeds 2.1e-3 and 2.8e-3, ggml rounding the activations it multiplies F16 weights with);
     * B, C and x taken in another order, the convolution reading ahead, or its kernel reversed,
     * more than 1.3 off.
     */
    @ParameterizedTest
    @CsvSource({"3,f32,", "5,f16,", "3,f32,conv-bcx-order", "3,f32,conv-not-causal", "3,f32,conv-flip"})
    void llamaCppComputesTheReferenceForwardPass(int seed, String dtype, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "lfm2", List.of("--tokenizer", tok.get().toString(), "--seed",
                Integer.toString(seed)), dtype, variant, 0.5);
    }

    /**
     * A feed-forward width the converter would adjust into another than the tensors' (here 133
     * rounded up to a multiple of 64: 192, against 160 rows): the file would not load, refused.
     */
    @Test
    void aWidthTheAdjustmentDoesNotGiveIsRefusedNamingTheKey() throws IOException {
        Path out = tmp.resolve("width.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("LFM2-width", config("").replace("\"block_multiple_of\": 32", "\"block_multiple_of\": 64"),
                tensors(135)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("block_ff_dim").contains("192").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("LFM2-tiny", config(""), tensors(133), all),
                new ConverterParityTest.Folder("LFM2-tiny-bf16", config("").replace("\"block_ff_dim\": 200, ", "\"block_ff_dim\": 240, \"intermediate_size\": 999, ")
                        .replace("\"block_ffn_dim_multiplier\": 1.0", "\"block_ffn_dim_multiplier\": null"),
                        ConverterParityTest.as("BF16", tensors(134)), withAuto));
    }
}
