package io.anamnesis.format.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.model.ShardName;
import io.anamnesis.api.model.ShardedArchive;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.write.TensorDataWriter;
import io.anamnesis.api.spi.WriteOptions;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SequencedMap;

/**
 * Writes GGUF v3, little-endian: key/values, tensor infos ({@code ne} = the row-major shape
 * reversed), then every tensor at an offset aligned to {@code general.alignment} (32 unless
 * the source says otherwise), each followed by zero padding to the alignment as gguf-py and
 * ggml write it.
 *
 * <p>The key/values are the plan's, typed ({@link OutputPlan#keyValues()}): a GGUF source's
 * as they were, a safetensors file's as its typed encoding gives them (so GGUF to safetensors
 * to GGUF gives the same key/values), plain strings as strings; then
 * {@code general.file_type} is kept consistent with the tensors written (see
 * {@link #fileType}).
 */
public final class GgufWriter implements FormatWriter {
    static final int VERSION = 3;

    @Override
    public String format() {
        return "gguf";
    }

    @Override
    public List<String> fileExtensions() {
        return List.of("gguf");
    }

    @Override
    public String description() {
        return "GGUF v3 little-endian: typed key/values (from GGUF, or safetensors' typed encoding), scalar and ggml block tensors";
    }

    @Override
    public boolean supports(DType dtype) {
        return GgufType.of(dtype).isPresent();
    }

    /** ggml's GGML_MAX_NAME: a name and its NUL in 64 bytes; gguf.cpp refuses longer ones. */
    static final int MAX_NAME_BYTES = 63;

    /**
     * Refuses, before anything is written, a tensor name that GGUF readers refuse: empty,
     * longer than {@value #MAX_NAME_BYTES} bytes of UTF-8 (gguf.cpp: {@code name.length() >=
     * GGML_MAX_NAME}), or with a NUL (ggml keeps names as C strings) or a line break (a
     * listing of names would split it).
     */
    static void checkName(String name) {
        int bytes = name.getBytes(StandardCharsets.UTF_8).length;
        String problem = name.isEmpty() ? "an empty name"
                : bytes > MAX_NAME_BYTES ? "a name of " + bytes + " bytes (ggml allows at most " + MAX_NAME_BYTES + ")"
                : name.indexOf('\0') >= 0 ? "a NUL in its name"
                : name.indexOf('\n') >= 0 || name.indexOf('\r') >= 0 ? "a line break in its name" : null;
        if (problem != null) {
            throw UnsupportedFeatureException.inTensor(name, "GGUF readers refuse " + problem
                    + "; rename the tensor, or convert to a format without that limit (safetensors)");
        }
    }

    /** ggml's GGML_MAX_DIMS: gguf.cpp refuses a tensor of more dimensions. */
    static final int MAX_DIMS = 4;

    /** Refuses, before anything is written, a tensor of more dimensions than ggml's {@value #MAX_DIMS}. */
    static void checkRank(PlannedTensor t) {
        if (t.shape().rank() > MAX_DIMS) {
            throw UnsupportedFeatureException.inTensor(t.name(), "has " + t.shape().rank() + " dimensions " + t.shape()
                    + "; GGUF readers (ggml) take at most " + MAX_DIMS + "; convert to a format without that limit (safetensors)");
        }
    }

    /** {@link #checkName} and {@link #checkRank} for every tensor of {@code plan}. */
    static void checkTensors(OutputPlan plan) {
        for (PlannedTensor t : plan.tensors()) {
            checkName(t.name());
            checkRank(t);
        }
    }

