package io.anamnesis.format.safetensors;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

class SafetensorsServicesTest {
    @TempDir
    Path dir;

    @Test
    void isFoundByTheServiceLoaderAndDetectsItsOwnOutput() {
        Anamnesis amn = Anamnesis.installed();
        assertThat(amn.readers()).extracting(FormatReader::format).contains("safetensors");
        assertThat(amn.writer("safetensors")).isInstanceOf(SafetensorsWriter.class);
        assertThat(amn.findWriter("SAFETENSORS")).isPresent();

        Path out = dir.resolve("w.bin");   // no telling extension: detection goes by the magic
        PlannedTensor t = new PlannedTensor("w", DType.U8, Shape.of(3), 1,
                arena -> (first, count, dest) -> dest.fill((byte) 5));
        amn.writer("safetensors").write(new OutputPlan(Optional.empty(), Map.of(), List.of(t)), out, WriteOptions.threads(1));
        assertThat(amn.detect(out)).isInstanceOf(SafetensorsReader.class);
        try (TensorArchive archive = amn.open(out)) {
            assertThat(archive.tensors()).containsExactly(new TensorEntry("w", DType.U8, Shape.of(3), 3));
        }
    }

    @Test
    void describesItself() {
        FormatReader reader = new SafetensorsReader();
        FormatWriter writer = new SafetensorsWriter();
        assertThat(reader.format()).isEqualTo("safetensors");
        assertThat(reader.fileExtensions()).containsExactly("safetensors");
        assertThat(writer.format()).isEqualTo("safetensors");
        assertThat(writer.fileExtensions()).containsExactly("safetensors");
        assertThat(reader.description()).isNotBlank();
        assertThat(writer.description()).isNotBlank();
    }
}
