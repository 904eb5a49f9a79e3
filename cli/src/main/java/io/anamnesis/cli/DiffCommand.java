package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.PlannedTensor;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.ParentCommand;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.io.PrintWriter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code amn diff A B}: two files of any readable formats and schemes, compared tensor by
 * tensor by name. Both are recovered to F32 on the fly, a piece of {@value #PIECE} elements at
 * a time, so memory stays bounded whatever the model size. Reports tensors only one file has,
 * shape and dtype differences, and for every pair of the same shape whether the values are
 * bit-identical and, when not, the error figures of B against A (as {@code forget} gives them).
 * Exit 0 when both hold the same tensors, dtypes and bits; 8 when they differ.
 */
@Command(name = "diff", sortOptions = false,
        header = "Compare two files tensor by tensor: missing tensors, shapes, dtypes, and how far the values are apart.",
        description = {"Both files are read with any installed reader and recovered to F32 on the fly (any scheme), "
                + "in bounded memory. Tensors are matched by name; for each pair of the same shape the values are "
                + "compared bit for bit, and where they differ the error of B against A is given: mean absolute "
                + "error, RMSE, max absolute error and SNR.",
                "Exit status 0 when both hold the same tensors with the same dtypes and bit-identical values, 8 when "
                        + "they differ; two files with no tensor name in common are a usage error (2)."},
        mixinStandardHelpOptions = true,
        footerHeading = "%n", footer = "Exit codes: see 'amn --help'.")
final class DiffCommand implements Callable<Integer> {
    /** Elements compared per step. */
    static final int PIECE = 1 << 16;

    @ParentCommand
    Amn parent;

    @Parameters(index = "0", paramLabel = "<a>", description = "The reference file (a path, or ollama:<model>[:<tag>]).")
    String a;

    @Parameters(index = "1", paramLabel = "<b>", description = "The file compared against it.")
    String b;

    @Option(names = "--json", description = "Print one JSON object: both files, tensors only in one, every pair, the totals.")
    boolean json;

    @Option(names = "--threads", paramLabel = "<n>", description = "Tensor pairs compared at once (default: available processors).")
    Integer threads;

    enum Status { IDENTICAL, DIFFERS, SHAPE }

    /** One pair's verdict. */
    record Pair(String name, DenseTensor a, DenseTensor b, Status status, boolean sameDtype, Optional<LossMeter.Loss> loss) {
        boolean identical() {
            return status == Status.IDENTICAL && sameDtype;
        }
    }

    @Override
    public Integer call() {
        Amn.Context ctx = parent.context();
        Anamnesis amn = ctx.amn();
        int workers = threads == null ? Runtime.getRuntime().availableProcessors() : threads;
        if (workers < 1) throw new UsageException("--threads must be at least 1, was " + workers);
        try (TensorArchive fa = amn.open(ctx.resolve(a)); TensorArchive fb = amn.open(ctx.resolve(b))) {
            List<DenseTensor> da = amn.dense(fa);
            List<DenseTensor> db = amn.dense(fb);
            Map<String, DenseTensor> inB = new LinkedHashMap<>();
            for (DenseTensor t : db) inB.put(t.name(), t);
            Map<String, DenseTensor> inA = new LinkedHashMap<>();
            for (DenseTensor t : da) inA.put(t.name(), t);
            List<String> onlyA = da.stream().map(DenseTensor::name).filter(n -> !inB.containsKey(n)).toList();
            List<String> onlyB = db.stream().map(DenseTensor::name).filter(n -> !inA.containsKey(n)).toList();
            List<DenseTensor[]> common = new ArrayList<>();
            for (DenseTensor t : da) if (inB.containsKey(t.name())) common.add(new DenseTensor[]{t, inB.get(t.name())});
            if (common.isEmpty()) {
                throw new UsageException(a + " and " + b + " have no tensor name in common (" + da.size() + " and "
                        + db.size() + " tensors): there is nothing to compare");
            }
            Pair[] pairs = compareAll(common, workers);
            boolean identical = onlyA.isEmpty() && onlyB.isEmpty() && Arrays.stream(pairs).allMatch(Pair::identical);
            if (json) Json.print(ctx.out(), report(fa, fb, onlyA, onlyB, pairs, identical));
            else text(ctx.out(), fa, fb, onlyA, onlyB, pairs);
            return identical ? Amn.OK : Amn.DIFFER;
        }
    }

    /** Compares every pair on {@code workers} threads; the results do not depend on their number. */
    private Pair[] compareAll(List<DenseTensor[]> common, int workers) {
        Pair[] out = new Pair[common.size()];
        AtomicInteger next = new AtomicInteger();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        Runnable work = () -> {
            int i;
            while (failure.get() == null && (i = next.getAndIncrement()) < out.length) {
                try {
                    out[i] = compare(common.get(i)[0], common.get(i)[1]);
                } catch (Throwable t) {
                    failure.compareAndSet(null, t);
                }
            }
        };
        int n = Math.min(workers, out.length);
        if (n <= 1) {
            work.run();
        } else {
            List<Thread> pool = new ArrayList<>();
            for (int t = 0; t < n; t++) pool.add(Thread.ofPlatform().name("anamnesis-diff-" + t).start(work));
            for (Thread t : pool) {
                try {
                    t.join();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    failure.compareAndSet(null, e);
                }
            }
        }
        Throwable t = failure.get();
        if (t instanceof RuntimeException re) throw re;
        if (t instanceof Error e) throw e;
        if (t != null) throw new IllegalStateException(t);
        return out;
    }

    static String dtype(DenseTensor t) {
        return t.storedDType().name() + t.recoveredFrom().map(s -> " (" + s + ")").orElse("");
    }

    /** One pair: bits and error figures over F32 values piece by piece, or raw bytes for tensors that are not numbers. */
    static Pair compare(DenseTensor ta, DenseTensor tb) {
        boolean sameDtype = dtype(ta).equals(dtype(tb));
        if (!ta.shape().equals(tb.shape())) return new Pair(ta.name(), ta, tb, Status.SHAPE, sameDtype, Optional.empty());
        if (!ta.isNumeric() || !tb.isNumeric()) {
            boolean same = sameDtype && !ta.isNumeric() && !tb.isNumeric() && sameBytes(ta.asStored(), tb.asStored());
            return new Pair(ta.name(), ta, tb, same ? Status.IDENTICAL : Status.DIFFERS, sameDtype, Optional.empty());
        }
        long n = ta.elementCount();
        int piece = (int) Math.min(PIECE, Math.max(1, n));
        float[] xa = new float[piece];
        float[] xb = new float[piece];
        boolean bits = true;
        LossMeter.Loss loss = LossMeter.Loss.NONE;
        try (Arena arena = Arena.ofConfined()) {
            DenseReader ra = DenseReader.open(ta, arena);
            DenseReader rb = DenseReader.open(tb, arena);
            for (long s = 0; s < n; s += piece) {
                int m = (int) Math.min(piece, n - s);
                ra.read(s, m, xa, 0);
                rb.read(s, m, xb, 0);
                for (int i = 0; i < m && bits; i++) bits = Float.floatToRawIntBits(xa[i]) == Float.floatToRawIntBits(xb[i]);
                loss = loss.plus(LossMeter.measure(xa, 0, xb, 0, m));
            }
        }
        return new Pair(ta.name(), ta, tb, bits ? Status.IDENTICAL : Status.DIFFERS, sameDtype, Optional.of(loss));
    }

    /** Stored bytes of two tensors of one dtype and shape, compared a piece at a time. */
    private static boolean sameBytes(PlannedTensor a, PlannedTensor b) {
        long n = a.elementCount();
        if (n == 0) return true;
        long granule = Math.max(a.granule(), b.granule());
        long step = Math.max(granule, PIECE / granule * granule);
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller fa = a.producer().open(arena);
            ChunkFiller fb = b.producer().open(arena);
            MemorySegment sa = arena.allocate(a.dtype().byteSize(Math.min(step, n)));
            MemorySegment sb = arena.allocate(b.dtype().byteSize(Math.min(step, n)));
            for (long s = 0; s < n; s += step) {
                long m = Math.min(step, n - s);
                long bytes = a.dtype().byteSize(m);
                fa.fill(s, m, sa.asSlice(0, bytes));
                fb.fill(s, m, sb.asSlice(0, bytes));
                if (MemorySegment.mismatch(sa, 0, bytes, sb, 0, bytes) >= 0) return false;
            }
        }
        return true;
    }

    private void text(PrintWriter out, TensorArchive fa, TensorArchive fb, List<String> onlyA, List<String> onlyB, Pair[] pairs) {
        out.println("a  " + a + "  (" + fa.format() + ", " + fa.tensors().size() + " stored tensors)");
        out.println("b  " + b + "  (" + fb.format() + ", " + fb.tensors().size() + " stored tensors)");
        LossMeter.Loss total = LossMeter.Loss.NONE;
        int identical = 0;
        for (Pair p : pairs) {
            if (p.identical()) {
                identical++;
                continue;
            }
            StringBuilder line = new StringBuilder();
            switch (p.status()) {
                case SHAPE -> line.append("shape    ").append(p.name()).append("  ").append(p.a().shape()).append(" | ").append(p.b().shape());
                case DIFFERS, IDENTICAL -> line.append(p.status() == Status.IDENTICAL ? "dtype    " : "differs  ").append(p.name())
                        .append("  ").append(p.a().shape());
            }
            if (!p.sameDtype()) line.append("  ").append(dtype(p.a())).append(" | ").append(dtype(p.b()));
            if (p.status() == Status.DIFFERS && p.loss().isPresent()) {
                LossMeter.Loss l = p.loss().get();
                total = total.plus(l);
                line.append("  MAE ").append(sci(l.mae())).append(", RMSE ").append(sci(l.rmse())).append(", max |error| ")
                        .append(sci(l.maxAbs())).append(", SNR ").append(Text.db(l.snrDb())).append(" dB");
            }
            out.println(line);
        }
        for (String n : onlyA) out.println("only in a  " + n);
        for (String n : onlyB) out.println("only in b  " + n);
        out.println(pairs.length + (pairs.length == 1 ? " tensor" : " tensors") + " in common: " + identical + " identical, "
                + (pairs.length - identical) + " differ; " + onlyA.size() + " only in a, " + onlyB.size() + " only in b");
        if (total.count() > 0) {
            out.println("over the differing values: MAE " + sci(total.mae()) + ", RMSE " + sci(total.rmse()) + ", max |error| "
                    + sci(total.maxAbs()) + ", SNR " + Text.db(total.snrDb()) + " dB over " + Text.count(total.count()) + " values"
                    + Text.nonFiniteErrors(total, "of b"));
        }
    }

    private Map<String, Object> report(TensorArchive fa, TensorArchive fb, List<String> onlyA, List<String> onlyB,
                                       Pair[] pairs, boolean identical) {
        Map<String, Object> root = new LinkedHashMap<>();
        root.put("a", file(a, fa));
        root.put("b", file(b, fb));
        root.put("identical", identical);
        root.put("only_in_a", onlyA);
        root.put("only_in_b", onlyB);
        List<Object> tensors = new ArrayList<>();
        LossMeter.Loss total = LossMeter.Loss.NONE;
        for (Pair p : pairs) {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("name", p.name());
            t.put("status", p.status() == Status.IDENTICAL && !p.sameDtype() ? "dtype"
                    : p.status().name().toLowerCase(java.util.Locale.ROOT));
            t.put("a", side(p.a()));
            t.put("b", side(p.b()));
            t.put("bit_identical", p.status() == Status.IDENTICAL);
            if (p.loss().isPresent()) {
                t.put("loss", ForgetCommand.lossJson(p.loss().get()));
                if (p.status() == Status.DIFFERS) total = total.plus(p.loss().get());
            }
            tensors.add(t);
        }
        root.put("tensors", tensors);
        root.put("total", ForgetCommand.lossJson(total));
        return root;
    }

    private static Map<String, Object> file(String reference, TensorArchive archive) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("path", reference);
        m.put("format", archive.format());
        m.put("stored_tensors", archive.tensors().size());
        return m;
    }

    private static Map<String, Object> side(DenseTensor t) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("dtype", t.storedDType().name());
        m.put("shape", Arrays.stream(t.shape().toArray()).boxed().toList());
        t.recoveredFrom().ifPresent(s -> m.put("recovered_from", s));
        return m;
    }

    private static String sci(double v) {
        return String.format(java.util.Locale.ROOT, "%.4g", v);
    }
}
