package io.anamnesis.cli;

import io.anamnesis.api.DType;

import java.util.OptionalInt;
import java.util.concurrent.Callable;

/**
 * The plain forms of the quick commands without picocli: {@code parse <file> [--json]},
 * {@code inspect|info <file> [--to bf16|f16|f32] [--json] [--full]}, {@code formats [--json]},
 * each with {@code --debug} anywhere. Picocli's start-up (Java 5 bytecode that the AOT cache
 * cannot hold, reflection, annotation proxies) is most of a 100 ms budget, and these are
 * the commands people and servers run in loops.
 *
 * <p>Anything else, including help, a bad value, an unknown option, {@code --opt=value}
 * spellings or a stray argument, is left to picocli, so usage errors and help read the same
 * whichever route a command line takes. The commands themselves are the same objects with
 * the same fields picocli sets; tests run both routes on the same arguments.
 */
final class FastPath {
    private FastPath() {
    }

    static OptionalInt run(Amn.Context context, String... args) {
        int i = 0;
        while (i < args.length && args[i].equals("--debug")) i++;
        if (i == args.length) return OptionalInt.empty();
        String command = args[i++];
        String input = null;
        boolean json = false;
        boolean full = false;
        DType target = DType.BF16;
        for (; i < args.length; i++) {
            String a = args[i];
            switch (a) {
                case "--debug" -> {
                }
                case "--json" -> json = true;
                case "--full" -> {
                    if (!command.equals("inspect") && !command.equals("info")) return OptionalInt.empty();
                    full = true;
                }
                case "--to" -> {
                    if ((!command.equals("inspect") && !command.equals("info")) || i + 1 == args.length) {
                        return OptionalInt.empty();
                    }
                    try {
                        target = DType.recoveryTarget(args[++i]);
                    } catch (IllegalArgumentException e) {
                        return OptionalInt.empty();
                    }
                }
                default -> {
                    if (a.startsWith("-") || input != null) return OptionalInt.empty();
                    input = a;
                }
            }
        }
        Amn parent = new Amn(context);
        Callable<Integer> call;
        switch (command) {
            case "parse" -> {
                if (input == null) return OptionalInt.empty();
                ParseCommand c = new ParseCommand();
                c.parent = parent;
                c.input = input;
                c.json = json;
                call = c;
            }
            case "inspect", "info" -> {
                if (input == null) return OptionalInt.empty();
                InspectCommand c = new InspectCommand();
                c.parent = parent;
                c.input = input;
                c.json = json;
                c.full = full;
                c.target = target;
                call = c;
            }
            case "formats" -> {
                if (input != null) return OptionalInt.empty();
                FormatsCommand c = new FormatsCommand();
                c.parent = parent;
                c.json = json;
                call = c;
            }
            default -> {
                return OptionalInt.empty();
            }
        }
        try {
            return OptionalInt.of(call.call());
        } catch (RuntimeException | Error e) {
            return OptionalInt.of(Amn.failure(e, context.err(), context.debug()));
        } catch (Exception e) {
            return OptionalInt.of(Amn.failure(e, context.err(), context.debug()));
        }
    }
}
