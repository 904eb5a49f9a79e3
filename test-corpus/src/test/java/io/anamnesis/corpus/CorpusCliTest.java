package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.ErrorKind;
import io.anamnesis.cli.Amn;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Every case of the shared corpus through the command line, in-process ({@link Amn#execute}):
 * dequantize cases by {@code remember} (F32 and BF16) into a temporary folder, read back
 * with the independent {@link ReferenceSafetensors}; parse cases by {@code parse --json} and
 * {@code convert --to safetensors --as-stored}, compared byte for byte; reject cases must
 * make both {@code inspect} and {@code remember} exit with an accepted kind's code and
 * leave no file behind.
 */
class CorpusCliTest {

    record Run(int code, String out, String err) {
    }

    static Run amn(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Amn.execute(new PrintWriter(out), new PrintWriter(err), args);
        return new Run(code, out.toString(), err.toString());
    }

    @TestFactory
    Stream<DynamicTest> corpus() {
        Stream<DynamicTest> hf = CorpusCase.hfRoot().isPresent() ? Stream.of() : Stream.of(DynamicTest.dynamicTest(
                "shared corpus-hf", () -> Assumptions.abort("shared corpus-hf not found (set -Danamnesis.corpus.hf or "
                        + "ANAMNESIS_CORPUS_HF): every hf-to-gguf case is skipped")));
        if (CorpusCase.root().isEmpty()) {
            hf = Stream.concat(hf, Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort(
                    "shared corpus not found (set -Danamnesis.corpus or ANAMNESIS_CORPUS): every corpus case is skipped"))));
        }
        return Stream.concat(hf, CorpusCase.everyRoot().stream().map(c -> DynamicTest.dynamicTest(c.id(), () -> run(c))));
    }

    static void run(CorpusCase c) throws Exception {
        Optional<String> missing = Requirements.missing(c, CorpusApiTest.AMN);
        Assumptions.assumeTrue(missing.isEmpty(), () -> c.id() + ": " + missing.orElse(""));
        if (c.operation().equals("convert")) {
            HfToGgufCases.cli(c);
            return;
        }
        if (!c.operation().equals("reject") && !c.operation().equals("quantize")) {
            Assumptions.assumeTrue(CorpusApiTest.AMN.findWriter("safetensors").isPresent(),
                    () -> c.id() + ": no installed safetensors writer (module format-safetensors)");
        }
        Path tmp = Files.createTempDirectory("amn-corpus-cli-");
        try {
            switch (c.operation()) {
                case "dequantize" -> dequantize(c, tmp);
                case "parse" -> parse(c, tmp);
                case "reject" -> reject(c, tmp);
                case "quantize" -> quantize(c, tmp);
                default -> fail("unknown operation " + c.operation() + " in " + c.id());
            }
        } finally {
            deleteTree(tmp);
        }
    }

    static void dequantize(CorpusCase c, Path tmp) throws Exception {
        Map<String, ReferenceSafetensors.Tensor> expected = ReferenceSafetensors.read(c.expected());
        for (String target : List.of("F32", "BF16")) {
            if (c.expectedDtype().equals("BF16") && !target.equals("BF16")) continue;
            Path out = tmp.resolve("out-" + target + ".safetensors");
            Run r = amn("remember", "--quiet", "--to", target.toLowerCase(), "-o", out.toString(), c.input().toString());
            assertThat(r.code()).as(c.id() + " remember --to " + target + ": " + r.err()).isZero();
            Map<String, ReferenceSafetensors.Tensor> actual = ReferenceSafetensors.read(out);
            for (var e : expected.entrySet()) {
                ReferenceSafetensors.Tensor got = actual.get(e.getKey());
                if (got == null) fail("%s: remember wrote no tensor %s (wrote %s)", c.id(), e.getKey(), actual.keySet());
                assertThat(got.shape()).as("%s %s shape", c.id(), e.getKey()).isEqualTo(e.getValue().shape());
                CorpusApiTest.compare(c, e.getKey(), target, e.getValue(), got.dtype(), got.bytes());
            }
        }
    }

    static void parse(CorpusCase c, Path tmp) throws Exception {
        Map<String, ReferenceSafetensors.Tensor> expected = ReferenceSafetensors.read(c.expected());
        Run listing = amn("parse", "--json", c.input().toString());
        assertThat(listing.code()).as(c.id() + " parse --json: " + listing.err()).isZero();
        JsonNode json = new ObjectMapper().readTree(listing.out());
        List<String> names = new ArrayList<>();
        for (JsonNode t : json.get("tensors")) {
            String name = t.get("name").asText();
            names.add(name);
            ReferenceSafetensors.Tensor want = expected.get(name);
            if (want == null) continue;
            assertThat(t.get("dtype").asText()).as(c.id() + " " + name + " dtype").isEqualTo(want.dtype());
            long[] shape = new long[t.get("shape").size()];
            for (int i = 0; i < shape.length; i++) shape[i] = t.get("shape").get(i).asLong();
            assertThat(shape).as(c.id() + " " + name + " shape").isEqualTo(want.shape());
        }
        assertThat(names.stream().sorted().toList()).as(c.id() + " tensor names")
                .isEqualTo(expected.keySet().stream().sorted().toList());

        Path out = tmp.resolve("out.safetensors");
        Run r = amn("convert", "--quiet", "--to", "safetensors", "--as-stored", "-o", out.toString(), c.input().toString());
        assertThat(r.code()).as(c.id() + " convert --as-stored: " + r.err()).isZero();
        Map<String, ReferenceSafetensors.Tensor> actual = ReferenceSafetensors.read(out);
        assertThat(actual.keySet().stream().sorted().toList()).as(c.id() + " written names")
                .isEqualTo(expected.keySet().stream().sorted().toList());
        for (var e : expected.entrySet()) {
            ReferenceSafetensors.Tensor got = actual.get(e.getKey());
            assertThat(got.dtype()).as(c.id() + " " + e.getKey() + " dtype").isEqualTo(e.getValue().dtype());
            assertThat(got.shape()).as(c.id() + " " + e.getKey() + " shape").isEqualTo(e.getValue().shape());
            assertThat(got.bytes()).as(c.id() + " " + e.getKey() + " bytes").isEqualTo(e.getValue().bytes());
        }
    }

    /**
     * {@code amn forget}: a ggml-quantize case as {@code forget input.safetensors --to ggml:TYPE}
     * with only {@code weight} in the input (and {@code --imatrix} a legacy .dat of its
     * {@code imatrix}), a llama-quantize case as {@code forget input.gguf --to FILE_TYPE
     * [--imatrix imatrix.gguf]}.
     */
    static void quantize(CorpusCase c, Path tmp) throws Exception {
        boolean ggml = QuantizeCases.isGgml(c);
        List<String> args = new ArrayList<>(List.of("forget", "--quiet", "--to", QuantizeCases.target(c)));
        Path out = tmp.resolve("out.gguf");
        args.addAll(List.of("-o", out.toString()));
        Optional<String> imatrix = Optional.empty();
        if (QuantizeCases.hasImatrix(c)) {
            imatrix = Optional.of((ggml ? QuantizeCases.legacyImatrix(c, tmp) : c.dir().resolve("imatrix.gguf")).toString());
            args.addAll(List.of("--imatrix", imatrix.get()));
        }
        args.add((ggml ? QuantizeCases.weightOnly(c, tmp) : c.input()).toString());
        Run r = amn(args.toArray(String[]::new));
        assertThat(r.code()).as(c.id() + " amn " + String.join(" ", args) + ": " + r.err()).isZero();
        if (ggml) QuantizeCases.compareWeight(c, out);
        else QuantizeCases.compareModel(c, out, imatrix);
    }

    /** Header-only inspect and a full remember must both refuse, with an accepted kind, writing nothing. */
    static void reject(CorpusCase c, Path tmp) throws IOException {
        List<Integer> accepted = c.acceptedErrors().stream().map(CorpusCliTest::exitCodeOf).toList();
        Run inspect = amn("inspect", c.input().toString());
        assertThat(inspect.code()).as(c.id() + " inspect exit code (accepted " + c.acceptedErrors() + "): " + inspect.err())
                .isIn(accepted);
        assertThat(inspect.err()).as(c.id() + " inspect stderr").startsWith("amn: ").doesNotContain("\tat ");
        Path out = tmp.resolve("out.safetensors");
        Run remember = amn("remember", "--quiet", "-o", out.toString(), c.input().toString());
        assertThat(remember.code()).as(c.id() + " remember exit code (accepted " + c.acceptedErrors() + "): " + remember.err())
                .isIn(accepted);
        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left.toList()).as(c.id() + ": nothing may be written").isEmpty();
        }
    }

    static int exitCodeOf(String shortName) {
        return Arrays.stream(ErrorKind.values()).filter(k -> k.shortName().equals(shortName)).findFirst()
                .orElseThrow(() -> new IllegalArgumentException("unknown error kind " + shortName)).exitCode();
    }

    static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) Files.deleteIfExists(p);
        }
    }

    // ------------------------------------------------------------------ the built image, as a process

    /** cli/target/amn/bin/amn beside this module, when the runtime image has been built. */
    static Optional<Path> image() {
        Path here = Path.of("").toAbsolutePath();
        for (Path p : List.of(here.resolve("../cli/target/amn/bin/amn"), here.resolve("cli/target/amn/bin/amn"))) {
            if (Files.isExecutable(p)) return Optional.of(p.normalize());
        }
        return Optional.empty();
    }

    static Optional<Path> sample() {
        Path here = Path.of("").toAbsolutePath();
        for (Path p : List.of(here.resolve("../samples/tiny-fp8.safetensors"), here.resolve("samples/tiny-fp8.safetensors"))) {
            if (Files.isRegularFile(p)) return Optional.of(p.normalize());
        }
        return Optional.empty();
    }

    static Run process(Path amn, String... args) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(amn.toString());
        command.addAll(List.of(args));
        Path err = Files.createTempFile("amn-err", ".txt");
        try {
            Process p = new ProcessBuilder(command).redirectError(err.toFile()).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(120, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("amn " + String.join(" ", args) + " did not finish in 120 s");
            }
            return new Run(p.exitValue(), out, Files.readString(err));
        } finally {
            Files.deleteIfExists(err);
        }
    }

    @Test
    void runtimeImageRunsTheBundledSample() throws Exception {
        Optional<Path> amn = image();
        Assumptions.assumeTrue(amn.isPresent(), "runtime image cli/target/amn not built (run ./build): process smoke test skipped");
        Optional<Path> sample = sample();
        Assumptions.assumeTrue(sample.isPresent(), "samples/tiny-fp8.safetensors not found");

        Run formats = process(amn.get(), "formats");
        assertThat(formats.code()).as(formats.err()).isZero();
        assertThat(formats.out()).contains("Readers", "io.anamnesis.format.safetensors");

        // The image looks its providers up in its module layer (Anamnesis.installed() with an
        // empty class path), this test through the class path: the same providers either way.
        JsonNode listed = new ObjectMapper().readTree(process(amn.get(), "formats", "--json").out());
        io.anamnesis.api.Anamnesis here = io.anamnesis.api.Anamnesis.installed();
        assertThat(values(listed.get("readers"), "format"))
                .containsExactlyInAnyOrderElementsOf(here.readers().stream().map(r -> r.format()).toList());
        assertThat(values(listed.get("writers"), "format"))
                .containsExactlyInAnyOrderElementsOf(here.writers().stream().map(w -> w.format()).toList());
        assertThat(values(listed.get("dequantizers"), "scheme"))
                .containsExactlyElementsOf(here.dequantizers().stream().map(d -> d.scheme()).toList());
        assertThat(values(listed.get("quantizers"), "scheme"))
                .containsExactlyElementsOf(here.quantizers().stream().map(q -> q.scheme()).toList());

        Run inspect = process(amn.get(), "inspect", sample.get().toString());
        assertThat(inspect.code()).as(inspect.err()).isZero();
        assertThat(inspect.out()).contains("format      safetensors", "tensors     11");

        Run json = process(amn.get(), "parse", "--json", sample.get().toString());
        assertThat(json.code()).as(json.err()).isZero();
        assertThat(new ObjectMapper().readTree(json.out()).get("tensors").size()).isEqualTo(11);

        Run usage = process(amn.get(), "inspect", "--to", "q8", sample.get().toString());
        assertThat(usage.code()).isEqualTo(2);
        assertThat(usage.err()).startsWith("amn: ");

        Run missing = process(amn.get(), "inspect", sample.get() + ".missing");
        assertThat(missing.code()).isEqualTo(7);

        // what the image holds, which need not be what this test's class path holds
        boolean fp8 = formats.out().contains("io.anamnesis.quant.fp8");
        Path tmp = Files.createTempDirectory("amn-image-");
        try {
            Path out = tmp.resolve("tiny-bf16.safetensors");
            Run remember = process(amn.get(), "remember", sample.get().toString(), "--to", "bf16", "-o", out.toString());
            if (fp8) {
                assertThat(remember.code()).as(remember.err()).isZero();
                Map<String, ReferenceSafetensors.Tensor> t = ReferenceSafetensors.read(out);
                assertThat(t.get("model.layers.0.mlp.down_proj.weight").dtype()).isEqualTo("BF16");
                assertThat(t).doesNotContainKey("model.layers.0.mlp.down_proj.weight_scale_inv");
            } else {
                assertThat(remember.code()).as("without quant-fp8: " + remember.err()).isEqualTo(6);
                assertThat(out).doesNotExist();
            }
        } finally {
            deleteTree(tmp);
        }
    }

    private static List<String> values(JsonNode array, String field) {
        List<String> out = new ArrayList<>();
        array.forEach(n -> out.add(n.get(field).asText()));
        return out;
    }
}
