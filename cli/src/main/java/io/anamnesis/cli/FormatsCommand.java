package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.FormatWriter;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/** {@code amn formats}: what is installed, and from which module. */
@Command(name = "formats", sortOptions = false,
        header = "List the installed readers, writers, dequantizers and quantizers with their modules.",
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class FormatsCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Option(names = "--json", description = "Print one JSON object: readers, writers, dequantizers, quantizers.")
    boolean json;

    @Override
    public Integer call() {
        Anamnesis amn = parent.context().amn();
        PrintWriter out = parent.context().out();
        if (json) {
            Json.print(out, asJson(amn));
            return Amn.OK;
        }
        out.println("Readers");
        if (amn.readers().isEmpty()) out.println("  (none installed)");
        else {
            Text.Table t = new Text.Table(new boolean[4], "FORMAT", "EXTENSIONS", "MODULE", "DESCRIPTION");
            for (FormatReader r : amn.readers()) {
                t.row(r.format(), extensions(r.fileExtensions()), Anamnesis.moduleOf(r), r.description());
            }
            t.lines("  ").forEach(out::println);
        }
        out.println();
        out.println("Writers");
        if (amn.writers().isEmpty()) out.println("  (none installed)");
        else {
            Text.Table t = new Text.Table(new boolean[4], "FORMAT", "EXTENSIONS", "MODULE", "DESCRIPTION");
            for (FormatWriter w : amn.writers()) {
                t.row(w.format(), extensions(w.fileExtensions()), Anamnesis.moduleOf(w), w.description());
            }
            t.lines("  ").forEach(out::println);
        }
        out.println();
        out.println("Dequantizers");
        if (amn.dequantizers().isEmpty()) out.println("  (none installed)");
        else {
            Text.Table t = new Text.Table(new boolean[3], "SCHEME", "MODULE", "DESCRIPTION");
            for (Dequantizer d : amn.dequantizers()) t.row(d.scheme(), Anamnesis.moduleOf(d), d.description());
            t.lines("  ").forEach(out::println);
        }
        out.println();
        out.println("Quantizers (amn forget --to ...)");
        if (amn.quantizers().isEmpty()) out.println("  (none installed)");
        else {
            Text.Table t = new Text.Table(new boolean[4], "SCHEME", "WRITES", "MODULE", "TARGETS");
            for (Quantizer q : amn.quantizers()) {
                t.row(q.scheme(), q.format(), Anamnesis.moduleOf(q), String.join(" ", q.targets().keySet()));
            }
            t.lines("  ").forEach(out::println);
        }
        return Amn.OK;
    }

    private static String extensions(List<String> ext) {
        return ext.isEmpty() ? "-" : "." + String.join(" .", ext);
    }

    static Map<String, Object> asJson(Anamnesis amn) {
        List<Object> readers = new ArrayList<>();
        for (FormatReader r : amn.readers()) {
            readers.add(entry("format", r.format(), "module", Anamnesis.moduleOf(r), "extensions", r.fileExtensions(),
                    "description", r.description()));
        }
        List<Object> writers = new ArrayList<>();
        for (FormatWriter w : amn.writers()) {
            writers.add(entry("format", w.format(), "module", Anamnesis.moduleOf(w), "extensions", w.fileExtensions(),
                    "description", w.description()));
        }
        List<Object> dequantizers = new ArrayList<>();
        for (Dequantizer d : amn.dequantizers()) {
            dequantizers.add(entry("scheme", d.scheme(), "module", Anamnesis.moduleOf(d), "description", d.description()));
        }
        List<Object> quantizers = new ArrayList<>();
        for (Quantizer q : amn.quantizers()) {
            quantizers.add(entry("scheme", q.scheme(), "module", Anamnesis.moduleOf(q), "format", q.format(),
                    "targets", List.copyOf(q.targets().keySet()), "description", q.description()));
        }
        Map<String, Object> out = Report.jsonHead("formats");
        out.putAll(entry("readers", readers, "writers", writers, "dequantizers", dequantizers, "quantizers", quantizers));
        return out;
    }

    private static Map<String, Object> entry(Object... kv) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
        return m;
    }
}
