package io.anamnesis.api.write;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.io.InterruptedIOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ThreadLocalRandom;

/**
 * Writes an output so that it appears whole or not at all, whatever kind of thing the target
 * path names:
 *
 * <ul>
 *   <li>a regular file, or a name that does not exist yet: written under a temporary name
 *       beside it and renamed into place only when the whole content is written, so a failed,
 *       killed or interrupted run never leaves a file that looks complete (the temporary file
 *       is removed on failure and, on a normal JVM shutdown such as Ctrl-C, by a shutdown
 *       hook);</li>
 *   <li>a symbolic link: followed to its final target, which is then written as above (the
 *       temporary file goes beside the target, the link stays a link);</li>
 *   <li>a character device or a FIFO ({@code /dev/null}, a named pipe, a terminal), and
 *       {@value #STANDARD_OUTPUT} for standard output: written straight through, in file
 *       order, without a temporary file or a rename: a device is never replaced. What a
 *       stream received cannot be taken back, so a failure there leaves a partial stream;</li>
 *   <li>anything else (a directory, a socket, a block device): refused before any work, see
 *       {@link #refusal}.</li>
 * </ul>
 */
public final class AtomicOutput {

    /** The body of a write: fills the channel (of the temporary file, or of the stream). */
    @FunctionalInterface
    public interface Body {
        void write(FileChannel channel) throws IOException;
    }

    /** The target path that means standard output ({@code ./-} names a file called "-"). */
    public static final String STANDARD_OUTPUT = "-";

    /** A file name's bytes at most (NAME_MAX of Linux, macOS and Windows' NTFS in UTF-16 units). */
    static final int MAX_NAME_BYTES = 255;

    /** Hops through symbolic links before a chain counts as a loop (Linux's MAXSYMLINKS). */
    private static final int MAX_LINKS = 40;

    private static final Set<Path> IN_PROGRESS = ConcurrentHashMap.newKeySet();
    private static final Set<Path> FOLDERS_IN_PROGRESS = ConcurrentHashMap.newKeySet();

