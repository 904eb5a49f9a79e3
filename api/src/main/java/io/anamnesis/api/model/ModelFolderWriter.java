package io.anamnesis.api.model;

import io.anamnesis.api.DType;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.SecurityViolationException;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.ProgressListener;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.write.AtomicOutput;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.function.UnaryOperator;

/**
 * Writes a model folder as transformers' {@code save_pretrained} lays one out: the tensors in
 * shards of at most a given size ({@code model-00001-of-00004.safetensors}; a single shard is
 * {@code model.safetensors}), the index {@code model.safetensors.index.json} with
 * {@code metadata.total_size} and a {@code weight_map} of every tensor, and, from the input's
 * model folder, {@code config.json} (rewritten by {@link ConfigJson} when anything was
 * recovered) and every other file (tokenizer, chat template, generation config, model card,
 * licence) copied unchanged. Not copied: the input's shards and index, other tensor files and
 * indexes (a folder often holds the same weights in a second format, quantized as well), and
 * sub-folders.
 *
 * <p>The folder is built beside the target and renamed into place at the end
 * ({@link AtomicOutput#writeFolder}): it appears complete or not at all. Shards are written
 * one after another through the format's writer, so memory stays what one file's write needs.
 */
public final class ModelFolderWriter {
    /** transformers' default {@code max_shard_size}, "5GB". */
    public static final long DEFAULT_MAX_SHARD_BYTES = 5_000_000_000L;

    /** The file transformers keeps a model's config in. */
    public static final String CONFIG = "config.json";

    private ModelFolderWriter() {
    }

    /**
     * What was written.
     *
     * @param folder the model folder
     * @param shards the shard file names, in order
     * @param index  the index file name, when there are several shards
     * @param copied the files copied (or rewritten) from the input's folder
     */
    public record Written(Path folder, List<String> shards, Optional<String> index, List<String> copied) {
        public Written {
            shards = List.copyOf(shards);
            copied = List.copyOf(copied);
        }
    }

    /**
     * The tensors of each shard, in order: a shard takes tensors until the next would take it
     * past {@code maxBytes}; a tensor larger than that gets a shard of its own (huggingface_hub's
     * {@code split_state_dict_into_shards}, except that file order is kept: the hub files an
     * oversized tensor before the shard that was filling).
     */
    public static List<List<PlannedTensor>> partition(List<PlannedTensor> tensors, long maxBytes) {
        if (maxBytes < 1) throw new IllegalArgumentException("a shard holds at least one byte");
        List<List<PlannedTensor>> out = new ArrayList<>();
        List<PlannedTensor> current = new ArrayList<>();
        long size = 0;
        for (PlannedTensor t : tensors) {
            if (!current.isEmpty() && (t.byteSize() > maxBytes || size + t.byteSize() > maxBytes)) {
                out.add(current);
                current = new ArrayList<>();
                size = 0;
            }
            current.add(t);
            size += t.byteSize();
        }
        if (!current.isEmpty() || out.isEmpty()) out.add(current);
        return out;
    }

    /** {@code model-00001-of-00004.safetensors}, or {@code model.safetensors} for one shard. */
    public static String shardName(int n, int count, String extension) {
        return count == 1 ? "model." + extension : ShardName.of("model", n, count, extension);
    }

    /**
     * Writes {@code plan} as a model folder at {@code target}.
     *
     * @param input            the input's files, whose model folder's other files go along
     * @param tensorExtensions extensions of tensor files, which are not copied
     * @param recoveredTo      the dtype recovered tensors were written in, when any was:
     *                         {@code config.json} then loses its quantization config and gets
     *                         that {@code torch_dtype}; otherwise it is copied unchanged
     * @throws io.anamnesis.api.AnamnesisException as the writer, or a {@link TensorIOException};
     *         no folder is left behind
     */
    public static Written write(OutputPlan plan, FormatWriter writer, Path target, long maxShardBytes,
                                Optional<ModelLayout> input, Collection<String> tensorExtensions,
                                Optional<DType> recoveredTo, WriteOptions options) {
        return writeFolder(plan, writer, target, maxShardBytes, input, tensorExtensions,
                recoveredTo.map(d -> text -> ConfigJson.rewrite(text, torchName(d))), options);
    }

