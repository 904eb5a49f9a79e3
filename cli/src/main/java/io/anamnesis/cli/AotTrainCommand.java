package io.anamnesis.cli;

import picocli.CommandLine.Command;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.io.PrintWriter;
import java.io.Writer;
import java.util.List;
import java.util.concurrent.Callable;

/**
 * Hidden: the build's AOT training run ({@code AMN_AOT_TRAIN=... amn aot-train <sample>}).
 * Runs the fast-path commands once each in one JVM, output discarded. Deliberately not
 * help or usage errors (picocli): with AOT class linking every cached class is loaded at VM
 * start, so caching picocli's JDK dependencies (reflection, proxies) would slow
 * {@code inspect} down to speed up rarer commands (measured: a 13 MB cache instead of
 * 21 MB, ~7 ms less CPU per inspect).
 */
@Command(name = "aot-train", hidden = true)
final class AotTrainCommand implements Callable<Integer> {
    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<sample>")
    String sample;

    @Override
    public Integer call() {
        PrintWriter sink = new PrintWriter(Writer.nullWriter());
        List<String[]> runs = List.of(
                new String[]{"inspect", sample},
                new String[]{"inspect", "--to", "f32", sample},
                new String[]{"parse", sample},
                new String[]{"parse", "--json", sample},
                new String[]{"inspect", "--json", sample},
                new String[]{"formats"},
                new String[]{"inspect", sample + ".missing"});
        Amn.Context ctx = parent.context();
        int failures = 0;
        for (String[] args : runs) {
            int code = Amn.execute(ctx.providers(), sink, sink, ctx.env(), ctx.home(), args);
            ctx.out().println(String.join(" ", args) + " -> " + code);
            if (code == Amn.INTERNAL) failures++;
        }
        return failures == 0 ? Amn.OK : Amn.INTERNAL;
    }
}
