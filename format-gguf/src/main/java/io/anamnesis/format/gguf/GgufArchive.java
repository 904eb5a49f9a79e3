package io.anamnesis.format.gguf;

import io.anamnesis.api.StoredRegion;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.UnsupportedFeatureException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import io.anamnesis.api.read.ArchiveFile;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * An opened GGUF file: its parsed {@link GgufHeader}, tensors with row-major shapes
 * ({@code ne} reversed) under their stored names, and data mapped per tensor on demand.
 */
public final class GgufArchive implements TensorArchive {
    private final Path path;
    private final ArchiveFile file;
    private final GgufHeader header;
    private final List<TensorEntry> entries;
    private final Map<String, GgufTensorInfo> infos = new HashMap<>();
    private final Map<String, String> metadata;
    private final Map<String, String> properties;
    private volatile SequencedMap<String, MetaValue> typed;

    GgufArchive(Path path, FileChannel channel, GgufHeader header) {
        this.path = path;
        this.file = ArchiveFile.of(path, channel);
        this.header = header;
        List<TensorEntry> list = new java.util.ArrayList<>(header.tensors().size());
        for (GgufTensorInfo t : header.tensors()) {
            infos.put(t.name(), t);
            list.add(new TensorEntry(t.name(), t.type().dtype(), t.shape(), t.byteSize()));
        }
        this.entries = List.copyOf(list);
        var m = new LinkedHashMap<String, String>();
        header.metadata().forEach((k, v) -> m.put(k, v.render()));
        this.metadata = Collections.unmodifiableMap(m);
        this.properties = Collections.unmodifiableMap(properties(header));
    }

    private static Map<String, String> properties(GgufHeader h) {
        var p = new LinkedHashMap<String, String>();
        p.put("version", Integer.toString(h.version()));
        p.put("byte order", h.byteOrder() == ByteOrder.BIG_ENDIAN ? "big-endian" : "little-endian");
        p.put("alignment", Long.toString(h.alignment()));
        p.put("tensor count", Integer.toString(h.tensors().size()));
        p.put("kv count", Integer.toString(h.metadata().size()));
        GgufValue arch = h.metadata().get("general.architecture");
        put(p, "architecture", arch);
        put(p, "name", h.metadata().get("general.name"));
        if (arch != null && arch.type() == GgufValueType.STRING) {
            put(p, "context length", h.metadata().get(arch.value() + ".context_length"));
        }
        put(p, "quantization version", h.metadata().get("general.quantization_version"));
        GgufValue fileType = h.metadata().get("general.file_type");
        if (fileType != null) {
            String name = fileType.type().isInteger() ? FILE_TYPES.get((Long) fileType.value()) : null;
            p.put("file type", fileType.render() + (name == null ? "" : " (" + name + ")"));
        }
        return p;
    }

    /** llama.cpp's {@code llama_ftype} values, as gguf-py's LlamaFileType lists them. */
    private static final Map<Long, String> FILE_TYPES = Map.ofEntries(
            Map.entry(0L, "ALL_F32"), Map.entry(1L, "MOSTLY_F16"), Map.entry(2L, "MOSTLY_Q4_0"),
            Map.entry(3L, "MOSTLY_Q4_1"), Map.entry(7L, "MOSTLY_Q8_0"), Map.entry(8L, "MOSTLY_Q5_0"),
            Map.entry(9L, "MOSTLY_Q5_1"), Map.entry(10L, "MOSTLY_Q2_K"), Map.entry(11L, "MOSTLY_Q3_K_S"),
            Map.entry(12L, "MOSTLY_Q3_K_M"), Map.entry(13L, "MOSTLY_Q3_K_L"), Map.entry(14L, "MOSTLY_Q4_K_S"),
            Map.entry(15L, "MOSTLY_Q4_K_M"), Map.entry(16L, "MOSTLY_Q5_K_S"), Map.entry(17L, "MOSTLY_Q5_K_M"),
            Map.entry(18L, "MOSTLY_Q6_K"), Map.entry(19L, "MOSTLY_IQ2_XXS"), Map.entry(20L, "MOSTLY_IQ2_XS"),
            Map.entry(21L, "MOSTLY_Q2_K_S"), Map.entry(22L, "MOSTLY_IQ3_XS"), Map.entry(23L, "MOSTLY_IQ3_XXS"),
            Map.entry(24L, "MOSTLY_IQ1_S"), Map.entry(25L, "MOSTLY_IQ4_NL"), Map.entry(26L, "MOSTLY_IQ3_S"),
            Map.entry(27L, "MOSTLY_IQ3_M"), Map.entry(28L, "MOSTLY_IQ2_S"), Map.entry(29L, "MOSTLY_IQ2_M"),
            Map.entry(30L, "MOSTLY_IQ4_XS"), Map.entry(31L, "MOSTLY_IQ1_M"), Map.entry(32L, "MOSTLY_BF16"),
            Map.entry(36L, "MOSTLY_TQ1_0"), Map.entry(37L, "MOSTLY_TQ2_0"), Map.entry(1024L, "GUESSED"));

