package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.Handoff;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.TensorProducer;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.List;

/**
 * The stored tensors of one LLM.int8() weight {@code <p>.weight [out, in]}, planned as
 * bitsandbytes' {@code Linear8bitLt} saves them: {@code <p>.weight} (I8, same shape),
 * {@code <p>.SCB} (F32 {@code [out]}, each row's absmax) and {@code <p>.weight_format} (U8
 * scalar 0, "row-major", written for backward compatibility). Row by row, in pieces of a
 * few rows, so memory stays bounded whatever the chunk.
 */
final class Int8Tensors {
    private Int8Tensors() {
    }

    static List<PlannedTensor> plan(DenseTensor t, BnbRecipe.Int8Spec spec, LossMeter loss) {
        String w = t.name();
        String prefix = w.endsWith(".weight") ? w.substring(0, w.length() - ".weight".length()) : w;
        long rows = t.shape().dim(0);
        int cols = Math.toIntExact(t.shape().dim(1));
        int rowsPerPiece = Math.max(1, FourBitTensors.PIECE / Math.max(1, cols));
        List<PlannedTensor> out = new ArrayList<>();
        Handoff<Float> left = new Handoff<>(rows); // each row's SCB as the weight's encoder computed it
        TensorProducer weightProducer = arena -> {
            DenseReader reader = DenseReader.open(t, arena);
            float[] x = new float[rowsPerPiece * cols];
            float[] half = new float[cols];
            float[] decoded = new float[rowsPerPiece * cols];
            byte[] codes = new byte[rowsPerPiece * cols];
            return (first, count, dest) -> {
                long r0 = first / cols;
                long r1 = (first + count) / cols;
                long o = 0;
                for (long r = r0; r < r1; r += rowsPerPiece) {
                    int k = (int) Math.min(rowsPerPiece, r1 - r);
                    int m = k * cols;
                    reader.read(r * cols, m, x, 0);
                    for (int i = 0; i < k; i++) {
                        float scb = Int8Encoder.encodeRow(x, i * cols, cols, codes, i * cols, half);
                        left.put(r + i, scb);
                        if (!loss.measures()) continue;
                        for (int c = 0; c < cols; c++) decoded[i * cols + c] = Int8Rows.value(codes[i * cols + c], scb);
                    }
                    MemorySegment.copy(codes, 0, dest, ValueLayout.JAVA_BYTE, o, m);
                    o += m;
                    loss.record(w, r * cols, x, 0, decoded, 0, m);
                }
            };
        };
        out.add(new PlannedTensor(w, DType.I8, t.shape(), Math.max(1, cols), weightProducer));
        TensorProducer scbProducer = arena -> {
            DenseReader[] reader = new DenseReader[1]; // opened only for rows whose SCB was not left
            float[] x = new float[rowsPerPiece * cols];
            return (first, count, dest) -> {
                for (long r = first; r < first + count; r += rowsPerPiece) {
                    int k = (int) Math.min(rowsPerPiece, first + count - r);
                    boolean read = false;
                    for (int i = 0; i < k; i++) {
                        Float kept = left.take(r + i);
                        float scb;
                        if (kept != null) {
                            scb = kept;
                        } else {
                            if (!read) {
                                if (reader[0] == null) reader[0] = DenseReader.open(t, arena);
                                reader[0].read(r * cols, k * cols, x, 0);
                                read = true;
                            }
                            // the absmax of the float16 row is the float16 rounding of the row's absmax (rounding is monotonic)
                            scb = Float.float16ToFloat(Float.floatToFloat16(FourBitEncoder.absmax(x, i * cols, (i + 1) * cols)));
                        }
                        dest.set(LittleEndian.F32, 4 * (r - first + i), scb);
                    }
                }
            };
        };
        // made after the weight, it copies the SCB the weight's encoder computed instead of reading the weight again
        out.add(new PlannedTensor(prefix + ".SCB", DType.F32, Shape.of(rows), 1, new TensorProducer.After(scbProducer, weightProducer)));
        if (spec.weightFormat()) {
            out.add(new PlannedTensor(prefix + ".weight_format", DType.U8, Shape.SCALAR, 1,
                    arena -> (first, count, dest) -> dest.set(ValueLayout.JAVA_BYTE, 0, (byte) 0)));
        }
        return out;
    }
}
