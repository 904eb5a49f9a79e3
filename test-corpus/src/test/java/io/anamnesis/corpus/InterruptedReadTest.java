package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.cli.Amn;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A server cancels work by interrupting its thread (Future.cancel(true), shutdownNow, a Spark
 * task kill). A file channel closes itself when the thread using it is interrupted, and every
 * reader held one: one cancelled task made a shared archive unreadable for every other thread.
 * With each format's reader: the interrupted call fails alone, typed, and the others read on.
 */
class InterruptedReadTest {
    @TempDir
    Path dir;

    static final Path SAMPLES = Path.of("..").toAbsolutePath().normalize().resolve("samples");

    @ParameterizedTest
    @ValueSource(strings = {"tiny-fp8.safetensors", "tiny-f32.npz", "tiny.pth", "gguf"})
    void anInterruptedReaderFailsAloneAndTheArchiveStaysReadable(String sample) throws Exception {
        Path file = SAMPLES.resolve("tiny-fp8.safetensors");
        if (sample.equals("gguf")) {
            file = dir.resolve("tiny.gguf");
            StringWriter err = new StringWriter();
            int code = Amn.execute(new PrintWriter(new StringWriter()), new PrintWriter(err), "convert",
                    SAMPLES.resolve("tiny-fp8.safetensors").toString(), "--to", "gguf", "--dtype", "f32", "-q", "-o", file.toString());
            assertThat(code).as(err.toString()).isZero();
        } else {
            file = SAMPLES.resolve(sample);
        }
        assertThat(file).exists();
        try (TensorArchive archive = Anamnesis.installed().open(file)) {
            TensorEntry entry = archive.tensors().stream().filter(t -> t.byteSize() > 0).findFirst().orElseThrow();
            byte[] before;
            try (Arena arena = Arena.ofConfined()) {
                before = archive.data(entry, arena).toArray(ValueLayout.JAVA_BYTE);
            }
            AtomicReference<Throwable> failure = new AtomicReference<>();
            Thread cancelled = new Thread(() -> {
                Thread.currentThread().interrupt();
                try (Arena arena = Arena.ofConfined()) {
                    archive.data(entry, arena);
                } catch (Throwable t) {
                    failure.set(t);
                }
            });
            cancelled.start();
            cancelled.join();
            assertThat(failure.get()).as(sample).isInstanceOf(TensorIOException.class).hasMessageContaining("interrupted");
            for (TensorEntry e : archive.tensors()) {
                try (Arena arena = Arena.ofConfined()) {
                    byte[] after = archive.data(e, arena).toArray(ValueLayout.JAVA_BYTE);
                    if (e.equals(entry)) assertThat(after).as(sample).isEqualTo(before);
                }
            }
            assertThat(archive.storedRegion(entry).map(r -> r.file().isOpen()).orElse(true)).as(sample).isTrue();
        }
        assertThat(Files.exists(file)).isTrue();
    }
}
