package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.spi.FormatWriter;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorIOException;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class InputRefTest {
    static final String HEX = "ab".repeat(32);

    @TempDir
    Path dir;

    /** A fake Ollama store: manifest of model:tag with a model layer, and its blob. */
    private Path store(String manifestPath, String blobContent) throws IOException {
        Path models = dir.resolve("models");
        Path manifest = models.resolve("manifests").resolve(manifestPath);
        Files.createDirectories(manifest.getParent());
        Files.writeString(manifest, """
                {"schemaVersion":2,"mediaType":"application/vnd.docker.distribution.manifest.v2+json",
                 "config":{"mediaType":"application/vnd.docker.container.image.v1+json","digest":"sha256:%s","size":7},
                 "layers":[{"mediaType":"application/vnd.ollama.image.template","digest":"sha256:%s","size":3},
                           {"mediaType":"application/vnd.ollama.image.model","digest":"sha256:%s","size":9}]}
                """.formatted("00".repeat(32), "11".repeat(32), HEX));
        Files.createDirectories(models.resolve("blobs"));
        if (blobContent != null) Files.writeString(models.resolve("blobs").resolve("sha256-" + HEX), blobContent);
        return models;
    }

    @Test
    void bareNameIsInTheLibraryWithTagLatest() {
        InputRef.OllamaName n = InputRef.OllamaName.parse("llama3.2");
        assertThat(n.manifest(Path.of("m"))).isEqualTo(Path.of("m/manifests/registry.ollama.ai/library/llama3.2/latest"));
        assertThat(n.display()).isEqualTo("llama3.2:latest");
        assertThat(n.fileStem()).isEqualTo("llama3.2-latest");
    }

    @Test
    void userModelAndTagAndHostedNames() {
        assertThat(InputRef.OllamaName.parse("user/model:v1").manifest(Path.of("m")))
                .isEqualTo(Path.of("m/manifests/registry.ollama.ai/user/model/v1"));
        assertThat(InputRef.OllamaName.parse("qwen3:0.6b").manifest(Path.of("m")))
                .isEqualTo(Path.of("m/manifests/registry.ollama.ai/library/qwen3/0.6b"));
        assertThat(InputRef.OllamaName.parse("hf.co/org/repo-GGUF:Q4_K_M").manifest(Path.of("m")))
                .isEqualTo(Path.of("m/manifests/hf.co/org/repo-GGUF/Q4_K_M"));
    }

    @Test
    void malformedReferencesAreUsageErrors() {
        for (String bad : List.of("", ":tag", "model:", "../x", "a/../b", "model:../../x", "a/b/c/d/..", "x y")) {
            assertThatThrownBy(() -> InputRef.OllamaName.parse(bad)).as(bad).isInstanceOf(UsageException.class);
        }
    }

    @Test
    void resolvesTheModelLayerBlob() throws IOException {
        Path models = store("registry.ollama.ai/library/tiny/latest", "FAKE ok\n");
        InputRef ref = InputRef.of("ollama:tiny", models);
        assertThat(ref.file()).isEqualTo(models.resolve("blobs/sha256-" + HEX));
        assertThat(ref.fromOllama()).isTrue();
        assertThat(ref.displayName()).isEqualTo("tiny-latest");
    }

    @Test
    void missingManifestOrBlobIsIoAndBadManifestIsMalformed() throws IOException {
        Path models = store("registry.ollama.ai/library/tiny/latest", null);
        assertThatThrownBy(() -> InputRef.of("ollama:tiny:7b", models)).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("not found").hasMessageContaining("ollama pull tiny:7b");
        assertThatThrownBy(() -> InputRef.of("ollama:tiny", models)).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("blob");
        assertThatThrownBy(() -> InputRef.of("ollama:tiny", dir.resolve("nowhere"))).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("OLLAMA_MODELS");
        Path manifest = models.resolve("manifests/registry.ollama.ai/library/broken/latest");
        Files.createDirectories(manifest.getParent());
        Files.writeString(manifest, "{\"layers\":[{\"mediaType\":");
        assertThatThrownBy(() -> InputRef.of("ollama:broken", models)).isInstanceOf(MalformedFileException.class);
        Files.writeString(manifest, "{\"layers\":[{\"mediaType\":\"application/vnd.ollama.image.model\",\"digest\":\"sha256:../../etc\"}]}");
        assertThatThrownBy(() -> InputRef.of("ollama:broken", models)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("not sha256");
        Files.writeString(manifest, "{\"layers\":[]}");
        assertThatThrownBy(() -> InputRef.of("ollama:broken", models)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("no layer of type application/vnd.ollama.image.model");
    }

    /**
     * A manifest that is a FIFO hung the read, one linking to an endless device ran the heap
     * out (its size reads 0); a blob that is not a regular file was called missing.
     */
    @Test
    void aManifestThatIsNotARegularFileOrNeverEndsIsRefusedAtOnce() throws Exception {
        Path models = store("registry.ollama.ai/library/tiny/latest", "FAKE ok\n");
        Path manifests = models.resolve("manifests/registry.ollama.ai/library/odd");
        Files.createDirectories(manifests);
        Path fifo = manifests.resolve("fifo");
        assertThat(new ProcessBuilder("mkfifo", fifo.toString()).start().waitFor()).isZero();
        assertThatThrownBy(() -> InputRef.of("ollama:odd:fifo", models)).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("is not a regular file");
        // an endless manifest: a file past the limit stands for /dev/zero here (a test points at no device)
        Path big = manifests.resolve("big");
        Files.write(big, new byte[InputRef.MAX_MANIFEST_BYTES + 10]);
        assertThatThrownBy(() -> InputRef.of("ollama:odd:big", models)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("too large to be a manifest");
        // the blob the good manifest names, replaced by a FIFO
        Path blob = models.resolve("blobs/sha256-" + HEX);
        Files.delete(blob);
        assertThat(new ProcessBuilder("mkfifo", blob.toString()).start().waitFor()).isZero();
        assertThatThrownBy(() -> InputRef.of("ollama:tiny", models)).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("is not a regular file");
    }

    @Test
    void everyCommandTakesOllamaReferencesFromOllamaModels() throws IOException {
        Path models = store("registry.ollama.ai/user/tiny/v2", "FAKE ok\n");
        Map<String, String> env = Map.of("OLLAMA_MODELS", models.toString());
        Runs.Run inspect = Runs.amn(Fakes.amn(), env, dir, true, "inspect", "ollama:user/tiny:v2");
        assertThat(inspect.code()).as(inspect.err()).isZero();
        assertThat(inspect.out()).contains("file        ollama:user/tiny:v2", "format      fake");
        Runs.Run parse = Runs.amn(Fakes.amn(), env, dir, false, "parse", "--json", "ollama:user/tiny:v2");
        assertThat(parse.code()).isZero();
        assertThat(parse.json().get("input").asText()).isEqualTo("ollama:user/tiny:v2");
        Runs.Run missing = Runs.amn(Fakes.amn(), env, dir, true, "inspect", "ollama:user/tiny:v3");
        assertThat(missing.code()).isEqualTo(7);
        assertThat(missing.err()).startsWith("amn: ollama model user/tiny:v3 not found");
    }

    @Test
    void homeStoreIsTheDefault() throws IOException {
        Path models = store("registry.ollama.ai/library/tiny/latest", "FAKE ok\n");
        Path home = dir.resolve("home");
        Files.createDirectories(home.resolve(".ollama"));
        Files.move(models, home.resolve(".ollama/models"));
        Runs.Run r = Runs.amn(Fakes.amn(), Map.of(), home, true, "parse", "ollama:tiny");
        assertThat(r.code()).as(r.err()).isZero();
    }

    @Test
    void derivedOutputNames() throws IOException {
        assertThat(Outputs.derivedName(InputRef.of("some/model.safetensors", dir), "bf16", "safetensors"))
                .isEqualTo("model-bf16.safetensors");
        assertThat(Outputs.derivedName(InputRef.of("model.Q4_K_M.gguf", dir), "f32", "safetensors"))
                .isEqualTo("model.Q4_K_M-f32.safetensors");
        assertThat(Outputs.derivedName(InputRef.of("noext", dir), "f16", "gguf")).isEqualTo("noext-f16.gguf");
        Path in = Fakes.write(dir, "m.fake", "ok");
        Anamnesis amn = Fakes.amn();
        FormatWriter writer = amn.writers().getFirst();
        String ext = writer.fileExtensions().getFirst();
        assertThat(Outputs.choose(InputRef.of(in.toString(), dir), Optional.empty(), "bf16", writer, amn, "remember"))
                .isEqualTo(dir.resolve("m-bf16." + ext));
        Path models = store("registry.ollama.ai/library/tiny/q4", "FAKE ok\n");
        assertThat(Outputs.choose(InputRef.of("ollama:tiny:q4", models), Optional.empty(), "bf16", writer, amn, "remember"))
                .isEqualTo(Path.of("tiny-q4-bf16." + ext));
    }
}
