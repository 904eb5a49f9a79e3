package io.anamnesis.api.spi;

import java.util.OptionalLong;

/**
 * Where one file sits among the splits of a model, as the file itself records it (GGUF's
 * {@code split.no}, {@code split.count} and {@code split.tensors.count}, which llama.cpp's
 * {@code gguf-split} writes). See {@link FormatReader#shardPosition}.
 *
 * @param index        0-based place of this file among the splits
 * @param count        how many splits the model has
 * @param totalTensors tensors of the whole model, when the file says
 */
public record ShardPosition(int index, int count, OptionalLong totalTensors) {
    public ShardPosition {
        if (count < 1 || index < 0 || index >= count) {
            throw new IllegalArgumentException("split " + index + " of " + count + " is not a place among the splits");
        }
    }
}
