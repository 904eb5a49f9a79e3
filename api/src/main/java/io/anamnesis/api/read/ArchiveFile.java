package io.anamnesis.api.read;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.AsynchronousCloseException;
import java.nio.channels.ClosedByInterruptException;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Objects;

/**
 * The open file behind an archive, shared by every thread that reads it.
 *
 * <p>Why not a bare {@link FileChannel}: a file channel is interruptible, so a thread that is
 * interrupted while it maps or reads (what {@code Future.cancel(true)}, an executor's
 * {@code shutdownNow} or a Spark task kill do) closes the channel for everyone, and every
 * later read of the archive, from any thread, failed as if it had been closed. Here the
 * interrupted call fails alone, with an {@link InterruptedIOException} (the thread keeps its
 * interrupt status), and the file is opened again for the others; a call that another
 * thread's interrupt closed the channel under is retried once on the new channel. The file
 * opened again must be the same file (its file key, or its size and modification time where
 * the file system has no key): a file replaced since is an error, never other bytes.
 *
 * <p>After {@link #close()} every call fails with {@link ClosedChannelException}. A file
 * without a path (a header from a stream, a remote file's range channel) cannot be opened
 * again: its interrupted channel stays closed, as before.
 */
public final class ArchiveFile implements AutoCloseable {
    private final Path path;
    private final Object identity;
    private volatile FileChannel channel;
    private volatile boolean closed;

    private ArchiveFile(Path path, FileChannel channel, Object identity) {
        this.path = path;
        this.channel = channel;
        this.identity = identity;
    }

    /**
     * The file {@code channel} has open, which {@code path} names ({@code null} when there is no
     * path to open it by again).
     */
    public static ArchiveFile of(Path path, FileChannel channel) {
        Objects.requireNonNull(channel, "channel");
        return new ArchiveFile(path, channel, path == null ? null : identity(path));
    }

    /** Opens {@code path} for reading. */
    public static ArchiveFile open(Path path) throws IOException {
        return of(Objects.requireNonNull(path, "path"), FileChannel.open(path, StandardOpenOption.READ));
    }

    /** What tells this file from one put in its place: the file key, else the size and modification time. */
    private static Object identity(Path path) {
        try {
            BasicFileAttributes a = Files.readAttributes(path, BasicFileAttributes.class);
            return a.fileKey() != null ? a.fileKey() : a.size() + "@" + a.lastModifiedTime().toMillis();
        } catch (IOException e) {
            return null;
        }
    }

    /** The path the file was opened by, or {@code null}. */
    public Path path() {
        return path;
    }

    /** Whether {@link #close()} was called. */
    public boolean isClosed() {
        return closed;
    }

    /**
     * The channel open now, for positioned reads and transfers by the caller; an interrupt
     * during the caller's own use of it closes it as any channel's would (this class opens the
     * file again for its own calls).
     */
    public FileChannel channel() {
        return channel;
    }

    /** Maps {@code size} bytes from {@code offset}, read-only, into {@code arena}. */
    public MemorySegment map(long offset, long size, Arena arena) throws IOException {
        return call(ch -> ch.map(FileChannel.MapMode.READ_ONLY, offset, size, arena));
    }

    /** The file's size now. */
    public long size() throws IOException {
        return call(FileChannel::size);
    }

    private interface ChannelCall<T> {
        T apply(FileChannel channel) throws IOException;
    }

    private <T> T call(ChannelCall<T> op) throws IOException {
        for (int attempt = 0; ; attempt++) {
            FileChannel ch = channel;
            if (closed) throw new ClosedChannelException();
            try {
                return op.apply(ch);
            } catch (ClosedByInterruptException e) {
                reopen(ch);
                InterruptedIOException i = new InterruptedIOException("interrupted while reading " + (path == null ? "the file" : path));
                i.initCause(e);
                throw i;
            } catch (ClosedChannelException e) {
                // closed by its owner, or by another thread's interrupt while this call ran
                if (closed || attempt > 0 || path == null) throw e;
                reopen(ch);
            }
        }
    }

    /** Opens the file again in place of {@code failed}, unless that was done already or the owner closed it. */
    private synchronized void reopen(FileChannel failed) throws IOException {
        if (closed || path == null || channel != failed) return;
        FileChannel fresh = FileChannel.open(path, StandardOpenOption.READ);
        Object now = identity(path);
        if (identity == null || !identity.equals(now)) {
            fresh.close();
            throw new IOException(path + " was replaced or removed since it was opened; open it again");
        }
        channel = fresh;
    }

    /**
     * A reading error in words: "the archive is closed" for a closed channel (whose exception
     * has no message), else the exception's message or, without one, its kind.
     */
    public static String describe(IOException e) {
        if (e instanceof ClosedChannelException && !(e instanceof AsynchronousCloseException)) return "the archive is closed";
        if (e instanceof ClosedByInterruptException) return "interrupted";
        return e.getMessage() != null ? e.getMessage() : e.getClass().getSimpleName();
    }

    /** Closes the file; every later call fails with {@link ClosedChannelException}. */
    @Override
    public synchronized void close() throws IOException {
        closed = true;
        channel.close();
    }
}
