package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.Float4E2M1;
import io.anamnesis.api.numeric.Float8;
import io.anamnesis.api.numeric.Floats;
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
 * codes (NVFP4's FP8 scales, MXFP4's E8M0), all 256 x 16 products are made once per tensor.
 * 8-bit and other widths multiply per element.
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

    /**
     * The products of every scale code with every 4-bit value, {@code table[code * 16 + k]},
     * when a 4-bit layer's scales are 8-bit codes and there is no zero point; else null.
     */
    public static int[] codeTable(LayerData d, DType target) {
        float[] values = nibbleValues(d);
        if (values == null || d.scaleCodes() == null || d.zeros() != null) return null;
        int[] table = new int[256 * 16];
        for (int code = 0; code < 256; code++) fill(values, d.scaleOfCode()[code], 0, false, target, table, code * 16);
        return table;
    }

    /** {@code table[at + k] = narrow((values[k] - zero) * scale)}, the zero left out when there is none. */
    static void fill(float[] values, float scale, float zero, boolean hasZero, DType target, int[] table, int at) {
        for (int k = 0; k < 16; k++) {
            float v = hasZero ? values[k] - zero : values[k];
            table[at + k] = Floats.narrow(v * scale, target);
        }
    }

    /**
     * Decodes rows {@code [firstRow, firstRow + rowCount)} into {@code dest} (row-major, from
     * its start). {@code codeTable} is {@link #codeTable}'s result for this layer and target, or null.
     */
    public static void rows(LayerData d, DType target, int[] codeTable, long firstRow, long rowCount, MemorySegment dest) {
        float[] values = nibbleValues(d);
        if (values != null) {
            nibbleRows(d, values, target, codeTable, firstRow, rowCount, dest);
        } else {
            directRows(d, target, firstRow, rowCount, dest);
        }
    }

    // ------------------------------------------------------------------ 4-bit codes, by table

    private static void nibbleRows(LayerData d, float[] values, DType target, int[] codeTable, long firstRow,
                                   long rowCount, MemorySegment dest) {
        int cols = d.cols();
        int scaleCols = (int) d.grid().scaleCols();
        long blockRows = d.grid().blockRows();
        int groupSize = (int) Math.min(Integer.MAX_VALUE, d.grid().blockCols());
        int[] table = codeTable != null ? codeTable : new int[scaleCols * 16];
        int[] base = new int[scaleCols];
        int[] columnBase = null;
        if (d.columnGroup() != null) {
            columnBase = new int[cols];
            for (int c = 0; c < cols; c++) columnBase[c] = d.columnGroup()[c] * 16;
        }
        boolean wide = target.equals(DType.F32);
        long outRow = (long) cols * width(target);
        for (long r = firstRow; r < firstRow + rowCount; r++) {
            int scaleRow = Math.toIntExact((r / blockRows) * scaleCols);
            if (codeTable != null) {
                byte[] codes = d.scaleCodes();
                for (int g = 0; g < scaleCols; g++) base[g] = (codes[scaleRow + g] & 0xFF) << 4;
            } else {
                float[] zeros = d.zeros();
                for (int g = 0; g < scaleCols; g++) {
                    fill(values, d.scales()[scaleRow + g], zeros == null ? 0 : zeros[scaleRow + g], zeros != null,
                            target, table, g * 16);
                    base[g] = g * 16;
                }
            }
            long src = r * d.rowBytes();
            long out = (r - firstRow) * outRow;
            if (columnBase != null) {
                nibblesByColumn(d.payload(), src, cols, table, columnBase, wide, dest, out);
            } else if (groupSize % 16 == 0) {
                nibblesByGroup(d.payload(), src, cols, table, base, groupSize, wide, dest, out);
            } else {
                nibblesAnyGroup(d.payload(), src, cols, table, base, groupSize, wide, dest, out);
            }
        }
    }

    /** Column groups of a multiple of 16: one table base per 16 codes (8 bytes) read as one long. */
    private static void nibblesByGroup(MemorySegment codes, long src, int cols, int[] table, int[] base, int groupSize,
                                       boolean wide, MemorySegment dest, long out) {
        int c = 0;
        int end = cols & ~15;
        while (c < end) {
            int b = base[c / groupSize];
            int groupEnd = Math.min(end, (c / groupSize + 1) * groupSize);
            if (wide) {
                for (; c < groupEnd; c += 16) {
                    long v = codes.get(I64, src + (c >> 1));
                    long o = out + 4L * c;
                    int lo = (int) v;
                    int hi = (int) (v >>> 32);
                    dest.set(I64, o, pair32(table, b, lo, 0));
                    dest.set(I64, o + 8, pair32(table, b, lo, 8));
                    dest.set(I64, o + 16, pair32(table, b, lo, 16));
                    dest.set(I64, o + 24, pair32(table, b, lo, 24));
                    dest.set(I64, o + 32, pair32(table, b, hi, 0));
                    dest.set(I64, o + 40, pair32(table, b, hi, 8));
                    dest.set(I64, o + 48, pair32(table, b, hi, 16));
                    dest.set(I64, o + 56, pair32(table, b, hi, 24));
                }
            } else {
                for (; c < groupEnd; c += 16) {
                    long v = codes.get(I64, src + (c >> 1));
                    long o = out + 2L * c;
                    int lo = (int) v;
                    int hi = (int) (v >>> 32);
                    dest.set(I64, o, quad16(table, b, lo, 0));
                    dest.set(I64, o + 8, quad16(table, b, lo, 16));
                    dest.set(I64, o + 16, quad16(table, b, hi, 0));
                    dest.set(I64, o + 24, quad16(table, b, hi, 16));
                }
            }
        }
        for (; c < cols; c++) put(table[base[c / groupSize] + nibble(codes, src, c)], wide, dest, out, c);
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

    /** Codes {@code shift/4} and {@code shift/4 + 1} of {@code x} as two F32s in one long. */
    private static long pair32(int[] t, int b, int x, int shift) {
        return (t[b + ((x >>> shift) & 15)] & 0xFFFF_FFFFL) | ((long) t[b + ((x >>> (shift + 4)) & 15)] << 32);
    }

    /** Codes {@code shift/4 .. shift/4 + 3} of {@code x} as four 16-bit values in one long. */
    private static long quad16(int[] t, int b, int x, int shift) {
        return (long) t[b + ((x >>> shift) & 15)]
                | ((long) t[b + ((x >>> (shift + 4)) & 15)] << 16)
                | ((long) t[b + ((x >>> (shift + 8)) & 15)] << 32)
                | ((long) t[b + ((x >>> (shift + 12)) & 15)] << 48);
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

    private static void directRows(LayerData d, DType target, long firstRow, long rowCount, MemorySegment dest) {
        int cols = d.cols();
        long scaleCols = d.grid().scaleCols();
        long blockRows = d.grid().blockRows();
        long blockCols = d.grid().blockCols();
        boolean wide = target.equals(DType.F32);
        long outRow = (long) cols * width(target);
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
                    put(Floats.narrow(v * s, target), wide, dest, out, c);
                }
            }
        }
    }
}
