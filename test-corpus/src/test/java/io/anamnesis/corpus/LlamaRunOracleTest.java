package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * llama.cpp loads what {@code amn forget} writes and computes the logits recorded in each
 * llama-quantize case ({@code params.llama_run}): {@code llama_ref.py run} of the shared
 * oracles, the same library and CPU variant the corpus was made with. Needs ORACLE_CACHE
 * (see the oracles' README) and python3; skipped, saying so, without them.
 */
class LlamaRunOracleTest {
    static final ObjectMapper JSON = new ObjectMapper();

    @TestFactory
    Stream<DynamicTest> llamaCppComputesTheRecordedLogits() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort("shared corpus not found")));
        }
        Stream<DynamicTest> quantize = CorpusCase.all(root.get()).stream().filter(c -> c.family().equals("llama-quantize"))
                .map(c -> DynamicTest.dynamicTest(c.id(), () -> run(c, root.get())));
        Stream<DynamicTest> hf = CorpusCase.hfRoot().map(r -> CorpusCase.all(r).stream()
                        .filter(c -> c.family().equals(HfToGgufCases.FAMILY))
                        .map(c -> DynamicTest.dynamicTest(c.id(), () -> runExport(c, root.get()))))
                .orElseGet(() -> Stream.of(DynamicTest.dynamicTest("shared corpus-hf", () -> Assumptions.abort(
                        "shared corpus-hf not found: the hf-to-gguf logits are not checked"))));
        return Stream.concat(quantize, hf);
    }

    /** An hf-to-gguf case: our conversion of the folder, loaded by llama.cpp, gives the recorded logits. */
    static void runExport(CorpusCase c, Path corpus) throws Exception {
        Path script = corpus.toAbsolutePath().getParent().resolve("tools/oracles/llama_ref.py");
        Optional<String> oracle = oracleMissing(script);
        Assumptions.assumeTrue(oracle.isEmpty(), () -> c.id() + ": llama.cpp oracle skipped: " + oracle.orElse(""));
        Optional<String> missing = Requirements.missing(c, CorpusApiTest.AMN);
        Assumptions.assumeTrue(missing.isEmpty(), () -> c.id() + ": " + missing.orElse(""));
        Path tmp = Files.createTempDirectory("amn-llama-run-hf-");
        try {
            Path out = tmp.resolve("out.gguf");
            CorpusApiTest.AMN.export(c.dir().resolve("input"), "gguf", HfToGgufCases.outtype(c), true, ForgetOptions.defaults(),
                    new LossMeter(), out, WriteOptions.threads(2));
            checkLogits(c, script, out, tmp, HfToGgufCases.tokens(c));
        } finally {
            HfToGgufCases.delete(tmp);
        }
    }

    /** llama_ref.py run on a file: it loads, and its last-token logits are the case's. */
    static void checkLogits(CorpusCase c, Path script, Path out, Path tmp, String tokens) throws Exception {
        Process p = new ProcessBuilder("python3", script.toString(), "run", out.toString(), "--tokens", tokens)
                .redirectError(tmp.resolve("err.txt").toFile()).start();
        String stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(300, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError(c.id() + ": llama_ref.py run did not finish in 300 s");
        }
        JsonNode got = JSON.readTree(stdout);
        JsonNode want = c.json().path("params").path("llama_run");
        assertThat(got.path("ok").asBoolean()).as(c.id() + ": llama.cpp loads the file: " + stdout
                + Files.readString(tmp.resolve("err.txt"))).isTrue();
        assertThat(got.path("argmax").asInt()).as(c.id() + " argmax").isEqualTo(want.path("argmax").asInt());
        assertThat(got.path("sha256_f32").asText()).as(c.id() + ": sha256 of the logits").isEqualTo(want.path("sha256_f32").asText());
    }

    static Optional<String> oracleMissing(Path script) {
        String cache = System.getenv("ORACLE_CACHE");
        if (cache == null || cache.isBlank()) return Optional.of("ORACLE_CACHE is not set (see tools/oracles/README.md)");
        if (!Files.isRegularFile(script)) return Optional.of(script + " not found");
        try {
            Process p = new ProcessBuilder("python3", "--version").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (!p.waitFor(30, TimeUnit.SECONDS) || p.exitValue() != 0) return Optional.of("python3 does not run");
        } catch (IOException | InterruptedException e) {
            return Optional.of("python3 does not run: " + e.getMessage());
        }
        return Optional.empty();
    }

    static void run(CorpusCase c, Path corpus) throws Exception {
        Path script = corpus.toAbsolutePath().getParent().resolve("tools/oracles/llama_ref.py");
        Optional<String> oracle = oracleMissing(script);
        Assumptions.assumeTrue(oracle.isEmpty(), () -> c.id() + ": llama.cpp oracle skipped: " + oracle.orElse(""));
        Optional<String> missing = Requirements.missing(c, CorpusApiTest.AMN);
        Assumptions.assumeTrue(missing.isEmpty(), () -> c.id() + ": " + missing.orElse(""));
        Path tmp = Files.createTempDirectory("amn-llama-run-");
        try {
            Path out = tmp.resolve("out.gguf");
            Optional<TensorArchive> imatrix = QuantizeCases.hasImatrix(c)
                    ? Optional.of(CorpusApiTest.AMN.open(c.dir().resolve("imatrix.gguf"))) : Optional.empty();
            try (TensorArchive model = CorpusApiTest.AMN.open(c.input())) {
                CorpusApiTest.AMN.forget(model, QuantizeCases.target(c), new ForgetOptions(Map.of(), imatrix, false, List.of()),
                        new LossMeter(), out, WriteOptions.threads(2));
            } finally {
                if (imatrix.isPresent()) imatrix.get().close();
            }
            Process p = new ProcessBuilder("python3", script.toString(), "run", out.toString(), "--tokens", QuantizeCases.tokens(c))
                    .redirectError(tmp.resolve("err.txt").toFile()).start();
            String stdout = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                throw new AssertionError(c.id() + ": llama_ref.py run did not finish in 300 s");
            }
            JsonNode got = JSON.readTree(stdout);
            JsonNode want = c.json().path("params").path("llama_run");
            assertThat(got.path("ok").asBoolean()).as(c.id() + ": llama.cpp loads the file: " + stdout
                    + Files.readString(tmp.resolve("err.txt"))).isTrue();
            assertThat(got.path("argmax").asInt()).as(c.id() + " argmax").isEqualTo(want.path("argmax").asInt());
            assertThat(got.path("sha256_f32").asText()).as(c.id() + ": sha256 of the logits").isEqualTo(want.path("sha256_f32").asText());
        } finally {
            try (Stream<Path> all = Files.walk(tmp)) {
                for (Path f : all.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) Files.deleteIfExists(f);
            }
        }
    }
}
