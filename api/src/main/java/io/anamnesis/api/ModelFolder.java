package io.anamnesis.api;

import io.anamnesis.api.json.Json;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * A Hugging Face model folder opened as one archive: {@code model.safetensors}, or the shards
 * {@code model.safetensors.index.json} names (else every {@code model*.safetensors}), in file
 * name order, as llama.cpp's converter lists them. The archive's {@link TensorArchive#path()}
 * is the first shard, so the files beside it ({@code config.json}, the tokenizer) are the
 * folder's.
 *
 * <p>Deliberately small: the folder work of its own issue (shards, the index, config.json as
 * a sidecar, every weight file name) replaces this class when it lands; until then it is the
 * least that lets {@code amn convert folder/ --to gguf} read one file or a sharded model.
 */
final class ModelFolder {
    static final String INDEX = "model.safetensors.index.json";

    private ModelFolder() {
    }

    static TensorArchive open(Anamnesis amn, Path dir, ParseLimits limits) {
        List<String> parts = parts(dir, limits);
        if (parts.size() == 1) return amn.open(dir.resolve(parts.getFirst()), limits);
        List<TensorArchive> opened = new ArrayList<>();
        try {
            for (String p : parts) opened.add(amn.open(dir.resolve(p), limits));
            return new Shards(opened);
        } catch (RuntimeException e) {
            for (TensorArchive a : opened) a.close();
            throw e;
        }
    }

    private static List<String> parts(Path dir, ParseLimits limits) {
        Path index = dir.resolve(INDEX);
        if (Files.isRegularFile(index)) {
            TreeSet<String> names = new TreeSet<>();
            try {
                ParseLimits.check("size of " + INDEX, Files.size(index), limits.maxHeaderBytes());
                Object json = Json.parse(Files.readString(index, StandardCharsets.UTF_8), limits.maxNestingDepth());
                if (!(Json.member(json, "weight_map").orElse(null) instanceof Map<?, ?> map)) {
                    throw new MalformedFileException(INDEX + " has no weight_map object");
                }
                for (Object v : map.values()) {
                    if (!(v instanceof String s) || s.isEmpty() || s.contains("/") || s.contains("\\") || s.equals("..")) {
                        throw new MalformedFileException(INDEX + " names a shard that is not a file name in its folder: " + v);
                    }
                    names.add(s);
                }
            } catch (IOException e) {
                throw new TensorIOException("cannot read " + index + ": " + e.getMessage(), e);
            } catch (IllegalArgumentException e) {
                throw new MalformedFileException(INDEX + " is not valid JSON: " + e.getMessage(), e);
            }
            for (String n : names) {
                if (!Files.isRegularFile(dir.resolve(n))) {
                    throw new MalformedFileException(INDEX + " names the shard " + n + ", which is not in " + dir);
                }
            }
            if (names.isEmpty()) throw new MalformedFileException(INDEX + " names no shard");
            return List.copyOf(names);
        }
        try (Stream<Path> files = Files.list(dir)) {
            List<String> names = files.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("model") && n.endsWith(".safetensors"))
                    .filter(n -> Files.isRegularFile(dir.resolve(n))).sorted().toList();
            if (names.isEmpty()) {
                throw new TensorIOException(dir + " is a directory, not a tensor file, and not a model folder (no "
                        + "model.safetensors, nor shards named in " + INDEX + ")");
            }
            return names;
        } catch (IOException e) {
            throw new TensorIOException("cannot list " + dir + ": " + e.getMessage(), e);
        }
    }

    /** Shards as one archive: their tensors in shard order; a name in two shards is refused. */
    private static final class Shards implements TensorArchive {
        private final List<TensorArchive> shards;
        private final List<TensorEntry> tensors = new ArrayList<>();
        private final Map<TensorEntry, TensorArchive> owner = new IdentityHashMap<>();
        private final Map<String, TensorEntry> byName = new HashMap<>();

        Shards(List<TensorArchive> shards) {
            this.shards = List.copyOf(shards);
            for (TensorArchive s : shards) {
                for (TensorEntry e : s.tensors()) {
                    if (byName.putIfAbsent(e.name(), e) != null) {
                        throw MalformedFileException.inTensor(e.name(), "stored in two shards of the model folder");
                    }
                    tensors.add(e);
                    owner.put(e, s);
                }
            }
        }

        @Override
        public String format() {
            return shards.getFirst().format();
        }

        @Override
        public Optional<Path> path() {
            return shards.getFirst().path();
        }

        @Override
        public Map<String, String> metadata() {
            return shards.getFirst().metadata();
        }

        @Override
        public Map<String, String> properties() {
            Map<String, String> p = new java.util.LinkedHashMap<>(shards.getFirst().properties());
            p.put("shards", String.valueOf(shards.size()));
            return p;
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
            TensorArchive s = owner.get(entry);
            if (s == null) {
                TensorEntry own = byName.get(entry.name());
                s = own == null ? null : owner.get(own);
                if (s == null) throw new IllegalArgumentException("no tensor " + entry.name() + " in the model folder");
                entry = own;
            }
            return s.data(entry, arena);
        }

        @Override
        public void close() {
            for (TensorArchive s : shards) s.close();
        }
    }
}
