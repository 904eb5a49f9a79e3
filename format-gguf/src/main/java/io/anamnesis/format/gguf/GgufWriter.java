package io.anamnesis.format.gguf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.write.TensorDataWriter;
import io.anamnesis.api.spi.WriteOptions;

import java.io.ByteArrayOutputStream;
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
 * <p>From a GGUF source the typed key/values are copied verbatim; from any other source the
 * plan's metadata is written as string values. Typed values the plan sets come last, in the
 * plan's order, replacing a key of the same name (ggml's {@code gguf_set_val_*} order).
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
        return "GGUF v3 little-endian: typed key/values kept from a GGUF source, scalar and ggml block tensors";
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

    @Override
    public void write(OutputPlan plan, Path target, WriteOptions options) {
        for (PlannedTensor t : plan.tensors()) checkName(t.name());
        SequencedMap<String, GgufValue> kv = metadata(plan);
        long alignment = alignment(kv);

        ByteArrayOutputStream header = new ByteArrayOutputStream();
        Out out = new Out(header);
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
        long dataStart = alignUp(header.size(), alignment);
        byte[] head = java.util.Arrays.copyOf(header.toByteArray(), Math.toIntExact(dataStart));
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

    private static SequencedMap<String, GgufValue> metadata(OutputPlan plan) {
        SequencedMap<String, GgufValue> kv = new LinkedHashMap<>();
        if (plan.source().isPresent() && plan.source().get() instanceof GgufArchive g) {
            kv.putAll(g.header().metadata());
            recoveredFileType(plan, g).ifPresent(ft -> kv.put("general.file_type",
                    new GgufValue(kv.get("general.file_type").type(), ft)));
            // The typed key/values are the truth; the plan's strings are renderings of them.
        } else {
            for (Map.Entry<String, String> e : plan.metadata().entrySet()) {
                // general.alignment is the writer's to set; a string copy of it would make the file unreadable.
                if (e.getKey().equals("general.alignment")) continue;
                kv.putIfAbsent(e.getKey(), GgufValue.string(e.getValue()));
            }
        }
        // Typed values the plan sets (a quantized file's general.file_type) win over both, and
        // move to the end in plan order: ggml's gguf_set_val_* removes a key and appends it,
        // which is the key order llama-quantize's files have.
        for (Map.Entry<String, MetaValue> e : plan.typed().entrySet()) {
            if (e.getKey().equals("general.alignment")) continue;
            kv.remove(e.getKey());
            kv.put(e.getKey(), GgufValue.of(e.getValue()));
        }
        return kv;
    }

    /**
     * When recovery turned the source's block tensors into one float dtype, the source's
     * {@code general.file_type} (llama_ftype, e.g. MOSTLY_Q4_K_M) no longer describes the
     * file; it becomes ALL_F32 (0), MOSTLY_F16 (1) or MOSTLY_BF16 (32), as llama.cpp's
     * converter writes for such files. Every other KV stays as it was.
     */
    private static java.util.Optional<Long> recoveredFileType(OutputPlan plan, GgufArchive source) {
        GgufValue old = source.header().metadata().get("general.file_type");
        if (old == null || !old.type().isInteger()) return java.util.Optional.empty();
        java.util.Set<DType> recovered = new java.util.HashSet<>();
        for (PlannedTensor t : plan.tensors()) {
            source.tensor(t.name()).filter(e -> !e.dtype().equals(t.dtype())).ifPresent(e -> recovered.add(t.dtype()));
        }
        if (recovered.size() != 1) return java.util.Optional.empty();
        DType d = recovered.iterator().next();
        if (d.equals(DType.F32)) return java.util.Optional.of(0L);
        if (d.equals(DType.F16)) return java.util.Optional.of(1L);
        if (d.equals(DType.BF16)) return java.util.Optional.of(32L);
        return java.util.Optional.empty();
    }

    private static long alignment(Map<String, GgufValue> kv) {
        GgufValue v = kv.get("general.alignment");
        if (v == null) return GgufHeader.DEFAULT_ALIGNMENT;
        long a = v.type().isInteger() ? (Long) v.value() : 0;
        if (a <= 0 || Long.bitCount(a) != 1) {
            throw new UnsupportedFeatureException("general.alignment " + v.render() + " is not a positive power of two");
        }
        return a;
    }

    private static long alignUp(long p, long alignment) {
        long r = p % alignment;
        return r == 0 ? p : Math.addExact(p, alignment - r);
    }

    /** Little-endian field writer over the header buffer. */
    private record Out(ByteArrayOutputStream out) {
        void raw(byte[] b) {
            out.writeBytes(b);
        }

        private void put(int n, long v) {
            for (int i = 0; i < n; i++) out.write((int) (v >>> (8 * i)));
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
                                out.write(st.blob, start, st.ends[i] - start);
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
