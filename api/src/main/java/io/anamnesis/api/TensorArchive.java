package io.anamnesis.api;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * One opened tensor file: its metadata and an ordered index of tensors, parsed from the
 * header alone. Tensor bytes are touched only by {@link #data}, one tensor at a time, so a
 * 400 GB file opens in milliseconds and recovery holds only the tensors in flight.
 *
 * <p>Implementations are safe for concurrent {@code data} calls from several threads.
 */
public interface TensorArchive extends AutoCloseable {

    /** The format's short name: {@code safetensors}, {@code gguf}, {@code npz}, {@code pth}. */
    String format();

    /** The file this archive was opened from, when it came from one. */
    Optional<Path> path();

    /**
     * String-valued metadata for display and for readers of strings: safetensors
     * {@code __metadata__} (typed values rendered as text), GGUF key/values rendered as text
     * (large arrays summarized), a checkpoint's non-tensor values. Insertion-ordered. A
     * rendering is not the value whole: conversions carry {@link #typedMetadata()}.
     */
    Map<String, String> metadata();

    /**
     * Metadata as plain Java values for JSON output: String, Long, Double, Boolean, List,
     * Map, whole arrays included. Defaults to {@link #metadata()}.
     */
    default Map<String, Object> structuredMetadata() {
        return Map.copyOf(metadata());
    }

    /**
     * Metadata with its types, whole: a GGUF file's key/values as stored (every integer and
     * float width, float32 bits, whole arrays), a safetensors file's {@code __metadata__}
     * decoded when it carries the {@link io.anamnesis.api.json.TypedJson} encoding, strings
     * otherwise. This is what a conversion carries into the file it writes. A key of
     * {@link #metadata()} that is missing here has only a rendering there (a value the format
     * has no typed form for, such as a pickle's {@code None}); conversions drop it and say so.
     * Insertion-ordered, in the order of {@link #metadata()}.
     *
     * <p>Defaults to {@link #metadata()} as strings.
     */
    default java.util.SequencedMap<String, MetaValue> typedMetadata() {
        var m = new java.util.LinkedHashMap<String, MetaValue>();
        metadata().forEach((k, v) -> m.put(k, new MetaValue.Str(v)));
        return java.util.Collections.unmodifiableSequencedMap(m);
    }

    /**
     * Facts about the file itself for {@code amn inspect}: version, byte order, alignment,
     * a pickle's safety verdict. Insertion-ordered, human-readable values.
     */
    Map<String, String> properties();

    /** Every tensor, in file order. */
    List<TensorEntry> tensors();

    /** The tensor of that name. */
    default Optional<TensorEntry> tensor(String name) {
        for (TensorEntry e : tensors()) {
            if (e.name().equals(name)) return Optional.of(e);
        }
        return Optional.empty();
    }

    /**
     * The tensor's bytes, contiguous, row-major and little-endian, valid while {@code arena}
     * is alive. A zero-copy read-only view of the file where the format allows (memory-mapped
     * into {@code arena}); otherwise materialized in {@code arena} (inflated, byte-swapped,
     * made contiguous). Closing the arena releases the mapping, which is how callers keep
     * memory bounded by the tensors in flight.
     *
     * <p>Safe to call from several threads at once; a thread interrupted during the call gets a
     * {@link TensorIOException} for its own call, and the archive stays readable for the others
     * (readers keep their file in an {@link io.anamnesis.api.read.ArchiveFile}).
     *
     * @throws AnamnesisException when the bytes turn out to be unreadable or malformed, or the
     *         archive is closed
     * @throws IllegalArgumentException when {@code entry} is not one of this archive's tensors
     *         (a caller's mistake, not the file's)
     */
    MemorySegment data(TensorEntry entry, Arena arena);

    /**
     * Where {@code entry}'s bytes lie in the file when {@link #data} would be a plain view of
     * them ({@link StoredRegion}: contiguous, little-endian, uncompressed, in a local file), so
     * that copying the tensor unchanged can be done file to file. Empty when the bytes are
     * materialized (inflated, byte-swapped, gathered from strides), remote, or the archive
     * does not say; callers then use {@link #data}. Defaults to empty.
     */
    default java.util.Optional<StoredRegion> storedRegion(TensorEntry entry) {
        return java.util.Optional.empty();
    }

    /**
     * The text of a small file that goes with this archive ({@code config.json},
     * {@code quantize_config.json}), for an archive that has no {@link #path()} to look beside:
     * a model whose headers were read from a URL carries the companions fetched with them.
     * Archives on a file system leave this empty; {@link io.anamnesis.api.spi.ClaimContext#sidecar}
     * reads beside their path.
     */
    default Optional<String> companion(String fileName) {
        return Optional.empty();
    }

    /** Releases the file. Segments from {@link #data} live on until their arena closes. */
    @Override
    void close();
}
