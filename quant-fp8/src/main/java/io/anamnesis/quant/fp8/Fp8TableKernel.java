package io.anamnesis.quant.fp8;

import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * FP8 by lookup: under one scale a code has 256 possible results, so each scale first gets
 * all 256 output values, computed by {@link Fp8Kernels#outputBits} (the scalar kernels' own
 * arithmetic, NaN rules included), and the codes are then only looked up, array to array
 * between bulk copies. Bit-exact by construction and fast from the first call (no vectorizing JIT needed,
 * which a short {@code amn} run never gets).
 *
 * <p>The tables of one row of scale blocks are made when the first element under them is
 * met and kept while the rows that share them run (a 128 x 128 block's table serves 16,384
 * codes); per-channel scales make one table per row.
 */
final class Fp8TableKernel {
    private Fp8TableKernel() {
    }

    /** {@code table[at + code]} = the output bits of {@code decode(code) * scale}. */
    static void fill(Fp8Format format, int target, float scale, int[] table, int at) {
        float[] decode = format.table();
        for (int c = 0; c < 256; c++) table[at + c] = Fp8Kernels.outputBits(target, decode[c], scale);
    }

    /**
     * {@link Fp8Kernels#dequantizeGrid}'s contract, by lookup. The codes of a row (or of a
     * piece of a single-scale tensor) are copied into an array in one bulk copy, looked up
     * into an array, and copied out in one more: array code is what the interpreter runs
     * fastest while the JIT has not compiled the kernel yet (an interpreted
     * {@code MemorySegment} access costs hundreds of nanoseconds, and a small file's remember
     * spent most of its time there), and C2 compiles it as tight as the segment loop it
     * replaces (docs/benchmarks.md).
     */
    static void grid(Fp8Format format, int target, MemorySegment codes, long cols, float[] scales,
                     long blockRows, long blockCols, long first, long count, MemorySegment dest) {
        boolean wide = target == Fp8Kernels.F32;
        int width = wide ? 4 : 2;
        if (scales.length == 1) {
            int[] table = new int[256];
            fill(format, target, scales[0], table, 0);
            run(wide, table, codes, first, dest, 0, count);
            return;
        }
        long scaleCols = (cols + blockCols - 1) / blockCols;
        int[] tables = new int[Math.toIntExact(256 * scaleCols)];
        long tablesFor = -1; // the first scale index the tables hold
        long end = first + count;
        Rows rows = new Rows((int) Math.min(count, cols), wide);
        long e = first;
        while (e < end) {
            long r = e / cols;
            long rowStart = r * cols;
            long rowEnd = Math.min(end, rowStart + cols);
            long scaleRow = (r / blockRows) * scaleCols;
            if (scaleRow != tablesFor) {
                for (int b = 0; b < scaleCols; b++) fill(format, target, scales[Math.toIntExact(scaleRow + b)], tables, 256 * b);
                tablesFor = scaleRow;
            }
            int n = (int) (rowEnd - e);
            rows.in(codes, e, n);
            long block = (e - rowStart) / blockCols;
            long blockEnd = rowStart + (block + 1) * blockCols;
            for (long at = e; at < rowEnd; block++, blockEnd += blockCols) {
                long runEnd = Math.min(rowEnd, blockEnd);
                rows.lookUp(tables, (int) (256 * block), (int) (at - e), (int) (runEnd - e));
                at = runEnd;
            }
            rows.out(dest, (e - first) * width, n);
            e = rowEnd;
        }
    }

    /** Codes per bulk copy for a single-scale tensor. */
    private static final int PIECE = 1 << 16;

    /** A row's codes and results as arrays, with the bulk copies in and out. */
    private static final class Rows {
        final byte[] codes;
        final short[] narrow;
        final int[] wide;

        Rows(int length, boolean wide) {
            this.codes = new byte[length];
            this.narrow = wide ? null : new short[length];
            this.wide = wide ? new int[length] : null;
        }

        void in(MemorySegment src, long offset, int n) {
            MemorySegment.copy(src, ValueLayout.JAVA_BYTE, offset, codes, 0, n);
        }

        /** Results of the codes {@code [from, to)} by {@code table[at..at+256)}. */
        void lookUp(int[] table, int at, int from, int to) {
            byte[] c = codes;
            if (wide != null) {
                int[] w = wide;
                for (int i = from; i < to; i++) w[i] = table[at + (c[i] & 0xFF)];
            } else {
                short[] h = narrow;
                for (int i = from; i < to; i++) h[i] = (short) table[at + (c[i] & 0xFF)];
            }
        }

        void out(MemorySegment dest, long offset, int n) {
            if (wide != null) MemorySegment.copy(wide, 0, dest, LittleEndian.I32, offset, n);
            else MemorySegment.copy(narrow, 0, dest, LittleEndian.I16, offset, n);
        }
    }

    /**
     * {@code count} codes from byte {@code codeOffset}, looked up in {@code table[0, 256)}, to
     * {@code dest} from byte {@code destOffset}: {@value #PIECE} codes per pair of bulk copies.
     */
    static void run(boolean wide, int[] table, MemorySegment codes, long codeOffset, MemorySegment dest,
                    long destOffset, long count) {
        int width = wide ? 4 : 2;
        int piece = (int) Math.min(count, PIECE);
        Rows rows = new Rows(piece, wide);
        for (long done = 0; done < count; done += piece) {
            int n = (int) Math.min(piece, count - done);
            rows.in(codes, codeOffset + done, n);
            rows.lookUp(table, 0, 0, n);
            rows.out(dest, destOffset + done * width, n);
        }
    }
}
