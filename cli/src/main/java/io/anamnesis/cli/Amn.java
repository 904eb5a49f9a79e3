package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.ScopeType;

import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;

/**
 * {@code amn}, the command line: see inside tensor files, recover precision, convert,
 * quantize, compare.
 *
 * <p>Every failure becomes one line on stderr ({@code amn: <message>}) and an exit code
 * from {@link io.anamnesis.api.ErrorKind#exitCode()}; {@code --debug} adds the stack trace
 * and debug logging. The format and quantization modules are found at run time through
 * {@link Anamnesis#installed()}, so this module depends on the api alone.
 */
@Command(name = "amn",
        mixinStandardHelpOptions = true,
        // the version provider, Version, needs the run's providers: set in Picocli.run
        header = "See inside tensor files and recover the precision of quantized weights.",
        description = {
                "Reads .safetensors, .gguf, .npz/.npy and PyTorch .pth files, and recovers FP8, GPTQ, AWQ, "
                        + "bitsandbytes and GGUF-block weights to BF16, F16 or F32, bit-exact against the "
                        + "reference implementations; quantizes ('forget') with the installed quantizers and "
                        + "compares two files tensor by tensor ('diff').",
                "An input is a path, or ollama:<model>[:<tag>] for a model in the local Ollama store "
                        + "($OLLAMA_MODELS or ~/.ollama/models), or - (parse, inspect) for a safetensors or GGUF "
                        + "header on standard input, or (parse, inspect) an https:// or hf://ORG/REPO[@REV]/PATH URL, "
                        + "whose headers alone are read by HTTP range requests. -o - writes to standard output."},
        commandListHeading = "%nCommands:%n",
        subcommands = {
                ParseCommand.class,
                InspectCommand.class,
                RememberCommand.class,
                ConvertCommand.class,
                ForgetCommand.class,
                DiffCommand.class,
                FormatsCommand.class,
                CompletionCommand.class,
                ManCommand.class,
                AotTrainCommand.class,
                AotTrainCommand.Recover.class,
                AotTrainCommand.Forget.class,
                AotTrainCommand.Convert.class,
                CommandLine.HelpCommand.class},
        footerHeading = "%nExit codes:%n",
        footer = {
                "  0  ok",
                "  1  internal error (a bug: run again with --debug and report the stack trace)",
                "  2  usage: unknown command or option, bad value, malformed ollama: reference,",
                "     an output (or report) that is empty, the input or a file of its model,",
                "     named for another format, or neither a file, a symbolic link, a",
                "     character device nor a FIFO; a request the quantizer refuses (a type",
                "     that needs --imatrix given none, a setting the scheme cannot take such",
                "     as --block-size 48 for nf4); a URL given to remember, convert, forget",
                "     or diff; a diff of two files with no tensor name in common",
                "  3  malformed input: corrupt or truncated file (or Ollama manifest)",
                "  4  limit exceeded: the file declares sizes, counts or nesting beyond the",
                "     parse limits",
                "  5  security: the file reaches for code execution (a pickle global);",
                "     nothing ran",
                "  6  unsupported: recognized but not supported, or the module that handles it",
                "     (named in the message) is not installed; a tensor the scheme's blocks do",
                "     not tile, a --like reference with nothing quantized",
                "  7  I/O: missing or unreadable file, Ollama model, manifest or blob; an",
                "     input that is not a regular file (use - for a header on stdin) or that",
                "     changed while it was read; output not writable; a URL not found,",
                "     refused (401/403: a token may be needed, HF_TOKEN), timed out, or on a",
                "     server that ignores range requests",
                "  8  differ: amn diff found tensors, shapes, dtypes or values that differ",
                "",
                "Environment:",
                "  AMN_PLUGINS    plugin jars, or folders of them, separated by ':'; loaded",
                "                 with those in the image's plugins folder",
                "  AMN_KERNELS    auto, scalar or vector: the kernels (default scalar; auto",
                "                 for forget to a GGUF type but q8_0 and the float types,",
                "                 and for convert with a quantizing --dtype but q8_0)",
                "  AMN_JAVA_OPTS  more JVM options, e.g. -Xmx8g",
                "  OLLAMA_MODELS  the Ollama store for ollama: inputs (default ~/.ollama/models)",
                "  HF_TOKEN       an access token for hf:// and Hugging Face URLs (gated or",
                "                 private)",
                "  HF_ENDPOINT    the Hugging Face server of hf:// inputs (default",
                "                 https://huggingface.co)",
                "  AMN_HTTP_TIMEOUT  seconds each HTTP request may take (default 30)",
                "  NO_COLOR       plain output on a terminal too (so is output to a pipe or file)"})
