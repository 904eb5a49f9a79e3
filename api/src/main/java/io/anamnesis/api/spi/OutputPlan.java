package io.anamnesis.api.spi;

import io.anamnesis.api.MetaValue;
import io.anamnesis.api.TensorArchive;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Everything a {@link FormatWriter} writes: every tensor's name, dtype and shape known up
 * front, each with a producer for its bytes, plus the metadata, typed. Writers store
 * {@link #keyValues()}.
 *
 * @param source   the archive the plan was made from, when there is one
 * @param metadata metadata as strings, the keys to store in their order (a writer of a format
 *                 that holds only strings, and nothing more, may store these)
 * @param tensors  output tensors in output order; names are unique
 * @param typed    typed values of metadata keys, and typed keys to add: what a conversion
 *                 carries from {@link TensorArchive#typedMetadata()}, or what a plan sets
 *                 (the {@code general.file_type} of a file the forget path quantized, the
 *                 keys of {@code amn convert --gguf-kv})
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

    /**
     * Every key/value to store, typed, in order: each key of {@code metadata} as its value in
     * {@code typed}, else (a plan made by hand from an archive) as the source's typed value
     * when the plan keeps the source's string unchanged, else as a string; then the keys of
     * {@code typed} that {@code metadata} lacks.
     */
    public SequencedMap<String, MetaValue> keyValues() {
        Map<String, String> sourceStrings = source.map(TensorArchive::metadata).orElse(Map.of());
        Map<String, MetaValue> sourceTyped = null;
        SequencedMap<String, MetaValue> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> e : metadata.entrySet()) {
            MetaValue v = typed.get(e.getKey());
            if (v == null && e.getValue().equals(sourceStrings.get(e.getKey()))) {
                if (sourceTyped == null) sourceTyped = source.orElseThrow().typedMetadata();
                v = sourceTyped.get(e.getKey());
            }
            out.put(e.getKey(), v != null ? v : new MetaValue.Str(e.getValue()));
        }
        typed.forEach(out::putIfAbsent);
        return Collections.unmodifiableSequencedMap(out);
    }

    /** This plan with {@code values} set over its typed key/values (each replaces a key's value in place or is added). */
    public OutputPlan withTyped(Map<String, MetaValue> values) {
        if (values.isEmpty()) return this;
        Map<String, MetaValue> merged = new LinkedHashMap<>(typed);
        merged.putAll(values);
        return new OutputPlan(source, metadata, tensors, merged);
    }

    /** Sum of every tensor's byte size. */
    public long dataBytes() {
        long sum = 0;
        for (PlannedTensor t : tensors) sum = Math.addExact(sum, t.byteSize());
        return sum;
    }
}
