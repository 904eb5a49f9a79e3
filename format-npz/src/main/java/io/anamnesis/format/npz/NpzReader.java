package io.anamnesis.format.npz;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.RangeChannel;
import org.apache.commons.compress.archivers.zip.ZipArchiveEntry;
import org.apache.commons.compress.archivers.zip.ZipFile;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.zip.DataFormatException;
import java.util.zip.Inflater;
import java.util.zip.ZipEntry;

/**
 * Reads NumPy {@code .npz} archives and bare {@code .npy} files.
 *
 * <p>Opening reads only the ZIP central directory (through commons-compress, which handles
 * ZIP64) and each member's NPY header. STORED members, which {@code np.savez} writes, are
 * then exposed zero-copy as slices of the mapped file; DEFLATE members
 * ({@code np.savez_compressed}) are inflated on demand, after their declared sizes have been
 * checked against {@link ParseLimits#maxInflatedBytes()} and
 * {@link ParseLimits#maxInflationRatio()}.
 */
public final class NpzReader implements FormatReader {
    private static final byte[] ZIP_LOCAL = {'P', 'K', 3, 4};

    @Override
    public String format() {
        return "npz";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of("npz", "npy");
    }

    @Override
    public String description() {
        return "NumPy .npz archives (stored or deflated, ZIP64) and .npy arrays (format 1.0-3.0)";
    }

    /** A bare NPY, or a ZIP whose first member is a {@code .npy}. */
    @Override
    public boolean canRead(FileProbe probe) {
        if (probe.startsWith(NpyHeader.MAGIC)) return true;
        if (!probe.startsWith(ZIP_LOCAL) || probe.head().limit() < 30) return false;
        ByteBuffer b = probe.bytes();
        int nameLength = b.getShort(26) & 0xFFFF;
        if (30 + nameLength > b.limit()) return false;
        byte[] name = new byte[nameLength];
        b.get(30, name);
        return new String(name, StandardCharsets.UTF_8).endsWith(".npy");
    }

    @Override
    public TensorArchive open(Path path, ParseLimits limits) {
        FileChannel channel;
        try {
            channel = FileChannel.open(path, StandardOpenOption.READ);
        } catch (NoSuchFileException e) {
            throw new TensorIOException("no such file: " + path, e);
        } catch (IOException e) {
            throw new TensorIOException("cannot open " + path + ": " + e.getMessage(), e);
        }
        return open(path, path.getFileName().toString(), channel, limits);
    }

    /**
     * A file read by range requests: the directory from the end (the channel fetches the
     * file's tail in one request), then each member's local header and NPY header, a fetch
     * per member that the held bytes do not cover.
     */
    @Override
    public TensorArchive openHeader(RangeChannel channel, ParseLimits limits) {
        return open(null, channel.fileName(), channel, limits);
    }

    /** Opens from a channel the archive then owns; {@code path} is absent for a file read by ranges. */
    private static TensorArchive open(Path path, String fileName, FileChannel channel, ParseLimits limits) {
        try {
            long size = channel.size();
            byte[] head = readAt(channel, 0, 6);
            boolean bareNpy = Arrays.equals(head, NpyHeader.MAGIC)
                    || (!startsWith(head, ZIP_LOCAL) && fileName.toLowerCase(java.util.Locale.ROOT).endsWith(".npy"));
            return bareNpy ? openNpy(path, channel, size, limits) : openNpz(path, fileName, channel, size, limits);
        } catch (RuntimeException e) {
            closeQuietly(channel);
            throw e;
        } catch (IOException e) {
            closeQuietly(channel);
            throw new TensorIOException("cannot read " + (path == null ? fileName : path) + ": " + e.getMessage(), e);
        }
    }

    private static TensorArchive openNpy(Path path, FileChannel channel, long size, ParseLimits limits) {
        String name = "array";
        NpyHeader h = NpyHeader.parse((offset, length) -> readAt(channel, offset, length), size, name, limits);
        checkData(h, size, name);
        TensorEntry entry = new TensorEntry(name, h.dtype().dtype(), h.shape(), h.dataBytes());
        Map<String, String> props = new LinkedHashMap<>();
        props.put("container", "npy");
        props.put("npy version", h.major() + ".0");
        props.put("byte order", h.dtype().byteOrder().toString().toLowerCase().replace("_", "-"));
        props.put("fortran order", Boolean.toString(h.fortranOrder()));
        return new NpzArchive(path, channel, "npy",
                List.of(new NpzArchive.Member(entry, h, 0, size, false, size, 0)), Collections.unmodifiableMap(props));
    }

