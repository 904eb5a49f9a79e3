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
 * each with {@code --debug} anywhere. For {@code remember} and {@code convert}, picocli's
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
     * The options each command takes on this route, by every name of the command; the same
     * as picocli's model of it minus help and version (which picocli prints), checked by
     * {@code FastPathTest} so that the two cannot drift: an option added to a command class
     * fails that test until it is here, and the other way round.
     */
    static final Map<String, Set<String>> OPTIONS = Map.of(
            "parse", Set.of("--debug", "--json"),
            "inspect", Set.of("--debug", "--json", "--full", "--to"),
            "info", Set.of("--debug", "--json", "--full", "--to"),
            "remember", union(Set.of("--debug", "--to"), OUTPUT),
            "dequantize", union(Set.of("--debug", "--to"), OUTPUT),
            "convert", union(Set.of("--debug", "--to", "--dtype", "--as-stored", "--no-vocab", "--gguf-kv",
                    "--gguf-metadata", "--split-max-size"), OUTPUT),
            "formats", Set.of("--debug", "--json"),
            "aot-train", Set.of("--debug"),
            "aot-train-recover", Set.of("--debug"));

    /**
     * Commands that always go through picocli: forget and diff run long enough that its
     * start-up does not matter, and their options are too many to mirror here ({@code diff}
     * reads two whole models); completion and man print picocli's own model of the commands.
     */
    static final Set<String> PICOCLI_ONLY_COMMANDS = Set.of("forget", "quantize", "diff", "completion", "man");

    /** The options above that take a value. */
    static final Set<String> TAKE_A_VALUE = Set.of("--to", "--dtype", "-o", "--output", "--threads", "--gguf-kv",
            "--gguf-metadata", "--max-shard-size", "--split-max-size");

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
        Recover.OutputOptions output = new Recover.OutputOptions();
        GgufMetadataOptions gguf = new GgufMetadataOptions();
        Set<String> accepted = OPTIONS.get(command);
        if (accepted == null) return OptionalInt.empty();
        for (; i < args.length; i++) {
            String a = args[i];
            if (a.startsWith("-") && !a.equals(InputRef.STDIN) && !accepted.contains(a)) return OptionalInt.empty();
            switch (a) {
                case "--debug" -> {
                }
                case "--json" -> json = true;
                case "--full" -> {
                    if (!command.equals("inspect") && !command.equals("info")) return OptionalInt.empty();
                    full = true;
                }
                case "-o", "--output" -> {
                    if (!remember || i + 1 == args.length || output.output != null) return OptionalInt.empty();
                    output.output = args[++i];
                }
                case "--threads" -> {
                    if (!remember || i + 1 == args.length || output.threads != null) return OptionalInt.empty();
                    try {
                        output.threads = Integer.parseInt(args[++i]);
                    } catch (NumberFormatException e) {
                        return OptionalInt.empty();
                    }
                }
                case "--max-shard-size" -> {
                    if (!remember || i + 1 == args.length || output.maxShardSize != null) return OptionalInt.empty();
                    output.maxShardSize = args[++i];
                }
                case "--split-max-size" -> {
                    if (!convert || i + 1 == args.length || splitMaxSize != null) return OptionalInt.empty();
                    splitMaxSize = args[++i];
                }
                case "-q", "--quiet" -> {
                    if (!remember) return OptionalInt.empty();
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
                    if (!convert || i + 1 == args.length) return OptionalInt.empty();
                    try {
                        dtypeName = args[i + 1];
                        target = DType.recoveryTarget(args[++i]);
                    } catch (IllegalArgumentException e) {
                        return OptionalInt.empty();
                    }
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
                    if ((a.startsWith("-") && !a.equals(InputRef.STDIN)) || input != null) return OptionalInt.empty();
                    input = a;
                }
            }
        }
        Amn parent = new Amn(context);
        Callable<Integer> call;
        switch (command) {
            case "aot-train", "aot-train-recover" -> {
                // the training runs must not go through picocli, or its classes' JDK
                // dependencies land in the cache that every inspect loads at VM start
                if (input == null || json || full) return OptionalInt.empty();
                AotTrainCommand c = command.equals("aot-train") ? new AotTrainCommand() : new AotTrainCommand.Recover();
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
                c.target = target;
                c.dtypeName = dtypeName;
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
}
