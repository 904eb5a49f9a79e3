package io.anamnesis.api;

import io.anamnesis.api.model.ModelLayout;
import io.anamnesis.api.model.ModelFolderWriter;
import io.anamnesis.api.model.ModelLocator;
import io.anamnesis.api.model.ModelOutput;
import io.anamnesis.api.model.ShardedArchive;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.FileProbe;
import io.anamnesis.api.spi.FormatReader;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ExportRequest;
import io.anamnesis.api.spi.ExportedModel;
import io.anamnesis.api.spi.ModelExporter;
import io.anamnesis.api.spi.TensorProducer;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.RangeChannel;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.numeric.LittleEndian;

import java.io.IOException;
import java.io.InputStream;
import java.io.PushbackInputStream;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SequencedMap;
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
    private final List<ModelExporter> exporters;

    private Anamnesis(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers,
                      List<Quantizer> quantizers, List<ModelExporter> exporters) {
        this.readers = List.copyOf(readers);
        this.writers = List.copyOf(writers);
        this.dequantizers = dequantizers.stream().sorted(BY_DEQUANTIZER_SCHEME).toList();
        this.quantizers = quantizers.stream().sorted(BY_QUANTIZER_SCHEME).toList();
        this.exporters = List.copyOf(exporters);
    }

    // Comparators written out, not Comparator.comparing(...): a lambda of ours comes from the
    // AOT cache, the key-extracting comparators the JDK's Comparator spins do not (the
    // class-load log of a remember: four Comparator$$Lambda classes defined at run time, a
    // few ms of start-up).
    private static final Comparator<Dequantizer> BY_DEQUANTIZER_SCHEME = (a, b) -> a.scheme().compareTo(b.scheme());
    private static final Comparator<Quantizer> BY_QUANTIZER_SCHEME = (a, b) -> a.scheme().compareTo(b.scheme());
    /** The highest {@link FormatReader#priority()} first. */
    private static final Comparator<FormatReader> BY_PRIORITY = (a, b) -> Integer.compare(b.priority(), a.priority());

    private static final class Installed {
        static final Anamnesis INSTANCE = installedProviders();
    }

    /**
     * On the module path with an empty class path (amn's image, a modular application) every
     * provider is in a named module, and they are looked up in api's module layer and its
     * parents. Through the class loader, ServiceLoader would then search the class path, and
     * that search asks every module of the image for {@code META-INF/services/<type>}, once
     * per service type: 5-13 ms of a 150 ms {@code amn remember} (measured), for nothing.
     * Anything else (a class path, api itself on it) looks through the context class loader.
     */
    private static Anamnesis installedProviders() {
        Module api = Anamnesis.class.getModule();
        if (api.isNamed() && api.getLayer() != null && System.getProperty("java.class.path", "").isEmpty()) {
            return loadFrom(api.getLayer());
        }
        // the api's own loader sees the modules that came with it; the calling thread's context
        // loader may see more (a plugin container's). The context loader alone found nothing
        // when the first call came from a pool thread of a parent loader, and that empty answer
        // was kept for good.
        ClassLoader own = Anamnesis.class.getClassLoader();
        Anamnesis found = loadFrom(own != null ? own : ClassLoader.getSystemClassLoader());
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context == null || context == own ? found : found.with(loadFrom(context));
    }

    /** These providers and those of {@code other} whose classes are not among them. */
    private Anamnesis with(Anamnesis other) {
        return new Anamnesis(union(readers, other.readers), union(writers, other.writers),
                union(dequantizers, other.dequantizers), union(quantizers, other.quantizers), union(exporters, other.exporters));
    }

    private static <T> List<T> union(List<T> a, List<T> b) {
        List<T> out = new ArrayList<>(a);
        java.util.Set<String> classes = new java.util.HashSet<>();
        for (T t : a) classes.add(t.getClass().getName());
        for (T t : b) {
            if (classes.add(t.getClass().getName())) out.add(t);
        }
        return out;
    }

    /**
     * The providers in the named modules of {@code layer} and its parents, without a class-path
     * search: what {@link #installed()} is on the module path with an empty class path.
     *
     * @param layer a module layer, e.g. {@code ModuleLayer.boot()} or a layer of plugin jars
     * @return the providers found
     */
    public static Anamnesis loadFrom(ModuleLayer layer) {
        return new Anamnesis(load(ServiceLoader.load(layer, FormatReader.class), FormatReader.class),
                load(ServiceLoader.load(layer, FormatWriter.class), FormatWriter.class),
                load(ServiceLoader.load(layer, Dequantizer.class), Dequantizer.class),
                load(ServiceLoader.load(layer, Quantizer.class), Quantizer.class),
                load(ServiceLoader.load(layer, ModelExporter.class), ModelExporter.class));
    }

    private static <T> List<T> load(Class<T> type, ClassLoader loader) {
        return load(ServiceLoader.load(type, loader), type);
    }

    private static <T> List<T> load(ServiceLoader<T> services, Class<T> type) {
        List<T> out = new ArrayList<>();
        // a provider that cannot be made (a library of its missing) is left out, not fatal
        var it = services.stream().iterator();
        // the iterator moves on past a provider that failed; the bound is against a loop
        for (int failures = 0; failures < 64; ) {
            try {
                if (!it.hasNext()) break;
                T provider = it.next().get();
                Optional<String> broken = broken(provider);
                if (broken.isPresent()) {
                    failures++;
                    NOT_LOADED.add(type.getSimpleName() + " " + provider.getClass().getName() + " (" + moduleOf(provider) + "): "
                            + broken.get());
                    continue;
                }
                out.add(provider);
            } catch (java.util.ServiceConfigurationError | LinkageError e) {
                failures++;
                NOT_LOADED.add(type.getSimpleName() + ": " + e.getMessage() + (e.getCause() == null ? "" : " (" + e.getCause() + ")"));
            }
        }
        return out;
    }

    /**
     * Why a provider cannot be used, if it cannot: what every command asks of it (a reader's
     * or writer's format and extensions, a scheme's name) throws or is null. A third party's
     * provider whose {@code fileExtensions()} threw made every command fail as an internal
     * error; such a provider is left out, and said so.
     */
    static Optional<String> broken(Object provider) {
        try {
            Object answer = switch (provider) {
                case FormatReader r -> r.format() == null || r.fileExtensions() == null ? null : r.description();
                case FormatWriter w -> w.format() == null || w.fileExtensions() == null ? null : w.description();
                case Dequantizer d -> d.scheme() == null ? null : d.description();
                case Quantizer q -> q.scheme() == null || q.format() == null || q.targets() == null ? null : q.description();
                case ModelExporter e -> e.format() == null ? null : e.outputTypes();
                default -> provider;
            };
            return answer == null ? Optional.of("its format, extensions, scheme or description is null") : Optional.empty();
        } catch (RuntimeException | StackOverflowError | LinkageError e) {
            return Optional.of("it fails when asked what it is: " + e);
        }
    }

    /**
     * The providers of a kind that were found but could not be made or used, each with its
     * class, module and reason (for a warning about a plugin that was left out); for every
     * kind, since the first lookup in this JVM.
     */
    public static List<String> notLoaded() {
        return List.copyOf(NOT_LOADED);
    }

    /**
     * Runs {@code call} on a reader. A third party's reader (a class outside
     * {@code io.anamnesis}) that fails with anything but the typed family (a bug in that module:
     * a NullPointerException, a StackOverflowError, a null archive) gets an
     * {@link UnsupportedFeatureException} naming the reader and its module: the module's
     * failure, not amn's, whose own bugs stay what they are (an internal error).
     */
    private static <T> T guarded(FormatReader reader, String what, java.util.function.Supplier<T> call) {
        if (reader.getClass().getName().startsWith("io.anamnesis.")) return call.get();
        T result;
        try {
            result = call.get();
        } catch (AnamnesisException | LinkageError | InternalError e) {
            throw e;
        } catch (RuntimeException | StackOverflowError e) {
            throw new UnsupportedFeatureException("the " + reader.format() + " reader " + reader.getClass().getName() + " ("
                    + moduleOf(reader) + ") failed " + what + ": " + e + "; that module has a bug", e);
        }
        if (result == null) {
            throw new UnsupportedFeatureException("the " + reader.format() + " reader " + reader.getClass().getName() + " ("
                    + moduleOf(reader) + ") returned nothing " + what + "; that module has a bug");
        }
        return result;
    }

    /** {@link FormatReader#canRead} that takes a failure as "no" (one faulty plugin does not stop detection). */
    private static boolean claims(FormatReader r, FileProbe probe) {
        try {
            return r.canRead(probe);
        } catch (RuntimeException | StackOverflowError | LinkageError e) {
            // once per reader: a server detecting many files must not grow this list with each
            if (FAILED_PROBES.add(r.getClass().getName())) {
                NOT_LOADED.add("FormatReader " + r.getClass().getName() + " (" + moduleOf(r) + "): canRead failed: " + e);
            }
            return false;
        }
    }

    /** Readers whose canRead failed, by class, so that each is recorded once. */
    private static final java.util.Set<String> FAILED_PROBES = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** Providers that were found but could not be made, with the reason, for messages. */
    private static final List<String> NOT_LOADED = new java.util.concurrent.CopyOnWriteArrayList<>();

    /**
     * Everything installed on the module path or class path, found with {@link ServiceLoader}
     * once per JVM: on the module path with an empty class path, in the api's module layer and
     * its parents; otherwise through the api's own class loader and the calling thread's
     * context class loader together. A container whose providers only a loader of its own sees
     * (a plugin's, a servlet's) can use {@link #loadFrom(ClassLoader)} with that loader.
     * Providers that could not be made or used are left out ({@link #notLoaded()} says why).
     */
    public static Anamnesis installed() {
        return Installed.INSTANCE;
    }

    /**
     * Everything {@code loader} sees: the providers in the named modules of its module layers
     * and of its parents' (a plugin layer over the boot layer), then those on the class path.
     * Each call loads afresh; {@link #installed()} is this, once, for the context class loader.
     *
     * @param loader the class loader to find providers through, e.g. the loader of a
     *               {@link ModuleLayer} made of plugin jars
     * @return the providers found
     */
    public static Anamnesis loadFrom(ClassLoader loader) {
        return new Anamnesis(load(FormatReader.class, loader), load(FormatWriter.class, loader),
                load(Dequantizer.class, loader), load(Quantizer.class, loader), load(ModelExporter.class, loader));
    }

    /** An explicit set of providers, for tests and embedders that assemble their own. */
    public static Anamnesis of(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers) {
        return new Anamnesis(readers, writers, dequantizers, List.of(), List.of());
    }

    /** An explicit set of providers, quantizers included. */
    public static Anamnesis of(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers,
                               List<Quantizer> quantizers) {
        return new Anamnesis(readers, writers, dequantizers, quantizers, List.of());
    }

    /** An explicit set of providers, quantizers and model exporters included. */
    public static Anamnesis of(List<FormatReader> readers, List<FormatWriter> writers, List<Dequantizer> dequantizers,
                               List<Quantizer> quantizers, List<ModelExporter> exporters) {
        return new Anamnesis(readers, writers, dequantizers, quantizers, exporters);
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

    public List<ModelExporter> exporters() {
        return exporters;
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
        refuseSpecial(path);
        return detect(probe(path));
    }

    /** The reader for what a probe shows (the file's name, size and first bytes), as {@link #detect(Path)}. */
    private FormatReader detect(FileProbe probe) {
        String name = probe.fileName();
        Optional<FormatReader> byMagic = readers.stream().filter(r -> claims(r, probe)).sorted(BY_PRIORITY).findFirst();
        if (byMagic.isPresent()) return byMagic.get();
        String ext = probe.extension();
        Optional<FormatReader> byExtension = readers.stream()
                .filter(r -> r.fileExtensions().contains(ext)).sorted(BY_PRIORITY).findFirst();
        if (byExtension.isPresent()) return byExtension.get();
        Optional<String> guess = KnownModules.guessFormat(probe);
        if (guess.isPresent() && readers.stream().anyMatch(r -> r.format().equals(guess.get()))) {
            // its module is here and its probe said no: the file is damaged, not unsupported
            throw new MalformedFileException(name + " looks like a " + guess.get()
                    + " file, but the installed " + guess.get() + " reader does not recognize it (corrupt or truncated?)");
        }
        if (guess.isPresent() && KnownModules.formatModule(guess.get()).isPresent()) {
            throw new UnsupportedFeatureException(name + " looks like a " + guess.get()
                    + " file, but no installed reader handles " + guess.get() + ": "
                    + KnownModules.addHint(KnownModules.formatModule(guess.get()).get()));
        }
        throw new UnsupportedFeatureException(name + ": no installed reader recognizes this file"
                + (readers.isEmpty() ? " (no format modules are installed)"
                : " (installed: " + String.join(", ", readers.stream().map(FormatReader::format).toList()) + ")")
                + (NOT_LOADED.isEmpty() ? "" : "; not loaded: " + String.join("; ", NOT_LOADED)));
    }

    /**
     * Tensor files are read in place (headers by position, tensors memory-mapped): a pipe, a
     * device or a socket cannot be, and opening a FIFO for reading would wait for a writer
     * that may never come. So anything but a regular file is refused before it is opened.
     */
    private static void refuseSpecial(Path path) {
        BasicFileAttributes a;
        try {
            a = Files.readAttributes(path, BasicFileAttributes.class);
        } catch (NoSuchFileException e) {
            throw new TensorIOException("no such file: " + path, e);
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + path + ": " + e.getMessage(), e);
        }
        if (a.isDirectory()) throw new TensorIOException(path + " is a directory, not a tensor file");
        if (!a.isRegularFile()) {
            throw new TensorIOException(path + " is not a regular file but a pipe, a device or a socket;"
                    + " tensor files are read in place, by position and memory-mapped");
        }
    }

    public TensorArchive open(Path path) {
        return open(path, ParseLimits.defaults());
    }

    /**
     * Opens a model, not only a file: a folder, an index JSON or any one shard opens the whole
     * model as one {@link ShardedArchive} (see {@link ModelLocator} for what is found where);
     * a plain file opens as its reader's archive. Headers only; tensor bytes are not read.
     *
     * @throws AnamnesisException typed, also when the file shrinks under the reader's mapping
     */
    public TensorArchive open(Path path, ParseLimits limits) {
        Objects.requireNonNull(path, "path");
        Objects.requireNonNull(limits, "limits (ParseLimits.defaults() for the defaults)");
        return open(locate(path, limits), limits);
    }

    /**
     * The files of the model at {@code path}, found from directory listings and the index
     * alone; no tensor file is opened.
     *
     * @throws AnamnesisException typed: a missing path or shard (I/O), a malformed index
     */
    public ModelLayout locate(Path path, ParseLimits limits) {
        return ModelLocator.locate(path, tensorExtensions(), limits);
    }

    /** Every file extension an installed reader claims, lower case. */
    public java.util.Set<String> tensorExtensions() {
        var out = new java.util.TreeSet<String>();
        for (FormatReader r : readers) out.addAll(r.fileExtensions());
        return out;
    }

    /** Opens the files of a layout: one file as its reader's archive, several as one {@link ShardedArchive}. */
    public TensorArchive open(ModelLayout layout, ParseLimits limits) {
        if (layout.isSingleFile()) return openFile(layout.shards().getFirst(), limits);
        return ShardedArchive.open(layout, file -> {
            FormatReader reader = detect(file);
            TensorArchive a = openFile(reader, file, limits);
            try {
                return new ShardedArchive.Shard(file, a, reader.shardPosition(a));
            } catch (RuntimeException e) {
                a.close();
                throw e;
            }
        });
    }

    private TensorArchive openFile(Path path, ParseLimits limits) {
        return openFile(detect(path), path, limits);
    }

    private TensorArchive openFile(FormatReader reader, Path path, ParseLimits limits) {
        try {
            return guarded(reader, "on " + path.getFileName(), () -> reader.open(path, limits));
        } catch (InternalError e) {
            if (TensorIOException.isMappingFault(e)) throw TensorIOException.inputChanged(e);
            throw e;
        } catch (LinkageError e) {
            throw KnownModules.missingLibrary(e, reader);
        }
    }

    /** {@link #openHeader(InputStream, ParseLimits)} with the default limits. */
    public TensorArchive openHeader(InputStream in) {
        return openHeader(in, ParseLimits.defaults());
    }

    /**
     * Reads a file's header from a stream, what a server does with an upload: detection by
     * the first bytes (read exactly, then handed on), then the reader's
     * {@link FormatReader#openHeader}; no byte after the header is read. The archive has no
     * tensor data. Formats whose index is not at the start cannot be read this way.
     *
     * @throws UnsupportedFeatureException for a zip-based file (npz, PyTorch) or another
     *         format that cannot be read from a stream
     */
    public TensorArchive openHeader(InputStream in, ParseLimits limits) {
        PushbackInputStream stream = new PushbackInputStream(in, STREAM_PROBE_BYTES);
        byte[] head;
        try {
            head = stream.readNBytes(STREAM_PROBE_BYTES);
            stream.unread(head);
        } catch (IOException e) {
            throw new TensorIOException("cannot read the stream: " + e.getMessage(), e);
        }
        if (head.length == 0) throw new MalformedFileException("the stream is empty");
        FileProbe probe = new FileProbe("-", Long.MAX_VALUE, ByteBuffer.wrap(head));
        if (probe.startsWith((byte) 'P', (byte) 'K', (byte) 3, (byte) 4)) {
            throw new UnsupportedFeatureException("a zip-based file (npz, PyTorch) cannot be read from a stream:"
                    + " its directory is at the end, so every byte would have to be read first; save it to a file");
        }
        FormatReader reader = readers.stream().filter(r -> claims(r, probe)).sorted(BY_PRIORITY).findFirst()
                .orElseThrow(() -> new UnsupportedFeatureException("no installed reader recognizes the stream"
                        + " (a safetensors or GGUF header can be read from a stream)"));
        try {
            return guarded(reader, "on the stream", () -> reader.openHeader(stream, limits));
        } catch (InternalError e) {
            if (TensorIOException.isMappingFault(e)) throw TensorIOException.inputChanged(e);
            throw e;
        } catch (LinkageError e) {
            throw KnownModules.missingLibrary(e, reader);
        }
    }

    /** {@link #openHeader(RangeChannel, ParseLimits)} with the default limits. */
    public TensorArchive openHeader(RangeChannel channel) {
        return openHeader(channel, ParseLimits.defaults());
    }

    /**
     * Reads the headers of a file that is not here, through a channel that fetches its bytes
     * by position (a remote file read by HTTP range requests): detection by the file's name,
     * size and first bytes as for a local file, then the reader's
     * {@link FormatReader#openHeader(RangeChannel, ParseLimits)}. Every format can be read
     * this way (a zip's directory is fetched from the end). The archive has no tensor data:
     * once the headers are read, the channel refuses every further read.
     *
     * @throws AnamnesisException typed, as {@link #open(Path, ParseLimits)}; the channel's
     *         transport failures as it throws them
     */
    public TensorArchive openHeader(RangeChannel channel, ParseLimits limits) {
        ByteBuffer head = ByteBuffer.allocate((int) Math.min(channel.size(), FileProbe.HEAD_BYTES));
        try {
            channel.read(head, 0);
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + channel.fileName() + ": " + e.getMessage(), e);
        }
        FormatReader reader = detect(new FileProbe(channel.fileName(), channel.size(), head.flip()));
        try {
            return guarded(reader, "on " + channel.fileName(), () -> reader.openHeader(channel, limits));
        } catch (LinkageError e) {
            throw KnownModules.missingLibrary(e, reader);
        } finally {
            channel.headersRead();
        }
    }

    /** Bytes detection reads from a stream: the safetensors length and its '{', a GGUF or zip magic. */
    private static final int STREAM_PROBE_BYTES = 9;

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
        Objects.requireNonNull(archive, "archive");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(limits, "limits (ParseLimits.defaults() for the defaults)");
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
            List<Recovery> claimed;
            try {
                claimed = d.claim(context);
            } catch (LinkageError e) {
                throw KnownModules.missingLibrary(e, d);
            }
            for (Recovery r : claimed) {
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
        Map<String, TensorEntry> byName = new HashMap<>();
        for (TensorEntry e : archive.tensors()) byName.putIfAbsent(e.name(), e);
        var installed = new java.util.HashSet<String>();
        for (Dequantizer d : dequantizers) installed.add(d.scheme());
        return new RecoveryPlan(archive, target, recoveries, roles, schemes, outputs,
                RecoveryPlan.inShards(archive, RecoveryPlan.describeUnclaimed(unclaimed, byName, installed,
                        memoized(() -> declaredMethod(context)), !recoveries.isEmpty(), archive.metadata())));
    }

    private static java.util.function.Supplier<String> memoized(java.util.function.Supplier<String> s) {
        return new java.util.function.Supplier<>() {
            private String value;

            @Override
            public String get() {
                if (value == null) value = s.get();
                return value;
            }
        };
    }

    /**
     * The {@code quant_method} of the archive's quantization config, or "" when there is none,
     * or none that parses (a dequantizer that needed it has already said so).
     */
    private static String declaredMethod(ClaimContext context) {
        try {
            return QuantizationConfig.find(context).flatMap(QuantizationConfig::quantMethod).orElse("");
        } catch (AnamnesisException e) {
            return "";
        }
    }

    // ---------------------------------------------------------------- write and convert

    /** The writer of a format, e.g. {@code safetensors}. */
    public Optional<FormatWriter> findWriter(String format) {
        String f = format.toLowerCase(Locale.ROOT);
        return writers.stream().filter(w -> w.format().equals(f) || w.fileExtensions().contains(f)).findFirst();
    }

    /**
     * @throws UnsupportedFeatureException naming the module to add when the format's module is
     *         missing, or the installed writers when it is installed but writes nothing
     */
    public FormatWriter writer(String format) {
        return findWriter(format).orElseThrow(() -> {
            String installed = writers.isEmpty() ? "no writers are installed"
                    : "writers: " + String.join(", ", writers.stream().map(FormatWriter::format).toList());
            String f = format.toLowerCase(Locale.ROOT);
            boolean readable = readers.stream().anyMatch(r -> r.format().equals(f) || r.fileExtensions().contains(f));
            if (readable) {
                return new UnsupportedFeatureException("no installed writer for " + format
                        + " (its module reads it, but writes nothing); " + installed);
            }
            return new UnsupportedFeatureException("no installed writer for " + format + KnownModules.formatModule(format)
                    .map(m -> ": " + KnownModules.addHint(m))
                    .orElse(" (" + installed + ")"));
        });
    }

    /**
     * Reads {@code input}, recovers every quantized group to {@code target} and writes the
     * result as {@code format} to {@code output}: complete or not at all (see
     * {@link io.anamnesis.api.write.AtomicOutput} for outputs that are streams). The input's
     * metadata goes along typed ({@link TensorArchive#typedMetadata()}); what the conversion
     * cannot carry is named in {@link Conversion#droppedMetadata()}.
     *
     * <p>A container conversion: tensor names and plain tensors' dtypes are kept, and
     * {@code target} applies to recovered tensors only. To lay a Hugging Face model folder out
     * as the GGUF llama.cpp loads (its tensor names, architecture keys, vocabulary; what
     * {@code amn convert <folder> --to gguf} does), use {@link #export}.
     *
     * @throws AnamnesisException typed: no writer for the format, a plan that is not
     *         complete, a dtype the format cannot store, a malformed input, an I/O failure
     */
    public Conversion convert(Path input, String format, DType target, Path output, WriteOptions options) {
        return convert(input, format, target, output, ModelOutput.FILE, options, Map.of());
    }

    /**
     * {@link #convert(Path, String, DType, Path, WriteOptions)} with typed key/values set over
     * the input's (each replaces a key's value or is added), as {@code amn convert --gguf-kv} does.
     */
    public Conversion convert(Path input, String format, DType target, Path output, WriteOptions options,
                              Map<String, MetaValue> keyValues) {
        return convert(input, format, target, output, ModelOutput.FILE, options, keyValues);
    }

    /**
     * {@link #convert(Path, String, DType, Path, WriteOptions)} laid out as {@code shape}
     * says: one file, a model folder of shards with an index (the input's model folder's
     * other files copied along, {@code config.json} rewritten, see {@link ModelFolderWriter}),
     * or the format's own splits.
     */
    public Conversion convert(Path input, String format, DType target, Path output, ModelOutput shape,
                              WriteOptions options) {
        return convert(input, format, target, output, shape, options, Map.of());
    }

    /** {@link #convert(Path, String, DType, Path, ModelOutput, WriteOptions)} with typed key/values set over the input's. */
    public Conversion convert(Path input, String format, DType target, Path output, ModelOutput shape,
                              WriteOptions options, Map<String, MetaValue> keyValues) {
        return write(input, format, target, output, shape, options, false, keyValues);
    }

    /**
     * Converts the container only: every tensor is written as stored (quantized payloads and
     * their companions included) and nothing is recovered.
     */
    public Conversion copy(Path input, String format, Path output, WriteOptions options) {
        return copy(input, format, output, ModelOutput.FILE, options, Map.of());
    }

    /** {@link #copy(Path, String, Path, WriteOptions)} with typed key/values set over the input's. */
    public Conversion copy(Path input, String format, Path output, WriteOptions options, Map<String, MetaValue> keyValues) {
        return copy(input, format, output, ModelOutput.FILE, options, keyValues);
    }

    /** {@link #copy(Path, String, Path, WriteOptions)} laid out as {@code shape} says. */
    public Conversion copy(Path input, String format, Path output, ModelOutput shape, WriteOptions options) {
        return copy(input, format, output, shape, options, Map.of());
    }

    /** {@link #copy(Path, String, Path, ModelOutput, WriteOptions)} with typed key/values set over the input's. */
    public Conversion copy(Path input, String format, Path output, ModelOutput shape, WriteOptions options,
                           Map<String, MetaValue> keyValues) {
        return write(input, format, DType.BF16, output, shape, options, true, keyValues);
    }

    private Conversion write(Path input, String format, DType target, Path output, ModelOutput shape,
                             WriteOptions options, boolean asStored, Map<String, MetaValue> keyValues) {
        Objects.requireNonNull(output, "output");
        Objects.requireNonNull(keyValues, "keyValues");
        FormatWriter writer = writer(format);
        requireSplits(writer, shape);
        Anamnesis amn = asStored ? of(readers, writers, List.of()) : this;
        ModelLayout layout = locate(input, ParseLimits.defaults());
        try (TensorArchive archive = open(layout, ParseLimits.defaults())) {
            RecoveryPlan plan = amn.plan(archive, target);
            // as stored, "looks quantized" is what the caller asked to keep, not a problem
            OutputPlan outputPlan = (asStored ? plan.toOutputPlanAsStored() : plan.requireComplete().toOutputPlan())
                    .withTyped(keyValues);
            requireStorable(writer, plan.outputs());
            // what the plan leaves out of the input's metadata, then what the writer cannot store whole
            SequencedMap<String, String> dropped = new LinkedHashMap<>(plan.droppedMetadata());
            SequencedMap<String, String> unstored = writer.metadataLoss(outputPlan);
            dropped.putAll(unstored);
            Optional<DType> recovered = plan.recoveries().isEmpty() ? Optional.empty() : Optional.of(target);
            List<Path> files = layOut(writer, outputPlan, output, shape, options, f -> ModelFolderWriter.write(outputPlan, writer,
                    output, f.maxShardBytes(), Optional.of(layout), tensorExtensions(), recovered, options));
            return new Conversion(output, writer.format(), target, plan.outputs().size(), plan.recoveries().size(),
                    plan.outputBytes(), plan.schemeDescriptions(), outputPlan.keyValues().size() - unstored.size(), dropped,
                    files);
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
                : " (targets: " + String.join(", ", forgetTargets().keySet()) + ")")
                + KnownModules.targetModule(target).map(m -> "; " + KnownModules.addHint(m)).orElse(""));
    }

    /**
     * The target that quantizes a model the way {@code reference} is quantized, for
     * {@code forget --like}: the answer of the first installed quantizer (by scheme name)
     * that {@linkplain Quantizer#imitates imitates} it. Headers and small companions, except
     * where only the values tell (FP8 E4M3FNUZ's two scale conventions: one weight's codes).
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
        List<String> installedButNotImitating = quantizers.stream().map(Quantizer::scheme).filter(schemes::contains).toList();
        if (!installedButNotImitating.isEmpty()) {
            throw new UnsupportedFeatureException(name + " is quantized with " + String.join(", ", schemes) + "; the "
                    + String.join(", ", installedButNotImitating) + " quantizer takes no --like reference (name the type with --to)");
        }
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
        Objects.requireNonNull(archive, "archive");
        Objects.requireNonNull(target, "target");
        Objects.requireNonNull(options, "options (ForgetOptions.defaults() for none)");
        Objects.requireNonNull(loss, "loss (LossMeter.off() to measure nothing)");
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
        return dense(archive, plan(archive, DType.F32).requireComplete(), options);
    }

    /** Every output of a recovery plan at F32 as dense values, recovered ones with the scheme they came from. */
    private static List<DenseTensor> dense(TensorArchive archive, RecoveryPlan recovered, ForgetOptions options) {
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
        ForgetPlan plan = planForget(archive, target, options, loss);
        writeForgotten(plan, target, archive, Optional.empty(), output, ModelOutput.FILE, writeOptions);
        return plan;
    }

    /**
     * Writes what {@link #planForget} planned with the writer of the target's format, laid out
     * as {@code shape} says: one file, the format's own splits (GGUF), or a model folder of
     * shards with an index, the input's model folder's other files copied along and
     * {@code config.json}'s {@code quantization_config} the quantizer's (metadata key
     * {@code quantization_config}), see {@link ModelFolderWriter#writeQuantized}. Complete or
     * not at all.
     *
     * @param input the input's layout, whose folder's other files a model folder takes along
     * @return the files written, in order
     * @throws UnsupportedFeatureException when the writer cannot store a planned dtype, or
     *         {@code shape} asks for splits of a format that has none
     */
    public List<Path> writeForgotten(ForgetPlan plan, String target, TensorArchive archive, Optional<ModelLayout> input,
                                     Path output, ModelOutput shape, WriteOptions writeOptions) {
        Objects.requireNonNull(plan, "plan");
        Objects.requireNonNull(output, "output");
        Objects.requireNonNull(shape, "shape");
        Objects.requireNonNull(writeOptions, "writeOptions (WriteOptions.defaults() for the defaults)");
        FormatWriter writer = writer(quantizer(target).format());
        requireStorable(writer, plan.tensors());
        requireSplits(writer, shape);
        OutputPlan outputPlan = new OutputPlan(Optional.of(archive), plan.metadata(), plan.tensors(), plan.typed());
        return layOut(writer, outputPlan, output, shape, writeOptions, f -> ModelFolderWriter.writeQuantized(outputPlan, writer,
                output, f.maxShardBytes(), input, tensorExtensions(), Optional.ofNullable(plan.metadata().get("quantization_config")),
                writeOptions));
    }

    /** Refuses, before anything is written, a tensor whose dtype {@code writer} cannot store. */
    private static void requireStorable(FormatWriter writer, List<PlannedTensor> tensors) {
        for (PlannedTensor t : tensors) {
            if (!writer.supports(t.dtype())) {
                throw UnsupportedFeatureException.inTensor(t.name(), writer.format() + " cannot store dtype " + t.dtype());
            }
        }
    }

    private static void requireSplits(FormatWriter writer, ModelOutput shape) {
        if (shape instanceof ModelOutput.Splits && !writer.writesSplits()) {
            throw new UnsupportedFeatureException(writer.format() + " has no split layout of its own;"
                    + " write a model folder of shards instead");
        }
    }

    /**
     * Writes {@code plan} laid out as {@code shape} says: one file, the format's own splits, or
     * a model folder ({@code folder}, which says how its config.json changes).
     *
     * @return the files written, in order
     */
    private static List<Path> layOut(FormatWriter writer, OutputPlan plan, Path output, ModelOutput shape, WriteOptions options,
                                     java.util.function.Function<ModelOutput.Folder, ModelFolderWriter.Written> folder) {
        try {
            return switch (shape) {
                case ModelOutput.File f -> {
                    writer.write(plan, output, options);
                    yield List.of(output);
                }
                case ModelOutput.Splits s -> writer.writeSplits(plan, output, s.maxBytes(), options);
                case ModelOutput.Folder f -> folder.apply(f).shards().stream().map(output::resolve).toList();
            };
        } catch (LinkageError e) {
            throw KnownModules.missingLibrary(e, writer);
        }
    }

    // ---------------------------------------------------------------- export a model

    /** The installed exporter that lays models out for a writer's format, if any. */
    public Optional<ModelExporter> exporter(String format) {
        String f = findWriter(format).map(FormatWriter::format).orElse(format.toLowerCase(Locale.ROOT));
        return exporters.stream().filter(e -> e.format().equals(f)).findFirst();
    }

    /**
     * Exports a model (a Hugging Face model folder) as the runtime of {@code format} loads it:
     * read, recovered on the fly where quantized, laid out by the format's {@link ModelExporter}
     * (names, row order, hyper-parameters, vocabulary) and written in one streaming pass.
     *
     * @param dtype      an output type of the exporter ({@code f32}, {@code f16}, {@code bf16},
     *                   {@code q8_0}, {@code auto}), or a quantizer's target ({@code q4_k_m}):
     *                   then the export at {@code auto} is quantized as the quantizer would
     *                   quantize that file, names mapped first
     * @param vocabulary whether to write the vocabulary
     * @param forget     the quantizer's options when {@code dtype} is a quantizer's target
     * @throws AnamnesisException typed: no exporter or writer for the format, a model the
     *         exporter does not take, a malformed companion file, an I/O failure
     */
    public ModelExport export(Path input, String format, String dtype, boolean vocabulary, ForgetOptions forget,
                              LossMeter loss, Path output, WriteOptions options) {
        Objects.requireNonNull(output, "output");
        FormatWriter writer = writer(format);
        ModelExporter exporter = exporter(writer.format()).orElseThrow(() -> new UnsupportedFeatureException(
                "no installed exporter lays models out for " + writer.format() + " (exporters: "
                        + (exporters.isEmpty() ? "none" : String.join(", ", exporters.stream().map(ModelExporter::format).toList())) + ")"));
        String type = dtype.toLowerCase(Locale.ROOT);
        boolean own = exporter.outputTypes().containsKey(type);
        Quantizer quantizer = own ? null : quantizer(type);
        if (quantizer != null && !quantizer.format().equals(writer.format())) {
            throw new InvalidRequestException("'" + dtype + "' makes " + quantizer.format() + " files, not " + writer.format());
        }
        try (TensorArchive archive = open(input)) {
            if (!exporter.accepts(archive)) {
                throw new UnsupportedFeatureException(input + " is not a model the " + writer.format()
                        + " exporter lays out (" + exporter.description() + ")");
            }
            RecoveryPlan recovered = plan(archive, DType.F32).requireComplete();
            ExportRequest.Encoder encoder = (tensor, target) -> {
                Quantizer q = quantizer(target);
                for (PlannedTensor t : q.plan(new ForgetRequest(target, List.of(tensor), archive, ForgetOptions.defaults(), loss)).tensors()) {
                    if (t.name().equals(tensor.name())) return t;
                }
                throw new IllegalStateException(target + " left no tensor named " + tensor.name());
            };
            ExportedModel model = exporter.export(new ExportRequest(archive, dense(archive, recovered, ForgetOptions.defaults()),
                    own ? type : "auto", vocabulary, encoder, ParseLimits.defaults()));
            List<PlannedTensor> tensors = model.tensors();
            Map<String, MetaValue> kv = new LinkedHashMap<>(model.keyValues());
            if (quantizer != null) {
                // the exported file, as the quantizer sees a file of its format: typed key/values, stored tensors
                ExportedArchive view = new ExportedArchive(writer.format(), archive.path(), model);
                List<DenseTensor> mapped = new ArrayList<>();
                for (PlannedTensor t : model.tensors()) {
                    mapped.add(new DenseTensor(t.name(), t.shape(), t.dtype(), Optional.empty(), t, Widening.toF32(t),
                            forget.keeps(t.name())));
                }
                ForgetPlan forgot = quantizer.plan(new ForgetRequest(type, mapped, view, forget, loss));
                tensors = forgot.tensors();
                // set over the exported keys as the quantizer sets them on a file: removed, then appended
                forgot.typed().forEach((k, v) -> {
                    kv.remove(k);
                    kv.put(k, v);
                });
            }
            requireStorable(writer, tensors);
            OutputPlan plan = new OutputPlan(Optional.empty(), Map.of(), tensors, kv);
            try {
                writer.write(plan, output, options);
            } catch (LinkageError e) {
                throw KnownModules.missingLibrary(e, writer);
            }
            List<io.anamnesis.api.spi.Recovery> used = recovered.recoveries().stream()
                    .filter(r -> !model.notRecovered().contains(r.outputName())).toList();
            return new ModelExport(output, writer.format(), type, model.outputType(), tensors.size(), used.size(),
                    plan.dataBytes(), used.stream().map(io.anamnesis.api.spi.Recovery::description).distinct().toList(), model.notes());
        }
    }

    /** Dense values as F32: F32 as is, the 16-bit floats and F64 widened (or narrowed) element-wise. */
    static final class Widening {
        /** Elements converted per step: small arrays, so a chunk of any size costs no more memory. */
        static final int STEP = 8192;

        private Widening() {
        }

        static Optional<PlannedTensor> toF32(PlannedTensor t) {
            DType d = t.dtype();
            if (d.equals(DType.F32)) return Optional.of(t);
            // the element conversion is chosen once, not per element
            int kind = d.equals(DType.F16) ? 0 : d.equals(DType.BF16) ? 1 : d.equals(DType.F64) ? 2 : -1;
            if (kind < 0) return Optional.empty();
            return Optional.of(new PlannedTensor(t.name(), DType.F32, t.shape(), t.granule(), arena -> {
                var src = t.producer().open(arena);
                MemorySegment[] scratch = new MemorySegment[1];
                short[] halves = kind == 2 ? null : new short[STEP];
                double[] doubles = kind == 2 ? new double[STEP] : null;
                float[] floats = new float[STEP];
                return (first, count, dest) -> {
                    long bytes = d.byteSize(count);
                    if (scratch[0] == null || scratch[0].byteSize() < bytes) scratch[0] = arena.allocate(Math.max(bytes, 1 << 16), 64);
                    MemorySegment in = scratch[0].asSlice(0, bytes);
                    src.fill(first, count, in);
                    for (long done = 0; done < count; done += STEP) {
                        int n = (int) Math.min(STEP, count - done);
                        switch (kind) {
                            case 0 -> {
                                MemorySegment.copy(in, LittleEndian.I16, 2 * done, halves, 0, n);
                                for (int i = 0; i < n; i++) floats[i] = Float.float16ToFloat(halves[i]);
                            }
                            case 1 -> {
                                MemorySegment.copy(in, LittleEndian.I16, 2 * done, halves, 0, n);
                                for (int i = 0; i < n; i++) floats[i] = Float.intBitsToFloat(halves[i] << 16);
                            }
                            default -> {
                                MemorySegment.copy(in, LittleEndian.F64, 8 * done, doubles, 0, n);
                                for (int i = 0; i < n; i++) floats[i] = (float) doubles[i];
                            }
                        }
                        MemorySegment.copy(floats, 0, dest, LittleEndian.F32, 4 * done, n);
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
            TensorProducer mapped = arena -> {
                MemorySegment src = archive.data(e, arena);
                if (src.byteSize() != e.byteSize()) {
                    throw MalformedFileException.inTensor(e.name(), "holds " + src.byteSize()
                            + " bytes, its dtype and shape need " + e.byteSize());
                }
                return src.isMapped() ? new Unloading(src, e.dtype()) : (first, count, dest) ->
                        MemorySegment.copy(src, e.dtype().byteSize(first), dest, 0, dest.byteSize());
            };
            // stored as it will be written: the writer can copy it file to file
            TensorProducer producer = e.byteSize() == 0 ? mapped
                    : archive.storedRegion(e).<TensorProducer>map(r -> new TensorProducer.StoredCopy(r, mapped)).orElse(mapped);
            return new PlannedTensor(e.name(), e.dtype(), e.shape(), granule, producer);
        }
    }
}
