package io.anamnesis.api.spi;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;

/**
 * A read-only {@link FileChannel} over a stream, for a header parser that reads by position
 * in increasing order (what {@link FormatReader#openHeader} hands its parser): a read at the
 * stream's position takes bytes from the stream, a read further on skips to it, a read
 * behind it is an error. It never reads more than a read asks for, so a parser that stops at
 * the end of the header leaves the payload unread. Its size is unknown ({@link Long#MAX_VALUE});
 * it cannot be mapped, so an archive over it has no tensor data.
 */
public final class HeaderStream extends ReadOnlyChannel {
    private final InputStream in;
    private long position;

    public HeaderStream(InputStream in) {
        super("a stream's header channel");
        this.in = in;
    }

    @Override
    public int read(ByteBuffer dst, long at) throws IOException {
        if (at < position) {
            throw new IOException("a stream cannot go back to byte " + at + " (it is at byte " + position + ")");
        }
        if (at > position) {
            in.skipNBytes(at - position);
            position = at;
        }
        return read(dst);
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        int want = dst.remaining();
        if (want == 0) return 0;
        byte[] b = new byte[want];
        int n = in.read(b, 0, want);
        if (n < 0) return -1;
        dst.put(b, 0, n);
        position += n;
        return n;
    }

    @Override
    public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        long total = 0;
        for (int i = offset; i < offset + length; i++) {
            int n = read(dsts[i]);
            if (n < 0) return total == 0 ? -1 : total;
            total += n;
            if (dsts[i].hasRemaining()) break;
        }
        return total;
    }

    /** Unknown: the stream's length is not known before it ends. */
    @Override
    public long size() {
        return Long.MAX_VALUE;
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    public FileChannel position(long newPosition) throws IOException {
        if (newPosition < position) throw new IOException("a stream cannot go back");
        in.skipNBytes(newPosition - position);
        position = newPosition;
        return this;
    }

    @Override
    public MappedByteBuffer map(MapMode mode, long at, long size) throws IOException {
        throw new IOException("the header was read from a stream: tensor data is not available");
    }

    /** Never, as above (the JDK's default would throw an untyped UnsupportedOperationException). */
    @Override
    public java.lang.foreign.MemorySegment map(MapMode mode, long offset, long size, java.lang.foreign.Arena arena)
            throws IOException {
        throw new IOException("the header was read from a stream: tensor data is not available");
    }

    @Override
    protected void implCloseChannel() {
        // the stream belongs to the caller
    }
}
