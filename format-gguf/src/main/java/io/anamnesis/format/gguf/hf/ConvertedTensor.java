package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;

import java.lang.foreign.MemorySegment;
import io.anamnesis.api.numeric.LittleEndian;
import java.util.Optional;

/**
 * One tensor as the converter writes it: its F32 values (read, or recovered, then widened
 * exactly), rows reordered for ggml's rope where the architecture says so, and narrowed to
 * F32, F16 (numpy's {@code astype(float16)}: round to nearest even) or BF16 (gguf-py's
 * {@code quantize_blocks}: round to nearest even, NaN made quiet). Produced a band of rows at
 * a time: a chunk reads only the rows it writes, so memory stays bounded whatever the tensor.
 *
 * <p>A weight stored as BF16 and written as BF16 is the common case (most checkpoints are
 * BF16): widening is exact and rounding a widened value changes nothing, so its stored bytes
 * are copied and only a NaN gets the quiet bit gguf-py's rounding sets. A tensor stored as F16
 * and written as F16 is copied as it is: the converter keeps it float16 and numpy's
 * {@code astype(float16)} leaves it alone.
 *
 * <p>NaNs as the converter's numpy (1.26, the converter's pin, and the 1.24 it was compared
 * with) converts them, in software ({@code npy_floatbits_to_halfbits},
 * {@code npy_halfbits_to_floatbits}): a signalling NaN stays signalling both ways, unlike
 * x86's {@code vcvtps2ph}/{@code vcvtph2ps} and the JDK's {@link Float#floatToFloat16} and
 * {@link Float#float16ToFloat}, which make it quiet; see {@link #numpyF16} and {@link #numpyF32}.
 */
final class ConvertedTensor {
    /** Elements converted per step of a run of consecutive source elements. */
    private static final int STEP = 1 << 14;

    private ConvertedTensor() {
    }

    /**
     * The F32 values of {@code source} under the name {@code name}, with the rope row
     * permutation of {@code heads} heads when present.
     */
    static PlannedTensor values(DenseTensor source, String name, Optional<Long> heads) {
        return converted(source, name, heads, DType.F32);
    }

    /** {@link #values} with the family's {@link Architecture.Shift} added, when it has one for the tensor. */
    static PlannedTensor values(DenseTensor source, String name, Optional<Long> heads, Optional<Architecture.Shift> shift) {
        return converted(source, name, heads, DType.F32, shift);
    }

    /**
     * {@code source}'s values as {@link #values} makes them, written as {@code to}: F32, F16 or
     * BF16.
     */
    static PlannedTensor converted(DenseTensor source, String name, Optional<Long> heads, DType to) {
        return converted(source, name, heads, to, Optional.empty());
    }

