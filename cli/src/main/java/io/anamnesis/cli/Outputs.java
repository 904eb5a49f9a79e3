package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.model.ByteSize;
import io.anamnesis.api.model.ModelFolderWriter;
import io.anamnesis.api.model.ModelLayout;
import io.anamnesis.api.model.ModelOutput;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.OptionalLong;

/** Where {@code remember} and {@code convert} write. */
final class Outputs {
    private Outputs() {
    }

    /** {@code model-bf16.safetensors} for {@code model.safetensors} recovered to BF16. */
    static String derivedName(InputRef in, String suffix, String extension) {
        return in.displayName() + "-" + suffix + "." + extension;
    }

    static boolean isStandardOutput(Path output) {
        return output.toString().equals(AtomicOutput.STANDARD_OUTPUT);
    }

    /**
     * The output path: {@code -o} when given ({@code -} for standard output; a folder gets the
     * derived name inside it); otherwise the derived name beside the input, or in the current
     * folder for an {@code ollama:} model (never inside the Ollama store).
     *
     * @param command {@code remember} or {@code convert}, for the advice in usage errors
     * @throws UsageException when the output is empty, the input itself, something that
     *                        cannot be written (a directory, socket, block device), or a file
     *                        name whose extension names another format than the writer's
     */
    static Path choose(InputRef in, Optional<String> requested, String suffix, FormatWriter writer, Anamnesis amn,
                       String command) {
        return choose(in, Optional.empty(), requested, suffix, writer, amn, command);
    }

    /**
     * {@link #choose(InputRef, Optional, String, FormatWriter, Anamnesis, String)} for an input
     * whose files are {@code model}: the output may not replace one of them either
     * ({@link #refuseModelFiles}).
     */
    static Path choose(InputRef in, Optional<ModelFiles> model, Optional<String> requested, String suffix, FormatWriter writer,
                       Anamnesis amn, String command) {
        String name = derivedName(in, suffix, writer.fileExtensions().getFirst());
        Path out;
        if (requested.isPresent()) {
            String r = requested.get();
            if (r.isEmpty()) throw new UsageException("-o needs a path (or '-' for standard output)");
            if (r.equals(AtomicOutput.STANDARD_OUTPUT)) return Path.of(r);
            try {
                out = Path.of(r);
            } catch (InvalidPathException e) {
                throw new UsageException("not a valid output path: " + r + " (" + e.getReason() + ")");
            }
            if (Files.isDirectory(out)) {
                out = out.resolve(name);
            } else if (r.endsWith("/") || r.endsWith(java.io.File.separator)) {
                // Path.of drops the separator: "newdir/" became a file named newdir
                throw new TensorIOException("cannot write into " + r + ": folder " + out.toAbsolutePath().normalize()
                        + " does not exist (a " + writer.format() + " output is named inside an existing folder)");
            }
        } else {
            out = in.fromOllama() ? Path.of(name) : in.file().resolveSibling(name);
        }
        refuseInput(in.file(), out);
        if (model.isPresent()) refuseModelFiles(model.get(), out, "output", writer.fileExtensions());
        Optional<String> refusal = AtomicOutput.refusal(out);
        if (refusal.isPresent()) throw new UsageException(refusal.get());
        if (!AtomicOutput.isStream(out)) {
            refuseOtherFormat(out, writer, amn, command, in);
            Path dir = out.toAbsolutePath().getParent();
            if (dir != null && !Files.isDirectory(dir)) {
                throw new TensorIOException("cannot write " + out + ": " + (Files.exists(dir) ? dir + " is a file, not a folder"
                        : "folder " + dir + " does not exist"));
            }
        }
        return out;
    }

