package io.anamnesis.quant.gguf.llama;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.numeric.LittleEndian;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.charset.StandardCharsets;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;

/**
 * An importance matrix as llama-quantize reads it (tools/quantize/quantize.cpp, ca01960e6a):
 * per tensor name, the mean squared activation of each input column, which the encoders use
 * to weight their error. Two file layouts, opened by their format modules:
 * <ul>
 *   <li>llama-imatrix's GGUF: tensors {@code <name>.in_sum2} (F32 {@code [n_mat, n_per_row]},
 *       one row per expert) and {@code <name>.counts} (F32, one count per row), key/values
 *       {@code imatrix.datasets}, {@code imatrix.chunk_count}, {@code imatrix.chunk_size}.
 *       Value = in_sum2 / count in float32, or 1 where a row's count is 0 (a tensor that
 *       got no input during calibration);</li>
 *   <li>the legacy {@code .dat} (format {@code imatrix}): one F32 tensor per entry with its
 *       {@code ncall.<name>}; value = stored value / ncall when ncall > 0.</li>
 * </ul>
 * Values are read on demand, one tensor's at a time, so the matrix of a large MoE model never
 * sits in memory whole.
 */
public final class ImportanceMatrix {
    /** llama-quantize copies the file name and the dataset into a 128-byte buffer (strncpy 127). */
    static final int KV_STRING_BYTES = 127;

    /** Where one name's values come from. */
    private record Source(TensorEntry values, Optional<TensorEntry> counts, long ncall) {
        long size() {
            return values.elementCount();
        }
    }

    private final TensorArchive archive;
    private final Map<String, Source> entries;
    private final List<String> datasets;
    private final long chunks;

    private ImportanceMatrix(TensorArchive archive, Map<String, Source> entries, List<String> datasets, long chunks) {
        this.archive = archive;
        this.entries = Collections.unmodifiableMap(entries);
        this.datasets = List.copyOf(datasets);
        this.chunks = chunks;
    }

    /**
     * Reads the layout of an opened imatrix file (headers only).
     *
     * @throws MalformedFileException when it is not an importance matrix of either layout
     */
    public static ImportanceMatrix of(TensorArchive archive) {
        String file = archive.path().map(p -> p.getFileName().toString()).orElse("the importance matrix");
        return switch (archive.format()) {
            case "gguf" -> fromGguf(archive, file);
            case "imatrix" -> fromLegacy(archive);
            default -> throw new MalformedFileException(file + " is a " + archive.format()
                    + " file, not an importance matrix (llama-imatrix's GGUF or legacy .dat)");
        };
    }

    private static ImportanceMatrix fromGguf(TensorArchive archive, String file) {
        if (archive.tensors().isEmpty()) throw new MalformedFileException(file + ": no data in the importance matrix");
        Map<String, Object> meta = archive.structuredMetadata();
        if (!meta.containsKey("imatrix.datasets") || !meta.containsKey("imatrix.chunk_count")
                || !meta.containsKey("imatrix.chunk_size")) {
            throw new MalformedFileException(file + ": missing imatrix metadata (imatrix.datasets, imatrix.chunk_count, "
                    + "imatrix.chunk_size): not an importance matrix");
        }
        // ordered, as llama-quantize pairs them (a std::map)
        Map<String, TensorEntry[]> pairs = new TreeMap<>();
        for (TensorEntry e : archive.tensors()) {
            String n = e.name();
            if (n.endsWith(".in_sum2")) pairs.computeIfAbsent(n.substring(0, n.length() - 8), k -> new TensorEntry[2])[0] = e;
            else if (n.endsWith(".counts")) pairs.computeIfAbsent(n.substring(0, n.length() - 7), k -> new TensorEntry[2])[1] = e;
        }
        Map<String, Source> entries = new TreeMap<>();
        for (var p : pairs.entrySet()) {
            TensorEntry sums = p.getValue()[0], counts = p.getValue()[1];
            if (sums == null || counts == null) {
                throw MalformedFileException.inTensor(p.getKey(), "importance matrix has "
                        + (sums == null ? "counts but no in_sum2" : "in_sum2 but no counts"));
            }
            requireF32(sums);
            requireF32(counts);
            long rows = sums.shape().rank() < 2 ? 1 : sums.elementCount() / Math.max(1, sums.shape().lastDim());
            if (counts.elementCount() < rows) {
                throw MalformedFileException.inTensor(p.getKey(), "importance matrix has " + rows + " rows of sums but "
                        + counts.elementCount() + " counts");
            }
            entries.put(p.getKey(), new Source(sums, Optional.of(counts), 0));
        }
        return new ImportanceMatrix(archive, entries, strings(meta.get("imatrix.datasets")),
                number(meta.get("imatrix.chunk_count")));
    }

