package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Float4E2M1;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.FloatTarget;
import io.anamnesis.api.numeric.KernelRace;
import io.anamnesis.api.numeric.PackedInts;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;

/**
 * compressed-tensors arithmetic as pure static functions: whole rows of one layer's codes
 * ({@link LayerData}) in, little-endian F32, BF16 or F16 values out.
 *
 * <p>The reference ({@code compressed_tensors.quantization.lifecycle.forward._dequantize},
 * with the scale widened to float32, which is exact) computes
 * {@code (float32(q) - float32(zero)) * scale} with one float32 rounding, the product; BF16
 * and F16 are the round-to-nearest-even narrowing of it. For NVFP4 the scale is first
 * {@code float32(scale / global_scale)}, a rounding of its own, done once per scale.
 *
 * <p>A 4-bit code has 16 values, so for every (row, group) the kernel first works out the 16
 * narrowed products, {@code narrow((value(k) - zero) * scale)}, with exactly that
 * arithmetic, and then only looks codes up: bit-exact by construction, and fast from the
 * first call (table code needs no vectorizing JIT). When the scales themselves are 8-bit
 * codes (NVFP4's FP8 scales, MXFP4's E8M0), all 256 x 16 products are made once per tensor
 * (and, for 16-bit targets, the 256 x 256 byte pairs, two values per lookup). The lookups
 * also have a Vector API form ({@link CtVectorKernels}), which reads the same tables and
 * takes over once it is compiled ({@link #best}). 8-bit and other widths multiply per element.
 */
public final class CtKernels {
    private CtKernels() {
    }

    private static final ValueLayout.OfLong I64 = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32 = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private static final float[] E4M3 = Float8.E4M3FN.table();
    private static final float[] E5M2 = Float8.E5M2.table();
    private static final float[] FP4 = Float4E2M1.table();

    /** Output bytes per element of a recovery target. */
    static int width(DType target) {
        return target.equals(DType.F32) ? 4 : 2;
    }

    /**
     * The values of the 16 codes of a 4-bit layer before scaling: FP4 E2M1 or the offset
     * ints {@code k - 8}; null for other layers.
     */
    static float[] nibbleValues(LayerData d) {
        if (d.kind() == LayerData.CodeKind.FP4) return FP4;
        if (d.kind() == LayerData.CodeKind.OFFSET_PACKED && d.bits() == 4) {
            float[] v = new float[16];
            for (int k = 0; k < 16; k++) v[k] = k - 8;
            return v;
        }
        return null;
    }

    /** Which implementation runs the 4-bit lookups. */
    public enum Impl { SCALAR, VECTOR }

    private static final boolean VECTOR_AVAILABLE = detectVector();

    private static boolean detectVector() {
        if (ModuleLayer.boot().findModule("jdk.incubator.vector").isEmpty()) return false;
        try {
            return CtVectorKernels.supported(false);
        } catch (LinkageError e) {
            return false;
        }
    }

    /** True when the Vector API module is resolved and the hardware has 256-bit vectors or wider. */
    public static boolean vectorAvailable() {
        return VECTOR_AVAILABLE;
    }

    /**
     * The vector lookups once they have beaten the scalar ones ({@link KernelRace}: before C2
     * compiles them they are far slower), else the scalar lookups.
     */
    public static Impl best() {
        return VECTOR_AVAILABLE && RACE.getAsBoolean() ? Impl.VECTOR : Impl.SCALAR;
    }

    /** Races the two on a 64 x 2048 int4 layer, group 128, to BF16. */
    private static final KernelRace RACE = new KernelRace("compressed-tensors",
            () -> Probe.INSTANCE.run(Impl.SCALAR), () -> Probe.INSTANCE.run(Impl.VECTOR));

    private static final class Probe {
        static final Probe INSTANCE = new Probe();
        final LayerData data;
        final Prepared prepared;
        final MemorySegment dest;

