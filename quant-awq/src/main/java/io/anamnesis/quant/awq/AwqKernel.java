package io.anamnesis.quant.awq;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.Kernels;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.RecoveryKernel;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * AutoAWQ GEMM arithmetic: {@code qweight [in, out/8]}, {@code qzeros [in/gs, out/8]} and
 * {@code scales [in/gs, out]} to the {@code nn.Linear} weight {@code [out, in]}.
 *
 * <p>Each int32 packs eight 4-bit values of one input row along the output columns,
 * interleaved: field {@code k} (bits {@code 4k..4k+3}) holds column {@code 8j + ORDER[k]}
 * with {@code ORDER = [0, 2, 4, 6, 1, 3, 5, 7]} (AutoAWQ's pack order; its reverse order
 * {@code [0, 4, 1, 5, 2, 6, 3, 7]} gives the field of each column). qzeros uses the same
 * interleave and is used as stored.
 *
 * <p>Reference order of operations (AutoAWQ {@code unpack_awq} + {@code reverse_awq_order},
 * then float32): {@code W[i][o] = (float32(q) - float32(z)) * float32(scale)}: an exact
 * subtraction and one rounding multiply.
 *
 * <p>{@link #dequantizeRows} runs {@link AwqVectorKernel} (BF16 or F32) when the Vector API
 * is present and compiled, else {@link AwqTableKernel} (lookups of per-group results) where
 * it applies, else the scalar kernel here.
 */
public final class AwqKernel {
    /** Column of field k of a packed word: AutoAWQ's pack order (a fact of the format). */
    static final int[] ORDER = {0, 2, 4, 6, 1, 3, 5, 7};
    /** Output rows per tile: 8 columns per word, 4 words. */
    static final int TILE_ROWS = 32;
    /** Input rows per tile. */
    static final int TILE_IN = 256;

    /**
     * Whether the Vector API kernel may run: {@link Kernels#vectorAllowed()} (the incubating
     * module is resolved and {@code anamnesis.kernels} is not {@code scalar}).
     */
    static final boolean VECTOR = Kernels.vectorAllowed();

    static final int TARGET_F32 = 0;
    static final int TARGET_BF16 = 1;
    static final int TARGET_F16 = 2;

    private AwqKernel() {
    }

    /**
     * The geometry of one AWQ group.
     *
     * @param in        in_features (rows of qweight)
     * @param out       out_features (8 x columns of qweight)
     * @param groupSize input rows per group
     * @param groups    rows of scales and qzeros
     * @param scaleType F16, BF16 or F32
     */
    public record Layout(int in, int out, int groupSize, int groups, DType scaleType) {
    }

    static int targetCode(DType target) {
        if (target.equals(DType.F32)) return TARGET_F32;
        if (target.equals(DType.BF16)) return TARGET_BF16;
        if (target.equals(DType.F16)) return TARGET_F16;
        throw new IllegalArgumentException("AWQ recovers to BF16, F16 or F32, not " + target);
    }

    /**
     * Dequantizes output rows {@code [firstRow, firstRow + rowCount)} of the {@code [out, in]}
     * weight into {@code dest}. {@code firstRow} is a multiple of 8 or the tile is partial.
     * A pure function of its arguments.
     */
    public static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                      Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        dequantizeRows(qweight, qzeros, scales, l, firstRow, rowCount, target, dest, VECTOR && RACE.getAsBoolean());
    }

    private static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                       Layout l, int firstRow, int rowCount, DType target, MemorySegment dest,
                                       boolean vector) {
        if (vector && AwqVectorKernel.supports(target)) {
            AwqVectorKernel.dequantizeRows(qweight, qzeros, scales, l, firstRow, rowCount, target, dest);
        } else if (vector && target.equals(DType.F16) && AwqVectorKernel.supports(DType.F32)) {
            AwqVectorKernel.dequantizeRowsToF16(qweight, qzeros, scales, l, firstRow, rowCount, dest);
        } else if (AwqTableKernel.applies(l)) {
            AwqTableKernel.dequantizeRows(qweight, qzeros, scales, l, firstRow, rowCount, target, dest);
        } else {
            dequantizeRowsScalar(qweight, qzeros, scales, l, firstRow, rowCount, target, dest);
        }
    }

    /** The kernel {@code amn} runs by default: {@link AwqTableKernel} where it applies, else the scalar one. */
    public static void dequantizeRowsNoVector(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                              Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        dequantizeRows(qweight, qzeros, scales, l, firstRow, rowCount, target, dest, false);
    }

    /**
     * The vector kernel takes over once C2 has made it faster than the scalar one (see
     * {@link KernelRace}); the race runs a synthetic 256 x 256 layer, group 128, to BF16.
     */
    private static final KernelRace RACE = new KernelRace("awq", () -> Probe.run(false), () -> Probe.run(true));

    private static final class Probe {
        static final int IN = 256;
        static final int OUT = 256;
        static final Layout LAYOUT = new Layout(IN, OUT, 128, IN / 128, DType.F16);
        static final MemorySegment QWEIGHT = fill(4L * IN * OUT / 8, 73);
        static final MemorySegment QZEROS = fill(4L * (IN / 128) * OUT / 8, 0);
        static final MemorySegment SCALES = Arena.global().allocate(2L * (IN / 128) * OUT);
        static final MemorySegment DEST = Arena.global().allocate(2L * IN * OUT);

        static {
            for (long i = 0; i < SCALES.byteSize() / 2; i++) SCALES.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) 0x2C00);
        }

        static MemorySegment fill(long bytes, int step) {
            MemorySegment s = Arena.global().allocate(bytes);
            for (long i = 0; i < bytes; i++) s.set(ValueLayout.JAVA_BYTE, i, (byte) (step == 0 ? 0x88 : i * step));
            return s;
        }

        static void run(boolean vector) {
            dequantizeRows(QWEIGHT, QZEROS, SCALES, LAYOUT, 0, OUT, DType.BF16, DEST, vector);
        }
    }

    /** The scalar kernel: every target, and the reference the vector kernel must equal bit for bit. */
    public static void dequantizeRowsScalar(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                            Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        int code = targetCode(target);
        int elementBytes = target.elementBytes();
        float[] scale = new float[l.groups() * TILE_ROWS];
        int[] zero = new int[l.groups() * TILE_ROWS];
        float[] tile = new float[TILE_ROWS * TILE_IN];
        short[] narrow = new short[TILE_IN];
        int end = firstRow + rowCount;
        // tiles start on word boundaries (multiples of 8 columns) so that one word fills 8 tile rows
        for (int w0 = firstRow & ~7; w0 < end; w0 += TILE_ROWS) {
            int tileEnd = Math.min(w0 + TILE_ROWS, l.out());
            int words = (tileEnd - w0 + 7) / 8;
            loadGroupParameters(qzeros, scales, l, w0, tileEnd - w0, TILE_ROWS, scale, zero);
            for (int i0 = 0; i0 < l.in(); i0 += TILE_IN) {
                int cols = Math.min(TILE_IN, l.in() - i0);
                unpack(qweight, l, w0, words, i0, cols, scale, zero, tile);
                for (int o = Math.max(w0, firstRow); o < Math.min(tileEnd, end); o++) {
                    long at = ((long) (o - firstRow) * l.in() + i0) * elementBytes;
                    store(tile, (o - w0) * TILE_IN, cols, code, dest, at, narrow);
                }
            }
        }
    }

    /** Widens scales and unpacks zeros of columns {@code [o0, o0+n)}, per group. */
    static void loadGroupParameters(MemorySegment qzeros, MemorySegment scales, Layout l, int o0, int n,
                                    int stride, float[] scale, int[] zero) {
        long zeroRowBytes = (long) l.out() / 8 * 4;
        for (int g = 0; g < l.groups(); g++) {
            long scaleRow = (long) g * l.out();
            for (int j = 0; j < (n + 7) / 8; j++) {
                int w = qzeros.get(LittleEndian.I32, g * zeroRowBytes + ((long) o0 / 8 + j) * 4);
                for (int k = 0; k < 8; k++) {
                    int t = 8 * j + ORDER[k];
                    if (t < n) zero[g * stride + t] = (w >>> (4 * k)) & 15;
                }
            }
            for (int t = 0; t < n; t++) {
                scale[g * stride + t] = readFloat(scales, l.scaleType(), scaleRow + o0 + t);
            }
        }
    }

    static float readFloat(MemorySegment s, DType type, long index) {
        if (type.equals(DType.F16)) return Floats.f16ToF32(s.get(LittleEndian.I16, index * 2));
        if (type.equals(DType.BF16)) return Floats.bf16ToF32(s.get(LittleEndian.I16, index * 2));
        return s.get(LittleEndian.F32, index * 4);
    }

    private static void unpack(MemorySegment qweight, Layout l, int w0, int words, int i0, int cols,
                               float[] scale, int[] zero, float[] tile) {
        long rowBytes = (long) l.out() / 8 * 4;
        long wordOffset = (long) w0 / 8 * 4;
        int gs = l.groupSize();
        for (int i = i0; i < i0 + cols; i++) {
            int gBase = (i / gs) * TILE_ROWS;
            long rowBase = i * rowBytes + wordOffset;
            int at = i - i0;
            for (int j = 0; j < words; j++) {
                int w = qweight.get(LittleEndian.I32, rowBase + j * 4L);
                for (int k = 0; k < 8; k++) {
                    int t = 8 * j + ORDER[k];
                    int q = (w >>> (4 * k)) & 15;
                    tile[t * TILE_IN + at] = (float) (q - zero[gBase + t]) * scale[gBase + t];
                }
            }
        }
    }

    static void store(float[] src, int from, int n, int code, MemorySegment dest, long at, short[] narrow) {
        switch (code) {
            case TARGET_F32 -> MemorySegment.copy(src, from, dest, LittleEndian.F32, at, n);
            case TARGET_BF16 -> {
                for (int j = 0; j < n; j++) narrow[j] = Floats.f32ToBf16(src[from + j]);
                MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, at, n);
            }
            default -> {
                for (int j = 0; j < n; j++) narrow[j] = Float.floatToFloat16(src[from + j]);
                MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, at, n);
            }
        }
    }

    /** The kernel of one claimed group. */
    record Kernel(TensorEntry qweight, TensorEntry qzeros, TensorEntry scales, Layout layout) implements RecoveryKernel {
        @Override
        public long granule() {
            return Math.max(1, layout.in());
        }

        @Override
        public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
            targetCode(target);
            MemorySegment qw = data(archive, qweight, arena);
            MemorySegment qz = data(archive, qzeros, arena);
            MemorySegment sc = data(archive, scales, arena);
            int in = layout.in();
            return (firstElement, count, dest) -> {
                if (count == 0) return;
                dequantizeRows(qw, qz, sc, layout, (int) (firstElement / in), (int) (count / in), target, dest);
            };
        }
    }

    static MemorySegment data(TensorArchive archive, TensorEntry e, Arena arena) {
        MemorySegment s = archive.data(e, arena);
        if (s.byteSize() != e.byteSize()) {
            throw MalformedFileException.inTensor(e.name(), "holds " + s.byteSize()
                    + " bytes, its dtype and shape need " + e.byteSize());
        }
        return s;
    }
}
