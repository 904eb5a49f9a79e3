package io.anamnesis.quant.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.quant.gguf.llama.Category;
import io.anamnesis.quant.gguf.llama.GgmlType;
import io.anamnesis.quant.gguf.llama.ImportanceMatrix;
import io.anamnesis.quant.gguf.llama.ModelFacts;
import io.anamnesis.quant.gguf.llama.Target;
import io.anamnesis.quant.gguf.llama.Targets;
import io.anamnesis.quant.gguf.llama.TypePolicy;

import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.Set;
import java.util.function.Function;

/**
 * Quantizes a model to GGUF ("forget"): llama-quantize's file types with llama.cpp's own
 * per-tensor type choice ({@link TypePolicy}), or one ggml type for every eligible tensor,
 * encoded row by row with the encoders of {@link GgufEncoders}, byte-identical with
 * {@code llama_model_quantize} and {@code ggml_quantize_chunk}.
 *
 * <p>From a GGUF source the output has llama.cpp's tensor order, every key/value of the
 * source and the keys llama-quantize sets ({@code general.quantization_version},
 * {@code general.file_type}, {@code quantize.imatrix.*}); tensors it does not quantize are
 * copied as stored. From another format (safetensors) the names stay as they are, and
 * vectors are written as F32, as llama.cpp's converter writes them.
 */
public final class GgufQuantizer implements Quantizer {
    /** Rows encoded at once: about this many elements, so that a chunk's scratch stays small. */
    static final int BATCH_ELEMENTS = 1 << 16;

    private final Function<GgmlType, Optional<RowEncoder>> encoders;

    public GgufQuantizer() {
        this(GgufQuantizer::installedEncoder);
    }

    /** With other encoders (tests). */
    GgufQuantizer(Function<GgmlType, Optional<RowEncoder>> encoders) {
        this.encoders = encoders;
    }

    /**
     * The encoder {@link GgufEncoders} registers for a type, found by its name: GgmlType (the
     * type choice's table) and GgufBlockType (the codecs' table) spell every type alike, a
     * test checks it.
     */
    static Optional<RowEncoder> installedEncoder(GgmlType type) {
        return GgufBlockType.byName(type.name()).flatMap(GgufEncoders::forType);
    }

    /**
     * Whether this module can encode a ggml type ({@code q4_K}, {@code F16}, any case): its
     * encoder is registered in {@link GgufEncoders}.
     */
    public static boolean canEncode(String ggmlType) {
        return GgmlType.byName(ggmlType).flatMap(GgufQuantizer::installedEncoder).isPresent();
    }

    @Override
    public String scheme() {
        return "gguf";
    }

    @Override
    public String description() {
        return "GGUF: llama-quantize's file types with llama.cpp's per-tensor type mix, or one ggml type "
                + "(ggml:<type>), byte-exact with llama_model_quantize and ggml_quantize_chunk";
    }

    @Override
    public String format() {
        return "gguf";
    }

    @Override
    public SequencedMap<String, String> targets() {
        SequencedMap<String, String> m = new LinkedHashMap<>();
        Targets.all().forEach((name, e) -> m.put(name, e.help()));
        return m;
    }

    /**
     * @throws UnsupportedFeatureException when a type the plan needs has no encoder yet, or a
     *         tensor to quantize holds no floats
     */
    @Override
    public ForgetPlan plan(ForgetRequest request) {
        Layout layout = layout(request);
        Set<String> missing = new LinkedHashSet<>();
        for (TypePolicy.Choice c : layout.choices()) {
            if (c.quantize() && encoders.apply(c.type().orElseThrow()).isEmpty()) missing.add(c.type().get().ggmlName());
        }
        if (!missing.isEmpty()) {
            throw new UnsupportedFeatureException(layout.target().describe() + " needs " + String.join(", ", missing)
                    + ", which quant-gguf cannot encode yet (no encoder registered in GgufEncoders)");
        }
        return layout.plan();
    }

