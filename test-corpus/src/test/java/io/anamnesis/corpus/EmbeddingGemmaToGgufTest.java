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
 * EmbeddingGemma folders ({@code Gemma3TextModel}: google/embeddinggemma-300m) to GGUF as the converter's
 * {@code EmbeddingGemma} writes them: Gemma 3's tensors (saved without {@code model.}), norm shifts, keys and vocabulary
 * under arch {@code gemma-embedding}, the sliding window as config.json gives it, the pooling type, the Dense modules
 * left out with a note; the bad inputs. {@link ConverterParityTest} compares such folders with the converter's own files;
 * with the oracles and the corpus's SentencePiece model, llama.cpp's embeddings are checked against
 * {@code decoder_reference.py}'s Gemma 3 attending both ways ({@link EncoderReference}).
 */
class EmbeddingGemmaToGgufTest {
    @TempDir
    Path tmp;

    /** Gemma3ToGgufTest's config as EmbeddingGemma's: Gemma3TextModel, bidirectional, a window of 6. */
    static Map<String, Object> config() {
        Map<String, Object> c = Gemma3ToGgufTest.config();
        c.put("architectures", List.of("Gemma3TextModel"));
        c.put("use_bidirectional_attention", true);
        c.put("sliding_window", 6);
        return c;
    }

    /** Gemma3ToGgufTest's tensors (tied) under the base model's names, without {@code model.}. */
    static Map<String, ReferenceSafetensors.Tensor> tensors(long seed) {
        Map<String, ReferenceSafetensors.Tensor> out = new TreeMap<>();
        DecoderReference.randomF32(Gemma3ToGgufTest.shapes(false), new Random(seed)).forEach((k, v) -> out.put(k.substring("model.".length()), v));
        return out;
    }

    /** sentence-transformers' files for EmbeddingGemma: mean pooling, then two Dense modules. */
    static Map<String, String> sentenceTransformers() {
        Map<String, String> files = new TreeMap<>(BertToGgufTest.sentenceTransformers("pooling_mode_mean_tokens"));
        files.put("modules.json", "[{\"idx\": 0, \"name\": \"0\", \"path\": \"\", \"type\": \"sentence_transformers.models.Transformer\"}, "
                + "{\"idx\": 1, \"name\": \"1\", \"path\": \"1_Pooling\", \"type\": \"sentence_transformers.models.Pooling\"}, "
                + "{\"idx\": 2, \"name\": \"2\", \"path\": \"2_Dense\", \"type\": \"sentence_transformers.models.Dense\"}, "
                + "{\"idx\": 3, \"name\": \"3\", \"path\": \"3_Dense\", \"type\": \"sentence_transformers.models.Dense\"}, "
                + "{\"idx\": 4, \"name\": \"4\", \"path\": \"4_Normalize\", \"type\": \"sentence_transformers.models.Normalize\"}]");
        return files;
    }

    private Path folder(String name, Map<String, Object> config) throws IOException {
        Path dir = HfToGgufTest.folder(tmp, name, ConverterParityTest.json(config), tensors(6001));
        for (var f : sentenceTransformers().entrySet()) {
            Files.createDirectories(dir.resolve(f.getKey()).getParent());
            Files.writeString(dir.resolve(f.getKey()), f.getValue());
        }
        return dir;
    }