    @Override
    public void write(OutputPlan plan, Path target, WriteOptions options) {
        checkTensors(plan);
        SequencedMap<String, GgufValue> kv = metadata(plan);
        long alignment = alignment(kv);

        Out out = new Out();
        out.raw("GGUF".getBytes(StandardCharsets.US_ASCII));
        out.u32(VERSION);
        out.u64(plan.tensors().size());
        out.u64(kv.size());
        kv.forEach((k, v) -> {
            out.string(k);
            out.u32(v.type().id);
            out.value(v.type(), v.value());
        });

        List<TensorDataWriter.Region> regions = new ArrayList<>();
        List<long[]> gaps = new ArrayList<>(); // [relative start, length] of zero padding
        long offset = 0;
        for (PlannedTensor t : plan.tensors()) {
            GgufType type = GgufType.of(t.dtype()).orElseThrow(() -> UnsupportedFeatureException.inTensor(t.name(),
                    "GGUF cannot store " + t.dtype() + " (it stores F32, F16, BF16, F64, I8-I64 and ggml block types)"));
            long[] ne = t.shape().reversed().toArray();
            long rowLength = ne.length == 0 ? 1 : ne[0];
            if (rowLength % type.blockElements() != 0) {
                throw UnsupportedFeatureException.inTensor(t.name(), "row length " + rowLength
                        + " is not a multiple of the " + type.name() + " block of " + type.blockElements()
                        + ", which GGUF requires");
            }
            out.string(t.name());
            out.u32(ne.length);
            for (long d : ne) out.u64(d);
            out.u32(type.ggmlId());
            out.u64(offset);
            regions.add(new TensorDataWriter.Region(offset, t)); // made absolute below
            long end = Math.addExact(offset, t.byteSize());
            long next = alignUp(end, alignment);
            if (next > end) gaps.add(new long[]{end, next - end});
            offset = next;
        }
        long dataStart = alignUp(out.size(), alignment);
        byte[] head = out.bytes(Math.toIntExact(dataStart));
        List<TensorDataWriter.Region> absolute = regions.stream()
                .map(r -> new TensorDataWriter.Region(dataStart + r.fileOffset(), r.tensor())).toList();

        AtomicOutput.write(target, channel -> {
            TensorDataWriter.writeFully(channel, ByteBuffer.wrap(head), 0);
            byte[] zeros = new byte[(int) Math.min(alignment, 1 << 16)];
            for (long[] gap : gaps) {
                for (long done = 0; done < gap[1]; ) {
                    int n = (int) Math.min(zeros.length, gap[1] - done);
                    TensorDataWriter.writeFully(channel, ByteBuffer.wrap(zeros, 0, n), dataStart + gap[0] + done);
                    done += n;
                }
            }
            TensorDataWriter.write(channel, absolute, options);
        });
    }

    /**
     * The GGUF file the plan's key/values come from: the source itself, or the first split of
     * a split model (gguf-split keeps every key there).
     */
    static java.util.Optional<GgufArchive> ggufSource(OutputPlan plan) {
        return plan.source().flatMap(s -> switch (s) {
            case GgufArchive g -> java.util.Optional.of(g);
            case ShardedArchive m when m.shards().getFirst().archive() instanceof GgufArchive g -> java.util.Optional.of(g);
            default -> java.util.Optional.empty();
        });
    }

    /**
     * Every GGUF key/value is typed: {@link OutputPlan#keyValues()} gives them all (from a
     * GGUF source its key/values, from a safetensors file that carries the typed encoding its
     * decoded values, from anything else its strings). A GGUF source's key/values are the base,
     * in their order, whatever strings the plan lists (a forget plan lists none), and a value
     * taken unchanged from it goes out as the bytes it was read from (a vocabulary is copied,
     * not re-encoded). A typed value the plan sets itself moves to the end, in the plan's
     * order, as ggml's {@code gguf_set_val_*} does, which is the key order of llama-quantize's
     * files. GGUF's {@code general.alignment} must be an integer: one that is not (a string
     * copied from another format) is left out, and the data is aligned to the default.
     */
    private static SequencedMap<String, GgufValue> metadata(OutputPlan plan) {
        SequencedMap<String, MetaValue> values = plan.keyValues();
        GgufArchive gguf = ggufSource(plan).orElse(null);
        Map<String, MetaValue> fromSource = plan.source().<Map<String, MetaValue>>map(TensorArchive::typedMetadata).orElse(Map.of());
        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>();
        if (gguf != null) {
            kv.putAll(gguf.header().metadata());
            // a split source's split keys describe the source's files, not this one
            kv.keySet().removeIf(k -> k.startsWith(SPLIT_KEY_PREFIX));
        }
        for (Map.Entry<String, MetaValue> e : values.entrySet()) {
            String k = e.getKey();
            MetaValue v = e.getValue();
            if (k.equals(ALIGNMENT_KEY) && !(v instanceof MetaValue.Int)) continue;
            if (fromSource.get(k) == v) {
                // carried over: the very value the source gave
                if (gguf != null) kv.putIfAbsent(k, gguf.header().metadata().get(k));
                else kv.put(k, GgufValue.of(v));
            } else if (plan.typed().get(k) != v) {
                kv.put(k, GgufValue.of(v));
            }
        }
        // then what the plan sets itself, removed and appended in the plan's order
        for (Map.Entry<String, MetaValue> e : plan.typed().entrySet()) {
            String k = e.getKey();
            MetaValue v = e.getValue();
            if (values.get(k) != v || fromSource.get(k) == v) continue;
            if (k.equals(ALIGNMENT_KEY) && !(v instanceof MetaValue.Int)) continue;
            kv.remove(k);
            kv.put(k, GgufValue.of(v));
        }
        fileType(plan, values).ifPresent(ft -> kv.put(FILE_TYPE_KEY, new GgufValue(kv.get(FILE_TYPE_KEY).type(), ft)));
        return kv;
    }

