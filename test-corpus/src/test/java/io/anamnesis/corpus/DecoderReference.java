package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import org.junit.jupiter.api.Assumptions;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * What the HF-to-GGUF architecture tests share: a folder converted through {@code amn}, and
 * llama.cpp's logits of the result (the oracles' {@code llama_ref.py}) against
 * {@code bench/scripts/decoder_reference.py}, an independent forward pass of the folder. A
 * test that needs what is not on this machine (the oracles, the script, a tokenizer) is
 * skipped, saying which.
 */
final class DecoderReference {
    private DecoderReference() {
    }

    static final Path SCRIPT = Path.of("..", "bench", "scripts", "decoder_reference.py").toAbsolutePath().normalize();

    /** The oracles folder beside the corpus, when llama.cpp's oracle and the script are there; else the test is skipped. */
    static Path oracles() {
        Path oracles = CorpusCase.root().map(r -> r.toAbsolutePath().getParent().resolve("tools/oracles")).orElse(Path.of("none"));
        Optional<String> missing = LlamaRunOracleTest.oracleMissing(oracles.resolve("llama_ref.py"));
        Assumptions.assumeTrue(missing.isEmpty(), () -> "llama.cpp oracle skipped: " + missing.orElse(""));
        Assumptions.assumeTrue(Files.isRegularFile(SCRIPT), SCRIPT + " not found");
        return oracles;
    }

    /** The corpus's SentencePiece tokenizer.model (320 pieces), when the corpus is here. */
    static Optional<Path> sentencePiece() {
        return CorpusCase.hfRoot().map(r -> r.resolve("hf-to-gguf/gen-bf16-to-bf16/input/tokenizer.model")).filter(Files::isRegularFile);
    }

    /** The folder environment variable {@code variable} names, when it holds a tokenizer.json (npm's tokenizer packages' models/). */
    static Optional<Path> tokenizerFolder(String variable) {
        return Optional.ofNullable(System.getenv(variable)).map(Path::of).filter(d -> Files.isRegularFile(d.resolve("tokenizer.json")));
    }

    /**
     * F32 tensors of the given shapes, in the map's order, each value N(0, 1) x 0.1 drawn from
     * {@code random} in that order: a tiny random model's weights.
     */
    static Map<String, ReferenceSafetensors.Tensor> randomF32(Map<String, long[]> shapes, Random random) {
        Map<String, ReferenceSafetensors.Tensor> out = new LinkedHashMap<>();
        for (var e : shapes.entrySet()) {
            long n = 1;
            for (long d : e.getValue()) n *= d;
            ByteBuffer b = ByteBuffer.allocate(Math.toIntExact(4 * n)).order(ByteOrder.LITTLE_ENDIAN);
            for (long i = 0; i < n; i++) b.putFloat((float) random.nextGaussian() * 0.1f);
            out.put(e.getKey(), new ReferenceSafetensors.Tensor("F32", e.getValue(), b.array()));
        }
        return out;
    }

    /** {@code amn convert DIR --to gguf --dtype DTYPE -o OUT -q} ({@code --no-vocab} without {@code vocab}). */
    static CorpusCliTest.Run convert(Path dir, String dtype, Path out, boolean vocab) {
        List<String> args = new ArrayList<>(List.of("convert", dir.toString(), "--to", "gguf", "--dtype", dtype, "-o", out.toString(), "-q"));
        if (!vocab) args.add("--no-vocab");
        return CorpusCliTest.amn(args.toArray(String[]::new));
    }

