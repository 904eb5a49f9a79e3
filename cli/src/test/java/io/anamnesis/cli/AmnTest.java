package io.anamnesis.cli;

import com.fasterxml.jackson.databind.JsonNode;
import io.anamnesis.api.ErrorKind;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

class AmnTest {
    @TempDir
    Path dir;

    @Test
    void parseJsonHasFormatMetadataSchemeAndEveryTensorWithItsRole() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "parse", "--json", f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        JsonNode j = r.json();
        assertThat(j.get("format").asText()).isEqualTo("fake");
        assertThat(j.get("metadata").get("format").asText()).isEqualTo("fake");
        assertThat(j.get("metadata").get("note").asText()).isEqualTo("two\nlines");
        assertThat(j.get("scheme").asText()).isEqualTo("toy int8 x scale");
        JsonNode t = j.get("tensors");
        assertThat(t.size()).isEqualTo(3);
        assertThat(t.get(0).get("name").asText()).isEqualTo("layer.q");
        assertThat(t.get(0).get("dtype").asText()).isEqualTo("I8");
        assertThat(t.get(0).get("shape").toString()).isEqualTo("[2,2]");
        assertThat(t.get(0).get("role").asText()).isEqualTo("quantized");
        assertThat(t.get(0).get("bytes").asLong()).isEqualTo(4);
        assertThat(t.get(1).get("name").asText()).isEqualTo("layer.s");
        assertThat(t.get(1).get("shape").toString()).isEqualTo("[]");
        assertThat(t.get(1).get("role").asText()).isEqualTo("scale");
        assertThat(t.get(2).get("role").asText()).isEqualTo("passthrough");
        assertThat(t.get(2).get("dtype").asText()).isEqualTo("F32");
        assertThat(t.get(2).get("bytes").asLong()).isEqualTo(8);
        assertThat(r.err()).isEmpty();
    }

    @Test
    void parseJsonOfPlainTensorsHasNullScheme() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.withoutDequantizers(), "parse", "--json", f.toString());
        assertThat(r.code()).isZero();
        assertThat(r.json().get("scheme").isNull()).isTrue();
        assertThat(r.json().get("tensors").get(0).get("role").asText()).isEqualTo("passthrough");
    }

    @Test
    void parseTableListsEveryTensorWithRole() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "parse", f.toString());
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("format   fake", "scheme   toy int8 x scale",
                "tensors  3 (1 quantized, 1 scale, 1 passthrough)", "stored   16 bytes");
        assertThat(r.out().lines().filter(l -> l.startsWith("layer.q")).findFirst().orElseThrow())
                .matches("layer\\.q +I8 +\\[2, 2] +4 B +quantized");
        assertThat(r.out().lines().filter(l -> l.startsWith("norm")).findFirst().orElseThrow())
                .matches("norm +F32 +\\[2] +8 B +passthrough");
    }

    @Test
    void inspectSummarizesRolesSizesPropertiesAndLethe() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "inspect", "--to", "f32", f.toString());
        assertThat(r.code()).as(r.err()).isZero();
        // stored 4 + 4 + 8 = 16 bytes; as f32: layer 4 x 4 + norm 8 = 24 bytes; Lethe took 8/24
        assertThat(r.out()).contains("scheme      toy int8 x scale", "tensors     3: 1 quantized, 1 scale, 1 passthrough",
                "stored      16 bytes", "as f32      24 bytes in 2 tensors", "Lethe took ~33% of the precision",
                "dtypes      I8 x1, F32 x2", "byte order  little-endian", "  version  1", "  note    two lines");
    }

    @Test
    void inspectOfPlainTensorsSaysNoneAndLetheTookNothing() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.withoutDequantizers(), "info", f.toString());
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("scheme      none (plain tensors)", "Lethe took nothing");
    }

    @Test
    void inspectJsonSummarizesLongArraysUnlessFull() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(Fakes.amn(), "inspect", "--json", f.toString());
        assertThat(r.code()).isZero();
        JsonNode j = r.json();
        assertThat(j.get("format").asText()).isEqualTo("fake");
        assertThat(j.get("tensor_count").asInt()).isEqualTo(3);
        assertThat(j.get("roles").toString()).isEqualTo("{\"quantized\":1,\"scale\":1,\"passthrough\":1}");
        assertThat(j.get("stored_bytes").asLong()).isEqualTo(16);
        assertThat(j.get("output_dtype").asText()).isEqualTo("BF16");
        assertThat(j.get("output_bytes").asLong()).isEqualTo(4 * 2 + 8);
        assertThat(j.get("properties").get("version").asText()).isEqualTo("1");
        JsonNode tokens = j.get("metadata").get("tokens");
        assertThat(tokens.get("type").asText()).isEqualTo("array");
        assertThat(tokens.get("length").asInt()).isEqualTo(100);
        assertThat(tokens.get("head").toString()).isEqualTo("[0,1,2,3,4,5,6,7]");
        assertThat(j.get("metadata").get("short").toString()).isEqualTo("[1,2,3]");
        assertThat(j.get("metadata").get("nested").get("scores").get("length").asInt()).isEqualTo(65);

        JsonNode full = amn(Fakes.amn(), "inspect", "--json", "--full", f.toString()).json();
        assertThat(full.get("metadata").get("tokens").isArray()).isTrue();
        assertThat(full.get("metadata").get("tokens").size()).isEqualTo(100);
        assertThat(full.get("metadata").get("tokens").get(99).asInt()).isEqualTo(99);
    }

    @Test
    void problemsAreWarningsForInspectAndFailuresForRemember() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "gptq-looking");
        Runs.Run inspect = amn(Fakes.amn(), "inspect", f.toString());
        assertThat(inspect.code()).isZero();
        assertThat(inspect.err()).startsWith("amn: warning: tensor 'mlp.qweight'")
                .contains("io.anamnesis.quant.gptq");
        Runs.Run remember = amn(Fakes.amn(), "remember", f.toString());
        assertThat(remember.code()).isEqualTo(ErrorKind.UNSUPPORTED.exitCode());
        assertThat(remember.err()).contains("io.anamnesis.quant.gptq");
        assertThat(dir.resolve("model-bf16.safetensors")).doesNotExist();
    }

    @Test
    void parseListsAFileWithAMalformedGroupWithRolesUnknownWhileInspectAndRememberRefuse() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "badgroup");
        Runs.Run parse = amn(Fakes.amn(), "parse", "--json", f.toString());
        assertThat(parse.code()).isZero();
        assertThat(parse.json().get("tensors").size()).isEqualTo(4);
        assertThat(parse.json().get("tensors").get(0).get("role").asText()).isEqualTo("unknown");
        assertThat(parse.json().get("problems").get(0).asText()).isEqualTo("tensor 'bad.q': has no scale bad.s");
        assertThat(parse.err()).isEqualTo("amn: warning: roles unknown, no recovery plan: tensor 'bad.q': has no scale bad.s"
                + System.lineSeparator());
        assertThat(amn(Fakes.amn(), "inspect", f.toString()).code()).isEqualTo(3);
        assertThat(amn(Fakes.amn(), "remember", f.toString()).code()).isEqualTo(3);
    }

    @ParameterizedTest
    @CsvSource({"parse,3", "limit,4", "security,5", "unsupported,6", "io,7", "bug,1"})
    void eachErrorKindHasItsExitCodeAndOneLine(String directive, int exit) throws IOException {
        Path f = Fakes.write(dir, "bad.fake", directive);
        for (String command : List.of("parse", "inspect", "remember")) {
            Runs.Run r = amn(Fakes.amn(), command, f.toString());
            assertThat(r.code()).as(command + " " + directive + ": " + r.err()).isEqualTo(exit);
            assertThat(r.err()).startsWith("amn: ").doesNotContain("\tat ");
            assertThat(r.err().lines().count()).isEqualTo(1);
            assertThat(r.out()).isEmpty();
        }
        assertThat(dir.resolve("bad-bf16.safetensors")).doesNotExist();
    }

    @Test
    void exitCodesFollowTheApiErrorKinds() {
        assertThat(ErrorKind.MALFORMED.exitCode()).isEqualTo(3);
        assertThat(ErrorKind.LIMIT.exitCode()).isEqualTo(4);
        assertThat(ErrorKind.SECURITY.exitCode()).isEqualTo(5);
        assertThat(ErrorKind.UNSUPPORTED.exitCode()).isEqualTo(6);
        assertThat(ErrorKind.IO.exitCode()).isEqualTo(7);
    }

    @Test
    void debugAddsTheStackTrace() throws IOException {
        Path f = Fakes.write(dir, "bad.fake", "bug");
        Runs.Run r = amn(Fakes.amn(), "--debug", "inspect", f.toString());
        assertThat(r.code()).isEqualTo(1);
        assertThat(r.err()).startsWith("amn: internal error: java.lang.IllegalStateException: a reader bug")
                .contains("\tat ");
        Runs.Run after = amn(Fakes.amn(), "inspect", f.toString(), "--debug");
        assertThat(after.err()).contains("\tat ");
    }

    @Test
    void missingFileAndFolderAreIoErrors() throws IOException {
        Runs.Run missing = amn(Fakes.amn(), "inspect", dir.resolve("nope.fake").toString());
        assertThat(missing.code()).isEqualTo(7);
        assertThat(missing.err()).startsWith("amn: no such file");
        // a folder is a model now (issue 10): one without a tensor file is still an I/O error, saying what it lacks
        Runs.Run folder = amn(Fakes.amn(), "parse", dir.toString());
        assertThat(folder.code()).isEqualTo(7);
        assertThat(folder.err()).contains("holds no tensor file").contains(".fake");
    }

    @Test
    void unknownFormatIsUnsupported() throws IOException {
        Path f = dir.resolve("x.xyz");
        Files.writeString(f, "not a tensor file at all");
        Runs.Run r = amn(Fakes.amn(), "inspect", f.toString());
        assertThat(r.code()).isEqualTo(6);
        assertThat(r.err()).contains("no installed reader recognizes");
    }

    @ParameterizedTest
    @ValueSource(strings = {"", "frobnicate", "parse", "parse --bogus x.fake", "inspect --to q8 x.fake",
            "remember --to int4 x.fake", "remember --threads 0 x.fake", "remember --threads many x.fake",
            "convert x.fake", "parse a.fake b.fake", "inspect ollama:", "inspect ollama:../../etc:passwd",
            "formats extra"})
    void usageErrorsExitTwoWithOneLine(String line) throws IOException {
        Fakes.write(dir, "x.fake", "ok");
        String[] args = line.isEmpty() ? new String[0] : line.replace("x.fake", dir.resolve("x.fake").toString()).split(" ");
        Runs.Run r = amn(Fakes.amn(), args);
        assertThat(r.code()).as(line + ": " + r.err()).isEqualTo(2);
        assertThat(r.err()).startsWith("amn: ");
        assertThat(r.err().lines().count()).as(r.err()).isEqualTo(1);
    }

    @Test
    void helpListsCommandsAndExitCodes() {
        Runs.Run r = amn(Fakes.amn(), "--help");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("parse", "inspect", "remember", "convert", "formats", "Exit codes:",
                "  3  malformed input", "  7  I/O").doesNotContain("aot-train");
        assertThat(amn(Fakes.amn(), "remember", "--help").out()).contains("--to", "--output", "--threads", "--quiet");
        assertThat(amn(Fakes.amn(), "help", "inspect").out()).contains("--json", "--full");
    }

    @Test
    void formatsListsProvidersWithModules() throws IOException {
        Runs.Run r = amn(Fakes.amn(), "formats");
        assertThat(r.code()).isZero();
        assertThat(r.out()).contains("Readers", "fake", ".fake", "Writers", "safetensors", "Dequantizers", "toy",
                "int8 times a scalar");
        JsonNode j = amn(Fakes.amn(), "formats", "--json").json();
        assertThat(j.get("readers").get(0).get("format").asText()).isEqualTo("fake");
        assertThat(j.get("readers").get(0).get("module").asText()).isEqualTo(io.anamnesis.api.Anamnesis.moduleOf(new Fakes.FakeReader()));
        assertThat(j.get("dequantizers").get(0).get("scheme").asText()).isEqualTo("toy");
    }

    /** The picocli route and the fast path must print the same bytes for the same command line. */
    @ParameterizedTest
    @ValueSource(strings = {"parse F", "parse --json F", "inspect F", "info F", "inspect --to f16 F", "inspect F --json",
            "inspect --json --full F", "--debug parse F", "formats", "formats --json", "inspect MISSING", "parse BAD",
            "diff F F", "diff --json F F", "diff F --threads 1 F", "diff F BAD", "diff F MISSING", "diff F",
            "diff F F F", "diff --threads 0 F F", "diff --threads x F F", "diff --threads 1 --threads 2 F F", "--debug diff F F"})
    void fastPathAndPicocliAgree(String line) throws IOException {
        Path f = Fakes.write(dir, "m.fake", "ok");
        Path bad = Fakes.write(dir, "b.fake", "security");
        String[] args = line.replace("MISSING", dir.resolve("none.fake").toString()).replace("BAD", bad.toString())
                .replace("F", f.toString()).split(" ");
        Runs.Run fast = Runs.amn(Fakes.amn(), Map.of(), dir, true, args);
        Runs.Run slow = Runs.amn(Fakes.amn(), Map.of(), dir, false, args);
        assertThat(fast.code()).isEqualTo(slow.code());
        assertThat(fast.out()).isEqualTo(slow.out());
        assertThat(fast.err().replaceAll("\tat .*\\R", "")).isEqualTo(slow.err().replaceAll("\tat .*\\R", ""));
    }

    /** remember and convert take the fast path too: same exit codes, same messages, same output bytes. */
    @ParameterizedTest
    @ValueSource(strings = {"remember F -o OUT -q", "dequantize F --to f32 --threads 1 -o OUT",
            "remember F --output OUT --to f16 --quiet", "remember F --threads x -o OUT", "remember F --threads 0 -o OUT",
            "remember BAD -o OUT", "remember F -o OUT --json", "convert F --to safetensors -o OUT -q",
            "convert F --to safetensors --dtype f32 --threads 2 -o OUT", "convert F --to safetensors --as-stored -o OUT",
            "convert F -o OUT", "convert F --to nothing -o OUT", "convert F --to safetensors --dtype q4 -o OUT",
            "convert F --to safetensors --dtype f16 --dtype f32 -o OUT", "convert F --to safetensors --dtype --quiet -o OUT",
            "convert F --to safetensors -o OUT --dtype"})
    void recoveringFastPathAndPicocliAgree(String line) throws IOException {
        Path f = Fakes.write(dir, "m.fake", "ok");
        Path bad = Fakes.write(dir, "b.fake", "security");
        Runs.Run[] runs = new Runs.Run[2];
        byte[][] written = new byte[2][];
        for (int route = 0; route < 2; route++) {
            Path out = dir.resolve("out-" + route + ".safetensors");
            String[] args = line.replace("OUT", out.toString()).replace("BAD", bad.toString())
                    .replace("F", f.toString()).split(" ");
            runs[route] = Runs.amn(Fakes.amn(), Map.of(), dir, route == 0, args);
            written[route] = Files.exists(out) ? Files.readAllBytes(out) : null;
        }
        assertThat(runs[0].code()).isEqualTo(runs[1].code());
        assertThat(runs[0].err().replace("out-0", "out-X")).isEqualTo(runs[1].err().replace("out-1", "out-X"));
        // The summary line ends with the run's duration, which may differ.
        assertThat(runs[0].out().replace("out-0", "out-X").replaceAll("in [0-9.]+ s", "in T s"))
                .isEqualTo(runs[1].out().replace("out-1", "out-X").replaceAll("in [0-9.]+ s", "in T s"));
        assertThat(written[0]).isEqualTo(written[1]);
    }

    @Test
    void versionNamesAmnAndJava() {
        Runs.Run r = amn(Fakes.amn(), "--version");
        assertThat(r.code()).isZero();
        assertThat(r.out()).startsWith("amn ").contains("Java " + Runtime.version().feature());
    }

    /** Which arguments start the side thread's Calendar warm-up (Amn.initializeAside): the zip-based formats only. */
    @Test
    void zipNamedArgumentsAreTheZipBasedFormats() {
        assertThat(Amn.zipNamed("model.pth")).isTrue();
        assertThat(Amn.zipNamed("dir.v2/pytorch_model.BIN")).isTrue();
        assertThat(Amn.zipNamed("weights.npz")).isTrue();
        assertThat(Amn.zipNamed("model.safetensors")).isFalse();
        assertThat(Amn.zipNamed("model.gguf")).isFalse();
        assertThat(Amn.zipNamed("--to")).isFalse();
        assertThat(Amn.zipNamed("pth")).isFalse();
    }
}
