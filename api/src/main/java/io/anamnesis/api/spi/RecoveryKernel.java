package io.anamnesis.api.spi;

import io.anamnesis.api.DType;
import io.anamnesis.api.TensorArchive;

import java.lang.foreign.Arena;

/** The arithmetic of one {@link Recovery}: quantized inputs in, BF16/F16/F32 values out. */
public interface RecoveryKernel {
    /** Elements that must stay in one chunk: 1 for element-wise, a block, or a row. */
    long granule();

    /**
     * Maps the group's inputs from {@code archive} into {@code arena} and returns a filler
     * that writes {@code target} values (BF16, F16 or F32, little-endian). BF16 and F16 are
     * the round-to-nearest-even narrowing of the exact F32 result.
     */
    ChunkFiller open(TensorArchive archive, Arena arena, DType target);
}