public final class Amn implements Runnable {
    /** Exit codes outside {@link io.anamnesis.api.ErrorKind}. */
    static final int OK = 0;
    static final int INTERNAL = 1;
    static final int USAGE = 2;
    /** {@code amn diff}: the files differ (not an error: the answer). */
    static final int DIFFER = 8;

    private final Context context;

    @Option(names = "--debug", scope = ScopeType.INHERIT,
            description = "On failure print the stack trace; log each step to stderr.")
    boolean debug;

    Amn(Context context) {
        this.context = context;
    }

    /** What a command runs against: the providers, the streams and what they are, the environment. */
    record Context(Supplier<Anamnesis> providers, PrintWriter out, PrintWriter err,
                   Map<String, String> env, Path home, boolean debug, Terminal terminal) {
        Context {
            Objects.requireNonNull(providers);
            Objects.requireNonNull(out);
            Objects.requireNonNull(err);
            Objects.requireNonNull(terminal);
        }

        /** Streams that are not terminals (tests, embedders). */
        Context(Supplier<Anamnesis> providers, PrintWriter out, PrintWriter err,
                Map<String, String> env, Path home, boolean debug) {
            this(providers, out, err, env, home, debug, Terminal.none(env));
        }

        Anamnesis amn() {
            return providers.get();
        }

        /** The ollama store's models folder: $OLLAMA_MODELS, else ~/.ollama/models. */
        Path ollamaModels() {
            String configured = env.get("OLLAMA_MODELS");
            if (configured != null && !configured.isBlank()) return Path.of(configured);
            return home.resolve(".ollama").resolve("models");
        }

        /** A path or an ollama: reference, resolved to the file to read. */
        Path resolve(String reference) {
            return InputRef.resolve(reference, this);
        }
    }

    Context context() {
        return context;
    }

    @CommandLine.Spec
    CommandLine.Model.CommandSpec spec;

    @Override
    public void run() {
        throw new CommandLine.ParameterException(spec.commandLine(),
                "missing command: parse, inspect, remember, convert, forget, diff, formats or completion");
    }

    public static void main(String[] args) {
        if (args.length > 0 && !args[0].startsWith("-")) initializeAside(args);
        PrintWriter out = new PrintWriter(new java.io.OutputStreamWriter(System.out, StandardCharsets.UTF_8), true);
        PrintWriter err = new PrintWriter(new java.io.OutputStreamWriter(System.err, StandardCharsets.UTF_8), true);
        Map<String, String> env = System.getenv();
        Terminal terminal = Terminal.ofProcess(env);
        Supplier<Anamnesis> providers = Plugins.providers(env, Plugins.imageFolder(),
                warning -> err.println(terminal.warningPrefix() + warning));
        int code = execute(providers, out, err, env, Path.of(System.getProperty("user.home", ".")), terminal, true, args);
        out.flush();
        err.flush();
        // Success returns normally: System.exit initializes the System.Logger machinery
        // (Runtime.exit is logged since JDK 17), a few ms of a 100 ms start-up budget.
        if (code != OK) System.exit(code);
    }

    /**
     * Initializes, on a thread of its own, the JDK classes whose first use is slow and that a
     * command will need before its first byte of output. Started first, that work runs on the
     * second core while this thread loads the modules and opens the file; if the command gets
     * there first it waits for the initialization as it would have anyway. Nothing is computed
     * twice and no result is used.
     *
     * <ul>
     * <li>{@link java.math.BigDecimal}: reading a safetensors header or a config.json starts a
     * Jackson parser, whose base class has BigDecimal constants, and JDK 25's BigDecimal
     * computes 5^(2^16) while it initializes: 20-40 ms of CPU (measured) before the first byte
     * of JSON, a fifth of what {@code amn inspect} takes.</li>
     * <li>{@link java.util.Calendar}, when an argument names a zip-based file (a torch.save
     * checkpoint, an .npz): commons-compress turns every directory record's DOS time into a
     * {@code Date} through a {@code Calendar}, and the first one loads the locale providers
     * and the time-zone data, about 20 ms of a 256 MiB .pth's 0.3 s (docs/benchmarks.md).</li>
     * </ul>
     */
    private static void initializeAside(String[] args) {
        boolean calendar = anyZipNamed(args);
        Thread.ofPlatform().daemon().name("amn-init").start(() -> {
            if (calendar) java.util.Calendar.getInstance();
            java.math.BigDecimal.ONE.signum();
        });
    }

    private static boolean anyZipNamed(String[] args) {
        for (String arg : args) {
            if (zipNamed(arg)) return true;
        }
        return false;
    }

    /**
     * A file name of a zip-based format: torch.save's (.pth, .pt, .bin, .ckpt) or NumPy's .npz
     * (the extensions api's KnownModules guesses those formats by; the providers, which know
     * them too, are not loaded yet when this runs).
     */
    static boolean zipNamed(String arg) {
        int dot = arg.lastIndexOf('.');
        if (dot < 0) return false;
        String ext = arg.substring(dot + 1).toLowerCase(java.util.Locale.ROOT);
        return switch (ext) {
            case "pth", "pt", "bin", "ckpt", "npz" -> true;
            default -> false;
        };
    }