    private static ImportanceMatrix fromLegacy(TensorArchive archive) {
        Map<String, Object> meta = archive.structuredMetadata();
        Map<String, Source> entries = new TreeMap<>();
        for (TensorEntry e : archive.tensors()) {
            requireF32(e);
            entries.put(e.name(), new Source(e, Optional.empty(), number(meta.get("ncall." + e.name()))));
        }
        return new ImportanceMatrix(archive, entries, strings(meta.get("imatrix.datasets")),
                number(meta.get("imatrix.chunk_count")));
    }

    private static void requireF32(TensorEntry e) {
        if (!e.dtype().equals(DType.F32)) {
            throw MalformedFileException.inTensor(e.name(), "importance matrix values must be F32, not " + e.dtype());
        }
    }

    private static long number(Object v) {
        return v instanceof Number n ? n.longValue() : 0;
    }

    private static List<String> strings(Object v) {
        if (v instanceof List<?> l) return l.stream().map(String::valueOf).toList();
        if (v instanceof String s) return List.of(s);
        return List.of();
    }

    /** How many names the matrix has values for ({@code quantize.imatrix.entries_count}). */
    public int entryCount() {
        return entries.size();
    }

    public boolean has(String tensor) {
        return entries.containsKey(tensor);
    }

    /** How many values a name has: {@code n_per_row} times the number of experts. */
    public long size(String tensor) {
        return entries.get(tensor).size();
    }

    /** The first dataset it was computed on ({@code quantize.imatrix.dataset}), cut as llama-quantize cuts it. */
    public Optional<String> dataset() {
        return datasets.isEmpty() ? Optional.empty() : Optional.of(cut(datasets.getFirst()));
    }

    /** The chunks it was computed on ({@code quantize.imatrix.chunks_count}); written only when positive. */
    public long chunks() {
        return chunks;
    }

    /** The file's name as given ({@code quantize.imatrix.file}), cut as llama-quantize cuts it. */
    public String file() {
        return cut(archive.path().map(Object::toString).orElse(""));
    }

    /** At most 127 bytes of UTF-8, never splitting a character. */
    static String cut(String s) {
        byte[] b = s.getBytes(StandardCharsets.UTF_8);
        if (b.length <= KV_STRING_BYTES) return s;
        int end = KV_STRING_BYTES;
        while (end > 0 && (b[end] & 0xC0) == 0x80) end--;
        return new String(b, 0, end, StandardCharsets.UTF_8);
    }

    /** The importance of each column of {@code tensor} (all experts' rows, one after another), as llama-quantize computes it. */
    public float[] values(String tensor) {
        Source s = entries.get(tensor);
        if (s == null) throw new IllegalArgumentException("no importance-matrix entry " + tensor);
        float[] v = new float[(int) requireBounded(tensor, s)];
        eachValue(s, (i, x) -> v[(int) i] = x);
        return v;
    }

    /**
     * llama.cpp refuses a matrix with a non-finite value anywhere, before quantizing anything.
     * Checked on the mapped file, value by value: an entry for a tensor the model does not have
     * may be of any size, and loading each whole made a sparse file of 2^31 values an overflow
     * and one of 2^29 a 2 GB array.
     *
     * @throws MalformedFileException naming the entry
     */
    public void requireFinite() {
        entries.forEach((name, s) -> {
            requireBounded(name, s);
            eachValue(s, (i, v) -> {
                if (!Float.isFinite(v)) {
                    throw MalformedFileException.inTensor(name, "importance matrix value " + i + " is " + v
                            + " (llama.cpp refuses non-finite importance)");
                }
            });
        });
    }

    /** The entry's value count, refused past {@link #MAX_VALUES}. */
    private static long requireBounded(String name, Source s) {
        if (s.size() > MAX_VALUES) {
            throw LimitExceededException.inTensor(name, "importance-matrix entry of " + s.size() + " values, over the "
                    + MAX_VALUES + " one tensor's columns (times its experts) could need");
        }
        return s.size();
    }

    private interface ValueSink {
        void accept(long index, float value);
    }

    /**
     * Each value of an entry as llama-quantize computes it, from the mapped file: in_sum2 over its
     * row's count (1 where the count is 0), or the legacy value over ncall when ncall > 0.
     */
    private void eachValue(Source s, ValueSink sink) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment data = archive.data(s.values(), arena);
            MemorySegment counts = s.counts().isPresent() ? archive.data(s.counts().get(), arena) : null;
            long perRow = Math.max(1, s.values().shape().rank() == 0 ? 1 : s.values().shape().lastDim());
            float ncall = s.ncall();
            for (long i = 0; i < s.size(); i++) {
                float x = data.get(LittleEndian.F32, 4 * i);
                float v;
                if (counts != null) {
                    float count = counts.get(LittleEndian.F32, 4 * (i / perRow));
                    v = count > 0 ? x / count : 1;
                } else {
                    v = s.ncall() > 0 ? x / ncall : x;
                }
                sink.accept(i, v);
            }
        }
    }

    /**
     * The most values one entry may have for {@link #values}: 2^26 (256 MiB of floats). The
     * largest tensors' columns times their experts are a few million (384 experts of 7168).
     */
    static final long MAX_VALUES = 1L << 26;
}