    /**
     * {@link #convert} into {@code outDir/<folder>-<dtype>.gguf}, which must succeed (the
     * standard error is the message when it does not), read back.
     */
    static ReferenceGguf converted(Path dir, String dtype, boolean vocab, Path outDir) throws IOException {
        Path out = outDir.resolve(dir.getFileName() + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = convert(dir, dtype, out, vocab);
        assertThat(r.code()).as(r.err()).isZero();
        return ReferenceGguf.read(out);
    }

    /**
     * A tiny {@code arch} folder made with {@code makeArgs} (its vocabulary's options, the seed),
     * converted to {@code dtype} with its vocabulary, and llama.cpp's logits of 12 tokens against
     * the reference forward pass, llama.cpp's F16 KV cache modelled: without a {@code variant}
     * the same argmax and within 1e-4 (F32) or 3e-3 (F16) of the largest logit; with one
     * ({@code compare --variant}, a deliberately wrong model), more than {@code apart} off, so
     * that the comparison is seen to catch what the family changes.
     */
    static void llamaCppComputesTheReference(Path tmp, String arch, List<String> makeArgs, String dtype, String variant,
                                             double apart) throws Exception {
        llamaCppComputesTheReference(tmp, arch, makeArgs, dtype, variant == null ? null : List.of("--variant", variant), apart);
    }

    /** The same with {@code wrong} the compare options of the deliberately wrong model ({@code --mutate M}, say), or null. */
    static void llamaCppComputesTheReference(Path tmp, String arch, List<String> makeArgs, String dtype, List<String> wrong,
                                             double apart) throws Exception {
        llamaCppComputesTheReference(tmp, arch, makeArgs, dtype, wrong, apart, dtype.equals("f32") ? 1e-4 : 3e-3);
    }

    /**
     * The same within {@code limit} of the largest logit (the families whose residual over 12 tokens is a
     * float16 rounding of single cache values, as chance gives a seed: 1e-3 for F32).
     */
    static void llamaCppComputesTheReference(Path tmp, String arch, List<String> makeArgs, String dtype, List<String> wrong,
                                             double apart, double limit) throws Exception {
        oracles();
        Path dir = tmp.resolve(arch + "-forward");
        List<String> make = new ArrayList<>(List.of(arch, dir.toString()));
        make.addAll(makeArgs);
        make(tmp, make.toArray(String[]::new));
        llamaCppComputesTheReferenceOf(tmp, dir, dtype, wrong, apart, limit);
    }

    /**
     * A made folder's Qwen3 vocabulary as GLM's vocabulary rule ({@code _set_vocab_glm}) takes it: the
     * added token {@code <|im_start|>} renamed {@code <|user|>}, which that rule needs as the EOT (the
     * check hash does not change: the check text holds no added token).
     */
    static void asGlmVocabulary(Path dir) throws IOException {
        for (String f : List.of("tokenizer.json", "tokenizer_config.json")) {
            java.nio.file.Files.writeString(dir.resolve(f), java.nio.file.Files.readString(dir.resolve(f)).replace("<|im_start|>", "<|user|>"));
        }
    }

    /**
     * The refusal of a bad config.json, as each family's test states it: {@code config} with {@code from} replaced by
     * {@code to} (removed when null) over {@code tensors} gives exit {@code exit}, a message naming {@code key} and no
     * stack trace, and writes nothing.
     */
    static void refused(Path tmp, String config, String from, String to, Map<String, ReferenceSafetensors.Tensor> tensors, int exit,
                        String key) throws java.io.IOException {
        assertThat(config).as("the config.json the case edits").contains(from);
        Path out = tmp.resolve("refused.gguf");
        CorpusCliTest.Run r = convert(HfToGgufTest.folder(tmp, "refused", config.replace(from, to == null ? "" : to), tensors), "f16",
                out, false);
        assertThat(r.code()).as(r.err()).isEqualTo(exit);
        assertThat(r.err()).contains(key).doesNotContain("Exception");
        assertThat(out).doesNotExist();
    }

    /** {@code a;b;c} as a list, or null for none: the compare options written in one CSV cell. */
    static List<String> options(String cell) {
        return cell == null ? null : List.of(cell.split(";"));
    }

    /**
     * The comparison of {@link #llamaCppComputesTheReference} on a folder already made (and
     * perhaps edited): {@code dir} converted to {@code dtype} with its vocabulary, llama.cpp's
     * logits of 12 tokens against the reference's, the same argmax and within {@code limit} of
     * the largest logit; with {@code wrong}, more than {@code apart} off.
     */
    static void llamaCppComputesTheReferenceOf(Path tmp, Path dir, String dtype, List<String> wrong, double apart, double limit)
            throws Exception {
        Path out = tmp.resolve(dir.getFileName() + "-" + dtype + ".gguf");
        CorpusCliTest.Run r = convert(dir, dtype, out, true);
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode cmp = compare(tmp, dir, out, dtype, "1,7,42,100,3,250,17,64,5,9,200,300",
                wrong == null ? new String[0] : wrong.toArray(String[]::new));
        JsonNode f16cache = cmp.path("kv_f16");
        if (wrong != null) {
            assertThat(f16cache.path("max_rel_diff").asDouble()).as(wrong + " is told apart: " + cmp).isGreaterThan(apart);
            return;
        }
        assertThat(f16cache.path("argmax").asInt()).as(cmp.toString()).isEqualTo(cmp.path("llama_argmax").asInt());
        assertThat(f16cache.path("max_rel_diff").asDouble()).as(cmp.toString()).isLessThan(limit);
    }

    /** {@code decoder_reference.py make ARGS...}: a tiny random model folder. */
    static void make(Path tmp, String... args) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", SCRIPT.toString(), "make"));
        cmd.addAll(List.of(args));
        run(tmp, cmd);
    }

    /**
     * {@code decoder_reference.py compare}: llama.cpp's logits of {@code gguf} against the forward
     * pass of {@code dir} with weights rounded as {@code weights} says, over {@code tokens}.
     */
    static JsonNode compare(Path tmp, Path dir, Path gguf, String weights, String tokens, String... extra) throws Exception {
        List<String> cmd = new ArrayList<>(List.of("python3", SCRIPT.toString(), "compare", dir.toString(), gguf.toString(),
                oracles().toString(), "--weights", weights, "--tokens", tokens));
        cmd.addAll(List.of(extra));
        return LlamaRunOracleTest.JSON.readTree(run(tmp, cmd));
    }

    /** Runs {@code cmd}, failing the test with its output when it fails or takes over 600 s; its standard output. */
    static String run(Path tmp, List<String> cmd) throws IOException, InterruptedException {
        Path err = Files.createTempFile(tmp, "err-", ".txt");
        Process p = new ProcessBuilder(cmd).redirectError(err.toFile()).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(600, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(cmd + " did not finish in 600 s");
        }
        assertThat(p.exitValue()).as(cmd + ": " + out + Files.readString(err)).isZero();
        return out;
    }
}
