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
 * <p>A tensor stored as BF16 or F16 and not recovered is read from its stored bytes and
 * widened straight into the caller's array (its values are by definition that widening):
 * one copy and one tight loop instead of a widening producer and a second copy, which is
 * most of what reading costs when an encoder is fast.
 *
 * <p>Confined: one reader per thread, opened in the arena of the chunk being produced.
 */
public final class DenseReader {
    private final PlannedTensor values;
    private final ChunkFiller filler;
    private final Arena arena;
    private final long granule;
    /** 0, or the stored 16-bit float type read directly: 1 BF16, 2 F16. */
    private final int halfKind;
    private MemorySegment scratch;
    private short[] halves;
    /** BF16 widening's float bits, before they are copied into the caller's array. */
    private int[] bits;

    private DenseReader(PlannedTensor values, ChunkFiller filler, Arena arena, int halfKind) {
        this.values = values;
        this.filler = filler;
        this.arena = arena;
        this.granule = Math.min(values.granule(), Math.max(1, values.elementCount()));
        this.halfKind = halfKind;
        // Buffers from the start, large enough for the rows and tiles encoders read: a reader
        // that made them on its first read took a branch the compiled read had never seen
        // (every new reader, one per tensor and thread), and C2 threw read and readHalves away
        // and compiled them again (-Xlog:deoptimization: unstable_if in buffer)
        this.scratch = arena.allocate(SCRATCH_BYTES, 64);
        this.halves = halfKind == 0 ? null : new short[(int) (SCRATCH_BYTES / 2)];
        this.bits = halfKind == 1 ? new int[(int) (SCRATCH_BYTES / 2)] : null;
    }

    /** The buffers' first size: a row of 16 Ki BF16 values, or 16 Ki F32 values. */
    private static final long SCRATCH_BYTES = 1 << 16;

    /** Opens the tensor's values (mapping its inputs into {@code arena}). */
    public static DenseReader open(DenseTensor tensor, Arena arena) {
        PlannedTensor v = tensor.values().orElseThrow(() -> new IllegalArgumentException(
                tensor.name() + " holds no float values (" + tensor.storedDType() + ")"));
        PlannedTensor stored = tensor.asStored();
        int half = tensor.recoveredFrom().isPresent() || !stored.shape().equals(v.shape()) ? 0
                : stored.dtype().equals(DType.BF16) ? 1 : stored.dtype().equals(DType.F16) ? 2 : 0;
        if (half != 0) return new DenseReader(stored, stored.producer().open(arena), arena, half);
        return new DenseReader(v, v.producer().open(arena), arena, 0);
    }

    /** Copies the F32 values of elements {@code [first, first + count)} into {@code dest[offset...]}. */
    public void read(long first, int count, float[] dest, int offset) {
        if (first < 0 || count < 0 || first + count > values.elementCount()) {
            throw new IndexOutOfBoundsException("elements " + first + "+" + count + " of " + values.name()
                    + " (" + values.elementCount() + ")");
        }
        if (count == 0) return;
        if (halfKind != 0) {
            readHalves(first, count, dest, offset);
            return;
        }
        long start = first - first % granule;
        long end = Math.min(values.elementCount(), ceilTo(first + count, granule));
        long span = end - start;
        MemorySegment buf = buffer(DType.F32.byteSize(span));
        filler.fill(start, span, buf);
        MemorySegment.copy(buf, LittleEndian.F32, DType.F32.byteSize(first - start), dest, offset, count);
    }

    /** Stored BF16/F16 bits, widened: BF16 by a shift (exact), F16 by the JDK's conversion (exact). */
    private void readHalves(long first, int count, float[] dest, int offset) {
        long start = first - first % granule;
        long end = Math.min(values.elementCount(), ceilTo(first + count, granule));
        int span = Math.toIntExact(end - start);
        MemorySegment buf = buffer(2L * span);
        filler.fill(start, span, buf);
        if (halves.length < span) halves = new short[span];
        short[] h = halves;
        MemorySegment.copy(buf, LittleEndian.I16, 0, h, 0, span);
        int skip = (int) (first - start);
        if (halfKind == 1) {
            if (bits.length < count) bits = new int[count];
            widenBf16(h, skip, bits, count);
            MemorySegment.copy(MemorySegment.ofArray(bits), 0, MemorySegment.ofArray(dest), 4L * offset, 4L * count);
        } else {
            widenF16(h, skip, dest, offset, count);
        }
    }

    // The loops are methods of their own: when the JIT throws away its compiled readHalves (a
    // branch it had never seen taken, as the reads change shape from whole rows to tiles), the
    // recompiling caller keeps calling these compiled loops instead of running them profiled.
    // Measured on a 1 GiB forget: the loop inline ran about a third of its time in that state.

    // A BF16's float bits are its 16 bits shifted up. Written as h << 16 into a float[] the loop
    // is scalar (C2 vectorizes neither a 16-bit value widened to int nor Float.intBitsToFloat,
    // JDK 25 on AVX2); through float and back, an exact round trip for every short, the
    // widening is a conversion it does vectorize, and the bits reach the floats by a memory
    // copy: 0.75-0.87 -> 0.38-0.41 ms per million values (docs/benchmarks.md).
    private static void widenBf16(short[] h, int from, int[] bits, int count) {
        for (int i = 0; i < count; i++) bits[i] = ((int) (float) h[from + i]) << 16;
    }

    private static void widenF16(short[] h, int from, float[] dest, int offset, int count) {
        for (int i = 0; i < count; i++) dest[offset + i] = Float.float16ToFloat(h[from + i]);
    }

    private MemorySegment buffer(long bytes) {
        if (scratch.byteSize() < bytes) scratch = arena.allocate(bytes, 64);
        return scratch.asSlice(0, bytes);
    }

    private static long ceilTo(long n, long g) {
        long r = n % g;
        return r == 0 ? n : n + (g - r);
    }
}
