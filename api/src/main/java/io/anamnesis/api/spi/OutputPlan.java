package io.anamnesis.api.spi;

import io.anamnesis.api.MetaValue;
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
 * @param typed    typed key/values that a writer of a typed format (GGUF) stores with their
 *                 types, set over what it takes from {@code source} (e.g. the
 *                 {@code general.file_type} of a file the forget path quantized)
 */
public record OutputPlan(Optional<TensorArchive> source, Map<String, String> metadata, List<PlannedTensor> tensors,
                         Map<String, MetaValue> typed) {
    public OutputPlan {
        metadata = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(metadata));
        typed = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(typed));
        tensors = List.copyOf(tensors);
        var seen = new java.util.HashSet<String>();
        for (PlannedTensor t : tensors) {
            if (!seen.add(t.name())) throw new IllegalArgumentException("two output tensors are named " + t.name());
        }
    }

    /** A plan with string metadata only. */
    public OutputPlan(Optional<TensorArchive> source, Map<String, String> metadata, List<PlannedTensor> tensors) {
        this(source, metadata, tensors, Map.of());
    }

    /** Sum of every tensor's byte size. */
    public long dataBytes() {
        long sum = 0;
        for (PlannedTensor t : tensors) sum = Math.addExact(sum, t.byteSize());
        return sum;
    }
}