        Probe() {
            int rows = 64, cols = 2048;
            MemorySegment codes = java.lang.foreign.Arena.global().allocate((long) rows * cols / 2);
            for (long i = 0; i < codes.byteSize(); i++) codes.set(ValueLayout.JAVA_BYTE, i, (byte) (i * 73));
            float[] scales = new float[rows * cols / 128];
            for (int i = 0; i < scales.length; i++) scales[i] = 0.001f * (1 + i % 7);
            data = new LayerData(LayerData.CodeKind.OFFSET_PACKED, 4, codes, cols / 2, rows, cols,
                    io.anamnesis.api.numeric.ScaleGrid.groups(rows, cols, 128), scales, null, null, null, null);
            prepared = prepare(data, DType.BF16);
            dest = java.lang.foreign.Arena.global().allocate(2L * rows * cols);
        }

        void run(Impl impl) {
            rows(impl, prepared, 0, data.rows(), dest);
        }
    }

    /**
     * What decoding one layer to one target needs beyond the layer: the tables that do not
     * change from row to row. Made once per tensor ({@link #prepare}); read-only after.
     */
    public static final class Prepared {
        final LayerData data;
        final FloatTarget target;
        final boolean wide;
        /** The 16 values of a 4-bit code before scaling, or null: per-element arithmetic. */
        final float[] values;
        /** {@code [code * 16 + k]} when the scales are 8-bit codes (no zero point), else null. */
        final int[] codeTable;
        final short[] codeTable16;
        /** {@code [code * 256 + byte]}: a byte's two 16-bit values, for 16-bit targets with {@link #codeTable}. */
        final int[] pairs;
        /** The group of each 16 columns, when groups are multiples of 16 wide, else null. */
        final int[] halfGroup;
        /** {@code 16 x group} of each column under act-order, else null. */
        final int[] columnBase;

        private Prepared(LayerData data, FloatTarget target) {
            this.data = data;
            this.target = target;
            this.wide = target == FloatTarget.F32;
            this.values = nibbleValues(data);
            int[] table = null;
            // code-indexed only where the group of a column is its position (act-order reads
            // per-row tables by group)
            if (values != null && data.scaleCodes() != null && data.zeros() == null && data.columnGroup() == null) {
                table = new int[256 * 16];
                for (int code = 0; code < 256; code++) fill(values, data.scaleOfCode()[code], 0, false, target, table, code * 16);
            }
            this.codeTable = table;
            this.codeTable16 = table == null || wide ? null : shorts(table);
            int[] p = null;
            if (table != null && !wide) {
                p = new int[256 * 256];
                for (int code = 0; code < 256; code++) {
                    for (int hi = 0; hi < 16; hi++) {
                        int h = table[code * 16 + hi] << 16;
                        for (int lo = 0; lo < 16; lo++) p[(code << 8) | (hi << 4) | lo] = table[code * 16 + lo] | h;
                    }
                }
            }
            this.pairs = p;
            long gs = data.grid().blockCols();
            int[] hg = null;
            if (values != null && data.columnGroup() == null && gs % 16 == 0) {
                hg = new int[(data.cols() + 15) / 16 + 1];
                for (int h = 0; h < hg.length; h++) hg[h] = (int) Math.min(data.grid().scaleCols() - 1, (16L * h) / gs);
            }
            this.halfGroup = hg;
            int[] cb = null;
            if (values != null && data.columnGroup() != null) {
                cb = new int[data.cols()];
                for (int c = 0; c < cb.length; c++) cb[c] = data.columnGroup()[c] * 16;
            }
            this.columnBase = cb;
        }
    }

    private static short[] shorts(int[] table) {
        short[] s = new short[table.length + 16];
        for (int i = 0; i < table.length; i++) s[i] = (short) table[i];
        return s;
    }

    /** The tables for decoding {@code d} to {@code target}. */
    public static Prepared prepare(LayerData d, DType target) {
        return new Prepared(d, FloatTarget.of(target));
    }

    /** {@code table[at + k] = narrow((values[k] - zero) * scale)}, the zero left out when there is none. */
    static void fill(float[] values, float scale, float zero, boolean hasZero, FloatTarget target, int[] table, int at) {
        for (int k = 0; k < 16; k++) {
            float v = hasZero ? values[k] - zero : values[k];
            table[at + k] = target.bits(v * scale);
        }
    }

