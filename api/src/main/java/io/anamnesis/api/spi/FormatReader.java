package io.anamnesis.api.spi;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.UnsupportedFeatureException;

import java.io.InputStream;

import java.nio.file.Path;
import java.util.List;
import java.util.Optional;

/**
 * Reads one file format. Found with {@link java.util.ServiceLoader}; a module declares
 * {@code provides io.anamnesis.api.spi.FormatReader with ...}.
 *
 * <p>Like {@code javax.imageio.spi.ImageReaderSpi}, a reader is mostly a descriptor: a
 * name, extensions, and a cheap magic-byte {@link #canRead probe}. The work happens in
 * {@link #open}, which parses the header only.
 */
public interface FormatReader {

    /** Short lower-case name: {@code safetensors}, {@code gguf}, ... */
    String format();

    /** Lower-case file extensions without dots, most common first. */
    List<String> fileExtensions();

    /** One line for {@code amn formats}. */
    String description();

    /**
     * Whether the first bytes look like this format ("likely", not a guarantee). Readers of
     * catch-all containers answer false unless their own marker is present.
     */
    boolean canRead(FileProbe probe);

    /** Breaks ties when several readers claim a file; a plugin may outrank a built-in. */
    default int priority() {
        return 0;
    }

    /**
     * Opens the file and parses its header and tensor index, checking every declared size
     * against {@code limits} and against the file. Tensor bytes are not read.
     *
     * @throws io.anamnesis.api.AnamnesisException typed: malformed, limit, security, unsupported, I/O
     */
    TensorArchive open(Path path, ParseLimits limits);

    /**
     * Reads the header alone from a stream (a pipe, an upload), reading no byte past it: the
     * archive lists the tensors and the metadata, and its {@code data} fails. Only formats
     * whose index comes first can; by default a reader cannot (a zip keeps its directory at
     * the end).
     *
     * @throws io.anamnesis.api.AnamnesisException typed, as {@link #open}
     */
    default TensorArchive openHeader(InputStream in, ParseLimits limits) {
        throw new UnsupportedFeatureException(format() + " files cannot be read from a stream: save it to a file");
    }

    /**
     * Reads the headers alone from a file that is not here (a remote file read by HTTP range
     * requests): the channel reads by position anywhere in a known size, fetching on demand,
     * and cannot be mapped. The reader parses with the code it reads a local file's header
     * with, checks what the size allows, and reads no tensor bytes it does not need; the
     * caller then {@linkplain RangeChannel#headersRead() closes} the channel, so the archive's
     * {@code data} fails, as one from {@link #openHeader(InputStream, ParseLimits)} does.
     *
     * <p>By default the channel is read as a stream from byte 0, which serves every format
     * whose index comes first; a format whose index is elsewhere (a zip's directory at the
     * end) overrides this.
     *
     * @throws io.anamnesis.api.AnamnesisException typed, as {@link #open}; the channel's own
     *         failures (the transport's) pass through as they are
     */
    default TensorArchive openHeader(RangeChannel channel, ParseLimits limits) {
        return openHeader(channel.stream(), limits);
    }

    /**
     * Where an opened file sits among the splits of one model, when the format records it in
     * the file itself (GGUF: {@code split.no}, {@code split.count}, {@code split.tensors.count}).
     * The api finds the sibling files by their {@code -0000N-of-0000M} names and checks each
     * against what this returns. Empty by default: a format whose shards are listed by an index
     * file beside them ({@code model.safetensors.index.json}, {@code pytorch_model.bin.index.json},
     * named after one of this reader's {@link #fileExtensions()}) needs nothing here.
     *
     * @throws io.anamnesis.api.MalformedFileException when the file's split keys contradict each other
     */
    default Optional<ShardPosition> shardPosition(TensorArchive opened) {
        return Optional.empty();
    }
}