    static final String ALIGNMENT_KEY = "general.alignment";
    static final String FILE_TYPE_KEY = "general.file_type";

    @Override
    public SequencedMap<String, String> metadataLoss(OutputPlan plan) {
        SequencedMap<String, String> out = new LinkedHashMap<>();
        MetaValue a = plan.keyValues().get(ALIGNMENT_KEY);
        if (a != null && !(a instanceof MetaValue.Int)) {
            out.put(ALIGNMENT_KEY, "GGUF's " + ALIGNMENT_KEY + " is an integer the writer aligns the data to, not a "
                    + a.type().spelling());
        }
        return out;
    }

    /** llama.cpp's {@code llama_ftype} of float files: ALL_F32, MOSTLY_F16, MOSTLY_BF16. */
    private static final java.util.Set<Long> FLOAT_FILE_TYPES = java.util.Set.of(0L, 1L, 32L);

    /**
     * {@code general.file_type} (llama_ftype) made to describe the tensors written, when it was
     * taken from the source and they are no longer what it says. When block tensors are
     * written, it stays (it names their mix, e.g. MOSTLY_Q4_K_M, which the tensors alone do not
     * tell). When none are, it becomes ALL_F32 (0), MOSTLY_F16 (1) or MOSTLY_BF16 (32), as
     * llama.cpp's converter writes for float files: the dtype this plan recovered blocks to,
     * or, when a quantized file type came through another format (GGUF to safetensors
     * recovered, then back), the float dtype that holds most matrix elements. Only a value
     * carried over from the source (the very object its {@code typedMetadata()} gave) is
     * checked: one the plan sets itself (the forget path's, {@code amn convert --gguf-kv}) is
     * the caller's word and stays. {@code general.quantization_version} stays as it is: llama.cpp writes it for float
     * files too.
     */
    private static java.util.Optional<Long> fileType(OutputPlan plan, Map<String, MetaValue> values) {
        if (!(values.get(FILE_TYPE_KEY) instanceof MetaValue.Int current) || plan.source().isEmpty()) {
            return java.util.Optional.empty();
        }
        TensorArchive source = plan.source().get();
        // carried over means the very value the source gave; one the plan set is another object, even if equal
        if (current != source.typedMetadata().get(FILE_TYPE_KEY)) return java.util.Optional.empty();
        for (PlannedTensor t : plan.tensors()) {
            if (GgufType.of(t.dtype()).map(GgufType::isBlock).orElse(false)) return java.util.Optional.empty();
        }
        java.util.Optional<DType> d = recoveredDtype(plan, source);
        if (d.isEmpty()) {
            if (FLOAT_FILE_TYPES.contains(current.value())) return java.util.Optional.empty();
            d = dominantFloat(plan.tensors());
        }
        return d.flatMap(GgufWriter::floatFileType).filter(ft -> ft != current.value());
    }

    /** The one dtype the plan turned the source's tensors into, if it changed any and to one dtype. */
    private static java.util.Optional<DType> recoveredDtype(OutputPlan plan, TensorArchive source) {
        java.util.Set<DType> recovered = new java.util.HashSet<>();
        TensorArchive stored = plan.source().orElse(source);
        for (PlannedTensor t : plan.tensors()) {
            stored.tensor(t.name()).filter(e -> !e.dtype().equals(t.dtype())).ifPresent(e -> recovered.add(t.dtype()));
        }
        return recovered.size() == 1 ? java.util.Optional.of(recovered.iterator().next()) : java.util.Optional.empty();
    }

    /** The float dtype holding the most elements of matrices (of any tensor, when there are no matrices). */
    private static java.util.Optional<DType> dominantFloat(List<PlannedTensor> tensors) {
        for (int minRank : new int[]{2, 0}) {
            Map<DType, Long> elements = new java.util.HashMap<>();
            for (PlannedTensor t : tensors) {
                if (t.shape().rank() >= minRank && floatFileType(t.dtype()).isPresent()) {
                    elements.merge(t.dtype(), t.elementCount(), Long::sum);
                }
            }
            long most = elements.values().stream().mapToLong(Long::longValue).max().orElse(-1);
            List<DType> top = elements.entrySet().stream().filter(e -> e.getValue() == most).map(Map.Entry::getKey).toList();
            if (top.size() == 1) return java.util.Optional.of(top.getFirst());
            if (!elements.isEmpty()) return java.util.Optional.empty();
        }
        return java.util.Optional.empty();
    }

