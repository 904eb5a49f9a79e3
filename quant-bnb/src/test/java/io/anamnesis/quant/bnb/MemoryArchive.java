package io.anamnesis.quant.bnb;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A tensor archive held in memory, to build small checkpoints in tests. */
final class MemoryArchive implements TensorArchive {
    private final List<TensorEntry> entries = new ArrayList<>();
    private final Map<String, byte[]> bytes = new LinkedHashMap<>();

    MemoryArchive put(String name, DType dtype, long[] shape, byte[] data) {
        TensorEntry e = new TensorEntry(name, dtype, Shape.of(shape), data.length);
        entries.removeIf(x -> x.name().equals(name));
        entries.add(e);
        bytes.put(name, data.clone());
        return this;
    }

    byte[] bytes(String name) {
        return bytes.get(name).clone();
    }

    MemoryArchive u8(String name, byte[] data) {
        return put(name, DType.U8, new long[]{data.length}, data);
    }

    MemoryArchive f32(String name, float... values) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putFloat(v);
        return put(name, DType.F32, new long[]{values.length}, b.array());
    }

    MemoryArchive json(String name, String json) {
        return u8(name, json.getBytes(StandardCharsets.UTF_8));
    }

    MemoryArchive remove(String name) {
        entries.removeIf(x -> x.name().equals(name));
        bytes.remove(name);
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
        return Map.of();
    }

    @Override
    public Map<String, String> properties() {
        return Map.of();
    }

    @Override
    public List<TensorEntry> tensors() {
        return List.copyOf(entries);
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        byte[] b = bytes.get(entry.name());
        MemorySegment s = arena.allocate(Math.max(1, b.length)).asSlice(0, b.length);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
        return s;
    }

    @Override
    public void close() {
    }
}
