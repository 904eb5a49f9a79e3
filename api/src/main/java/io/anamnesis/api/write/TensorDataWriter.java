package io.anamnesis.api.write;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.StoredRegion;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.ProgressListener;
import io.anamnesis.api.spi.TensorProducer;
import io.anamnesis.api.spi.WriteOptions;

import java.io.EOFException;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicReference;

/**
 * Fills the data regions of a pre-laid-out output file, the shared engine of every writer.
 *
 * <p>Each tensor is cut into slabs (at most {@value #SLAB_BYTES} bytes of output, whole
 * granules), and worker threads take slabs in file order (a {@link TensorProducer.After}
 * tensor's once the tensor it waits for is written, see {@link Schedule}). A slab opens its tensor's
 * producer in a confined arena (mapping the inputs it needs), fills a reusable native
 * buffer of {@value #CHUNK_BYTES} bytes at a time, and writes it with a positional write.
 * Peak memory is one buffer per thread plus the input pages of the slabs in flight,
 * whatever the model's size. Producers are pure functions of their range, so the file's
 * bytes do not depend on the thread count. A tensor copied unchanged from a local file
 * ({@link TensorProducer.StoredCopy}) is copied file to file by the kernel instead.
 */
public final class TensorDataWriter {
    static final long CHUNK_BYTES = 4L << 20;
    static final long SLAB_BYTES = 64L << 20;

    /** One tensor's place in the output file. */
    public record Region(long fileOffset, PlannedTensor tensor) {
    }

    record Slab(Region region, long firstElement, long count) {
    }

    private TensorDataWriter() {
    }