    /**
     * {@link #converted} with {@code shift}'s amount added to each value first, as the
     * converter adds it to the tensor it holds: in float16 when the tensor is stored as F16
     * (its float16 sum, rounded to nearest even, then widened exactly), in float32 otherwise.
     */
    static PlannedTensor converted(DenseTensor source, String name, Optional<Long> heads, DType to,
                                   Optional<Architecture.Shift> shift) {
        boolean f16 = to.equals(DType.F16);
        if (!f16 && !to.equals(DType.BF16) && !to.equals(DType.F32)) {
            throw new IllegalArgumentException("not a float output type: " + to);
        }
        long rows = source.shape().rank() == 0 ? 1 : source.shape().dim(0);
        long cols = rows == 0 ? 0 : source.elementCount() / rows;
        boolean permuted = heads.isPresent();
        long headDim = permuted ? rows / heads.get() : 0;
        long granule = permuted ? Math.max(1, cols) : 1;
        // the converter keeps a float16 tensor as float16 (and widens every other type) before modify_tensors
        boolean halfSum = source.storedDType().equals(DType.F16) && source.recoveredFrom().isEmpty();
        // its stored bits, widened here as numpy widens them (DenseReader widens as the JDK does)
        boolean halfStored = halfSum && source.asStored().shape().equals(source.shape()) && source.asStored().granule() == 1;
        boolean copyStored = source.recoveredFrom().isEmpty() && shift.isEmpty() && source.storedDType().equals(to)
                && (to.equals(DType.BF16) || (to.equals(DType.F16) && halfStored));
        float amount = shift.map(Architecture.Shift::amount).orElse(0f);
        return new PlannedTensor(name, to, source.shape(), granule, arena -> {
            Run run;
            if (copyStored) {
                ChunkFiller stored = source.asStored().producer().open(arena);
                short[] halves = new short[STEP];
                run = (from, n, dest, at) -> {
                    for (int done = 0; done < n; done += STEP) {
                        int m = Math.min(STEP, n - done);
                        MemorySegment part = dest.asSlice(2 * (at + done), 2L * m);
                        stored.fill(from + done, m, part);
                        if (!f16 && quietNaNs(part, halves, m)) MemorySegment.copy(halves, 0, part, LittleEndian.I16, 0, m);
                    }
                };
            } else {
                DenseReader reader = halfStored ? null : DenseReader.open(source, arena);
                ChunkFiller stored = halfStored ? source.asStored().producer().open(arena) : null;
                MemorySegment storedHalves = halfStored ? arena.allocate(2L * STEP) : null;
                short[] read = halfStored ? new short[STEP] : null;
                float[] values = new float[STEP];
                short[] halves = to.equals(DType.F32) ? null : new short[STEP];
                run = (from, n, dest, at) -> {
                    for (int done = 0; done < n; done += STEP) {
                        int m = Math.min(STEP, n - done);
                        if (halfStored) {
                            stored.fill(from + done, m, storedHalves.asSlice(0, 2L * m));
                            MemorySegment.copy(storedHalves, LittleEndian.I16, 0, read, 0, m);
                            for (int i = 0; i < m; i++) values[i] = numpyF32(read[i]);
                        } else {
                            reader.read(from + done, m, values, 0);
                        }
                        if (shift.isPresent()) {
                            for (int i = 0; i < m; i++) {
                                float sum = values[i] + amount;
                                values[i] = halfSum ? Floats.f16ToF32(Floats.f32BitsToF16(Float.floatToRawIntBits(sum))) : sum;
                            }
                        }
                        if (halves == null) {
                            MemorySegment.copy(values, 0, dest, LittleEndian.F32, 4 * (at + done), m);
                            continue;
                        }
                        if (f16) {
                            for (int i = 0; i < m; i++) halves[i] = numpyF16(Float.floatToRawIntBits(values[i]));
                        } else {
                            for (int i = 0; i < m; i++) halves[i] = Floats.f32ToBf16(Float.floatToRawIntBits(values[i]));
                        }
                        MemorySegment.copy(halves, 0, dest, LittleEndian.I16, 2 * (at + done), m);
                    }
                };
            }
            return (first, count, dest) -> {
                if (!permuted) {
                    run.convert(first, Math.toIntExact(count), dest, 0);
                    return;
                }
                long firstRow = first / cols;
                for (long r = firstRow; r < firstRow + count / cols; r++) {
                    run.convert(ropeSourceRow(r, headDim) * cols, (int) cols, dest, (r - firstRow) * cols);
                }
            };
        });
    }

    /**
     * {@code experts} stacked along a new first dimension ({@code torch.stack(dim=0)}), each
     * converted as {@link #converted} makes it, written as {@code to}: expert {@code x}'s
     * elements are the output's {@code [x * E, (x + 1) * E)} for experts of {@code E} elements.
     * A chunk opens only the experts it overlaps, and each reads only the band it writes, so
     * memory stays bounded however many experts there are. The experts have one shape.
     */
    static PlannedTensor stacked(java.util.List<DenseTensor> experts, String name, DType to) {
        DenseTensor first = experts.getFirst();
        long[] dims = first.shape().toArray();
        long[] out = new long[dims.length + 1];
        out[0] = experts.size();
        System.arraycopy(dims, 0, out, 1, dims.length);
        long per = first.elementCount();
        java.util.List<PlannedTensor> parts = experts.stream().map(e -> {
            if (!e.shape().equals(first.shape())) throw new IllegalArgumentException(e.name() + " is not of " + first.shape());
            return converted(e, name, Optional.empty(), to);
        }).toList();
        return new PlannedTensor(name, to, io.anamnesis.api.Shape.of(out), 1, arena -> {
            ChunkFiller[] open = new ChunkFiller[parts.size()];
            return (start, count, dest) -> {
                long done = 0;
                while (done < count) {
                    long at = start + done;
                    int x = Math.toIntExact(at / per);
                    long offset = at % per, n = Math.min(count - done, per - offset);
                    if (open[x] == null) open[x] = parts.get(x).producer().open(arena);
                    open[x].fill(offset, n, dest.asSlice(to.byteSize(done), to.byteSize(n)));
                    done += n;
                }
            };
        });
    }

    /**
     * The first {@code rows} rows of {@code d} (rows along the first dimension), as
     * {@code d[:rows]}: the same values, read from the start, under a shorter shape.
     */
    static DenseTensor firstRows(DenseTensor d, long rows) {
        long[] dims = d.shape().toArray();
        if (dims.length == 0 || rows < 0 || rows > dims[0]) throw new IllegalArgumentException(rows + " rows of " + d.shape());
        dims[0] = rows;
        io.anamnesis.api.Shape shape = io.anamnesis.api.Shape.of(dims);
        return new DenseTensor(d.name(), shape, d.storedDType(), d.recoveredFrom(), cut(d.asStored(), shape),
                d.values().map(v -> cut(v, shape)), d.keep());
    }