    static {
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            for (Path p : IN_PROGRESS) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort while the JVM goes down
                }
            }
            for (Path p : FOLDERS_IN_PROGRESS) deleteTree(p);
        }, "anamnesis-temp-cleanup"));
    }

    /** The body of a folder write: fills the (temporary) folder it is given. */
    @FunctionalInterface
    public interface FolderBody {
        void write(Path folder) throws IOException;
    }

    /**
     * Writes a folder so that it appears complete or not at all: {@code body} fills a fresh
     * temporary folder beside {@code target} (same parent, so the rename stays on one file
     * system), which is renamed to {@code target} once the body returns; on failure, and on
     * a normal JVM shutdown, the temporary folder and everything in it are removed. The
     * target may not exist yet or be an empty folder.
     *
     * @throws AnamnesisException as thrown by the body, or a {@link TensorIOException}
     */
    public static void writeFolder(Path target, FolderBody body) {
        Path folder = target.toAbsolutePath().normalize();
        Path parent = folder.getParent();
        if (parent == null || folder.getFileName() == null) throw new TensorIOException("cannot write folder " + target);
        folderRefusal(target).ifPresent(r -> {
            throw new TensorIOException(r);
        });
        Path temp = parent.resolve(tempName(folder.getFileName().toString()));
        FOLDERS_IN_PROGRESS.add(temp);
        boolean done = false;
        try {
            Files.createDirectory(temp);
            body.write(temp);
            if (Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS)) Files.delete(folder); // empty, checked above
            Files.move(temp, folder, StandardCopyOption.ATOMIC_MOVE);
            done = true;
        } catch (java.nio.file.DirectoryNotEmptyException | java.nio.file.FileAlreadyExistsException e) {
            // checked empty or absent before the work: something else wrote there meanwhile
            throw new TensorIOException("cannot write folder " + target + ": it was filled while this output was written "
                    + "(another process writing there?); it was left as it is", e);
        } catch (IOException e) {
            throw new TensorIOException("cannot write folder " + target + ": " + describe(e), e);
        } finally {
            if (!done) deleteTree(temp);
            FOLDERS_IN_PROGRESS.remove(temp);
        }
    }

    /**
     * Why a model folder cannot be written at {@code target}, or empty when it can: its parent
     * folder must exist, and the target must not exist yet or be an empty folder.
     */
    public static Optional<String> folderRefusal(Path target) {
        Path folder = target.toAbsolutePath().normalize();
        Path parent = folder.getParent();
        if (parent == null || !Files.isDirectory(parent)) {
            return Optional.of("cannot write folder " + target + ": folder " + parent + " does not exist");
        }
        if (!Files.exists(folder, LinkOption.NOFOLLOW_LINKS)) return Optional.empty();
        if (!Files.isDirectory(folder, LinkOption.NOFOLLOW_LINKS)) {
            return Optional.of("cannot write folder " + target + ": it exists and is not a folder");
        }
        try (var entries = Files.list(folder)) {
            if (entries.findAny().isPresent()) {
                return Optional.of("cannot write folder " + target + ": it exists and is not empty");
            }
        } catch (IOException e) {
            return Optional.of("cannot write folder " + target + ": " + describe(e));
        }
        return Optional.empty();
    }

    /** Removes a folder and what it holds, best effort (temporary folders only). */
    static void deleteTree(Path root) {
        if (!Files.exists(root, LinkOption.NOFOLLOW_LINKS)) return;
        try (var walk = Files.walk(root)) {
            for (Path p : walk.sorted(java.util.Comparator.reverseOrder()).toList()) {
                try {
                    Files.deleteIfExists(p);
                } catch (IOException ignored) {
                    // best effort: the failure being reported matters more
                }
            }
        } catch (IOException | java.io.UncheckedIOException ignored) {
            // best effort
        }
    }

    private AtomicOutput() {
    }

    /** What a target path turns out to be, once symbolic links are followed. */
    private record Resolved(Path path, Kind kind) {
    }

    private enum Kind { NEW, REGULAR, STREAM, STANDARD_OUTPUT }

    /**
     * Why {@code target} cannot be written, or empty when it can: a directory, a socket, a
     * block device or another special file, a symbolic link loop. Callers that want to fail
     * before any work (the CLI) ask first; {@link #write} refuses the same targets.
     */
    public static Optional<String> refusal(Path target) {
        try {
            resolve(target);
            return Optional.empty();
        } catch (TensorIOException e) {
            return Optional.of(e.getMessage());
        }
    }

    /** Whether {@code target} is written as a stream (standard output, a character device, a FIFO). */
    public static boolean isStream(Path target) {
        Kind k = resolve(target).kind();
        return k == Kind.STREAM || k == Kind.STANDARD_OUTPUT;
    }

    /**
     * Runs {@code body} on the target: a fresh temporary file that is renamed to the target
     * (replacing an existing file) once the body returns, or the stream itself.
     *
     * @throws AnamnesisException as thrown by the body, or a {@link TensorIOException}
     */
    public static void write(Path target, Body body) {
        Resolved r = resolve(target);
        switch (r.kind()) {
            case STANDARD_OUTPUT -> writeStandardOutput(target, body);
            case STREAM -> writeStream(target, r.path(), body);
            case NEW, REGULAR -> writeAtomically(target, r.path(), body);
        }
    }

    private static Resolved resolve(Path target) {
        if (target.toString().equals(STANDARD_OUTPUT)) return new Resolved(target, Kind.STANDARD_OUTPUT);
        Path p = target.toAbsolutePath();
        for (int hops = 0; ; hops++) {
            BasicFileAttributes a;
            try {
                a = Files.readAttributes(p, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
            } catch (NoSuchFileException e) {
                return new Resolved(p, Kind.NEW);
            } catch (IOException e) {
                throw new TensorIOException("cannot write " + target + ": " + describe(e), e);
            }
            if (a.isRegularFile()) return new Resolved(p, Kind.REGULAR);
            if (a.isDirectory()) throw new TensorIOException("cannot write " + target + ": it is a directory");
            if (a.isSymbolicLink()) {
                if (hops == MAX_LINKS) {
                    throw new TensorIOException("cannot write " + target + ": too many levels of symbolic links");
                }
                try {
                    Path link = Files.readSymbolicLink(p);
                    p = p.resolveSibling(link).normalize();
                } catch (IOException e) {
                    throw new TensorIOException("cannot write " + target + ": " + describe(e), e);
                }
                continue;
            }
            // "other": a device, a FIFO or a socket; only Unix's mode bits tell them apart
            String type = specialType(p);
            return switch (type) {
                case "character device", "fifo" -> new Resolved(p, Kind.STREAM);
                default -> throw new TensorIOException("cannot write " + target + ": it is a " + type
                        + ", not a regular file, a character device or a FIFO");
            };
        }
    }

    /** "character device", "fifo", "block device", "socket" or "special file" (no unix view). */
    private static String specialType(Path p) {
        try {
            Object mode = Files.getAttribute(p, "unix:mode", LinkOption.NOFOLLOW_LINKS);
            int type = (Integer) mode & 0170000;
            return switch (type) {
                case 0020000 -> "character device";
                case 0010000 -> "fifo";
                case 0060000 -> "block device";
                case 0140000 -> "socket";
                default -> "special file";
            };
        } catch (UnsupportedOperationException | IllegalArgumentException | IOException e) {
            return "special file";
        }
    }

    private static void writeAtomically(Path target, Path file, Body body) {
        Path temp = file.resolveSibling(tempName(file.getFileName().toString()));
        IN_PROGRESS.add(temp);
        boolean done = false;
        try {
            try (FileChannel channel = FileChannel.open(temp, StandardOpenOption.CREATE_NEW,
                    StandardOpenOption.WRITE, StandardOpenOption.READ)) {
                body.write(channel);
            }
            try {
                Files.move(temp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(temp, file, StandardCopyOption.REPLACE_EXISTING);
            }
            done = true;
        } catch (NoSuchFileException e) {
            throw new TensorIOException("cannot write " + target + ": " + (Files.isDirectory(file.getParent())
                    ? "no new file can be made in folder " + file.getParent()
                    : "folder " + file.getParent() + " does not exist"), e);
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

    /**
     * {@code .<name>.tmp-<16 hex digits>}, the name cut (on a UTF-8 character boundary) so
     * that the whole stays within {@value #MAX_NAME_BYTES} bytes: any name the target may
     * have, its temporary file may have too.
     */
    static String tempName(String name) {
        String hex = Long.toHexString(ThreadLocalRandom.current().nextLong());
        String suffix = ".tmp-" + "0".repeat(16 - hex.length()) + hex;
        int room = MAX_NAME_BYTES - 1 - suffix.length();
        byte[] utf8 = name.getBytes(StandardCharsets.UTF_8);
        String kept = name;
        if (utf8.length > room) {
            int cut = room;
            while (cut > 0 && (utf8[cut] & 0xC0) == 0x80) cut--; // not inside a character
            kept = new String(utf8, 0, cut, StandardCharsets.UTF_8);
        }
        return "." + kept + suffix;
    }

    private static void writeStream(Path target, Path device, Body body) {
        // a FIFO's open waits for a reader, as any writer to a named pipe does
        try (FileChannel out = FileChannel.open(device, StandardOpenOption.WRITE);
             InOrder channel = new InOrder(out)) {
            body.write(channel);
            channel.finish();
        } catch (IOException e) {
            throw new TensorIOException("cannot write " + target + ": " + describe(e), e);
        }
    }

    private static void writeStandardOutput(Path target, Body body) {
        PrintStream stdout = System.out;
        try (InOrder channel = new InOrder(Channels.newChannel(stdout))) {
            body.write(channel);
            channel.finish();
            stdout.flush();
        } catch (IOException e) {
            throw new TensorIOException("cannot write to standard output: " + describe(e), e);
        }
        // PrintStream keeps write errors to itself (a closed pipe, a full disk)
        if (stdout.checkError()) {
            throw new TensorIOException("cannot write to standard output: the stream failed or was closed");
        }
    }

    static String describe(IOException e) {
        String m = e.getMessage();
        return switch (e) {
            case NoSuchFileException n -> "no such file or folder: " + m;
            case java.nio.file.AccessDeniedException a -> "permission denied: " + m;
            case java.nio.file.FileSystemException f when f.getReason() != null -> f.getReason()
                    + (f.getFile() == null ? "" : " (" + f.getFile() + ")");
            default -> m == null ? e.getClass().getSimpleName() : m;
        };
    }

    /**
     * A write-only {@link FileChannel} over a stream: positional writes, which the writers
     * make from several threads and not in order, are put out in file order. A write at the
     * next position goes straight out, a later one waits in memory until the bytes before it
     * have been written (up to {@value #MAX_PENDING} bytes; past that the writing thread
     * waits: the thread holding the next position never does, so the order always advances).
     * Rewriting bytes already sent is an I/O error: a stream cannot seek back.
     */
    static final class InOrder extends FileChannel {
        static final long MAX_PENDING = 256L << 20;

        private final WritableByteChannel sink;
        private final TreeMap<Long, byte[]> pending = new TreeMap<>();
        private long pendingBytes;
        private long next;
        private long end;

        InOrder(WritableByteChannel sink) {
            this.sink = sink;
        }

        @Override
        public synchronized int write(ByteBuffer src, long position) throws IOException {
            int n = src.remaining();
            if (n == 0) return 0;
            if (position < next) {
                throw new IOException("cannot write at byte " + position + " of a stream already written up to byte " + next);
            }
            while (position > next && pendingBytes + n > MAX_PENDING && pendingBytes > 0) {
                try {
                    wait();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new InterruptedIOException("interrupted while waiting to write in order");
                }
                if (!isOpen()) throw new IOException("stream closed");
            }
            if (position == next) {
                emit(src);
                drain();
            } else {
                byte[] copy = new byte[n];
                src.get(copy);
                if (pending.putIfAbsent(position, copy) != null) {
                    throw new IOException("byte " + position + " of the stream written twice");
                }
                pendingBytes += n;
            }
            end = Math.max(end, position + n);
            return n;
        }

        private void emit(ByteBuffer src) throws IOException {
            long n = src.remaining();
            while (src.hasRemaining()) sink.write(src);
            next += n;
        }

        private void drain() throws IOException {
            var it = pending.firstEntry();
            while (it != null && it.getKey() == next) {
                pending.remove(it.getKey());
                pendingBytes -= it.getValue().length;
                emit(ByteBuffer.wrap(it.getValue()));
                it = pending.firstEntry();
            }
            notifyAll();
        }

        /** @throws IOException when the writer left a gap, so the stream would be short */
        synchronized void finish() throws IOException {
            if (!pending.isEmpty() || next != end) {
                throw new IOException("the output has a gap at byte " + next + " of " + end);
            }
        }

        @Override
        public synchronized long size() {
            return end;
        }

        @Override
        public synchronized int write(ByteBuffer src) throws IOException {
            return write(src, next > end ? next : end);
        }

        @Override
        public long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
            long n = 0;
            for (int i = offset; i < offset + length; i++) n += write(srcs[i]);
            return n;
        }

        @Override
        public synchronized long position() {
            return end;
        }

        @Override
        public FileChannel position(long newPosition) throws IOException {
            throw new IOException("a stream cannot seek");
        }

        @Override
        public FileChannel truncate(long size) throws IOException {
            if (size < end) throw new IOException("a stream cannot be truncated");
            return this;
        }

        @Override
        public void force(boolean metaData) {
            // a stream has no storage to force
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            throw new IOException("an output stream cannot be read back");
        }

        @Override
        public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
            throw new IOException("an output stream cannot be read back");
        }

        @Override
        public int read(ByteBuffer dst, long position) throws IOException {
            throw new IOException("an output stream cannot be read back");
        }

        @Override
        public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
            throw new IOException("an output stream cannot be read back");
        }

        @Override
        public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
            ByteBuffer buffer = ByteBuffer.allocate((int) Math.min(count, 1 << 16));
            long done = 0;
            while (done < count) {
                buffer.clear().limit((int) Math.min(buffer.capacity(), count - done));
                int r = src.read(buffer);
                if (r <= 0) break;
                buffer.flip();
                done += write(buffer, position + done);
            }
            return done;
        }

        @Override
        public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
            throw new IOException("a stream cannot be memory-mapped");
        }

        @Override
        public FileLock lock(long position, long size, boolean shared) throws IOException {
            throw new IOException("a stream cannot be locked");
        }

        @Override
        public FileLock tryLock(long position, long size, boolean shared) throws IOException {
            throw new IOException("a stream cannot be locked");
        }

        @Override
        protected void implCloseChannel() {
            synchronized (this) {
                notifyAll();
            }
        }
    }
}
