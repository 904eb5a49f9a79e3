package io.anamnesis.format.pth;

import io.anamnesis.api.StoredRegion;
import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.channels.ClosedChannelException;
import io.anamnesis.api.read.ArchiveFile;
import java.nio.channels.FileChannel;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * An opened checkpoint: the tensors the pickle describes, each a view of a storage whose
 * bytes sit at a known offset of the file. {@link #data} maps a contiguous little-endian view
 * in place (zero-copy); other views are gathered into row-major order and byte-swapped.
 */
final class PthArchive implements TensorArchive {
    /** A tensor's entry and where its storage starts in the file. */
    record Placed(TensorEntry entry, PyValue.Tensor view, long storageOffset, boolean bigEndian) {
    }

    private final Path path;
    private final ArchiveFile file;
    private final List<TensorEntry> entries;
    private final Map<String, Placed> placed;
    private final Map<String, String> metadata;
    private final Map<String, Object> structured;
    private final SequencedMap<String, MetaValue> typed;
    private final Map<String, String> properties;

    PthArchive(Path path, FileChannel channel, List<Placed> tensors, Map<String, String> metadata,
               Map<String, Object> structured, Map<String, MetaValue> typed, Map<String, String> properties) {
        this.path = path;
        this.file = ArchiveFile.of(path, channel);
        this.entries = tensors.stream().map(Placed::entry).toList();
        this.placed = new HashMap<>();
        for (Placed p : tensors) placed.put(p.entry().name(), p);
        this.metadata = java.util.Collections.unmodifiableMap(metadata);
        this.structured = java.util.Collections.unmodifiableMap(structured);
        this.typed = java.util.Collections.unmodifiableSequencedMap(new java.util.LinkedHashMap<>(typed));
        this.properties = java.util.Collections.unmodifiableMap(properties);
    }

    @Override
    public String format() {
        return "pth";
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
     * The non-tensor values that have a typed form: strings, integers (int64, or uint64 for
     * larger ones), floats (f64), bools. None, bytes, references to Python code and integers
     * past 64 bits have only their text in {@link #metadata()}, which conversions drop and name.
     */
    @Override
    public SequencedMap<String, MetaValue> typedMetadata() {
        return typed;
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        return structured;
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
        Placed p = placed.get(entry.name());
        if (p == null || !p.entry().equals(entry)) {
            throw new IllegalArgumentException("tensor " + entry.name() + " is not an entry of this archive");
        }
        PyValue.Tensor v = p.view();
        DType dtype = entry.dtype();
        int es = dtype.elementBytes();
        long bytes = entry.byteSize();
        if (bytes == 0) return arena.allocate(0);
        try {
            if (!p.bigEndian() && Strided.isContiguous(v.sizes(), v.strides())) {
                return file.map(p.storageOffset() + v.offset() * es, bytes, arena);
            }
            long span = (Strided.lastElement(v.offset(), v.sizes(), v.strides()) + 1) * es;
            MemorySegment dest = arena.allocate(bytes, Math.min(es, 8));
            try (Arena scratch = Arena.ofConfined()) {
                MemorySegment src = file.map(p.storageOffset(), span, scratch);
                Strided.gather(src, v.offset(), v.sizes(), v.strides(), es, dest);
            }
            if (p.bigEndian()) Strided.swapBytes(dest, dtype.kind() == DType.Kind.COMPLEX ? es / 2 : es);
            return dest;
        } catch (ClosedChannelException e) {
            throw TensorIOException.inTensor(entry.name(), "the archive is closed");
        } catch (IOException e) {
            throw TensorIOException.inTensor(entry.name(), "cannot map its storage: " + ArchiveFile.describe(e));
        }
    }

    @Override
    public Optional<StoredRegion> storedRegion(TensorEntry entry) {
        Placed p = placed.get(entry.name());
        if (path == null || file.isClosed() || p == null || !p.entry().equals(entry) || entry.byteSize() == 0 || p.bigEndian()
                || !Strided.isContiguous(p.view().sizes(), p.view().strides())) {
            return Optional.empty();
        }
        return Optional.of(new StoredRegion(file.channel(), p.storageOffset() + p.view().offset() * entry.dtype().elementBytes()));
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
