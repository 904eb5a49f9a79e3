package io.anamnesis.api.spi;

import io.anamnesis.api.TensorArchive;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * Everything a {@link FormatWriter} writes: every tensor's name, dtype and shape known up
 * front, each with a producer for its bytes, plus string metadata.
 *
 * @param source   the archive the plan was made from, when there is one (a writer of the
 *                 same format may take typed metadata from it, e.g. GGUF key/values)
 * @param metadata string metadata to store (safetensors {@code __metadata__})
 * @param tensors  output tensors in output order; names are unique
 */
public record OutputPlan(Optional<TensorArchive> source, Map<String, String> metadata, List<PlannedTensor> tensors) {
    public OutputPlan {
        metadata = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(metadata));
        tensors = List.copyOf(tensors);
        var seen = new java.util.HashSet<String>();
        for (PlannedTensor t : tensors) {
            if (!seen.add(t.name())) throw new IllegalArgumentException("two output tensors are named " + t.name());
        }
    }

    /** Sum of every tensor's byte size. */
    public long dataBytes() {
        long sum = 0;
        for (PlannedTensor t : tensors) sum = Math.addExact(sum, t.byteSize());
        return sum;
    }
}