    /**
     * Decodes rows {@code [firstRow, firstRow + rowCount)} into {@code dest} (row-major, from
     * its start), the 4-bit lookups by {@code impl} (the vector one where it applies).
     */
    public static void rows(Impl impl, Prepared p, long firstRow, long rowCount, MemorySegment dest) {
        if (impl == Impl.VECTOR && !VECTOR_AVAILABLE) throw new IllegalStateException("the Vector API is not available");
        if (p.values != null) {
            nibbleRows(impl == Impl.VECTOR, p, firstRow, rowCount, dest);
        } else {
            directRows(p.data, p.target, firstRow, rowCount, dest);
        }
    }

    // ------------------------------------------------------------------ 4-bit codes, by table

    private static void nibbleRows(boolean vector, Prepared p, long firstRow, long rowCount, MemorySegment dest) {
        LayerData d = p.data;
        int cols = d.cols();
        int scaleCols = (int) d.grid().scaleCols();
        long blockRows = d.grid().blockRows();
        int groupSize = (int) Math.min(Integer.MAX_VALUE, d.grid().blockCols());
        boolean wide = p.wide;
        boolean byCode = p.codeTable != null;
        boolean vectorRows = vector && p.halfGroup != null && CtVectorKernels.supported(wide);
        // whole-row tables: the vector lookups, act-order and odd group widths index them by group
        boolean rowTables = !byCode && (vectorRows || p.halfGroup == null);
        int[] table = byCode ? p.codeTable : rowTables ? new int[scaleCols * 16] : null;
        short[] table16 = !vectorRows || wide ? null : byCode ? p.codeTable16 : new short[table.length + 16];
        int[] base = new int[scaleCols];
        int[] local = new int[16];
        // BF16 tables for the vector lookups: a group's 16 entries in one vector each, not
        // value by value into an int table and copied (a third of the int4 kernel's time)
        boolean bulkBf16 = table16 != null && rowTables && p.target == FloatTarget.BF16 && CtVectorKernels.supported(true);
        if (rowTables) for (int g = 0; g < scaleCols; g++) base[g] = g * 16;
        long outRow = (long) cols * p.target.bytes();
        for (long r = firstRow; r < firstRow + rowCount; r++) {
            int scaleRow = Math.toIntExact((r / blockRows) * scaleCols);
            if (byCode) {
                byte[] codes = d.scaleCodes();
                for (int g = 0; g < scaleCols; g++) base[g] = (codes[scaleRow + g] & 0xFF) << 4;
            } else if (bulkBf16) {
                CtVectorKernels.bf16Tables(p.values, d.scales(), d.zeros(), scaleRow, scaleCols, table16);
            } else if (rowTables) {
                float[] zeros = d.zeros();
                for (int g = 0; g < scaleCols; g++) {
                    fill(p.values, d.scales()[scaleRow + g], zeros == null ? 0 : zeros[scaleRow + g], zeros != null,
                            p.target, table, g * 16);
                }
                if (table16 != null) for (int i = 0; i < table.length; i++) table16[i] = (short) table[i];
            }
            long src = r * d.rowBytes();
            long out = (r - firstRow) * outRow;
            int done = 0;
            if (vectorRows) {
                done = wide ? CtVectorKernels.row32(d.payload(), src, cols, table, base, p.halfGroup, dest, out)
                        : CtVectorKernels.row16(d.payload(), src, cols, table16, base, p.halfGroup, dest, out);
            }
            if (p.columnBase != null) {
                nibblesByColumn(d.payload(), src, cols, table, p.columnBase, wide, dest, out);
            } else if (p.halfGroup != null) {
                nibblesByGroup(p, scaleRow, done, groupSize, local, src, dest, out);
            } else {
                nibblesAnyGroup(d.payload(), src, cols, table, base, groupSize, wide, dest, out);
            }
        }
    }

