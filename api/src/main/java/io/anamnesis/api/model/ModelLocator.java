package io.anamnesis.api.model;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.SecurityViolationException;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.json.Json;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.stream.Stream;

/**
 * Finds the files of a model from what a user points at, reading directory listings and the
 * index JSON only (model discovery, kept apart from opening files so that another source of
 * files can feed {@link ShardedArchive} the same way):
 *
 * <ul>
 *   <li>a <b>folder</b>: its index ({@code <name>.<ext>.index.json} for an extension of an
 *       installed reader, {@code model.safetensors.index.json} first when there are several,
 *       as transformers prefers safetensors); else one complete set of
 *       {@code -0000N-of-0000M} files; else its one tensor file ({@code model.*} first);</li>
 *   <li>an <b>index JSON</b>: the shards its {@code weight_map} names, in shard (name) order;</li>
 *   <li>one <b>shard</b> ({@code model-00002-of-00004.safetensors}, a GGUF split): the whole
 *       model, through an index beside it that lists it or else its siblings by name; when the
 *       siblings are not there, the file alone with the missing ones noted (a plan that
 *       misses a companion then says to put the shards together);</li>
 *   <li>anything else: the file as itself.</li>
 * </ul>
 *
 * Hidden files (a leading dot: our own temporary files among them) are never model files.
 */
public final class ModelLocator {
    /** The suffix every index file name ends with. */
    public static final String INDEX_SUFFIX = ".index.json";

    private ModelLocator() {
    }

