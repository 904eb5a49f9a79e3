package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.model.ModelLayout;
import io.anamnesis.api.model.ModelOutput;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.api.spi.WriteOptions;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * {@code amn forget}: quantize ("forget", Lethe). Every tensor is read, or recovered on the
 * fly, as dense values; the quantizer of {@code --to} decides what each becomes; the writer of
 * its format writes the result, complete or not at all. The summary says what was lost.
 */
@Command(name = "forget", aliases = "quantize", sortOptions = false,
        header = "Quantize a model: encode its tensors to a target type and say what was lost.",
        description = {"Reads the input (recovering quantized tensors on the fly), encodes the tensors the target "
                + "quantizes, leaves the others as they are, and writes the format of the target's quantizer "
                + "(see 'amn formats'). The summary reports the error introduced: mean absolute error, RMSE, "
                + "max absolute error and SNR over every quantized tensor; --report writes it per tensor.",
                "--to names the target; --like REF quantizes the way the published checkpoint REF is quantized "
                        + "instead: the same tensors, scheme, block size, double quantization, scale dtype and "
                        + "layout, read from REF's headers, companion tensors and config (for FP8 E4M3FNUZ also "
                        + "its codes: whether they reach 0x7F says native or vLLM's convention, see docs/forget.md).",
                "A safetensors target writes a model folder when the input is one (unless -o names a file), "
                        + "with --max-shard-size, or when -o ends with '/': shards and index as transformers "
                        + "writes them, the input folder's other files copied, and config.json's "
                        + "quantization_config the quantizer's. A GGUF target writes one file, or llama.cpp's "
                        + "splits with --split-max-size.",
                "The output appears complete or not at all."},
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class ForgetCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file; a model folder, its index JSON or any "
            + "one shard (the whole model); or ollama:<model>[:<tag>].")
    String input;

    @Option(names = "--to", paramLabel = "<type>",
            description = "Target: a type or file type of an installed quantizer (see 'amn formats'). GGUF: "
                    + "llama-quantize's file types (q4_k_m, q8_0, iq4_xs, ...) with llama.cpp's per-tensor mix, "
                    + "or ggml:<type> for one ggml type (ggml:q4_k).")
    String target;

    @Option(names = "--like", paramLabel = "<ref>",
            description = "Quantize as this published checkpoint is quantized (instead of --to and the scheme settings).")
    String like;

    @Option(names = "--imatrix", paramLabel = "<file>",
            description = "Importance matrix (llama.cpp's imatrix GGUF or legacy .dat), for the types that weight by "
                    + "it; iq2_xxs, iq2_xs and iq1_s (and llama.cpp's other very-low-bit file types) need one.")
    Path imatrix;

    @Option(names = "--keep", paramLabel = "<regex>",
            description = "Leave tensors whose name matches as they are (repeatable).")
    List<String> keep = new ArrayList<>();

    @Option(names = "--pure", description = "No per-tensor mix: every eligible tensor gets the target's default type "
            + "(llama-quantize --pure).")
    boolean pure;

    @Option(names = "--block-size", paramLabel = "<n>", description = "Block size, for the schemes that take one.")
    Integer blockSize;

    @Option(names = "--double-quant", description = "Quantize the block scales too, for the schemes that can.")
    boolean doubleQuant;

    @Option(names = "--granularity", paramLabel = "<g>", description = "Scale granularity: tensor, channel or block.")
    String granularity;

    @Option(names = "--scale-dtype", paramLabel = "<dtype>", description = "Dtype of stored scales, e.g. bf16 or f32.")
    String scaleDtype;

    @Option(names = "--report", paramLabel = "<file>",
            description = "Write the error per tensor: FILE.json as JSON, FILE.html as a self-contained page "
                    + "(SNR by tensor, error histogram).")
    Path report;

    @Option(names = "--split-max-size", paramLabel = "<size>",
            description = "For a GGUF target: write splits of at most this much tensor data each, in llama.cpp's "
                    + "gguf-split layout (<name>-00001-of-0000M.gguf, split.* keys, metadata in the first); "
                    + "sizes as gguf-split writes them (128M, 4G) or as --max-shard-size.")
    String splitMaxSize;

    @Mixin
    Recover.OutputOptions output;

    @Override
    public Integer call() {
        Amn.Context ctx = parent.context();
        InputRef.refuseRemote(input);
        if ((target == null) == (like == null)) {
            throw new UsageException(target == null ? "give --to <type> or --like <ref>" : "give --to or --like, not both");
        }
        if (like != null && (!settings().isEmpty() || pure || imatrix != null)) {
            throw new UsageException("--like takes the scheme and its settings from the reference; drop "
                    + String.join(", ", likeConflicts()));
        }
        if (report != null) ReportKind.of(report);
        List<Pattern> keepPatterns = new ArrayList<>();
        for (String k : keep) {
            try {
                keepPatterns.add(Pattern.compile(k));
            } catch (PatternSyntaxException e) {
                throw new UsageException("--keep '" + k + "' is not a regular expression: " + e.getDescription());
            }
        }
        if (target != null) known(ctx.amn(), target);
        TensorArchive reference = like == null ? null : ctx.amn().open(InputRef.of(like, ctx.ollamaModels()).file());
        TensorArchive importance = null;
        try {
            importance = imatrix == null ? null : ctx.amn().open(imatrix);
            run(ctx, input, target, new ForgetOptions(settings(), Optional.ofNullable(importance), pure, keepPatterns,
                    Optional.ofNullable(reference)), report, output, splitMaxSize);
        } finally {
            if (importance != null) importance.close();
            if (reference != null) reference.close();
        }
        return Amn.OK;
    }

    /** Refuses a {@code --to} that no installed quantizer takes, as a usage error listing the targets. */
    private static void known(Anamnesis amn, String target) {
        if (amn.forgetTargets().get(target.toLowerCase(Locale.ROOT)) == null) {
            throw new UsageException("unknown target '" + target + "'" + (amn.forgetTargets().isEmpty()
                    ? ": no quantizer module is installed"
                    : "; targets: " + String.join(", ", amn.forgetTargets().keySet())));
        }
    }

    /**
     * Forgets {@code reference} as {@code target}, or as {@code options.like()} is quantized
     * when {@code target} is null (plan first, warnings, then the write with a progress bar,
     * then the summary and the report); shared with {@code convert --dtype <target>}.
     */
    static ForgetPlan run(Amn.Context ctx, String reference, String target, ForgetOptions options, Path report,
                          Recover.OutputOptions output, String splitMaxSize) {
        InputRef.refuseRemote(reference);
        long start = System.nanoTime();
        Anamnesis amn = ctx.amn();
        ReportKind reportKind = report == null ? null : ReportKind.of(report);
        String to;
        if (target != null) {
            known(amn, target);
            to = target.toLowerCase(Locale.ROOT);
        } else {
            to = amn.imitation(options.like().orElseThrow(() -> new UsageException("give --to <type> or --like <ref>")));
        }
        Quantizer quantizer = amn.quantizer(to);
        int threads = output.threadCount();
        InputRef in = InputRef.of(reference, ctx.ollamaModels());
        FormatWriter writer = amn.writer(quantizer.format());
        ModelLayout layout = in.fromOllama() ? ModelLayout.single(in.file()) : amn.locate(in.file(), ParseLimits.defaults());
        ModelOutput shape = Outputs.shape(layout, Optional.ofNullable(output.output), output.maxShardSize, splitMaxSize, writer,
                "forget");
        String suffix = to.replace(':', '-');
        Outputs.ModelFiles model = Outputs.ModelFiles.of(layout);
        Path out = shape instanceof ModelOutput.Folder
                ? Outputs.chooseFolder(in, layout, Optional.ofNullable(output.output), suffix)
                : Outputs.choose(in, Optional.of(model), Optional.ofNullable(output.output), suffix, writer, amn, "forget");
        if (report != null) checkReport(report, model, out);
        // the loss is for the summary line and the report: a quiet run without a report reads
        // neither, so nothing is decoded again to measure it (a quarter of a forget's CPU)
        LossMeter loss = output.quiet && report == null ? LossMeter.off() : new LossMeter(reportKind == ReportKind.HTML);
        try (TensorArchive archive = amn.open(layout, ParseLimits.defaults())) {
            ForgetPlan plan = amn.planForget(archive, to, options, loss);
            for (String w : plan.warnings()) ctx.err().println(ctx.terminal().warningPrefix() + Amn.oneLine(w));
            ctx.err().flush();
            List<Path> files;
            try (ProgressBar bar = ProgressBar.forTerminal(ctx, output.quiet)) {
                files = amn.writeForgotten(plan, to, archive, Optional.of(layout), out, shape, new WriteOptions(threads, bar));
            }
            if (report != null) {
                String text = reportKind == ReportKind.HTML
                        ? HtmlReport.render(in.displayName(), out.getFileName().toString(), to, plan, loss)
                        : Json.render(reportJson(plan, loss)) + "\n";
                writeAtomically(report, text);
            }
            // with the output on standard output, the summary goes to standard error
            if (!output.quiet) {
                summary(Outputs.isStandardOutput(out) ? ctx.err() : ctx.out(), Recover.where(out, files), to, plan, loss,
                        (System.nanoTime() - start) / 1e9);
            }
            return plan;
        }
    }

    /** The report formats, by the file's extension. */
    enum ReportKind {
        JSON, HTML;

        static ReportKind of(Path file) {
            String name = file.getFileName() == null ? "" : file.getFileName().toString().toLowerCase(Locale.ROOT);
            if (name.endsWith(".json")) return JSON;
            if (name.endsWith(".html") || name.endsWith(".htm")) return HTML;
            throw new UsageException("--report " + file + ": name it .json (per-tensor figures) or .html (a page with plots)");
        }
    }

    private List<String> likeConflicts() {
        List<String> c = new ArrayList<>();
        for (String k : settings().keySet()) c.add("--" + k);
        if (pure) c.add("--pure");
        if (imatrix != null) c.add("--imatrix");
        return c;
    }

    /** The scheme settings given on the command line, by name without dashes. */
    Map<String, String> settings() {
        Map<String, String> s = new LinkedHashMap<>();
        if (blockSize != null) s.put("block-size", Integer.toString(blockSize));
        if (doubleQuant) s.put("double-quant", "true");
        if (granularity != null) s.put("granularity", granularity.toLowerCase(Locale.ROOT));
        if (scaleDtype != null) s.put("scale-dtype", scaleDtype.toLowerCase(Locale.ROOT));
        return s;
    }

    /** @param where what was written, as {@link Recover#where} says it */
    static void summary(PrintWriter out, String where, String target, ForgetPlan plan, LossMeter loss, double seconds) {
        long encoded = plan.encodedCount();
        long kept = plan.decisions().size() - encoded;
        out.println("wrote " + where + ": " + plan.decisions().size() + (plan.decisions().size() == 1 ? " tensor, " : " tensors, ")
                + encoded + " quantized to " + target + ", " + kept + " kept, in " + Text.decimals(seconds, 2) + " s");
        Map<String, Long> why = new LinkedHashMap<>();
        for (ForgetPlan.Decision d : plan.decisions()) {
            if (!d.encoded()) why.merge(d.becomes() + " (" + d.why() + ")", 1L, Long::sum);
        }
        Map<String, Long> types = new LinkedHashMap<>();
        for (ForgetPlan.Decision d : plan.decisions()) {
            if (d.encoded()) types.merge(d.becomes(), 1L, Long::sum);
        }
        if (types.size() > 1) {
            List<String> parts = new ArrayList<>();
            types.forEach((type, n) -> parts.add(n + " as " + type));
            out.println("  quantized " + String.join(", ", parts));
        }
        why.forEach((reason, n) -> out.println("  kept " + n + " as " + reason));
        LossMeter.Loss l = loss.total();
        if (l.count() > 0) {
            out.println("  lost: MAE " + sci(l.mae()) + ", RMSE " + sci(l.rmse()) + ", max |error| " + sci(l.maxAbs())
                    + ", SNR " + Text.db(l.snrDb()) + " dB over "
                    + Text.count(l.count()) + " values" + (l.nonFinite() > 0 ? " (" + l.nonFinite() + " non-finite left out)" : "")
                    + Text.nonFiniteErrors(l, "decoded"));
        }
    }

    private static String sci(double v) {
        return String.format(Locale.ROOT, "%.4g", v);
    }

    /** {@code --report FILE.json}: the loss per tensor and each tensor's fate, as one JSON object. */
    static Map<String, Object> reportJson(ForgetPlan plan, LossMeter loss) {
        Map<String, LossMeter.Loss> perTensor = loss.perTensor();
        List<Object> tensors = new ArrayList<>();
        for (ForgetPlan.Decision d : plan.decisions()) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("name", d.tensor());
            t.put("becomes", d.becomes());
            t.put("quantized", d.encoded());
            t.put("why", d.why());
            LossMeter.Loss l = perTensor.get(d.tensor());
            if (l != null) t.put("loss", lossJson(l));
            tensors.add(t);
        }
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("total", lossJson(loss.total()));
        root.put("tensors", tensors);
        return root;
    }

    /**
     * Refuses, before any work, a report that could not be written or would replace what it
     * must not: the output, a file of the input model (its folder's config.json, say), a
     * folder that does not exist. A report that failed after the quantizing used to leave
     * its output written beside an exit code of failure.
     */
    static void checkReport(Path report, Outputs.ModelFiles model, Path output) {
        if (report.toString().equals(io.anamnesis.api.write.AtomicOutput.STANDARD_OUTPUT)) {
            throw new UsageException("--report writes a file; '-' is for -o");
        }
        if (report.toAbsolutePath().normalize().equals(output.toAbsolutePath().normalize())) {
            throw new UsageException("--report " + report + " is the output itself; name another file");
        }
        Outputs.refuseModelFiles(model, report, "report", List.of());
        Optional<String> refusal = io.anamnesis.api.write.AtomicOutput.refusal(report);
        if (refusal.isPresent()) throw new UsageException("--report: " + refusal.get());
        Path dir = report.toAbsolutePath().getParent();
        if (dir != null && !Files.isDirectory(dir)) {
            throw new TensorIOException("cannot write the report " + report + ": folder " + dir + " does not exist");
        }
    }

    /**
     * Writes a small text file as outputs are written ({@link io.anamnesis.api.write.AtomicOutput}):
     * whole or not at all, a link followed, a FIFO or device written straight through.
     */
    static void writeAtomically(Path file, String text) {
        byte[] bytes = text.getBytes(StandardCharsets.UTF_8);
        io.anamnesis.api.write.AtomicOutput.write(file, channel -> {
            java.nio.ByteBuffer b = java.nio.ByteBuffer.wrap(bytes);
            while (b.hasRemaining()) channel.write(b);
        });
    }

    static Map<String, Object> lossJson(LossMeter.Loss l) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("values", l.count());
        m.put("non_finite", l.nonFinite());
        m.put("mae", l.mae());
        m.put("rmse", l.rmse());
        m.put("max_abs_error", l.maxAbs());
        // null when nothing was lost (+inf); -inf or NaN as the other figures write them
        m.put("snr_db", l.snrDb() == Double.POSITIVE_INFINITY ? null : l.snrDb());
        return m;
    }
}
