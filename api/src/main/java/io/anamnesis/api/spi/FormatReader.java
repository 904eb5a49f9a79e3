package io.anamnesis.api.spi;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;

import java.nio.file.Path;
import java.util.List;

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
}
