package io.anamnesis.api.read;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.channels.ClosedChannelException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.atomic.AtomicReference;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ArchiveFileTest {
    @TempDir
    Path dir;

    private Path file(String name, int first) throws IOException {
        byte[] b = new byte[4096];
        for (int i = 0; i < b.length; i++) b[i] = (byte) (first + i);
        return Files.write(dir.resolve(name), b);
    }

    private static int firstByte(ArchiveFile f) throws IOException {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment s = f.map(0, 16, arena);
            return s.get(ValueLayout.JAVA_BYTE, 0);
        }
    }

    /** An interrupted thread's call fails alone; the file stays readable for every other thread. */
    @Test
    void anInterruptedThreadFailsAloneAndTheOthersReadOn() throws Exception {
        try (ArchiveFile f = ArchiveFile.open(file("a.bin", 7))) {
            AtomicReference<Throwable> failure = new AtomicReference<>();
            AtomicReference<Boolean> stillInterrupted = new AtomicReference<>();
            Thread victim = new Thread(() -> {
                Thread.currentThread().interrupt();
                try {
                    firstByte(f);
                } catch (Throwable t) {
                    failure.set(t);
                }
                stillInterrupted.set(Thread.currentThread().isInterrupted());
            });
            victim.start();
            victim.join();
            assertThat(failure.get()).isInstanceOf(InterruptedIOException.class).hasMessageContaining("interrupted while reading");
            assertThat(stillInterrupted.get()).as("the thread keeps its interrupt status").isTrue();
            assertThat(firstByte(f)).isEqualTo(7);
            assertThat(f.size()).isEqualTo(4096);
            assertThat(f.channel().isOpen()).isTrue();
        }
    }

    /** Opened again, the file must be the same file: one renamed into its place is an error, never its bytes. */
    @Test
    void aFileReplacedSinceItWasOpenedIsNotReadInstead() throws Exception {
        Path path = file("b.bin", 7);
        try (ArchiveFile f = ArchiveFile.open(path)) {
            Files.move(file("other.bin", 99), path, StandardCopyOption.REPLACE_EXISTING);
            Thread victim = new Thread(() -> {
                Thread.currentThread().interrupt();
                try {
                    firstByte(f);
                } catch (IOException expected) {
                    // the reopen found another file
                }
            });
            victim.start();
            victim.join();
            assertThatThrownBy(() -> firstByte(f)).isInstanceOf(IOException.class).hasMessageContaining("was replaced or removed");
        }
    }

    @Test
    void afterCloseEveryCallFailsAsClosed() throws IOException {
        ArchiveFile f = ArchiveFile.open(file("c.bin", 1));
        f.close();
        assertThat(f.isClosed()).isTrue();
        assertThatThrownBy(() -> firstByte(f)).isInstanceOf(ClosedChannelException.class);
        assertThatThrownBy(f::size).isInstanceOf(ClosedChannelException.class);
        assertThat(ArchiveFile.describe(new ClosedChannelException())).isEqualTo("the archive is closed");
    }
}