    /**
     * {@code d} without its first {@code first} rows (rows along the first dimension), as {@code d[first:]}: what
     * RoBERTa's converters make of position embeddings that start at the padding id + 1.
     */
    static DenseTensor rowsFrom(DenseTensor d, long first) {
        long[] dims = d.shape().toArray();
        if (dims.length == 0 || first < 0 || first > dims[0]) throw new IllegalArgumentException("rows from " + first + " of " + d.shape());
        long skip = first * (dims[0] == 0 ? 0 : d.elementCount() / dims[0]);
        dims[0] -= first;
        io.anamnesis.api.Shape shape = io.anamnesis.api.Shape.of(dims);
        return new DenseTensor(d.name(), shape, d.storedDType(), d.recoveredFrom(), shifted(d.asStored(), shape, skip),
                d.values().map(v -> shifted(v, shape, skip)), d.keep());
    }

    private static PlannedTensor shifted(PlannedTensor t, io.anamnesis.api.Shape shape, long skip) {
        if (skip % t.granule() != 0) throw new IllegalArgumentException(t.name() + ": " + skip + " elements is not whole granules");
        long n = shape.elementCount();
        long granule = n == 0 || n % t.granule() != 0 ? Math.max(1, n) : t.granule();
        return new PlannedTensor(t.name(), t.dtype(), shape, granule, arena -> {
            ChunkFiller inner = t.producer().open(arena);
            return (start, count, dest) -> inner.fill(start + skip, count, dest);
        });
    }

    /**
     * The single row of {@code d} ({@code [1, n]}) twice, as {@code [2, n]}: a tensor llama-quantize's rules count as a
     * matrix, so that its first row's blocks can be had from an encoder that keeps one-row tensors as they are.
     */
    static DenseTensor rowTwice(DenseTensor d) {
        if (d.shape().rank() != 2 || d.shape().dim(0) != 1) throw new IllegalArgumentException(d.name() + " is not one row: " + d.shape());
        long n = d.shape().dim(1);
        io.anamnesis.api.Shape shape = io.anamnesis.api.Shape.of(2, n);
        return new DenseTensor(d.name(), shape, d.storedDType(), d.recoveredFrom(), twice(d.asStored(), shape, n),
                d.values().map(v -> twice(v, shape, n)), d.keep());
    }

    private static PlannedTensor twice(PlannedTensor t, io.anamnesis.api.Shape shape, long n) {
        return new PlannedTensor(t.name(), t.dtype(), shape, 1, arena -> {
            ChunkFiller inner = t.producer().open(arena);
            return (start, count, dest) -> {
                long done = 0;
                while (done < count) {
                    long at = (start + done) % n, take = Math.min(count - done, n - at);
                    inner.fill(at, take, dest.asSlice(t.dtype().byteSize(done), t.dtype().byteSize(take)));
                    done += take;
                }
            };
        });
    }

    /** {@code d} under another shape of as many elements: the same values in the same order ({@code reshape}/{@code squeeze}). */
    static DenseTensor reshaped(DenseTensor d, io.anamnesis.api.Shape shape) {
        if (shape.elementCount() != d.elementCount()) throw new IllegalArgumentException(shape + " is not " + d.shape() + " reshaped");
        return new DenseTensor(d.name(), shape, d.storedDType(), d.recoveredFrom(), cut(d.asStored(), shape),
                d.values().map(v -> cut(v, shape)), d.keep());
    }

    private static PlannedTensor cut(PlannedTensor t, io.anamnesis.api.Shape shape) {
        long n = shape.elementCount();
        long granule = n == 0 || n % t.granule() != 0 ? Math.max(1, n) : t.granule();
        return new PlannedTensor(t.name(), t.dtype(), shape, granule, t.producer());
    }

    /**
     * Copies {@code n} stored BF16 values of {@code part} into {@code halves}, setting the
     * quiet bit of every NaN as gguf-py's rounding does; says whether any was set.
     */
    private static boolean quietNaNs(MemorySegment part, short[] halves, int n) {
        MemorySegment.copy(part, LittleEndian.I16, 0, halves, 0, n);
        boolean changed = false;
        for (int i = 0; i < n; i++) {
            int h = halves[i];
            if ((h & 0x7FFF) > 0x7F80 && (h & 0x0040) == 0) {
                halves[i] = (short) (h | 0x0040);
                changed = true;
            }
        }
        return changed;
    }

