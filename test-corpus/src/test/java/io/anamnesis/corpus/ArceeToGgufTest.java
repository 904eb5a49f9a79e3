package io.anamnesis.corpus;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.io.IOException;
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
 * An Arcee AFM folder ({@code ArceeForCausalLM}) to GGUF as the converter's {@code ArceeModel}
 * (a {@code LlamaModel}) writes it: llama's layout without a gate in the MLP, llama's keys; the
 * bad inputs. {@link ConverterParityTest} compares such folders with the converter's own files;
 * with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3})
 * llama.cpp's logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class ArceeToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = HIDDEN / HEADS;

    /** AFM-4.5B's rope scaling, its original context shrunk. */
    static final String YARN = "{\"rope_type\": \"yarn\", \"type\": \"yarn\", \"factor\": 20.0, \"original_max_position_embeddings\": 64, "
            + "\"mscale\": 1.0, \"beta_fast\": 32.0, \"beta_slow\": 1.0}";

    @TempDir
    Path tmp;

    /** A tiny AFM config.json; {@code rope} the rope_scaling value. */
    static String config(String rope) {
        return "{\"architectures\": [\"ArceeForCausalLM\"], \"model_type\": \"arcee\", \"vocab_size\": " + VOCAB + ", "
                + "\"hidden_size\": " + HIDDEN + ", \"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"hidden_act\": \"relu2\", "
                + "\"max_position_embeddings\": 1280, \"rms_norm_eps\": 1e-05, \"rope_theta\": 10000.0, \"rope_scaling\": " + rope + ", "
                + "\"tie_word_embeddings\": false, \"torch_dtype\": \"float32\"}";
    }

    /** AFM's tensors, random F32; {@code gate} adds a llama gate_proj it does not have. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean gate) {
        Map<String, long[]> shapes = new TreeMap<>();
        shapes.put("model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put("model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            shapes.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            shapes.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
            if (gate) shapes.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
        }
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @Test
    void llamaWithoutAGateUnderArcee() throws IOException {
        Path out = tmp.resolve("afm.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("AFM-tiny", config(YARN), tensors(101, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("arcee");
        assertThat(g.kv.get("arcee.vocab_size").asLong()).isEqualTo(VOCAB);
        assertThat(g.kv.get("arcee.rope.dimension_count").asLong()).isEqualTo(HEAD);
        assertThat(g.kv.get("arcee.rope.scaling.type").asString()).isEqualTo("yarn");
        assertThat(g.kv.get("arcee.rope.scaling.original_context_length").asLong()).isEqualTo(64);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.1.ffn_up.weight", "blk.1.ffn_down.weight", "blk.1.ffn_norm.weight")
                .noneMatch(n -> n.contains("ffn_gate"));
        assertThat(g.tensor("blk.0.ffn_up.weight").type()).isEqualTo(1);
    }

    /** A gate the arcee graph has no place for: the converter cannot map it either. */
    @Test
    void aGateIsRefusedNamingTheTensor() throws IOException {
        Path out = tmp.resolve("gate.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("AFM-gate", config("null"), tensors(102, true)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains("gate_proj").contains("arcee").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass: F32 within 1e-4 relative (measured
     * 1.6e-7, with yarn 1.8e-7), F16 3e-3 (9.5e-4); the MLP computed with silu instead of relu^2
     * 0.53 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,,", "f16,,", "f32,16,", "f32,,silu-not-relu2"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String yarn, String variant) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (yarn != null) make.addAll(List.of("--yarn", yarn));
        DecoderReference.llamaCppComputesTheReference(tmp, "arcee", make, dtype, variant, 0.2);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("AFM-tiny", config(YARN), tensors(103, false), all),
                new ConverterParityTest.Folder("AFM-tiny-bf16", config("null"), ConverterParityTest.as("BF16", tensors(104, false)), withAuto));
    }
}
