package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.Shape;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.Handoff;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.TensorProducer;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;

/**
 * The two stored tensors of one FP8 weight {@code <p>.weight [rows, cols]}: the codes (F8_E4M3,
 * F8_E5M2, F8_E4M3FNUZ or F8_E5M2FNUZ, same shape) and the scale ({@code <p>.weight_scale_inv} or
 * {@code <p>.weight_scale}: {@code []} per tensor, {@code [rows, 1]} per channel,
 * {@code [ceil(rows/bh), ceil(cols/bw)]} per block), each produced from the dense values, a few
 * rows at a time. A per-tensor scale needs the whole tensor's amax first: one streaming pass,
 * done once by whichever producer asks first. Block and channel scales are computed by the
 * weight's encoder anyway: it leaves each band's row ({@link Handoff}) for the scale tensor, which the
 * writer makes after the weight ({@link TensorProducer.After}); a band whose scales were not
 * left is read and computed again.
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
        Tiling tiling = new Tiling(spec, rows, cols, spec.granularity() == Fp8Recipe.Granularity.TENSOR ? new Amax(t) : null);
        Fp8Target target = spec.target();
        DType sd = spec.scaleDtype();
        Fp8Recipe.Granularity g = spec.granularity();

        // per block or channel, the scales the weight's encoder computes, left for the scale tensor
        Handoff<float[]> left = g == Fp8Recipe.Granularity.TENSOR ? null : new Handoff<>(ceilDiv(rows, tiling.band));
        TensorProducer weightProducer = arena -> {
            DenseReader reader = DenseReader.open(t, arena);
            Tile tile = tiling.tile(loss.measures());
            return (first, count, dest) -> {
                long r0 = first / cols;
                long r1 = Math.min(rows, (first + count) / cols);
                for (long r = r0; r < r1; r += tiling.tileRows) {
                    int h = (int) Math.min(tiling.tileRows, r1 - r);
                    int bands = (int) ceilDiv(h, tiling.band);
                    float[][] bandScales = left == null ? null : new float[bands][tiling.scaleCols];
                    for (int c0 = 0; c0 < cols; c0 += tiling.tileCols) {
                        int wd = Math.min(tiling.tileCols, cols - c0);
                        tiling.read(reader, r, h, c0, wd, tile.x);
                        tiling.scales(tile.x, h, wd, tile.scales);
                        if (bandScales != null) {
                            int sc = (int) ceilDiv(wd, tiling.blockCols);
                            int j0 = (int) (c0 / tiling.blockCols);
                            for (int k = 0; k < bands; k++) System.arraycopy(tile.scales, k * sc, bandScales[k], j0, sc);
                        }
                        tiling.encode(tile, h, wd);
                        for (int i = 0; i < h; i++) {
                            MemorySegment.copy(tile.codes, i * wd, dest, ValueLayout.JAVA_BYTE, (r - r0 + i) * cols + c0, wd);
                        }
                        // one entry per chunk: the tiles' sums merge into it in this fixed order
                        loss.record(w, first, tile.x, 0, tile.decoded, 0, h * wd);
                    }
                    if (bandScales != null) {
                        for (int k = 0; k < bands; k++) left.put(r / tiling.band + k, bandScales[k]);
                    }
                }
            };
        };
        PlannedTensor weight = new PlannedTensor(w, target.format().dtype(), shape, (long) tiling.band * cols, weightProducer);

        Shape scaleShape = spec.scaleShape().orElse(switch (g) {
            case TENSOR -> Shape.SCALAR;
            case CHANNEL -> Shape.of(rows, 1);
            case BLOCK -> Shape.of(ceilDiv(rows, tiling.band), tiling.scaleCols);
        });
        TensorProducer scaleProducer = arena -> {
                    if (g == Fp8Recipe.Granularity.TENSOR) {
                        return (first, count, dest) -> {
                            float s = target.scale(tiling.whole.get(), sd);
                            for (long i = 0; i < count; i++) store(dest, i, s, sd);
                        };
                    }
                    Tile tile = tiling.tile(false); // the scales only
                    DenseReader[] reader = new DenseReader[1]; // opened only if some band's scales were not left
                    return (first, count, dest) -> {
                        // a scale row per band of rows (a band is one row per channel)
                        long b0 = first / tiling.scaleCols;
                        long b1 = (first + count) / tiling.scaleCols;
                        long bandsPerTile = tiling.tileRows / tiling.band;
                        for (long b = b0; b < b1; b += bandsPerTile) {
                            long r = b * tiling.band;
                            int h = (int) Math.min(Math.min(bandsPerTile, b1 - b) * tiling.band, rows - r);
                            int bands = (int) ceilDiv(h, tiling.band);
                            if (storeLeft(left, b, bands, b - b0, tiling.scaleCols, dest, sd)) continue;
                            if (reader[0] == null) reader[0] = DenseReader.open(t, arena);
                            for (int c0 = 0; c0 < cols; c0 += tiling.tileCols) {
                                int wd = Math.min(tiling.tileCols, cols - c0);
                                tiling.read(reader[0], r, h, c0, wd, tile.x);
                                tiling.scales(tile.x, h, wd, tile.scales);
                                int sc = (int) ceilDiv(wd, tiling.blockCols);
                                int j0 = (int) (c0 / tiling.blockCols);
                                for (int k = 0; k < bands; k++) {
                                    for (int j = 0; j < sc; j++) {
                                        store(dest, (b - b0 + k) * tiling.scaleCols + j0 + j, tile.scales[k * sc + j], sd);
                                    }
                                }
                            }
                        }
                    };
                };
        PlannedTensor scale = new PlannedTensor(prefix + "." + spec.scaleSuffix(), sd, scaleShape,
                g == Fp8Recipe.Granularity.TENSOR ? scaleShape.elementCount() : tiling.scaleCols,
                // made after the weight, the scales are the ones its encoder left: no second read of the weight
                left == null ? scaleProducer : new TensorProducer.After(scaleProducer, weightProducer));
        return List.of(weight, scale);
    }

    /**
     * Stores the scale rows of bands {@code [b, b + bands)} as the weight's producer left them,
     * at output row {@code at}; false, storing nothing, when one of them was not left.
     */
    private static boolean storeLeft(Handoff<float[]> left, long b, int bands, long at, int scaleCols, MemorySegment dest, DType sd) {
        float[][] rows = new float[bands][];
        for (int k = 0; k < bands; k++) {
            rows[k] = left.take(b + k);
            if (rows[k] == null) return false;
        }
        for (int k = 0; k < bands; k++) {
            for (int j = 0; j < scaleCols; j++) store(dest, (at + k) * scaleCols + j, rows[k][j], sd);
        }
        return true;
    }

    /** One producer's buffers for a tile; {@code decoded} is null when the loss is not measured. */
    private record Tile(float[] x, float[] decoded, byte[] codes, float[] scales) {
    }

    /**
     * How a weight is worked through: tiles of whole scale groups, small whatever the weight.
     * Per tensor and per channel a tile is a few whole rows (contiguous); for blocks it is one
     * band of block rows by a strip of block columns, read row segment by row segment, so a
     * 128 x 11008 band does not need 5 MB of buffers.
     */
    private static final class Tiling {
        final Fp8Target target;
        final DType scaleDtype;
        final Fp8Recipe.Granularity granularity;
        final Amax whole;
        final int cols;
        final int band;
        final long blockCols;
        final int scaleCols;
        final int tileRows;
        final int tileCols;

        Tiling(Fp8Recipe.Spec spec, long rows, int cols, Amax whole) {
            this.target = spec.target();
            this.scaleDtype = spec.scaleDtype();
            this.granularity = spec.granularity();
            this.whole = whole;
            this.cols = cols;
            boolean block = granularity == Fp8Recipe.Granularity.BLOCK;
            this.band = block ? (int) spec.blockRows() : 1;
            this.blockCols = block ? spec.blockCols() : cols;
            this.scaleCols = (int) ceilDiv(cols, blockCols);
            if (block) {
                long strips = Math.max(1, PIECE / ((long) band * blockCols));
                this.tileCols = (int) Math.min(cols, strips * blockCols);
                this.tileRows = band;
            } else {
                this.tileCols = cols;
                this.tileRows = (int) Math.min(rows, Math.max(1, PIECE / Math.max(1, cols)));
            }
        }

        /** A producer's buffers; without {@code decodes} no decoded values are made (nobody measures the loss). */
        Tile tile(boolean decodes) {
            int n = tileRows * tileCols;
            return new Tile(new float[n], decodes ? new float[n] : null, new byte[n],
                    new float[(int) (ceilDiv(tileRows, band) * ceilDiv(tileCols, blockCols))]);
        }

        /** Rows {@code [r, r + h)}, columns {@code [c0, c0 + w)} into {@code x}, row after row. */
        void read(DenseReader reader, long r, int h, int c0, int w, float[] x) {
            if (w == cols) {
                reader.read(r * cols, h * w, x, 0);
                return;
            }
            for (int i = 0; i < h; i++) reader.read((r + i) * cols + c0, w, x, i * w);
        }

        /** The stored scale of every group in a tile of {@code h x w}: {@code [band][block column]}. */
        void scales(float[] x, int h, int w, float[] out) {
            if (granularity == Fp8Recipe.Granularity.TENSOR) {
                out[0] = target.scale(whole.get(), scaleDtype);
                return;
            }
            int sc = (int) ceilDiv(w, blockCols);
            int bands = (int) ceilDiv(h, band);
            for (int b = 0; b < bands; b++) {
                int rEnd = Math.min(h, (b + 1) * band);
                for (int j = 0; j < sc; j++) {
                    int c0 = (int) (j * blockCols);
                    int c1 = (int) Math.min(w, c0 + blockCols);
                    float amax = 0;
                    for (int r = b * band; r < rEnd; r++) amax = Math.max(amax, Fp8Encoder.finiteAbsmax(x, r * w + c0, r * w + c1));
                    out[b * sc + j] = target.scale(amax, scaleDtype);
                }
            }
        }

        /** Codes and decoded values of a tile whose scales are computed. */
        void encode(Tile t, int h, int w) {
            if (granularity == Fp8Recipe.Granularity.TENSOR) {
                target.encode(t.x(), 0, h * w, t.scales()[0], t.codes(), 0, t.decoded());
                return;
            }
            int sc = (int) ceilDiv(w, blockCols);
            for (int r = 0; r < h; r++) {
                int b = r / band;
                for (int j = 0; j < sc; j++) {
                    int c0 = (int) (j * blockCols);
                    int c1 = (int) Math.min(w, c0 + blockCols);
                    target.encode(t.x(), r * w + c0, c1 - c0, t.scales()[b * sc + j], t.codes(), r * w + c0, t.decoded());
                }
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
