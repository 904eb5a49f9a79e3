package io.anamnesis.quant.gptq;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Floats;
import io.anamnesis.api.numeric.LittleEndian;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.ShortVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorSpecies;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteOrder;

/**
 * The Vector API form of {@link GptqKernel#dequantizeRowsScalar} for 2, 4 and 8 bits to BF16
 * or F32, bit-identical to it (same integer difference, same single float32 multiply, same
 * round-to-nearest-even). Loaded only when {@code jdk.incubator.vector} is in the boot layer.
 *
 * <p>L consecutive inputs of one output column live in {@code W = L*bits/32} consecutive
 * packed rows, one word per row. A tile of L output columns loads those W rows as W
 * vectors straight from qweight (one cache line each on AVX-512), and a lane selection
 * ({@code selectFrom}, one or two-source) spreads column t's W words over the lanes; a
 * variable shift and a mask give the codes. No transposed copy is made, and each output
 * row is written front to back. Groups uniform over a vector broadcast their scale and
 * zero; act-order rows gather them. Column tiles narrower than L, and tiles with a
 * non-finite scale (the NaN rule of the BF16 narrowing), go to the scalar kernel.
 */
final class GptqVectorKernel {
    static final VectorSpecies<Integer> I = IntVector.SPECIES_PREFERRED;
    static final VectorSpecies<Float> F = FloatVector.SPECIES_PREFERRED;
    static final VectorSpecies<Short> S = VectorSpecies.of(short.class, VectorShape.forBitSize(I.vectorBitSize() / 2));
    static final int L = I.length();
    /** Act-order tables of up to 8 x 2L groups (256 on AVX-512); more groups are gathered. */
    static final int MAX_TABLE_PARTS = 8;

    private GptqVectorKernel() {
    }

    static boolean supports(GptqKernel.Layout l, DType target) {
        int rowsPerVector = L * l.bits() / 32;
        return l.bits() != 3 && L >= 8 && (L * l.bits()) % 32 == 0
                && (rowsPerVector == 1 || rowsPerVector == 2 || rowsPerVector == 4)
                && (target.equals(DType.BF16) || target.equals(DType.F32));
    }

