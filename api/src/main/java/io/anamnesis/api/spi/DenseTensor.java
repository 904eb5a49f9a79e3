package io.anamnesis.api.spi;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;

import java.util.Optional;

/**
 * One tensor of a model as the forget path sees it: dense values, wherever they came from.
 *
 * @param name          the tensor's name (the recovered name for a recovered group)
 * @param shape         row-major shape; the last dimension is the row ({@code ne[0]} in GGUF terms)
 * @param storedDType   the dtype the input stores it in; for a recovered tensor, the dtype
 *                      of the stored payload it was recovered from (e.g. {@code F8_E4M3})
 * @param recoveredFrom the scheme description it was recovered from, when it was
 * @param asStored      what to write when the tensor is left alone: the stored tensor as it
 *                      is, or for a recovered one its dense F32 recovery
 * @param values        the values as F32 ({@link DenseReader} reads any range of them), when
 *                      the tensor holds numbers; empty for integer, bool and opaque tensors.
 *                      For a tensor not recovered, the exact widening of {@code asStored}
 * @param keep          the user asked to leave this tensor as it is ({@code --keep})
 */
public record DenseTensor(String name, Shape shape, DType storedDType, Optional<String> recoveredFrom,
                          PlannedTensor asStored, Optional<PlannedTensor> values, boolean keep) {
    public DenseTensor {
        if (values.isPresent() && !values.get().dtype().equals(DType.F32)) {
            throw new IllegalArgumentException("values of " + name + " must be planned as F32, not " + values.get().dtype());
        }
    }

    public long elementCount() {
        return shape.elementCount();
    }

    /** Elements per row: the last dimension (1 for a scalar). */
    public long rowLength() {
        return shape.rank() == 0 ? 1 : shape.lastDim();
    }

    /** Whether the values are floats that can be encoded. */
    public boolean isNumeric() {
        return values.isPresent();
    }
}
