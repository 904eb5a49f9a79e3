package io.anamnesis.format.npz;

import io.anamnesis.api.Shape;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * Brings NPY array bytes to what anamnesis exposes, contiguous row-major little-endian:
 * Fortran order is transposed and big-endian elements are swapped. Pure functions over
 * segments; already-conforming data is returned as is (zero-copy).
 */
final class NpyLayout {
    private NpyLayout() {
    }

    /** Whether an array's stored bytes already are row-major little-endian (nothing to transpose or swap). */
    static boolean isRowMajorLittleEndian(NpyHeader h) {
        return !(h.fortranOrder() && h.shape().rank() > 1) && !h.dtype().swapped();
    }

    static MemorySegment toRowMajorLittleEndian(MemorySegment src, NpyHeader h, Arena arena) {
        boolean transpose = h.fortranOrder() && h.shape().rank() > 1;
        boolean swap = h.dtype().swapped();
        if (!transpose && !swap) return src;
        int item = h.dtype().dtype().elementBytes();
        MemorySegment out = arena.allocate(Math.max(1, src.byteSize()), 8).asSlice(0, src.byteSize());
        if (transpose) {
            fortranToC(src, out, h.shape(), item);
        } else {
            MemorySegment.copy(src, 0, out, 0, src.byteSize());
        }
        // A complex64 is two float32s: each half is swapped on its own.
        if (swap) swapInPlace(out, h.dtype().dtype().equals(io.anamnesis.api.DType.C64) ? 4 : item);
        return out;
    }

    /** Column-major to row-major: element (i0..in) sits at sum(ik * stride_k) with stride_0 = item. */
    static void fortranToC(MemorySegment src, MemorySegment dst, Shape shape, int item) {
        int rank = shape.rank();
        long[] dims = shape.toArray();
        long[] stride = new long[rank];
        long s = item;
        for (int k = 0; k < rank; k++) {
            stride[k] = s;
            s *= dims[k];
        }
        long n = shape.elementCount();
        if (n == 0) return;
        long[] idx = new long[rank];
        long srcOffset = 0;
        for (long out = 0; out < n; out++) {
            MemorySegment.copy(src, srcOffset, dst, out * item, item);
            // advance the row-major odometer, last dimension fastest
            for (int k = rank - 1; k >= 0; k--) {
                idx[k]++;
                srcOffset += stride[k];
                if (idx[k] < dims[k]) break;
                srcOffset -= stride[k] * dims[k];
                idx[k] = 0;
            }
        }
    }

    static void swapInPlace(MemorySegment seg, int item) {
        long n = seg.byteSize() / item;
        switch (item) {
            case 2 -> {
                for (long i = 0; i < n; i++) {
                    seg.setAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i, Short.reverseBytes(seg.getAtIndex(ValueLayout.JAVA_SHORT_UNALIGNED, i)));
                }
            }
            case 4 -> {
                for (long i = 0; i < n; i++) {
                    seg.setAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i, Integer.reverseBytes(seg.getAtIndex(ValueLayout.JAVA_INT_UNALIGNED, i)));
                }
            }
            case 8 -> {
                for (long i = 0; i < n; i++) {
                    seg.setAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i, Long.reverseBytes(seg.getAtIndex(ValueLayout.JAVA_LONG_UNALIGNED, i)));
                }
            }
            default -> throw new IllegalArgumentException("no byte swap for " + item + "-byte elements");
        }
    }
}