    /**
     * Writes a quantized model's {@code plan} (what {@code forget} makes) as a model folder at
     * {@code target}, as {@link #write(OutputPlan, FormatWriter, Path, long, Optional, Collection, Optional, WriteOptions)}
     * does, except for {@code config.json}: its {@code quantization_config} becomes the
     * quantizer's ({@link ConfigJson#quantized}), which is where transformers and vLLM look
     * for it in a folder.
     *
     * @param quantizationConfig the quantizer's {@code quantization_config}, JSON, when it has one
     */
    public static Written writeQuantized(OutputPlan plan, FormatWriter writer, Path target, long maxShardBytes,
                                         Optional<ModelLayout> input, Collection<String> tensorExtensions,
                                         Optional<String> quantizationConfig, WriteOptions options) {
        return writeFolder(plan, writer, target, maxShardBytes, input, tensorExtensions,
                Optional.of(text -> ConfigJson.quantized(text, quantizationConfig)), options);
    }

    /** @param configEdit how {@code config.json}'s text changes; without one it is copied unchanged */
    private static Written writeFolder(OutputPlan plan, FormatWriter writer, Path target, long maxShardBytes,
                                       Optional<ModelLayout> input, Collection<String> tensorExtensions,
                                       Optional<UnaryOperator<String>> configEdit, WriteOptions options) {
        String ext = writer.fileExtensions().getFirst();
        List<List<PlannedTensor>> parts = partition(plan.tensors(), maxShardBytes);
        int count = parts.size();
        List<String> names = new ArrayList<>();
        for (int i = 0; i < count; i++) names.add(shardName(i + 1, count, ext));
        Optional<String> index = count == 1 ? Optional.empty() : Optional.of("model." + ext + ModelLocator.INDEX_SUFFIX);
        List<Path> companions = input.flatMap(ModelLayout::folder).map(f -> companions(f, input.get(), tensorExtensions))
                .orElse(List.of());
        List<String> copied = new ArrayList<>();
        WriteOptions shared = new WriteOptions(options.threads(), ProgressListener.overFiles(options.progress(), plan.dataBytes()));
        AtomicOutput.writeFolder(target, folder -> {
            for (int i = 0; i < count; i++) {
                writer.write(new OutputPlan(plan.source(), plan.metadata(), parts.get(i), plan.typed()),
                        folder.resolve(names.get(i)), shared);
            }
            if (index.isPresent()) {
                Files.writeString(folder.resolve(index.get()), indexJson(parts, names, plan.dataBytes()), StandardCharsets.UTF_8);
            }
            for (Path c : companions) {
                String name = ModelLocator.fileName(c);
                if (name.equals(CONFIG) && configEdit.isPresent()) {
                    Files.writeString(folder.resolve(name), configEdit.get().apply(readConfig(c)), StandardCharsets.UTF_8);
                } else {
                    Files.copy(c, folder.resolve(name));
                }
                copied.add(name);
            }
        });
        return new Written(target, names, index, copied);
    }

    /**
     * The files of the input's folder that go with the model (see the class comment), each
     * checked by {@link #requireInside}.
     */
    static List<Path> companions(Path folder, ModelLayout input, Collection<String> tensorExtensions) {
        Set<String> own = new HashSet<>();
        for (Path p : input.shards()) own.add(ModelLocator.fileName(p));
        input.index().ifPresent(p -> own.add(ModelLocator.fileName(p)));
        List<Path> out = new ArrayList<>();
        for (Path f : ModelLocator.regularFiles(folder)) {
            String name = ModelLocator.fileName(f);
            if (own.contains(name) || ModelLocator.isTensorFileName(name, tensorExtensions)
                    || ModelLocator.isIndexName(name, tensorExtensions)) {
                continue;
            }
            requireInside(folder, f);
            out.add(f);
        }
        return out;
    }

