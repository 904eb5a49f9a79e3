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
import java.util.TreeMap;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A Qwen2.5-VL folder ({@code Qwen2_5_VLForConditionalGeneration}) to GGUF as the converter's
 * {@code Qwen2VLModel} writes its language model: qwen2's tensors, the vision tower left out,
 * the M-RoPE sections as {@code rope.dimension_sections}; the bad inputs.
 * {@link ConverterParityTest} compares such folders with the converter's own files; with the
 * oracles ({@code ORACLE_CACHE}) and Qwen3's tokenizer ({@code AMN_TOKENIZER_QWEN3}) llama.cpp's
 * logits are checked against {@code bench/scripts/decoder_reference.py}'s forward pass.
 */
class Qwen2VlToGgufTest {
    @TempDir
    Path tmp;

    /** Qwen2.5-VL's config.json shape over the tiny qwen2's: {@code sections} the mrope_section (half a head of 8 is 4). */
    static String config(String arch, String sections) {
        return QwenToGgufTest.config("qwen2", false).replace("Qwen2ForCausalLM", arch).replace("\"model_type\": \"qwen2\"", "\"model_type\": \"qwen2_5_vl\"")
                .replace("\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": " + sections + "}, "
                        + "\"vision_config\": {\"hidden_size\": 16, \"depth\": 1}");
    }

    /** The tiny qwen2's tensors and a vision tower's. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, ReferenceSafetensors.Tensor> t = new TreeMap<>(QwenToGgufTest.tensors("qwen2", false, seed));
        Map<String, long[]> vision = new TreeMap<>();
        vision.put("visual.patch_embed.proj.weight", new long[]{16, 3, 2, 14, 14});
        vision.put("visual.blocks.0.norm1.weight", new long[]{16});
        vision.put("visual.merger.mlp.0.weight", new long[]{64, 64});
        t.putAll(DecoderReference.randomF32(vision, new java.util.Random(seed + 1)));
        return t;
    }

    private Path folder(String name, String config, Map<String, ReferenceSafetensors.Tensor> tensors) throws IOException {
        return HfToGgufTest.folder(tmp, name, config, tensors);
    }

    @ParameterizedTest
    @CsvSource({"Qwen2_5_VLForConditionalGeneration", "Qwen2VLForConditionalGeneration"})
    void theLanguageModelWithItsRopeSections(String arch) throws IOException {
        Path out = tmp.resolve("vl.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", folder("Qwen2.5-VL-tiny", config(arch, "[1, 2, 1]"), tensors(171)).toString(), "--to",
                "gguf", "--dtype", "f16", "-o", out.toString(), "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("left out 3 tensors of the vision tower");
        ReferenceGguf g = ReferenceGguf.read(out);
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo("qwen2vl");
        ReferenceGguf.Kv sections = g.kv.get("qwen2vl.rope.dimension_sections");
        ByteBuffer b = ByteBuffer.wrap(sections.value()).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(b.getInt()).as("int32 elements").isEqualTo(5);
        assertThat(b.getLong()).isEqualTo(4);
        List<Integer> got = new ArrayList<>();
        for (int i = 0; i < 4; i++) got.add(b.getInt());
        assertThat(got).containsExactly(1, 2, 1, 0);
        assertThat(g.kv).doesNotContainKey("qwen2vl.rope.scaling.type");
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).noneMatch(n -> n.contains("visual") || n.startsWith("v."))
                .contains("blk.1.attn_q.bias");
    }

    /** Sections that do not cover half a head: llama.cpp's M-RoPE would rotate another share of it. */
    @Test
    void sectionsThatDoNotFitTheHeadAreRefused() throws IOException {
        Path out = tmp.resolve("sections.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("Qwen2.5-VL-sections", config("Qwen2_5_VLForConditionalGeneration", "[1, 2, 2]"),
                tensors(172)), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("mrope_section").doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits of a Qwen2.5-VL file on text against the reference forward pass (qwen2's:
     * M-RoPE gives every section the token's position): F32 within 1e-4 relative (measured 6.7e-5),
     * F16 3e-3 (1.0e-3).
     */
    @ParameterizedTest
    @CsvSource({"f32", "f16"})
    void llamaCppComputesTheReferenceForwardPass(String dtype) throws Exception {
        Optional<Path> tok = DecoderReference.tokenizerFolder("AMN_TOKENIZER_QWEN3");
        Assumptions.assumeTrue(tok.isPresent(), "AMN_TOKENIZER_QWEN3 not set: llama.cpp needs the vocabulary; not checked");
        DecoderReference.oracles();
        Path dir = tmp.resolve("qwen2vl-forward");
        DecoderReference.make(tmp, "qwen2", dir.toString(), "--tokenizer", tok.get().toString(), "--seed", "5");
        Path config = dir.resolve("config.json");
        // head_dim 16: sections 2, 3, 3
        Files.writeString(config, Files.readString(config).replace("\"Qwen2ForCausalLM\"", "\"Qwen2_5_VLForConditionalGeneration\"")
                .replace("\"rope_scaling\": null", "\"rope_scaling\": {\"type\": \"mrope\", \"mrope_section\": [2, 3, 3]}"));
        DecoderReference.llamaCppComputesTheReferenceOf(tmp, dir, dtype, null, 0, dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files. */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        return List.of(new ConverterParityTest.Folder("Qwen2.5-VL-tiny", config("Qwen2_5_VLForConditionalGeneration", "[1, 2, 1]"), tensors(173), all),
                new ConverterParityTest.Folder("Qwen2-VL-tiny-bf16", config("Qwen2VLForConditionalGeneration", "[1, 2, 1]"),
                        ConverterParityTest.as("BF16", tensors(174)), withAuto));
    }
}
