package io.anamnesis.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Quantizer;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

class ForgetCommandTest {
    @TempDir
    Path dir;

    /**
     * A toy quantizer, "int8": each matrix becomes I8 codes q = round(x / s) with one scale
     * s = max|x| / 127 stored beside it as {@code <name>.scale}; vectors stay as they are.
     */
    static class ToyInt8 implements Quantizer {
        @Override
        public String scheme() {
            return "toyq";
        }

        @Override
        public String description() {
            return "per-tensor int8";
        }

        @Override
        public String format() {
            return "safetensors";
        }

        @Override
        public SequencedMap<String, String> targets() {
            SequencedMap<String, String> m = new LinkedHashMap<>();
            m.put("int8", "per-tensor symmetric int8");
            return m;
        }

        @Override
        public ForgetPlan plan(ForgetRequest request) {
            if (request.options().settings().containsKey("block-size")) {
                throw new io.anamnesis.api.InvalidRequestException("toyq takes no --block-size");
            }
            List<PlannedTensor> out = new ArrayList<>();
            List<ForgetPlan.Decision> decisions = new ArrayList<>();
            for (DenseTensor t : request.tensors()) {
                if (t.keep() || !t.isNumeric() || t.shape().rank() != 2) {
                    out.add(t.asStored());
                    decisions.add(new ForgetPlan.Decision(t.name(), t.asStored().dtype().name(), false,
                            t.keep() ? "--keep" : "vectors stay"));
                    continue;
                }
                int n = (int) t.elementCount();
                request.loss().expect(t.name());
                out.add(new PlannedTensor(t.name(), DType.I8, t.shape(), n, arena -> {
                    float[] v = new float[n];
                    DenseReader.open(t, arena).read(0, n, v, 0);
                    float s = scale(v);
                    return (first, count, dest) -> {
                        float[] back = new float[n];
                        for (int i = 0; i < n; i++) {
                            int q = Math.round(v[i] / s);
                            dest.set(ValueLayout.JAVA_BYTE, i, (byte) q);
                            back[i] = q * s;
                        }
                        request.loss().record(t.name(), 0, v, 0, back, 0, n);
                    };
                }));
                out.add(new PlannedTensor(t.name() + ".scale", DType.F32, Shape.SCALAR, 1, arena -> {
                    float[] v = new float[n];
                    DenseReader.open(t, arena).read(0, n, v, 0);
                    float s = scale(v);
                    return (first, count, dest) -> dest.set(LittleEndian.F32, 0, s);
                }));
                decisions.add(new ForgetPlan.Decision(t.name(), "int8", true, "matrix"));
            }
            return new ForgetPlan(out, Map.of("quantized_by", "toyq"), Map.of("toy.version", MetaValue.u32(1)), decisions,
                    request.options().pure() ? List.of("toyq: --pure changes nothing") : List.of());
        }

        static float scale(float[] v) {
            float amax = 0;
            for (float x : v) amax = Math.max(amax, Math.abs(x));
            return amax / 127;
        }
    }

    static Anamnesis withToyQuantizer() {
        Anamnesis base = Fakes.amn();
        return Anamnesis.of(base.readers(), base.writers(), base.dequantizers(), List.of(new ToyInt8()));
    }