    /**
     * Groups a multiple of 16 wide, from column {@code c} of a row: a group at a time, its 16
     * values copied into {@code t} (a 16-entry array the JIT indexes without bounds checks), 16
     * codes (8 bytes, one long) per step; with 8-bit scale codes and a 16-bit target, a byte's
     * two values per lookup in the code's pair table instead.
     */
    private static void nibblesByGroup(Prepared p, int scaleRow, int c, int groupSize, int[] t, long src,
                                       MemorySegment dest, long out) {
        LayerData d = p.data;
        MemorySegment codes = d.payload();
        int cols = d.cols();
        boolean wide = p.wide;
        int[] pairs = p.pairs;
        for (int g = c / groupSize; c < cols; g++) {
            int groupEnd = (int) Math.min(cols, (long) (g + 1) * groupSize);
            int stepsEnd = c + ((groupEnd - c) & ~15);
            int code = d.scaleCodes() != null ? d.scaleCodes()[scaleRow + g] & 0xFF : 0;
            if (pairs != null) {
                int b = code << 8;
                for (; c < stepsEnd; c += 16) {
                    long v = codes.get(I64, src + (c >> 1));
                    long o = out + 2L * c;
                    dest.set(I64, o, pairs2(pairs, b, v, 0));
                    dest.set(I64, o + 8, pairs2(pairs, b, v, 16));
                    dest.set(I64, o + 16, pairs2(pairs, b, v, 32));
                    dest.set(I64, o + 24, pairs2(pairs, b, v, 48));
                }
                for (; c < groupEnd; c++) {
                    int pair = pairs[b | (codes.get(ValueLayout.JAVA_BYTE, src + (c >> 1)) & 0xFF)];
                    dest.set(I16, out + 2L * c, (short) ((c & 1) == 0 ? pair : pair >>> 16));
                }
                continue;
            }
            if (p.codeTable != null) {
                System.arraycopy(p.codeTable, code * 16, t, 0, 16);
            } else {
                float[] zeros = d.zeros();
                fill(p.values, d.scales()[scaleRow + g], zeros == null ? 0 : zeros[scaleRow + g], zeros != null, p.target, t, 0);
            }
            if (wide) {
                for (; c < stepsEnd; c += 16) {
                    long v = codes.get(I64, src + (c >> 1));
                    long o = out + 4L * c;
                    for (int k = 0; k < 8; k++) {
                        int x = (int) (v >>> (8 * k));
                        dest.set(I64, o + 8L * k, (t[x & 15] & 0xFFFF_FFFFL) | ((long) t[(x >>> 4) & 15] << 32));
                    }
                }
            } else {
                for (; c < stepsEnd; c += 16) {
                    long v = codes.get(I64, src + (c >> 1));
                    int lo = (int) v;
                    int hi = (int) (v >>> 32);
                    long o = out + 2L * c;
                    dest.set(I64, o, quad16(t, lo));
                    dest.set(I64, o + 8, quad16(t, lo >>> 16));
                    dest.set(I64, o + 16, quad16(t, hi));
                    dest.set(I64, o + 24, quad16(t, hi >>> 16));
                }
            }
            for (; c < groupEnd; c++) put(t[nibble(codes, src, c)], wide, dest, out, c);
        }
    }

    /** Bytes {@code shift/8} and {@code shift/8 + 1} of {@code v}: four 16-bit values. */
    private static long pairs2(int[] pairs, int b, long v, int shift) {
        return (pairs[b | ((int) (v >>> shift) & 0xFF)] & 0xFFFF_FFFFL)
                | ((long) pairs[b | ((int) (v >>> (shift + 8)) & 0xFF)] << 32);
    }

    /** The four codes in the low 16 bits of {@code x} as four 16-bit values of the 16-entry {@code t}. */
    private static long quad16(int[] t, int x) {
        return (long) t[x & 15]
                | ((long) t[(x >>> 4) & 15] << 16)
                | ((long) t[(x >>> 8) & 15] << 32)
                | ((long) t[(x >>> 12) & 15] << 48);
    }

