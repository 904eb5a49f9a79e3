package io.anamnesis.api.model;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.ShardPosition;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

/**
 * A model of several files as one {@link TensorArchive}: the tensors of every shard in shard
 * order (each shard's own order within it), the metadata and properties of the first shard,
 * {@link #path()} the model folder (so that its {@code config.json} is the model's config),
 * and each tensor's bytes from the shard that holds it. Dequantizers see one archive, so a
 * group whose scale sits in another shard than its weight is recovered like any other.
 *
 * <p>Opening checks the shards against each other and against the index: a tensor in two
 * shards, an index that names a tensor its shard lacks or puts it in another shard, splits
 * whose own keys disagree with their place, are malformed input.
 */
public final class ShardedArchive implements TensorArchive {

    /**
     * One opened file of the model.
     *
     * @param file     where it is
     * @param archive  the format reader's archive of it
     * @param position where the file says it sits among the splits (GGUF), if it says
     */
    public record Shard(Path file, TensorArchive archive, Optional<ShardPosition> position) {
    }

    private final ModelLayout layout;
    private final List<Shard> shards;
    private final List<TensorEntry> tensors;
    private final Map<String, Shard> shardOf;
    private final Map<String, TensorEntry> byName;
    private final Map<String, String> properties;
    private final Map<String, String> companions;

    private ShardedArchive(ModelLayout layout, List<Shard> shards, Map<String, String> companions) {
        this.layout = layout;
        this.companions = Map.copyOf(companions);
        this.shards = List.copyOf(shards);
        Map<String, Shard> owner = new HashMap<>();
        Map<String, TensorEntry> entries = new HashMap<>();
        List<TensorEntry> all = new ArrayList<>();
        for (Shard s : shards) {
            for (TensorEntry e : s.archive().tensors()) {
                Shard earlier = owner.putIfAbsent(e.name(), s);
                if (earlier != null) {
                    throw MalformedFileException.inTensor(e.name(), "is in two shards, " + name(earlier.file())
                            + " and " + name(s.file()) + "; a model keeps each tensor in one shard");
                }
                entries.put(e.name(), e);
                all.add(e);
            }
        }
        for (var e : layout.weightMap().entrySet()) {
            Shard s = owner.get(e.getKey());
            String index = layout.index().map(ShardedArchive::name).orElse("the index");
            if (s == null) {
                throw MalformedFileException.inTensor(e.getKey(), index + " puts it in " + e.getValue()
                        + ", which lacks it (and no other shard has it)");
            }
            if (!name(s.file()).equals(e.getValue())) {
                throw MalformedFileException.inTensor(e.getKey(), index + " puts it in " + e.getValue()
                        + ", but it is in " + name(s.file()));
            }
        }
        checkPositions(shards);
        this.tensors = List.copyOf(all);
        this.shardOf = owner;
        this.byName = entries;
        Map<String, String> p = new LinkedHashMap<>(shards.getFirst().archive().properties());
        if (layout.isFolder()) p.put("model folder", layout.folder().get().toString());
        layout.index().ifPresent(i -> p.put("index", name(i)));
        p.put("shards", Integer.toString(shards.size()));
        if (!layout.absent().isEmpty()) p.put("absent shards", Integer.toString(layout.absent().size()));
        this.properties = Collections.unmodifiableMap(p);
    }

    /**
     * Opens every file of {@code layout} with {@code open}, closing what was opened when one
     * fails or the shards do not fit together.
     *
     * @throws io.anamnesis.api.AnamnesisException typed, as the readers and the checks above
     */
    public static ShardedArchive open(ModelLayout layout, Function<Path, Shard> open) {
        return open(layout, open, Map.of());
    }

    /**
     * As {@link #open(ModelLayout, Function)}, for a model whose files are not on this file
     * system (headers read from a URL): the layout's paths are the files' names, the model has
     * no {@link #path()}, and {@code companions} (file name to text: its {@code config.json}
     * and the like, fetched with it) answer {@link #companion}.
     */
    public static ShardedArchive open(ModelLayout layout, Function<Path, Shard> open, Map<String, String> companions) {
        List<Shard> opened = new ArrayList<>();
        try {
            for (Path file : layout.shards()) opened.add(open.apply(file));
            return new ShardedArchive(layout, opened, companions);
        } catch (RuntimeException | Error e) {
            for (Shard s : opened) {
                try {
                    s.archive().close();
                } catch (RuntimeException suppressed) {
                    e.addSuppressed(suppressed);
                }
            }
            throw e;
        }
    }

