package io.anamnesis.api;

import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.numeric.LittleEndian;

import java.io.IOException;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceLoader;

/**
 * The entry point: the installed readers, writers and dequantizers, and the one path
 * through them, detect, read, recover, plan, write.
 *
 * <pre>{@code
 * Anamnesis amn = Anamnesis.installed();
 * try (TensorArchive model = amn.open(Path.of("model.safetensors"))) {
 *     RecoveryPlan plan = amn.plan(model, DType.BF16);
 *     amn.writer("safetensors").write(plan.toOutputPlan(), Path.of("out.safetensors"), WriteOptions.defaults());
 * }
 * }</pre>
 */
public final class Anamnesis {
    private final List<FormatReader> readers;
    private final List<FormatWriter> writers;
    private final List<Dequantizer> dequantizers;
    private final List<Quantizer> quantizers;

    private Anamnesis(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers,
                      List<Quantizer> quantizers) {
        this.readers = List.copyOf(readers);
        this.writers = List.copyOf(writers);
        this.dequantizers = dequantizers.stream().sorted(Comparator.comparing(Dequantizer::scheme)).toList();
        this.quantizers = quantizers.stream().sorted(Comparator.comparing(Quantizer::scheme)).toList();
    }

    private static final class Installed {
        static final Anamnesis INSTANCE = new Anamnesis(
                load(FormatReader.class), load(FormatWriter.class), load(Dequantizer.class), load(Quantizer.class));

        private static <T> List<T> load(Class<T> type) {
            List<T> out = new ArrayList<>();
            ServiceLoader.load(type).forEach(out::add);
            return out;
        }
    }

    /** Everything installed on the module path or class path, found with {@link ServiceLoader}. */
    public static Anamnesis installed() {
        return Installed.INSTANCE;
    }

    /** An explicit set of providers, for tests and embedders that assemble their own. */
    public static Anamnesis of(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers) {
        return new Anamnesis(readers, writers, dequantizers, List.of());
    }

    /** An explicit set of providers, quantizers included. */
    public static Anamnesis of(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers,
                               List<Quantizer> quantizers) {
        return new Anamnesis(readers, writers, dequantizers, quantizers);
    }

    public List<FormatReader> readers() {
        return readers;
    }

    public List<FormatWriter> writers() {
        return writers;
    }

    public List<Dequantizer> dequantizers() {
        return dequantizers;
    }

    public List<Quantizer> quantizers() {
        return quantizers;
    }

    /** The name of the JPMS module a provider lives in ("unnamed" on the class path). */
    public static String moduleOf(Object provider) {
        Module m = provider.getClass().getModule();
        return m.isNamed() ? m.getName() : "unnamed (class path)";
    }

    // ---------------------------------------------------------------- detect and read

