package io.anamnesis.format.pth;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Kernels over a torch view (sizes, strides and offset in elements over a storage): the
 * highest element it reaches, whether it is already row-major contiguous, the gather that
 * makes it so, and the byte swap for big-endian storages. Pure static functions.
 */
final class Strided {
    private Strided() {
    }

    /**
     * The highest storage element the view reads, or -1 when it reads none (a zero size).
     *
     * @throws ArithmeticException when the extent overflows a long
     */
    static long lastElement(long offset, long[] sizes, long[] strides) {
        long last = offset;
        for (int i = 0; i < sizes.length; i++) {
            if (sizes[i] == 0) return -1;
            last = Math.addExact(last, Math.multiplyExact(sizes[i] - 1, strides[i]));
        }
        return last;
    }

    /** True when row-major order of the view is storage order (size-1 dims' strides do not matter). */
    static boolean isContiguous(long[] sizes, long[] strides) {
        long expected = 1;
        for (int i = sizes.length - 1; i >= 0; i--) {
            if (sizes[i] == 1) continue;
            if (strides[i] != expected) return false;
            expected *= sizes[i];
        }
        return true;
    }

    /**
     * Copies the view into {@code dest} in row-major order. {@code src} starts at storage
     * element 0. Runs along a unit-stride last dimension are copied whole; otherwise the last
     * two dimensions are copied in square tiles, so that a transposed matrix is read and
     * written a cache line at a time instead of one line per element.
     */
    static void gather(MemorySegment src, long offset, long[] sizes, long[] strides, int elementBytes, MemorySegment dest) {
        int rank = sizes.length;
        if (rank == 0) {
            MemorySegment.copy(src, offset * elementBytes, dest, 0, elementBytes);
            return;
        }
        for (long s : sizes) if (s == 0) return;
        boolean tiled = rank >= 2 && strides[rank - 1] != 1 && sizes[rank - 2] > 1;
        int kept = tiled ? 2 : 1;
        int outerRank = rank - kept;
        long[] index = new long[outerRank];
        long base = offset;
        long out = 0;
        long rows = tiled ? sizes[rank - 2] : 1;
        long cols = sizes[rank - 1];
        long blockBytes = rows * cols * elementBytes;
        while (true) {
            if (tiled) {
                tile(src, base, rows, cols, strides[rank - 2], strides[rank - 1], elementBytes, dest, out);
            } else if (strides[rank - 1] == 1) {
                MemorySegment.copy(src, base * elementBytes, dest, out, blockBytes);
            } else {
                strideRun(src, base, cols, strides[rank - 1], elementBytes, dest, out);
            }
            out += blockBytes;
            // Odometer over the outer dimensions, last fastest.
            int d = outerRank - 1;
            while (d >= 0) {
                base += strides[d];
                if (++index[d] < sizes[d]) break;
                base -= strides[d] * sizes[d];
                index[d] = 0;
                d--;
            }
            if (d < 0) return;
        }
    }

    /**
     * Tile edge in elements. Small on purpose: with power-of-two strides (a transposed
     * 4096-wide matrix) larger tiles put every line of a tile in the same cache set; measured
     * on a 4096 x 1024 F32 transpose, 64 gave ~0.2 GiB/s and 8 ~2 GiB/s.
     */
    private static final int TILE = 8;

    /** A rows x cols block at {@code base} with strides (rs, cs), written row-major at {@code out}. */
    private static void tile(MemorySegment src, long base, long rows, long cols, long rs, long cs, int es,
                             MemorySegment dest, long out) {
        for (long i0 = 0; i0 < rows; i0 += TILE) {
            long n = Math.min(TILE, rows - i0);
            for (long j0 = 0; j0 < cols; j0 += TILE) {
                long j1 = Math.min(cols, j0 + TILE);
                for (long j = j0; j < j1; j++) {
                    // Down one column of the tile: the source walks rs, the destination a row.
                    long s = base + i0 * rs + j * cs;
                    long d = out + (i0 * cols + j) * es;
                    strideColumn(src, s, n, rs, es, dest, d, cols * es);
                }
            }
        }
    }

    private static void strideColumn(MemorySegment src, long first, long count, long stride, int es,
                                     MemorySegment dest, long out, long outStep) {
        long e = first * es;
        long step = stride * es;
        switch (es) {
            case 1 -> {
                for (long j = 0; j < count; j++, e += step, out += outStep) dest.set(ValueLayout.JAVA_BYTE, out, src.get(ValueLayout.JAVA_BYTE, e));
            }
            case 2 -> {
                for (long j = 0; j < count; j++, e += step, out += outStep) dest.set(ValueLayout.JAVA_SHORT_UNALIGNED, out, src.get(ValueLayout.JAVA_SHORT_UNALIGNED, e));
            }
            case 4 -> {
                for (long j = 0; j < count; j++, e += step, out += outStep) dest.set(ValueLayout.JAVA_INT_UNALIGNED, out, src.get(ValueLayout.JAVA_INT_UNALIGNED, e));
            }
            case 8 -> {
                for (long j = 0; j < count; j++, e += step, out += outStep) dest.set(ValueLayout.JAVA_LONG_UNALIGNED, out, src.get(ValueLayout.JAVA_LONG_UNALIGNED, e));
            }
            default -> {
                for (long j = 0; j < count; j++, e += step, out += outStep) MemorySegment.copy(src, e, dest, out, es);
            }
        }
    }

    /** One row whose last dimension is not unit-stride (a view whose second-to-last size is 1). */
    private static void strideRun(MemorySegment src, long first, long count, long stride, int es, MemorySegment dest, long out) {
        strideColumn(src, first, count, stride, es, dest, out, es);
    }

    /** Reverses the bytes of every {@code unit}-byte value in place (big-endian to little-endian). */
    static void swapBytes(MemorySegment seg, int unit) {
        long n = seg.byteSize();
        switch (unit) {
            case 1 -> {
            }
            case 2 -> {
                for (long i = 0; i < n; i += 2) seg.set(ValueLayout.JAVA_SHORT_UNALIGNED, i, Short.reverseBytes(seg.get(ValueLayout.JAVA_SHORT_UNALIGNED, i)));
            }
            case 4 -> {
                for (long i = 0; i < n; i += 4) seg.set(ValueLayout.JAVA_INT_UNALIGNED, i, Integer.reverseBytes(seg.get(ValueLayout.JAVA_INT_UNALIGNED, i)));
            }
            case 8 -> {
                for (long i = 0; i < n; i += 8) seg.set(ValueLayout.JAVA_LONG_UNALIGNED, i, Long.reverseBytes(seg.get(ValueLayout.JAVA_LONG_UNALIGNED, i)));
            }
            default -> throw new IllegalArgumentException("no byte swap for " + unit + "-byte values");
        }
    }
}
