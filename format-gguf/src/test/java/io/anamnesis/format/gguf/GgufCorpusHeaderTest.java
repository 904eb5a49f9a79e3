package io.anamnesis.format.gguf;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.ParseLimits;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.util.Optional;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every {@code .gguf} of the shared corpus, header only: tensor names, ne, row-major shapes
 * and type geometry must be what each case's {@code case.json} says.
 */
class GgufCorpusHeaderTest {

    static Path corpus() {
        String p = System.getProperty("anamnesis.corpus", System.getenv("ANAMNESIS_CORPUS"));
        return p == null ? null : Path.of(p);
    }

    @TestFactory
    Stream<DynamicTest> everyCorpusGgufHeaderMatchesItsCase() throws IOException {
        Path root = corpus();
        if (root == null || !Files.isDirectory(root)) {
            return Stream.of(DynamicTest.dynamicTest("corpus", () -> Assumptions.abort("shared corpus not found")));
        }
        List<DynamicTest> tests = new ArrayList<>();
        for (String family : List.of("ggml", "gguf")) {
            Path dir = root.resolve(family);
            if (!Files.isDirectory(dir)) continue;
            try (Stream<Path> cases = Files.list(dir)) {
                for (Path c : cases.sorted().toList()) {
                    Path input = c.resolve("input.gguf");
                    if (!Files.isRegularFile(input)) continue;
                    tests.add(DynamicTest.dynamicTest(family + "/" + c.getFileName(), () -> check(c, input)));
                    tests.add(DynamicTest.dynamicTest(family + "/" + c.getFileName() + " rewritten",
                            () -> rewritesByteForByte(input)));
                }
            }
        }
        // ggml-quantize keeps ggml's own output in expected.gguf: one tensor 'weight' [16, 2048].
        Path quantize = root.resolve("ggml-quantize");
        if (Files.isDirectory(quantize)) {
            try (Stream<Path> cases = Files.list(quantize)) {
                for (Path c : cases.sorted().toList()) {
                    Path gguf = c.resolve("expected.gguf");
                    if (!Files.isRegularFile(gguf)) continue;
                    String id = "ggml-quantize/" + c.getFileName();
                    tests.add(DynamicTest.dynamicTest(id, () -> checkQuantized(c, gguf)));
                    tests.add(DynamicTest.dynamicTest(id + " rewritten", () -> rewritesByteForByte(gguf)));
                }
            }
        }
        assertThat(tests).as("corpus .gguf inputs").isNotEmpty();
        return tests.stream();
    }

    private static void check(Path caseDir, Path input) throws IOException {
        JsonNode json = new ObjectMapper().readTree(caseDir.resolve("case.json").toFile());
        JsonNode params = json.path("params");
        GgufHeader h = GgufReader.readHeader(input, ParseLimits.defaults());
        assertThat(h.version()).isEqualTo(3);
        GgufType type = GgufType.byId(params.path("ggml_type_id").asInt()).orElseThrow();
        Map<String, long[]> expectedShapes = new HashMap<>();
        if (params.has("tensors")) {
            params.path("tensors").properties().forEach(e -> {
                expectedShapes.put(e.getKey(), longs(e.getValue().path("shape")));
                GgufTensorInfo t = find(h, e.getKey());
                assertThat(t.ne()).as("ne of " + e.getKey()).containsExactly(longs(e.getValue().path("gguf_ne")));
            });
            assertThat(type.blockElements()).isEqualTo(params.path("block_size").asInt());
            assertThat(type.blockBytes()).isEqualTo(params.path("type_size").asInt());
        } else {
            json.path("expected_tensors").properties().forEach(e ->
                    expectedShapes.put(e.getKey(), longs(e.getValue().path("shape"))));
            assertThat(type.blockElements()).isEqualTo(params.path("block_elements").asInt());
            assertThat(type.blockBytes()).isEqualTo(params.path("block_bytes").asInt());
            assertThat(h.alignment()).isEqualTo(params.path("alignment").asLong());
            if (params.has("ne")) assertThat(h.tensors().getFirst().ne()).containsExactly(longs(params.path("ne")));
            params.path("gguf_kv").properties().forEach(e ->
                    assertThat(h.metadata().get(e.getKey()).render()).isEqualTo(e.getValue().asText()));
        }
        assertThat(h.tensors()).hasSize(expectedShapes.size());
        for (var e : expectedShapes.entrySet()) {
            GgufTensorInfo t = find(h, e.getKey());
            assertThat(t.shape().toArray()).as("shape of " + e.getKey()).containsExactly(e.getValue());
            assertThat(t.type()).isEqualTo(type);
            assertThat(t.type().name()).isEqualToIgnoringCase(params.path("ggml_type").asText());
        }
    }

    /**
     * The type's block geometry must account for every byte: the file ends exactly where the
     * one tensor's data, padded to the alignment, ends.
     */
    private static void checkQuantized(Path caseDir, Path gguf) throws IOException {
        JsonNode params = new ObjectMapper().readTree(caseDir.resolve("case.json").toFile()).path("params");
        GgufHeader h = GgufReader.readHeader(gguf, ParseLimits.defaults());
        GgufType type = GgufType.byId(params.path("ggml_type_id").asInt()).orElseThrow();
        assertThat(type.blockElements()).isEqualTo(params.path("block_size").asInt());
        assertThat(type.blockBytes()).isEqualTo(params.path("type_size").asInt());
        GgufTensorInfo t = find(h, "weight");
        assertThat(t.type()).isEqualTo(type);
        assertThat(t.shape().toArray()).containsExactly(16, 2048);
        long padded = (t.byteSize() + h.alignment() - 1) / h.alignment() * h.alignment();
        assertThat(Files.size(gguf)).isEqualTo(h.dataStart() + t.offset() + padded);
    }

    /**
     * gguf-py and ggml both pad every tensor to the alignment and write KVs in order, as
     * our writer does, so passing every tensor through must give back the very same file.
     */
    private static void rewritesByteForByte(Path input) throws IOException {
        Path out = Files.createTempFile("rewrite", ".gguf");
        try (TensorArchive a = new GgufReader().open(input, ParseLimits.defaults())) {
            List<PlannedTensor> tensors = new ArrayList<>();
            for (TensorEntry e : a.tensors()) {
                tensors.add(new PlannedTensor(e.name(), e.dtype(), e.shape(), e.dtype().blockElements(), arena -> {
                    MemorySegment src = a.data(e, arena);
                    return (first, count, dest) -> MemorySegment.copy(src, e.dtype().byteSize(first), dest, 0, dest.byteSize());
                }));
            }
            new GgufWriter().write(new OutputPlan(Optional.of(a), a.metadata(), tensors), out, WriteOptions.threads(2));
            assertThat(Files.readAllBytes(out)).isEqualTo(Files.readAllBytes(input));
        } finally {
            Files.deleteIfExists(out);
        }
    }

    private static GgufTensorInfo find(GgufHeader h, String name) {
        return h.tensors().stream().filter(t -> t.name().equals(name)).findFirst()
                .orElseThrow(() -> new AssertionError("no tensor " + name));
    }

    private static long[] longs(JsonNode array) {
        long[] out = new long[array.size()];
        for (int i = 0; i < out.length; i++) out[i] = array.get(i).asLong();
        return out;
    }
}
