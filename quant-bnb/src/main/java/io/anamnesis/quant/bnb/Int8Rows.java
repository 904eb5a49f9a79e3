package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * The LLM.int8() kernel as a pure static function: I8 weights {@code [out, in]} and the
 * F32 row absmax {@code SCB [out]} in, BF16/F16/F32 out.
 *
 * <p>{@code int8_vectorwise_dequant} computes {@code A * stats.view(-1, 1) * 7.874015718698502e-3}
 * in float32: {@code (float(w) * SCB[r]) * K}, two multiplies in that order, with {@code K}
 * the double constant rounded to float32 (not a division by 127, not {@code SCB / 127} first).
 * A row has one scale, so the 256 possible results of a long row are computed once per row
 * and then looked up; short rows are computed element by element, with the same bits.
 */
public final class Int8Rows {
    private Int8Rows() {
    }

    /** 1/127 as the reference spells it, a double literal rounded to float32 like torch does. */
    public static final float INV_127 = (float) 7.874015718698502e-3;

    /** Rows shorter than this are computed directly; a 256-entry table would cost more than it saves. */
    static final long TABLE_MIN_ROW = 512;

    /** One element: {@code (float(w) * scb) * K}. */
    public static float value(byte w, float scb) {
        return ((float) w * scb) * INV_127;
    }

    /**
     * Writes elements {@code [first, first + count)} of the row-major {@code [rows, rowLength]}
     * tensor into {@code dest} as {@code target}.
     */
    public static void decode(MemorySegment weight, MemorySegment scb, long rowLength, long elements,
                              long first, long count, DType target, MemorySegment dest) {
        decodeWith(weight, scb, rowLength, elements, first, count, target, dest, OutputBits.vectorNow());
    }

    /** {@link #decode} on the scalar path only: the fallback, and the reference the vector path is tested against. */
    public static void decodeScalar(MemorySegment weight, MemorySegment scb, long rowLength, long elements,
                                    long first, long count, DType target, MemorySegment dest) {
        decodeWith(weight, scb, rowLength, elements, first, count, target, dest, false);
    }

    static void decodeWith(MemorySegment weight, MemorySegment scb, long rowLength, long elements,
                               long first, long count, DType target, MemorySegment dest, boolean vector) {
        int kind = OutputBits.kind(target);
        OutputBits.checkChunk(first, count, elements, kind, dest.byteSize());
        if (rowLength < 1 && elements > 0) throw new IllegalArgumentException("row length must be positive");
        if (weight.byteSize() < elements) throw new IllegalArgumentException("weight holds fewer bytes than elements");
        if (vector && kind == OutputBits.BF16) {
            VectorKernels.int8Bf16(weight, scb, rowLength, first, count, dest);
            return;
        }
        int width = OutputBits.bytes(kind);
        long[] table = new long[256];
        long end = first + count;
        long e = first;
        long o = 0;
        while (e < end) {
            long row = e / rowLength;
            long rowEnd = Math.min((row + 1) * rowLength, end);
            float s = scb.get(LittleEndian.F32, row * 4);
            if (rowEnd - e < TABLE_MIN_ROW) {
                for (; e < rowEnd; e++, o += width) {
                    long bits = OutputBits.encode(value(weight.get(ValueLayout.JAVA_BYTE, e), s), kind);
                    if (width == 4) dest.set(LittleEndian.I32, o, (int) bits);
                    else dest.set(LittleEndian.I16, o, (short) bits);
                }
                continue;
            }
            for (int v = -128; v < 128; v++) table[v & 0xFF] = OutputBits.encode(value((byte) v, s), kind);
            o = width == 4 ? run32(weight, table, e, rowEnd, dest, o) : run16(weight, table, e, rowEnd, dest, o);
            e = rowEnd;
        }
    }

    /** Four 16-bit outputs from four weight bytes (low 32 bits of {@code four}). */
    private static long quad16(long[] t, int four) {
        return t[four & 0xFF] | t[(four >>> 8) & 0xFF] << 16 | t[(four >>> 16) & 0xFF] << 32 | t[four >>> 24] << 48;
    }

    private static long run16(MemorySegment w, long[] t, long s, long e, MemorySegment dest, long o) {
        for (; e - s >= 8; s += 8, o += 16) {
            long in = w.get(LittleEndian.I64, s);
            dest.set(LittleEndian.I64, o, quad16(t, (int) in));
            dest.set(LittleEndian.I64, o + 8, quad16(t, (int) (in >>> 32)));
        }
        for (; s < e; s++, o += 2) {
            dest.set(LittleEndian.I16, o, (short) t[w.get(ValueLayout.JAVA_BYTE, s) & 0xFF]);
        }
        return o;
    }

    private static long run32(MemorySegment w, long[] t, long s, long e, MemorySegment dest, long o) {
        for (; e - s >= 8; s += 8, o += 32) {
            long in = w.get(LittleEndian.I64, s);
            dest.set(LittleEndian.I64, o, t[(int) in & 0xFF] | t[(int) (in >>> 8) & 0xFF] << 32);
            dest.set(LittleEndian.I64, o + 8, t[(int) (in >>> 16) & 0xFF] | t[(int) (in >>> 24) & 0xFF] << 32);
            dest.set(LittleEndian.I64, o + 16, t[(int) (in >>> 32) & 0xFF] | t[(int) (in >>> 40) & 0xFF] << 32);
            dest.set(LittleEndian.I64, o + 24, t[(int) (in >>> 48) & 0xFF] | t[(int) (in >>> 56) & 0xFF] << 32);
        }
        for (; s < e; s++, o += 4) {
            dest.set(LittleEndian.I32, o, (int) t[w.get(ValueLayout.JAVA_BYTE, s) & 0xFF]);
        }
        return o;
    }
}