    @Test
    void forgetsRecoveredWeightsAndKeepsVectorsThenSaysWhatWasLost() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Path report = dir.resolve("loss.json");
        Runs.Run r = amn(withToyQuantizer(), "forget", f.toString(), "--to", "INT8", "--report", report.toString());
        assertThat(r.code()).as(r.err()).isZero();
        Path out = dir.resolve("model-int8.safetensors");
        assertThat(r.out()).startsWith("wrote " + out + ": 2 tensors, 1 quantized to int8, 1 kept, in ")
                .contains("kept 1 as F32 (vectors stay)")
                // layer recovers to {0.25, -0.5, 0.75, 31.75}; s = 31.75 / 127 = 0.25, so q = {1, -2, 3, 127}: exact
                .contains("lost: MAE 0.000, RMSE 0.000, max |error| 0.000, SNR inf dB over 4 values");
        Map<String, String> meta = new LinkedHashMap<>();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, meta);
        assertThat(t.keySet()).containsExactly("layer", "layer.scale", "norm");
        assertThat(t.get("layer").dtype()).isEqualTo("I8");
        assertThat(t.get("layer").bytes()).containsExactly(1, -2, 3, 127);
        assertThat(meta).containsEntry("quantized_by", "toyq");
        JsonNode json = new ObjectMapper().readTree(report.toFile());
        assertThat(json.get("tensors").get(0).get("name").asText()).isEqualTo("layer");
        assertThat(json.get("tensors").get(0).get("loss").get("values").asLong()).isEqualTo(4);
        assertThat(json.get("tensors").get(1).get("quantized").asBoolean()).isFalse();
    }

    @Test
    void keepLeavesAMatchingTensorAsItIs() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Path out = dir.resolve("o.safetensors");
        Runs.Run r = amn(withToyQuantizer(), "quantize", f.toString(), "--to", "int8", "--keep", "^lay", "-o", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, new LinkedHashMap<>());
        assertThat(t.get("layer").dtype()).isEqualTo("F32");
        assertThat(r.out()).contains("0 quantized").contains("kept 1 as F32 (--keep)");
    }

    @Test
    void anUnknownTargetIsAUsageErrorListingTheTargets() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(withToyQuantizer(), "forget", f.toString(), "--to", "q4_k");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("unknown target 'q4_k'; targets: int8");
        Runs.Run none = amn(Fakes.amn(), "forget", f.toString(), "--to", "q4_k");
        assertThat(none.code()).isEqualTo(2);
        assertThat(none.err()).contains("no quantizer module is installed");
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("model.fake");
        }
    }

    @Test
    void aBadKeepPatternIsAUsageError() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(withToyQuantizer(), "forget", f.toString(), "--to", "int8", "--keep", "(");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("--keep '(' is not a regular expression");
    }

    @Test
    void reportHtmlIsOneSelfContainedPageWithBothPlots() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "scaled");
        Path report = dir.resolve("loss.html");
        Runs.Run r = amn(withToyQuantizer(), "forget", f.toString(), "--to", "int8", "-q", "--report", report.toString());
        assertThat(r.code()).as(r.err()).isZero();
        String html = Files.readString(report);
        assertThat(html).startsWith("<!DOCTYPE html>").endsWith("</html>\n")
                .contains("SNR by tensor", "How large the errors are", "<svg", "<circle", "<td>layer</td>", "kept")
                // nothing to fetch, nothing to run
                .doesNotContain("http:", "https:", "<script", "src=", "href=", "@import");
        // layer recovers to {0.5, -1, 1.5, 63.5}: s = 63.5/127 = 0.5, exact, so no error bar, 4 exact values
        assertThat(html).contains("no error to show", "4 values decoded exactly");
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString()).sorted())
                    .containsExactly("loss.html", "model-int8.safetensors", "model.fake");
        }
    }

    @Test
    void aReportThatIsNeitherJsonNorHtmlIsAUsageErrorBeforeAnyWork() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(withToyQuantizer(), "forget", f.toString(), "--to", "int8", "--report", dir.resolve("loss.txt").toString());
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).contains("name it .json", ".html");
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("model.fake");
        }
    }

    @Test
    void toAndLikeAreOneOrTheOther() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        assertThat(amn(withToyQuantizer(), "forget", f.toString()).err()).contains("give --to <type> or --like <ref>");
        Runs.Run both = amn(withToyQuantizer(), "forget", f.toString(), "--to", "int8", "--like", f.toString());
        assertThat(both.code()).isEqualTo(2);
        assertThat(both.err()).contains("not both");
        Runs.Run settings = amn(withToyQuantizer(), "forget", f.toString(), "--like", f.toString(), "--block-size", "64");
        assertThat(settings.code()).isEqualTo(2);
        assertThat(settings.err()).contains("--like takes the scheme and its settings from the reference; drop --block-size");
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("model.fake");
        }
    }

    @Test
    void likeARefWithNothingQuantizedOrNothingImitableIsATypedError() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Path plain = Fakes.write(dir, "plain.fake", "plain");
        Runs.Run none = amn(withToyQuantizer(), "forget", f.toString(), "--like", plain.toString());
        assertThat(none.code()).isEqualTo(6);
        assertThat(none.err()).contains("plain.fake holds no quantized tensor");
        // the toy quantizer does not imitate the toy scheme
        Runs.Run unknown = amn(withToyQuantizer(), "forget", f.toString(), "--like", f.toString());
        assertThat(unknown.code()).isEqualTo(6);
        assertThat(unknown.err()).contains("is quantized with toy, which no installed quantizer writes");
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString()).sorted()).containsExactly("model.fake", "plain.fake");
        }
    }

    @Test
    void likeHandsTheReferenceToTheImitatingQuantizer() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Path ref = Fakes.write(dir, "ref.fake", "scaled");
        java.util.List<String> seen = new ArrayList<>();
        Anamnesis base = Fakes.amn();
        Anamnesis imitating = Anamnesis.of(base.readers(), base.writers(), base.dequantizers(), List.of(new ToyInt8() {
            @Override
            public java.util.Optional<String> imitates(io.anamnesis.api.TensorArchive reference) {
                return reference.tensor("layer.q").map(e -> "int8");
            }

            @Override
            public ForgetPlan plan(ForgetRequest request) {
                seen.add(request.target() + " like " + request.options().like().orElseThrow().path().orElseThrow().getFileName());
                return super.plan(request);
            }
        }));
        Runs.Run r = amn(imitating, "forget", f.toString(), "--like", ref.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(seen).containsExactly("int8 like ref.fake");
        assertThat(dir.resolve("model-int8.safetensors")).isRegularFile();
    }

    @Test
    void aRequestTheQuantizerRefusesIsAUsageErrorAndItsWarningsArePrinted() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(withToyQuantizer(), "forget", f.toString(), "--to", "int8", "--block-size", "64");
        assertThat(r.code()).isEqualTo(2);
        assertThat(r.err()).isEqualTo("amn: toyq takes no --block-size\n");
        Runs.Run pure = amn(withToyQuantizer(), "forget", f.toString(), "--to", "int8", "--pure", "--quiet");
        assertThat(pure.code()).as(pure.err()).isZero();
        assertThat(pure.err()).contains("amn: warning: toyq: --pure changes nothing");
    }

    @Test
    void convertWithAQuantizersTargetAsDtypeRecoversAndQuantizesInOnePass() throws IOException {
        Path f = Fakes.write(dir, "model.fake", "ok");
        Runs.Run r = amn(withToyQuantizer(), "convert", f.toString(), "--to", "safetensors", "--dtype", "int8");
        assertThat(r.code()).as(r.err()).isZero();
        Path out = dir.resolve("model-int8.safetensors");
        assertThat(r.out()).startsWith("wrote " + out + ": 2 tensors, 1 quantized to int8, 1 kept");
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, new LinkedHashMap<>());
        assertThat(t.get("layer").dtype()).isEqualTo("I8");
        assertThat(t.get("layer").bytes()).containsExactly(1, -2, 3, 127);

        Runs.Run unknown = amn(withToyQuantizer(), "convert", f.toString(), "--to", "safetensors", "--dtype", "q9");
        assertThat(unknown.code()).isEqualTo(2);
        assertThat(unknown.err()).contains("--dtype 'q9' is neither a recovery dtype (bf16, f16, f32) nor a target")
                .contains("(targets: int8)");
        Runs.Run stored = amn(withToyQuantizer(), "convert", f.toString(), "--to", "safetensors", "--dtype", "int8", "--as-stored");
        assertThat(stored.code()).isEqualTo(2);
        // --as-stored recovers nothing: a recovery --dtype beside it was ignored, now it is refused
        Runs.Run storedF32 = amn(withToyQuantizer(), "convert", f.toString(), "--to", "safetensors", "--dtype", "f32", "--as-stored");
        assertThat(storedF32.code()).isEqualTo(2);
        assertThat(storedF32.err()).contains("--as-stored copies tensors as stored; --dtype f32 would recover them");
        assertThat(dir.resolve("model-stored.safetensors")).doesNotExist();
    }

    /**
     * forget takes the fast path (FastPath) on the lines it can read itself and leaves the rest
     * to picocli: either way the same exit code, messages and bytes written, including for
     * every usage error (a missing value, an option given twice, a number that is not one).
     */
    @ParameterizedTest
    @ValueSource(strings = {"forget F --to int8 -o OUT", "quantize F --to INT8 -q -o OUT --threads 1",
            "forget F --to int8 --keep ^lay --keep ^no -o OUT", "forget F --to int8 --pure --quiet -o OUT",
            "forget F --to int8 --report REPORT -o OUT -q", "forget F --to q4_k -o OUT", "forget F -o OUT",
            "forget F --to int8 --to int8 -o OUT", "forget F --to int8 --pure --pure -o OUT",
            "forget F --to int8 --block-size x -o OUT", "forget F --to int8 --block-size 64 -o OUT",
            "forget F --to int8 --keep ( -o OUT", "forget F --to -o OUT", "forget F --to int8 -o",
            "forget F G --to int8 -o OUT", "forget F --to int8 --like F -o OUT", "forget F --to int8 --json -o OUT",
            "forget F --to int8 --double-quant --granularity block --scale-dtype f32 -o OUT",
            "forget --debug F --to int8 -o OUT", "forget F --to int8 --imatrix MISSING -o OUT",
            "forget F --to int8 -o OUT --threads 0", "forget MISSING --to int8 -o OUT"})
    void forgetsFastPathAndPicocliAgree(String line) throws IOException {
        Path f = Fakes.write(dir, "m.fake", "ok");
        Runs.Run[] runs = new Runs.Run[2];
        byte[][] written = new byte[2][];
        String[] reports = new String[2];
        for (int route = 0; route < 2; route++) {
            Path out = dir.resolve("out-" + route + ".safetensors");
            Path report = dir.resolve("loss-" + route + ".json");
            String[] args = line.replace("OUT", out.toString()).replace("REPORT", report.toString())
                    .replace("MISSING", dir.resolve("none.fake").toString()).replace("G", f.toString())
                    .replace("F", f.toString()).split(" ");
            runs[route] = Runs.amn(withToyQuantizer(), Map.of(), dir, route == 0, args);
            written[route] = Files.exists(out) ? Files.readAllBytes(out) : null;
            reports[route] = Files.exists(report) ? Files.readString(report) : null;
        }
        assertThat(runs[0].code()).as(line + ": " + runs[0].err()).isEqualTo(runs[1].code());
        assertThat(runs[0].err().replace("out-0", "out-X").replaceAll("\tat .*\\R", ""))
                .isEqualTo(runs[1].err().replace("out-1", "out-X").replaceAll("\tat .*\\R", ""));
        // the summary line ends with the run's duration, which may differ
        assertThat(runs[0].out().replace("out-0", "out-X").replaceAll("in [0-9.]+ s", "in T s"))
                .isEqualTo(runs[1].out().replace("out-1", "out-X").replaceAll("in [0-9.]+ s", "in T s"));
        assertThat(written[0]).isEqualTo(written[1]);
        assertThat(reports[0] == null ? null : reports[0].replace("out-0", "out-X"))
                .isEqualTo(reports[1] == null ? null : reports[1].replace("out-1", "out-X"));
    }

    /** forget's usual line is read without picocli (FastPath), and writes what it is asked to. */
    @Test
    void theFastPathTakesForgetAndWrites() throws IOException {
        Path f = Fakes.write(dir, "m.fake", "ok");
        Path out = dir.resolve("fast.safetensors");
        java.io.StringWriter said = new java.io.StringWriter();
        Amn.Context ctx = new Amn.Context(ForgetCommandTest::withToyQuantizer, new java.io.PrintWriter(said),
                new java.io.PrintWriter(said), Map.of(), dir, false);
        var code = FastPath.run(ctx, "quantize", f.toString(), "--to", "int8", "--keep", "^lay", "-o", out.toString(), "-q");
        assertThat(code).as(said.toString()).hasValue(0);
        assertThat(said.toString()).isEmpty();
        Map<String, Runs.Stored> t = Runs.readSafetensors(out, new LinkedHashMap<>());
        assertThat(t.get("layer").dtype()).isEqualTo("F32"); // kept by --keep
        // what the fast path leaves to picocli: a second --to, a value that is an option
        assertThat(FastPath.run(ctx, "forget", f.toString(), "--to", "int8", "--to", "int8")).isEmpty();
        assertThat(FastPath.run(ctx, "forget", f.toString(), "--to", "--pure")).isEmpty();
        assertThat(FastPath.run(ctx, "forget", f.toString(), "--to=int8")).isEmpty();
    }
}
