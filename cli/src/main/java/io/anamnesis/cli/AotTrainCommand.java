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
 * Runs the start-up commands once each in one JVM, output discarded, so that the AOT cache
 * holds the classes of every quick command, not only of the first.
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
                new String[]{"--help"},
                new String[]{"formats"},
                new String[]{"parse", sample},
                new String[]{"parse", "--json", sample},
                new String[]{"inspect", sample},
                new String[]{"inspect", "--json", sample},
                new String[]{"inspect", "--to", "f32", sample},
                new String[]{"inspect", sample + ".missing"},
                new String[]{"inspect", "--bad-option", sample});
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
