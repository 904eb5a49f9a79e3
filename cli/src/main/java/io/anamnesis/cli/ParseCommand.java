package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.Callable;

/** {@code amn parse}: the summary and one line per stored tensor, from the header alone. */
@Command(name = "parse", sortOptions = false,
        header = "List every tensor of a file: name, dtype, shape, size and role.",
        description = "Reads the header only. The role says what a stored tensor is for in its quantization "
                + "scheme (quantized, scale, zero-point, g_idx, absmax, ...) or passthrough for plain tensors.",
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class ParseCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file; a model folder, its index JSON or any "
            + "one shard (the whole model: every shard, listed); ollama:<model>[:<tag>]; - for a "
            + "safetensors or GGUF header on standard input (read up to the end of the header, no further); "
            + "or a URL: https://..., or hf://ORG/REPO[@REV]/PATH ($HF_ENDPOINT, default https://huggingface.co; "
            + "$HF_TOKEN sent as a bearer token), its headers read by HTTP range requests (an *.index.json: "
            + "every shard's; --debug reports requests and bytes; $AMN_HTTP_TIMEOUT seconds per request, default 30).")
    String input;

    @Option(names = "--json", description = "Print one JSON object: format, metadata, scheme, tensors.")
    boolean json;

    @Override
    public Integer call() {
        Amn.Context ctx = parent.context();
        Anamnesis amn = ctx.amn();
        try (TensorArchive archive = InputRef.open(input, ctx)) {
            Log.debug("{}: {} archive, {} tensors", input, archive.format(), archive.tensors().size());
            Report report = plan(amn, archive, input);
            if (json) {
                Json.print(ctx.out(), report.parseJson());
            } else {
                print(ctx.out(), report);
            }
            if (report.planError().isPresent()) {
                ctx.err().println(ctx.terminal().warningPrefix() + "roles unknown, no recovery plan: " + Amn.oneLine(report.planError().get()));
                ctx.err().flush();
            } else {
                Warnings.print(ctx, report.plan());
            }
        }
        return Amn.OK;
    }

    /**
     * The listing does not need recovery: when a quantized group is malformed (a scale of the
     * wrong shape), parse still lists every tensor, with roles unknown and a warning;
     * inspect and remember refuse the file.
     */
    static Report plan(Anamnesis amn, TensorArchive archive, String input) {
        try {
            return new Report(input, archive, amn.plan(archive, DType.BF16));
        } catch (AnamnesisException e) {
            Log.debug("no recovery plan: {}", e.toString());
            RecoveryPlan plain = Anamnesis.of(amn.readers(), amn.writers(), List.of()).plan(archive, DType.BF16);
            return new Report(input, archive, plain,
                    Optional.of(Amn.oneLine(e.getMessage())));
        }
    }

    static void print(PrintWriter out, Report r) {
        out.println(r.input());
        out.println("  format   " + r.archive().format());
        out.println("  scheme   " + r.schemeOrNone());
        out.println("  tensors  " + Text.count(r.archive().tensors().size())
                + (r.archive().tensors().isEmpty() ? "" : " (" + r.roleSummary() + ")"));
        out.println("  stored   " + Text.sizeAndBytes(r.storedBytes()));
        if (!r.shards().isEmpty()) {
            out.println("  shards   " + r.shards().size() + " (" + r.shardSource() + ")");
            r.shardLines("    ").forEach(out::println);
        }
        if (r.archive().tensors().isEmpty()) return;
        out.println();
        Text.Table table = new Text.Table(new boolean[]{false, false, false, true, false},
                "NAME", "DTYPE", "SHAPE", "SIZE", "ROLE");
        for (TensorEntry e : r.archive().tensors()) {
            table.row(e.name(), e.dtype().name(), e.shape().toString(), Text.size(e.byteSize()), r.roleOf(e).name());
        }
        table.lines("").forEach(out::println);
    }
}
