package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/** An in-memory archive of whole tensors, with typed metadata, of any format name. */
public final class TestArchive implements TensorArchive {
    private final String format;
    private final Optional<Path> path;
    private final Map<String, Object> structured = new LinkedHashMap<>();
    private final Map<TensorEntry, byte[]> data = new LinkedHashMap<>();

    public TestArchive(String format, Path path) {
        this.format = format;
        this.path = Optional.ofNullable(path);
    }

    public TestArchive(String format) {
        this(format, null);
    }

    public TestArchive meta(String key, Object value) {
        structured.put(key, value);
        return this;
    }

    public TestArchive bytes(String name, DType dtype, Shape shape, byte[] bytes) {
        data.put(TensorEntry.of(name, dtype, shape), bytes);
        return this;
    }

    public TestArchive f32(String name, Shape shape, float... values) {
        ByteBuffer b = ByteBuffer.allocate(4 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putFloat(v);
        return bytes(name, DType.F32, shape, b.array());
    }

    public TestArchive f16(String name, Shape shape, float... values) {
        ByteBuffer b = ByteBuffer.allocate(2 * values.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float v : values) b.putShort(Float.floatToFloat16(v));
        return bytes(name, DType.F16, shape, b.array());
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
        structured.forEach((k, v) -> m.put(k, String.valueOf(v)));
        return m;
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        return structured;
    }

    @Override
    public Map<String, String> properties() {
        return Map.of();
    }

    @Override
    public List<TensorEntry> tensors() {
        return List.copyOf(data.keySet());
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        byte[] b = data.get(entry);
        return arena.allocate(Math.max(1, b.length)).asSlice(0, b.length).copyFrom(MemorySegment.ofArray(b));
    }

    @Override
    public void close() {
    }
}