    /**
     * numpy's {@code astype(float16)} of F32 bits: round to nearest even (as
     * {@link Float#floatToFloat16}); a NaN keeps its sign and the top ten bits of its payload,
     * so a signalling NaN stays signalling, and becomes {@code 0x7C01} (with its sign) when those
     * ten bits are zero, so that it stays a NaN.
     */
    static short numpyF16(int bits) {
        if ((bits & 0x7FFF_FFFF) > 0x7F80_0000) {
            int h = 0x7C00 + ((bits & 0x007F_FFFF) >>> 13);
            return (short) (((bits >>> 16) & 0x8000) | (h == 0x7C00 ? 0x7C01 : h));
        }
        return Float.floatToFloat16(Float.intBitsToFloat(bits));
    }

    /** numpy's {@code astype(float32)} of F16 bits: exact; a NaN keeps its sign and payload, signalling or quiet. */
    static float numpyF32(short h) {
        if ((h & 0x7C00) == 0x7C00 && (h & 0x03FF) != 0) {
            return Float.intBitsToFloat(((h & 0x8000) << 16) | 0x7F80_0000 | ((h & 0x03FF) << 13));
        }
        return Float.float16ToFloat(h);
    }

    /** Converts {@code n} consecutive source elements from {@code from} into {@code dest} at element {@code at}. */
    @FunctionalInterface
    private interface Run {
        void convert(long from, int n, MemorySegment dest, long at);
    }

    /**
     * The source row of output row {@code r} under the rope permutation of heads of
     * {@code headDim} rows: output row h*hd + 2i + j is input row h*hd + j*hd/2 + i
     * (the converter's {@code LlamaModel.permute}).
     */
    private static long ropeSourceRow(long r, long headDim) {
        long h = r / headDim, w = r % headDim;
        return h * headDim + (w % 2) * (headDim / 2) + w / 2;
    }

    /**
     * The values {@link #values} makes of {@code source}, as a dense tensor named {@code name},
     * for an encoder that reads them ({@code ggml:q8_0}). Without a shift they are the source's
     * own values, rows permuted where {@code heads} says so (a stored float16 aside, which the
     * converter widens as numpy does): the encoder reads the source directly, BF16 widened as it
     * reads, a permuted tensor's stored rows copied in their new order, instead of through an
     * F32 copy of every value (1 GiB BF16 folder to Q8_0: docs/benchmarks.md).
     */
    static DenseTensor dense(DenseTensor source, String name, Optional<Long> heads, Optional<Architecture.Shift> shift) {
        boolean numpyHalves = source.storedDType().equals(DType.F16) && source.recoveredFrom().isEmpty();
        if (shift.isEmpty() && !numpyHalves && source.values().isPresent()) {
            if (heads.isEmpty()) {
                // under the GGUF name throughout: an encoder that keeps a tensor as it is hands back these parts
                return new DenseTensor(name, source.shape(), source.storedDType(), source.recoveredFrom(),
                        named(source.asStored(), name), source.values().map(v -> named(v, name)), false);
            }
            PlannedTensor stored = source.asStored();
            if (source.recoveredFrom().isEmpty() && stored.dtype().equals(DType.BF16) && stored.shape().equals(source.shape())) {
                // read as stored BF16 (DenseReader widens it as it reads); the F32 values stay for any other reader
                return new DenseTensor(name, source.shape(), DType.BF16, Optional.empty(), ropeRows(stored, name, heads.get()),
                        Optional.of(values(source, name, heads, shift)), false);
            }
        }
        return dense(values(source, name, heads, shift));
    }

    /** {@code t} under another name: the same bytes. */
    private static PlannedTensor named(PlannedTensor t, String name) {
        return t.name().equals(name) ? t : new PlannedTensor(name, t.dtype(), t.shape(), t.granule(), t.producer());
    }

    /** {@code stored}'s rows in the rope order of {@code heads} heads, its bytes copied a row at a time. */
    private static PlannedTensor ropeRows(PlannedTensor stored, String name, long heads) {
        long rows = stored.shape().dim(0);
        long cols = stored.elementCount() / rows;
        long headDim = rows / heads;
        long rowBytes = stored.dtype().byteSize(cols);
        return new PlannedTensor(name, stored.dtype(), stored.shape(), Math.max(1, cols), arena -> {
            ChunkFiller rowsOf = stored.producer().open(arena);
            return (first, count, dest) -> {
                long firstRow = first / cols;
                for (long r = firstRow; r < firstRow + count / cols; r++) {
                    rowsOf.fill(ropeSourceRow(r, headDim) * cols, cols, dest.asSlice((r - firstRow) * rowBytes, rowBytes));
                }
            };
        });
    }

    /** F32 values planned by this class, as a dense tensor for an encoder that reads them. */
    static DenseTensor dense(PlannedTensor values) {
        return new DenseTensor(values.name(), values.shape(), DType.F32, Optional.empty(), values, Optional.of(values), false);
    }
}