    private static void put(Map<String, String> p, String key, GgufValue v) {
        if (v != null) p.put(key, v.render());
    }

    /** The parsed header: typed key/values, tensor infos, alignment, byte order. */
    public GgufHeader header() {
        return header;
    }

    /** The stored tensor info (ne as stored, ggml type, offset) of a tensor. */
    public Optional<GgufTensorInfo> info(String name) {
        return Optional.ofNullable(infos.get(name));
    }

    @Override
    public String format() {
        return "gguf";
    }

    @Override
    public Optional<Path> path() {
        return Optional.ofNullable(path);
    }

    @Override
    public Map<String, String> metadata() {
        return metadata;
    }

    /**
     * The key/values as stored, as api values: every type and width, float32 bits, whole
     * arrays. Made on first use (a 150k-token vocabulary becomes 150k objects), then kept.
     */
    @Override
    public SequencedMap<String, MetaValue> typedMetadata() {
        SequencedMap<String, MetaValue> t = typed;
        if (t == null) {
            var m = new LinkedHashMap<String, MetaValue>();
            header.metadata().forEach((k, v) -> m.put(k, v.toMetaValue()));
            typed = t = Collections.unmodifiableSequencedMap(m);
        }
        return t;
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        var m = new LinkedHashMap<String, Object>();
        header.metadata().forEach((k, v) -> m.put(k, v.plain()));
        return Collections.unmodifiableMap(m);
    }

    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public List<TensorEntry> tensors() {
        return entries;
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        GgufTensorInfo info = infos.get(entry.name());
        if (info == null) throw new IllegalArgumentException("no tensor '" + entry.name() + "' in " + path);
        if (info.byteSize() == 0) return arena.allocate(0);
        boolean swap = header.byteOrder() == ByteOrder.BIG_ENDIAN;
        if (swap && info.type().isBlock()) {
            throw UnsupportedFeatureException.inTensor(info.name(), info.type().name()
                    + " blocks in a big-endian GGUF file are not supported (only scalar types are byte-swapped)");
        }
        MemorySegment mapped;
        try {
            mapped = file.map(header.dataStart() + info.offset(), info.byteSize(), arena);
        } catch (IOException e) {
            throw new TensorIOException("tensor '" + info.name() + "': cannot map its data: " + ArchiveFile.describe(e), e);
        }
        if (!swap) return mapped;
        return toLittleEndian(mapped, info.type().blockBytes(), arena);
    }

    @Override
    public Optional<StoredRegion> storedRegion(TensorEntry entry) {
        GgufTensorInfo info = infos.get(entry.name());
        if (path == null || file.isClosed() || info == null || info.byteSize() == 0 || info.byteSize() != entry.byteSize()
                || header.byteOrder() == ByteOrder.BIG_ENDIAN) {
            return Optional.empty();
        }
        return Optional.of(new StoredRegion(file.channel(), header.dataStart() + info.offset()));
    }

    /** Copies big-endian elements of {@code width} bytes into a little-endian segment of {@code arena}. */
    static MemorySegment toLittleEndian(MemorySegment big, int width, Arena arena) {
        MemorySegment out = arena.allocate(big.byteSize(), 8);
        ValueLayout layout = switch (width) {
            case 1 -> ValueLayout.JAVA_BYTE;
            case 2 -> ValueLayout.JAVA_SHORT_UNALIGNED;
            case 4 -> ValueLayout.JAVA_INT_UNALIGNED;
            case 8 -> ValueLayout.JAVA_LONG_UNALIGNED;
            default -> throw new IllegalStateException("no scalar of " + width + " bytes");
        };
        MemorySegment.copy(big, layout.withOrder(ByteOrder.BIG_ENDIAN), 0,
                out, layout.withOrder(ByteOrder.LITTLE_ENDIAN), 0, big.byteSize() / width);
        return out;
    }

    @Override
    public void close() {
        try {
            file.close();
        } catch (IOException e) {
            throw new TensorIOException("cannot close " + path + ": " + e.getMessage(), e);
        }
    }
}
