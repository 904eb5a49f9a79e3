package io.anamnesis.quant.gptq;

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
import java.util.Optional;

/**
 * GPTQ arithmetic: {@code qweight [in*bits/32, out]} (packed along in_features), {@code qzeros
 * [groups, out*bits/32]} (packed along out_features), {@code scales [groups, out]} and the
 * group of each input row, to the {@code nn.Linear} weight {@code [out, in]}.
 *
 * <p>Both packed tensors are a least-significant-bit-first bit stream over consecutive int32
 * words: value {@code n} of a stream sits at bit {@code bits*n}. For 2, 4 and 8 bits a value
 * never crosses a word; 3-bit values do (AutoGPTQ packs 32 of them into 3 words, value 10
 * and value 21 straddling), which the same rule covers.
 *
 * <p>Reference order of operations (GPTQModel {@code TorchLinear.dequantize_weight} with
 * float32 scales): {@code W[i][o] = float32(scale[g][o]) * float32(q[i][o] - zero[g][o])},
 * where {@code zero} is the stored zero plus 1 for v1 checkpoints and as stored for v2. The
 * integer difference and the scale widening are exact; one float32 multiply rounds.
 *
 * <p>The output is the transpose of the packed layout. {@link #dequantizeRows} runs
 * {@link GptqVectorKernel} (2, 4, 8 bits to BF16 or F32) when the Vector API is present and
 * compiled, else {@link GptqTableKernel} (2 and 4 bits without act-order: lookups of
 * per-group results) or this scalar kernel. The scalar kernel works in tiles of {@link #TILE_ROWS} output
 * rows, reading whole cache lines of each packed row and collecting {@link #TILE_IN} inputs
 * per output row in a small buffer, which is then narrowed and written as contiguous row
 * pieces.
 */
public final class GptqKernel {
    /** Output rows per tile: 32 int32 words = two cache lines of a packed row. */
    static final int TILE_ROWS = 32;
    /** Input columns per tile: a multiple of 32 so that 3-bit word triplets never split. */
    static final int TILE_IN = 256;

    /**
     * Whether the Vector API kernel may run: {@link Kernels#vectorAllowed()} (the incubating
     * module is resolved and {@code anamnesis.kernels} is not {@code scalar}).
     */
    static final boolean VECTOR = Kernels.vectorAllowed();

    static final int TARGET_F32 = 0;
    static final int TARGET_BF16 = 1;
    static final int TARGET_F16 = 2;

    private GptqKernel() {
    }

    /**
     * The geometry of one GPTQ group.
     *
     * @param bits       2, 3, 4 or 8
     * @param in         in_features
     * @param out        out_features
     * @param groups     rows of scales and qzeros
     * @param zeroWords  int32 words per qzeros row
     * @param zeroOffset 1 for v1 checkpoints (stored zero is the true zero minus 1), 0 for v2
     * @param scaleType  F16, BF16 or F32
     */
    public record Layout(int bits, int in, int out, int groups, int zeroWords, int zeroOffset, DType scaleType) {
        public Layout {
            if (bits != 2 && bits != 3 && bits != 4 && bits != 8) throw new IllegalArgumentException("bits " + bits);
        }

        /** int32 rows of qweight: ceil(in * bits / 32). */
        public long packedRows() {
            return ((long) in * bits + 31) / 32;
        }
    }

    /** Output code for {@link #dequantizeRows}: F32, BF16 or F16. */
    static int targetCode(DType target) {
        if (target.equals(DType.F32)) return TARGET_F32;
        if (target.equals(DType.BF16)) return TARGET_BF16;
        if (target.equals(DType.F16)) return TARGET_F16;
        throw new IllegalArgumentException("GPTQ recovers to BF16, F16 or F32, not " + target);
    }

