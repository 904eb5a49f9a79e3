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
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A SmolLM3 folder ({@code SmolLM3ForCausalLM}) to GGUF as the converter's {@code SmolLM3Model}
 * writes it: llama under the architecture name {@code smollm3}. Its layers without rope are
 * laid out by llama.cpp's smollm3 graph itself (every fourth), so a config.json that lays them
 * out otherwise is refused. {@link ConverterParityTest} compares such folders with the
 * converter's own files; with the oracles ({@code ORACLE_CACHE}) and the corpus's SentencePiece
 * tokenizer.model, llama.cpp's logits of a converted four-layer folder are checked against
 * {@code bench/scripts/decoder_reference.py}'s forward pass (skipped, saying so, without them).
 */
class SmolLm3ToGgufTest {
    @TempDir
    Path tmp;

    /** A tiny SmolLM3 config.json with Llama3RopeToGgufTest's sizes (2 layers) and {@code noRope} (more top-level entries). */
    static String config(String noRope) {
        return Llama3RopeToGgufTest.config("null", noRope)
                .replace("\"LlamaForCausalLM\"", "\"SmolLM3ForCausalLM\"").replace("\"model_type\": \"llama\"", "\"model_type\": \"smollm3\"");
    }

    static final String NO_ROPE = "\"no_rope_layer_interval\": 4, \"no_rope_layers\": [1, 1], ";

    private Path folder(String name, String config) throws IOException {
        Path dir = Files.createDirectories(tmp.resolve(name));
        Files.writeString(dir.resolve("config.json"), config);
        HfToGgufTest.writeSafetensors(dir.resolve("model.safetensors"), Llama3RopeToGgufTest.tensors(41));
        return dir;
    }

    /** llama's keys under smollm3's name, and llama's tensors, names, types and bytes. */
    @Test
    void itIsLlamaUnderAnotherName() throws IOException {
        Path a = tmp.resolve("smollm3.gguf"), b = tmp.resolve("llama.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("s/SmolLM3-tiny", config(NO_ROPE)), "f16", a, false);
        assertThat(r.code()).as(r.err()).isZero();
        r = DecoderReference.convert(folder("l/SmolLM3-tiny", Llama3RopeToGgufTest.config("null", "")), "f16", b, false);
        assertThat(r.code()).as(r.err()).isZero();
        ReferenceGguf smol = ReferenceGguf.read(a), llama = ReferenceGguf.read(b);
        assertThat(smol.kv.get("general.architecture").asString()).isEqualTo("smollm3");
        List<String> smolKeys = new ArrayList<>(), llamaKeys = new ArrayList<>();
        smol.kv.keySet().forEach(k -> smolKeys.add(k.replace("smollm3.", "ARCH.")));
        llama.kv.keySet().forEach(k -> llamaKeys.add(k.replace("llama.", "ARCH.")));
        assertThat(smolKeys).containsExactlyElementsOf(llamaKeys);
        assertThat(smol.kv.get("smollm3.rope.dimension_count").asLong()).isEqualTo(Llama3RopeToGgufTest.HEAD);
        assertThat(smol.tensors).hasSameSizeAs(llama.tensors);
        for (int i = 0; i < llama.tensors.size(); i++) {
            assertThat(smol.tensors.get(i).name()).isEqualTo(llama.tensors.get(i).name());
            assertThat(smol.tensors.get(i).bytes()).as(smol.tensors.get(i).name()).isEqualTo(llama.tensors.get(i).bytes());
        }
    }

    /** Hugging Face's default layout is llama.cpp's: no key needed. */
    @Test
    void withoutNoRopeKeysItConverts() throws IOException {
        CorpusCliTest.Run r = DecoderReference.convert(folder("SmolLM3-default", config("")), "f16", tmp.resolve("default.gguf"), false);
        assertThat(r.code()).as(r.err()).isZero();
    }

    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "\"no_rope_layers\": [1, 1]|\"no_rope_layers\": [1, 0]|6|layer 1 no rope",
            "\"no_rope_layer_interval\": 4|\"no_rope_layer_interval\": 2|6|no_rope_layer_interval is 2",
            "\"no_rope_layers\": [1, 1]|\"no_rope_layers\": [1]|3|no_rope_layers",
            "\"no_rope_layers\": [1, 1]|\"no_rope_layers\": [1, 2]|3|not 0 or 1"})
    void aLayoutLlamaCppWouldNotComputeIsRefused(String from, String to, int exit, String message) throws IOException {
        Path out = tmp.resolve("bad.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("SmolLM3-bad", config(NO_ROPE.replace(from, to))), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(message).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's logits against the reference forward pass of a four-layer folder (layer 3
     * without rope): F32 within 1e-4 relative (measured 1.4e-7), F16 3e-3 (1.4e-3); the same
     * file against a forward pass with rope in every layer 0.13 off.
     */
    @ParameterizedTest
    @CsvSource({"f32,", "f16,", "f32,rope-everywhere"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String variant) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's SentencePiece tokenizer.model is not here: llama.cpp needs a vocabulary; not checked");
        DecoderReference.llamaCppComputesTheReference(tmp, "smollm3", List.of("--sp", sp.get().toString(), "--seed", "5"), dtype, variant, 0.05);
    }
}