    /**
     * The same plan as {@link #plan}, also when some of its types have no encoder yet: every
     * name, type, shape and key/value is decided, and a tensor without an encoder fails only
     * when its bytes are produced. For tools that need the layout alone (a dry run, the
     * corpus' check of the type mix).
     */
    public ForgetPlan planLayout(ForgetRequest request) {
        return layout(request).plan();
    }

    private record Layout(Target target, List<TypePolicy.Choice> choices, ForgetPlan plan) {
    }

    private Layout layout(ForgetRequest request) {
        if (!request.options().settings().isEmpty()) {
            throw new InvalidRequestException("gguf targets take no scheme settings (got --"
                    + String.join(", --", request.options().settings().keySet()) + ")");
        }
        Target target = Targets.of(request.target()).orElseThrow(() -> new InvalidRequestException(
                "'" + request.target() + "' is not a gguf target (targets: " + String.join(", ", Targets.all().keySet()) + ")"));
        TensorArchive source = request.source();
        boolean fromGguf = source.format().equals("gguf");
        Map<String, DenseTensor> dense = new HashMap<>();
        List<TypePolicy.Tensor> tensors = new ArrayList<>();
        for (DenseTensor d : request.tensors()) {
            dense.put(d.name(), d);
            tensors.add(new TypePolicy.Tensor(d.name(), d.shape(), storedType(source, d), d.keep()));
        }
        Optional<ImportanceMatrix> imatrix = request.options().importance().map(ImportanceMatrix::of);
        imatrix.ifPresent(ImportanceMatrix::requireFinite);
        ModelFacts model = ModelFacts.of(source.structuredMetadata(), dense.keySet());
        List<TypePolicy.Choice> choices = TypePolicy.choose(target, model, tensors, request.options().pure(), imatrix.isPresent());

        Warnings warnings = new Warnings();
        List<PlannedTensor> out = new ArrayList<>();
        List<ForgetPlan.Decision> decisions = new ArrayList<>();
        for (TypePolicy.Choice c : choices) {
            DenseTensor d = dense.get(c.tensor().name());
            if (c.fellBack()) warnings.fallback(d.name());
            if (c.type().isPresent() && !c.tensor().keep() && c.imatrix() != TypePolicy.Need.NONE && imatrix.isEmpty()) {
                if (c.imatrix() == TypePolicy.Need.REQUIRED && (c.quantize() || target instanceof Target.Mix)) {
                    throw InvalidRequestException.inTensor(d.name(), target.describe() + " needs an importance matrix "
                            + "(--imatrix): this tensor becomes " + c.type().get().ggmlName()
                            + ", which cannot be made without one");
                }
                if (c.imatrix() == TypePolicy.Need.ADVISED && c.quantize()) warnings.advised(d.name(), c.type().get());
            }
            if (!c.quantize()) {
                PlannedTensor kept = kept(source, fromGguf, d, c);
                out.add(kept);
                decisions.add(new ForgetPlan.Decision(d.name(), keptName(kept.dtype()), false, c.why()));
                continue;
            }
            GgmlType type = c.type().orElseThrow();
            if (!d.isNumeric()) {
                throw UnsupportedFeatureException.inTensor(d.name(), "holds " + d.storedDType() + ", not floats: it cannot be "
                        + "quantized to " + type.ggmlName() + " (leave it with --keep)");
            }
            if (c.tensor().stored().map(GgmlType::isQuantized).orElse(false)) warnings.requantized(d.name(), c.tensor().stored().get());
            Optional<ImportanceMatrix> weights = imatrix.flatMap(m -> importanceFor(m, c, warnings));
            out.add(RowQuantizer.plan(d, type, dtypeOf(type), encoders.apply(type), weights, request.loss()));
            decisions.add(new ForgetPlan.Decision(d.name(), type.ggmlName(), true, c.why()));
        }
        return new Layout(target, choices, new ForgetPlan(out, stringMetadata(source, fromGguf), typed(target, imatrix),
                decisions, warnings.lines(choices.size())));
    }

