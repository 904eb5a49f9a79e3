package io.anamnesis.api.model;

import java.nio.file.Path;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The files of one model, found without opening any tensor file: what
 * {@link ModelLocator#locate} makes of a folder, an index JSON, one shard or a plain file.
 *
 * @param folder    the model folder, when the input was one (or an index or a shard in it):
 *                  its {@code config.json} is the model's config and its other files go
 *                  with the model; empty for a file opened as itself
 * @param index     the index JSON that listed the shards, when there is one
 * @param shards    the tensor files, in shard order (at least one)
 * @param weightMap the index's {@code weight_map}: tensor name to shard file name, in the
 *                  index's order; empty without an index
 * @param absent    sibling shards that a shard's own name promises but that are not there
 *                  (the file was opened alone); empty otherwise
 */
public record ModelLayout(Optional<Path> folder, Optional<Path> index, List<Path> shards,
                          Map<String, String> weightMap, List<Path> absent) {
    public ModelLayout {
        if (shards.isEmpty()) throw new IllegalArgumentException("a model has at least one file");
        shards = List.copyOf(shards);
        weightMap = Collections.unmodifiableMap(new LinkedHashMap<>(weightMap));
        absent = List.copyOf(absent);
    }

    /** One file, opened as itself. */
    public static ModelLayout single(Path file) {
        return new ModelLayout(Optional.empty(), Optional.empty(), List.of(file), Map.of(), List.of());
    }

    /** Whether this is a model folder (or its index or a shard), not a file opened as itself. */
    public boolean isFolder() {
        return folder.isPresent();
    }

    /** Whether this is one file with nothing around it: it opens as the format reader's own archive. */
    public boolean isSingleFile() {
        return folder.isEmpty() && shards.size() == 1 && absent.isEmpty();
    }
}