    /**
     * How the output is laid out. A model folder when {@code --max-shard-size} is given, when
     * {@code -o} ends with a separator and does not exist yet (or, for a model input, is an
     * existing folder), or when the input is a model folder (its index, a shard) and {@code -o}
     * does not name a file of the writer's extension or standard output (those merge the
     * shards into one file); the format's own splits with {@code --split-max-size}; else one file.
     *
     * @throws UsageException for a size that is no size, or options that do not go together
     */
    static ModelOutput shape(ModelLayout layout, Optional<String> requested, String maxShardSize, String splitMaxSize,
                             FormatWriter writer, String command) {
        OptionalLong maxShard = size("--max-shard-size", maxShardSize);
        OptionalLong split = size("--split-max-size", splitMaxSize);
        if (split.isPresent()) {
            if (!writer.writesSplits()) {
                throw new UsageException("--split-max-size writes a format's own splits (GGUF's gguf-split layout); "
                        + writer.format() + " has none: use --max-shard-size for a model folder of shards");
            }
            if (maxShard.isPresent()) throw new UsageException("--split-max-size and --max-shard-size do not go together");
            if (requested.isPresent() && requested.get().equals(AtomicOutput.STANDARD_OUTPUT)) {
                throw new UsageException("splits are several files: name the first with -o, not '-'");
            }
            return new ModelOutput.Splits(split.getAsLong());
        }
        if (writer.writesSplits()) {
            if (maxShard.isPresent()) {
                throw new UsageException(writer.format() + " is split with --split-max-size (its own split layout), "
                        + "not --max-shard-size");
            }
            return ModelOutput.FILE;
        }
        boolean namesFile = false;
        boolean namesFolder = false;
        if (requested.isPresent()) {
            String r = requested.get();
            namesFile = r.equals(AtomicOutput.STANDARD_OUTPUT) || hasExtension(r, writer);
            namesFolder = !namesFile && (r.endsWith("/") || r.endsWith(java.io.File.separator)) && !Files.exists(Path.of(r))
                    || layout.isFolder() && Files.isDirectory(Path.of(r));
        }
        if (maxShard.isPresent() && namesFile) {
            throw new UsageException("--max-shard-size writes a model folder, but -o names a file (" + requested.get()
                    + "); name a folder, or leave --max-shard-size out for one file");
        }
        if (maxShard.isPresent() || namesFolder || (layout.isFolder() && !namesFile)) {
            return new ModelOutput.Folder(maxShard.orElse(ModelFolderWriter.DEFAULT_MAX_SHARD_BYTES));
        }
        return ModelOutput.FILE;
    }

    private static OptionalLong size(String option, String value) {
        if (value == null) return OptionalLong.empty();
        try {
            return OptionalLong.of(ByteSize.parse(value));
        } catch (IllegalArgumentException e) {
            throw new UsageException(option + ": " + e.getMessage());
        }
    }

    private static boolean hasExtension(String path, FormatWriter writer) {
        int dot = path.lastIndexOf('.');
        int slash = Math.max(path.lastIndexOf('/'), path.lastIndexOf(java.io.File.separatorChar));
        return dot > slash + 1 && writer.fileExtensions().contains(path.substring(dot + 1).toLowerCase(Locale.ROOT));
    }

    /**
     * The model folder to write: {@code -o} when given (an existing folder that is not empty
     * gets the derived name inside it); otherwise {@code <model>-<suffix>} beside the input's
     * model folder, or beside the input file.
     *
     * @throws UsageException when the output is the input folder or holds its files, exists as
     *                        a file, or is a folder that is not empty
     */
    static Path chooseFolder(InputRef in, ModelLayout layout, Optional<String> requested, String suffix) {
        String model = layout.folder().map(f -> String.valueOf(f.toAbsolutePath().normalize().getFileName()))
                .orElse(in.displayName());
        String name = model + "-" + suffix;
        Path out;
        if (requested.isPresent()) {
            String r = requested.get();
            if (r.isEmpty()) throw new UsageException("-o needs a path");
            try {
                out = Path.of(r);
            } catch (InvalidPathException e) {
                throw new UsageException("not a valid output path: " + r + " (" + e.getReason() + ")");
            }
            if (Files.isDirectory(out) && AtomicOutput.folderRefusal(out).isPresent()) out = out.resolve(name);
        } else if (layout.folder().isPresent()) {
            out = layout.folder().get().toAbsolutePath().normalize().resolveSibling(name);
        } else {
            out = in.fromOllama() ? Path.of(name) : in.file().resolveSibling(name);
        }
        Path abs = out.toAbsolutePath().normalize();
        for (Path p : layout.folder().map(List::of).orElse(layout.shards())) {
            if (abs.equals(p.toAbsolutePath().normalize())) {
                throw new UsageException("the output " + out + " is the input itself; choose another with -o");
            }
        }
        Path parent = abs.getParent();
        if (parent != null && !Files.isDirectory(parent)) {
            throw new TensorIOException("cannot write " + out + ": folder " + parent + " does not exist");
        }
        Optional<String> refusal = AtomicOutput.folderRefusal(out);
        if (refusal.isPresent()) throw new UsageException(refusal.get() + " (a model folder is written whole, into a new or empty folder)");
        return out;
    }

