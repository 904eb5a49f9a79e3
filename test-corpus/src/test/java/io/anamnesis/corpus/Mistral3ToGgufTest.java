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
 * A Mistral Small 3.x folder ({@code Mistral3ForConditionalGeneration}) to GGUF as the
 * converter's {@code Mistral3Model} writes it: the text model (its {@code text_config}, its
 * tensors under {@code language_model.}, in the layouts transformers saved before and after
 * 4.52) as llama writes it under the arch {@code mistral3}, the vision tower and projector left
 * out and said so; Ministral 3 (yarn with llama 4's query scaling, two keys of its own), and its
 * text-only {@code Ministral3ForCausalLM}; a sliding window, Mistral 4 and a missing key refused.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Mistral3ToGgufTest {
    static final int VOCAB = 64, HIDDEN = 64, FF = 96, LAYERS = 2, HEADS = 4, KV_HEADS = 2, HEAD = 32;

    @TempDir
    Path tmp;

    /** Mistral Small 3.1's config.json shape, sizes shrunk; {@code text} more entries of text_config. */
    static String config(String text) {
        return "{\"architectures\": [\"Mistral3ForConditionalGeneration\"], \"model_type\": \"mistral3\", \"image_token_index\": 10, "
                + "\"projector_hidden_act\": \"gelu\", \"spatial_merge_size\": 2, \"multimodal_projector_bias\": false, "
                + "\"text_config\": {\"model_type\": \"mistral\", \"vocab_size\": " + VOCAB + ", \"hidden_size\": " + HIDDEN + ", "
                + "\"intermediate_size\": " + FF + ", \"num_hidden_layers\": " + LAYERS + ", \"num_attention_heads\": " + HEADS + ", "
                + "\"num_key_value_heads\": " + KV_HEADS + ", \"head_dim\": " + HEAD + ", \"max_position_embeddings\": 131072, "
                + "\"rms_norm_eps\": 1e-05, \"rope_theta\": 1000000000.0, " + text + "\"sliding_window\": null}, "
                + "\"vision_config\": {\"hidden_size\": 16, \"model_type\": \"pixtral\", \"num_hidden_layers\": 1}, "
                + "\"torch_dtype\": \"float32\", \"vision_feature_layer\": -1}";
    }

    /** Ministral 3's rope parameters (transformers 5's, holding the base; Ministral 3's values but an original context of 16). */
    static final String MINISTRAL3_ROPE = "\"rope_parameters\": {\"beta_fast\": 32.0, \"beta_slow\": 1.0, \"factor\": 16.0, "
            + "\"llama_4_scaling_beta\": 0.1, \"mscale\": 1.0, \"mscale_all_dim\": 1.0, \"original_max_position_embeddings\": 16, "
            + "\"rope_theta\": 1000000.0, \"rope_type\": \"yarn\"}, ";

    /** Ministral 3's config.json: text_config model_type ministral3 with {@code rope} as its rope parameters, no rope_theta beside them. */
    static String ministral3(String rope) {
        return config(rope).replace("\"model_type\": \"mistral\"", "\"model_type\": \"ministral3\"")
                .replace("\"rope_theta\": 1000000000.0, ", "").replace("\"max_position_embeddings\": 131072", "\"max_position_embeddings\": 256");
    }

    /**
     * The text model's tensors under {@code language_model.model.*} and {@code language_model.lm_head}
     * (or, {@code newLayout}, {@code model.language_model.*} and {@code lm_head}), and a vision
     * tower and projector.
     */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed, boolean newLayout) {
        Map<String, long[]> text = new TreeMap<>();
        text.put("embed_tokens.weight", new long[]{VOCAB, HIDDEN});
        text.put("norm.weight", new long[]{HIDDEN});
        for (int i = 0; i < LAYERS; i++) {
            String p = "layers." + i + ".";
            text.put(p + "input_layernorm.weight", new long[]{HIDDEN});
            text.put(p + "post_attention_layernorm.weight", new long[]{HIDDEN});
            text.put(p + "self_attn.q_proj.weight", new long[]{(long) HEADS * HEAD, HIDDEN});
            text.put(p + "self_attn.k_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            text.put(p + "self_attn.v_proj.weight", new long[]{(long) KV_HEADS * HEAD, HIDDEN});
            text.put(p + "self_attn.o_proj.weight", new long[]{HIDDEN, (long) HEADS * HEAD});
            text.put(p + "mlp.gate_proj.weight", new long[]{FF, HIDDEN});
            text.put(p + "mlp.up_proj.weight", new long[]{FF, HIDDEN});
            text.put(p + "mlp.down_proj.weight", new long[]{HIDDEN, FF});
        }
        Map<String, long[]> shapes = new TreeMap<>();
        text.forEach((k, v) -> shapes.put((newLayout ? "model.language_model." : "language_model.model.") + k, v));
        shapes.put(newLayout ? "lm_head.weight" : "language_model.lm_head.weight", new long[]{VOCAB, HIDDEN});
        String vision = newLayout ? "model.vision_tower." : "vision_tower.", projector = newLayout ? "model.multi_modal_projector." : "multi_modal_projector.";
        shapes.put(vision + "patch_conv.weight", new long[]{16, 3, 4, 4});
        shapes.put(vision + "ln_pre.weight", new long[]{16});
        shapes.put(projector + "linear_1.weight", new long[]{HIDDEN, 64});
        return DecoderReference.randomF32(shapes, new Random(seed));
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    private static float f32(byte[] b, long index) {
        return ByteBuffer.wrap(b).order(ByteOrder.LITTLE_ENDIAN).getFloat((int) (4 * index));
    }

    @ParameterizedTest
    @CsvSource({"false", "true"})
    void theTextModelAsLlamaWritesItUnderMistral3(boolean newLayout) throws IOException {
        Map<String, ReferenceSafetensors.Tensor> in = tensors(91, newLayout);
        Path out = tmp.resolve("m3.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("Mistral-Small-3.1-tiny", config(""), in).toString(), "--to", "gguf",
                "--dtype", "f32", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("left out 3 tensors of the vision tower and multimodal projector");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("mistral3");
        assertThat(g.kv.get("mistral3.vocab_size").asLong()).isEqualTo(VOCAB);
        // head_dim, not hidden_size / num_attention_heads (16)
        assertThat(g.kv.get("mistral3.rope.dimension_count").asLong()).isEqualTo(HEAD);
        assertThat(g.kv.get("mistral3.attention.key_length").asLong()).isEqualTo(HEAD);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).hasSize(2 + 1 + 9 * LAYERS)
                .contains("output.weight", "token_embd.weight", "blk.1.ffn_gate.weight").noneMatch(n -> n.contains("vision") || n.contains("mm"));
        // q rows permuted per head as llama's: output row h*d + 2i + j is input row h*d + j*d/2 + i
        String prefix = newLayout ? "model.language_model." : "language_model.model.";
        byte[] q = in.get(prefix + "layers.1.self_attn.q_proj.weight").bytes(), got = g.tensor("blk.1.attn_q.weight").bytes();
        for (int h = 0; h < HEADS; h++) {
            for (int w = 0; w < HEAD; w++) {
                int src = h * HEAD + (w % 2) * (HEAD / 2) + w / 2;
                for (int c = 0; c < HIDDEN; c++) {
                    assertThat(f32(got, (long) (h * HEAD + w) * HIDDEN + c)).isEqualTo(f32(q, (long) src * HIDDEN + c));
                }
            }
        }
        // v is not permuted
        assertThat(g.tensor("blk.0.attn_v.weight").bytes()).isEqualTo(in.get(prefix + "layers.0.self_attn.v_proj.weight").bytes());
    }

    /** Ministral 3: llama's keys with yarn's, then the yarn log multiplier (mscale_all_dim as it is) and the query scaling's beta. */
    @ParameterizedTest
    @CsvSource({"Mistral3ForConditionalGeneration", "Ministral3ForCausalLM"})
    void ministral3sYarnAndQueryScaling(String arch) throws IOException {
        Path out = tmp.resolve("ministral3.gguf");
        String config = ministral3(MINISTRAL3_ROPE);
        Map<String, ReferenceSafetensors.Tensor> in = tensors(95, true);
        if (arch.equals("Ministral3ForCausalLM")) {
            // the text-only checkpoint: the text config at the top level, model.* and lm_head
            config = config.replace("\"Mistral3ForConditionalGeneration\"", "\"Ministral3ForCausalLM\"");
            Map<String, ReferenceSafetensors.Tensor> text = new TreeMap<>();
            in.forEach((k, v) -> {
                if (k.startsWith("model.language_model.")) text.put("model." + k.substring("model.language_model.".length()), v);
                else if (k.equals("lm_head.weight")) text.put(k, v);
            });
            in = text;
        }
        CorpusCliTest.Run r = DecoderReference.convert(folder("Ministral-3-3B-tiny", config, in), "f32", out, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "mistral3";
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo(a);
        assertThat(g.kv.get(a + ".rope.scaling.type").asString()).isEqualTo("yarn");
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".rope.scaling.factor").asLong())).isEqualTo(16f);
        assertThat(g.kv.get(a + ".rope.scaling.original_context_length").asLong()).isEqualTo(16);
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".rope.freq_base").asLong())).as("from the rope parameters").isEqualTo(1e6f);
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".rope.scaling.yarn_log_multiplier").asLong())).as("mscale_all_dim as it is")
                .isEqualTo(1f);
        assertThat(Float.intBitsToFloat((int) g.kv.get(a + ".attention.temperature_scale").asLong())).isEqualTo(0.1f);
        List<String> keys = List.copyOf(g.kv.keySet());
        assertThat(keys.indexOf(a + ".attention.temperature_scale")).as("after llama's keys, as Ministral3Model adds it")
                .isEqualTo(keys.indexOf(a + ".rope.scaling.yarn_log_multiplier") + 1)
                .isGreaterThan(keys.indexOf(a + ".rope.dimension_count"));
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("output.weight", "blk.1.attn_q.weight")
                .noneMatch(n -> n.contains("vision"));
    }

    /**
     * Ministral 3 Instruct ships static FP8: E4M3 weights with a per-tensor {@code weight_scale_inv} and an
     * {@code activation_scale} beside each, which the converter's fp8 dequantization drops. Converted straight, it
     * is the file of its recovered BF16 folder (power-of-two scales: the recovery is exact), the activation scales
     * left out and said so.
     */
    @ParameterizedTest
    @CsvSource({"f16", "q8_0"})
    void ministral3sStaticFp8ConvertsAsItsRecoveredFolder(String outtype) throws IOException {
        Map<String, ReferenceSafetensors.Tensor> bf16 = tensors(99, true), fp8 = new TreeMap<>();
        Random random = new Random(23);
        for (var e : bf16.entrySet()) {
            String name = e.getKey();
            long[] shape = e.getValue().shape();
            if (!name.startsWith("model.language_model.layers.") || shape.length != 2) {
                fp8.put(name, e.getValue());
                continue;
            }
            byte[] codes = new byte[(int) (shape[0] * shape[1])];
            for (int i = 0; i < codes.length; i++) {
                int b;
                do b = random.nextInt(256); while ((b & 0x7F) == 0x7F);
                codes[i] = (byte) b;
            }
            fp8.put(name, new ReferenceSafetensors.Tensor("F8_E4M3", shape, codes));
            String base = name.substring(0, name.length() - "weight".length());
            fp8.put(base + "weight_scale_inv", scalar((float) Math.scalb(1.0, -3 - random.nextInt(4))));
            fp8.put(base + "activation_scale", scalar(0.75f));
        }
        String config = ministral3(MINISTRAL3_ROPE).replaceFirst("\\{", "{\"quantization_config\": {\"quant_method\": \"fp8\", "
                + "\"activation_scheme\": \"static\", \"weight_block_size\": null, \"modules_to_not_convert\": "
                + "[\"model.vision_tower\", \"model.multi_modal_projector\", \"lm_head\"]}, ");
        Path straightDir = folder("fp8/Ministral-3-8B-Instruct-tiny", config, fp8);
        Path recoveredDir = Files.createDirectories(tmp.resolve("bf16/Ministral-3-8B-Instruct-tiny"));
        Files.writeString(recoveredDir.resolve("config.json"), config.replaceFirst("\"quantization_config\": \\{[^}]*\\}, ", ""));
        CorpusCliTest.Run rec = CorpusCliTest.amn("remember", straightDir.resolve("model.safetensors").toString(), "--to", "bf16",
                "-o", recoveredDir.resolve("model.safetensors").toString(), "-q");
        assertThat(rec.code()).as(rec.err()).isZero();
        Map<String, ReferenceSafetensors.Tensor> recovered = new TreeMap<>(ReferenceSafetensors.read(recoveredDir.resolve("model.safetensors")));
        assertThat(recovered).doesNotContainKey("model.language_model.layers.0.self_attn.q_proj.weight_scale_inv")
                .containsKey("model.language_model.layers.0.self_attn.q_proj.activation_scale");
        // a BF16 checkpoint has no activation scales (the converter would stop on them without the fp8 config)
        recovered.keySet().removeIf(k -> k.endsWith(".activation_scale"));
        HfToGgufTest.writeSafetensors(recoveredDir.resolve("model.safetensors"), recovered);
        Path straight = tmp.resolve("straight.gguf"), via = tmp.resolve("via.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", straightDir.toString(), "--to", "gguf", "--dtype", outtype, "-o",
                straight.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("left out " + (7 * LAYERS) + " FP8 activation scales");
        CorpusCliTest.Run v = DecoderReference.convert(recoveredDir, outtype, via, false);
        assertThat(v.code()).as(v.err()).isZero();
        ReferenceGguf g = ReferenceGguf.read(straight);
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).noneMatch(n -> n.contains("scale"));
        assertThat(Files.readAllBytes(straight)).as(outtype + ": the FP8 folder straight = its recovered BF16 folder")
                .isEqualTo(Files.readAllBytes(via));
    }

    private static ReferenceSafetensors.Tensor scalar(float v) {
        return new ReferenceSafetensors.Tensor("F32", new long[0], ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putFloat(v).array());
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            // llama.cpp's mistral3 takes mscale as 1: another gives transformers another attention factor
            "\"mscale\": 1.0|\"mscale\": 2.0|6|mscale",
            // Ministral3Model asserts a yarn rope
            "\"rope_type\": \"yarn\"|\"rope_type\": \"default\"|3|rope_type",
            // Ministral3Model reads it (a KeyError without)
            "\"llama_4_scaling_beta\": 0.1, |''|3|llama_4_scaling_beta",
            "\"mscale_all_dim\": 1.0, |''|3|mscale_all_dim"})
    void ministral3sRopeLlamaCppWouldRunOtherwiseIsRefused(String from, String to, int exit, String named) throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Ministral-bad", ministral3(MINISTRAL3_ROPE.replace(from,
                to.equals("''") ? "" : to)), tensors(96, true)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(named).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            // Mistral 4: DeepSeek-V2's layout under arch mistral4
            "\"model_type\": \"mistral\"|\"model_type\": \"mistral4\"|6|mistral4",
            // transformers' Mistral attends within its window, llama.cpp's mistral3 over the whole context
            "\"sliding_window\": null|\"sliding_window\": 4096|6|sliding_window",
            // read raw, MistralConfig's default not guessed
            "\"rope_theta\": 1000000000.0, |'' |3|rope_theta"})
    void whatIsNotConvertedIsRefused(String from, String to, int exit, String named) throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Mistral-bad", config("").replace(from, to.equals("''") ? "" : to),
                tensors(92, false)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(named).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** llama.cpp's logits against the reference forward pass (F32 within 1e-4 relative, measured 1.3e-7; F16 3e-3, 8.0e-4). */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,--new-layout"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String layout) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        List<String> make = new ArrayList<>(List.of("--tokenizer", tok.get().toString(), "--seed", "3"));
        if (layout != null) make.add(layout);
        DecoderReference.llamaCppComputesTheReference(tmp, "mistral3", make, dtype, (List<String>) null, 0);
    }

    /**
     * Ministral 3 (yarn over an original context of 4, then the queries scaled by 1 + 0.1 ln(1 + floor(pos / 4))):
     * F32 within 1e-4 relative (measured 1.4e-7), F16 3e-3 (1.1e-3); the query scaling left out 0.078 off, the yarn
     * scaling 0.40.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32, --variant;no-query-scale", "f32, --no-rope-scaling"})
    void llamaCppComputesMinistral3sForwardPass(String dtype, String wrong) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "mistral3", List.of("--ministral3", "--new-layout", "--tokenizer",
                tok.get().toString(), "--seed", "3"), dtype, DecoderReference.options(wrong), 0.05);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Mistral-Small-3.1-tiny", config(""), tensors(93, false), all),
                new ConverterParityTest.Folder("Mistral-Small-3.2-tiny-bf16", config(""), ConverterParityTest.as("BF16", tensors(94, true)),
                        withAuto),
                new ConverterParityTest.Folder("Ministral-3-3B-tiny", ministral3(MINISTRAL3_ROPE), tensors(97, true), all),
                new ConverterParityTest.Folder("Ministral-3-8B-tiny-bf16", ministral3(MINISTRAL3_ROPE), ConverterParityTest.as("BF16",
                        tensors(98, false)), withAuto));
    }
}
