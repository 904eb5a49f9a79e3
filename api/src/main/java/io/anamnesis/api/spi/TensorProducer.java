package io.anamnesis.api.spi;

import java.lang.foreign.Arena;

/** Makes one output tensor's bytes. Opened once per tensor by the writer. */
@FunctionalInterface
public interface TensorProducer {
    /**
     * Opens the inputs this tensor needs (mapping or materializing them in {@code arena},
     * which the writer closes when the tensor is done) and returns the filler.
     */
    ChunkFiller open(Arena arena);
}