    /**
     * @param tensorExtensions the file extensions of the installed readers, lower case
     * @throws TensorIOException when the path does not exist, a folder holds no tensor file,
     *         or a shard the index lists is missing (naming it)
     * @throws MalformedFileException when an index is not the JSON transformers writes
     * @throws SecurityViolationException when an index names a file outside its folder
     */
    public static ModelLayout locate(Path path, Collection<String> tensorExtensions, ParseLimits limits) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            throw new TensorIOException("no such file: " + path, e);
        } catch (IOException e) {
            // the reader says what is wrong with it
            return ModelLayout.single(path);
        }
        if (a.isDirectory()) return inFolder(path, tensorExtensions, limits);
        if (!a.isRegularFile()) return ModelLayout.single(path);
        String name = fileName(path);
        if (isIndexName(name, tensorExtensions)) return fromIndex(path, limits);
        Optional<ShardName> shard = ShardName.parse(name);
        if (shard.isEmpty() || shard.get().count() == 1) return ModelLayout.single(path);
        Path folder = parentOf(path);
        for (Path index : indexes(folder, tensorExtensions)) {
            ModelLayout byIndex = fromIndex(index, limits);
            if (byIndex.weightMap().containsValue(name)) return byIndex;
        }
        List<Path> siblings = new ArrayList<>();
        List<Path> absent = new ArrayList<>();
        for (int n = 1; n <= shard.get().count(); n++) {
            Path sibling = folder.resolve(shard.get().sibling(n));
            siblings.add(sibling);
            if (n != shard.get().number() && !Files.isRegularFile(sibling)) absent.add(sibling);
        }
        if (absent.isEmpty()) return new ModelLayout(Optional.of(folder), Optional.empty(), siblings, Map.of(), List.of());
        return new ModelLayout(Optional.empty(), Optional.empty(), List.of(path), Map.of(), absent);
    }

    /** {@code model.safetensors.index.json}: a name ending in {@code .<ext>.index.json} for a reader's extension. */
    public static boolean isIndexName(String fileName, Collection<String> tensorExtensions) {
        String n = fileName.toLowerCase(Locale.ROOT);
        if (!n.endsWith(INDEX_SUFFIX)) return false;
        String stem = n.substring(0, n.length() - INDEX_SUFFIX.length());
        int dot = stem.lastIndexOf('.');
        return dot >= 0 && tensorExtensions.contains(stem.substring(dot + 1));
    }

    /** Whether a file name has the extension of an installed reader (a tensor file). */
    public static boolean isTensorFileName(String fileName, Collection<String> tensorExtensions) {
        int dot = fileName.lastIndexOf('.');
        return dot > 0 && tensorExtensions.contains(fileName.substring(dot + 1).toLowerCase(Locale.ROOT));
    }

    private static ModelLayout inFolder(Path folder, Collection<String> tensorExtensions, ParseLimits limits) {
        List<Path> indexes = indexes(folder, tensorExtensions);
        if (!indexes.isEmpty()) return fromIndex(indexes.getFirst(), limits);
        List<Path> files = regularFiles(folder);
        // complete sets of -0000N-of-0000M files, by prefix, count and extension
        Map<String, TreeMap<Integer, Path>> sets = new TreeMap<>(MODEL_FIRST);
        Map<String, ShardName> setNames = new LinkedHashMap<>();
        List<Path> singles = new ArrayList<>();
        for (Path f : files) {
            String name = fileName(f);
            if (!isTensorFileName(name, tensorExtensions)) continue;
            Optional<ShardName> s = ShardName.parse(name);
            if (s.isEmpty() || s.get().count() == 1) {
                singles.add(f);
                continue;
            }
            String key = s.get().prefix() + "-of-" + s.get().count() + "." + s.get().extension();
            sets.computeIfAbsent(key, k -> new TreeMap<>()).put(s.get().number(), f);
            setNames.putIfAbsent(key, s.get());
        }
        List<String> incomplete = new ArrayList<>();
        for (var e : sets.entrySet()) {
            ShardName s = setNames.get(e.getKey());
            if (e.getValue().size() == s.count()) {
                return new ModelLayout(Optional.of(folder), Optional.empty(), List.copyOf(e.getValue().values()),
                        Map.of(), List.of());
            }
            for (int n = 1; n <= s.count(); n++) {
                if (!e.getValue().containsKey(n)) incomplete.add(s.sibling(n));
            }
        }
        List<Path> models = singles.stream().filter(f -> fileName(f).startsWith("model.")).toList();
        if (singles.size() == 1 || models.size() == 1) {
            Path only = singles.size() == 1 ? singles.getFirst() : models.getFirst();
            return new ModelLayout(Optional.of(folder), Optional.empty(), List.of(only), Map.of(), List.of());
        }
        if (!singles.isEmpty()) {
            throw new TensorIOException("folder " + folder + " holds several tensor files and no index ("
                    + String.join(", ", singles.stream().map(ModelLocator::fileName).limit(8).toList())
                    + (singles.size() > 8 ? ", ..." : "") + "); open one of them");
        }
        if (!incomplete.isEmpty()) {
            throw new TensorIOException("folder " + folder + " holds an incomplete set of shards: missing "
                    + String.join(", ", incomplete.stream().limit(8).toList()) + (incomplete.size() > 8 ? ", ..." : ""));
        }
        throw new TensorIOException("folder " + folder + " holds no tensor file (no file ending in ."
                + String.join(", .", new TreeSet<>(tensorExtensions)) + " and no " + "<name>.<ext>" + INDEX_SUFFIX + ")");
    }

    /** Names starting with {@code model.} or {@code model-} first (transformers' safetensors names), then by name. */
    private static final Comparator<String> MODEL_FIRST = (a, b) -> {
        int byPrefix = Boolean.compare(!transformersName(a), !transformersName(b));
        return byPrefix != 0 ? byPrefix : a.compareTo(b);
    };

    private static boolean transformersName(String n) {
        return n.startsWith("model.") || n.startsWith("model-");
    }

    // Comparators written out, not Comparator.comparing(...): a lambda of ours comes from the
    // AOT cache, the comparators the JDK's Comparator spins at run time do not (a few ms of
    // every remember's start-up, in the class-load log).
    private static final Comparator<Path> BY_FILE_NAME = (a, b) -> fileName(a).compareTo(fileName(b));

    /** The index files of a folder, the preferred one first. */
    static List<Path> indexes(Path folder, Collection<String> tensorExtensions) {
        List<Path> out = new ArrayList<>();
        for (Path f : regularFiles(folder)) {
            if (isIndexName(fileName(f), tensorExtensions)) out.add(f);
        }
        out.sort((a, b) -> MODEL_FIRST.compare(fileName(a), fileName(b)));
        return out;
    }

    /** The regular, visible files of a folder, by name. */
    static List<Path> regularFiles(Path folder) {
        try (Stream<Path> s = Files.list(folder)) {
            return s.filter(p -> !fileName(p).startsWith(".") && Files.isRegularFile(p))
                    .sorted(BY_FILE_NAME).toList();
        } catch (IOException e) {
            throw new TensorIOException("cannot list folder " + folder + ": " + e.getMessage(), e);
        }
    }

    /**
     * The layout an index names: transformers' {@code {"metadata": {...}, "weight_map":
     * {tensor: file}}}, the files in the index's folder, in name order (which is shard order
     * for {@code -0000N-of-0000M} names).
     */
    static ModelLayout fromIndex(Path index, ParseLimits limits) {
        String name = fileName(index);
        String text;
        try {
            ParseLimits.check("size of " + name, Files.size(index), limits.maxHeaderBytes());
            text = Files.readString(index, StandardCharsets.UTF_8);
        } catch (LimitExceededException e) {
            throw e;
        } catch (CharacterCodingException e) {
            throw new MalformedFileException(name + " is not valid UTF-8");
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + index + ": " + e.getMessage(), e);
        }
        Object root;
        try {
            root = Json.parse(text, 64);
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException(name + " is not valid JSON: " + e.getMessage());
        }
        if (!(Json.member(root, "weight_map").orElse(null) instanceof Map<?, ?> map)) {
            throw new MalformedFileException(name + " has no weight_map object (an index maps each tensor to its shard:"
                    + " {\"weight_map\": {\"tensor\": \"model-00001-of-00002.safetensors\"}})");
        }
        if (map.isEmpty()) throw new MalformedFileException(name + " has an empty weight_map: it names no shard");
        ParseLimits.check("tensors named by " + name, map.size(), limits.maxTensors());
        Path folder = parentOf(index);
        Map<String, String> weightMap = new LinkedHashMap<>();
        Set<String> files = new TreeSet<>();
        for (var e : map.entrySet()) {
            if (!(e.getValue() instanceof String file)) {
                throw new MalformedFileException(name + ": weight_map entry '" + e.getKey() + "' is not a file name");
            }
            if (file.isEmpty() || file.contains("/") || file.contains("\\") || file.equals("..") || file.equals(".")
                    || file.indexOf('\0') >= 0) {
                throw new SecurityViolationException(name + ": weight_map entry '" + e.getKey() + "' names '" + file
                        + "', not a file in the index's folder");
            }
            weightMap.put((String) e.getKey(), file);
            files.add(file);
        }
        List<Path> shards = new ArrayList<>();
        List<String> missing = new ArrayList<>();
        for (String f : files) {
            Path p = folder.resolve(f);
            if (!Files.isRegularFile(p)) missing.add(f);
            shards.add(p);
        }
        if (!missing.isEmpty()) {
            throw new TensorIOException("shard " + String.join(", ", missing.stream().limit(8).toList())
                    + (missing.size() > 8 ? " (and " + (missing.size() - 8) + " more)" : "") + " listed in " + name
                    + " is missing from " + folder + " (an interrupted download? fetch "
                    + (missing.size() == 1 ? "it" : "them") + " again)");
        }
        return new ModelLayout(Optional.of(folder), Optional.of(index), shards, weightMap, List.of());
    }

    static String fileName(Path p) {
        Path n = p.getFileName();
        return n == null ? p.toString() : n.toString();
    }

    private static Path parentOf(Path file) {
        Path parent = file.toAbsolutePath().getParent();
        return parent == null ? file.toAbsolutePath() : parent;
    }
}
