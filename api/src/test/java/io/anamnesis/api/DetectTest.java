package io.anamnesis.api;

import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;
import org.example.faulty.FaultyReader;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class DetectTest {
    @TempDir
    Path dir;

    record Fake(String format, List<String> fileExtensions, byte[] magic, int priority) implements FormatReader {
        @Override
        public String description() {
            return format;
        }

        @Override
        public boolean canRead(FileProbe probe) {
            return magic.length > 0 && probe.startsWith(magic);
        }

        @Override
        public TensorArchive open(Path path, ParseLimits limits) {
            throw new UnsupportedOperationException();
        }
    }

    static final Fake ABC = new Fake("abc", List.of("abc"), "ABC".getBytes(), 0);
    static final Fake XYZ = new Fake("xyz", List.of("xyz"), new byte[0], 0);

    /**
     * A plugin's bug is the plugin's failure, named, never amn's internal error: a reader that
     * cannot say what it is is left out when loaded; one whose canRead throws does not claim the
     * file; one whose open throws or returns null is an UnsupportedFeatureException naming it.
     */
    @Test
    void aFaultyReaderIsLeftOutOrNamedNeverAnInternalError() throws Exception {
        assertThat(Anamnesis.broken(new FaultyReader("extensions"))).hasValueSatisfying(r -> assertThat(r).contains("extensions boom"));
        assertThat(Anamnesis.broken(new FaultyReader("format"))).hasValueSatisfying(r -> assertThat(r).contains("is null"));
        assertThat(Anamnesis.broken(new FaultyReader("open"))).isEmpty();
        Path f = Files.write(dir.resolve("m.abc"), "ABC".getBytes());
        assertThat(Anamnesis.of(List.of(new FaultyReader("canRead"), ABC), List.of(), List.of()).detect(f)).isSameAs(ABC);
        for (String fault : List.of("open", "null")) {
            Anamnesis amn = Anamnesis.of(List.of(new FaultyReader(fault)), List.of(), List.of());
            assertThatThrownBy(() -> amn.open(f)).as(fault).isInstanceOf(UnsupportedFeatureException.class)
                    .hasMessageContaining("the faulty reader " + FaultyReader.class.getName())
                    .hasMessageContaining("that module has a bug");
        }
    }

    @Test
    void magicBytesWinOverTheExtension() throws Exception {
        Path f = Files.write(dir.resolve("model.xyz"), "ABC-rest".getBytes());
        assertThat(Anamnesis.of(List.of(XYZ, ABC), List.of(), List.of()).detect(f)).isSameAs(ABC);
    }

    @Test
    void extensionDecidesWhenNoMagicMatches() throws Exception {
        Path f = Files.write(dir.resolve("model.xyz"), "nothing".getBytes());
        assertThat(Anamnesis.of(List.of(ABC, XYZ), List.of(), List.of()).detect(f)).isSameAs(XYZ);
    }

    @Test
    void aPluginWithHigherPriorityOutranksTheBuiltIn() throws Exception {
        Fake plugin = new Fake("abc-plus", List.of("abc"), "ABC".getBytes(), 10);
        Path f = Files.write(dir.resolve("m.abc"), "ABC".getBytes());
        assertThat(Anamnesis.of(List.of(ABC, plugin), List.of(), List.of()).detect(f)).isSameAs(plugin);
    }

    @Test
    void anUninstalledKnownFormatNamesItsModule() throws Exception {
        Path f = Files.write(dir.resolve("model.bin"), new byte[]{'G', 'G', 'U', 'F', 3, 0, 0, 0});
        assertThatThrownBy(() -> Anamnesis.of(List.of(ABC), List.of(), List.of()).detect(f))
                .isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("looks like a gguf file").hasMessageContaining("anamnesis-format-gguf");
    }

    @Test
    void missingFilesAndDirectoriesAreIoErrors() {
        Anamnesis amn = Anamnesis.of(List.of(ABC), List.of(), List.of());
        assertThatThrownBy(() -> amn.detect(dir.resolve("absent.abc"))).isInstanceOf(TensorIOException.class)
                .hasMessageContaining("no such file");
        assertThatThrownBy(() -> amn.detect(dir)).isInstanceOf(TensorIOException.class);
    }
}
