package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.quant.gguf.llama.GgmlType;
import io.anamnesis.quant.gguf.llama.ImportanceMatrix;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Optional;

/**
 * One tensor encoded to a ggml type, row by row: the producer reads a few rows of dense
 * values (recovering them on the fly when the source is quantized), encodes them, copies the
 * blocks out, decodes them again and measures what was lost. ggml's encoders treat each row
 * alone, so any split into chunks gives the bytes {@code ggml_quantize_chunk} gives for the
 * whole tensor, at any thread count.
 *
 * <p>Memory per producer: a batch of about {@link GgufQuantizer#BATCH_ELEMENTS} values in
 * and out, and the tensor's importance row(s); never the tensor.
 */
final class RowQuantizer {
    private RowQuantizer() {
    }

    /** Rows longer than this are refused: one row must fit a Java array, twice. */
    static final long MAX_ROW = 1L << 28;

    /**
     * @param encoder empty when none is registered yet: the tensor is planned, and fails when produced
     * @param imatrix the importance matrix, when it has a fitting entry for this tensor
     */
    static PlannedTensor plan(DenseTensor tensor, GgmlType type, DType dtype, Optional<RowEncoder> encoder,
                              Optional<ImportanceMatrix> imatrix, LossMeter loss) {
        String name = tensor.name();
        long perRowLong = tensor.rowLength();
        if (perRowLong > MAX_ROW) {
            throw UnsupportedFeatureException.inTensor(name, "rows of " + perRowLong + " elements are too long to encode");
        }
        int perRow = (int) perRowLong;
        int rank = tensor.shape().rank();
        long rowsPerExpert = rank >= 2 ? tensor.shape().dim(rank - 2) : 1;
        long experts = rank >= 3 ? tensor.shape().dim(rank - 3) : 1;
        int rowBytes = Math.toIntExact(dtype.byteSize(perRow));
        loss.expect(name);
        return new PlannedTensor(name, dtype, tensor.shape(), Math.max(1, perRow), arena -> {
            RowEncoder enc = encoder.orElseThrow(() -> UnsupportedFeatureException.inTensor(name,
                    "no encoder for " + type.ggmlName() + " is registered in quant-gguf yet"));
            DenseReader reader = DenseReader.open(tensor, arena);
            float[][] weights = imatrix.map(m -> perExpert(m.values(name), perRow, (int) experts)).orElse(null);
            GgufBlockType codec = GgufBlockType.byName(type.name()).orElseThrow(
                    () -> new IllegalStateException("no decoder for " + type));
            int blocksPerRow = perRow / type.blockElements();
            int batch = Math.max(1, GgufQuantizer.BATCH_ELEMENTS / Math.max(1, perRow));
            float[] src = new float[batch * perRow];
            float[] back = new float[batch * perRow];
            byte[] bytes = new byte[batch * rowBytes];
            return (first, count, dest) -> {
                long firstRow = first / perRow;
                long rows = count / perRow;
                LossMeter.Loss lost = LossMeter.Loss.NONE;
                for (long r = 0; r < rows; ) {
                    long row = firstRow + r;
                    int n = (int) Math.min(batch, rows - r);
                    float[] w = null;
                    if (weights != null) {
                        // one call per expert: each has its own importance row
                        n = (int) Math.min(n, rowsPerExpert - row % rowsPerExpert);
                        w = weights[(int) ((row / rowsPerExpert) % experts)];
                    }
                    int values = n * perRow;
                    reader.read(row * perRow, values, src, 0);
                    try {
                        enc.encode(src, 0, bytes, 0, n, perRow, w);
                    } catch (IllegalArgumentException refused) {
                        // an input ggml's encoder aborts on (a non-finite value in an i-quant grid search)
                        throw UnsupportedFeatureException.inTensor(name, "rows " + row + ".." + (row + n - 1)
                                + " cannot be quantized to " + type.ggmlName() + ": " + refused.getMessage());
                    }
                    MemorySegment.copy(bytes, 0, dest, ValueLayout.JAVA_BYTE, r * rowBytes, n * rowBytes);
                    if (loss.measures()) {
                        codec.decode(bytes, 0, back, 0, n * blocksPerRow);
                        lost = lost.plus(LossMeter.measure(src, 0, back, 0, values));
                    }
                    r += n;
                }
                loss.record(name, first, lost);
            };
        });
    }

    /** The importance values split into one row of {@code perRow} per expert, as llama.cpp hands them out. */
    static float[][] perExpert(float[] values, int perRow, int experts) {
        float[][] out = new float[experts][];
        for (int e = 0; e < experts; e++) out[e] = java.util.Arrays.copyOfRange(values, e * perRow, (e + 1) * perRow);
        return out;
    }
}
