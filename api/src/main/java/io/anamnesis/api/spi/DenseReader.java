package io.anamnesis.api.spi;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;


/**
 * Reads any element range of a {@link DenseTensor}'s F32 values into a {@code float[]}, for
 * encoders that work on rows. The values' producer may need its own granule (a block, a
 * row of the recovered tensor); ranges that do not start or end on it are produced whole
 * into a scratch buffer and the asked part copied, so an encoder never has to care.
 *
 * <p>Confined: one reader per thread, opened in the arena of the chunk being produced.
 */
public final class DenseReader {
    private final PlannedTensor values;
    private final ChunkFiller filler;
    private final Arena arena;
    private final long granule;
    private MemorySegment scratch;

    private DenseReader(PlannedTensor values, ChunkFiller filler, Arena arena) {
        this.values = values;
        this.filler = filler;
        this.arena = arena;
        this.granule = Math.min(values.granule(), Math.max(1, values.elementCount()));
    }

    /** Opens the tensor's values (mapping its inputs into {@code arena}). */
    public static DenseReader open(DenseTensor tensor, Arena arena) {
        PlannedTensor v = tensor.values().orElseThrow(() -> new IllegalArgumentException(
                tensor.name() + " holds no float values (" + tensor.storedDType() + ")"));
        return new DenseReader(v, v.producer().open(arena), arena);
    }

    /** Copies the F32 values of elements {@code [first, first + count)} into {@code dest[offset...]}. */
    public void read(long first, int count, float[] dest, int offset) {
        if (first < 0 || count < 0 || first + count > values.elementCount()) {
            throw new IndexOutOfBoundsException("elements " + first + "+" + count + " of " + values.name()
                    + " (" + values.elementCount() + ")");
        }
        if (count == 0) return;
        long start = first - first % granule;
        long end = Math.min(values.elementCount(), ceilTo(first + count, granule));
        long span = end - start;
        MemorySegment buf = buffer(DType.F32.byteSize(span));
        filler.fill(start, span, buf);
        MemorySegment.copy(buf, LittleEndian.F32, DType.F32.byteSize(first - start), dest, offset, count);
    }

    private MemorySegment buffer(long bytes) {
        if (scratch == null || scratch.byteSize() < bytes) scratch = arena.allocate(Math.max(bytes, 1 << 16), 64);
        return scratch.asSlice(0, bytes);
    }

    private static long ceilTo(long n, long g) {
        long r = n % g;
        return r == 0 ? n : n + (g - r);
    }
}