    /** Act-order: each column has its own group. */
    private static void nibblesByColumn(MemorySegment codes, long src, int cols, int[] table, int[] columnBase,
                                        boolean wide, MemorySegment dest, long out) {
        int c = 0;
        int end = cols & ~7;
        for (; c < end; c += 8) {
            int x = codes.get(I32, src + (c >> 1));
            if (wide) {
                for (int k = 0; k < 8; k++) {
                    dest.set(I32, out + 4L * (c + k), table[columnBase[c + k] + ((x >>> (4 * k)) & 15)]);
                }
            } else {
                long lo = 0;
                long hi = 0;
                for (int k = 0; k < 4; k++) {
                    lo |= (long) table[columnBase[c + k] + ((x >>> (4 * k)) & 15)] << (16 * k);
                    hi |= (long) table[columnBase[c + 4 + k] + ((x >>> (16 + 4 * k)) & 15)] << (16 * k);
                }
                dest.set(I64, out + 2L * c, lo);
                dest.set(I64, out + 2L * c + 8, hi);
            }
        }
        for (; c < cols; c++) put(table[columnBase[c] + nibble(codes, src, c)], wide, dest, out, c);
    }

    /** Any group width: one code at a time. */
    private static void nibblesAnyGroup(MemorySegment codes, long src, int cols, int[] table, int[] base, int groupSize,
                                        boolean wide, MemorySegment dest, long out) {
        for (int c = 0; c < cols; c++) put(table[base[c / groupSize] + nibble(codes, src, c)], wide, dest, out, c);
    }

    /** Code {@code c} of a row of nibbles, low nibble first. */
    private static int nibble(MemorySegment codes, long src, int c) {
        int b = codes.get(ValueLayout.JAVA_BYTE, src + (c >> 1));
        return (b >>> ((c & 1) << 2)) & 15;
    }

    private static void put(int bits, boolean wide, MemorySegment dest, long out, int c) {
        if (wide) dest.set(I32, out + 4L * c, bits);
        else dest.set(I16, out + 2L * c, (short) bits);
    }

    // ------------------------------------------------------------------ other codes, per element

    private static void directRows(LayerData d, FloatTarget target, long firstRow, long rowCount, MemorySegment dest) {
        int cols = d.cols();
        long scaleCols = d.grid().scaleCols();
        long blockRows = d.grid().blockRows();
        long blockCols = d.grid().blockCols();
        boolean wide = target == FloatTarget.F32;
        long outRow = (long) cols * target.bytes();
        float[] scales = d.scales();
        float[] zeros = d.zeros();
        int[] columnGroup = d.columnGroup();
        MemorySegment codes = d.payload();
        int bits = d.bits();
        int offset = 1 << (bits - 1);
        float[] floats = d.kind() == LayerData.CodeKind.E4M3 ? E4M3 : d.kind() == LayerData.CodeKind.E5M2 ? E5M2 : null;
        for (long r = firstRow; r < firstRow + rowCount; r++) {
            int scaleRow = Math.toIntExact((r / blockRows) * scaleCols);
            long src = r * d.rowBytes();
            long out = (r - firstRow) * outRow;
            // one run per stretch of columns under one scale (the whole row under act-order: per column)
            int c = 0;
            while (c < cols) {
                int runEnd = columnGroup != null ? c + 1 : (int) Math.min(cols, (c / blockCols + 1) * blockCols);
                int cell = scaleRow + (columnGroup != null ? columnGroup[c] : (int) (c / blockCols));
                float s = scales[cell];
                boolean hasZero = zeros != null;
                float z = hasZero ? zeros[cell] : 0f;
                for (; c < runEnd; c++) {
                    float v;
                    switch (d.kind()) {
                        case INT8 -> v = codes.get(ValueLayout.JAVA_BYTE, src + c);
                        case E4M3, E5M2 -> v = floats[codes.get(ValueLayout.JAVA_BYTE, src + c) & 0xFF];
                        case FP4 -> v = FP4[nibble(codes, src, c)];
                        default -> v = bits == 8
                                ? (byte) (codes.get(ValueLayout.JAVA_BYTE, src + c) ^ 0x80)
                                : PackedInts.get(codes, src, c, bits) - offset;
                    }
                    if (hasZero) v = v - z;
                    put(target.bits(v * s), wide, dest, out, c);
                }
            }
        }
    }
}
