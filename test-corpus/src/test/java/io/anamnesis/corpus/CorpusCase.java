package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Stream;

/** One case folder of the shared corpus: {@code input.<ext>}, {@code expected.*}, {@code case.json}. */
record CorpusCase(Path dir, String family, String name, String operation, JsonNode json) {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** The corpus root: -Danamnesis.corpus or ANAMNESIS_CORPUS, when that folder exists. */
    static Optional<Path> root() {
        String configured = System.getProperty("anamnesis.corpus", System.getenv("ANAMNESIS_CORPUS"));
        if (configured == null || configured.isBlank()) return Optional.empty();
        Path p = Path.of(configured).toAbsolutePath().normalize();
        return Files.isDirectory(p) ? Optional.of(p) : Optional.empty();
    }

    /**
     * The second corpus root, Hugging Face model folders converted to GGUF ({@code hf-to-gguf}):
     * -Danamnesis.corpus.hf or ANAMNESIS_CORPUS_HF, else {@code corpus-hf} beside the first root,
     * when that folder exists.
     */
    static Optional<Path> hfRoot() {
        String configured = System.getProperty("anamnesis.corpus.hf", System.getenv("ANAMNESIS_CORPUS_HF"));
        Optional<Path> p = configured == null || configured.isBlank()
                ? root().map(r -> r.resolveSibling("corpus-hf"))
                : Optional.of(Path.of(configured).toAbsolutePath().normalize());
        return p.filter(Files::isDirectory);
    }

    /** Every case of both roots, each present root's cases sorted by family and name. */
    static List<CorpusCase> everyRoot() {
        List<CorpusCase> out = new ArrayList<>();
        root().ifPresent(r -> out.addAll(all(r)));
        hfRoot().ifPresent(r -> out.addAll(all(r)));
        return out;
    }

    /** Every case under the root, sorted by family and name. */
    static List<CorpusCase> all(Path root) {
        List<CorpusCase> out = new ArrayList<>();
        try (Stream<Path> families = Files.list(root)) {
            for (Path family : families.filter(Files::isDirectory).sorted().toList()) {
                try (Stream<Path> cases = Files.list(family)) {
                    for (Path dir : cases.filter(d -> Files.isRegularFile(d.resolve("case.json"))).sorted().toList()) {
                        JsonNode json = JSON.readTree(dir.resolve("case.json").toFile());
                        out.add(new CorpusCase(dir, family.getFileName().toString(), dir.getFileName().toString(),
                                json.path("operation").asText(), json));
                    }
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out;
    }

    String id() {
        return family + "/" + name;
    }

    /** The single {@code input.*} file. */
    Path input() {
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> p.getFileName().toString().startsWith("input.")).findFirst()
                    .orElseThrow(() -> new IllegalStateException(id() + " has no input file"));
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    Path expected() {
        return dir.resolve("expected.safetensors");
    }

    String expectedDtype() {
        return json.path("expected_dtype").asText("");
    }

    /** {@code expect_error} plus {@code also_accept}. */
    List<String> acceptedErrors() {
        List<String> kinds = new ArrayList<>();
        kinds.add(json.path("expect_error").asText());
        json.path("also_accept").forEach(n -> kinds.add(n.asText()));
        return kinds;
    }
}
