package io.anamnesis.api;

/**
 * One tensor as a file declares it. Reading an entry never touches tensor bytes; the
 * data comes from {@link TensorArchive#data(TensorEntry, java.lang.foreign.Arena)}.
 *
 * @param name     the name as stored (safetensors key, GGUF name, dotted pickle path)
 * @param dtype    element type
 * @param shape    row-major logical shape
 * @param byteSize bytes of the contiguous little-endian data, {@code dtype.byteSize(elements)}
 */
public record TensorEntry(String name, DType dtype, Shape shape, long byteSize) {
    public TensorEntry {
        if (name == null) throw new IllegalArgumentException("tensor name is null");
        if (dtype == null || shape == null) throw new IllegalArgumentException("tensor " + name + " lacks dtype or shape");
        if (byteSize < 0) throw new IllegalArgumentException("tensor " + name + " has a negative size");
    }

    /** An entry whose size follows from dtype and shape. */
    public static TensorEntry of(String name, DType dtype, Shape shape) {
        return new TensorEntry(name, dtype, shape, dtype.byteSize(shape.elementCount()));
    }

    public long elementCount() {
        return shape.elementCount();
    }

    // written out as a record would make them, without the invokedynamic link (see DType.equals)

    @Override
    public boolean equals(Object o) {
        return o instanceof TensorEntry e && byteSize == e.byteSize && name.equals(e.name) && dtype.equals(e.dtype)
                && shape.equals(e.shape);
    }

    @Override
    public int hashCode() {
        return ((name.hashCode() * 31 + dtype.hashCode()) * 31 + shape.hashCode()) * 31 + Long.hashCode(byteSize);
    }
}