    /** The ggml type a tensor is stored as: its own dtype for a plain tensor, none for one recovered from another scheme. */
    private static Optional<GgmlType> storedType(TensorArchive source, DenseTensor d) {
        if (d.recoveredFrom().isPresent() && !source.format().equals("gguf")) return Optional.empty();
        return GgmlType.byName(d.storedDType().name());
    }

    /**
     * A tensor left as it is. From GGUF: its stored bytes, as llama.cpp copies them. From
     * another format: vectors (1-D as ggml counts, so [1, n] too) as F32, as llama.cpp's
     * converter stores them; others as stored, or for a recovered one its F32 recovery.
     */
    private static PlannedTensor kept(TensorArchive source, boolean fromGguf, DenseTensor d, TypePolicy.Choice c) {
        if (fromGguf) {
            Optional<TensorEntry> stored = source.tensor(d.name());
            if (stored.isPresent()) return stored(source, stored.get());
        } else if (c.tensor().dims() <= 1 && d.isNumeric()) {
            return d.values().orElseThrow();
        }
        return d.asStored();
    }

    private static String keptName(DType d) {
        return GgmlType.byName(d.name()).map(GgmlType::ggmlName).orElse(d.name());
    }

    /** A tensor copied as stored. */
    static PlannedTensor stored(TensorArchive source, TensorEntry e) {
        long granule = Math.max(1, Math.min(e.dtype().blockElements(), e.elementCount()));
        return new PlannedTensor(e.name(), e.dtype(), e.shape(), granule, arena -> {
            MemorySegment src = source.data(e, arena);
            if (src.byteSize() != e.byteSize()) {
                throw MalformedFileException.inTensor(e.name(), "holds " + src.byteSize() + " bytes, its type and shape need "
                        + e.byteSize());
            }
            return (first, count, dest) -> MemorySegment.copy(src, e.dtype().byteSize(first), dest, 0, dest.byteSize());
        });
    }

    /** The dtype a GGUF reader gives a tensor of this type (format-gguf's GgufType). */
    static DType dtypeOf(GgmlType t) {
        return switch (t) {
            case F32 -> DType.F32;
            case F16 -> DType.F16;
            case BF16 -> DType.BF16;
            default -> new DType(t.name(), DType.Kind.QUANTIZED, t.blockElements(), t.blockBytes());
        };
    }

    /**
     * The importance-matrix entry a quantized tensor uses, as llama-quantize matches it: by
     * name, with {@code n_per_row} values per expert. A size that does not fit is an error,
     * except for the token embeddings, which llama.cpp quantizes without one then.
     */
    private static Optional<ImportanceMatrix> importanceFor(ImportanceMatrix m, TypePolicy.Choice c, Warnings warnings) {
        String name = c.tensor().name();
        long want = c.tensor().ne(0) * c.tensor().ne(2);
        if (!m.has(name)) {
            if (c.imatrix() == TypePolicy.Need.REQUIRED) {
                throw MalformedFileException.inTensor(name, "the importance matrix has no entry for it, and "
                        + c.type().orElseThrow().ggmlName() + " cannot be made without one");
            }
            warnings.noEntry(name);
            return Optional.empty();
        }
        if (m.size(name) != want) {
            if (Category.of(name) == Category.TOKEN_EMBD) {
                warnings.ignoredEntry(name, m.size(name), want);
                return Optional.empty();
            }
            throw MalformedFileException.inTensor(name, "the importance matrix holds " + m.size(name) + " values for it, "
                    + "it needs " + want + " (" + c.tensor().ne(0) + " per row x " + c.tensor().ne(2) + " expert"
                    + (c.tensor().ne(2) == 1 ? "" : "s") + ")");
        }
        return Optional.of(m);
    }

