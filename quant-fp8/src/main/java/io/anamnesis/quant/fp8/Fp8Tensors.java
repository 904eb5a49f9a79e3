package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * The two stored tensors of one FP8 weight {@code <p>.weight [rows, cols]}: the codes (F8_E4M3
 * or F8_E5M2, same shape) and the scale ({@code <p>.weight_scale_inv} or
 * {@code <p>.weight_scale}: {@code []} per tensor, {@code [rows, 1]} per channel,
 * {@code [ceil(rows/bh), ceil(cols/bw)]} per block), each produced on its own from the dense
 * values, a few rows at a time. A per-tensor scale needs the whole tensor's amax first: one
 * streaming pass, done once by whichever producer asks first.
 */
final class Fp8Tensors {
    private Fp8Tensors() {
    }

    /** Elements worked per step, at least: a chunk is read and encoded this many rows at a time. */
    static final int PIECE = 1 << 16;

    static List<PlannedTensor> plan(DenseTensor t, Fp8Recipe.Spec spec, LossMeter loss) {
        String w = t.name();
        String prefix = w.substring(0, w.length() - ".weight".length());
        Shape shape = t.shape();
        long rows = shape.rank() == 2 ? shape.dim(0) : 1;
        int cols = Math.toIntExact(shape.rank() == 2 ? shape.dim(1) : shape.elementCount());
        Fp8Format format = spec.format();
        DType sd = spec.scaleDtype();
        Fp8Recipe.Granularity g = spec.granularity();
        // rows that share scales, and rows worked per step
        int band = g == Fp8Recipe.Granularity.BLOCK ? (int) spec.blockRows() : 1;
        int bandsPerPiece = Math.max(1, PIECE / Math.max(1, band * cols));
        int pieceRows = band * bandsPerPiece;
        long blockCols = g == Fp8Recipe.Granularity.BLOCK ? spec.blockCols() : cols;
        int scaleCols = (int) ceilDiv(cols, blockCols);
        Amax whole = g == Fp8Recipe.Granularity.TENSOR ? new Amax(t) : null;

        PlannedTensor weight = new PlannedTensor(w, format.dtype(), shape, (long) band * cols, arena -> {
            DenseReader reader = DenseReader.open(t, arena);
            int capacity = (int) Math.min((long) pieceRows * cols, t.elementCount());
            float[] x = new float[capacity];
            float[] decoded = new float[capacity];
            byte[] codes = new byte[capacity];
            float[] scales = new float[bandsPerPiece * scaleCols];
            return (first, count, dest) -> {
                long r0 = first / cols;
                long r1 = Math.min(rows, (first + count) / cols);
                long o = 0;
                for (long r = r0; r < r1; r += pieceRows) {
                    int k = (int) Math.min(pieceRows, r1 - r);
                    int m = k * cols;
                    reader.read(r * cols, m, x, 0);
                    scales(g, format, sd, whole, x, k, cols, band, blockCols, scales);
                    encode(g, format, x, k, cols, band, blockCols, scaleCols, scales, codes, decoded);
                    MemorySegment.copy(codes, 0, dest, ValueLayout.JAVA_BYTE, o, m);
                    o += m;
                    loss.record(w, r * cols, x, 0, decoded, 0, m);
                }
            };
        });

        Shape scaleShape = spec.scaleShape().orElse(switch (g) {
            case TENSOR -> Shape.SCALAR;
            case CHANNEL -> Shape.of(rows, 1);
            case BLOCK -> Shape.of(ceilDiv(rows, band), scaleCols);
        });
        PlannedTensor scale = new PlannedTensor(prefix + "." + spec.scaleSuffix(), sd, scaleShape,
                g == Fp8Recipe.Granularity.TENSOR ? scaleShape.elementCount() : g == Fp8Recipe.Granularity.CHANNEL ? 1 : scaleCols,
                arena -> {
                    if (g == Fp8Recipe.Granularity.TENSOR) {
                        return (first, count, dest) -> {
                            float s = Fp8Encoder.scale(format, whole.get(), sd);
                            for (long i = 0; i < count; i++) store(dest, i, s, sd);
                        };
                    }
                    DenseReader reader = DenseReader.open(t, arena);
                    int capacity = (int) Math.min((long) pieceRows * cols, t.elementCount());
                    float[] x = new float[capacity];
                    float[] scales = new float[bandsPerPiece * scaleCols];
                    return (first, count, dest) -> {
                        // one scale row per band of rows: [first, first + count) scales are bands first/scaleCols...
                        long b0 = first / scaleCols;
                        long b1 = (first + count) / scaleCols;
                        long o = 0;
                        for (long b = b0; b < b1; b += bandsPerPiece) {
                            int nb = (int) Math.min(bandsPerPiece, b1 - b);
                            long r = b * band;
                            int k = (int) Math.min((long) nb * band, rows - r);
                            reader.read(r * cols, k * cols, x, 0);
                            scales(g, format, sd, null, x, k, cols, band, blockCols, scales);
                            for (int i = 0; i < nb * scaleCols; i++) store(dest, o++, scales[i], sd);
                        }
                    };
                });
        return List.of(weight, scale);
    }

