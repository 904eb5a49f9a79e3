package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.ClaimContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * The companion files of a Hugging Face model folder ({@code config.json}, the tokenizer's
 * files, the shard index), each read whole and bounded by {@link ParseLimits#maxHeaderBytes()}.
 * The folder is the archive's path when the model was opened as a folder (its
 * {@code ShardedArchive}), else the folder its one file is in.
 */
record ModelFiles(TensorArchive archive, ParseLimits limits) {

    Optional<Path> folder() {
        return archive.path().map(p -> Files.isDirectory(p) ? p.toAbsolutePath() : p.toAbsolutePath().getParent());
    }

    boolean has(String name) {
        return folder().map(d -> Files.isRegularFile(d.resolve(name))).orElse(false);
    }

    /** A JSON file as an object (Map, in order); empty when absent. */
    Optional<Map<?, ?>> json(String name) {
        Optional<String> text = new ClaimContext(archive, limits).sidecar(name);
        if (text.isEmpty()) return Optional.empty();
        Object v;
        try {
            v = Json.parse(text.get(), limits.maxNestingDepth());
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException(name + " is not valid JSON: " + e.getMessage(), e);
        }
        if (!(v instanceof Map<?, ?> m)) throw new MalformedFileException(name + " is not a JSON object");
        return Optional.of(m);
    }

    /** A binary file whole; empty when absent. */
    Optional<byte[]> bytes(String name) {
        Optional<Path> dir = folder();
        if (dir.isEmpty() || !Files.isRegularFile(dir.get().resolve(name))) return Optional.empty();
        Path file = dir.get().resolve(name);
        try {
            ParseLimits.check("size of " + name, Files.size(file), limits.maxHeaderBytes());
            return Optional.of(Files.readAllBytes(file));
        } catch (LimitExceededException e) {
            throw e;
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + name + " beside the model: " + e.getMessage(), e);
        }
    }
}