    /** The source's string metadata, for a non-GGUF source (the GGUF writer keeps a GGUF source's typed key/values). */
    private static Map<String, String> stringMetadata(TensorArchive source, boolean fromGguf) {
        if (fromGguf) return Map.of();
        Map<String, String> m = new LinkedHashMap<>(source.metadata());
        // the source's quantization config no longer describes the file
        m.keySet().removeAll(Set.of("quantization_config", "quant_config"));
        return m;
    }

    /**
     * The key/values llama-quantize sets, in its order: quantization version and file type,
     * then the importance matrix's file, dataset, entry count and chunk count (the last only
     * when positive), each as {@code gguf_set_val_*} writes it (u32 for numbers).
     */
    private static Map<String, MetaValue> typed(Target target, Optional<ImportanceMatrix> imatrix) {
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        kv.put("general.quantization_version", MetaValue.u32(2));
        kv.put("general.file_type", MetaValue.u32(target.fileTypeId()));
        imatrix.ifPresent(m -> {
            kv.put("quantize.imatrix.file", MetaValue.str(m.file()));
            m.dataset().ifPresent(d -> kv.put("quantize.imatrix.dataset", MetaValue.str(d)));
            kv.put("quantize.imatrix.entries_count", MetaValue.u32(m.entryCount()));
            if (m.chunks() > 0) kv.put("quantize.imatrix.chunks_count", MetaValue.u32(Math.min(m.chunks(), 0xFFFF_FFFFL)));
        });
        return kv;
    }

    /** What the plan tells the user without stopping: collected per kind, a few names each. */
    private static final class Warnings {
        private final List<String> fallbacks = new ArrayList<>();
        private final List<String> advised = new ArrayList<>();
        private final List<String> requantized = new ArrayList<>();
        private final List<String> noEntry = new ArrayList<>();
        private final List<String> lines = new ArrayList<>();
        private final Set<String> advisedTypes = new LinkedHashSet<>();
        private final Set<String> requantizedFrom = new LinkedHashSet<>();

        void fallback(String name) {
            fallbacks.add(name);
        }

        void advised(String name, GgmlType type) {
            advised.add(name);
            advisedTypes.add(type.ggmlName());
        }

        void requantized(String name, GgmlType from) {
            requantized.add(name);
            requantizedFrom.add(from.ggmlName());
        }

        void noEntry(String name) {
            noEntry.add(name);
        }

        void ignoredEntry(String name, long has, long want) {
            lines.add(name + ": the importance matrix holds " + has + " values for it, not " + want
                    + "; the token embeddings are quantized without it, as llama.cpp does");
        }

        List<String> lines(int tensors) {
            List<String> out = new ArrayList<>();
            if (!advised.isEmpty()) {
                out.add(String.join(", ", advisedTypes) + " without an importance matrix (" + count(advised)
                        + "): llama.cpp refuses this, the result may be poor; pass --imatrix");
            }
            if (!noEntry.isEmpty()) {
                out.add("the importance matrix has no entry for " + count(noEntry) + ": quantized without one");
            }
            out.addAll(lines);
            if (!requantized.isEmpty()) {
                out.add("requantized from " + String.join(", ", requantizedFrom) + " (" + count(requantized)
                        + "): quality is lower than quantizing from 16 or 32 bits (llama-quantize needs --allow-requantize)");
            }
            if (!fallbacks.isEmpty()) {
                out.add(fallbacks.size() + " of " + tensors + " tensors needed fallback quantization: their rows do not fit "
                        + "the chosen type (" + count(fallbacks) + ")");
            }
            return out;
        }

        private static String count(List<String> names) {
            String shown = String.join(", ", names.subList(0, Math.min(3, names.size())));
            return names.size() <= 3 ? shown : shown + " and " + (names.size() - 3) + " more";
        }
    }
}
