package io.anamnesis.api.spi;

import java.lang.foreign.MemorySegment;

/**
 * Produces one output tensor's bytes a chunk at a time. A pure function of its inputs:
 * the same range always gets the same bytes, whichever thread asks and in whatever order,
 * which is what makes output byte-identical at any thread count.
 */
@FunctionalInterface
public interface ChunkFiller {
    /**
     * Writes the output bytes of elements {@code [firstElement, firstElement + count)} into
     * {@code dest}, which is exactly {@code dtype.byteSize(count)} bytes. Both
     * {@code firstElement} and {@code count} are multiples of the tensor's granule (the last
     * chunk may end at the tensor's end instead).
     */
    void fill(long firstElement, long count, MemorySegment dest);
}