    private static TensorArchive openNpz(Path path, String fileName, FileChannel channel, long size, ParseLimits limits)
            throws IOException {
        List<ZipArchiveEntry> entries = new ArrayList<>();
        // commons-compress closes the channel it is given with its ZipFile: it gets a view that does not
        try (ZipFile zip = ZipFile.builder().setSeekableByteChannel(new Unclosed(channel)).setIgnoreLocalFileHeader(true).get()) {
            for (var e = zip.getEntries(); e.hasMoreElements(); ) {
                entries.add(e.nextElement());
                ParseLimits.check("ZIP members", entries.size(), limits.maxTensors());
            }
        } catch (IOException e) {
            throw new MalformedFileException(fileName + " is not a readable ZIP archive: " + complaint(e), e);
        } catch (AnamnesisException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new MalformedFileException(fileName + " is not a readable ZIP archive: its directory is corrupt", e);
        }

        List<NpzArchive.Member> members = new ArrayList<>();
        Set<String> names = new HashSet<>();
        int deflated = 0;
        int skipped = 0;
        for (ZipArchiveEntry e : entries) {
            if (e.isDirectory()) continue;
            if (!e.getName().endsWith(".npy")) {
                skipped++;
                continue;
            }
            String name = e.getName().substring(0, e.getName().length() - 4);
            if (!names.add(name)) throw MalformedFileException.inTensor(name, "appears twice in the archive");
            if (e.getGeneralPurposeBit().usesEncryption()) {
                throw UnsupportedFeatureException.inTensor(name, "encrypted ZIP members are not supported");
            }
            long stored = e.getCompressedSize();
            long inflated = e.getSize();
            if (stored < 0 || inflated < 0) throw MalformedFileException.inTensor(name, "ZIP directory lacks the member's sizes");
            long start = dataStart(channel, e, name, size);
            if (start + stored > size) {
                throw MalformedFileException.inTensor(name, "ZIP member runs past the end of the file (truncated archive)");
            }
            NpyHeader h;
            boolean isDeflated;
            switch (e.getMethod()) {
                case ZipEntry.STORED -> {
                    if (stored != inflated) throw MalformedFileException.inTensor(name, "stored member with two different sizes");
                    isDeflated = false;
                    h = NpyHeader.parse((offset, length) -> readAt(channel, start + offset, (int) Math.min(length, Math.max(0, stored - offset))),
                            stored, name, limits);
                }
                case ZipEntry.DEFLATED -> {
                    // Zip bombs declare what they will not hold: refuse before inflating anything.
                    ParseLimits.check("inflated size of " + name, inflated, limits.maxInflatedBytes());
                    if (inflated / Math.max(1, stored) > limits.maxInflationRatio()) {
                        throw LimitExceededException.inTensor(name, "would inflate " + stored + " bytes to " + inflated
                                + " (ratio over the limit of " + limits.maxInflationRatio() + ")");
                    }
                    isDeflated = true;
                    deflated++;
                    h = NpyHeader.parse((offset, length) -> inflatePrefix(channel, start, stored, offset, length, name),
                            inflated, name, limits);
                }
                default -> throw UnsupportedFeatureException.inTensor(name, "ZIP compression method " + e.getMethod()
                        + " is not supported (stored and deflate are)");
            }
            checkData(h, inflated, name);
            members.add(new NpzArchive.Member(new TensorEntry(name, h.dtype().dtype(), h.shape(), h.dataBytes()),
                    h, start, stored, isDeflated, inflated, e.getCrc()));
        }
        Map<String, String> props = new LinkedHashMap<>();
        props.put("container", "zip");
        props.put("arrays", Integer.toString(members.size()));
        props.put("compression", deflated == 0 ? "stored (zero-copy)" : deflated == members.size() ? "deflate" : "mixed");
        props.put("byte order", members.stream().anyMatch(m -> m.header().dtype().swapped()) ? "big-endian arrays present (swapped on read)" : "little-endian");
        if (skipped > 0) props.put("ignored members", skipped + " non-.npy member(s)");
        return new NpzArchive(path, channel, "npz", members, Collections.unmodifiableMap(props));
    }

    /**
     * commons-compress's own sentence about the zip, not the wrapper it puts around it, which
     * names its channel's class ("Error reading Zip content from FileChannelImpl").
     */
    private static String complaint(IOException e) {
        Throwable t = e;
        while (t.getCause() instanceof IOException inner) t = inner;
        return t instanceof EOFException || t.getMessage() == null ? "its directory ends early" : t.getMessage();
    }

