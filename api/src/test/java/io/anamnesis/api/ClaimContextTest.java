package io.anamnesis.api;

import io.anamnesis.api.spi.ClaimContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClaimContextTest {
    @TempDir
    Path dir;

    /** An empty archive that says it was opened from {@code file}. */
    record FileArchive(Path file) implements TensorArchive {
        @Override
        public String format() {
            return "test";
        }

        @Override
        public Optional<Path> path() {
            return Optional.of(file);
        }

        @Override
        public Map<String, String> metadata() {
            return Map.of();
        }

        @Override
        public Map<String, String> properties() {
            return Map.of();
        }

        @Override
        public List<TensorEntry> tensors() {
            return List.of();
        }

        @Override
        public MemorySegment data(TensorEntry entry, Arena arena) {
            throw new UnsupportedOperationException();
        }

        @Override
        public void close() {
        }
    }

    private ClaimContext context() {
        return new ClaimContext(new FileArchive(dir.resolve("model.safetensors")), ParseLimits.defaults());
    }

    @Test
    void readsASidecarBesideTheInput() throws Exception {
        Files.writeString(dir.resolve("config.json"), "{\"quantization_config\":{\"bits\":4}}");
        assertThat(context().sidecar("config.json")).contains("{\"quantization_config\":{\"bits\":4}}");
        assertThat(context().sidecar("quantize_config.json")).isEmpty();
    }

    @Test
    void rejectsASidecarThatIsNotUtf8AsMalformedNotAsIo() throws Exception {
        // 0xC3 starts a two-byte sequence; 0x28 '(' cannot continue it
        Files.write(dir.resolve("config.json"), new byte[]{'{', '"', (byte) 0xC3, 0x28, '"', ':', '1', '}'});
        assertThatThrownBy(() -> context().sidecar("config.json"))
                .isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("config.json")
                .hasMessageContaining("UTF-8");
    }

    @Test
    void refusesASidecarLargerThanTheHeaderLimit() throws Exception {
        Files.write(dir.resolve("config.json"), new byte[101]);
        ClaimContext small = new ClaimContext(new FileArchive(dir.resolve("model.safetensors")),
                ParseLimits.defaults().withMaxHeaderBytes(100));
        assertThatThrownBy(() -> small.sidecar("config.json")).isInstanceOf(LimitExceededException.class);
    }
}
