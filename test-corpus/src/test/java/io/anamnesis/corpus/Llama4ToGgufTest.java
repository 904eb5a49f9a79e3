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
 * Llama 4's text model ({@code Llama4ForConditionalGeneration}) to GGUF as the converter's
 * {@code Llama4Model} writes it: the text config merged, {@code language_model.} removed, the vision
 * model and projector left out, the packed experts' gate and up halves split and transposed, the
 * widths renamed as {@code Llama4Model.__init__} renames them, dense layers between the MoE ones,
 * a llama3 scaling as {@code rope_freqs}; what llama.cpp hard-codes refused when the config says
 * otherwise. {@link ConverterParityTest} compares such folders with the converter's own files;
 * with the oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3})
 * llama.cpp's logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Llama4ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, LAYERS = 4, HEADS = 4, KV_HEADS = 2, HEAD = 16, EXPERTS = 4, WIDTH = 32, MLP = 96;

    @TempDir
    Path tmp;

    /** A tiny Llama-4-Scout config.json: the text model's keys under text_config; {@code extra} more text keys. */
    static String config(int step, String extra) {
        return "{\"architectures\": [\"Llama4ForConditionalGeneration\"], \"model_type\": \"llama4\", "
                + "\"text_config\": {\"model_type\": \"llama4_text\", \"vocab_size\": " + VOCAB + ", \"hidden_size\": " + HIDDEN + ", "
                + "\"intermediate_size\": " + WIDTH + ", \"intermediate_size_mlp\": " + MLP + ", \"num_hidden_layers\": " + LAYERS + ", "
                + "\"num_attention_heads\": " + HEADS + ", \"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", "
                + "\"num_local_experts\": " + EXPERTS + ", \"num_experts_per_tok\": 1, \"interleave_moe_layer_step\": " + step + ", "
                + "\"no_rope_layers\": [1, 1, 1, 0], \"use_qk_norm\": true, \"attention_chunk_size\": 8192, "
                + "\"attn_temperature_tuning\": true, \"floor_scale\": 8192, \"attn_scale\": 0.1, " + extra
                + "\"rope_theta\": 500000.0, \"rms_norm_eps\": 1e-05, \"max_position_embeddings\": 4096, \"tie_word_embeddings\": false}, "
                + "\"vision_config\": {\"model_type\": \"llama4_vision_model\", \"hidden_size\": 32}, \"torch_dtype\": \"float32\"}";
    }

    /**
     * Scout's llama3 rope scaling (factor 16), with the original context {@code old} in it and in the
     * text config (LlamaModel.generate_extra_tensors reads the latter, 8192 without it: Scout's own).
     */
    static String llama3(int old) {
        return "\"rope_scaling\": {\"factor\": 16.0, \"high_freq_factor\": 1.0, \"low_freq_factor\": 1.0, "
                + "\"original_max_position_embeddings\": " + old + ", \"rope_type\": \"llama3\"}, "
                + "\"original_max_position_embeddings\": " + old + ", ";
    }

    /** The checkpoint's tensors: MoE in the layers {@code step} picks ((il + 1) % step == 0), dense MLPs elsewhere. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, int step) {
        return tensors(seed, step, EXPERTS);
    }

    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, int step, int experts) {
        Map<String, long[]> shapes = new TreeMap<>();
        String t = "language_model.";
        shapes.put(t + "model.embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        shapes.put(t + "lm_head.weight", new long[]{VOCAB, HIDDEN});
        shapes.put(t + "model.norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = t + "model.layers." + i + ".";
            shapes.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            shapes.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            for (String n : List.of("q", "k", "v")) {
                shapes.put(p + "self_attn." + n + "_proj.weight", new long[]{(n.equals("q") ? HEADS : KV_HEADS) * (long) HEAD, HIDDEN});
            }
            shapes.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            if ((i + 1) % step == 0) {
                shapes.put(p + "feed_forward.router.weight", new long[]{experts, HIDDEN});
                shapes.put(p + "feed_forward.experts.gate_up_proj", new long[]{experts, HIDDEN, 2L * WIDTH});
                shapes.put(p + "feed_forward.experts.down_proj", new long[]{experts, WIDTH, HIDDEN});
                shapes.put(p + "feed_forward.shared_expert.gate_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "feed_forward.shared_expert.up_proj.weight", new long[]{WIDTH, HIDDEN});
                shapes.put(p + "feed_forward.shared_expert.down_proj.weight", new long[]{HIDDEN, WIDTH});
            } else {
                shapes.put(p + "feed_forward.gate_proj.weight", new long[]{MLP, HIDDEN});
                shapes.put(p + "feed_forward.up_proj.weight", new long[]{MLP, HIDDEN});
                shapes.put(p + "feed_forward.down_proj.weight", new long[]{HIDDEN, MLP});
            }
        }
        shapes.put("vision_model.patch_embedding.linear.weight", new long[]{32, 48});
        shapes.put("multi_modal_projector.linear_1.weight", new long[]{HIDDEN, 32});
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float at(byte[] bytes, long i) {
        return ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN).getFloat(Math.toIntExact(4 * i));
    }

    @Test
    void theTextModelWithItsExpertsSplitAndTransposed() throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(401, 2);
        Path out = tmp.resolve("maverick.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Llama-4-Maverick-tiny", config(2, ""), in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("llama4");
        // Llama4Model.__init__: the dense MLP's width as feed_forward_length, the experts' as expert_feed_forward_length
        assertThat(g.kv.get("llama4.feed_forward_length").asLong()).isEqualTo(MLP);
        assertThat(g.kv.get("llama4.expert_feed_forward_length").asLong()).isEqualTo(WIDTH);
        assertThat(g.kv.get("llama4.interleave_moe_layer_step").asLong()).isEqualTo(2);
        assertThat(g.kv.get("llama4.expert_count").asLong()).isEqualTo(EXPERTS);
        assertThat(g.kv.get("llama4.expert_used_count").asLong()).isEqualTo(1);
        assertThat(g.kv.get("llama4.rope.dimension_count").asLong()).isEqualTo(HEAD);
        List<String> names = g.tensors.stream().map(ReferenceGguf.Tensor::name).toList();
        assertThat(names).contains("blk.0.ffn_gate.weight", "blk.1.ffn_gate_exps.weight", "blk.1.ffn_gate_inp.weight",
                "blk.3.ffn_down_shexp.weight").doesNotContain("blk.0.ffn_gate_exps.weight", "blk.1.ffn_gate.weight")
                .noneMatch(n -> n.contains("vision") || n.contains("mm"));

        // gate_up_proj [E, hidden, 2 I]: ffn_gate_exps [E, I, hidden] is its first I columns transposed, ffn_up_exps the last I
        byte[] gateUp = in.get("language_model.model.layers.1.feed_forward.experts.gate_up_proj").bytes();
        ReferenceGguf.Tensor gate = g.tensor("blk.1.ffn_gate_exps.weight"), up = g.tensor("blk.1.ffn_up_exps.weight");
        assertThat(gate.ne()).containsExactly(HIDDEN, WIDTH, EXPERTS);
        for (int e = 0; e < EXPERTS; e++) {
            for (int j = 0; j < WIDTH; j++) {
                for (int h = 0; h < HIDDEN; h += 7) {
                    long src = ((long) e * HIDDEN + h) * 2 * WIDTH;
                    assertThat(at(gate.bytes(), ((long) e * WIDTH + j) * HIDDEN + h)).isEqualTo(at(gateUp, src + j));
                    assertThat(at(up.bytes(), ((long) e * WIDTH + j) * HIDDEN + h)).isEqualTo(at(gateUp, src + WIDTH + j));
                }
            }
        }
        // down_proj [E, I, hidden] transposed to ffn_down_exps [E, hidden, I]
        byte[] down = in.get("language_model.model.layers.3.feed_forward.experts.down_proj").bytes();
        ReferenceGguf.Tensor d = g.tensor("blk.3.ffn_down_exps.weight");
        assertThat(d.ne()).containsExactly(WIDTH, HIDDEN, EXPERTS);
        assertThat(at(d.bytes(), (2L * HIDDEN + 5) * WIDTH + 9)).isEqualTo(at(down, (2L * WIDTH + 9) * HIDDEN + 5));
    }

    @Test
    void scoutsLlama3ScalingIsItsRopeFreqsTensor() throws IOException {
        Path out = tmp.resolve("scout.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Llama-4-Scout-tiny", config(1, llama3(64)), tensors(402, 1)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.tensors.getFirst().name()).isEqualTo("rope_freqs.weight");
        assertThat(g.tensor("rope_freqs.weight").ne()).containsExactly(HEAD / 2);
        assertThat(g.tensors).noneMatch(t -> t.name().equals("blk.0.ffn_gate.weight"));
    }

    /** Maverick's 128 experts: llama.cpp's llama4 then leaves q and k unnormalized, as Maverick's use_qk_norm false says. */
    @Test
    void maverickWithoutQkNormConvertsWithItsHundredAndTwentyEightExperts() throws IOException {
        Path out = tmp.resolve("maverick128.gguf");
        String config = config(2, "").replace("\"use_qk_norm\": true", "\"use_qk_norm\": false")
                .replace("\"num_local_experts\": " + EXPERTS, "\"num_local_experts\": 128");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Llama-4-Maverick-128", config, tensors(406, 2, 128)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(ReferenceGguf.read(out).tensor("blk.1.ffn_up_exps.weight").ne()).containsExactly(HIDDEN, WIDTH, 128);
        // and 128 experts with the norm: llama.cpp would leave it out
        CorpusCliTest.Run normed = DecoderReference.convert(folder("Llama-4-Maverick-128-normed", config.replace("\"use_qk_norm\": false",
                "\"use_qk_norm\": true"), tensors(407, 2, 128)), "f16", tmp.resolve("normed.gguf"), false);
        assertThat(normed.code()).as(normed.err()).isEqualTo(6);
        assertThat(normed.err()).contains("use_qk_norm").contains("128 experts");
    }

    /** What llama.cpp's llama4 hard-codes, said otherwise by config.json: the file would run as another model. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"attention_chunk_size\": 8192|\"attention_chunk_size\": 4096|attention_chunk_size",
            "\"use_qk_norm\": true|\"use_qk_norm\": false|use_qk_norm",
            "\"attn_scale\": 0.1|\"attn_scale\": 0.2|attn_scale",
            "\"no_rope_layers\": [1, 1, 1, 0]|\"no_rope_layers\": [1, 1, 0, 1]|no_rope_layers"})
    void whatLlamaCppHardCodesIsRefusedWhenTheConfigDiffers(String from, String to, String key) throws IOException {
        Path out = tmp.resolve("refused.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Llama-4-" + key, config(1, "").replace(from, to), tensors(403, 1)),
                "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(6);
        assertThat(r.err()).contains(key).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass (written from transformers' Llama4),
     * 12 tokens, relative to the largest logit, llama.cpp's F16 KV cache modelled. Measured (seed 4):
     * Maverick's layout 1.4e-7, Scout's with its llama3 scaling 1.9e-7, without it 7.3e-5 (single cache
     * values that F32 and float64 round to neighbouring float16s, as chance gives a seed), F16 weights
     * 1.3e-3; deliberately wrong: rope on the NoPE layer too 0.096, the routing weight on the expert's
     * output 0.22, no q/k norm 0.28, gate and up swapped 0.34, rotate-half pairs 0.64, no shared expert 0.72.
     *
     * @param make  {@code make llama4} options beside the tokenizer ({@code ;}-separated)
     * @param wrong the compare options of a deliberately wrong model ({@code ;}-separated), or none
     */
    @ParameterizedTest
    @CsvSource({
            "--seed;4,                 f32, ,                           0,    1e-3",
            "--seed;4,                 f16, ,                           0,    3e-3",
            "--seed;4;--maverick,      f32, ,                           0,    1e-3",
            "--seed;4;--llama3;64,     f32, ,                           0,    1e-3",
            "--seed;4,                 f32, --variant;neox-rope,        0.3,  1e-3",
            "--seed;4,                 f32, --variant;rope-everywhere,  0.05, 1e-3",
            "--seed;4,                 f32, --variant;no-qk-norm,       0.1,  1e-3",
            "--seed;4,                 f32, --mutate;swap-gate-up,      0.1,  1e-3",
            "--seed;4,                 f32, --variant;weight-output,    0.1,  1e-3",
            "--seed;4,                 f32, --mutate;no-shared-expert,  0.3,  1e-3"})
    void llamaCppComputesTheReferenceForwardPass(String make, String dtype, String wrong, double apart, double limit) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> args = new java.util.ArrayList<>(List.of("--tokenizer", tok.get().toString()));
        args.addAll(DecoderReference.options(make));
        DecoderReference.llamaCppComputesTheReference(tmp, "llama4", args, dtype, DecoderReference.options(wrong), apart, limit);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Llama-4-Scout-tiny", config(1, llama3(64)), tensors(404, 1), all),
                new ConverterParityTest.Folder("Llama-4-Maverick-tiny-bf16", config(2, ""), ConverterParityTest.as("BF16", tensors(405, 2)),
                        withAuto));
    }
}
