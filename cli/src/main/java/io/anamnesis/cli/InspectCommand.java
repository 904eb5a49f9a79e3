package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code amn inspect}: what a file is and what recovering it would give, from the header alone. */
@Command(name = "inspect", aliases = "info", sortOptions = false,
        header = "Summarize a file from its header: format, scheme, sizes, properties, metadata.",
        description = "Reads the header only, so it is quick on any size of model and safe on hostile files: "
                + "a malformed or hostile file is refused here as a full read would refuse it. Tensors that "
                + "would stay quantized (a scheme's module missing, a companion missing) are reported as warnings on "
                + "stderr, naming the tensor and the scheme.",
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class InspectCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<file>", description = "A tensor file; a model folder, its index JSON or any "
            + "one shard (the whole model: every shard, listed); ollama:<model>[:<tag>]; - for a "
            + "safetensors or GGUF header on standard input (read up to the end of the header, no further); "
            + "or a URL: https://..., or hf://ORG/REPO[@REV]/PATH ($HF_ENDPOINT, default https://huggingface.co; "
            + "$HF_TOKEN sent as a bearer token), its headers read by HTTP range requests (an *.index.json: "
            + "every shard's; --debug reports requests and bytes; $AMN_HTTP_TIMEOUT seconds per request, default 30).")
    String input;

    @Option(names = "--to", paramLabel = "<dtype>", defaultValue = "bf16", converter = TargetConverter.class,
            description = "Dtype the recovered size is computed for: bf16, f16 or f32 (default: ${DEFAULT-VALUE}).")
    DType target;

    @Option(names = "--json", description = "Print the summary and the structured metadata as one JSON object.")
    boolean json;

    @Option(names = "--full", description = "With --json: print metadata arrays whole (by default arrays over "
            + Json.MAX_ARRAY + " elements are summarized as type, length and the first " + Json.HEAD + ").")
    boolean full;

    @Override
    public Integer call() {
        Amn.Context ctx = parent.context();
        Anamnesis amn = ctx.amn();
        try (TensorArchive archive = InputRef.open(input, ctx)) {
            Log.debug("{}: {} archive, {} tensors", input, archive.format(), archive.tensors().size());
            RecoveryPlan plan = amn.plan(archive, target);
            Report report = new Report(input, archive, plan);
            if (json) {
                Json.print(ctx.out(), report.inspectJson(full));
            } else {
                print(ctx.out(), report);
            }
            Warnings.print(ctx, plan);
        }
        return Amn.OK;
    }

    static void print(PrintWriter out, Report r) {
        TensorArchive a = r.archive();
        String as = "as " + r.target().name().toLowerCase(Locale.ROOT);
        Text.Table t = new Text.Table(new boolean[]{false, false}, "file", r.input());
        t.row("format", a.format());
        t.row("scheme", r.schemeOrNone());
        t.row("tensors", Text.count(a.tensors().size()) + (a.tensors().isEmpty() ? "" : ": " + r.roleSummary()));
        t.row("stored", Text.sizeAndBytes(r.storedBytes()));
        t.row(as, Text.sizeAndBytes(r.outputBytes()) + " in " + Text.count(r.plan().outputs().size())
                + (r.plan().outputs().size() == 1 ? " tensor" : " tensors"));
        t.row("", r.letheLine());
        if (!a.tensors().isEmpty()) t.row("dtypes", r.dtypeSummary());
        Map<String, String> props = a.properties();
        t.row("byte order", props.getOrDefault("byte order", "little-endian (as read)"));
        t.lines("").forEach(out::println);
        if (!r.shards().isEmpty()) {
            out.println("shards (" + r.shards().size() + ", " + r.shardSource() + ")");
            r.shardLines("  ").forEach(out::println);
        }
        if (props.size() > (props.containsKey("byte order") ? 1 : 0)) {
            out.println("properties");
            Text.Table p = new Text.Table(new boolean[]{false, false}, "", "");
            props.forEach((k, v) -> {
                if (!k.equals("byte order")) p.row(k, v);
            });
            p.lines("  ").stream().skip(1).forEach(out::println);
        }
        Map<String, String> meta = a.metadata();
        if (!meta.isEmpty()) {
            out.println("metadata (" + meta.size() + (meta.size() == 1 ? " entry)" : " entries)"));
            Text.Table m = new Text.Table(new boolean[]{false, false}, "", "");
            meta.forEach((k, v) -> m.row(k, Text.preview(v, 100)));
            m.lines("  ").stream().skip(1).forEach(out::println);
        }
    }
}
