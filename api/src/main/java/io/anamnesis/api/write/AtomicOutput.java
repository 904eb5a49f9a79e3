package io.anamnesis.api.write;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes a file under a temporary name beside the target and renames it into place only
 * when the whole content is written: a failed, killed or interrupted run never leaves a
 * file that looks complete. The temporary file is removed on failure and, on a normal JVM
 * shutdown (Ctrl-C), by a shutdown hook.
 */
public final class AtomicOutput {

    /** The body of a write: fills the channel of the temporary file. */
    @FunctionalInterface
    public interface Body {
        void write(FileChannel channel) throws IOException;
    }

    private static final Set<Path> IN_PROGRESS = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Path p : IN_PROGRESS) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort while the JVM goes down
                }
            }
        }, "anamnesis-temp-cleanup"));
    }

    private AtomicOutput() {
    }

    /**
     * Runs {@code body} on a fresh temporary file next to {@code target}, then renames it to
     * {@code target} (replacing an existing file).
     *
     * @throws AnamnesisException as thrown by the body, or a {@link TensorIOException}
     */
    public static void write(Path target, Body body) {
        Path absolute = target.toAbsolutePath();
        Path dir = absolute.getParent();
        Path temp = dir.resolve("." + absolute.getFileName() + ".tmp-"
                + Long.toHexString(ThreadLocalRandom.current().nextLong()));
        IN_PROGRESS.add(temp);
        boolean done = false;
        try {
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE, StandardOpenOption.READ)) {
                body.write(channel);
            }
            try {
                Files.move(temp, absolute, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, absolute, StandardCopyOption.REPLACE_EXISTING);
            }
            done = true;
        } catch (IOException e) {
            throw new TensorIOException("cannot write " + target + ": " + describe(e), e);
        } finally {
            if (!done) {
                try {
                    Files.deleteIfExists(temp);
                } catch (IOException ignored) {
                    // the original failure matters more
                }
            }
            IN_PROGRESS.remove(temp);
        }
    }

    static String describe(IOException e) {
        String m = e.getMessage();
        return e.getClass().getSimpleName() + (m == null ? "" : " " + m);
    }
}