    /** The stored scales of {@code k} rows in {@code x}: one per band of {@code band} rows and {@code blockCols} columns. */
    private static void scales(Fp8Recipe.Granularity g, Fp8Format format, DType sd, Amax whole, float[] x, int k, int cols,
                               int band, long blockCols, float[] out) {
        if (g == Fp8Recipe.Granularity.TENSOR) {
            out[0] = Fp8Encoder.scale(format, whole.get(), sd);
            return;
        }
        int scaleCols = (int) ceilDiv(cols, blockCols);
        int bands = (int) ceilDiv(k, band);
        for (int b = 0; b < bands; b++) {
            int rEnd = Math.min(k, (b + 1) * band);
            for (int j = 0; j < scaleCols; j++) {
                int c0 = (int) (j * blockCols);
                int c1 = (int) Math.min(cols, c0 + blockCols);
                float amax = 0;
                for (int r = b * band; r < rEnd; r++) amax = Math.max(amax, Fp8Encoder.finiteAbsmax(x, r * cols + c0, r * cols + c1));
                out[b * scaleCols + j] = Fp8Encoder.scale(format, amax, sd);
            }
        }
    }

    private static void encode(Fp8Recipe.Granularity g, Fp8Format format, float[] x, int k, int cols, int band,
                               long blockCols, int scaleCols, float[] scales, byte[] codes, float[] decoded) {
        if (g == Fp8Recipe.Granularity.TENSOR) {
            Fp8Encoder.encode(format, x, 0, k * cols, scales[0], codes, 0, decoded);
            return;
        }
        for (int r = 0; r < k; r++) {
            int b = r / band;
            for (int j = 0; j < scaleCols; j++) {
                int c0 = (int) (j * blockCols);
                int c1 = (int) Math.min(cols, c0 + blockCols);
                Fp8Encoder.encode(format, x, r * cols + c0, c1 - c0, scales[b * scaleCols + j], codes, r * cols + c0, decoded);
            }
        }
    }

    private static void store(MemorySegment dest, long index, float s, DType sd) {
        if (sd.equals(DType.F32)) dest.set(LittleEndian.F32, 4 * index, s);
        else if (sd.equals(DType.BF16)) dest.set(LittleEndian.I16, 2 * index, Floats.f32ToBf16(s));
        else dest.set(LittleEndian.I16, 2 * index, Floats.f32ToF16(s));
    }

    /** The largest finite magnitude of a whole tensor, computed once. */
    static final class Amax {
        private final DenseTensor tensor;
        private volatile Float value;

        Amax(DenseTensor tensor) {
            this.tensor = tensor;
        }

        float get() {
            Float v = value;
            if (v != null) return v;
            synchronized (this) {
                if (value == null) value = compute();
                return value;
            }
        }

        private float compute() {
            long n = tensor.elementCount();
            int piece = (int) Math.min(PIECE, Math.max(1, n));
            float[] x = new float[piece];
            float amax = 0;
            try (Arena arena = Arena.ofConfined()) {
                DenseReader reader = DenseReader.open(tensor, arena);
                for (long s = 0; s < n; s += piece) {
                    int m = (int) Math.min(piece, n - s);
                    reader.read(s, m, x, 0);
                    amax = Math.max(amax, Fp8Encoder.finiteAbsmax(x, 0, m));
                }
            }
            return amax;
        }
    }

    static long ceilDiv(long a, long b) {
        return a == 0 ? 0 : (a - 1) / b + 1;
    }
}
