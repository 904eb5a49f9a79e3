package io.anamnesis.cli;

import io.anamnesis.api.RecoveryPlan;

import java.io.PrintWriter;

/** A plan's problems (each names a tensor, its scheme and what to do), printed as warnings on stderr. */
final class Warnings {
    private Warnings() {
    }

    /** More than this many problems are cut short: a 400-layer model would repeat one hint 400 times. */
    static final int MAX_SHOWN = 3;

    static void print(Amn.Context ctx, RecoveryPlan plan) {
        PrintWriter err = ctx.err();
        String prefix = ctx.terminal().warningPrefix();
        var problems = plan.problems();
        for (String p : problems.subList(0, Math.min(MAX_SHOWN, problems.size()))) {
            err.println(prefix + Amn.oneLine(p));
        }
        if (problems.size() > MAX_SHOWN) {
            err.println(prefix + "... and " + (problems.size() - MAX_SHOWN) + " more tensors like these"
                    + " ('parse --json' lists them all under \"problems\")");
        }
        err.flush();
    }
}