    /** The array's data must fit in what the member holds; a shorter member is a truncated file. */
    private static void checkData(NpyHeader h, long available, String name) {
        long needed = h.dataBytes();
        if (h.dataOffset() + needed > available) {
            throw MalformedFileException.inTensor(name, "shape " + h.shape() + " needs " + needed
                    + " bytes of data but the array holds " + Math.max(0, available - h.dataOffset()));
        }
    }

    /** Where a member's bytes start: after its local header, whose name and extra lengths may differ from the directory's. */
    private static long dataStart(FileChannel channel, ZipArchiveEntry e, String name, long size) {
        long lho = e.getLocalHeaderOffset();
        if (lho < 0 || lho + 30 > size) throw MalformedFileException.inTensor(name, "local header offset past the end of the file");
        ByteBuffer b = ByteBuffer.wrap(readAt(channel, lho, 30)).order(ByteOrder.LITTLE_ENDIAN);
        if (b.limit() < 30 || b.getInt(0) != 0x04034b50) throw MalformedFileException.inTensor(name, "bad ZIP local header");
        return lho + 30 + (b.getShort(26) & 0xFFFF) + (b.getShort(28) & 0xFFFF);
    }

    /**
     * The first bytes of a DEFLATE member, inflated; enough to read an NPY header without
     * inflating the array. The compressed bytes are read a few KiB at a time, as many as the
     * inflater needs (not mapped: the member may be far larger, or not here at all).
     */
    private static byte[] inflatePrefix(FileChannel channel, long start, long stored, long offset, int length, String name) {
        long want = offset + length;
        byte[] out = new byte[(int) want];
        byte[] in = new byte[INFLATE_CHUNK];
        Inflater inflater = new Inflater(true);
        try {
            int done = 0;
            long fed = 0;
            while (done < want && !inflater.finished()) {
                if (inflater.needsInput()) {
                    if (fed == stored) break;
                    int n = (int) Math.min(in.length, stored - fed);
                    byte[] chunk = readAt(channel, start + fed, n);
                    if (chunk.length == 0) break;
                    inflater.setInput(chunk);
                    fed += chunk.length;
                    continue;
                }
                int n = inflater.inflate(out, done, (int) want - done);
                if (n == 0) {
                    if (inflater.needsInput()) continue;
                    break; // a dictionary or an end: no more output
                }
                done += n;
            }
            return Arrays.copyOfRange(out, (int) Math.min(offset, done), done);
        } catch (DataFormatException e) {
            throw MalformedFileException.inTensor(name, "corrupt DEFLATE data: " + e.getMessage());
        } finally {
            inflater.end();
        }
    }

    /** Compressed bytes read per step while inflating an NPY header. */
    private static final int INFLATE_CHUNK = 4096;

    static byte[] readAt(FileChannel channel, long offset, int length) {
        try {
            ByteBuffer b = ByteBuffer.allocate((int) Math.max(0, Math.min(length, channel.size() - offset)));
            while (b.hasRemaining()) {
                if (channel.read(b, offset + b.position()) < 0) break;
            }
            return Arrays.copyOf(b.array(), b.position());
        } catch (IOException e) {
            throw new TensorIOException("cannot read: " + e.getMessage(), e);
        }
    }

    private static boolean startsWith(byte[] head, byte[] magic) {
        if (head.length < magic.length) return false;
        for (int i = 0; i < magic.length; i++) if (head[i] != magic[i]) return false;
        return true;
    }

    /**
     * The archive's channel as commons-compress reads it: at its own position (the channel's
     * is left alone) and never closed by it.
     */
    private static final class Unclosed implements java.nio.channels.SeekableByteChannel {
        private final FileChannel file;
        private long position;
        private boolean open = true;

        Unclosed(FileChannel file) {
            this.file = file;
        }

        @Override
        public int read(ByteBuffer dst) throws IOException {
            if (!open) throw new java.nio.channels.ClosedChannelException();
            int n = file.read(dst, position);
            if (n > 0) position += n;
            return n;
        }

        @Override
        public int write(ByteBuffer src) {
            throw new java.nio.channels.NonWritableChannelException();
        }

        @Override
        public long position() {
            return position;
        }

        @Override
        public java.nio.channels.SeekableByteChannel position(long newPosition) {
            position = newPosition;
            return this;
        }

        @Override
        public long size() throws IOException {
            return file.size();
        }

        @Override
        public java.nio.channels.SeekableByteChannel truncate(long size) {
            throw new java.nio.channels.NonWritableChannelException();
        }

        @Override
        public boolean isOpen() {
            return open;
        }

        @Override
        public void close() {
            open = false;
        }
    }

    private static void closeQuietly(FileChannel channel) {
        try {
            channel.close();
        } catch (IOException ignored) {
            // the original failure matters more
        }
    }
}
