package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import picocli.CommandLine.Option;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * The read, recover, write path shared by {@code remember} and {@code convert}: the same
 * steps as {@link Anamnesis#convert}, keeping the plan for the closing summary. The writer
 * is looked up first (a missing module fails before any work), the plan must be complete,
 * and the writer writes through {@code AtomicOutput}: the output appears whole or not at all.
 */
final class Recover {
    private Recover() {
    }

    /** The output options of both commands. */
    static final class OutputOptions {
        @Option(names = {"-o", "--output"}, paramLabel = "<path>",
                description = "Output file, or a folder for the derived name (default: beside the input, "
                        + "named <input>-<dtype>.<ext>; in the current folder for ollama: models).")
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

    record Written(Path output, int tensors, int recovered, long bytes, String scheme, double seconds) {
    }

    static Written run(Amn.Context ctx, String reference, String format, DType target, OutputOptions options) {
        return run(ctx, reference, format, target, options, false);
    }

    /**
     * @param asStored copy every tensor as stored and recover nothing: a container conversion
     *                 (quantized payloads and their companions are written unchanged)
     */
    static Written run(Amn.Context ctx, String reference, String format, DType target, OutputOptions options,
                       boolean asStored) {
        long start = System.nanoTime();
        int threads = options.threadCount();
        Anamnesis installed = ctx.amn();
        Anamnesis amn = asStored ? Anamnesis.of(installed.readers(), installed.writers(), List.of()) : installed;
        FormatWriter writer = amn.writer(format);
        InputRef in = InputRef.of(reference, ctx.ollamaModels());
        Path output = Outputs.choose(in, Optional.ofNullable(options.output),
                asStored ? "stored" : target.name().toLowerCase(Locale.ROOT), writer.fileExtensions().getFirst());
        Log.debug("{} -> {} ({} writer from {}, {}, {} threads)", in.file(), output, writer.format(),
                Anamnesis.moduleOf(writer), target, threads);
        try (TensorArchive archive = amn.open(in.file())) {
            RecoveryPlan plan = amn.plan(archive, target);
            // as stored, "looks quantized" is what the user asked to keep, not a problem
            OutputPlan outputPlan = asStored
                    ? new OutputPlan(Optional.of(archive), archive.metadata(), plan.outputs())
                    : plan.requireComplete().toOutputPlan();
            for (PlannedTensor t : plan.outputs()) {
                if (!writer.supports(t.dtype())) {
                    throw UnsupportedFeatureException.inTensor(t.name(), writer.format() + " cannot store dtype " + t.dtype());
                }
            }
            Log.debug("plan: {} outputs, {} recovered, {} bytes", plan.outputs().size(), plan.recoveries().size(),
                    plan.outputBytes());
            try (ProgressBar bar = ProgressBar.forTerminal(ctx.err(), options.quiet)) {
                writer.write(outputPlan, output, new WriteOptions(threads, bar));
            }
            Written w = new Written(output, plan.outputs().size(), plan.recoveries().size(), plan.outputBytes(),
                    String.join("; ", plan.schemeDescriptions()), (System.nanoTime() - start) / 1e9);
            if (!options.quiet) summary(ctx.out(), w, target);
            return w;
        }
    }

    static void summary(PrintWriter out, Written w, DType target) {
        String recovered = w.recovered() == 0 ? "nothing to recover"
                : w.recovered() + " recovered to " + target.name().toLowerCase(Locale.ROOT) + " (" + w.scheme() + ")";
        out.println(String.format(Locale.ROOT, "wrote %s: %d tensors, %s, %s in %.2f s", w.output(), w.tensors(),
                recovered, Text.size(w.bytes()), w.seconds()));
    }
}
