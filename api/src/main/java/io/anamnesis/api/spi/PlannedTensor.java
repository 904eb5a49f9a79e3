package io.anamnesis.api.spi;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;

/**
 * One tensor of an {@link OutputPlan}: everything a writer needs to lay out the file before
 * any byte is produced.
 *
 * @param name     output name
 * @param dtype    output dtype
 * @param shape    row-major output shape
 * @param granule  elements that must stay in one chunk (1 for element-wise recovery, a block
 *                 for block formats, a row for row-wise kernels); a divisor of the element
 *                 count, or the element count itself
 * @param producer makes the bytes
 */
public record PlannedTensor(String name, DType dtype, Shape shape, long granule, TensorProducer producer) {
    public PlannedTensor {
        if (granule < 1) throw new IllegalArgumentException("granule of " + name + " must be positive");
        if (!dtype.fitsWholeBlocks(granule) && granule != shape.elementCount()) {
            throw new IllegalArgumentException("granule of " + name + " splits a " + dtype + " block");
        }
    }

    public long elementCount() {
        return shape.elementCount();
    }

    public long byteSize() {
        return dtype.byteSize(shape.elementCount());
    }
}
