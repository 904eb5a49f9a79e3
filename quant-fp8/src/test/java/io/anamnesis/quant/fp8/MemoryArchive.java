package io.anamnesis.quant.fp8;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** A checkpoint built in code: tensors with their little-endian bytes, metadata, an optional path. */
final class MemoryArchive implements TensorArchive {
    private final List<TensorEntry> entries = new ArrayList<>();
    private final Map<String, byte[]> bytes = new HashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private Path path;

    MemoryArchive add(String name, DType dtype, long[] shape, byte[] data) {
        entries.add(TensorEntry.of(name, dtype, Shape.of(shape)));
        bytes.put(name, data);
        return this;
    }

    /** Stores bytes that do not match the declared shape (a lying container). */
    MemoryArchive addRaw(TensorEntry entry, byte[] data) {
        entries.add(entry);
        bytes.put(entry.name(), data);
        return this;
    }

    MemoryArchive fp8(String name, DType dtype, long rows, long cols, int... codes) {
        byte[] b = new byte[codes.length];
        for (int i = 0; i < codes.length; i++) b[i] = (byte) codes[i];
        return add(name, dtype, new long[]{rows, cols}, b);
    }

    MemoryArchive f32(String name, long[] shape, float... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putFloat(v);
        return add(name, DType.F32, shape, b.array());
    }

    /** BF16 or F16 from their 16-bit patterns. */
    MemoryArchive half(String name, DType dtype, long[] shape, int... bits) {
        ByteBuffer b = ByteBuffer.allocate(2 * bits.length).order(ByteOrder.LITTLE_ENDIAN);
        for (int v : bits) b.putShort((short) v);
        return add(name, dtype, shape, b.array());
    }

    byte[] bytes(String name) {
        return bytes.get(name).clone();
    }

    MemoryArchive meta(String key, String value) {
        metadata.put(key, value);
        return this;
    }

    MemoryArchive at(Path file) {
        this.path = file;
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
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
        return s;
    }

    @Override
    public void close() {
    }
}
