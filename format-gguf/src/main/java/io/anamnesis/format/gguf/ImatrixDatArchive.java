package io.anamnesis.format.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
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

/**
 * An opened legacy imatrix {@code .dat} file (see {@link ImatrixDatReader}): one F32 tensor
 * per entry, ncall and the trailer as metadata, values mapped on demand.
 */
final class ImatrixDatArchive implements TensorArchive {
    private final Path path;
    private final ArchiveFile file;
    private final List<TensorEntry> tensors;
    private final Map<String, ImatrixDatReader.Entry> byName = new HashMap<>();
    private final Map<String, Object> structured;
    private final Map<String, String> metadata;
    private final Map<String, String> properties;

    ImatrixDatArchive(Path path, FileChannel channel, List<ImatrixDatReader.Entry> entries,
                      Optional<ImatrixDatReader.Trailer> trailer) {
        this.path = path;
        this.file = ArchiveFile.of(path, channel);
        var list = new java.util.ArrayList<TensorEntry>(entries.size());
        var s = new LinkedHashMap<String, Object>();
        trailer.ifPresent(t -> {
            s.put("imatrix.chunk_count", t.lastCall());
            s.put("imatrix.datasets", List.of(t.dataset()));
        });
        for (ImatrixDatReader.Entry e : entries) {
            list.add(TensorEntry.of(e.name(), DType.F32, Shape.of(e.count())));
            byName.put(e.name(), e);
            s.put("ncall." + e.name(), e.ncall());
        }
        this.tensors = List.copyOf(list);
        this.structured = Collections.unmodifiableMap(s);
        var m = new LinkedHashMap<String, String>();
        s.forEach((k, v) -> m.put(k, v instanceof List<?> l ? String.valueOf(l.getFirst()) : String.valueOf(v)));
        this.metadata = Collections.unmodifiableMap(m);
        var p = new LinkedHashMap<String, String>();
        p.put("layout", "legacy llama.cpp imatrix (.dat)");
        p.put("entries", Integer.toString(entries.size()));
        trailer.ifPresent(t -> {
            p.put("chunks", Long.toString(t.lastCall()));
            p.put("dataset", t.dataset());
        });
        this.properties = Collections.unmodifiableMap(p);
    }

    @Override
    public String format() {
        return "imatrix";
    }

    @Override
    public Optional<Path> path() {
        return Optional.ofNullable(path);
    }

    /** {@code ncall.<entry>} per entry, {@code imatrix.chunk_count} and {@code imatrix.datasets} from the trailer. */
    @Override
    public Map<String, String> metadata() {
        return metadata;
    }

    /** The same keys as {@link #metadata()}: numbers as Long, {@code imatrix.datasets} as a list (as in GGUF). */
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
        return tensors;
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        ImatrixDatReader.Entry e = byName.get(entry.name());
        if (e == null) throw new IllegalArgumentException("no entry '" + entry.name() + "' in " + path);
        try {
            return file.map(e.offset(), 4 * e.count(), arena);
        } catch (IOException ex) {
            throw new TensorIOException("imatrix entry '" + e.name() + "': cannot map its values: " + ArchiveFile.describe(ex), ex);
        }
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
