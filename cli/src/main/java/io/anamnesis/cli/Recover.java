package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.Conversion;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.WriteOptions;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
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
                        + "named <input>-<dtype>.<ext>; in the current folder for ollama: models). '-' writes to "
                        + "standard output; a device or FIFO is written straight through; a symbolic link is followed.")
        String output;

        @Option(names = "--threads", paramLabel = "<n>",
                description = "Tensors produced at once (default: available processors). The output bytes do not depend on it.")
        Integer threads;

        @Option(names = {"-q", "--quiet"}, description = "No progress bar, no summary line.")
        boolean quiet;

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
     */
    static Conversion run(Amn.Context ctx, String command, String reference, String format, DType target,
                          OutputOptions options, boolean asStored) {
        InputRef.refuseRemote(reference);
        long start = System.nanoTime();
        int threads = options.threadCount();
        Anamnesis amn = ctx.amn();
        FormatWriter writer = amn.writer(format);
        InputRef in = InputRef.of(reference, ctx.ollamaModels());
        Path output = Outputs.choose(in, Optional.ofNullable(options.output),
                asStored ? "stored" : target.name().toLowerCase(Locale.ROOT), writer, amn, command);
        Log.debug("{} -> {} ({} writer from {}, {}, {} threads)", in.file(), output, writer.format(),
                Anamnesis.moduleOf(writer), target, threads);
        Conversion c;
        try (ProgressBar bar = ProgressBar.forTerminal(ctx, options.quiet)) {
            WriteOptions write = new WriteOptions(threads, bar);
            c = asStored ? amn.copy(in.file(), format, output, write) : amn.convert(in.file(), format, target, output, write);
        }
        Log.debug("wrote {} outputs, {} recovered, {} bytes", c.tensors(), c.recovered(), c.bytes());
        // with the output on standard output, the summary goes to standard error
        if (!options.quiet) summary(Outputs.isStandardOutput(output) ? ctx.err() : ctx.out(), c, (System.nanoTime() - start) / 1e9);
        return c;
    }

    static void summary(PrintWriter out, Conversion c, double seconds) {
        String recovered = c.recovered() == 0 ? "nothing to recover"
                : c.recovered() + " recovered to " + c.target().name().toLowerCase(Locale.ROOT) + " ("
                + String.join("; ", c.schemes()) + ")";
        String where = Outputs.isStandardOutput(c.output()) ? "standard output" : c.output().toString();
        out.println("wrote " + where + ": " + c.tensors() + (c.tensors() == 1 ? " tensor, " : " tensors, ")
                + recovered + ", " + Text.size(c.bytes()) + " in " + Text.decimals(seconds, 2) + " s");
        out.flush();
    }
}
