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
 * Nomic's BERT folders ({@code NomicBertModel}: nomic-embed-text v1 and v1.5) to GGUF as the converter's
 * {@code NomicBertModel} writes them: arch {@code nomic-bert}, the fused Wqkv kept, the SwiGLU MLP's fc11/fc12/fc2 as
 * up/gate/down, no position embeddings, the context length rewritten from {@code n_positions}, the rope base from
 * {@code rotary_emb_base}, BERT's keys and vocabulary; the bad inputs. {@link ConverterParityTest} compares such folders
 * with the converter's own files (given {@code num_local_experts: null}: the converter at ca01960e6a reads the expert
 * count unconditionally in {@code modify_tensors} and stops on nomic-embed-text without it; null reads as absent
 * everywhere else). With the oracles and bert-base-uncased's tokenizer ({@code AMN_TOKENIZER_BERT}) llama.cpp's
 * embeddings are checked against {@code bench/scripts/encoder_reference.py}'s forward pass.
 */
class NomicBertToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, LAYERS = 2, HEADS = 4, INTER = 96;

    @TempDir
    Path tmp;

    /** nomic-embed-text-v1.5's config.json shape, sizes shrunk, with {@code extra} (keys and a comma) added first. */
    static String config(String extra) {
        return "{" + extra + "\"activation_function\": \"swiglu\", \"architectures\": [\"NomicBertModel\"], \"causal\": false, "
                + "\"layer_norm_epsilon\": 1e-12, \"max_trained_positions\": 2048, \"mlp_fc1_bias\": false, \"mlp_fc2_bias\": false, "
                + "\"model_type\": \"nomic_bert\", \"n_embd\": " + HIDDEN + ", \"n_head\": " + HEADS + ", \"n_inner\": " + INTER
                + ", \"n_layer\": " + LAYERS + ", \"n_positions\": 8192, \"prenorm\": false, \"qkv_proj_bias\": false, "
                + "\"rotary_emb_base\": 1000, \"rotary_emb_fraction\": 1.0, \"rotary_emb_interleaved\": false, "
                + "\"rotary_emb_scale_base\": null, \"rotary_scaling_factor\": null, \"type_vocab_size\": 2, \"use_rms_norm\": false, "
                + "\"vocab_size\": " + VOCAB + "}";
    }

    /** The tensors of a tiny random nomic-bert as F32. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("embeddings.word_embeddings.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("embeddings.token_type_embeddings.weight", new long[]{2, HIDDEN});
        shapes.put("emb_ln.weight", new long[]{HIDDEN});
        shapes.put("emb_ln.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "encoder.layers." + i + ".";
            shapes.put(p + "attn.Wqkv.weight", new long[]{3 * HIDDEN, HIDDEN});
            shapes.put(p + "attn.out_proj.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "mlp.fc11.weight", new long[]{INTER, HIDDEN});
            shapes.put(p + "mlp.fc12.weight", new long[]{INTER, HIDDEN});
            shapes.put(p + "mlp.fc2.weight", new long[]{HIDDEN, INTER});
            for (String n : List.of("norm1.", "norm2.")) {
                shapes.put(p + n + "weight", new long[]{HIDDEN});
                shapes.put(p + n + "bias", new long[]{HIDDEN});
            }
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void bertsKeysTheTrainedContextTheRopeBaseAndTheFusedLayout() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(3001);
        ReferenceGguf g = DecoderReference.converted(folder("nomic-embed-tiny", config(""), in), "f32", false, tmp);
        String a = "nomic-bert";
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo(a);
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".block_count", a + ".context_length",
                a + ".embedding_length", a + ".feed_forward_length", a + ".attention.head_count", a + ".rope.freq_base",
                a + ".attention.layer_norm_epsilon", "general.file_type", a + ".attention.causal")
                .doesNotContain(a + ".expert_count", a + ".attention.head_count_kv");
        // n_positions 8192 over max_trained_positions 2048: the 2048 tokens it was trained for
        assertThat(g.kv.get(a + ".context_length").asLong()).isEqualTo(2048);
        assertThat(ByteBuffer.wrap(g.kv.get(a + ".rope.freq_base").value()).order(ByteOrder.LITTLE_ENDIAN).getFloat()).isEqualTo(1000f);
        assertThat(g.kv.get(a + ".attention.causal").value()).containsExactly(0);
        assertThat(g.tensor("blk.1.attn_qkv.weight").bytes()).isEqualTo(in.get("encoder.layers.1.attn.Wqkv.weight").bytes());
        assertThat(g.tensor("blk.0.ffn_up.weight").bytes()).isEqualTo(in.get("encoder.layers.0.mlp.fc11.weight").bytes());
        assertThat(g.tensor("blk.0.ffn_gate.weight").bytes()).isEqualTo(in.get("encoder.layers.0.mlp.fc12.weight").bytes());
        assertThat(g.tensor("token_embd_norm.bias").bytes()).isEqualTo(in.get("emb_ln.bias").bytes());
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).doesNotContain("position_embd.weight").hasSize(4 + 9 * LAYERS);
        // 2048 over 2048: 512, as the converter rewrites it
        ReferenceGguf short512 = DecoderReference.converted(folder("nomic-2048",
                config("").replace("\"n_positions\": 8192", "\"n_positions\": 2048"), tensors(3002)), "f16", false, tmp);
        assertThat(short512.kv.get(a + ".context_length").asLong()).isEqualTo(512);
    }

    /** What llama.cpp's nomic-bert would compute as another model (exit 6); what config.json lacks or gives wrong (exit 3). */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"activation_function\": \"swiglu\"|\"activation_function\": \"gelu\"|6|activation_function",
            "\"causal\": false|\"causal\": true|6|causal",
            "\"qkv_proj_bias\": false|\"qkv_proj_bias\": true|6|qkv_proj_bias",
            "\"prenorm\": false|\"prenorm\": true|6|prenorm",
            "\"rotary_emb_interleaved\": false|\"rotary_emb_interleaved\": true|6|rotary_emb_interleaved",
            "\"rotary_emb_scale_base\": null|\"rotary_emb_scale_base\": 512|6|rotary_emb_scale_base",
            "\"rotary_scaling_factor\": null|\"rotary_scaling_factor\": 2.0|6|rotary_scaling_factor",
            "\"use_rms_norm\": false|\"moe_every_n_layers\": 2|6|moe_every_n_layers",
            "\"causal\": false, ||3|causal",
            "\"rotary_emb_base\": 1000, ||3|rotary_emb_base",
            "\"n_positions\": 8192|\"n_positions\": 4096|3|n_positions",
            "\"n_embd\": 32|\"n_embd\": 48|3|n_embd",
            "\"n_inner\": 96|\"n_inner\": 128|3|n_inner"})
    void whatDoesNotFitIsRefused(String from, String to, int exit, String key) throws IOException {
        DecoderReference.refused(tmp, config(""), from, to, tensors(3003), exit, key);
    }

    /**
     * llama.cpp's outputs of 12 tokens (each token's, and the mean-pooled embedding) against the reference forward pass:
     * F32 within 1e-5 of the largest value (measured 3.0e-7, pooled 2.4e-7: no lookup table on this path), F16 3e-3;
     * adjacent rope pairs land 0.79 off, the gate and up projections swapped 1.28.
     */
    @ParameterizedTest
    @CsvSource({"f32, interleaved-rope", "f16, gate-up-swapped"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_BERT");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_BERT not set: llama.cpp needs the vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("nomic-forward");
        EncoderReference.make(tmp, "nomic-bert", dir, List.of("--tokenizer", tok.get().toString(), "--seed", "4", "--pooling", "mean"));
        Path out = EncoderReference.llamaCppComputesTheReference(tmp, oracles, dir, dtype, dtype.equals("f32") ? 1e-5 : 3e-3, true,
                wrong, 0.1);
        // the vocabulary padded to 30528: its six fillers unused, in the phantom-space spelling
        assertThat(Phi3ToGgufTest.strings(ReferenceGguf.read(out).kv.get("tokenizer.ggml.tokens"))).hasSize(30528)
                .endsWith("\u2581[PAD30527]");
    }

    /** Q4_K_M in the same pass: byte for byte llama_model_quantize of the converter's default output. */
    @Test
    void aQuantizedConversionIsLlamaQuantizeOfTheConvertersFile() throws Exception {
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("nomic-quantize");
        EncoderReference.make(tmp, "nomic-bert", dir, List.of("--seed", "9"));
        EncoderReference.quantizedIsLlamaQuantize(tmp, oracles, dir, "Q4_K_M");
    }

    /**
     * The folders {@link ConverterParityTest} compares with the converter's own files: with {@code num_local_experts}
     * null, which the converter needs to run on a nomic-bert (above), and a WordPiece tokenizer.json, whose model type
     * its {@code __init__} reads.
     */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        Map<String, String> files = Map.of("tokenizer.json", "{\"model\": {\"type\": \"WordPiece\", \"vocab\": {\"[UNK]\": 0}}}");
        Map<String, String> pooled = new TreeMap<>(files);
        pooled.putAll(BertToGgufTest.sentenceTransformers("pooling_mode_mean_tokens"));
        return List.of(new ConverterParityTest.Folder("nomic-embed-text-tiny", config("\"num_local_experts\": null, "), tensors(3004),
                        pooled, all),
                new ConverterParityTest.Folder("nomic-embed-text-2048-tiny-bf16", config("\"num_local_experts\": null, ")
                        .replace("\"n_positions\": 8192", "\"n_positions\": 2048"), ConverterParityTest.as("BF16", tensors(3005)),
                        files, withAuto));
    }
}
