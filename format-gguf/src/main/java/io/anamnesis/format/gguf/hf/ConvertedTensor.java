package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
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
 */
final class ConvertedTensor {
    /** Elements converted per step of a chunk that is not permuted. */
    private static final int STEP = 1 << 14;

    private ConvertedTensor() {
    }

    /**
     * The F32 values of {@code source} under the name {@code name}, with the rope row
     * permutation of {@code heads} heads when present.
     */
    static PlannedTensor values(DenseTensor source, String name, Optional<Long> heads) {
        long rows = source.shape().rank() == 0 ? 1 : source.shape().dim(0);
        long cols = rows == 0 ? 0 : source.elementCount() / rows;
        boolean permuted = heads.isPresent();
        long headDim = permuted ? rows / heads.get() : 0;
        long granule = permuted ? Math.max(1, cols) : 1;
        return new PlannedTensor(name, DType.F32, source.shape(), granule, arena -> {
            DenseReader reader = DenseReader.open(source, arena);
            float[][] buf = new float[1][];
            return (first, count, dest) -> {
                if (!permuted) {
                    float[] b = buf[0] == null ? (buf[0] = new float[STEP]) : buf[0];
                    for (long done = 0; done < count; done += STEP) {
                        int n = (int) Math.min(STEP, count - done);
                        reader.read(first + done, n, b, 0);
                        MemorySegment.copy(b, 0, dest, LittleEndian.F32, 4 * done, n);
                    }
                    return;
                }
                // whole rows: output row h*hd + 2i + j is input row h*hd + j*hd/2 + i (LlamaModel.permute)
                int c = (int) cols;
                float[] b = buf[0] == null || buf[0].length < c ? (buf[0] = new float[Math.max(c, 1)]) : buf[0];
                long firstRow = first / cols;
                for (long r = firstRow; r < firstRow + count / cols; r++) {
                    long h = r / headDim, w = r % headDim;
                    long src = h * headDim + (w % 2) * (headDim / 2) + w / 2;
                    reader.read(src * cols, c, b, 0);
                    MemorySegment.copy(b, 0, dest, LittleEndian.F32, 4 * (r - firstRow) * cols, c);
                }
            };
        });
    }

    /** {@code values} (F32) narrowed to F16 or BF16; F32 as it is. */
    static PlannedTensor narrowed(PlannedTensor values, DType to) {
        if (to.equals(DType.F32)) return values;
        boolean f16 = to.equals(DType.F16);
        if (!f16 && !to.equals(DType.BF16)) throw new IllegalArgumentException("not a float output type: " + to);
        return new PlannedTensor(values.name(), to, values.shape(), values.granule(), arena -> {
            var src = values.producer().open(arena);
            MemorySegment[] scratch = new MemorySegment[1];
            return (first, count, dest) -> {
                long bytes = 4 * count;
                if (scratch[0] == null || scratch[0].byteSize() < bytes) scratch[0] = arena.allocate(Math.max(bytes, 1 << 16), 64);
                MemorySegment in = scratch[0].asSlice(0, bytes);
                src.fill(first, count, in);
                for (long i = 0; i < count; i++) {
                    int bits = in.getAtIndex(LittleEndian.I32, i);
                    short out = f16 ? Floats.f32BitsToF16(bits) : Floats.f32ToBf16(bits);
                    dest.setAtIndex(LittleEndian.I16, i, out);
                }
            };
        });
    }

    /** The values as a dense tensor, for an encoder that reads them ({@code ggml:q8_0}). */
    static DenseTensor dense(PlannedTensor values) {
        return new DenseTensor(values.name(), values.shape(), DType.F32, Optional.empty(), values, Optional.of(values), false);
    }
}
