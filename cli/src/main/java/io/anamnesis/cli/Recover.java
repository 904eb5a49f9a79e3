package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.Conversion;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.model.ModelLayout;
import io.anamnesis.api.model.ModelOutput;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.WriteOptions;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The output side shared by {@code remember} and {@code convert}: the options, where the
 * output goes, and the closing summary. The work itself is {@link Anamnesis#convert} (or
 * {@link Anamnesis#copy} for {@code --as-stored}), the library's one read, recover, write
 * path: the writer is looked up first (a missing module fails before any work), the plan
 * must be complete, and the output appears whole or not at all.
 */
final class Recover {
    private Recover() {
    }

    /** The output options of both commands. */
    static final class OutputOptions {
        @Option(names = {"-o", "--output"}, paramLabel = "<path>",
                description = "Output file, or a folder for the derived name (default: beside the input, "
                        + "named <input>-<dtype>.<ext>, forget's <input>-<target>.<ext>; in the current folder for "
                        + "ollama: models). '-' writes to "
                        + "standard output; a device or FIFO is written straight through; a symbolic link is followed.")
        String output;

        @Option(names = "--threads", paramLabel = "<n>",
                description = "Tensors produced at once (default: available processors). The output bytes do not depend on it.")
        Integer threads;

        @Option(names = {"-q", "--quiet"}, description = "No progress bar, no summary line.")
        boolean quiet;

        @Option(names = "--max-shard-size", paramLabel = "<size>",
                description = "Write a model folder (as transformers' save_pretrained: model-0000N-of-0000M shards, "
                        + "model.safetensors.index.json) with shards of at most this size: 500MB, 5GB (powers of 1000), "
                        + "4GiB (powers of 1024) or bytes. Default for a model folder: 5GB. A model folder is written "
                        + "anyway when the input is one (a folder, its index or a shard) and -o does not name a ."
                        + "<ext> file, or when -o ends with '/' and does not exist yet.")
        String maxShardSize;

        int threadCount() {
            if (threads == null) return Runtime.getRuntime().availableProcessors();
            if (threads < 1) throw new UsageException("--threads must be at least 1, was " + threads);
            return threads;
        }
    }

    /**
     * @param command  {@code remember} or {@code convert}, for messages
     * @param asStored copy every tensor as stored and recover nothing: a container conversion
     *                 (quantized payloads and their companions are written unchanged)
     * @param typed    key/values to set over the input's ({@code convert --gguf-kv}, {@code --gguf-metadata})
     */
    static Conversion run(Amn.Context ctx, String command, String reference, String format, DType target,
                          OutputOptions options, boolean asStored, Map<String, MetaValue> typed) {
        return run(ctx, command, reference, format, target, options, asStored, typed, null);
    }

    /** @param splitMaxSize {@code --split-max-size}, or null: write the format's own splits (GGUF) */
    static Conversion run(Amn.Context ctx, String command, String reference, String format, DType target,
                          OutputOptions options, boolean asStored, Map<String, MetaValue> typed, String splitMaxSize) {
        InputRef.refuseRemote(reference);
        long start = System.nanoTime();
        int threads = options.threadCount();
        Anamnesis amn = ctx.amn();
        FormatWriter writer = amn.writer(format);
        InputRef in = InputRef.of(reference, ctx.ollamaModels());
        ModelLayout layout = in.fromOllama() ? ModelLayout.single(in.file()) : amn.locate(in.file(), ParseLimits.defaults());
        String suffix = asStored ? "stored" : target.name().toLowerCase(Locale.ROOT);
        ModelOutput shape = Outputs.shape(layout, Optional.ofNullable(options.output), options.maxShardSize, splitMaxSize,
                writer, command);
        Path output = shape instanceof ModelOutput.Folder
                ? Outputs.chooseFolder(in, layout, Optional.ofNullable(options.output), suffix)
                : Outputs.choose(in, Optional.of(Outputs.ModelFiles.of(layout)), Optional.ofNullable(options.output), suffix, writer,
                        amn, command);
        Log.debug("{} -> {} ({} writer from {}, {}, {}, {} threads)", in.file(), output, writer.format(),
                Anamnesis.moduleOf(writer), target, shape, threads);
        Conversion c;
        try (ProgressBar bar = ProgressBar.forTerminal(ctx, options.quiet)) {
            WriteOptions write = new WriteOptions(threads, bar);
            c = asStored ? amn.copy(in.file(), format, output, shape, write, typed)
                    : amn.convert(in.file(), format, target, output, shape, write, typed);
        }
        Log.debug("wrote {} outputs, {} recovered, {} bytes", c.tensors(), c.recovered(), c.bytes());
        // with the output on standard output, the summary goes to standard error
        if (!options.quiet) summary(Outputs.isStandardOutput(output) ? ctx.err() : ctx.out(), c, (System.nanoTime() - start) / 1e9);
        if (ctx.debug()) {
            c.droppedMetadata().forEach((k, why) -> ctx.err().println("amn: metadata key '" + Printable.of(k) + "' dropped: " + Amn.oneLine(why)));
            ctx.err().flush();
        }
        return c;
    }

    static void summary(PrintWriter out, Conversion c, double seconds) {
        String recovered = c.recovered() == 0 ? "nothing to recover"
                : c.recovered() + " recovered to " + c.target().name().toLowerCase(Locale.ROOT) + " ("
                + String.join("; ", c.schemes()) + ")";
        out.println("wrote " + where(c.output(), c.files()) + ": " + c.tensors() + (c.tensors() == 1 ? " tensor, " : " tensors, ")
                + recovered + ", " + Text.size(c.bytes()) + " in " + Text.decimals(seconds, 2) + " s; "
                + metadata(c.metadataKeys(), c.droppedMetadata().size()));
        out.flush();
    }

    /**
     * What a command wrote, for its summary: the output ("standard output" for {@code -});
     * for splits or a model folder also how many files, the first and the last.
     */
    static String where(Path output, List<Path> files) {
        String where = Outputs.isStandardOutput(output) ? "standard output" : output.toString();
        if (files.size() > 1 || !files.contains(output)) {
            where = (files.stream().allMatch(f -> f.startsWith(output)) ? "folder " + output : where)
                    + " (" + files.size() + (files.size() == 1 ? " file" : " files") + ": "
                    + files.getFirst().getFileName() + (files.size() > 1 ? " ... " + files.getLast().getFileName() : "") + ")";
        }
        return where;
    }

    /** "21 metadata keys", and how many were dropped when any were: no loss goes unsaid. */
    static String metadata(int kept, int dropped) {
        return kept + (kept == 1 ? " metadata key" : " metadata keys")
                + (dropped == 0 ? "" : ", " + dropped + " dropped (--debug names them)");
    }
}