    /** {@code remember -o x.gguf} would write safetensors bytes under a GGUF name. */
    private static void refuseOtherFormat(Path out, FormatWriter writer, Anamnesis amn, String command, InputRef in) {
        Path fileName = out.getFileName();
        if (fileName == null) return;
        String n = fileName.toString();
        int dot = n.lastIndexOf('.');
        if (dot <= 0) return;
        String ext = n.substring(dot + 1).toLowerCase(Locale.ROOT);
        if (writer.fileExtensions().contains(ext)) return;
        Optional<FormatWriter> other = amn.writers().stream().filter(w -> w.fileExtensions().contains(ext)).findFirst();
        String writes = command + " writes " + writer.format();
        if (other.isPresent()) {
            String advice = command.equals("remember")
                    ? "amn convert " + in.reference() + " --to " + other.get().format() + " -o " + out
                    : "--to " + other.get().format();
            throw new UsageException(out + " names a " + other.get().format() + " file, but " + writes
                    + "; use '" + advice + "'");
        }
        var reader = amn.readers().stream().filter(r -> r.fileExtensions().contains(ext)).findFirst();
        if (reader.isPresent()) {
            throw new UsageException(out + " names a " + reader.get().format() + " file, but " + writes
                    + " (no installed writer makes " + reader.get().format() + "); name it ." + writer.fileExtensions().getFirst());
        }
    }

    /**
     * The files an input model consists of: its tensor files and index, and the folder whose
     * other files (config.json, the tokenizer, ...) go with it.
     */
    record ModelFiles(Optional<Path> folder, List<Path> files) {
        static ModelFiles of(ModelLayout layout) {
            List<Path> files = new java.util.ArrayList<>(layout.shards());
            layout.index().ifPresent(files::add);
            return new ModelFiles(layout.folder(), files);
        }

        /** A Hugging Face folder read by an exporter: every file in it goes with the model. */
        static ModelFiles folder(Path folder) {
            return new ModelFiles(Optional.of(folder), List.of());
        }
    }

    /**
     * Refuses a file to write ({@code what}: the output, the report) that would replace a file
     * of the input model: one of its tensor files or its index, or an existing file in its
     * folder, unless that file has one of {@code replaceable} extensions (an earlier output of
     * the same format beside the model may be written again). {@code -o} naming a shard, or
     * the folder's config.json, replaced it with exit 0, and the model no longer opened.
     */
    static void refuseModelFiles(ModelFiles model, Path target, String what, java.util.Collection<String> replaceable) {
        if (AtomicOutput.isStream(target) || !Files.exists(target)) return;
        String option = what.equals("output") ? "-o" : "--" + what;
        for (Path f : model.files()) {
            if (sameFile(f, target)) {
                throw new UsageException("the " + what + " " + target + " is a file of the input model (" + f.getFileName()
                        + "); choose another with " + option);
            }
        }
        Path parent = target.toAbsolutePath().normalize().getParent();
        if (model.folder().isEmpty() || parent == null || !sameFile(model.folder().get(), parent)) return;
        String name = String.valueOf(target.getFileName());
        int dot = name.lastIndexOf('.');
        String ext = dot < 0 ? "" : name.substring(dot + 1).toLowerCase(Locale.ROOT);
        if (!replaceable.contains(ext)) {
            throw new UsageException("the " + what + " " + target + " would replace " + name + " of the input model folder; "
                    + "choose another with " + option);
        }
    }

    private static boolean sameFile(Path a, Path b) {
        try {
            return Files.exists(a) && Files.exists(b) ? Files.isSameFile(a, b)
                    : a.toAbsolutePath().normalize().equals(b.toAbsolutePath().normalize());
        } catch (IOException e) {
            return false;
        }
    }

    private static void refuseInput(Path input, Path output) {
        if (sameFile(input, output)) throw new UsageException("the output " + output + " is the input itself; choose another with -o");
    }
}