    @Test
    void gemma3sLayoutUnderItsArchitectureTheWindowAndThePooling() throws IOException {
        Path dir = folder("embeddinggemma-tiny", config());
        Path out = tmp.resolve("embeddinggemma.gguf");
        CorpusCliTest.Run r = CorpusCliTest.amn("convert", dir.toString(), "--to", "gguf", "--dtype", "f16", "-o", out.toString(),
                "--no-vocab");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out() + r.err()).contains("left out the sentence-transformers Dense modules 2_Dense, 3_Dense");
        ReferenceGguf g = ReferenceGguf.read(out);
        String a = "gemma-embedding";
        assertThat(g.kv.get("general.architecture").asString()).isEqualTo(a);
        assertThat(List.copyOf(g.kv.keySet())).containsSubsequence(a + ".attention.head_count_kv", a + ".rope.freq_base",
                a + ".attention.sliding_window", a + ".pooling_type", "general.quantization_version");
        assertThat(g.kv.get(a + ".attention.sliding_window").asLong()).isEqualTo(6);
        assertThat(g.kv.get(a + ".pooling_type").asLong()).isEqualTo(1);
        // the bare names mapped; the norms shifted by 1 (F32), no output head
        assertThat(g.tensors.stream().map(ReferenceGguf.Tensor::name)).contains("token_embd.weight", "output_norm.weight",
                "blk.0.post_ffw_norm.weight", "blk.0.attn_q_norm.weight").doesNotContain("output.weight");
        float stored = java.nio.ByteBuffer.wrap(tensors(6001).get("norm.weight").bytes()).order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat();
        float written = java.nio.ByteBuffer.wrap(g.tensor("output_norm.weight").bytes()).order(java.nio.ByteOrder.LITTLE_ENDIAN).getFloat();
        assertThat(written).isEqualTo(stored + 1f);
    }

    /** A causal Gemma3TextModel, queries scaled otherwise, a missing window: exit 6 or 3, nothing written. */
    @ParameterizedTest
    @CsvSource(delimiter = '|', value = {
            "use_bidirectional_attention|false|6|use_bidirectional_attention is not true",
            "query_pre_attn_scalar|64|6|query_pre_attn_scalar is 64",
            "sliding_window|-|3|sliding_window"})
    void refused(String key, String value, int code, String message) throws IOException {
        Map<String, Object> c = config();
        if (value.equals("-")) c.remove(key);
        else c.put(key, value.equals("false") ? Boolean.FALSE : Integer.valueOf(value));
        Path out = tmp.resolve("refused.gguf");
        CorpusCliTest.Run r = DecoderReference.convert(folder("refused", c), "f16", out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(code);
        assertThat(r.err()).contains(message).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /**
     * llama.cpp's outputs of 12 tokens (each token's, and mean-pooled) against the reference: Gemma 3's forward pass
     * attending both ways within half the window on each side in the local layers, ggml's F16 GELU table modelled, K and
     * V unrounded (no cache): F32 within 1e-3 of the largest value (measured 3.2-3.6e-4 over three seeds), F16 3e-3.
     * Attending causally lands 0.64 off, without the window 0.85; the window's edge counted exclusive (|d| < half) 0.45.
     */
    @ParameterizedTest
    @CsvSource({"f32, causal", "f16, no-window"})
    void llamaCppComputesTheReferenceForwardPass(String dtype, String wrong) throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's tokenizer.model is not here: llama.cpp needs a vocabulary; not checked");
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("embeddinggemma-forward");
        DecoderReference.make(tmp, "embeddinggemma", dir.toString(), "--sp", sp.get().toString(), "--seed", "2");
        EncoderReference.llamaCppComputesTheReference(tmp, oracles, dir, dtype, dtype.equals("f32") ? 1e-3 : 3e-3, true, wrong, 0.1,
                "--tokens", "2,7,42,100,3,250,17,64,5,9,200,30");
    }

    /** Q4_K_M in the same pass: byte for byte llama_model_quantize of the converter's default output. */
    @Test
    void aQuantizedConversionIsLlamaQuantizeOfTheConvertersFile() throws Exception {
        Optional<Path> sp = DecoderReference.sentencePiece();
        Assumptions.assumeTrue(sp.isPresent(), "the corpus's tokenizer.model is not here (the embeddings are cut to it); not checked");
        Path oracles = DecoderReference.oracles();
        Path dir = tmp.resolve("embeddinggemma-quantize");
        DecoderReference.make(tmp, "embeddinggemma", dir.toString(), "--sp", sp.get().toString(), "--seed", "9");
        EncoderReference.quantizedIsLlamaQuantize(tmp, oracles, dir, "Q4_K_M");
    }

    /** The folders {@link ConverterParityTest} compares with the converter's own files (a tokenizer.json to cut to). */
    static List<ConverterParityTest.Folder> parityFolders(List<String> all, List<String> withAuto) {
        Map<String, String> files = new TreeMap<>(sentenceTransformers());
        files.put("tokenizer.json", ConverterParityTest.gemma3Tokenizer(56, 4));
        String json = ConverterParityTest.json(config());
        return List.of(new ConverterParityTest.Folder("embeddinggemma-tiny", json, tensors(6002), files, all),
                new ConverterParityTest.Folder("embeddinggemma-tiny-bf16", json, ConverterParityTest.as("BF16", tensors(6003)), files,
                        withAuto));
    }
}