    private static java.util.Optional<Long> floatFileType(DType d) {
        if (d.equals(DType.F32)) return java.util.Optional.of(0L);
        if (d.equals(DType.F16)) return java.util.Optional.of(1L);
        if (d.equals(DType.BF16)) return java.util.Optional.of(32L);
        return java.util.Optional.empty();
    }

    /** The keys of llama.cpp's split layout ({@code LLM_KV_SPLIT_*}). */
    static final String SPLIT_KEY_PREFIX = "split.";

    @Override
    public boolean writesSplits() {
        return true;
    }

    /**
     * Writes the plan as llama.cpp's {@code gguf-split --split-max-size} does
     * (tools/gguf-split/gguf-split.cpp): a new split starts when the tensors of the current
     * one, each counted padded to {@value GgufHeader#DEFAULT_ALIGNMENT} bytes
     * ({@code GGML_PAD(ggml_nbytes(t), GGUF_DEFAULT_ALIGNMENT)}), would pass {@code maxBytes};
     * the first split holds every key/value of the plan, the others none; each split then gets
     * {@code split.no} (u16, 0-based), {@code split.tensors.count} (i32, the model's tensors)
     * and {@code split.count} (u16), in that order (gguf_set_val_* appends, and gguf-split sets
     * the count last). Files are named {@code <target without .gguf>-0000N-of-0000M.gguf}
     * ({@code llama_split_path}). Unlike gguf-split, a tensor larger than the limit gets a
     * split of its own instead of failing. Each split is written atomically; when one fails,
     * the splits already written are removed.
     */
    @Override
    public List<Path> writeSplits(OutputPlan plan, Path target, long maxBytes, WriteOptions options) {
        // every split's tensors up front; the alignment is checked by the first split's write, before any byte
        checkTensors(plan);
        List<List<PlannedTensor>> parts = new ArrayList<>();
        List<PlannedTensor> current = new ArrayList<>();
        long size = 0;
        for (PlannedTensor t : plan.tensors()) {
            long padded = alignUp(t.byteSize(), GgufHeader.DEFAULT_ALIGNMENT);
            if (!current.isEmpty() && size + padded > maxBytes) {
                parts.add(current);
                current = new ArrayList<>();
                size = 0;
            }
            current.add(t);
            size += padded;
        }
        parts.add(current);
        int count = parts.size();
        if (count > 0xFFFF) {
            throw new UnsupportedFeatureException(count + " splits of at most " + maxBytes
                    + " bytes: split.count is a u16, so a model has at most 65535 splits; raise the split size");
        }
        String name = target.getFileName() == null ? "model" : target.getFileName().toString();
        String prefix = name.toLowerCase(java.util.Locale.ROOT).endsWith(".gguf") ? name.substring(0, name.length() - 5) : name;
        List<Path> files = new ArrayList<>();
        for (int i = 0; i < count; i++) files.add(target.resolveSibling(ShardName.of(prefix, i + 1, count, "gguf")));
        WriteOptions shared = new WriteOptions(options.threads(),
                io.anamnesis.api.spi.ProgressListener.overFiles(options.progress(), plan.dataBytes()));
        List<Path> written = new ArrayList<>();
        try {
            for (int i = 0; i < count; i++) {
                Map<String, MetaValue> keys = new LinkedHashMap<>(i == 0 ? plan.typed() : Map.of());
                keys.remove(SPLIT_KEY_PREFIX + "no");
                keys.remove(SPLIT_KEY_PREFIX + "tensors.count");
                keys.remove(SPLIT_KEY_PREFIX + "count");
                keys.put(SPLIT_KEY_PREFIX + "no", new MetaValue.Int(MetaValue.Type.U16, i));
                keys.put(SPLIT_KEY_PREFIX + "tensors.count", new MetaValue.Int(MetaValue.Type.I32, plan.tensors().size()));
                keys.put(SPLIT_KEY_PREFIX + "count", new MetaValue.Int(MetaValue.Type.U16, count));
                OutputPlan part = i == 0
                        ? new OutputPlan(plan.source(), plan.metadata(), parts.get(i), keys)
                        : new OutputPlan(java.util.Optional.empty(), Map.of(), parts.get(i), keys);
                write(part, files.get(i), shared);
                written.add(files.get(i));
            }
        } catch (RuntimeException | Error e) {
            for (Path p : written) {
                try {
                    java.nio.file.Files.deleteIfExists(p);
                } catch (java.io.IOException suppressed) {
                    e.addSuppressed(new TensorIOException("cannot remove " + p + ": " + suppressed.getMessage(), suppressed));
                }
            }
            throw e;
        }
        return List.copyOf(files);
    }

