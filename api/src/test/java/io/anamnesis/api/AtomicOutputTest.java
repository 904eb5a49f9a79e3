package io.anamnesis.api;

import io.anamnesis.api.write.AtomicOutput;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Where AtomicOutput puts bytes, for every kind of thing a target path can name. */
class AtomicOutputTest {
    @TempDir
    Path dir;

    /** 1 MiB of a known pattern, written as 16 chunks in reverse order from 4 threads. */
    static final int CHUNK = 64 << 10;
    static final int CHUNKS = 16;

    static byte expected(long i) {
        return (byte) (i * 31 + (i >>> 9));
    }

    static void scrambled(FileChannel channel) throws IOException {
        List<Thread> threads = new ArrayList<>();
        List<Throwable> failures = new java.util.concurrent.CopyOnWriteArrayList<>();
        for (int t = 0; t < 4; t++) {
            int lane = t;
            threads.add(Thread.ofPlatform().start(() -> {
                try {
                    for (int c = CHUNKS - 1 - lane; c >= 0; c -= 4) {
                        ByteBuffer b = ByteBuffer.allocate(CHUNK);
                        for (int i = 0; i < CHUNK; i++) b.put(expected((long) c * CHUNK + i));
                        b.flip();
                        while (b.hasRemaining()) channel.write(b, (long) c * CHUNK + b.position());
                    }
                } catch (Throwable e) {
                    failures.add(e);
                }
            }));
        }
        for (Thread t : threads) {
            try {
                t.join();
            } catch (InterruptedException e) {
                throw new IOException(e);
            }
        }
        if (!failures.isEmpty()) throw new IOException(failures.getFirst());
    }

    static void assertPattern(byte[] bytes) {
        assertThat(bytes).hasSize(CHUNK * CHUNKS);
        for (int i = 0; i < bytes.length; i++) {
            if (bytes[i] != expected(i)) throw new AssertionError("byte " + i + " is " + bytes[i] + ", expected " + expected(i));
        }
    }

    private List<String> leftovers() throws IOException {
        try (Stream<Path> s = Files.list(dir)) {
            return s.map(p -> p.getFileName().toString()).filter(n -> n.contains(".tmp-")).toList();
        }
    }

