package io.anamnesis.api;

import io.anamnesis.api.spi.ExportedModel;
import io.anamnesis.api.spi.PlannedTensor;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * An exported model seen as the file it would be: what a quantizer of that format reads when
 * it quantizes the export in the same pass (the typed key/values as plain values, the
 * tensors with their output names and dtypes). {@link #data} produces one whole tensor into
 * the arena; the quantizer asks it only for the tensors it copies as they are (norms,
 * vectors), every other tensor streams through its producer in chunks.
 */
final class ExportedArchive implements TensorArchive {
    private final String format;
    private final Optional<Path> path;
    private final ExportedModel model;
    private final List<TensorEntry> entries = new ArrayList<>();
    private final Map<String, PlannedTensor> byName = new LinkedHashMap<>();

    ExportedArchive(String format, Optional<Path> path, ExportedModel model) {
        this.format = format;
        this.path = path;
        this.model = model;
        for (PlannedTensor t : model.tensors()) {
            entries.add(TensorEntry.of(t.name(), t.dtype(), t.shape()));
            byName.put(t.name(), t);
        }
    }

    @Override
    public String format() {
        return format;
    }

    @Override
    public Optional<Path> path() {
        return path;
    }

    @Override
    public Map<String, String> metadata() {
        Map<String, String> m = new LinkedHashMap<>();
        structuredMetadata().forEach((k, v) -> m.put(k, String.valueOf(v)));
        return m;
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        Map<String, Object> m = new LinkedHashMap<>();
        model.keyValues().forEach((k, v) -> m.put(k, plain(v)));
        return m;
    }

    private static Object plain(MetaValue v) {
        return switch (v) {
            case MetaValue.Int i -> i.value();
            case MetaValue.Real r -> r.value();
            case MetaValue.Bool b -> b.value();
            case MetaValue.Str s -> s.value();
            case MetaValue.Array a -> a.values().stream().map(ExportedArchive::plain).toList();
        };
    }

    @Override
    public Map<String, String> properties() {
        return Map.of();
    }

    @Override
    public List<TensorEntry> tensors() {
        return entries;
    }

    @Override
    public Optional<TensorEntry> tensor(String name) {
        PlannedTensor t = byName.get(name);
        return t == null ? Optional.empty() : Optional.of(TensorEntry.of(t.name(), t.dtype(), t.shape()));
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        PlannedTensor t = byName.get(entry.name());
        if (t == null) throw new IllegalArgumentException("no exported tensor " + entry.name());
        MemorySegment out = arena.allocate(Math.max(1, t.byteSize()), 64).asSlice(0, t.byteSize());
        if (t.elementCount() > 0) t.producer().open(arena).fill(0, t.elementCount(), out);
        return out;
    }

    @Override
    public void close() {
    }
}
