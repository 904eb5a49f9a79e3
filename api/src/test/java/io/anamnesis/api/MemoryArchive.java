package io.anamnesis.api;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A TensorArchive held in memory, built by tests tensor by tensor. */
final class MemoryArchive implements TensorArchive {
    private final List<TensorEntry> entries = new ArrayList<>();
    private final Map<String, byte[]> bytes = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();

    MemoryArchive add(String name, DType dtype, Shape shape, byte[] data) {
        entries.add(new TensorEntry(name, dtype, shape, data.length));
        bytes.put(name, data);
        return this;
    }

    MemoryArchive meta(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    @Override
    public String format() {
        return "memory";
    }

    @Override
    public Optional<Path> path() {
        return Optional.empty();
    }

    @Override
    public Map<String, String> metadata() {
        return metadata;
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
    public MemorySegment data(TensorEntry entry, Arena arena) {
        byte[] b = bytes.get(entry.name());
        MemorySegment seg = arena.allocate(Math.max(1, b.length)).asSlice(0, b.length);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, seg, 0, b.length);
        return seg.asReadOnly();
    }

    @Override
    public void close() {
    }
}
