package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.format.gguf.GgufArchive;
import io.anamnesis.format.gguf.GgufValue;
import io.anamnesis.format.gguf.GgufValueType;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
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
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Metadata survives every conversion (issue 16), on the corpus's real llama GGUF files: each
 * {@code input.gguf} of {@code llama-quantize} goes through {@code amn convert --to
 * safetensors} and back {@code --to gguf} (in-process), and must come back with the same
 * key/values (types, values, float32 bits, whole arrays) and the same tensor bytes. The
 * safetensors file in between is read with Jackson, not with our reader, to check the
 * documented encoding itself. Then llama.cpp ({@code llama_ref.py run}) must load the result
 * and compute exactly the logits it computes for the original ({@code
 * params.llama_run.input_model_run.sha256_f32}), when the oracles are set up.
 */
class MetadataRoundTripTest {
    private static final String FAMILY = "llama-quantize";

    /** Every llama-quantize case, each a test of its input. */
    private static List<CorpusCase> cases() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) return List.of();
        return CorpusCase.all(root.get()).stream().filter(c -> c.family().equals(FAMILY)).toList();
    }

    @TestFactory
    Stream<DynamicTest> ggufThroughSafetensorsAndBackKeepsEveryKeyValueAndTensor() {
        List<CorpusCase> cases = cases();
        if (cases.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("llama-quantize inputs", () -> Assumptions.abort(
                    "shared corpus (llama-quantize) not found: the metadata round trip is skipped")));
        }
        return cases.stream().map(c -> DynamicTest.dynamicTest(c.id(), () -> {
            Path tmp = Files.createTempDirectory("amn-metadata-");
            try {
                Path back = roundTrip(c, tmp);
                assertSameFile(c, c.input(), back);
            } finally {
                deleteTree(tmp);
            }
        }));
    }

    @TestFactory
    Stream<DynamicTest> llamaCppComputesTheSameLogitsAfterTheRoundTrip() {
        List<CorpusCase> cases = cases();
        Optional<String> noOracle = oracleMissing();
        if (cases.isEmpty() || noOracle.isPresent()) {
            String why = cases.isEmpty() ? "shared corpus (llama-quantize) not found" : noOracle.get();
            return Stream.of(DynamicTest.dynamicTest("llama.cpp on the round trip", () -> Assumptions.abort(
                    why + ": llama_ref.py run on the round-tripped GGUF is skipped")));
        }
        // one run per distinct input (19 cases hold 2 models); each case's digest is checked
        Map<String, List<CorpusCase>> byInput = new LinkedHashMap<>();
        for (CorpusCase c : cases) {
            byInput.computeIfAbsent(c.json().path("files").path("input.gguf").path("sha256").asText(), k -> new ArrayList<>()).add(c);
        }
        return byInput.values().stream().map(group -> DynamicTest.dynamicTest(
                group.getFirst().json().path("params").path("input_model").path("name").asText() + " ("
                        + group.size() + " cases)", () -> {
                    CorpusCase c = group.getFirst();
                    Path tmp = Files.createTempDirectory("amn-metadata-llama-");
                    try {
                        Path back = roundTrip(c, tmp);
                        JsonNode run = llamaRun(back, c.json().path("params").path("llama_run").path("tokens"));
                        assertThat(run.path("ok").asBoolean()).as(c.id() + ": llama.cpp loads the round-tripped file: " + run).isTrue();
                        for (CorpusCase each : group) {
                            JsonNode want = each.json().path("params").path("llama_run").path("input_model_run");
                            assertThat(run.path("sha256_f32").asText()).as(each.id() + ": logits of the round trip")
                                    .isEqualTo(want.path("sha256_f32").asText());
                            assertThat(run.path("argmax").asInt()).isEqualTo(want.path("argmax").asInt());
                        }
                    } finally {
                        deleteTree(tmp);
                    }
                }));
    }

    /** input.gguf -> safetensors -> gguf through amn; checks the safetensors in between; returns the GGUF. */
    private static Path roundTrip(CorpusCase c, Path tmp) throws IOException {
        Path st = tmp.resolve("model.safetensors");
        Path back = tmp.resolve("back.gguf");
        CorpusCliTest.Run there = CorpusCliTest.amn("convert", "--to", "safetensors", "-o", st.toString(), c.input().toString());
        assertThat(there.code()).as(c.id() + " convert --to safetensors: " + there.err()).isZero();
        int keys;
        try (TensorArchive in = CorpusApiTest.AMN.open(c.input())) {
            keys = ((GgufArchive) in).header().metadata().size();
        }
        assertThat(there.out()).as(c.id() + " summary").contains("; " + keys + " metadata keys").doesNotContain("dropped");
        checkEncoding(c, st);
        CorpusCliTest.Run home = CorpusCliTest.amn("convert", "--quiet", "--to", "gguf", "-o", back.toString(), st.toString());
        assertThat(home.code()).as(c.id() + " convert --to gguf: " + home.err()).isZero();
        return back;
    }

    /**
     * The {@code __metadata__} of the safetensors file, read with Jackson: the marker, then
     * each GGUF key under its own name as a typed object whose value is whole (the 256-token
     * vocabulary, its scores as float32 decimals, the token types), and plain strings as they are.
     */
    private static void checkEncoding(CorpusCase c, Path st) throws IOException {
        JsonNode meta = safetensorsHeader(st).get("__metadata__");
        assertThat(meta.get("anamnesis.metadata_encoding").asText()).isEqualTo("typed-json/1");
        assertThat(meta.get("general.architecture").asText()).isEqualTo("llama");
        ObjectMapper json = new ObjectMapper();
        JsonNode eps = json.readTree(meta.get("llama.attention.layer_norm_rms_epsilon").asText());
        assertThat(eps.get("type").asText()).isEqualTo("f32");
        // rms_norm_eps of case.json's input_model, as float32 (the model was written by gguf-py)
        assertThat(Float.floatToRawIntBits(Float.parseFloat(eps.get("value").asText())))
                .isEqualTo(Float.floatToRawIntBits((float) c.json().path("params").path("input_model").path("rms_norm_eps").asDouble()));
        JsonNode tokens = json.readTree(meta.get("tokenizer.ggml.tokens").asText());
        assertThat(tokens.get("type").asText()).isEqualTo("array");
        assertThat(tokens.get("item_type").asText()).isEqualTo("string");
        assertThat(tokens.get("value").size()).isEqualTo(c.json().path("params").path("input_model").path("n_vocab").asInt());
        try (TensorArchive in = CorpusApiTest.AMN.open(c.input())) {
            GgufValue original = ((GgufArchive) in).header().metadata().get("tokenizer.ggml.tokens");
            List<Object> words = ((GgufValue.GgufArray) original.value()).elements();
            for (int i = 0; i < words.size(); i++) {
                assertThat(tokens.get("value").get(i).asText()).as("token %d", i).isEqualTo(words.get(i));
            }
            GgufValue scores = ((GgufArchive) in).header().metadata().get("tokenizer.ggml.scores");
            List<Object> floats = ((GgufValue.GgufArray) scores.value()).elements();
            JsonNode encoded = json.readTree(meta.get("tokenizer.ggml.scores").asText()).get("value");
            for (int i = 0; i < floats.size(); i++) {
                assertThat(Float.floatToRawIntBits(Float.parseFloat(encoded.get(i).asText())))
                        .as("score %d", i).isEqualTo(Float.floatToRawIntBits((Float) floats.get(i)));
            }
        }
    }

    /** Same key/values in the same order (types, values, float bits, arrays whole) and the same tensors and bytes. */
    private static void assertSameFile(CorpusCase c, Path original, Path back) {
        try (TensorArchive a = CorpusApiTest.AMN.open(original); TensorArchive b = CorpusApiTest.AMN.open(back);
             Arena arena = Arena.ofConfined()) {
            Map<String, GgufValue> want = ((GgufArchive) a).header().metadata();
            Map<String, GgufValue> got = ((GgufArchive) b).header().metadata();
            assertThat(List.copyOf(got.keySet())).as(c.id() + " keys").isEqualTo(List.copyOf(want.keySet()));
            want.forEach((k, v) -> assertSameValue(c.id() + " " + k, v.type(), v.value(), got.get(k).type(), got.get(k).value()));
            assertThat(b.tensors().stream().map(TensorEntry::name).sorted().toList()).as(c.id() + " tensor names")
                    .isEqualTo(a.tensors().stream().map(TensorEntry::name).sorted().toList());
            for (TensorEntry e : a.tensors()) {
                TensorEntry f = b.tensor(e.name()).orElseThrow();
                assertThat(f.dtype()).as(c.id() + " " + e.name() + " dtype").isEqualTo(e.dtype());
                assertThat(f.shape()).as(c.id() + " " + e.name() + " shape").isEqualTo(e.shape());
                assertThat(b.data(f, arena).toArray(ValueLayout.JAVA_BYTE)).as(c.id() + " " + e.name() + " bytes")
                        .isEqualTo(a.data(e, arena).toArray(ValueLayout.JAVA_BYTE));
            }
        }
    }

    private static void assertSameValue(String what, GgufValueType wantType, Object want, GgufValueType gotType, Object got) {
        assertThat(gotType).as(what + " type").isEqualTo(wantType);
        switch (wantType) {
            case FLOAT32 -> assertThat(Float.floatToRawIntBits((Float) got)).as(what + " float32 bits")
                    .isEqualTo(Float.floatToRawIntBits((Float) want));
            case FLOAT64 -> assertThat(Double.doubleToRawLongBits((Double) got)).as(what + " float64 bits")
                    .isEqualTo(Double.doubleToRawLongBits((Double) want));
            case ARRAY -> {
                GgufValue.GgufArray w = (GgufValue.GgufArray) want, g = (GgufValue.GgufArray) got;
                assertThat(g.elementType()).as(what + " element type").isEqualTo(w.elementType());
                assertThat(g.elements()).as(what + " length").hasSameSizeAs(w.elements());
                for (int i = 0; i < w.elements().size(); i++) {
                    assertSameValue(what + "[" + i + "]", w.elementType(), w.elements().get(i), g.elementType(), g.elements().get(i));
                }
            }
            default -> assertThat(got).as(what).isEqualTo(want);
        }
    }

    static JsonNode safetensorsHeader(Path file) throws IOException {
        byte[] bytes = Files.readAllBytes(file);
        long n = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        return new ObjectMapper().readTree(new String(bytes, 8, (int) n, StandardCharsets.UTF_8));
    }

    // ------------------------------------------------------------------ llama.cpp, through llama_ref.py

    /** llama_ref.py beside the corpus ({@code <corpus>/../tools/oracles}). */
    private static Optional<Path> llamaRef() {
        return CorpusCase.root().map(r -> r.getParent().resolve("tools/oracles/llama_ref.py")).filter(Files::isRegularFile);
    }

    /** Why the oracle cannot run here, if it cannot: ORACLE_CACHE unset, no llama_ref.py, no working python3. */
    private static Optional<String> oracleMissing() {
        String cache = System.getenv("ORACLE_CACHE");
        if (cache == null || cache.isBlank() || !Files.isDirectory(Path.of(cache))) {
            return Optional.of("ORACLE_CACHE is not set to the oracles' cache (see tools/oracles/README.md)");
        }
        if (llamaRef().isEmpty()) return Optional.of("tools/oracles/llama_ref.py not found beside the corpus");
        try {
            Process p = new ProcessBuilder("python3", "-c", "import numpy").redirectErrorStream(true).start();
            p.getInputStream().readAllBytes();
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) return Optional.of("python3 with numpy does not run");
        } catch (IOException | InterruptedException e) {
            return Optional.of("python3 does not run (" + e.getMessage() + ")");
        }
        return Optional.empty();
    }

    private static JsonNode llamaRun(Path model, JsonNode tokens) throws IOException, InterruptedException {
        List<String> ids = new ArrayList<>();
        tokens.forEach(t -> ids.add(t.asText()));
        Path err = Files.createTempFile("llama-ref-err", ".txt");
        try {
            Process p = new ProcessBuilder("python3", llamaRef().orElseThrow().toString(), "run", model.toString(),
                    "--tokens", String.join(",", ids)).redirectError(err.toFile()).start();
            String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!p.waitFor(300, TimeUnit.SECONDS)) {
                p.destroyForcibly();
                fail("llama_ref.py run did not finish in 300 s");
            }
            assertThat(p.exitValue()).as("llama_ref.py run: " + Files.readString(err)).isZero();
            return new ObjectMapper().readTree(out);
        } finally {
            Files.deleteIfExists(err);
        }
    }

    private static void deleteTree(Path dir) throws IOException {
        try (Stream<Path> all = Files.walk(dir)) {
            for (Path p : all.sorted((x, y) -> y.getNameCount() - x.getNameCount()).toList()) Files.deleteIfExists(p);
        }
    }
}
