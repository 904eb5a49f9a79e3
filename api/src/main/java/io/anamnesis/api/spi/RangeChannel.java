package io.anamnesis.api.spi;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.util.Map;
import java.util.Objects;
import java.util.TreeMap;

/**
 * A read-only {@link FileChannel} over a file that is not here (a remote file read by HTTP
 * range requests): its size is known, and its bytes come from a {@link Source} by position,
 * fetched when a read first needs them and then held. {@link FormatReader#openHeader(RangeChannel, ParseLimits)}
 * hands it to the same header parser that reads a local file; afterwards
 * {@link #headersRead()} closes the door, so every later read fails as {@link #map} always
 * does: an archive over it lists the tensors and the metadata and has no tensor data, as
 * one over a {@link HeaderStream} has none.
 *
 * <p>What keeps the number of fetches small without knowing the format:
 * <ul>
 * <li>The first bytes come with the channel: the probe that told the transport the size.</li>
 * <li>A read that continues a held run of bytes (a parser walking forward) fetches what it
 *     asks and at least three times the run it continues, so the run grows fourfold per
 *     fetch: a header of {@code H} bytes after a first probe of {@code P} costs about
 *     {@code 1 + log4(H / P)} fetches, and at most about {@code 4 H} bytes. A read that asks
 *     for more than that (safetensors asks for its whole JSON header at once) fetches exactly
 *     what it asks.</li>
 * <li>A read elsewhere fetches at least {@value #MIN_FETCH} bytes (a zip member's local
 *     header and the array header behind it), and one in the last {@value #TAIL_BYTES} bytes
 *     fetches the whole tail (a zip's end records and its directory, in one suffix range).</li>
 * <li>A fetch never covers bytes already held nor runs past the end, and everything held is
 *     bounded by a budget: readahead shrinks to the bare request near it, and a request
 *     beyond it is a {@link LimitExceededException}.</li>
 * </ul>
 */
public final class RangeChannel extends ReadOnlyChannel {

    /** Where the bytes come from: the transport. */
    @FunctionalInterface
    public interface Source {
        /**
         * Exactly {@code length} bytes at {@code offset}, a range inside the file; anything else
         * (a shorter answer, a failure) is an {@link IOException} or a typed
         * {@link io.anamnesis.api.AnamnesisException}.
         */
        byte[] fetch(long offset, int length) throws IOException;
    }

    /** The least a read away from the held bytes fetches. */
    public static final int MIN_FETCH = 64 << 10;
    /** A read this close to the end fetches everything from here to the end. */
    public static final int TAIL_BYTES = 256 << 10;
    /** The most one readahead adds to what a read asks for. */
    private static final long MAX_READAHEAD = 1L << 30;

    private final String fileName;
    private final long size;
    private final Source source;
    private final long budget;
    /** Held runs of bytes by file offset: never overlapping, adjacent runs merged. */
    private final TreeMap<Long, byte[]> held = new TreeMap<>();
    private long heldBytes;
    private int fetches;
    private long position;
    /** Set by {@link #headersRead()}: why every later read fails. */
    private String refusal;

    /**
     * @param fileName the file's name (for detection by extension and for messages)
     * @param size     the file's size in bytes
     * @param head     the file's first bytes, already fetched (at most {@code size})
     * @param source   where the other bytes come from
     * @param budget   the most bytes the channel may hold, {@code head} included
     */
    public RangeChannel(String fileName, long size, byte[] head, Source source, long budget) {
        super("a range channel");
        this.fileName = Objects.requireNonNull(fileName);
        this.source = Objects.requireNonNull(source);
        if (size < 0 || head.length > size) throw new IllegalArgumentException("head of " + head.length + " bytes in a file of " + size);
        this.size = size;
        this.budget = budget;
        if (head.length > 0) held.put(0L, head.clone());
        heldBytes = head.length;
    }

    public String fileName() {
        return fileName;
    }

    /** Fetches made after the first bytes. */
    public synchronized int fetches() {
        return fetches;
    }

    /** Bytes held, the first bytes included. */
    public synchronized long bytesHeld() {
        return heldBytes;
    }

    /**
     * The header has been read: from now on every read fails with the message an archive's
     * {@code data} reports, and the bytes held are let go.
     */
    public synchronized void headersRead() {
        refusal = fileName + " was opened from its headers alone (read by range requests; tensor data is never"
                + " fetched): download the file to read its tensors";
        held.clear();
    }

