package io.anamnesis.api.testing;

import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * A checkpoint built in test code, for every module's tests (the api's test-jar publishes
 * it): tensors as little-endian bytes in the order they were added, string metadata, and an
 * optional file path so that sidecar configs beside it are found. Metadata may be typed. Adding a name again
 * replaces that tensor and moves it to the end. {@link #data} hands out a read-only copy,
 * as a memory-mapped file would be read-only.
 */
public final class MemoryArchive implements TensorArchive {
    private final Map<String, TensorEntry> entries = new LinkedHashMap<>();
    private final Map<String, byte[]> bytes = new LinkedHashMap<>();
    private final Map<String, String> metadata = new LinkedHashMap<>();
    private final Map<String, MetaValue> typed = new LinkedHashMap<>();
    private final java.util.Set<String> untyped = new java.util.HashSet<>();
    private List<TensorEntry> ordered; // made on demand, dropped on every change
    private Path path;

    /** A tensor whose declared size is the length of {@code data}. */
    public MemoryArchive add(String name, DType dtype, Shape shape, byte[] data) {
        return addRaw(new TensorEntry(name, dtype, shape, data.length), data);
    }

    public MemoryArchive add(String name, DType dtype, long[] shape, byte[] data) {
        return add(name, dtype, Shape.of(shape), data);
    }

    /** An entry as given, over bytes that need not match it (a lying container). */
    public MemoryArchive addRaw(TensorEntry entry, byte[] data) {
        entries.remove(entry.name());
        entries.put(entry.name(), entry);
        bytes.put(entry.name(), data.clone());
        ordered = null;
        return this;
    }

    public MemoryArchive remove(String name) {
        entries.remove(name);
        bytes.remove(name);
        ordered = null;
        return this;
    }

    /** A copy of the bytes stored for {@code name} (what a test built or a plan produced). */
    public byte[] bytes(String name) {
        byte[] b = bytes.get(name);
        if (b == null) throw new IllegalArgumentException("no tensor " + name);
        return b.clone();
    }

    public MemoryArchive meta(String key, String value) {
        metadata.put(key, value);
        typed.remove(key);
        untyped.remove(key);
        return this;
    }

    /** A typed metadata value: {@link #typedMetadata()} gives it, {@link #metadata()} its rendering. */
    public MemoryArchive meta(String key, MetaValue value) {
        metadata.put(key, value.render());
        typed.put(key, value);
        untyped.remove(key);
        return this;
    }

    /** A value with only a rendering, no typed form (as a pickle's None): {@link #typedMetadata()} leaves it out. */
    public MemoryArchive untypedMeta(String key, String text) {
        metadata.put(key, text);
        typed.remove(key);
        untyped.add(key);
        return this;
    }

    /** Pretends the archive was opened from {@code file}: sidecars are looked up beside it. */
    public MemoryArchive at(Path file) {
        this.path = file;
        return this;
    }

    /** A 1-D U8 tensor. */
    public MemoryArchive u8(String name, byte[] data) {
        return add(name, DType.U8, new long[]{data.length}, data);
    }

    /** A 1-D U8 tensor holding UTF-8 text (bitsandbytes keeps its quant state so). */
    public MemoryArchive json(String name, String json) {
        return u8(name, json.getBytes(StandardCharsets.UTF_8));
    }

    /** A 2-D tensor of one-byte codes (FP8 and the like). */
    public MemoryArchive fp8(String name, DType dtype, long rows, long cols, int... codes) {
        byte[] b = new byte[codes.length];
        for (int i = 0; i < codes.length; i++) b[i] = (byte) codes[i];
        return add(name, dtype, new long[]{rows, cols}, b);
    }

    /** A 1-D F32 tensor. */
    public MemoryArchive f32(String name, float... values) {
        return f32(name, new long[]{values.length}, values);
    }

    public MemoryArchive f32(String name, long[] shape, float... values) {
        ByteBuffer b = little(4 * values.length);
        for (float v : values) b.putFloat(v);
        return add(name, DType.F32, shape, b.array());
    }

    /** BF16 or F16 from their 16-bit patterns. */
    public MemoryArchive half(String name, DType dtype, long[] shape, int... bits) {
        ByteBuffer b = little(2 * bits.length);
        for (int v : bits) b.putShort((short) v);
        return add(name, dtype, shape, b.array());
    }

    /** An I32 tensor. */
    public MemoryArchive ints(String name, int[] values, long... shape) {
        ByteBuffer b = little(4 * values.length);
        for (int v : values) b.putInt(v);
        return add(name, DType.I32, shape, b.array());
    }

    /** A 16-bit tensor (F16, BF16, I16) from its values' bits. */
    public MemoryArchive shorts(String name, DType dtype, short[] values, long... shape) {
        ByteBuffer b = little(2 * values.length);
        for (short v : values) b.putShort(v);
        return add(name, dtype, shape, b.array());
    }

    /** An I32 tensor, shape first. */
    public MemoryArchive i32(String name, long[] shape, int... values) {
        return ints(name, values, shape);
    }

    /** An I64 tensor. */
    public MemoryArchive i64(String name, long[] shape, long... values) {
        ByteBuffer b = little(8 * values.length);
        for (long v : values) b.putLong(v);
        return add(name, DType.I64, shape, b.array());
    }

    /** A one-byte-per-element tensor (U8, I8, F8 kinds) from each value's low byte. */
    public MemoryArchive bytes(String name, DType dtype, long[] shape, int... values) {
        byte[] b = new byte[values.length];
        for (int i = 0; i < values.length; i++) b[i] = (byte) values[i];
        return add(name, dtype, shape, b);
    }

    /** A U8 tensor from each value's low byte. */
    public MemoryArchive bytes(String name, long[] shape, int... values) {
        return bytes(name, DType.U8, shape, values);
    }

    private static ByteBuffer little(int bytes) {
        return ByteBuffer.allocate(bytes).order(ByteOrder.LITTLE_ENDIAN);
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
    public java.util.SequencedMap<String, MetaValue> typedMetadata() {
        var out = new LinkedHashMap<String, MetaValue>();
        metadata.forEach((k, v) -> {
            if (!untyped.contains(k)) out.put(k, typed.getOrDefault(k, new MetaValue.Str(v)));
        });
        return out;
    }

    @Override
    public Map<String, String> properties() {
        return Map.of();
    }

    @Override
    public List<TensorEntry> tensors() {
        if (ordered == null) ordered = List.copyOf(entries.values());
        return ordered;
    }

    @Override
    public Optional<TensorEntry> tensor(String name) {
        return Optional.ofNullable(entries.get(name));
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        byte[] b = bytes.get(entry.name());
        MemorySegment s = arena.allocate(Math.max(1, b.length)).asSlice(0, b.length);
        MemorySegment.copy(MemorySegment.ofArray(b), 0, s, 0, b.length);
        return s.asReadOnly();
    }

    @Override
    public void close() {
    }
}