    /** Split keys (GGUF's) must agree with the split's place and with each other. */
    private void checkPositions(List<Shard> shards) {
        if (!layout.absent().isEmpty()) return;
        long total = 0;
        for (Shard s : shards) total += s.archive().tensors().size();
        for (int i = 0; i < shards.size(); i++) {
            Shard s = shards.get(i);
            if (s.position().isEmpty()) continue;
            ShardPosition p = s.position().get();
            if (shards.size() == 1 && p.count() == 1) continue;
            if (p.index() != i || p.count() != shards.size()) {
                throw new MalformedFileException(name(s.file()) + " says it is split " + (p.index() + 1) + " of "
                        + p.count() + ", but it is file " + (i + 1) + " of the " + shards.size() + " found");
            }
            if (p.totalTensors().isPresent() && p.totalTensors().getAsLong() != total) {
                throw new MalformedFileException(name(s.file()) + " says the model has " + p.totalTensors().getAsLong()
                        + " tensors, but its " + shards.size() + " splits hold " + total);
            }
        }
    }

    private static String name(Path p) {
        return ModelLocator.fileName(p);
    }

    /** The files of the model as found. */
    public ModelLayout layout() {
        return layout;
    }

    /** Every opened file, in shard order. */
    public List<Shard> shards() {
        return shards;
    }

    /** The shard that holds a tensor. */
    public Optional<Shard> shardOf(String tensor) {
        return Optional.ofNullable(shardOf.get(tensor));
    }

    @Override
    public String format() {
        return shards.getFirst().archive().format();
    }

    /**
     * The model folder; a shard opened alone (its siblings absent) is its own path; a model
     * read from a URL has none (its first shard has none).
     */
    @Override
    public Optional<Path> path() {
        return layout.folder().or(() -> shards.getFirst().archive().path());
    }

    @Override
    public Optional<String> companion(String fileName) {
        return Optional.ofNullable(companions.get(fileName));
    }

    /** The first shard's: transformers writes the same {@code __metadata__} in every shard, gguf-split keeps all keys in the first. */
    @Override
    public Map<String, String> metadata() {
        return shards.getFirst().archive().metadata();
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        return shards.getFirst().archive().structuredMetadata();
    }

    /**
     * The first shard's typed key/values, what a conversion writes; for split files (a format
     * that records the split in the file, GGUF's {@code split.*} keys) without those keys,
     * which describe the input's files, not the model.
     */
    @Override
    public java.util.SequencedMap<String, io.anamnesis.api.MetaValue> typedMetadata() {
        Shard first = shards.getFirst();
        java.util.SequencedMap<String, io.anamnesis.api.MetaValue> all = first.archive().typedMetadata();
        if (first.position().isEmpty()) return all;
        java.util.SequencedMap<String, io.anamnesis.api.MetaValue> out = new java.util.LinkedHashMap<>(all);
        out.keySet().removeIf(k -> k.startsWith("split."));
        return java.util.Collections.unmodifiableSequencedMap(out);
    }

    /** The first shard's properties, and where the model's files are: folder, index, shard count. */
    @Override
    public Map<String, String> properties() {
        return properties;
    }

    @Override
    public List<TensorEntry> tensors() {
        return tensors;
    }

    @Override
    public Optional<TensorEntry> tensor(String name) {
        return Optional.ofNullable(byName.get(name));
    }

    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        Shard s = shardOf.get(entry.name());
        if (s == null) throw new IllegalArgumentException("no tensor '" + entry.name() + "' in " + path().orElseThrow());
        return s.archive().data(entry, arena);
    }

    @Override
    public Optional<io.anamnesis.api.StoredRegion> storedRegion(TensorEntry entry) {
        Shard s = shardOf.get(entry.name());
        return s == null ? Optional.empty() : s.archive().storedRegion(entry);
    }

    @Override
    public void close() {
        RuntimeException first = null;
        for (Shard s : shards) {
            try {
                s.archive().close();
            } catch (RuntimeException e) {
                if (first == null) first = e;
                else first.addSuppressed(e);
            }
        }
        if (first != null) throw first;
    }
}
