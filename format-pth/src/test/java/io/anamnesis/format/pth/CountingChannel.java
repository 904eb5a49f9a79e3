package io.anamnesis.format.pth;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.MappedByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.channels.ReadableByteChannel;
import java.nio.channels.WritableByteChannel;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A FileChannel that counts the bytes read through it (mappings are counted apart), and can
 * fail reads as a failing disk would once {@link #failReadsAfter} bytes have been read.
 */
final class CountingChannel extends FileChannel {
    private final FileChannel inner;
    final AtomicLong bytesRead = new AtomicLong();
    final AtomicLong bytesMapped = new AtomicLong();
    volatile long failReadsAfter = Long.MAX_VALUE;

    CountingChannel(FileChannel inner) {
        this.inner = inner;
    }

    private int count(int n) {
        if (n > 0) bytesRead.addAndGet(n);
        return n;
    }

    private void maybeFail() throws IOException {
        if (bytesRead.get() >= failReadsAfter) throw new IOException("Input/output error");
    }

    @Override public int read(ByteBuffer dst) throws IOException { maybeFail(); return count(inner.read(dst)); }
    @Override public int read(ByteBuffer dst, long position) throws IOException { maybeFail(); return count(inner.read(dst, position)); }
    @Override public long read(ByteBuffer[] dsts, int offset, int length) throws IOException {
        maybeFail();
        long n = inner.read(dsts, offset, length);
        if (n > 0) bytesRead.addAndGet(n);
        return n;
    }
    @Override public int write(ByteBuffer src) throws IOException { return inner.write(src); }
    @Override public long write(ByteBuffer[] srcs, int offset, int length) throws IOException { return inner.write(srcs, offset, length); }
    @Override public int write(ByteBuffer src, long position) throws IOException { return inner.write(src, position); }
    @Override public long position() throws IOException { return inner.position(); }
    @Override public FileChannel position(long p) throws IOException { inner.position(p); return this; }
    @Override public long size() throws IOException { return inner.size(); }
    @Override public FileChannel truncate(long size) throws IOException { inner.truncate(size); return this; }
    @Override public void force(boolean metaData) throws IOException { inner.force(metaData); }
    @Override public long transferTo(long position, long count, WritableByteChannel target) throws IOException {
        return inner.transferTo(position, count, target);
    }
    @Override public long transferFrom(ReadableByteChannel src, long position, long count) throws IOException {
        return inner.transferFrom(src, position, count);
    }
    @Override public MappedByteBuffer map(MapMode mode, long position, long size) throws IOException {
        bytesMapped.addAndGet(size);
        return inner.map(mode, position, size);
    }
    @Override public MemorySegment map(MapMode mode, long offset, long size, Arena arena) throws IOException {
        bytesMapped.addAndGet(size);
        return inner.map(mode, offset, size, arena);
    }
    @Override public FileLock lock(long position, long size, boolean shared) throws IOException { return inner.lock(position, size, shared); }
    @Override public FileLock tryLock(long position, long size, boolean shared) throws IOException { return inner.tryLock(position, size, shared); }
    @Override protected void implCloseChannel() throws IOException { inner.close(); }
}