    /**
     * Runs {@code amn args} with every installed module and the plugins of {@code AMN_PLUGINS};
     * returns the exit code, never exits.
     *
     * @param out  where a command's output goes
     * @param err  where errors, warnings and progress go
     * @param args the command line, as after {@code amn}
     * @return the exit code
     */
    public static int execute(PrintWriter out, PrintWriter err, String... args) {
        Map<String, String> env = System.getenv();
        return execute(Plugins.providers(env, java.util.Optional.empty(), w -> err.println("amn: warning: " + w)),
                out, err, env, Path.of(System.getProperty("user.home", ".")), args);
    }

    /**
     * Runs {@code amn args} with an explicit set of providers (tests, embedders).
     *
     * @param amn  the providers
     * @param out  where a command's output goes
     * @param err  where errors, warnings and progress go
     * @param args the command line, as after {@code amn}
     * @return the exit code
     */
    public static int execute(Anamnesis amn, PrintWriter out, PrintWriter err, String... args) {
        Objects.requireNonNull(amn);
        return execute(() -> amn, out, err, System.getenv(), Path.of(System.getProperty("user.home", ".")), args);
    }

    static int execute(Supplier<Anamnesis> providers, PrintWriter out, PrintWriter err,
                       Map<String, String> env, Path home, String... args) {
        return execute(providers, out, err, env, home, true, args);
    }

    /**
     * @param fastPath whether the plain forms of parse, inspect and formats may skip
     *                 picocli (see {@link FastPath}); tests compare both routes
     */
    static int execute(Supplier<Anamnesis> providers, PrintWriter out, PrintWriter err,
                       Map<String, String> env, Path home, boolean fastPath, String... args) {
        return execute(providers, out, err, env, home, Terminal.none(env), fastPath, args);
    }

    static int execute(Supplier<Anamnesis> providers, PrintWriter out, PrintWriter err,
                       Map<String, String> env, Path home, Terminal terminal, boolean fastPath, String... args) {
        boolean debug = wantsDebug(args);
        Log.enabled(debug);
        // what commands print may come from a file: control characters are escaped on the way
        // out (Printable); picocli's help, which is amn's own and may be coloured, is not
        Context context = new Context(providers, Printable.of(out), err, env, home, debug, terminal);
        try {
            if (fastPath) {
                var quick = FastPath.run(context, args);
                if (quick.isPresent()) return quick.getAsInt();
            }
            return Picocli.run(context, out, args);
        } catch (RuntimeException | Error e) {
            return failure(e, context);
        } finally {
            context.out().flush();
            out.flush();
            err.flush();
        }
    }

    /**
     * The full command line. Picocli (Java 5 bytecode, which the AOT cache cannot hold, plus
     * reflection and annotation proxies) costs ~100 ms of start-up, so it lives in its own
     * class and is loaded only off the fast path.
     */
    private static final class Picocli {
        /** @param help where help, version and usage go: the stream itself, colours and all */
        static int run(Context context, PrintWriter help, String... args) {
            CommandLine cl = new CommandLine(new Amn(context));
            cl.setOut(help);
            cl.setErr(context.err());
            // colour by amn's rule (Terminal), not by picocli's own guess at the console
            cl.setColorScheme(CommandLine.Help.defaultColorScheme(
                    context.terminal().colourOut() ? CommandLine.Help.Ansi.ON : CommandLine.Help.Ansi.OFF));
            cl.getCommandSpec().versionProvider(new Version(context));
            cl.setParameterExceptionHandler((ex, a) -> usageError(ex, context));
            cl.setExecutionExceptionHandler((ex, c, r) -> failure(ex, context));
            return cl.execute(args);
        }

        private static int usageError(CommandLine.ParameterException ex, Context context) {
            PrintWriter err = context.err();
            CommandLine.Model.CommandSpec spec = ex.getCommandLine().getCommandSpec();
            String command = spec.qualifiedName();
            String message = oneLine(ex.getMessage());
            // picocli's "Unmatched argument at index 0: 'frobnicate'" for what is a command name
            if (ex instanceof CommandLine.UnmatchedArgumentException u && spec.parent() == null
                    && !u.getUnmatched().isEmpty() && !u.getUnmatched().getFirst().startsWith("-")) {
                message = "unknown command '" + u.getUnmatched().getFirst() + "' (commands: "
                        + String.join(", ", spec.subcommands().values().stream().map(CommandLine::getCommandSpec)
                        .filter(s -> !s.usageMessage().hidden()).map(CommandLine.Model.CommandSpec::name)
                        .filter(n -> !n.equals("help")).distinct().toList()) + ")";
            }
            err.println(context.terminal().errorPrefix() + Printable.of(message) + " (see '" + command + " --help')");
            err.flush();
            return USAGE;
        }
    }