    /** Reads a file's first bytes for detection. */
    public static FileProbe probe(Path path) {
        try (FileChannel ch = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = ch.size();
            ByteBuffer head = ByteBuffer.allocate((int) Math.min(size, FileProbe.HEAD_BYTES));
            while (head.hasRemaining() && ch.read(head) >= 0) {
                // fill what the file has
            }
            head.flip();
            return new FileProbe(path.getFileName().toString(), size, head);
        } catch (NoSuchFileException e) {
            throw new TensorIOException("no such file: " + path, e);
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
    }

    /**
     * The reader for a file: magic bytes first (highest priority wins), the extension second.
     *
     * @throws UnsupportedFeatureException naming the module to add when none fits
     */
    public FormatReader detect(Path path) {
        if (Files.isDirectory(path)) throw new TensorIOException(path + " is a directory, not a tensor file");
        FileProbe probe = probe(path);
        Comparator<FormatReader> byPriority = Comparator.comparingInt(FormatReader::priority).reversed();
        Optional<FormatReader> byMagic = readers.stream().filter(r -> r.canRead(probe)).sorted(byPriority).findFirst();
        if (byMagic.isPresent()) return byMagic.get();
        String ext = probe.extension();
        Optional<FormatReader> byExtension = readers.stream()
                .filter(r -> r.fileExtensions().contains(ext)).sorted(byPriority).findFirst();
        if (byExtension.isPresent()) return byExtension.get();
        Optional<String> guess = KnownModules.guessFormat(probe);
        if (guess.isPresent() && KnownModules.formatModule(guess.get()).isPresent()) {
            throw new UnsupportedFeatureException(path.getFileName() + " looks like a " + guess.get()
                    + " file, but no installed reader handles " + guess.get() + ": "
                    + KnownModules.addHint(KnownModules.formatModule(guess.get()).get()));
        }
        throw new UnsupportedFeatureException(path.getFileName() + ": no installed reader recognizes this file"
                + (readers.isEmpty() ? " (no format modules are installed)"
                : " (installed: " + String.join(", ", readers.stream().map(FormatReader::format).toList()) + ")"));
    }

    public TensorArchive open(Path path) {
        return open(path, ParseLimits.defaults());
    }

    /** Detects the format and parses the header; tensor bytes are not read. */
    public TensorArchive open(Path path, ParseLimits limits) {
        return detect(path).open(path, limits);
    }

    // ---------------------------------------------------------------- recover and plan

    public RecoveryPlan plan(TensorArchive archive, DType target) {
        return plan(archive, target, ParseLimits.defaults());
    }

    /**
     * Asks every installed dequantizer which tensor groups it recovers, and lays out the
     * output: recovered tensors in {@code target} at the place of their quantized payload,
     * everything else passed through in its own dtype.
     *
     * @throws UnsupportedFeatureException when two schemes claim the same tensor
     */
    public RecoveryPlan plan(TensorArchive archive, DType target, ParseLimits limits) {
        if (!target.equals(DType.BF16) && !target.equals(DType.F16) && !target.equals(DType.F32)) {
            throw new UnsupportedFeatureException("recovery produces BF16, F16 or F32, not " + target);
        }
        ClaimContext context = new ClaimContext(archive, limits);
        // a set, not archive.tensor(name) per input: that default is a linear scan
        var stored = new java.util.HashSet<String>();
        for (TensorEntry e : archive.tensors()) stored.add(e.name());
        Map<String, Recovery> claimedBy = new HashMap<>();
        Map<String, Recovery> byPrimary = new HashMap<>();
        for (Dequantizer d : dequantizers) {
            for (Recovery r : d.claim(context)) {
                for (String input : r.inputs().keySet()) {
                    Recovery earlier = claimedBy.putIfAbsent(input, r);
                    if (earlier != null) {
                        throw UnsupportedFeatureException.inTensor(input, "claimed by two schemes, "
                                + earlier.scheme() + " and " + r.scheme() + "; mixed schemes in one tensor group are not supported");
                    }
                    if (!stored.contains(input)) {
                        throw new IllegalStateException(r.scheme() + " claimed a tensor the archive lacks: " + input);
                    }
                }
                byPrimary.put(r.primaryInput(), r);
            }
        }

        Map<String, Role> roles = new LinkedHashMap<>();
        Map<String, String> schemes = new LinkedHashMap<>();
        List<Recovery> recoveries = new ArrayList<>();
        List<PlannedTensor> outputs = new ArrayList<>();
        List<TensorEntry> unclaimed = new ArrayList<>();
        for (TensorEntry e : archive.tensors()) {
            Recovery r = claimedBy.get(e.name());
            if (r == null) {
                roles.put(e.name(), Role.PASSTHROUGH);
                outputs.add(Passthrough.plan(archive, e));
                unclaimed.add(e);
                continue;
            }
            roles.put(e.name(), r.roleOf(e.name()));
            schemes.put(e.name(), r.scheme());
            if (byPrimary.get(e.name()) == r) {
                recoveries.add(r);
                outputs.add(new PlannedTensor(r.outputName(), target, r.outputShape(), r.kernel().granule(),
                        arena -> r.kernel().open(archive, arena, target)));
            }
        }
        var names = new java.util.HashSet<String>();
        for (PlannedTensor t : outputs) {
            if (!names.add(t.name())) {
                throw UnsupportedFeatureException.inTensor(t.name(),
                        "a recovered tensor would take the name of a stored one");
            }
        }
        return new RecoveryPlan(archive, target, recoveries, roles, schemes, outputs,
                RecoveryPlan.describeUnclaimed(unclaimed));
    }

    // ---------------------------------------------------------------- write and convert

    /** The writer of a format, e.g. {@code safetensors}. */
    public Optional<FormatWriter> findWriter(String format) {
        String f = format.toLowerCase(Locale.ROOT);
        return writers.stream().filter(w -> w.format().equals(f) || w.fileExtensions().contains(f)).findFirst();
    }

    /** @throws UnsupportedFeatureException naming the module to add when none is installed */
    public FormatWriter writer(String format) {
        return findWriter(format).orElseThrow(() -> new UnsupportedFeatureException(
                "no installed writer for " + format + KnownModules.formatModule(format)
                        .map(m -> ": " + KnownModules.addHint(m))
                        .orElse(" (installed writers: " + String.join(", ", writers.stream().map(FormatWriter::format).toList()) + ")")));
    }

    /**
     * Reads {@code input}, recovers every quantized group to {@code target} and writes the
     * result as {@code format} to {@code output} (complete or not at all).
     */
    public void convert(Path input, String format, DType target, Path output, WriteOptions options) {
        FormatWriter writer = writer(format);
        try (TensorArchive archive = open(input)) {
            RecoveryPlan plan = plan(archive, target).requireComplete();
            for (PlannedTensor t : plan.outputs()) {
                if (!writer.supports(t.dtype())) {
                    throw UnsupportedFeatureException.inTensor(t.name(),
                            format + " cannot store dtype " + t.dtype());
                }
            }
            writer.write(plan.toOutputPlan(), output, options);
        }
    }

    // ---------------------------------------------------------------- forget

    /** Every target name {@code forget --to} accepts, with the installed quantizer that takes it. */
    public java.util.SequencedMap<String, Quantizer> forgetTargets() {
        java.util.SequencedMap<String, Quantizer> out = new LinkedHashMap<>();
        for (Quantizer q : quantizers) {
            for (String t : q.targets().keySet()) out.putIfAbsent(t.toLowerCase(Locale.ROOT), q);
        }
        return out;
    }

    /**
     * The quantizer of a target name.
     *
     * @throws UnsupportedFeatureException listing the installed targets when none takes it
     */
    public Quantizer quantizer(String target) {
        Quantizer q = forgetTargets().get(target.toLowerCase(Locale.ROOT));
        if (q != null) return q;
        throw new UnsupportedFeatureException("no installed quantizer encodes '" + target + "'"
                + (quantizers.isEmpty() ? " (no quantizer modules are installed)"
                : " (targets: " + String.join(", ", forgetTargets().keySet()) + ")"));
    }

    /**
     * The target that quantizes a model the way {@code reference} is quantized, for
     * {@code forget --like}: the answer of the first installed quantizer (by scheme name)
     * that {@linkplain Quantizer#imitates imitates} it. Headers and small companions only.
     *
     * @throws UnsupportedFeatureException when the reference holds no quantized tensor, or only
     *         tensors of schemes no installed quantizer writes
     */
    public String imitation(TensorArchive reference) {
        for (Quantizer q : quantizers) {
            Optional<String> target = q.imitates(reference);
            if (target.isPresent()) return target.get().toLowerCase(Locale.ROOT);
        }
        String name = reference.path().map(p -> p.getFileName().toString()).orElse("the reference");
        RecoveryPlan recovered = plan(reference, DType.F32);
        if (recovered.recoveries().isEmpty()) {
            throw new UnsupportedFeatureException(name + " holds no quantized tensor: there is nothing to imitate"
                    + " (--like takes a quantized checkpoint, e.g. bitsandbytes NF4 or FP8)");
        }
        java.util.Set<String> schemes = new java.util.LinkedHashSet<>();
        for (Recovery r : recovered.recoveries()) schemes.add(r.scheme());
        throw new UnsupportedFeatureException(name + " is quantized with " + String.join(", ", schemes)
                + ", which no installed quantizer writes" + (quantizers.isEmpty() ? " (no quantizer modules are installed)"
                : " (installed: " + String.join(", ", quantizers.stream().map(Quantizer::scheme).toList()) + ")"));
    }

    /**
     * Plans forgetting {@code archive} as {@code target}: every tensor is read, or recovered
     * on the fly, as dense F32 values, and the target's quantizer decides what each becomes.
     * Headers only; no value is read until the plan's tensors are produced.
     */
    public ForgetPlan planForget(TensorArchive archive, String target, ForgetOptions options, LossMeter loss) {
        Quantizer quantizer = quantizer(target);
        List<DenseTensor> dense = dense(archive, options);
        return quantizer.plan(new ForgetRequest(target.toLowerCase(Locale.ROOT), dense, archive, options, loss));
    }

    /**
     * Every tensor of {@code archive} as the forget path sees it: read as it is, or recovered
     * on the fly, with its values as F32 when it holds numbers. Headers only; what
     * {@code amn diff} compares, and what a quantizer plans from.
     */
    public List<DenseTensor> dense(TensorArchive archive) {
        return dense(archive, ForgetOptions.defaults());
    }

    private List<DenseTensor> dense(TensorArchive archive, ForgetOptions options) {
        RecoveryPlan recovered = plan(archive, DType.F32).requireComplete();
        Map<String, Recovery> byOutput = new HashMap<>();
        for (Recovery r : recovered.recoveries()) byOutput.put(r.outputName(), r);
        List<DenseTensor> dense = new ArrayList<>();
        for (PlannedTensor t : recovered.outputs()) {
            Recovery r = byOutput.get(t.name());
            DType stored = r == null ? t.dtype()
                    : archive.tensor(r.primaryInput()).map(TensorEntry::dtype).orElse(t.dtype());
            dense.add(new DenseTensor(t.name(), t.shape(), stored, Optional.ofNullable(r).map(Recovery::description),
                    t, Widening.toF32(t), options.keeps(t.name())));
        }
        return dense;
    }

    /**
     * Forgets {@code archive} as {@code target} and writes the result with the writer of the
     * quantizer's format to {@code output} (complete or not at all).
     *
     * @return the plan that was carried out (what each tensor became)
     */
    public ForgetPlan forget(TensorArchive archive, String target, ForgetOptions options, LossMeter loss,
                             Path output, WriteOptions writeOptions) {
        Quantizer quantizer = quantizer(target);
        FormatWriter writer = writer(quantizer.format());
        ForgetPlan plan = planForget(archive, target, options, loss);
        for (PlannedTensor t : plan.tensors()) {
            if (!writer.supports(t.dtype())) {
                throw UnsupportedFeatureException.inTensor(t.name(), writer.format() + " cannot store dtype " + t.dtype());
            }
        }
        writer.write(new OutputPlan(Optional.of(archive), plan.metadata(), plan.tensors(), plan.typed()), output, writeOptions);
        return plan;
    }

    /** Dense values as F32: F32 as is, the 16-bit floats and F64 widened (or narrowed) element-wise. */
    static final class Widening {
        private Widening() {
        }

        static Optional<PlannedTensor> toF32(PlannedTensor t) {
            DType d = t.dtype();
            if (d.equals(DType.F32)) return Optional.of(t);
            if (!d.equals(DType.F16) && !d.equals(DType.BF16) && !d.equals(DType.F64)) return Optional.empty();
            return Optional.of(new PlannedTensor(t.name(), DType.F32, t.shape(), t.granule(), arena -> {
                var src = t.producer().open(arena);
                MemorySegment[] scratch = new MemorySegment[1];
                return (first, count, dest) -> {
                    long bytes = d.byteSize(count);
                    if (scratch[0] == null || scratch[0].byteSize() < bytes) scratch[0] = arena.allocate(Math.max(bytes, 1 << 16), 64);
                    MemorySegment in = scratch[0].asSlice(0, bytes);
                    src.fill(first, count, in);
                    for (long i = 0; i < count; i++) {
                        float v;
                        if (d.equals(DType.F16)) v = Float.float16ToFloat(in.get(LittleEndian.I16, 2 * i));
                        else if (d.equals(DType.BF16)) v = Float.intBitsToFloat(in.get(LittleEndian.I16, 2 * i) << 16);
                        else v = (float) in.get(LittleEndian.F64, 8 * i);
                        dest.set(LittleEndian.F32, 4 * i, v);
                    }
                };
            }));
        }
    }

    /**
     * Copies from a mapped tensor and hands the pages it has read back: pages of a mapped file
     * stay in the process's resident set until the mapping closes, a whole tensor later, so
     * without this a tensor in flight counts whole against the memory bound. Pages before the
     * furthest copy are unloaded in steps of {@value #UNLOAD_STEP} bytes (a system call per
     * step, not per copy: readers of many small ranges stay cheap); they stay in the page
     * cache, and a later read of one only faults it back in.
     */
    static final class Unloading implements io.anamnesis.api.spi.ChunkFiller {
        static final long UNLOAD_STEP = 8L << 20;
        private final MemorySegment src;
        private final DType dtype;
        private long unloadedTo;

        Unloading(MemorySegment src, DType dtype) {
            this.src = src;
            this.dtype = dtype;
        }

        @Override
        public void fill(long first, long count, MemorySegment dest) {
            long offset = dtype.byteSize(first);
            MemorySegment.copy(src, offset, dest, 0, dest.byteSize());
            if (offset - unloadedTo >= UNLOAD_STEP) {
                src.asSlice(unloadedTo, offset - unloadedTo).unload();
                unloadedTo = offset;
            }
        }
    }

    /** Output tensors copied unchanged from a stored tensor. */
    static final class Passthrough {
        private Passthrough() {
        }

        static PlannedTensor plan(TensorArchive archive, TensorEntry e) {
            long granule = Math.max(1, Math.min(e.dtype().blockElements(), e.elementCount()));
            return new PlannedTensor(e.name(), e.dtype(), e.shape(), granule, arena -> {
                MemorySegment src = archive.data(e, arena);
                if (src.byteSize() != e.byteSize()) {
                    throw MalformedFileException.inTensor(e.name(), "holds " + src.byteSize()
                            + " bytes, its dtype and shape need " + e.byteSize());
                }
                return src.isMapped() ? new Unloading(src, e.dtype()) : (first, count, dest) ->
                        MemorySegment.copy(src, e.dtype().byteSize(first), dest, 0, dest.byteSize());
            });
        }
    }
}