    /**
     * Produces every region's bytes into {@code channel}.
     *
     * @throws AnamnesisException what a producer threw, or a {@link TensorIOException}
     */
    public static void write(FileChannel channel, List<Region> regions, WriteOptions options) {
        List<Slab> slabs = slabs(regions);
        long total = 0;
        for (Region r : regions) total += r.tensor().byteSize();
        options.progress().started(total);

        int threads = Math.max(1, Math.min(options.threads(), slabs.size()));
        Schedule schedule = new Schedule(slabs);
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable worker = () -> {
            try (Arena bufferArena = Arena.ofConfined()) {
                MemorySegment buffer = null;
                Slab slab;
                while (failure.get() == null && (slab = schedule.take()) != null) {
                    // Sized to what the slabs need, doubling up to a chunk: an allocation is
                    // zeroed, and a small file's run spent more on zeroing two 4 MiB buffers
                    // than on its tensors. A slab the kernel copies needs none.
                    long need = copiesInKernel(channel, slab) ? 0 : chunkBytes(slab.region().tensor());
                    if (need > 0 && (buffer == null || buffer.byteSize() < need)) {
                        long grown = buffer == null ? 0 : Math.min(CHUNK_BYTES, 2 * buffer.byteSize());
                        buffer = bufferArena.allocate(Math.max(need, grown), 64);
                    }
                    fillSlab(channel, slab, buffer, options.progress());
                    schedule.done(slab);
                }
            } catch (Throwable t) {
                failure.compareAndSet(null, t);
            }
        };
        if (threads == 1) {
            worker.run();
        } else {
            List<Thread> pool = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
                pool.add(Thread.ofPlatform().name("anamnesis-writer-" + t).start(worker));
            }
            for (Thread t : pool) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    failure.compareAndSet(null, e);
                }
            }
        }
        Throwable t = failure.get();
        if (t == null) return;
        if (t instanceof AnamnesisException ae) throw ae;
        // a page of an input mapping vanished under a producer: every reader's data is mapped
        // and every producer runs here, so this is the one place such a fault surfaces
        if (TensorIOException.isMappingFault(t)) throw TensorIOException.inputChanged(t);
        if (t instanceof IOException io) throw new TensorIOException("writing tensor data failed: " + AtomicOutput.describe(io), io);
        if (t instanceof InterruptedException ie) throw new TensorIOException("interrupted while writing", ie);
        if (t instanceof RuntimeException re) throw re;
        if (t instanceof Error err) throw err;
        throw new IllegalStateException(t);
    }

    /**
     * Hands out slabs in file order, except that a slab of a {@link TensorProducer.After}
     * tensor is passed over while its {@code first} tensor still has slabs unfinished: the
     * workers take the slabs after it meanwhile, and it is taken as soon as {@code first} is
     * complete. When only passed-over slabs are left, they are taken anyway (their producers
     * compute what is missing; the bytes are the same either way).
     */
    static final class Schedule {
        private final List<Slab> slabs;
        private final boolean[] taken;
        /** Slabs not yet finished of each producer that some After tensor waits for. */
        private final java.util.IdentityHashMap<TensorProducer, Integer> unfinished = new java.util.IdentityHashMap<>();
        private int cursor;

        Schedule(List<Slab> slabs) {
            this.slabs = slabs;
            this.taken = new boolean[slabs.size()];
            java.util.Set<TensorProducer> awaited = java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());
            for (Slab s : slabs) {
                if (s.region().tensor().producer() instanceof TensorProducer.After a) awaited.add(a.first());
            }
            for (Slab s : slabs) {
                TensorProducer p = s.region().tensor().producer();
                if (awaited.contains(p)) unfinished.merge(p, 1, Integer::sum);
            }
        }

        /** The next slab to fill, or null when every slab is taken. */
        synchronized Slab take() {
            while (cursor < slabs.size() && taken[cursor]) cursor++;
            int passedOver = -1;
            for (int i = cursor; i < slabs.size(); i++) {
                if (taken[i]) continue;
                if (slabs.get(i).region().tensor().producer() instanceof TensorProducer.After a
                        && unfinished.getOrDefault(a.first(), 0) > 0) {
                    if (passedOver < 0) passedOver = i;
                    continue;
                }
                taken[i] = true;
                return slabs.get(i);
            }
            if (passedOver < 0) return null;
            taken[passedOver] = true;
            return slabs.get(passedOver);
        }

        /** {@code slab} is written. */
        synchronized void done(Slab slab) {
            unfinished.computeIfPresent(slab.region().tensor().producer(), (p, n) -> n - 1);
        }
    }

    /** Elements per chunk: as many whole granules as fit {@link #CHUNK_BYTES}, at least one. */
    static long chunkElements(PlannedTensor t) {
        long n = t.elementCount();
        if (n == 0) return 0;
        long g = Math.min(t.granule(), n);
        long bytesPerGranule = t.dtype().byteSize(g);
        long granules = Math.max(1, CHUNK_BYTES / Math.max(1, bytesPerGranule));
        return Math.min(n, granules * g);
    }

    private static long chunkBytes(PlannedTensor t) {
        long e = chunkElements(t);
        return e == 0 ? 0 : t.dtype().byteSize(e);
    }

    static List<Slab> slabs(List<Region> regions) {
        List<Slab> out = new ArrayList<>();
        for (Region r : regions) {
            PlannedTensor t = r.tensor();
            long n = t.elementCount();
            if (n == 0) continue;
            long chunk = chunkElements(t);
            long chunksPerSlab = Math.max(1, SLAB_BYTES / Math.max(1, t.dtype().byteSize(chunk)));
            long slab = chunk * chunksPerSlab;
            for (long first = 0; first < n; first += slab) {
                out.add(new Slab(r, first, Math.min(slab, n - first)));
            }
        }
        return out;
    }

    /**
     * Whether the slab's bytes go file to file without this process's memory: a stored copy,
     * unless the output is a stream (AtomicOutput.InOrder: standard output, a FIFO), which has
     * no position to copy to.
     */
    private static boolean copiesInKernel(FileChannel channel, Slab slab) {
        return slab.region().tensor().producer() instanceof TensorProducer.StoredCopy
                && !(channel instanceof AtomicOutput.InOrder);
    }

    private static void fillSlab(FileChannel channel, Slab slab, MemorySegment buffer, ProgressListener progress)
            throws IOException {
        PlannedTensor t = slab.region().tensor();
        if (copiesInKernel(channel, slab)) {
            copySlab(channel, slab, ((TensorProducer.StoredCopy) t.producer()).region(), progress);
            return;
        }
        long chunk = chunkElements(t);
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller filler = t.producer().open(arena);
            long end = slab.firstElement() + slab.count();
            for (long first = slab.firstElement(); first < end; first += chunk) {
                long count = Math.min(chunk, end - first);
                long bytes = t.dtype().byteSize(count);
                MemorySegment dest = buffer.asSlice(0, bytes);
                filler.fill(first, count, dest);
                long position = slab.region().fileOffset() + t.dtype().byteSize(first);
                writeFully(channel, dest.asByteBuffer(), position);
                progress.advanced(bytes);
            }
        }
    }

    /**
     * A slab of a tensor stored as it is written, copied file to file by the kernel
     * ({@code FileChannel.transferTo}, which is {@code copy_file_range} between two files on
     * Linux): no mapping, no copy through this process's memory. {@code transferTo} writes at
     * the target's position, so the position is set, used and put back under the channel's
     * lock; the other workers' positional writes neither use nor move it.
     */
    private static void copySlab(FileChannel channel, Slab slab, StoredRegion region, ProgressListener progress)
            throws IOException {
        PlannedTensor t = slab.region().tensor();
        long skip = t.dtype().byteSize(slab.firstElement());
        long from = region.offset() + skip;
        long to = slab.region().fileOffset() + skip;
        long left = t.dtype().byteSize(slab.count());
        while (left > 0) {
            long n;
            synchronized (channel) {
                long saved = channel.position();
                channel.position(to);
                try {
                    n = region.file().transferTo(from, Math.min(left, CHUNK_BYTES), channel);
                } finally {
                    channel.position(saved);
                }
            }
            if (n <= 0) {
                throw TensorIOException.inputChanged(new EOFException("tensor '" + t.name() + "': the input ended at byte "
                        + from + ", " + left + " bytes before the tensor's end"));
            }
            from += n;
            to += n;
            left -= n;
            progress.advanced(n);
        }
    }

    /** A positional write that loops until every byte is written. */
    public static void writeFully(FileChannel channel, ByteBuffer src, long position) throws IOException {
        while (src.hasRemaining()) {
            position += channel.write(src, position);
        }
    }
}
