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
 * A Command R7B folder ({@code Cohere2ForCausalLM}) to GGUF as the converter's
 * {@code Cohere2Model} writes it: Command-R's block, three sliding-window layers to one global
 * as llama.cpp lays them out, zero biases left out, the rope dimension from {@code rotary_pct};
 * the bad inputs. {@link ConverterParityTest} compares such folders with the converter's own
 * files; with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3})
 * llama.cpp's logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Cohere2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 160, LAYERS = 4, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS;

    @TempDir
    Path tmp;

    /** A tiny Command R7B config.json (c4ai-command-r7b-12-2024's keys, sizes shrunk); {@code extra} more entries. */
    static String config(String extra) {
        return "{\"architectures\": [\"Cohere2ForCausalLM\"], \"model_type\": \"cohere2\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"max_position_embeddings\": 8192, "
                + "\"layer_norm_eps\": 1e-05, \"logit_scale\": 0.25, \"rope_theta\": 50000.0, \"rotary_pct\": 1.0, "
                + "\"sliding_window\": 4096, \"sliding_window_pattern\": 4, " + extra
                + "\"order_of_interleaved_layers\": \"local_attn_first\", \"attention_bias\": false, \"torch_dtype\": \"float32\"}";
    }

    /** Its tensors, random F32; with {@code biases} the q/k/v/o biases the converter leaves out when they are zero. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean biases) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>(DecoderReference.randomF32(shapes, new Random(seed)));
        if (biases) {
            for (int i = 0; i < LAYERS; i++) {
                for (String n : List.of("q", "k", "v", "o")) {
                    long rows = n.equals("o") ? HIDDEN : (n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD;
                    t.put("model.layers." + i + ".self_attn." + n + "_proj.bias", new ReferenceSafetensors.Tensor("F32", new long[]{rows},
                            new byte[(int) (4 * rows)]));
                }
            }
        }
        return t;
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void zeroBiasesLeftOutAndItsKeys() throws IOException {
        Path out = tmp.resolve("r7b.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("c4ai-command-r7b-tiny", config(""), tensors(151, true)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("cohere2");
        assertThat(g.kv.get("cohere2.attention.sliding_window").asLong()).isEqualTo(4096);
        assertThat(g.kv.get("cohere2.rope.dimension_count").asLong()).isEqualTo(HEAD);
        assertThat(g.kv.get("cohere2.rope.scaling.type").asString()).isEqualTo("none");
        assertThat(g.kv.get("cohere2.vocab_size").asLong()).isEqualTo(VOCAB);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).hasSize(2 + 8 * LAYERS).noneMatch(n -> n.endsWith(".bias"));
    }

    @Test
    void aBiasThatIsNotZeroIsRefusedNamingIt() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> t = tensors(152, true);
        byte[] b = new byte[4 * HIDDEN];
        b[4 * 7 + 3] = 0x3f; // 0.5 at element 7
        t.put("model.layers.2.self_attn.o_proj.bias", new ReferenceSafetensors.Tensor("F32", new long[]{HIDDEN}, b));
        Path out = tmp.resolve("bias.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("c4ai-bias", config(""), t), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("model.layers.2.self_attn.o_proj.bias").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** llama.cpp's cohere2 makes every fourth layer global whatever config.json says. */
    @Test
    void anotherLayerPatternIsRefused() throws IOException {
        Path out = tmp.resolve("pattern.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("c4ai-pattern", config("").replace("\"sliding_window_pattern\": 4", "\"sliding_window_pattern\": 2"),
                tensors(153, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("sliding_window_pattern").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (8 layers, a window of 4): F32 within
     * 1e-4 relative (measured 2.0e-7), F16 3e-3 (9.6e-4); rope on the global layers too 0.21 off,
     * no window 0.59, the block sequential 0.76.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,rope-everywhere", "f32,no-window", "f32,not-parallel"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "cohere2", List.of("--tokenizer", tok.get().toString(), "--seed", "3"), dtype,
                variant, 0.1);
    }

    /**
     * The folders {@link ConverterParityTest} compares with the converter's own files, without
     * zero biases: the converter's check of them ({@code if torch.any(t != 0)} on its lazy
     * tensors) fails with the torch 1.13 it runs with here ("len() of a 0-d tensor"), so their
     * leaving out is checked by {@link #zeroBiasesLeftOutAndItsKeys} alone.
     */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("c4ai-command-r7b-tiny", config(""), tensors(154, false), all),
                new ConverterParityTest.Folder("c4ai-command-r7b-tiny-bf16", config("\"layer_types\": [\"sliding_attention\", "
                        + "\"sliding_attention\", \"sliding_attention\", \"full_attention\"], "), ConverterParityTest.as("BF16", tensors(155, false)),
                        withAuto));
    }
}
