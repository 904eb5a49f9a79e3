package io.anamnesis.quant.awq;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A checkpoint built in test code: tensors as little-endian bytes, metadata, and an optional file path for sidecars. */
final class MemoryArchive implements TensorArchive {
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private final List<TensorEntry> entries = new ArrayList<>();
    private final Map<String, byte[]> bytes = new LinkedHashMap<>();
    private Path path;

    MemoryArchive meta(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    MemoryArchive at(Path file) {
        this.path = file;
        return this;
    }

    MemoryArchive ints(String name, int[] values, long... shape) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : values) b.putInt(v);
        return raw(name, DType.I32, b.array(), shape);
    }

    MemoryArchive shorts(String name, DType dtype, short[] values, long... shape) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (short v : values) b.putShort(v);
        return raw(name, dtype, b.array(), shape);
    }

    MemoryArchive floats(String name, float[] values, long... shape) {
        ByteBuffer b = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putFloat(v);
        return raw(name, DType.F32, b.array(), shape);
    }

    MemoryArchive raw(String name, DType dtype, byte[] data, long... shape) {
        entries.add(new TensorEntry(name, dtype, Shape.of(shape), data.length));
        bytes.put(name, data);
        return this;
    }

    @Override
    public String format() {
        return "memory";
    }

    @Override
    public Optional<Path> path() {
        return Optional.ofNullable(path);
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
        MemorySegment s = arena.allocate(Math.max(1, b.length)).asSlice(0, b.length);
        MemorySegment.copy(b, 0, s, ValueLayout.JAVA_BYTE, 0, b.length);
        return s;
    }

    @Override
    public void close() {
    }
}