    /**
     * The largest {@code general.alignment} written: the header is padded to it in memory and
     * every tensor on disk, so an alignment the file declares (or {@code --gguf-kv} sets) of
     * 2^30 made a 1 GiB file of one empty model and 2^31 overflowed. Files in the wild use
     * 32 or 64.
     */
    static final long MAX_ALIGNMENT = 1 << 20;

    private static long alignment(Map<String, GgufValue> kv) {
        GgufValue v = kv.get(ALIGNMENT_KEY);
        if (v == null) return GgufHeader.DEFAULT_ALIGNMENT;
        long a = v.type().isInteger() ? (Long) v.value() : 0;
        if (a <= 0 || Long.bitCount(a) != 1) {
            throw new UnsupportedFeatureException("general.alignment " + v.render() + " is not a positive power of two");
        }
        if (a > MAX_ALIGNMENT) {
            throw new UnsupportedFeatureException("general.alignment " + v.render() + " is beyond what amn writes (at most "
                    + MAX_ALIGNMENT + " bytes; GGUF files use 32): every tensor would be padded to it");
        }
        return a;
    }

    private static long alignUp(long p, long alignment) {
        long r = p % alignment;
        return r == 0 ? p : Math.addExact(p, alignment - r);
    }

    /**
     * Little-endian field writer into the header's bytes, a growing array. Not a
     * {@code ByteArrayOutputStream}: its synchronized write of one byte at a time made a
     * Llama 3 vocabulary (128,256 tokens, 280,147 merges, their scores and types) 0.25 s of
     * a convert's CPU (docs/benchmarks.md).
     */
    private static final class Out {
        private byte[] buf = new byte[1 << 16];
        private int size;

        int size() {
            return size;
        }

        /** The bytes written, zero-padded to {@code length} (at least {@link #size()}). */
        byte[] bytes(int length) {
            return java.util.Arrays.copyOf(buf, length);
        }

        private void room(int n) {
            if (buf.length - size < n) buf = java.util.Arrays.copyOf(buf, Math.max(Math.addExact(size, n), 2 * buf.length));
        }

        void raw(byte[] b) {
            raw(b, 0, b.length);
        }

        void raw(byte[] b, int from, int n) {
            room(n);
            System.arraycopy(b, from, buf, size, n);
            size += n;
        }

        private void put(int n, long v) {
            room(n);
            for (int i = 0; i < n; i++) buf[size++] = (byte) (v >>> (8 * i));
        }

        void u32(long v) {
            put(4, v);
        }

        void u64(long v) {
            put(8, v);
        }

        void string(String s) {
            byte[] b = s.getBytes(StandardCharsets.UTF_8);
            u64(b.length);
            raw(b);
        }

        void value(GgufValueType type, Object v) {
            switch (type) {
                case UINT8, INT8, BOOL -> put(1, type == GgufValueType.BOOL ? ((Boolean) v ? 1 : 0) : (Long) v);
                case UINT16, INT16 -> put(2, (Long) v);
                case UINT32, INT32 -> put(4, (Long) v);
                case UINT64, INT64 -> put(8, (Long) v);
                case FLOAT32 -> put(4, Float.floatToRawIntBits((Float) v));
                case FLOAT64 -> put(8, Double.doubleToRawLongBits((Double) v));
                case STRING -> string((String) v);
                case ARRAY -> {
                    GgufValue.GgufArray a = (GgufValue.GgufArray) v;
                    u32(a.elementType().id);
                    u64(a.elements().size());
                    switch (a.elements()) {
                        // Arrays read from a GGUF file go back out as the very bytes they came from.
                        case CompactLists.Numbers n -> raw(n.raw);
                        case CompactLists.Strings st -> {
                            for (int i = 0; i < st.size(); i++) {
                                int start = st.start(i);
                                u64(st.ends[i] - start);
                                raw(st.blob, start, st.ends[i] - start);
                            }
                        }
                        default -> {
                            for (Object e : a.elements()) value(a.elementType(), e);
                        }
                    }
                }
            }
        }
    }

}