    /** {@code --debug} anywhere before a {@code --} end-of-options marker. */
    static boolean wantsDebug(String... args) {
        for (String a : args) {
            if (a.equals("--")) return false;
            if (a.equals("--debug")) return true;
        }
        return false;
    }

    /** Maps a failure to one stderr line (its prefix coloured on a terminal) and its exit code. */
    static int failure(Throwable ex, Context context) {
        return failure(ex, context.err(), context.debug(), context.terminal().errorPrefix());
    }

    /** Maps a failure to one plain stderr line and its exit code. */
    static int failure(Throwable ex, PrintWriter err, boolean debug) {
        return failure(ex, err, debug, "amn: ");
    }

    private static int failure(Throwable ex, PrintWriter err, boolean debug, String prefix) {
        int code;
        String message;
        switch (ex) {
            case AnamnesisException ae -> {
                code = ae.kind().exitCode();
                message = oneLine(ae.getMessage());
            }
            case UsageException ue -> {
                code = USAGE;
                message = oneLine(ue.getMessage());
            }
            case OutOfMemoryError oom -> {
                code = INTERNAL;
                message = "out of memory (" + oom.getMessage() + "); give the JVM more with AMN_JAVA_OPTS=-Xmx...";
            }
            default -> {
                code = INTERNAL;
                message = "internal error: " + ex.getClass().getName()
                        + (ex.getMessage() == null ? "" : ": " + oneLine(ex.getMessage()))
                        + (debug ? "" : " (run with --debug for the stack trace)");
            }
        }
        err.println(prefix + message);
        if (debug) ex.printStackTrace(err);
        err.flush();
        return code;
    }

    /** Messages are one line; a reader's multi-line message is folded rather than cut. */
    static String oneLine(String message) {
        if (message == null || message.isBlank()) return "failed without a message";
        if (message.indexOf('\n') < 0 && message.indexOf('\r') < 0) return Printable.of(message.strip());
        StringBuilder sb = new StringBuilder();
        for (String line : message.strip().split("\\R")) {
            String l = line.strip();
            if (l.isEmpty()) continue;
            if (!sb.isEmpty()) sb.append(' ');
            sb.append(l);
        }
        // a message may quote a tensor name or a value from the file: no control character reaches the terminal
        return Printable.of(sb.toString());
    }

    /**
     * {@code amn --version}: amn's version, the runtime's, and every module that provides
     * something (with the api and the cli), each with the version its module descriptor
     * records; plugins are marked as such.
     */
    static final class Version implements CommandLine.IVersionProvider {
        private final Context context;

        Version(Context context) {
            this.context = context;
        }

        @Override
        public String[] getVersion() {
            java.util.List<String> lines = new java.util.ArrayList<>();
            lines.add("amn " + versionOf(Amn.class.getModule()).orElseGet(() ->
                    Objects.requireNonNullElse(Amn.class.getPackage().getImplementationVersion(), "dev")));
            lines.add("Java " + Runtime.version() + " (" + System.getProperty("java.vm.name") + ")");
            java.util.SortedMap<String, String> modules = new java.util.TreeMap<>();
            addModule(modules, Anamnesis.class);
            addModule(modules, Amn.class);
            Anamnesis amn = context.amn();
            for (Object provider : providers(amn)) addModule(modules, provider.getClass());
            if (!modules.isEmpty()) {
                lines.add("Modules:");
                int width = modules.keySet().stream().mapToInt(String::length).max().orElse(0);
                modules.forEach((name, v) -> lines.add("  " + name + " ".repeat(width - name.length() + 2) + v));
            }
            return lines.toArray(String[]::new);
        }

        private static java.util.List<Object> providers(Anamnesis amn) {
            java.util.List<Object> all = new java.util.ArrayList<>();
            all.addAll(amn.readers());
            all.addAll(amn.writers());
            all.addAll(amn.dequantizers());
            all.addAll(amn.quantizers());
            all.addAll(amn.exporters());
            return all;
        }

        private static void addModule(Map<String, String> modules, Class<?> type) {
            Module m = type.getModule();
            if (!m.isNamed()) {
                modules.putIfAbsent("unnamed (class path)", "");
                return;
            }
            String version = versionOf(m).orElse("unversioned");
            boolean plugin = m.getLayer() != null && m.getLayer() != ModuleLayer.boot();
            modules.put(m.getName(), plugin ? version + "  (plugin)" : version);
        }

        private static java.util.Optional<String> versionOf(Module m) {
            return m.getDescriptor() == null ? java.util.Optional.empty() : m.getDescriptor().rawVersion();
        }
    }
}
