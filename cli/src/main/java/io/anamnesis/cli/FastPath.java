package io.anamnesis.cli;

import io.anamnesis.api.DType;

import java.util.Map;
import java.util.OptionalInt;
import java.util.Set;
import java.util.concurrent.Callable;

/**
 * The plain forms of the common commands without picocli: {@code parse <file> [--json]},
 * {@code inspect|info <file> [--to bf16|f16|f32] [--json] [--full]}, {@code formats [--json]},
 * {@code remember|dequantize <file> [--to T] [-o|--output P] [--threads N] [-q|--quiet]},
 * {@code convert <file> --to FORMAT [--dtype T] [--as-stored] [--gguf-kv K=T:V]... [--gguf-metadata F]
 * [--split-max-size S]} with the same output options ({@code --max-shard-size} among them),
 * {@code forget|quantize <file> --to T|--like R} with its own options and the same output
 * options, {@code diff <a> <b> [--json] [--threads N]}, each with {@code --debug} anywhere. For {@code remember} and {@code convert}, picocli's
 * ~0.2 s of start-up is most of the fixed cost of a run. Picocli's start-up (Java 5 bytecode that the AOT cache
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

    private static final Set<String> OUTPUT = Set.of("-o", "--output", "--threads", "-q", "--quiet", "--max-shard-size");

    /**
     * forget's options. Its run of a small file was twice remember's (0.36 s against 0.16 s
     * for the 250 KB sample) before it came here: picocli's reflection over the commands,
     * not the quantizing, was the difference.
     */
    private static final Set<String> FORGET = union(Set.of("--debug", "--to", "--like", "--imatrix", "--keep", "--pure",
            "--block-size", "--double-quant", "--granularity", "--scale-dtype", "--report", "--split-max-size"), OUTPUT);

    /**
     * The options each command takes on this route, by every name of the command; the same
     * as picocli's model of it minus help and version (which picocli prints), checked by
     * {@code FastPathTest} so that the two cannot drift: an option added to a command class
     * fails that test until it is here, and the other way round.
     */
    static final Map<String, Set<String>> OPTIONS = Map.ofEntries(
            Map.entry("parse", Set.of("--debug", "--json")),
            Map.entry("inspect", Set.of("--debug", "--json", "--full", "--to")),
            Map.entry("info", Set.of("--debug", "--json", "--full", "--to")),
            Map.entry("remember", union(Set.of("--debug", "--to"), OUTPUT)),
            Map.entry("dequantize", union(Set.of("--debug", "--to"), OUTPUT)),
            Map.entry("convert", union(Set.of("--debug", "--to", "--dtype", "--as-stored", "--no-vocab", "--gguf-kv",
                    "--gguf-metadata", "--split-max-size"), OUTPUT)),
            Map.entry("forget", FORGET),
            Map.entry("quantize", FORGET),
            Map.entry("formats", Set.of("--debug", "--json")),
            Map.entry("diff", Set.of("--debug", "--json", "--threads")),
            Map.entry("aot-train", Set.of("--debug")),
            Map.entry("aot-train-recover", Set.of("--debug")),
            Map.entry("aot-train-forget", Set.of("--debug")),
            Map.entry("aot-train-convert", Set.of("--debug")));

    /**
     * Commands that always go through picocli: completion and man print picocli's own model of
     * the commands. (diff was here, on the reasoning that it reads two whole models; a diff of
     * two small files then took 0.7 s, most of it picocli's start-up.)
     */
    static final Set<String> PICOCLI_ONLY_COMMANDS = Set.of("completion", "man");

    /** The options above that take a value. */
    static final Set<String> TAKE_A_VALUE = Set.of("--to", "--dtype", "-o", "--output", "--threads", "--gguf-kv",
            "--gguf-metadata", "--max-shard-size", "--split-max-size", "--like", "--imatrix", "--keep", "--block-size",
            "--granularity", "--scale-dtype", "--report");

    private static Set<String> union(Set<String> a, Set<String> b) {
        Set<String> out = new java.util.HashSet<>(a);
        out.addAll(b);
        return Set.copyOf(out);
    }

    static OptionalInt run(Amn.Context context, String... args) {
        int i = 0;
        while (i < args.length && args[i].equals("--debug")) i++;
        if (i == args.length) return OptionalInt.empty();
        String command = args[i++];
        String input = null;
        String second = null; // diff's <b>
        boolean json = false;
        boolean full = false;
        DType target = DType.BF16;
        String dtypeName = null;
        boolean convert = command.equals("convert");
        boolean remember = command.equals("remember") || command.equals("dequantize") || convert;
        String format = null;
        boolean asStored = false;
        boolean noVocab = false;
        String splitMaxSize = null;
        boolean inspect = command.equals("inspect") || command.equals("info");
        boolean forget = command.equals("forget") || command.equals("quantize");
        boolean diff = command.equals("diff");
        ForgetCommand forgetting = forget ? new ForgetCommand() : null;
        Recover.OutputOptions output = new Recover.OutputOptions();
        GgufMetadataOptions gguf = new GgufMetadataOptions();
        Set<String> accepted = OPTIONS.get(command);
        if (accepted == null) return OptionalInt.empty();
        for (; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("-") && !a.equals(InputRef.STDIN) && !accepted.contains(a)) return OptionalInt.empty();
            if (forget && !OUTPUT.contains(a) && !a.equals("--debug")) {
                // forget's own options; the output options are shared with remember below
                if (TAKE_A_VALUE.contains(a) && (i + 1 == args.length || accepted.contains(args[i + 1]))) {
                    return OptionalInt.empty(); // picocli says a value is missing
                }
                boolean set;
                try {
                    set = forgetOption(forgetting, a, TAKE_A_VALUE.contains(a) ? args[++i] : null);
                } catch (Fallback e) {
                    return OptionalInt.empty();
                }
                if (!set) {
                    if (a.startsWith("-") && !a.equals(InputRef.STDIN)) return OptionalInt.empty();
                    if (input != null) return OptionalInt.empty();
                    input = a;
                }
                continue;
            }
            switch (a) {
                case "--debug" -> {
                }
                case "--json" -> json = true;
                case "--full" -> {
                    if (!command.equals("inspect") && !command.equals("info")) return OptionalInt.empty();
                    full = true;
                }
                case "-o", "--output" -> {
                    if (!(remember || forget) || i + 1 == args.length || output.output != null) return OptionalInt.empty();
                    output.output = args[++i];
                }
                case "--threads" -> {
                    if (!(remember || forget || diff) || i + 1 == args.length || output.threads != null) return OptionalInt.empty();
                    try {
                        output.threads = Integer.parseInt(args[++i]);
                    } catch (NumberFormatException e) {
                        return OptionalInt.empty();
                    }
                }
                case "--max-shard-size" -> {
                    if (!(remember || forget) || i + 1 == args.length || output.maxShardSize != null) return OptionalInt.empty();
                    output.maxShardSize = args[++i];
                }
                case "--split-max-size" -> {
                    if (!convert || i + 1 == args.length || splitMaxSize != null) return OptionalInt.empty();
                    splitMaxSize = args[++i];
                }
                case "-q", "--quiet" -> {
                    if (!(remember || forget)) return OptionalInt.empty();
                    output.quiet = true;
                }
                case "--as-stored" -> {
                    if (!convert) return OptionalInt.empty();
                    asStored = true;
                }
                case "--no-vocab" -> {
                    if (!convert) return OptionalInt.empty();
                    noVocab = true;
                }
                case "--gguf-kv" -> {
                    if (!convert || i + 1 == args.length) return OptionalInt.empty();
                    gguf.keyValues.add(args[++i]);
                }
                case "--gguf-metadata" -> {
                    if (!convert || i + 1 == args.length || gguf.file != null) return OptionalInt.empty();
                    try {
                        gguf.file = java.nio.file.Path.of(args[++i]);
                    } catch (java.nio.file.InvalidPathException e) {
                        return OptionalInt.empty();
                    }
                }
                case "--dtype" -> {
                    // a recovery dtype or a quantizer's target (q8_0, q4_k_m): ConvertCommand.dtype tells them apart.
                    // Quantizing ones went through picocli before: 0.35 s of a small folder's 0.55 s to GGUF q8_0
                    if (!convert || i + 1 == args.length || dtypeName != null || accepted.contains(args[i + 1])) {
                        return OptionalInt.empty(); // picocli says the value is missing or given twice
                    }
                    dtypeName = args[++i];
                }
                case "--to" -> {
                    if (convert) {
                        if (i + 1 == args.length || format != null) return OptionalInt.empty();
                        format = args[++i];
                        continue;
                    }
                    if ((!inspect && !remember) || i + 1 == args.length) {
                        return OptionalInt.empty();
                    }
                    try {
                        target = DType.recoveryTarget(args[++i]);
                    } catch (IllegalArgumentException e) {
                        return OptionalInt.empty();
                    }
                }
                default -> {
                    if (a.startsWith("-") && !a.equals(InputRef.STDIN)) return OptionalInt.empty();
                    if (input == null) {
                        input = a;
                    } else if (diff && second == null) {
                        second = a;
                    } else {
                        return OptionalInt.empty();
                    }
                }
            }
        }
        Amn parent = new Amn(context);
        Callable<Integer> call;
        switch (command) {
            case "aot-train", "aot-train-recover", "aot-train-forget", "aot-train-convert" -> {
                // the training runs must not go through picocli, or its classes' JDK
                // dependencies land in the cache that every inspect loads at VM start
                if (input == null || json || full) return OptionalInt.empty();
                AotTrainCommand c = switch (command) {
                    case "aot-train" -> new AotTrainCommand();
                    case "aot-train-recover" -> new AotTrainCommand.Recover();
                    case "aot-train-forget" -> new AotTrainCommand.Forget();
                    default -> new AotTrainCommand.Convert();
                };
                c.parent = parent;
                c.sample = input;
                call = c;
            }
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
            case "convert" -> {
                if (input == null || json || format == null) return OptionalInt.empty();
                ConvertCommand c = new ConvertCommand();
                c.parent = parent;
                c.input = input;
                c.format = format;
                if (dtypeName != null) c.dtype(dtypeName);
                c.asStored = asStored;
                c.noVocab = noVocab;
                c.splitMaxSize = splitMaxSize;
                c.output = output;
                c.gguf = gguf;
                call = c;
            }
            case "remember", "dequantize" -> {
                if (input == null || json) return OptionalInt.empty();
                RememberCommand c = new RememberCommand();
                c.parent = parent;
                c.input = input;
                c.target = target;
                c.output = output;
                call = c;
            }
            case "forget", "quantize" -> {
                if (input == null || json) return OptionalInt.empty();
                forgetting.parent = parent;
                forgetting.input = input;
                forgetting.output = output;
                call = forgetting;
            }
            case "diff" -> {
                if (second == null) return OptionalInt.empty();
                DiffCommand c = new DiffCommand();
                c.parent = parent;
                c.a = input;
                c.b = second;
                c.json = json;
                c.threads = output.threads;
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
            return OptionalInt.of(Amn.failure(e, context));
        } catch (Exception e) {
            return OptionalInt.of(Amn.failure(e, context));
        }
    }

    /**
     * Sets forget's option {@code name} (with its {@code value}, for those that take one) as
     * picocli would; false for what is not one of forget's own options (the input), and false
     * too, so that picocli reports it, for a value picocli would refuse or a second use of an
     * option given once.
     */
    private static boolean forgetOption(ForgetCommand c, String name, String value) {
        try {
            switch (name) {
                case "--to" -> c.target = once(c.target, value);
                case "--like" -> c.like = once(c.like, value);
                case "--imatrix" -> c.imatrix = once(c.imatrix, java.nio.file.Path.of(value));
                case "--report" -> c.report = once(c.report, java.nio.file.Path.of(value));
                case "--keep" -> c.keep.add(value);
                case "--pure" -> c.pure = !c.pure ? true : failTwice();
                case "--double-quant" -> c.doubleQuant = !c.doubleQuant ? true : failTwice();
                case "--block-size" -> c.blockSize = once(c.blockSize, Integer.parseInt(value));
                case "--granularity" -> c.granularity = once(c.granularity, value);
                case "--scale-dtype" -> c.scaleDtype = once(c.scaleDtype, value);
                case "--split-max-size" -> c.splitMaxSize = once(c.splitMaxSize, value);
                default -> {
                    return false;
                }
            }
            return true;
        } catch (IllegalArgumentException e) {
            // NumberFormatException, InvalidPathException, or an option given twice: picocli's message
            throw new Fallback();
        }
    }

    private static <T> T once(T current, T value) {
        if (current != null) throw new IllegalArgumentException("given twice");
        return value;
    }

    private static boolean failTwice() {
        throw new IllegalArgumentException("given twice");
    }

    /** Thrown while reading the arguments: leave this command line to picocli. */
    private static final class Fallback extends RuntimeException {
        Fallback() {
            super(null, null, false, false);
        }
    }
}
