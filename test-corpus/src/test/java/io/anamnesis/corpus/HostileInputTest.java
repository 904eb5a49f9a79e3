package io.anamnesis.corpus;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.cli.Amn;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;
import org.junit.jupiter.api.io.TempDir;
import org.opentest4j.AssertionFailedError;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * The promise "bad input of any kind gets a typed error, never a stack trace, hang or OOM",
 * checked for every installed reader and dequantizer: each valid file (the shared corpus'
 * inputs and a few files built in {@link SeedFiles}) is mutated in a fixed, seeded way:
 * byte-level ({@link Mutations}: truncations at header boundaries, hostile values in the
 * length, count and offset fields {@link FileAnatomy} finds, edited header text and pickle
 * strings, bit flips, byte overwrites, removed and duplicated regions, garbage appended),
 * meaning-level ({@link SemanticMutations}: valid safetensors with tensors reshaped, retyped,
 * dropped or renamed, quantization configs edited, in the header or beside the file) and
 * inside ZIP members ({@link ZipMembers}); {@link CraftedFiles} adds files at a hostile
 * scale or depth. Every mutant goes the whole way: open, metadata, plan to F32, write with
 * the safetensors writer, materialize every output, then again in BF16 or F16.
 *
 * <p>A mutant may succeed or fail with an {@link AnamnesisException}. Anything else thrown,
 * a run over {@link #TIMEOUT}, more than {@link #HEAP_PER_MUTANT} bytes of heap allocated,
 * a plan that declares an output out of all proportion to the file, or a failed write that
 * leaves a file behind is a violation, reported with the seed file, the mutant's id and the
 * stack trace. Violations already reported to a module's owner sit in
 * {@link #KNOWN_ISSUES}; any other fails the test.
 */
class HostileInputTest {
    static final Anamnesis AMN = Anamnesis.installed();

    static final Duration TIMEOUT = Duration.ofSeconds(10);
    /**
     * Crafted files hold tens of thousands of tensors: about 1.5 s of linear work, which a
     * machine shared by many builds (load 10 on 2 cores) stretches past 6 s. Quadratic work
     * at that size takes minutes.
     */
    static final Duration CRAFTED_TIMEOUT = Duration.ofSeconds(30);
    /**
     * Heap one mutant may allocate in all (garbage included): no parse of a small file needs
     * more. Crafted files of a few MB may allocate {@link #HEAP_PER_FILE_BYTE} times their size.
     */
    static final long HEAP_PER_MUTANT = 256L << 20;
    static final long HEAP_PER_FILE_BYTE = 256;
    /** Outputs up to this size are always materialized; above it they must be in proportion to the file. */
    static final long OUTPUT_FLOOR = 64L << 20;
    /** F32 out of 1.56-bit IQ1_S is about 20 times the input; 64 leaves room for headers and padding. */
    static final long OUTPUT_RATIO = 64;

    /** Mutants of one seed file: a family's budget is shared by its cases, within these bounds. */
    static final int FAMILY_BUDGET = 1200;
    static final int MIN_PER_FILE = 30;
    static final int MAX_PER_FILE = 250;
    static final int PER_BUILT_SEED = 300;
    /** Inputs above this size get only the header mutations. */
    static final long LARGE_INPUT = 4L << 20;
    static final int PER_LARGE_FILE = 20;

    /**
     * Violations reported to a module's owner and not yet fixed, as {@code seed|mutant id}.
     * Each is still run; it does not fail the test, and one that no longer happens is
     * printed as stale so the entry can go.
     */
    static final Map<String, String> KNOWN_ISSUES = Map.ofEntries(
    );

    private static final Map<String, Stats> STATS = new ConcurrentHashMap<>();
    /** Outcomes by kind of mutation ({@code trunc}, {@code u64}, {@code st.reshape}, {@code zip:pickle}, ...). */
    private static final Map<String, Map<String, Integer>> BY_MUTATION = new ConcurrentHashMap<>();

    private static final com.sun.management.ThreadMXBean THREADS =
            (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();

    @TempDir
    static Path tmp;

    @TestFactory
    Stream<DynamicTest> builtSeeds() {
        return SeedFiles.all().entrySet().stream().map(e -> DynamicTest.dynamicTest("built/" + e.getKey(), () ->
                mutate("built/" + e.getKey(), e.getKey(), e.getValue(), PER_BUILT_SEED)));
    }

    /** Files at a hostile scale or depth ({@link CraftedFiles}), each run once as it is. */
    @TestFactory
    Stream<DynamicTest> craftedFiles() {
        return CraftedFiles.all().entrySet().stream().map(e -> DynamicTest.dynamicTest("crafted/" + e.getKey(), () ->
                check("crafted/" + e.getKey(), e.getKey(), e.getValue().get(),
                        List.of(new Mutations.Mutant("as-built", b -> b)), CRAFTED_TIMEOUT)));
    }

    @TestFactory
    Stream<DynamicTest> corpusInputs() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort(
                    "shared corpus not found (set -Danamnesis.corpus or ANAMNESIS_CORPUS): only the built seeds are mutated")));
        }
        List<CorpusCase> cases = CorpusCase.all(root.get());
        Map<String, Long> perFamily = cases.stream().collect(Collectors.groupingBy(CorpusCase::family, Collectors.counting()));
        return cases.stream().map(c -> DynamicTest.dynamicTest(c.id(), () -> {
            Path input = c.input();
            long size = Files.size(input);
            int cap = size > LARGE_INPUT ? PER_LARGE_FILE
                    : (int) Math.max(MIN_PER_FILE, Math.min(MAX_PER_FILE, FAMILY_BUDGET / perFamily.get(c.family())));
            if (size > LARGE_INPUT) System.out.println("[hostile] " + c.id() + ": " + size + " bytes, header mutations only");
            mutate(c.id(), input.getFileName().toString(), Files.readAllBytes(input), cap);
        }));
    }

    /** What happened to one seed's mutants. */
    record Stats(String seed, int mutants, Map<String, Integer> outcomes, long millis, List<String> violations) {
    }

    static void mutate(String seed, String fileName, byte[] original, int cap) throws IOException {
        List<Mutations.Mutant> mutants = new ArrayList<>();
        mutants.add(new Mutations.Mutant("original", b -> b));
        mutants.addAll(Mutations.of(seed, original, original.length > LARGE_INPUT ? PER_LARGE_FILE : cap));
        if (original.length <= LARGE_INPUT) {
            mutants.addAll(Mutations.pick(SemanticMutations.of(original), cap, new Mutations.SplitMix(seed + "/semantic")));
            mutants.addAll(Mutations.pick(SemanticMutations.sidecars(original), cap / 2, new Mutations.SplitMix(seed + "/sidecars")));
            mutants.addAll(Mutations.pick(ZipMembers.of(seed, original, cap / 2, 4), cap, new Mutations.SplitMix(seed + "/members")));
        }
        check(seed, fileName, original, mutants, TIMEOUT);
    }

    static void check(String seed, String fileName, byte[] original, List<Mutations.Mutant> mutants, Duration timeout)
            throws IOException {
        long start = System.nanoTime();
        String ext = fileName.contains(".") ? fileName.substring(fileName.lastIndexOf('.')) : "";
        Path dir = Files.createDirectories(tmp.resolve(seed.replaceAll("[^A-Za-z0-9._-]", "_")));
        Map<String, Integer> outcomes = new TreeMap<>();
        List<String> violations = new ArrayList<>();
        List<String> fresh = new ArrayList<>();
        Set<String> knownSeen = new java.util.HashSet<>();
        int i = 0;
        for (Mutations.Mutant m : mutants) {
            // a fresh name each time: a mapping a reader forgot to release must not see the next mutant
            Path home = m.sidecars().isEmpty() ? dir : Files.createDirectories(dir.resolve("s" + i));
            Path file = home.resolve("m" + (i++) + ext);
            Files.write(file, m.make().apply(original));
            for (var sidecar : m.sidecars().entrySet()) Files.write(home.resolve(sidecar.getKey()), sidecar.getValue());
            long t0 = System.nanoTime();
            Outcome o = runPreemptively(AMN, timeout, seed + " " + m.id(), file);
            if (o.violation() == null && i % CLI_EVERY == 0) {
                // a share of the mutants also goes through the command line, one command each in turn
                String[] command = CLI_COMMANDS.get((i / CLI_EVERY) % CLI_COMMANDS.size());
                Outcome cli = runCli(AMN, timeout, seed + " " + m.id(), file, command);
                BY_MUTATION.computeIfAbsent("~amn " + String.join(" ", command).replace("{out}", "out"),
                        k -> new ConcurrentHashMap<>()).merge(cli.kind(), 1, Integer::sum);
                if (cli.violation() != null) o = cli;
            }
            long nanos = System.nanoTime() - t0;
            if (o.heapBytes() > maxHeap) {
                maxHeap = o.heapBytes();
                EXTREMES.put("most heap", (maxHeap >> 10) + " KiB: " + seed + "|" + m.id() + " (" + o.kind() + ")");
            }
            if (nanos > maxNanos) {
                maxNanos = nanos;
                EXTREMES.put("slowest", nanos / 1_000_000 + " ms: " + seed + "|" + m.id() + " (" + o.kind() + ")");
            }
            if (m.id().startsWith("trunc@") && o.kind().equals("ok")) {
                EXTREMES.merge("truncations accepted", seed + "|" + m.id(), (a, b) -> a + ", " + b);
            }
            outcomes.merge(o.kind(), 1, Integer::sum);
            BY_MUTATION.computeIfAbsent(category(m.id()), k -> new ConcurrentHashMap<>()).merge(o.kind(), 1, Integer::sum);
            if (o.violation() != null) {
                String key = seed + "|" + m.id();
                String report = key + ": " + o.violation();
                violations.add(report);
                if (KNOWN_ISSUES.containsKey(key)) knownSeen.add(key);
                else fresh.add(report);
            }
            try {
                Files.deleteIfExists(file);
                for (String sidecar : m.sidecars().keySet()) Files.deleteIfExists(home.resolve(sidecar));
                if (home != dir) Files.deleteIfExists(home);
            } catch (IOException e) {
                // an open mapping on some systems; the temp dir goes at the end
            }
        }
        long millis = (System.nanoTime() - start) / 1_000_000;
        STATS.put(seed, new Stats(seed, mutants.size(), outcomes, millis, violations));
        for (String k : KNOWN_ISSUES.keySet()) {
            if (k.startsWith(seed + "|") && !knownSeen.contains(k)) {
                System.out.println("[hostile] stale KNOWN_ISSUES entry (no longer fails): " + k);
            }
        }
        if (!fresh.isEmpty()) {
            fail(fresh.size() + " of " + mutants.size() + " mutants of " + seed
                    + " broke the typed-error promise:\n" + String.join("\n\n", fresh.subList(0, Math.min(10, fresh.size())))
                    + (fresh.size() > 10 ? "\n\n... and " + (fresh.size() - 10) + " more" : ""));
        }
    }

    /**
     * @param kind      {@code ok} or the error kind's short name, or the violation's class
     * @param violation null, or what broke the promise with its stack trace
     */
    record Outcome(String kind, String violation, long heapBytes) {
        Outcome(String kind, String violation) {
            this(kind, violation, 0);
        }
    }

    /** The most heap and the most time one mutant took, with its id: for the report, not a verdict. */
    private static final Map<String, String> EXTREMES = new ConcurrentHashMap<>();
    private static volatile long maxHeap;
    private static volatile long maxNanos;

    static Outcome runPreemptively(Anamnesis amn, Duration timeout, String what, Path file) {
        try {
            return assertTimeoutPreemptively(timeout, () -> run(amn, file), () -> what);
        } catch (AssertionFailedError late) {
            return new Outcome("timeout", "did not finish within " + timeout.toMillis() + " ms ("
                    + late.getMessage() + ")");
        }
    }

    /** Every how many mutants one goes through {@code amn} as well. */
    static final int CLI_EVERY = 4;
    static final List<String[]> CLI_COMMANDS = List.of(
            new String[]{"parse", "--json"}, new String[]{"inspect"}, new String[]{"inspect", "--json", "--full"},
            new String[]{"remember", "--quiet", "--to", "f16", "-o", "{out}.safetensors"},
            new String[]{"parse"}, new String[]{"convert", "--quiet", "--to", "gguf", "-o", "{out}.gguf"});
    private static final ObjectMapper JSON = new ObjectMapper();

    /**
     * {@code amn <command> <file>} in-process: it must exit with a typed error's code or 0,
     * never 1 (internal error) or 2 (usage: the arguments are fine); a {@code --json}
     * listing that succeeded must be one valid JSON document whatever strings the file holds;
     * {@code remember} and {@code convert} must leave their output whole or not at all.
     */
    static Outcome runCli(Anamnesis amn, Duration timeout, String what, Path file, String... command) {
        try {
            return assertTimeoutPreemptively(timeout, () -> {
                StringWriter out = new StringWriter();
                StringWriter err = new StringWriter();
                String[] args = Arrays.copyOf(command, command.length + 1);
                args[command.length] = file.toString();
                Path written = null;
                for (int k = 0; k < command.length; k++) {
                    if (command[k].startsWith("{out}")) {
                        written = file.resolveSibling(file.getFileName() + ".amn" + command[k].substring(5));
                        args[k] = written.toString();
                    }
                }
                int code;
                try {
                    code = Amn.execute(amn, new PrintWriter(out), new PrintWriter(err), args);
                } catch (Throwable t) {
                    return new Outcome("cli-" + t.getClass().getSimpleName(), "amn " + String.join(" ", command)
                            + " threw out of Amn.execute:\n" + stackTrace(t));
                }
                String cmd = "amn " + String.join(" ", command) + " exited " + code;
                if (written != null) {
                    String name = written.getFileName().toString();
                    List<String> temps;
                    try (Stream<Path> siblings = Files.list(file.getParent())) {
                        temps = siblings.map(p -> p.getFileName().toString())
                                .filter(n -> n.startsWith("." + name)).toList();
                    }
                    boolean left = code != 0 && Files.exists(written);
                    Files.deleteIfExists(written);
                    if (!temps.isEmpty() || left) {
                        return new Outcome("cli-half-written", cmd + " and left " + (left ? name : temps)
                                + " behind: " + err.toString().strip());
                    }
                }
                if (code == 1 || code == 2) {
                    return new Outcome("cli-exit-" + code, cmd + ": " + err.toString().strip());
                }
                if (code == 0 && Arrays.asList(command).contains("--json")) {
                    try (var parser = JSON.createParser(out.toString())) {
                        JSON.readTree(parser);
                        if (parser.nextToken() != null) throw new IOException("more than one JSON document");
                    } catch (IOException e) {
                        return new Outcome("cli-json", cmd + " but printed invalid JSON: " + e.getMessage());
                    }
                }
                return new Outcome("cli-" + code, null);
            }, () -> what + " amn " + String.join(" ", command));
        } catch (AssertionFailedError late) {
            return new Outcome("timeout", "amn " + String.join(" ", command) + " did not finish within "
                    + timeout.toMillis() + " ms");
        }
    }

    /**
     * The whole library route a caller takes: open, look at metadata, plan to F32, write
     * through the safetensors writer, produce every output; then, when all that worked,
     * plan and produce again in BF16 or F16.
     */
    static Outcome run(Anamnesis amn, Path file) {
        long heapBefore = THREADS.getCurrentThreadAllocatedBytes();
        String kind;
        String violation = null;
        long heapLimit = HEAP_PER_MUTANT;
        try {
            long fileSize = Files.size(file);
            heapLimit = Math.max(HEAP_PER_MUTANT, HEAP_PER_FILE_BYTE * fileSize);
            try (TensorArchive archive = amn.open(file)) {
                archive.format();
                archive.metadata();
                archive.properties();
                archive.structuredMetadata();
                RecoveryPlan plan = amn.plan(archive, DType.F32);
                plan.problems();
                plan.schemeDescriptions();
                plan.outputBytes();
                long allowed = Math.max(OUTPUT_FLOOR, OUTPUT_RATIO * fileSize);
                for (PlannedTensor t : plan.outputs()) {
                    if (t.byteSize() > allowed) {
                        return new Outcome("oversized", "the plan declares output '" + t.name() + "' " + t.dtype()
                                + " " + t.shape() + " of " + t.byteSize() + " bytes from a file of " + fileSize
                                + " bytes; not materialized");
                    }
                }
                String halfWritten = writeAll(amn, plan, file);
                if (halfWritten != null) return new Outcome("half-written", halfWritten);
                for (PlannedTensor t : plan.outputs()) {
                    try (Arena arena = Arena.ofConfined()) {
                        plan.materialize(t.name(), arena);
                    }
                }
                // the narrowing kernels are separate code: a mutant that recovers to F32 also goes
                // to BF16 or F16 (by the parity of its size, so both get about half the mutants)
                RecoveryPlan narrow = amn.plan(archive, fileSize % 2 == 0 ? DType.BF16 : DType.F16);
                for (PlannedTensor t : narrow.outputs()) {
                    try (Arena arena = Arena.ofConfined()) {
                        narrow.materialize(t.name(), arena);
                    }
                }
            }
            kind = "ok";
        } catch (AnamnesisException e) {
            kind = e.kind().shortName();
        } catch (IOException e) {
            throw new UncheckedIOException("the test's own file", e);
        } catch (Throwable t) {
            kind = t.getClass().getSimpleName();
            violation = stackTrace(t);
        }
        long heap = THREADS.getCurrentThreadAllocatedBytes() - heapBefore;
        if (violation == null && heap > heapLimit) {
            violation = "allocated " + (heap >> 20) + " MiB of heap (limit " + (heapLimit >> 20) + " MiB), ended with " + kind;
            kind = "heap";
        }
        return new Outcome(kind, violation, heap);
    }

    /**
     * The writer route ({@code amn convert}): through the parallel engine to a safetensors
     * file, which must then exist whole or not at all, with no temporary file left beside
     * it. A typed failure here is fine; materializing then runs anyway, as it is a separate
     * route. Returns what was left behind, or null.
     */
    static String writeAll(Anamnesis amn, RecoveryPlan plan, Path file) throws IOException {
        Optional<FormatWriter> writer = amn.findWriter("safetensors");
        if (writer.isEmpty() || !plan.problems().isEmpty()
                || !plan.outputs().stream().allMatch(t -> writer.get().supports(t.dtype()))) {
            return null;
        }
        Path out = file.resolveSibling(file.getFileName() + ".out.safetensors");
        boolean failed = false;
        try {
            writer.get().write(plan.toOutputPlan(), out, WriteOptions.threads(2));
        } catch (AnamnesisException e) {
            failed = true;
        }
        String left = null;
        try (Stream<Path> siblings = Files.list(file.getParent())) {
            List<String> temps = siblings.map(p -> p.getFileName().toString())
                    .filter(n -> n.startsWith("." + out.getFileName() + ".tmp")).toList();
            if (!temps.isEmpty()) left = "writing left temporary files " + temps;
        }
        if (failed && Files.exists(out)) left = "a failed write left " + out.getFileName() + " in place";
        Files.deleteIfExists(out);
        return left;
    }

    static String category(String id) {
        String prefix = id.startsWith("zip[") ? "zip:" : "";
        String rest = id.startsWith("zip[") ? id.substring(id.indexOf("]:") + 2) : id;
        int end = rest.length();
        for (char c : new char[]{'@', '(', '=', '+', '['}) {
            int i = rest.indexOf(c);
            if (i > 0 && i < end) end = i;
        }
        return prefix + rest.substring(0, end);
    }

    static String stackTrace(Throwable t) {
        StringWriter w = new StringWriter();
        t.printStackTrace(new PrintWriter(w));
        // the frames below the test's own entry point say nothing about the module at fault
        String[] lines = w.toString().split("\n");
        StringBuilder out = new StringBuilder();
        int frames = 0;
        for (String line : lines) {
            if (line.contains("HostileInputTest.run(")) break;
            if (line.startsWith("\tat ") && ++frames > 25) continue;
            out.append(line).append('\n');
        }
        return out.toString().stripTrailing();
    }

    /** One line per seed and a total, on the console and in target/hostile-summary.txt. */
    @AfterAll
    static void summary() throws IOException {
        if (STATS.isEmpty()) return;
        List<String> lines = new ArrayList<>();
        Map<String, int[]> byFormat = new TreeMap<>();
        long totalMillis = 0;
        int total = 0;
        int totalViolations = 0;
        for (Stats s : STATS.values().stream().sorted((a, b) -> a.seed().compareTo(b.seed())).toList()) {
            lines.add(String.format("%-55s %4d mutants %6d ms  %s%s", s.seed(), s.mutants(), s.millis(), s.outcomes(),
                    s.violations().isEmpty() ? "" : "  VIOLATIONS " + s.violations().size()));
            String format = s.seed().substring(s.seed().lastIndexOf('.') + 1);
            if (!s.seed().startsWith("built/")) format = s.seed().substring(0, s.seed().indexOf('/'));
            int[] f = byFormat.computeIfAbsent(s.seed().startsWith("built/") || s.seed().startsWith("crafted/")
                    ? s.seed().substring(0, s.seed().indexOf('/')) : format, k -> new int[3]);
            f[0]++;
            f[1] += s.mutants();
            f[2] += s.violations().size();
            total += s.mutants();
            totalMillis += s.millis();
            totalViolations += s.violations().size();
        }
        lines.add("");
        byFormat.forEach((k, v) -> lines.add(String.format("%-15s %4d seeds %6d mutants %4d violations", k, v[0], v[1], v[2])));
        lines.add(String.format("total: %d mutants, %d violations (%d known), %d ms", total, totalViolations,
                KNOWN_ISSUES.size(), totalMillis));
        new TreeMap<>(EXTREMES).forEach((k, v) -> lines.add(k + ": " + v));
        lines.add("");
        new TreeMap<>(BY_MUTATION).forEach((k, v) -> lines.add(String.format("%-20s %5d  %s", k,
                v.values().stream().mapToInt(Integer::intValue).sum(), new TreeMap<>(v))));
        lines.add("");
        for (Stats s : STATS.values().stream().sorted((a, b) -> a.seed().compareTo(b.seed())).toList()) {
            for (String v : s.violations()) lines.add(v + "\n");
        }
        Path out = Path.of("target", "hostile-summary.txt");
        Files.createDirectories(out.getParent());
        Files.write(out, lines);
        lines.stream().limit(STATS.size() + byFormat.size() + 3 + EXTREMES.size()).forEach(l -> System.out.println("[hostile] " + l));
    }
}
