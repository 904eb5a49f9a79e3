package io.anamnesis.api.spi;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;

/**
 * What the api's header-only channels ({@link HeaderStream}, {@link RangeChannel}) refuse
 * alike: writing, truncating, transferring and locking. A reader sees a {@link FileChannel}
 * and parses it as a local file's; these refusals are never reached by a reader that only
 * reads.
 */
abstract sealed class ReadOnlyChannel extends FileChannel permits HeaderStream, RangeChannel {
    /** What the channel is, for messages: e.g. "a range channel". */
    private final String noun;

    ReadOnlyChannel(String noun) {
        this.noun = noun;
    }

    @Override
    public final int write(ByteBuffer src) throws IOException {
        throw new IOException("read-only");
    }

    @Override
    public final long write(ByteBuffer[] srcs, int offset, int length) throws IOException {
        throw new IOException("read-only");
    }

    @Override
    public final int write(ByteBuffer src, long at) throws IOException {
        throw new IOException("read-only");
    }

    @Override
    public final FileChannel truncate(long size) throws IOException {
        throw new IOException("read-only");
    }

    @Override
    public final void force(boolean metaData) {
        // nothing written
    }

    @Override
    public final long transferTo(long at, long count, WritableByteChannel target) throws IOException {
        throw new IOException(noun + " does not transfer");
    }

    @Override
    public final long transferFrom(ReadableByteChannel src, long at, long count) throws IOException {
        throw new IOException("read-only");
    }

    @Override
    public final FileLock lock(long at, long size, boolean shared) throws IOException {
        throw new IOException(noun + " cannot be locked");
    }

    @Override
    public final FileLock tryLock(long at, long size, boolean shared) throws IOException {
        throw new IOException(noun + " cannot be locked");
    }
}
