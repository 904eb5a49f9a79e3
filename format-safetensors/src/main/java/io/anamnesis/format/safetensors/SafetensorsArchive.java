package io.anamnesis.format.safetensors;

import io.anamnesis.api.StoredRegion;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
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
 * An opened safetensors file: the parsed header, an index by name, the open channel to map
 * from, and the metadata decoded when it carries the typed encoding ({@link TypedMetadata}).
 */
final class SafetensorsArchive implements TensorArchive {
    private final Path path;
    private final ArchiveFile file;
    private final SafetensorsHeader header;
    private final List<TensorEntry> entries;
    private final Map<String, SafetensorsHeader.Tensor> byName;
    private final TypedMetadata metadata;

    /** @throws io.anamnesis.api.AnamnesisException when typed metadata does not decode (naming the key) */
    SafetensorsArchive(Path path, FileChannel channel, SafetensorsHeader header, ParseLimits limits) {
        this.path = path;
        this.file = ArchiveFile.of(path, channel);
        this.header = header;
        this.metadata = TypedMetadata.decode(header.metadata(), limits);
        this.entries = header.tensors().stream().map(SafetensorsHeader.Tensor::entry).toList();
        Map<String, SafetensorsHeader.Tensor> index = HashMap.newHashMap(header.tensors().size());
        for (SafetensorsHeader.Tensor t : header.tensors()) index.put(t.name(), t);
        this.byName = index;
    }

    SafetensorsHeader header() {
        return header;
    }

    @Override
    public String format() {
        return "safetensors";
    }

    @Override
    public Optional<Path> path() {
        return Optional.ofNullable(path);
    }

    /** {@code __metadata__} without the encoding's marker, typed values rendered as text. */
    @Override
    public Map<String, String> metadata() {
        return metadata.display();
    }

    /** {@code __metadata__} decoded: typed values whole when the file carries the typed encoding, strings otherwise. */
    @Override
    public SequencedMap<String, MetaValue> typedMetadata() {
        return metadata.typed();
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        Map<String, Object> m = new LinkedHashMap<>();
        metadata.typed().forEach((k, v) -> m.put(k, v.plain()));
        return Collections.unmodifiableMap(m);
    }

    @Override
    public Map<String, String> properties() {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("header bytes", Long.toString(header.headerLength()));
        p.put("data offset", Long.toString(header.dataStart()));
        p.put("data bytes", Long.toString(header.dataBytes()));
        p.put("data aligned to 8 bytes", header.dataStart() % 8 == 0 ? "yes" : "no");
        p.put("byte order", "little-endian");
        p.put("tensors", Integer.toString(entries.size()));
        p.put("metadata entries", Integer.toString(metadata.typed().size()));
        metadata.encoding().ifPresent(e -> p.put("metadata encoding", e));
        return Collections.unmodifiableMap(p);
    }

    /** Every tensor in data order (by {@code data_offsets}). */
    @Override
    public List<TensorEntry> tensors() {
        return entries;
    }

    @Override
    public Optional<TensorEntry> tensor(String name) {
        SafetensorsHeader.Tensor t = byName.get(name);
        return t == null ? Optional.empty() : Optional.of(t.entry());
    }

    /** Maps exactly the tensor's bytes, read-only, into {@code arena}. */
    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        SafetensorsHeader.Tensor t = byName.get(entry.name());
        if (t == null || !t.entry().equals(entry)) {
            throw new IllegalArgumentException("tensor " + entry.name() + " is not an entry of " + path);
        }
        if (file.isClosed()) throw TensorIOException.inTensor(entry.name(), "the archive " + path + " is closed");
        long size = t.end() - t.begin();
        if (size == 0) return MemorySegment.NULL;
        long offset = header.dataStart() + t.begin();
        try {
            // A file truncated after open would fault on access instead of failing here.
            if (file.size() < offset + size) {
                throw TensorIOException.inTensor(entry.name(), path + " shrank to " + file.size()
                        + " bytes after it was opened; the tensor needs bytes up to " + (offset + size));
            }
            return file.map(offset, size, arena);
        } catch (IOException e) {
            // no path: the header came from a stream or by range requests, and the message says so
            throw new TensorIOException("cannot map tensor '" + entry.name() + "'"
                    + (path == null ? "" : " of " + path) + ": " + ArchiveFile.describe(e), e);
        }
    }

    @Override
    public Optional<StoredRegion> storedRegion(TensorEntry entry) {
        SafetensorsHeader.Tensor t = byName.get(entry.name());
        if (path == null || file.isClosed() || t == null || !t.entry().equals(entry)) return Optional.empty();
        long size = t.end() - t.begin();
        // a region whose size disagrees is left to data(), whose caller names the mismatch
        if (size == 0 || size != entry.byteSize()) return Optional.empty();
        return Optional.of(new StoredRegion(file.channel(), header.dataStart() + t.begin()));
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
