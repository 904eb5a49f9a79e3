package io.anamnesis.api;

import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ClaimContextTest {
    @TempDir
    Path dir;

    private ClaimContext context() {
        return new ClaimContext(new MemoryArchive().at(dir.resolve("model.safetensors")), ParseLimits.defaults());
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
        ClaimContext small = new ClaimContext(new MemoryArchive().at(dir.resolve("model.safetensors")),
                ParseLimits.defaults().withMaxHeaderBytes(100));
        assertThatThrownBy(() -> small.sidecar("config.json")).isInstanceOf(LimitExceededException.class);
    }
}
