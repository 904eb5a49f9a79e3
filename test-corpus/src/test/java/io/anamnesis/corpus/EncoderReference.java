package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code bench/scripts/encoder_reference.py} from the encoder families' tests (BERT, DistilBERT, nomic-bert,
 * XLM-RoBERTa): a tiny random folder made, and llama.cpp's embeddings of a GGUF against its forward pass.
 */
final class EncoderReference {
    private EncoderReference() {
    }

    static final Path SCRIPT = Path.of("..", "bench", "scripts", "encoder_reference.py").toAbsolutePath().normalize();

    /** {@code encoder_reference.py make ARCH DIR ARGS...}. */
    static void make(Path tmp, String arch, Path dir, List<String> args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", SCRIPT.toString(), "make", arch, dir.toString()));
        cmd.addAll(args);
        DecoderReference.run(tmp, cmd);
    }

    /**
     * {@code encoder_reference.py compare}: llama.cpp's per-token outputs (and pooled embedding, when the folder pools)
     * of {@code gguf} against the forward pass of {@code dir} with weights rounded as {@code weights} says.
     */
    static JsonNode compare(Path tmp, Path dir, Path gguf, Path oracles, String weights, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", SCRIPT.toString(), "compare", dir.toString(), gguf.toString(),
                oracles.toString(), "--weights", weights));
        cmd.addAll(List.of(extra));
        return LlamaRunOracleTest.JSON.readTree(DecoderReference.run(tmp, cmd));
    }

    /**
     * {@code dir} converted to the llama-quantize {@code type} in one pass is byte for byte llama.cpp's
     * {@code llama_model_quantize} (the oracles' {@code llama_ref.py quantize}) of its {@code --dtype auto} file, the
     * converter's default output (both without a vocabulary).
     */
    static void quantizedIsLlamaQuantize(Path tmp, Path oracles, Path dir, String type) throws Exception {
        Path auto = tmp.resolve("auto.gguf"), ref = tmp.resolve("ref.gguf"), ours = tmp.resolve("ours.gguf");
        CorpusCliTest.Run a = DecoderReference.convert(dir, "auto", auto, false);
        assertThat(a.code()).as(a.err()).isZero();
        DecoderReference.run(tmp, List.of("python3", oracles.resolve("llama_ref.py").toString(), "quantize", auto.toString(),
                ref.toString(), type));
        CorpusCliTest.Run q = DecoderReference.convert(dir, type.toLowerCase(java.util.Locale.ROOT), ours, false);
        assertThat(q.code()).as(q.err()).isZero();
        assertThat(Files.readAllBytes(ours)).as(type + ": byte for byte llama_model_quantize of the converter's file")
                .isEqualTo(Files.readAllBytes(ref));
    }

    /**
     * {@code dir} converted to {@code dtype} with its vocabulary, then llama.cpp's per-token outputs (and, with
     * {@code pooled}, its pooled embedding) within {@code limit} of the reference's largest value, and the deliberately
     * wrong model {@code wrong} ({@code compare --variant}) more than {@code apart} off; {@code compareArgs} go to every
     * comparison (the tokens, say). Returns the GGUF written.
     */
    static Path llamaCppComputesTheReference(Path tmp, Path oracles, Path dir, String dtype, double limit, boolean pooled,
                                             String wrong, double apart, String... compareArgs) throws Exception {
        Path out = tmp.resolve(dir.getFileName() + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = DecoderReference.convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = compare(tmp, dir, out, oracles, dtype, compareArgs);
        assertThat(cmp.path("tokens_max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(limit);
        if (pooled) assertThat(cmp.path("pooled_max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(limit);
        List<String> variant = new ArrayList<>(List.of(compareArgs));
        variant.addAll(List.of("--variant", wrong));
        JsonNode w = compare(tmp, dir, out, oracles, dtype, variant.toArray(String[]::new));
        assertThat(w.path("tokens_max_rel_diff").asDouble()).as(wrong + " is told apart: " + w).isGreaterThan(apart);
        return out;
    }
}