    /**
     * The file from byte 0 as a stream, for a reader whose header comes first; {@code readNBytes(n)}
     * asks for its {@code n} bytes in one read, so a header read whole is fetched whole.
     */
    public InputStream stream() {
        return new InputStream() {
            private long at;

            @Override
            public int read() throws IOException {
                byte[] one = new byte[1];
                return read(one, 0, 1) < 0 ? -1 : one[0] & 0xFF;
            }

            @Override
            public int read(byte[] b, int off, int len) throws IOException {
                Objects.checkFromIndexSize(off, len, b.length);
                if (len == 0) return 0;
                int n = RangeChannel.this.read(ByteBuffer.wrap(b, off, len), at);
                if (n > 0) at += n;
                return n;
            }

            @Override
            public byte[] readNBytes(int len) throws IOException {
                if (len < 0) throw new IllegalArgumentException("len < 0");
                // bounded by what the file holds, so a length that lies costs no more than the file
                byte[] b = new byte[(int) Math.max(0, Math.min(len, size - at))];
                int n = b.length == 0 ? 0 : read(b, 0, b.length);
                return n == b.length ? b : java.util.Arrays.copyOf(b, Math.max(0, n));
            }

            @Override
            public long skip(long n) {
                long k = Math.max(0, Math.min(n, size - at));
                at += k;
                return k;
            }
        };
    }

    @Override
    public synchronized int read(ByteBuffer dst, long at) throws IOException {
        if (refusal != null) throw new IOException(refusal);
        if (!isOpen()) throw new java.nio.channels.ClosedChannelException();
        if (at < 0) throw new IllegalArgumentException("negative position");
        if (at >= size) return -1;
        int n = (int) Math.min(dst.remaining(), size - at);
        long end = at + n;
        long p = at;
        while (p < end) {
            Map.Entry<Long, byte[]> run = held.floorEntry(p);
            if (run != null && p < run.getKey() + run.getValue().length) {
                int from = (int) (p - run.getKey());
                int k = (int) Math.min(end - p, run.getValue().length - from);
                dst.put(run.getValue(), from, k);
                p += k;
            } else {
                fetchFor(p, end);
            }
        }
        return n;
    }

    /** Fetches bytes from {@code p} (not held) for a read that needs them up to {@code wantEnd}. */
    private void fetchFor(long p, long wantEnd) throws IOException {
        Map.Entry<Long, byte[]> before = held.floorEntry(p);
        long beforeEnd = before == null ? 0 : before.getKey() + before.getValue().length;
        Long nextStart = held.higherKey(p);
        long limit = nextStart == null ? size : nextStart;

        long start = p;
        long end;
        if (before != null && beforeEnd == p) {
            end = Math.max(wantEnd, p + Math.min(MAX_READAHEAD, 3L * before.getValue().length));
        } else if (p >= size - TAIL_BYTES) {
            start = Math.max(beforeEnd, Math.max(0, size - TAIL_BYTES));
            end = size;
        } else {
            end = Math.max(wantEnd, p + MIN_FETCH);
        }
        end = Math.min(end, limit);
        if (heldBytes + (end - start) > budget) {
            // no readahead near the budget: only what the read needs
            start = p;
            end = Math.min(wantEnd, limit);
            if (heldBytes + (end - start) > budget) {
                throw new LimitExceededException("reading the headers of " + fileName + " would fetch over "
                        + budget + " bytes");
            }
        }
        int length = Math.toIntExact(end - start);
        byte[] got = source.fetch(start, length);
        if (got.length != length) {
            throw new TensorIOException(fileName + ": asked for " + length + " bytes at " + start + ", got " + got.length);
        }
        fetches++;
        heldBytes += length;
        hold(start, got);
    }

    /** Adds a run, merged with the runs it touches. */
    private void hold(long start, byte[] bytes) {
        Map.Entry<Long, byte[]> before = held.lowerEntry(start);
        if (before != null && before.getKey() + before.getValue().length == start) {
            held.remove(before.getKey());
            bytes = concat(before.getValue(), bytes);
            start = before.getKey();
        }
        byte[] after = held.remove(start + bytes.length);
        if (after != null) bytes = concat(bytes, after);
        held.put(start, bytes);
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    @Override
    public synchronized int read(ByteBuffer dst) throws IOException {
        int n = read(dst, position);
        if (n > 0) position += n;
        return n;
    }

    @Override
    public synchronized long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            int n = read(dsts[i]);
            if (n < 0) return total == 0 ? -1 : total;
            total += n;
            if (dsts[i].hasRemaining()) break;
        }
        return total;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public synchronized long position() {
        return position;
    }

    @Override
    public synchronized FileChannel position(long newPosition) {
        if (newPosition < 0) throw new IllegalArgumentException("negative position");
        position = newPosition;
        return this;
    }

    /** Never: the bytes are not here; tensor data of a headers-only archive is not available. */
    @Override
    public MappedByteBuffer map(MapMode mode, long at, long length) throws IOException {
        throw new IOException(dataRefusal());
    }

    @Override
    public java.lang.foreign.MemorySegment map(MapMode mode, long offset, long length, java.lang.foreign.Arena arena)
            throws IOException {
        throw new IOException(dataRefusal());
    }

    private synchronized String dataRefusal() {
        return refusal != null ? refusal : fileName + " is read by range requests and cannot be mapped";
    }

    @Override
    protected synchronized void implCloseChannel() {
        held.clear();
    }
}