    /**
     * Dequantizes output rows {@code [firstRow, firstRow + rowCount)} of the {@code [out, in]}
     * weight into {@code dest} (row-major, little-endian, {@code target} values). A pure
     * function of its arguments.
     *
     * @param groupOf the group of each input row (g_idx, or i / group_size), all in range
     */
    public static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                      int[] groupOf, Layout l, int firstRow, int rowCount, DType target,
                                      MemorySegment dest) {
        dequantizeRows(qweight, qzeros, scales, groupOf, l, firstRow, rowCount, target, dest, VECTOR && RACE.getAsBoolean());
    }

    private static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                       int[] groupOf, Layout l, int firstRow, int rowCount, DType target,
                                       MemorySegment dest, boolean vector) {
        if (vector && GptqVectorKernel.supports(l, target)) {
            GptqVectorKernel.dequantizeRows(qweight, qzeros, scales, groupOf, l, firstRow, rowCount, target, dest);
        } else if (vector && target.equals(DType.F16) && GptqVectorKernel.supports(l, DType.F32)) {
            GptqVectorKernel.dequantizeRowsToF16(qweight, qzeros, scales, groupOf, l, firstRow, rowCount, dest);
        } else {
            int[] wordGroups = wordGroups(l, groupOf);
            if (GptqEightBitKernel.applies(l, wordGroups)) {
                GptqEightBitKernel.dequantizeRows(qweight, qzeros, scales, wordGroups, l, firstRow, rowCount, target, dest);
            } else if (wordGroups != null) {
                GptqTableKernel.dequantizeRows(qweight, qzeros, scales, wordGroups, l, firstRow, rowCount, target, dest);
            } else {
                dequantizeRowsScalar(qweight, qzeros, scales, groupOf, l, firstRow, rowCount, target, dest);
            }
        }
    }

    /**
     * The group of each int32 word of a packed column, or null when a word's inputs span two
     * groups or the width packs no whole number of values in a word (3 bits): where it is not
     * null, the lookup kernel (2 and 4 bits) and the word kernel (8 bits) apply.
     */
    static int[] wordGroups(Layout l, int[] groupOf) {
        if (l.bits() != 2 && l.bits() != 4 && l.bits() != 8) return null;
        int perWord = 32 / l.bits();
        if (l.in() % perWord != 0) return null;
        int[] g = new int[l.in() / perWord];
        for (int r = 0; r < g.length; r++) {
            int first = groupOf[r * perWord];
            for (int k = 1; k < perWord; k++) {
                if (groupOf[r * perWord + k] != first) return null;
            }
            g[r] = first;
        }
        return g;
    }

    /**
     * The kernel {@code amn} runs by default: {@link GptqTableKernel} (2 and 4 bits) or
     * {@link GptqEightBitKernel} where they apply, else the scalar one.
     */
    public static void dequantizeRowsNoVector(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                              int[] groupOf, Layout l, int firstRow, int rowCount, DType target,
                                              MemorySegment dest) {
        dequantizeRows(qweight, qzeros, scales, groupOf, l, firstRow, rowCount, target, dest, false);
    }

    /**
     * The vector kernel takes over once C2 has made it faster than the scalar one (see
     * {@link KernelRace}); the race runs 4- and 8-bit rows of a 256 x 256 layer to BF16.
     */
    private static final KernelRace RACE = new KernelRace("gptq", () -> probe(false), () -> probe(true));

    private static void probe(boolean vector) {
        for (int bits : new int[]{4, 8}) {
            Probe p = bits == 4 ? Probe.FOUR : Probe.EIGHT;
            dequantizeRows(p.qweight, p.qzeros, p.scales, p.groupOf, p.layout, 0, Probe.OUT, DType.BF16, p.dest, vector);
        }
    }

    /** A synthetic 256 x 256 layer, group 128, v1 zeros, F16 scales. */
    private record Probe(Layout layout, MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                         int[] groupOf, MemorySegment dest) {
        static final int IN = 256;
        static final int OUT = 256;
        static final Probe FOUR = of(4);
        static final Probe EIGHT = of(8);

        static Probe of(int bits) {
            int groups = IN / 128;
            Layout l = new Layout(bits, IN, OUT, groups, OUT * bits / 32, 1, DType.F16);
            Arena a = Arena.global();
            MemorySegment qweight = a.allocate(4L * l.packedRows() * OUT);
            for (long i = 0; i < qweight.byteSize(); i++) qweight.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 73));
            MemorySegment qzeros = a.allocate(4L * groups * l.zeroWords());
            for (long i = 0; i < qzeros.byteSize(); i++) qzeros.set(ValueLayout.JAVA_BYTE, i, (byte) 0x77);
            MemorySegment scales = a.allocate(2L * groups * OUT);
            for (long i = 0; i < scales.byteSize() / 2; i++) scales.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, (short) 0x2C00);
            int[] groupOf = new int[IN];
            for (int i = 0; i < IN; i++) groupOf[i] = i / 128;
            return new Probe(l, qweight, qzeros, scales, groupOf, a.allocate(2L * IN * OUT));
        }
    }

    /** The scalar kernel: every bit width and target, and the reference the vector kernel must equal bit for bit. */
    public static void dequantizeRowsScalar(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales,
                                            int[] groupOf, Layout l, int firstRow, int rowCount, DType target,
                                            MemorySegment dest) {
        int code = targetCode(target);
        int elementBytes = target.elementBytes();
        int groups = l.groups();
        float[] scale = new float[groups * TILE_ROWS];
        int[] zero = new int[groups * TILE_ROWS];
        float[] tile = new float[TILE_ROWS * TILE_IN];
        short[] narrow = new short[TILE_IN];
        int end = firstRow + rowCount;
        for (int o0 = firstRow; o0 < end; o0 += TILE_ROWS) {
            int rows = Math.min(TILE_ROWS, end - o0);
            loadGroupParameters(qzeros, scales, l, o0, rows, TILE_ROWS, scale, zero);
            for (int i0 = 0; i0 < l.in(); i0 += TILE_IN) {
                int cols = Math.min(TILE_IN, l.in() - i0);
                switch (l.bits()) {
                    case 2 -> unpackWordAligned(qweight, l, 2, o0, rows, i0, cols, groupOf, scale, zero, tile);
                    case 4 -> unpackWordAligned(qweight, l, 4, o0, rows, i0, cols, groupOf, scale, zero, tile);
                    case 8 -> unpackWordAligned(qweight, l, 8, o0, rows, i0, cols, groupOf, scale, zero, tile);
                    default -> unpack3(qweight, l, o0, rows, i0, cols, groupOf, scale, zero, tile);
                }
                for (int t = 0; t < rows; t++) {
                    long at = ((long) (o0 - firstRow + t) * l.in() + i0) * elementBytes;
                    store(tile, t * TILE_IN, cols, code, dest, at, narrow);
                }
            }
        }
    }

    /** Widens the scales and unpacks the zeros (plus the v1 offset) of output rows {@code [o0, o0+rows)}, per group. */
    static void loadGroupParameters(MemorySegment qzeros, MemorySegment scales, Layout l, int o0, int rows,
                                    int stride, float[] scale, int[] zero) {
        int bits = l.bits();
        int mask = (1 << bits) - 1;
        long zeroRowBytes = (long) l.zeroWords() * 4;
        for (int g = 0; g < l.groups(); g++) {
            long scaleRow = (long) g * l.out();
            long zeroRow = g * zeroRowBytes;
            for (int t = 0; t < rows; t++) {
                int o = o0 + t;
                scale[g * stride + t] = readFloat(scales, l.scaleType(), scaleRow + o);
                zero[g * stride + t] = bitField(qzeros, zeroRow, (long) o * bits, bits, mask) + l.zeroOffset();
            }
        }
    }

    /** Value at bit {@code bit} of the stream of int32 words starting at byte {@code base}, crossing a word if it must. */
    static int bitField(MemorySegment words, long base, long bit, int bits, int mask) {
        long word = bit >>> 5;
        int shift = (int) (bit & 31);
        int lo = words.get(LittleEndian.I32, base + word * 4) >>> shift;
        if (shift + bits > 32) {
            lo |= words.get(LittleEndian.I32, base + word * 4 + 4) << (32 - shift);
        }
        return lo & mask;
    }

    static float readFloat(MemorySegment s, DType type, long index) {
        if (type.equals(DType.F16)) return Floats.f16ToF32(s.get(LittleEndian.I16, index * 2));
        if (type.equals(DType.BF16)) return Floats.bf16ToF32(s.get(LittleEndian.I16, index * 2));
        return s.get(LittleEndian.F32, index * 4);
    }

    /** 2, 4, 8 bits: each int32 word of column {@code o} holds {@code 32/bits} consecutive input rows. */
    private static void unpackWordAligned(MemorySegment qweight, Layout l, int bits, int o0, int rows, int i0, int cols,
                                          int[] groupOf, float[] scale, int[] zero, float[] tile) {
        int perWord = 32 / bits;
        int mask = (1 << bits) - 1;
        int out = l.out();
        int iEnd = i0 + cols;
        for (int r = i0 / perWord; r * perWord < iEnd; r++) {
            long rowBase = ((long) r * out + o0) * 4;
            int iFirst = r * perWord;
            int n = Math.min(perWord, iEnd - iFirst);
            for (int t = 0; t < rows; t++) {
                int w = qweight.get(LittleEndian.I32, rowBase + (long) t * 4);
                int at = t * TILE_IN + iFirst - i0;
                for (int k = 0; k < n; k++) {
                    int g = groupOf[iFirst + k] * TILE_ROWS + t;
                    int q = (w >>> (bits * k)) & mask;
                    tile[at + k] = scale[g] * (float) (q - zero[g]);
                }
            }
        }
    }

    /** 3 bits: 32 input rows per triplet of int32 words, read as one 96-bit little-endian stream. */
    private static void unpack3(MemorySegment qweight, Layout l, int o0, int rows, int i0, int cols,
                                int[] groupOf, float[] scale, int[] zero, float[] tile) {
        long out = l.out();
        int iEnd = i0 + cols;
        long packedRows = l.packedRows();
        for (int i32 = i0; i32 < iEnd; i32 += 32) {
            long r = (long) i32 / 32 * 3;
            int n = Math.min(32, iEnd - i32);
            for (int t = 0; t < rows; t++) {
                long col = (o0 + t) * 4L;
                long w0 = qweight.get(LittleEndian.I32, r * out * 4 + col) & 0xFFFF_FFFFL;
                long w1 = r + 1 < packedRows ? qweight.get(LittleEndian.I32, (r + 1) * out * 4 + col) & 0xFFFF_FFFFL : 0;
                long w2 = r + 2 < packedRows ? qweight.get(LittleEndian.I32, (r + 2) * out * 4 + col) & 0xFFFF_FFFFL : 0;
                long low = w0 | (w1 << 32);
                int at = t * TILE_IN + i32 - i0;
                for (int k = 0; k < n; k++) {
                    int bit = 3 * k;
                    int q;
                    if (bit + 3 <= 64) {
                        q = (int) (low >>> bit) & 7;
                    } else if (bit >= 64) {
                        q = (int) (w2 >>> (bit - 64)) & 7;
                    } else {
                        q = (int) ((low >>> bit) | (w2 << (64 - bit))) & 7;
                    }
                    int g = groupOf[i32 + k] * TILE_ROWS + t;
                    tile[at + k] = scale[g] * (float) (q - zero[g]);
                }
            }
        }
    }

    /** Narrows {@code n} floats (round-to-nearest-even) and writes them at {@code at}. */
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

    // ------------------------------------------------------------------ the RecoveryKernel

    /**
     * The kernel of one claimed group. {@code groupSize} is used only when there is no g_idx
     * ({@code -1}: one group over all inputs).
     */
    record Kernel(TensorEntry qweight, TensorEntry qzeros, TensorEntry scales, Optional<TensorEntry> gIdx,
                  Layout layout, int groupSize) implements RecoveryKernel {

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
            int[] groupOf = gIdx.isPresent()
                    ? groupsFromGIdx(gIdx.get(), data(archive, gIdx.get(), arena), layout)
                    : sequentialGroups(layout.in(), groupSize);
            int in = layout.in();
            return (firstElement, count, dest) -> {
                if (count == 0) return;
                int firstRow = (int) (firstElement / in);
                int rows = (int) (count / in);
                dequantizeRows(qw, qz, sc, groupOf, layout, firstRow, rows, target, dest);
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

    /** i / group_size, or group 0 for every row when group_size is -1. */
    static int[] sequentialGroups(int in, int groupSize) {
        int[] g = new int[in];
        if (groupSize > 0) {
            for (int i = 0; i < in; i++) g[i] = i / groupSize;
        }
        return g;
    }

    /** g_idx as read, each value checked against the number of groups. */
    static int[] groupsFromGIdx(TensorEntry entry, MemorySegment data, Layout l) {
        int in = l.in();
        boolean wide = entry.dtype().equals(DType.I64);
        int[] g = new int[in];
        for (int i = 0; i < in; i++) {
            long v = wide ? data.get(LittleEndian.I64, (long) i * 8) : data.get(LittleEndian.I32, (long) i * 4);
            if (v < 0 || v >= l.groups()) {
                throw MalformedFileException.inTensor(entry.name(), "g_idx[" + i + "] = " + v
                        + " is outside the " + l.groups() + " groups of the scales");
            }
            g[i] = (int) v;
        }
        return g;
    }
}