    /**
     * Output rows {@code [firstRow, firstRow + rowCount)} to BF16 or F32, L rows (one tile of
     * L output columns of qweight) at a time: load the tile's scales and zeros, decode the
     * inputs that fill whole vectors, then the few left over; rows that make no whole tile,
     * and tiles with a non-finite scale, go to the scalar kernel.
     */
    static void dequantizeRows(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] groupOf,
                               GptqKernel.Layout l, int firstRow, int rowCount, DType target, MemorySegment dest) {
        Tile tile = new Tile(l, groupOf, target);
        long rowBytes = (long) l.in() * tile.elementBytes;
        int end = firstRow + rowCount;
        int c0 = firstRow;
        for (; c0 + L <= end; c0 += L) {
            GptqKernel.loadGroupParameters(qzeros, scales, l, c0, L, L, tile.scale, tile.zero);
            if (!allFinite(tile.scale, l.groups())) {
                scalar(qweight, qzeros, scales, groupOf, l, firstRow, c0, L, target, dest);
                continue;
            }
            if (tile.byTable) tile.fillGroupTables();
            long tileAt = (c0 - firstRow) * rowBytes;
            tile.decodeWholeVectors(qweight, c0, dest, tileAt);
            tile.decodeRemainder(qweight, c0, dest, tileAt);
        }
        if (c0 < end) scalar(qweight, qzeros, scales, groupOf, l, firstRow, c0, end - c0, target, dest);
    }

    /**
     * What one call works with, tile after tile of L output columns: the lane patterns that
     * spread packed words over lanes, each whole vector's group, and the current tile's
     * scales and zeros (per group, column-minor), also as lane tables for act-order.
     */
    private static final class Tile {
        final GptqKernel.Layout l;
        final int[] groupOf;
        final boolean bf16;
        final int elementBytes;
        /** Codes per int32 word, and the mask of one code. */
        final int perWord;
        final int mask;
        /** Bytes from one packed row of qweight to the next. */
        final long rowStride;
        /** int32 rows of qweight (one word each) that L consecutive inputs of a column fill: 1, 2 or 4. */
        final int rowsPerVector;
        /** Per lane: the first selection index (which word), its bit shift, and how two halves merge (4 rows). */
        final int[] pick = new int[L];
        final int[] shift = new int[L];
        final int[] merge = new int[L];
        /** Per whole vector of inputs, its group when all L inputs share one, else -1. */
        final int[] blockGroup;
        /** Per input, its group's index into {@link #scale} and {@link #zero} ({@code group * L}). */
        final int[] groupCol;
        final float[] scale;
        final int[] zero;
        /**
         * Act-order with up to {@link #MAX_TABLE_PARTS} x 2L groups: per column, all groups'
         * zeros and scale bits in pairs of vectors (2L groups each), so that lane selections
         * by group index replace gathers.
         */
        final boolean byTable;
        final int tableParts;
        final int tableWidth;
        final int[] zeroTable;
        final int[] scaleTable;

        Tile(GptqKernel.Layout l, int[] groupOf, DType target) {
            this.l = l;
            this.groupOf = groupOf;
            bf16 = target.equals(DType.BF16);
            elementBytes = bf16 ? 2 : 4;
            perWord = 32 / l.bits();
            mask = (1 << l.bits()) - 1;
            rowStride = l.out() * 4L;
            rowsPerVector = L * l.bits() / 32;
            for (int lane = 0; lane < L; lane++) {
                int word = lane * l.bits() / 32;
                // two-source selection indexes: 0..L-1 from the first vector, L..2L-1 from the second
                pick[lane] = rowsPerVector == 4 ? L * (word & 1) : L * word;
                shift[lane] = lane * l.bits() % 32;
                merge[lane] = lane < L / 2 ? lane : L + lane - L / 2;
            }
            int in = l.in();
            blockGroup = new int[in / L];
            groupCol = new int[in];
            for (int i = 0; i < in; i++) groupCol[i] = groupOf[i] * L;
            for (int b = 0; b < blockGroup.length; b++) {
                int g = groupOf[b * L];
                for (int k = 1; k < L && g >= 0; k++) if (groupOf[b * L + k] != g) g = -1;
                blockGroup[b] = g;
            }
            scale = new float[l.groups() * L];
            zero = new int[l.groups() * L];
            tableParts = (l.groups() + 2 * L - 1) / (2 * L);
            byTable = tableParts <= MAX_TABLE_PARTS;
            tableWidth = tableParts * 2 * L;
            zeroTable = new int[byTable ? tableWidth * L : 0];
            scaleTable = new int[byTable ? tableWidth * L : 0];
        }

        /** The tile's zeros and scale bits, column by column, in the lane tables act-order selects from. */
        void fillGroupTables() {
            for (int g = 0; g < l.groups(); g++) {
                for (int t = 0; t < L; t++) {
                    zeroTable[t * tableWidth + g] = zero[g * L + t];
                    scaleTable[t * tableWidth + g] = Float.floatToRawIntBits(scale[g * L + t]);
                }
            }
        }

        /**
         * Inputs {@code [0, in - in % L)} of output rows {@code [c0, c0 + L)}: per vector of L
         * inputs, the W packed rows are loaded once, then each output row's codes are selected,
         * shifted and masked, scaled (a uniform group broadcasts, act-order selects from the
         * tables or gathers) and narrowed. The hot loop: everything it reads is a local.
         */
        void decodeWholeVectors(MemorySegment qweight, int c0, MemorySegment dest, long tileAt) {
            int perWord = this.perWord;
            int mask = this.mask;
            long rowStride = this.rowStride;
            long colBase = c0 * 4L;
            long rowBytes = (long) l.in() * elementBytes;
            int full = blockGroup.length * L;
            int rowsPerVector = this.rowsPerVector;
            boolean bf16 = this.bf16;
            boolean byTable = this.byTable;
            int tableParts = this.tableParts;
            int tableWidth = this.tableWidth;
            int[] groupOf = this.groupOf;
            int[] blockGroup = this.blockGroup;
            int[] groupCol = this.groupCol;
            float[] scale = this.scale;
            int[] zero = this.zero;
            int[] zeroTable = this.zeroTable;
            int[] scaleTable = this.scaleTable;
            IntVector pickBase = IntVector.fromArray(I, pick, 0);
            IntVector shifts = IntVector.fromArray(I, shift, 0);
            IntVector merger = IntVector.fromArray(I, merge, 0);
            for (int i = 0; i < full; i += L) {
                long row = (long) (i / perWord) * rowStride + colBase;
                IntVector a0 = IntVector.fromMemorySegment(I, qweight, row, ByteOrder.LITTLE_ENDIAN);
                IntVector a1 = rowsPerVector >= 2 ? IntVector.fromMemorySegment(I, qweight, row + rowStride, ByteOrder.LITTLE_ENDIAN) : a0;
                IntVector a2 = rowsPerVector == 4 ? IntVector.fromMemorySegment(I, qweight, row + 2 * rowStride, ByteOrder.LITTLE_ENDIAN) : a0;
                IntVector a3 = rowsPerVector == 4 ? IntVector.fromMemorySegment(I, qweight, row + 3 * rowStride, ByteOrder.LITTLE_ENDIAN) : a0;
                int g = blockGroup[i / L];
                IntVector groupLanes = g < 0 && byTable ? IntVector.fromArray(I, groupOf, i) : IntVector.zero(I);
                IntVector partIndex = groupLanes.and(2 * L - 1);
                long off = tileAt + (long) i * elementBytes;
                for (int t = 0; t < L; t++, off += rowBytes) {
                    // column t's W words spread over the lanes, then each lane's code
                    IntVector select = pickBase.add(t);
                    IntVector words;
                    if (rowsPerVector == 1) {
                        words = a0.rearrange(select.toShuffle());
                    } else if (rowsPerVector == 2) {
                        words = select.selectFrom(a0, a1);
                    } else {
                        words = merger.selectFrom(select.selectFrom(a0, a1), select.selectFrom(a2, a3));
                    }
                    IntVector q = words.lanewise(VectorOperators.LSHR, shifts).and(mask);
                    // scale * (q - zero), one float32 multiply as the scalar kernel does
                    FloatVector f;
                    if (g >= 0) {
                        f = ((FloatVector) q.sub(zero[g * L + t]).convert(VectorOperators.I2F, 0)).mul(scale[g * L + t]);
                    } else if (byTable) {
                        int table = t * tableWidth;
                        IntVector z = partIndex.selectFrom(IntVector.fromArray(I, zeroTable, table),
                                IntVector.fromArray(I, zeroTable, table + L));
                        IntVector sb = partIndex.selectFrom(IntVector.fromArray(I, scaleTable, table),
                                IntVector.fromArray(I, scaleTable, table + L));
                        for (int part = 1; part < tableParts; part++) {
                            int at2 = table + part * 2 * L;
                            VectorMask<Integer> here = groupLanes.compare(VectorOperators.GE, part * 2 * L);
                            z = z.blend(partIndex.selectFrom(IntVector.fromArray(I, zeroTable, at2),
                                    IntVector.fromArray(I, zeroTable, at2 + L)), here);
                            sb = sb.blend(partIndex.selectFrom(IntVector.fromArray(I, scaleTable, at2),
                                    IntVector.fromArray(I, scaleTable, at2 + L)), here);
                        }
                        f = ((FloatVector) q.sub(z).convert(VectorOperators.I2F, 0)).mul(sb.reinterpretAsFloats());
                    } else {
                        IntVector z = IntVector.fromArray(I, zero, t, groupCol, i);
                        FloatVector s = FloatVector.fromArray(F, scale, t, groupCol, i);
                        f = ((FloatVector) q.sub(z).convert(VectorOperators.I2F, 0)).mul(s);
                    }
                    // BF16: round to nearest even on the bits, as Floats.f32ToBf16 (no NaN: the scales are finite)
                    if (bf16) {
                        IntVector b = f.reinterpretAsInts();
                        IntVector rounded = b.add(b.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7FFF)
                                .lanewise(VectorOperators.LSHR, 16);
                        ((ShortVector) rounded.convertShape(VectorOperators.I2S, S, 0))
                                .intoMemorySegment(dest, off, ByteOrder.LITTLE_ENDIAN);
                    } else {
                        f.intoMemorySegment(dest, off, ByteOrder.LITTLE_ENDIAN);
                    }
                }
            }
        }

        /** Inputs {@code [in - in % L, in)} of output rows {@code [c0, c0 + L)}, one value at a time. */
        void decodeRemainder(MemorySegment qweight, int c0, MemorySegment dest, long tileAt) {
            int in = l.in();
            for (int t = 0; t < L; t++) {
                long at = tileAt + (long) t * in * elementBytes;
                long column = c0 * 4L + t * 4L;
                for (int i = blockGroup.length * L; i < in; i++) {
                    int word = qweight.get(LittleEndian.I32, (long) (i / perWord) * rowStride + column);
                    int q = (word >>> (l.bits() * (i % perWord))) & mask;
                    int g = groupCol[i] + t;
                    float v = scale[g] * (float) (q - zero[g]);
                    long off = at + (long) i * elementBytes;
                    if (bf16) {
                        dest.set(LittleEndian.I16, off, Floats.f32ToBf16(v));
                    } else {
                        dest.set(LittleEndian.F32, off, v);
                    }
                }
            }
        }
    }

    /**
     * F16 output: the Vector API has no float-to-half conversion, so L rows at a time are
     * produced as F32 and narrowed by {@link Float#floatToFloat16} in an array loop (which
     * the JIT vectorizes), the same narrowing the scalar kernel applies to the same floats.
     */
    static void dequantizeRowsToF16(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] groupOf,
                                    GptqKernel.Layout l, int firstRow, int rowCount, MemorySegment dest) {
        int in = l.in();
        int step = Math.max(1, Math.min(rowCount, L));
        float[] wide = new float[step * in];
        short[] narrow = new short[step * in];
        try (Arena scratch = Arena.ofConfined()) {
            MemorySegment f32 = scratch.allocate(Math.max(4L, (long) step * in * 4), 64);
            int end = firstRow + rowCount;
            for (int o = firstRow; o < end; o += step) {
                int rows = Math.min(step, end - o);
                int n = rows * in;
                dequantizeRows(qweight, qzeros, scales, groupOf, l, o, rows, DType.F32, f32);
                MemorySegment.copy(f32, LittleEndian.F32, 0, wide, 0, n);
                for (int k = 0; k < n; k++) narrow[k] = Float.floatToFloat16(wide[k]);
                MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, (long) (o - firstRow) * in * 2, n);
            }
        }
    }

    /** Rows {@code [from, from + rows)} by the scalar kernel, into their place in {@code dest}. */
    private static void scalar(MemorySegment qweight, MemorySegment qzeros, MemorySegment scales, int[] groupOf,
                               GptqKernel.Layout l, int firstRow, int from, int rows, DType target, MemorySegment dest) {
        long rowBytes = target.byteSize(l.in());
        MemorySegment part = dest.asSlice((from - firstRow) * rowBytes, rows * rowBytes);
        GptqKernel.dequantizeRowsScalar(qweight, qzeros, scales, groupOf, l, from, rows, target, part);
    }

    private static boolean allFinite(float[] scale, int groups) {
        for (int k = 0; k < groups * L; k++) if (!Float.isFinite(scale[k])) return false;
        return true;
    }
}
