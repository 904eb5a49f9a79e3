package io.anamnesis.cli;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;

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

/**
 * A sharded model read remotely from its index: the headers of every shard as one archive,
 * tensors in shard order, metadata from the first shard. Checked against the index: a
 * tensor in two shards, or one the index places in a shard that lacks it, is malformed. Like
 * each shard, it has no tensor data.
 */
final class RemoteShards implements TensorArchive {
    private final List<TensorArchive> shards;
    private final List<TensorEntry> tensors;
    private final Map<String, TensorArchive> owner = new HashMap<>();
    private final Map<String, String> properties;

    /**
     * @param index  the index's file name
     * @param names  the shards' names, in the order of {@code shards}
     * @param placed the tensors the index places in each shard
     */
    RemoteShards(String index, List<String> names, List<TensorArchive> shards, Map<String, List<String>> placed) {
        this.shards = List.copyOf(shards);
        List<TensorEntry> all = new ArrayList<>();
        Map<String, String> shardOf = new HashMap<>();
        for (int i = 0; i < shards.size(); i++) {
            TensorArchive shard = shards.get(i);
            String name = names.get(i);
            for (TensorEntry e : shard.tensors()) {
                String earlier = shardOf.putIfAbsent(e.name(), name);
                if (earlier != null) {
                    throw MalformedFileException.inTensor(e.name(), "is in two shards, " + earlier + " and " + name);
                }
                owner.put(e.name(), shard);
                all.add(e);
            }
        }
        placed.forEach((shard, list) -> {
            for (String t : list) {
                if (!shard.equals(shardOf.get(t))) {
                    throw MalformedFileException.inTensor(t, index + " places it in " + shard + ", which lacks it");
                }
            }
        });
        this.tensors = List.copyOf(all);
        Map<String, String> p = new LinkedHashMap<>();
        p.put("index", index);
        p.put("shards", names.size() + " (" + String.join(", ", names) + ")");
        this.properties = Collections.unmodifiableMap(p);
    }

    @Override
    public String format() {
        return shards.getFirst().format();
    }

    @Override
    public Optional<Path> path() {
        return Optional.empty();
    }

    @Override
    public Map<String, String> metadata() {
        return shards.getFirst().metadata();
    }

    @Override
    public Map<String, Object> structuredMetadata() {
        return shards.getFirst().structuredMetadata();
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
    public Optional<TensorEntry> tensor(String name) {
        TensorArchive a = owner.get(name);
        return a == null ? Optional.empty() : a.tensor(name);
    }

    /** The owning shard's answer: a headers-only shard refuses with a typed error. */
    @Override
    public MemorySegment data(TensorEntry entry, Arena arena) {
        TensorArchive a = owner.get(entry.name());
        if (a == null) throw new IllegalArgumentException("not a tensor of this model: " + entry.name());
        return a.data(entry, arena);
    }

    @Override
    public void close() {
        for (TensorArchive s : shards) s.close();
    }
}
