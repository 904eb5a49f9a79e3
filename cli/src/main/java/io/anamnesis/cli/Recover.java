package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
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
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

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

    /**
     * @param metadataKeys key/values written
     * @param dropped      keys of the input's metadata (or the plan's) not written whole, with why
     */
    record Written(Path output, int tensors, int recovered, long bytes, String scheme, double seconds,
                   int metadataKeys, SequencedMap<String, String> dropped) {
    }

    static Written run(Amn.Context ctx, String reference, String format, DType target, OutputOptions options) {
        return run(ctx, reference, format, target, options, false, Map.of());
    }

    /**
     * @param asStored copy every tensor as stored and recover nothing: a container conversion
     *                 (quantized payloads and their companions are written unchanged)
     * @param typed    key/values to set over the input's (convert --gguf-kv, --gguf-metadata)
     */
    static Written run(Amn.Context ctx, String reference, String format, DType target, OutputOptions options,
                       boolean asStored, Map<String, MetaValue> typed) {
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
            OutputPlan outputPlan = (asStored ? plan.toOutputPlanAsStored() : plan.requireComplete().toOutputPlan())
                    .withTyped(typed);
            // what the plan leaves out of the input's metadata, then what the writer cannot store
            SequencedMap<String, String> dropped = new LinkedHashMap<>(plan.droppedMetadata());
            SequencedMap<String, String> unstored = writer.metadataLoss(outputPlan);
            dropped.putAll(unstored);
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
                    String.join("; ", plan.schemeDescriptions()), (System.nanoTime() - start) / 1e9,
                    outputPlan.keyValues().size() - unstored.size(), dropped);
            if (!options.quiet) summary(ctx.out(), w, target);
            if (ctx.debug()) {
                w.dropped().forEach((k, why) -> ctx.err().println("amn: metadata key '" + k + "' dropped: " + why));
                ctx.err().flush();
            }
            return w;
        }
    }

    static void summary(PrintWriter out, Written w, DType target) {
        String recovered = w.recovered() == 0 ? "nothing to recover"
                : w.recovered() + " recovered to " + target.name().toLowerCase(Locale.ROOT) + " (" + w.scheme() + ")";
        out.println("wrote " + w.output() + ": " + w.tensors() + (w.tensors() == 1 ? " tensor, " : " tensors, ")
                + recovered + ", " + Text.size(w.bytes()) + " in " + Text.decimals(w.seconds(), 2) + " s; "
                + metadata(w.metadataKeys(), w.dropped().size()));
    }

    /** "21 metadata keys", and how many were dropped when any were: no loss goes unsaid. */
    static String metadata(int kept, int dropped) {
        return kept + (kept == 1 ? " metadata key" : " metadata keys")
                + (dropped == 0 ? "" : ", " + dropped + " dropped (--debug names them)");
    }
}
