package io.anamnesis.api;

import java.util.Arrays;
import java.util.stream.Collectors;

/**
 * A row-major shape: the last dimension varies fastest. Immutable; a scalar has rank 0.
 */
public final class Shape {
    private final long[] dims;

    private Shape(long[] dims) {
        this.dims = dims;
    }

    /** @throws IllegalArgumentException on a negative dimension */
    public static Shape of(long... dims) {
        long[] copy = dims.clone();
        for (long d : copy) {
            if (d < 0) throw new IllegalArgumentException("negative dimension " + d + " in " + Arrays.toString(copy));
        }
        return new Shape(copy);
    }

    public static final Shape SCALAR = new Shape(new long[0]);

    public int rank() {
        return dims.length;
    }

    public long dim(int i) {
        return dims[i];
    }

    /** The last dimension (a row's length), or 1 for a scalar. */
    public long lastDim() {
        return dims.length == 0 ? 1 : dims[dims.length - 1];
    }

    public long[] toArray() {
        return dims.clone();
    }

    /**
     * Product of the dimensions.
     *
     * @throws ArithmeticException when it overflows a long
     */
    public long elementCount() {
        long n = 1;
        for (long d : dims) n = Math.multiplyExact(n, d);
        return n;
    }

    /** Same dimensions in the opposite order (GGUF's ne[] to row-major and back). */
    public Shape reversed() {
        long[] r = new long[dims.length];
        for (int i = 0; i < dims.length; i++) r[i] = dims[dims.length - 1 - i];
        return new Shape(r);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof Shape s && Arrays.equals(dims, s.dims);
    }

    @Override
    public int hashCode() {
        return Arrays.hashCode(dims);
    }

    /** {@code [4096, 11008]}, as numpy and safetensors print it. */
    @Override
    public String toString() {
        return Arrays.stream(dims).mapToObj(Long::toString).collect(Collectors.joining(", ", "[", "]"));
    }
}
