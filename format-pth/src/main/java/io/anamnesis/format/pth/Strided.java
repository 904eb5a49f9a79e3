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
     * element 0; runs along a unit-stride last dimension are copied whole.
     */
    static void gather(MemorySegment src, long offset, long[] sizes, long[] strides, int elementBytes, MemorySegment dest) {
        int rank = sizes.length;
        if (rank == 0) {
            MemorySegment.copy(src, offset * elementBytes, dest, 0, elementBytes);
            return;
        }
        for (long s : sizes) if (s == 0) return;
        long inner = sizes[rank - 1];
        long innerStride = strides[rank - 1];
        long[] index = new long[rank - 1];
        long base = offset;
        long out = 0;
        long runBytes = inner * elementBytes;
        while (true) {
            if (innerStride == 1) {
                MemorySegment.copy(src, base * elementBytes, dest, out, runBytes);
                out += runBytes;
            } else {
                out = strideRun(src, base, inner, innerStride, elementBytes, dest, out);
            }
            // Odometer over the outer dimensions, last fastest.
            int d = rank - 2;
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
     * One row of a view whose last dimension is not unit-stride, element by element: plain
     * loads and stores of the element's width (a copy call per element costs several times more).
     */
    private static long strideRun(MemorySegment src, long first, long count, long stride, int es, MemorySegment dest, long out) {
        long e = first * es;
        long step = stride * es;
        switch (es) {
            case 1 -> {
                for (long j = 0; j < count; j++, e += step, out += 1) dest.set(ValueLayout.JAVA_BYTE, out, src.get(ValueLayout.JAVA_BYTE, e));
            }
            case 2 -> {
                for (long j = 0; j < count; j++, e += step, out += 2) dest.set(ValueLayout.JAVA_SHORT_UNALIGNED, out, src.get(ValueLayout.JAVA_SHORT_UNALIGNED, e));
            }
            case 4 -> {
                for (long j = 0; j < count; j++, e += step, out += 4) dest.set(ValueLayout.JAVA_INT_UNALIGNED, out, src.get(ValueLayout.JAVA_INT_UNALIGNED, e));
            }
            case 8 -> {
                for (long j = 0; j < count; j++, e += step, out += 8) dest.set(ValueLayout.JAVA_LONG_UNALIGNED, out, src.get(ValueLayout.JAVA_LONG_UNALIGNED, e));
            }
            default -> {
                for (long j = 0; j < count; j++, e += step, out += es) MemorySegment.copy(src, e, dest, out, es);
            }
        }
        return out;
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