    static String unixType(Path p) throws IOException {
        int mode = (Integer) Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS) & 0170000;
        return switch (mode) {
            case 0020000 -> "character device";
            case 0010000 -> "fifo";
            case 0100000 -> "regular";
            case 0120000 -> "symlink";
            default -> Integer.toOctalString(mode);
        };
    }

    @Test
    void aNewFileAppearsWholeAndNoTemporaryFileStays() throws IOException {
        Path out = dir.resolve("out.bin");
        AtomicOutput.write(out, AtomicOutputTest::scrambled);
        assertPattern(Files.readAllBytes(out));
        assertThat(leftovers()).isEmpty();
    }

    @Test
    void aSymbolicLinkIsFollowedAndStaysALink() throws IOException {
        Path real = Files.createDirectories(dir.resolve("real")).resolve("model.bin");
        Files.write(real, new byte[]{1, 2, 3});
        Path link = Files.createSymbolicLink(dir.resolve("link.bin"), Path.of("real", "model.bin"));
        AtomicOutput.write(link, AtomicOutputTest::scrambled);
        assertThat(Files.isSymbolicLink(link)).isTrue();
        assertThat(Files.readSymbolicLink(link)).isEqualTo(Path.of("real", "model.bin"));
        assertPattern(Files.readAllBytes(real));
        assertThat(leftovers()).isEmpty();
        try (Stream<Path> s = Files.list(real.getParent())) {
            assertThat(s.map(p -> p.getFileName().toString()).toList()).containsExactly("model.bin");
        }
    }

    @Test
    void aDanglingLinkCreatesItsTarget() throws IOException {
        Path link = Files.createSymbolicLink(dir.resolve("link.bin"), dir.resolve("made.bin"));
        AtomicOutput.write(link, AtomicOutputTest::scrambled);
        assertThat(Files.isSymbolicLink(link)).isTrue();
        assertPattern(Files.readAllBytes(dir.resolve("made.bin")));
    }

    @Test
    void aLinkLoopIsRefused() throws IOException {
        Path a = dir.resolve("a");
        Path b = dir.resolve("b");
        Files.createSymbolicLink(a, b);
        Files.createSymbolicLink(b, a);
        assertThat(AtomicOutput.refusal(a)).get().asString().contains("too many levels of symbolic links");
        assertThatThrownBy(() -> AtomicOutput.write(a, c -> {
            throw new AssertionError("no work for a refused target");
        })).isInstanceOf(TensorIOException.class);
    }

    @Test
    void aDirectoryIsRefusedBeforeAnyWork() {
        assertThat(AtomicOutput.refusal(dir)).get().asString().contains("is a directory");
        assertThatThrownBy(() -> AtomicOutput.write(dir, c -> {
            throw new AssertionError("no work for a refused target");
        })).isInstanceOf(TensorIOException.class).hasMessageContaining("directory");
    }

    @Test
    @Timeout(60) // a hang guard: the FIFO's reader is in this test
    void aFifoIsWrittenStraightThroughInFileOrder() throws Exception {
        Path fifo = dir.resolve("pipe");
        Process mk = new ProcessBuilder("mkfifo", fifo.toString()).inheritIO().start();
        assertThat(mk.waitFor()).isZero();
        CompletableFuture<byte[]> read = CompletableFuture.supplyAsync(() -> {
            try {
                return Files.readAllBytes(fifo);
            } catch (IOException e) {
                throw new java.io.UncheckedIOException(e);
            }
        });
        assertThat(AtomicOutput.isStream(fifo)).isTrue();
        AtomicOutput.write(fifo, AtomicOutputTest::scrambled);
        assertPattern(read.get());
        assertThat(unixType(fifo)).isEqualTo("fifo");
        assertThat(leftovers()).isEmpty();
    }

    @Test
    void devNullIsASinkAndStaysACharacterDevice() throws IOException {
        Path devNull = Path.of("/dev/null");
        assertThat(unixType(devNull)).isEqualTo("character device");
        AtomicOutput.write(devNull, AtomicOutputTest::scrambled);
        assertThat(unixType(devNull)).isEqualTo("character device");
    }

    @Test
    void dashIsStandardOutput() throws IOException {
        PrintStream saved = System.out;
        ByteArrayOutputStream captured = new ByteArrayOutputStream();
        try {
            System.setOut(new PrintStream(captured, false));
            AtomicOutput.write(Path.of(AtomicOutput.STANDARD_OUTPUT), AtomicOutputTest::scrambled);
        } finally {
            System.setOut(saved);
        }
        assertPattern(captured.toByteArray());
    }

    @Test
    void aStreamWithAGapIsAnError() {
        PrintStream saved = System.out;
        try {
            System.setOut(new PrintStream(new ByteArrayOutputStream(), false));
            assertThatThrownBy(() -> AtomicOutput.write(Path.of("-"), c -> c.write(ByteBuffer.wrap(new byte[4]), 8)))
                    .isInstanceOf(TensorIOException.class).hasMessageContaining("gap at byte 0 of 12");
        } finally {
            System.setOut(saved);
        }
    }

    @Test
    void theLongestFileNameStillHasATemporaryName() throws IOException {
        String name = "m".repeat(255 - ".safetensors".length()) + ".safetensors";
        Path out = dir.resolve(name);
        AtomicOutput.write(out, c -> c.write(ByteBuffer.wrap(new byte[]{7}), 0));
        assertThat(Files.readAllBytes(out)).containsExactly(7);
        // 254 bytes of UTF-8: the temporary name is cut on a character boundary, not inside one
        String multibyte = "é".repeat(125) + ".bin";
        assertThat(multibyte.getBytes(java.nio.charset.StandardCharsets.UTF_8)).hasSize(254);
        AtomicOutput.write(dir.resolve(multibyte), c -> c.write(ByteBuffer.wrap(new byte[]{8}), 0));
        assertThat(Files.readAllBytes(dir.resolve(multibyte))).containsExactly(8);
        assertThat(leftovers()).isEmpty();
    }

    @Test
    void aFailedBodyLeavesNeitherTargetNorTemporaryFile() throws IOException {
        Path out = dir.resolve("out.bin");
        assertThatThrownBy(() -> AtomicOutput.write(out, c -> {
            c.write(ByteBuffer.wrap(new byte[]{1}), 0);
            throw new MalformedFileException("producer failed");
        })).isInstanceOf(MalformedFileException.class);
        assertThat(out).doesNotExist();
        assertThat(leftovers()).isEmpty();
    }
    /**
     * Two runs writing one folder: the one that renames second found the folder filled while it
     * worked. It says so (the message was only the path), leaves the other's folder whole and
     * its own temporary folder gone.
     */
    @Test
    void aFolderFilledWhileItWasWrittenIsLeftAsItIsAndSaidSo() throws IOException {
        Path target = dir.resolve("model");
        assertThatThrownBy(() -> AtomicOutput.writeFolder(target, tmp -> {
            Files.writeString(tmp.resolve("mine.txt"), "mine");
            // another process finishes first
            Files.createDirectory(target);
            Files.writeString(target.resolve("theirs.txt"), "theirs");
        })).isInstanceOf(io.anamnesis.api.TensorIOException.class).hasMessageContaining("it was filled while this output was written");
        try (Stream<Path> files = Files.list(target)) {
            assertThat(files.map(p -> p.getFileName().toString()).toList()).containsExactly("theirs.txt");
        }
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString()).toList()).containsExactly("model");
        }
    }
}
