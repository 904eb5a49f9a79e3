package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * BigCode's StarCoder2 folders ({@code Starcoder2ForCausalLM}) to GGUF as the converter's
 * {@code StarCoder2Model} writes them: LayerNorms and every linear layer with biases, the MLP's
 * {@code c_fc}/{@code c_proj} as up and down, TextModel's keys; the sliding window said, what llama.cpp
 * would compute otherwise refused. {@link ConverterParityTest} compares such folders with the
 * converter's own files; with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer
 * ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's logits are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Starcoder2ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 32, FF = 64, LAYERS = 2, HEADS = 4, KV_HEADS = 2;

    @TempDir
    Path tmp;

    /** starcoder2-3b's config.json shape, sizes shrunk; {@code extra} more entries. */
    static String config(boolean tied, String extra) {
        return "{\"architectures\": [\"Starcoder2ForCausalLM\"], \"model_type\": \"starcoder2\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"max_position_embeddings\": 16384, "
                + "\"norm_epsilon\": 1e-05, \"norm_type\": \"layer_norm\", \"rope_theta\": 999999.4420358813, \"sliding_window\": 4096, "
                + "\"use_bias\": true, \"hidden_act\": \"gelu_pytorch_tanh\", \"mlp_type\": \"default\", " + extra
                + "\"tie_word_embeddings\": " + tied + ", \"torch_dtype\": \"float32\"}";
    }

    /** The tensors of a tiny random StarCoder2 as F32, in name order. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(boolean tied, long seed) {
        Map<String, long[]> shapes = new TreeMap<>();
        int head = HIDDEN / HEADS;
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        if (!tied) shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        shapes.put("model.norm.bias", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            for (String n : List.of("input_layernorm", "post_attention_layernorm")) {
                shapes.put(p + n + ".weight", new long[]{HIDDEN});
                shapes.put(p + n + ".bias", new long[]{HIDDEN});
            }
            for (String n : List.of("q", "k", "v")) {
                long rows = (long) (n.equals("q") ? HEADS : KV_HEADS) * head;
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{rows, HIDDEN});
                shapes.put(p + "self_attn." + n + "_proj.bias", new long[]{rows});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, HIDDEN});
            shapes.put(p + "self_attn.o_proj.bias", new long[]{HIDDEN});
            shapes.put(p + "mlp.c_fc.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.c_fc.bias", new long[]{FF});
            shapes.put(p + "mlp.c_proj.weight", new long[]{HIDDEN, FF});
            shapes.put(p + "mlp.c_proj.bias", new long[]{HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void layerNormsBiasesAndTheUpAndDownProjections() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(true, 221);
        Path out = tmp.resolve("sc2.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("starcoder2-3b-tiny", config(true, ""), in).toString(), "--to", "gguf",
                "--dtype", "f16", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("sliding_window 4096").contains("the same up to 4096 tokens");
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "starcoder2";
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo(a);
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".attention.layer_norm_epsilon").asLong())).isEqualTo(1e-5f);
        assertThat(g.kv).doesNotContainKeys(a + ".attention.layer_norm_rms_epsilon", a + ".attention.sliding_window", a + ".vocab_size");
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.1.ffn_up.weight", "blk.1.ffn_up.bias", "blk.1.ffn_down.bias", "blk.0.attn_norm.bias",
                "output_norm.bias", "blk.0.attn_q.bias").noneMatch(n -> n.contains("ffn_gate") || n.equals("output.weight"));
        // biases and norms F32 at f16, c_fc's weight F16 and unpermuted (NEOX rope)
        assertThat(g.tensor("blk.0.attn_k.bias").type()).isZero();
        assertThat(g.tensor("blk.0.ffn_norm.weight").type()).isZero();
        assertThat(g.tensor("blk.0.ffn_up.weight").type()).isEqualTo(1);
        assertThat(g.tensor("blk.1.attn_q.bias").bytes()).isEqualTo(in.get("model.layers.1.self_attn.q_proj.bias").bytes());
    }

    /** What llama.cpp's starcoder2 would compute otherwise, or could not load: exit 6 naming the key. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"hidden_act\": \"gelu_pytorch_tanh\"|\"hidden_act\": \"gelu\"|hidden_act",
            "\"use_bias\": true|\"use_bias\": false|use_bias",
            "\"norm_type\": \"layer_norm\"|\"norm_type\": \"rms_norm\"|norm_type"})
    void whatLlamaCppWouldRunOtherwiseIsRefused(String from, String to, String key) throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("starcoder2-bad", config(true, "").replace(from, to), tensors(true, 222)),
                "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains(key).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (LayerNorms, biases, tanh GELU): F32 within 1e-4 of the
     * largest logit (measured 8.1e-8), F16 3e-3 (7.1e-4); the biases left out 0.62 off, the exact (erf) GELU 4.5e-4
     * (against 8e-8: a difference of a few float32 roundings would not show).
     */
    @ParameterizedTest
    @CsvSource({"f32, , , 0", "f16, , , 0", "f32, --untied, , 0", "f32, , --variant;no-bias, 0.1", "f32, , --variant;gelu-erf, 2e-4"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String untied, String wrong, double apart) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (untied != null) make.add(untied);
        DecoderReference.llamaCppComputesTheReference(tmp, "starcoder2", make, dtype, DecoderReference.options(wrong), apart);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("starcoder2-3b-tiny", config(true, ""), tensors(true, 223), all),
                new ConverterParityTest.Folder("starcoder2-15b-tiny-bf16", config(false, ""), ConverterParityTest.as("BF16",
                        tensors(false, 224)), withAuto));
    }
}
