package io.anamnesis.api;

import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Recovery;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * What recovering an archive would produce: which stored tensors each installed dequantizer
 * claimed (with their roles), every output tensor with its dtype and shape, and anything
 * that stands in the way. Made from headers alone; no quantized byte is read until an
 * output is produced.
 */
public final class RecoveryPlan {
    private final TensorArchive archive;
    private final DType target;
    private final List<Recovery> recoveries;
    private final Map<String, Role> roles;
    private final Map<String, String> schemesByTensor;
    private final List<PlannedTensor> outputs;
    private final Map<String, PlannedTensor> outputsByName;
    private final List<Problem> problems;

    /**
     * Something that stands in the way of a faithful recovery, and how to report it: a
     * missing module is {@code unsupported}, a group that the installed module cannot make
     * sense of is {@code malformed}.
     */
    record Problem(ErrorKind kind, String message) {
    }

    RecoveryPlan(TensorArchive archive, DType target, List<Recovery> recoveries, Map<String, Role> roles,
                 Map<String, String> schemesByTensor, List<PlannedTensor> outputs, List<Problem> problems) {
        this.archive = archive;
        this.target = target;
        this.recoveries = List.copyOf(recoveries);
        this.roles = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(roles));
        this.schemesByTensor = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(schemesByTensor));
        this.outputs = List.copyOf(outputs);
        // by name, so that producing every output of a 100k-tensor file is not quadratic
        Map<String, PlannedTensor> byName = new LinkedHashMap<>();
        for (PlannedTensor t : this.outputs) byName.putIfAbsent(t.name(), t);
        this.outputsByName = java.util.Collections.unmodifiableMap(byName);
        this.problems = List.copyOf(problems);
    }

    public TensorArchive archive() {
        return archive;
    }

    /** The dtype recovered tensors are produced in (BF16, F16 or F32). */
    public DType target() {
        return target;
    }

    /** Every claimed group, in file order of its quantized payload. */
    public List<Recovery> recoveries() {
        return recoveries;
    }

    /** The role of every stored tensor, passthrough included, in file order. */
    public Map<String, Role> roles() {
        return roles;
    }

    /** The scheme family ({@code fp8}, {@code gguf}, ...) that claimed a stored tensor, if any. */
    public Optional<String> schemeOf(String storedTensor) {
        return Optional.ofNullable(schemesByTensor.get(storedTensor));
    }

    /** Distinct scheme descriptions, in order of first appearance; empty for a plain file. */
    public List<String> schemeDescriptions() {
        var set = new LinkedHashSet<String>();
        for (Recovery r : recoveries) set.add(r.description());
        return List.copyOf(set);
    }

    /** Every output tensor, in output order. */
    public List<PlannedTensor> outputs() {
        return outputs;
    }

    public Optional<PlannedTensor> output(String name) {
        return Optional.ofNullable(outputsByName.get(name));
    }

    /** Bytes of all outputs. */
    public long outputBytes() {
        long sum = 0;
        for (PlannedTensor t : outputs) sum = Math.addExact(sum, t.byteSize());
        return sum;
    }

    /**
     * Reasons the plan cannot be carried out faithfully: stored tensors that look quantized
     * but that no installed dequantizer claimed, each naming the tensor and the scheme, and
     * the module to add when it is not installed (what is wrong when it is).
     */
    public List<String> problems() {
        return problems.stream().map(Problem::message).toList();
    }

    /**
     * @throws UnsupportedFeatureException with the first problem when a module is missing,
     *         {@link MalformedFileException} when the installed module could not make sense of
     *         a group (a scale without its weight)
     */
    public RecoveryPlan requireComplete() {
        if (!problems.isEmpty()) {
            Problem first = problems.getFirst();
            String message = first.message() + (problems.size() > 1 ? " (and " + (problems.size() - 1) + " more)" : "");
            if (first.kind() == ErrorKind.MALFORMED) throw new MalformedFileException(message);
            throw new UnsupportedFeatureException(message);
        }
        return this;
    }

    /** Metadata keys that describe a quantization; a recovered file no longer has one. */
    static final java.util.Set<String> QUANTIZATION_KEYS =
            java.util.Set.copyOf(io.anamnesis.api.config.QuantizationConfig.METADATA_KEYS);

    /** Names the schemes a recovered file came from, in its metadata. */
    public static final String RECOVERED_FROM_KEY = "anamnesis.recovered_from";

    /**
     * The plan as a writer takes it: every output, and the archive's metadata, typed
     * ({@link TensorArchive#typedMetadata()}, so that every writer sees the values whole). When
     * anything was recovered the quantization config is dropped (the output is no longer
     * quantized, and a loader that trusted it would misread the file) and
     * {@value #RECOVERED_FROM_KEY} names the schemes instead. Keys the archive has only a
     * rendering of are dropped too; {@link #droppedMetadata()} names what is left out.
     */
    public OutputPlan toOutputPlan() {
        requireComplete();
        return outputPlan();
    }

    /**
     * The plan as a writer takes it without requiring it complete: a container conversion
     * that copies every tensor as stored, including what looks quantized but was not claimed
     * (plan it with an {@link Anamnesis} that has no dequantizers). Metadata as in
     * {@link #toOutputPlan()}.
     */
    public OutputPlan toOutputPlanAsStored() {
        return outputPlan();
    }

    private OutputPlan outputPlan() {
        SequencedMap<String, String> dropped = droppedMetadata();
        Map<String, String> metadata = new LinkedHashMap<>(archive.metadata());
        Map<String, MetaValue> typed = new LinkedHashMap<>(archive.typedMetadata());
        metadata.keySet().removeAll(dropped.keySet());
        typed.keySet().removeAll(dropped.keySet());
        if (!recoveries.isEmpty()) metadata.put(RECOVERED_FROM_KEY, String.join("; ", schemeDescriptions()));
        return new OutputPlan(Optional.of(archive), metadata, outputs, typed);
    }

    /**
     * The archive's metadata keys that {@link #toOutputPlan()} leaves out, each with the
     * reason: the quantization config when anything was recovered, and values the archive has
     * only a rendering of (no typed form, such as a pickle's {@code None}).
     */
    public SequencedMap<String, String> droppedMetadata() {
        SequencedMap<String, String> out = new LinkedHashMap<>();
        Map<String, MetaValue> typed = archive.typedMetadata();
        for (Map.Entry<String, String> e : archive.metadata().entrySet()) {
            if (!recoveries.isEmpty() && QUANTIZATION_KEYS.contains(e.getKey())) {
                out.put(e.getKey(), "it describes the quantization the output no longer has");
            } else if (!typed.containsKey(e.getKey())) {
                String text = e.getValue().length() > 40 ? e.getValue().substring(0, 40) + "..." : e.getValue();
                out.put(e.getKey(), "a " + archive.format() + " value with no typed form (" + text + ")");
            }
        }
        return out;
    }

    /**
     * Produces one output tensor whole into {@code arena}: the library route for a caller
     * that wants values, not a file. Outputs are named by the recovered tensor ({@code x.weight}
     * for a GPTQ group's {@code x.qweight} and its scales; see {@link #outputs()}); their bytes
     * are the plan's target dtype, little-endian, row-major.
     *
     * @throws UnsupportedFeatureException when the plan has no output of that name (the
     *         message names the first output as an example); the producer's typed failures
     *         otherwise, and a {@link TensorIOException} when the input changes under its mapping
     */
    public MemorySegment materialize(String outputName, Arena arena) {
        PlannedTensor t = output(outputName).orElseThrow(() -> UnsupportedFeatureException.inTensor(outputName,
                "not an output of this plan (" + outputs.size() + " outputs" + (outputs.isEmpty() ? ""
                        : ", e.g. '" + outputs.getFirst().name() + "'") + "; a quantized group is named by its"
                        + " recovered tensor, e.g. 'x.weight' for 'x.qweight')"));
        MemorySegment dest = arena.allocate(Math.max(1, t.byteSize()), 64).asSlice(0, t.byteSize());
        if (t.elementCount() == 0) return dest;
        try (Arena inputs = Arena.ofConfined()) {
            ChunkFiller filler = t.producer().open(inputs);
            filler.fill(0, t.elementCount(), dest);
        } catch (InternalError e) {
            if (TensorIOException.isMappingFault(e)) throw TensorIOException.inputChanged(e);
            throw e;
        }
        return dest;
    }

    /**
     * The problems of tensors no dequantizer claimed that still look quantized (see
     * {@link KnownModules#suspect}), each naming the tensor and the scheme; the scheme a
     * checkpoint's quantization config names, when it has one, is the one to name. When no
     * tensor gives itself away by name but the config names a method, nothing was recovered
     * and packed-looking payloads are there, that is one problem for the file.
     *
     * <p>A problem is {@link ErrorKind#UNSUPPORTED} (add the module, or the installed module
     * does not take this variant), except for a companion whose quantized tensor is not
     * stored (a scale without its weight), which is a malformed file whatever is installed.
     *
     * @param installed   the schemes of the installed dequantizers
     * @param method      the config's {@code quant_method} (looked up only when needed), or ""
     * @param recovered   whether any group was claimed
     */
    static List<Problem> describeUnclaimed(List<TensorEntry> unclaimed, Map<String, TensorEntry> byName,
                                           java.util.Set<String> installed, java.util.function.Supplier<String> method,
                                           boolean recovered, Map<String, String> metadata) {
        List<Problem> out = new ArrayList<>();
        String declared = null;
        TensorEntry firstPacked = null;
        for (TensorEntry e : unclaimed) {
            if (firstPacked == null && KnownModules.looksPacked(e)) firstPacked = e;
            Optional<KnownModules.Suspect> s = KnownModules.suspect(e, byName);
            if (s.isEmpty()) continue;
            if (declared == null) declared = KnownModules.schemeOfMethod(method.get());
            String scheme = s.get().scheme();
            // the config names the scheme when names alone are shared (weight_scale, qweight)
            if (!declared.isEmpty() && e.dtype().kind() != DType.Kind.QUANTIZED) scheme = declared;
            String what = "tensor '" + e.name() + "' (" + e.dtype() + ") looks like " + scheme + " data, but ";
            Optional<String> orphan = KnownModules.missingCompanion(e, byName.keySet());
            if (orphan.isPresent() && KnownModules.installed(scheme, installed)) {
                // the module is here and could not place it: the group is incomplete
                out.add(new Problem(ErrorKind.MALFORMED, what + "the installed " + scheme
                        + " dequantizer found no group it belongs to: " + orphan.get()));
            } else {
                out.add(new Problem(ErrorKind.UNSUPPORTED, what + KnownModules.schemeHint(scheme, installed, s.get().why())));
            }
        }
        if (out.isEmpty() && firstPacked != null && !recovered && !metadata.containsKey(RECOVERED_FROM_KEY)) {
            String scheme = KnownModules.schemeOfMethod(method.get());
            if (!scheme.isEmpty()) {
                out.add(new Problem(ErrorKind.UNSUPPORTED, "tensor '" + firstPacked.name() + "' (" + firstPacked.dtype()
                        + ") looks like " + scheme + " data (the quantization_config says " + scheme + "), but "
                        + KnownModules.schemeHint(scheme, installed, "none of its tensors was recognized")));
            }
        }
        return out;
    }

    /**
     * A problem in a model of several files says where was looked: a companion without its
     * tensor "in any of the N shards"; and a shard opened alone, whose sibling shards are not
     * beside it, says so and how to open the whole model, since a companion is most likely in one of them.
     */
    static List<Problem> inShards(TensorArchive archive, List<Problem> problems) {
        if (problems.isEmpty() || !(archive instanceof io.anamnesis.api.model.ShardedArchive s)) return problems;
        var layout = s.layout();
        String note;
        if (!layout.absent().isEmpty()) {
            java.nio.file.Path file = layout.shards().getFirst();
            note = "; " + file.getFileName() + " is one shard of a model whose other shards are not beside it (missing: "
                    + String.join(", ", layout.absent().stream().limit(4).map(p -> String.valueOf(p.getFileName())).toList())
                    + (layout.absent().size() > 4 ? ", ..." : "") + "): put every shard in one folder and open the folder";
        } else if (s.shards().size() > 1) {
            note = " (looked in all " + s.shards().size() + " shards of the model)";
        } else {
            return problems;
        }
        List<Problem> out = new ArrayList<>(problems.size());
        for (Problem p : problems) out.add(new Problem(p.kind(), p.message() + note));
        return out;
    }
}