    /**
     * Refuses a companion that is a symbolic link to a file outside the model: a folder cloned
     * or unpacked from elsewhere whose {@code tokenizer.model} links to {@code /etc/passwd} had
     * that file copied into the output, which its owner may then upload. A link may point
     * inside the folder, or, in the Hugging Face cache's layout
     * ({@code <repo>/snapshots/<revision>/<file>} linking to {@code <repo>/blobs/<hash>}), inside
     * the repository's folder.
     *
     * @throws SecurityViolationException naming the link and where it leads
     */
    static void requireInside(Path folder, Path file) {
        if (!Files.isSymbolicLink(file)) return;
        try {
            Path target = file.toRealPath();
            Path root = folder.toRealPath();
            Path parent = folder.toAbsolutePath().normalize().getParent();
            if (parent != null && parent.getFileName() != null && parent.getFileName().toString().equals("snapshots")
                    && parent.getParent() != null) {
                root = parent.getParent().toRealPath();
            }
            if (!target.startsWith(root)) {
                throw new SecurityViolationException(ModelLocator.fileName(file) + " in " + folder + " is a link to " + target
                        + ", outside the model folder: it is not copied into the output; copy the file in, or remove the link");
            }
        } catch (IOException e) {
            throw new TensorIOException("cannot follow the link " + file + ": " + e.getMessage(), e);
        }
    }

    private static String readConfig(Path file) throws IOException {
        long size = Files.size(file);
        ParseLimits.check("size of " + CONFIG, size, ParseLimits.defaults().maxHeaderBytes());
        return Files.readString(file, StandardCharsets.UTF_8);
    }

    /** torch's name of a dtype, as {@code config.json} spells {@code torch_dtype}. */
    public static String torchName(DType dtype) {
        if (dtype.equals(DType.BF16)) return "bfloat16";
        if (dtype.equals(DType.F16)) return "float16";
        if (dtype.equals(DType.F32)) return "float32";
        throw new IllegalArgumentException("no torch_dtype for " + dtype);
    }

    /**
     * The index as transformers writes it: {@code json.dumps(index, indent=2, sort_keys=True)}
     * and a newline, so keys in code point order and non-ASCII escaped.
     */
    static String indexJson(List<List<PlannedTensor>> parts, List<String> names, long totalSize) {
        Map<String, String> weightMap = new TreeMap<>(ModelFolderWriter::byCodePoint);
        for (int i = 0; i < parts.size(); i++) {
            for (PlannedTensor t : parts.get(i)) weightMap.put(t.name(), names.get(i));
        }
        StringBuilder sb = new StringBuilder(64 + 64 * weightMap.size());
        sb.append("{\n  \"metadata\": {\n    \"total_size\": ").append(totalSize).append("\n  },\n  \"weight_map\": {");
        boolean first = true;
        for (var e : weightMap.entrySet()) {
            sb.append(first ? "\n" : ",\n").append("    ");
            pythonString(sb, e.getKey());
            sb.append(": ");
            pythonString(sb, e.getValue());
            first = false;
        }
        sb.append(first ? "}\n}\n" : "\n  }\n}\n");
        return sb.toString();
    }

    private static int byCodePoint(String a, String b) {
        return java.util.Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray());
    }

    /** A string as Python's json.dumps writes it with ensure_ascii. */
    private static void pythonString(StringBuilder sb, String s) {
        sb.append('"');
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            switch (c) {
                case '"' -> sb.append("\\\"");
                case '\\' -> sb.append("\\\\");
                case '\n' -> sb.append("\\n");
                case '\r' -> sb.append("\\r");
                case '\t' -> sb.append("\\t");
                case '\b' -> sb.append("\\b");
                case '\f' -> sb.append("\\f");
                default -> {
                    if (c < 0x20 || c > 0x7E) sb.append(String.format("\\u%04x", (int) c));
                    else sb.append(c);
                }
            }
        }
        sb.append('"');
    }
}
