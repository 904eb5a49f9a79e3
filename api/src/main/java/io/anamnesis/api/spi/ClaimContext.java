package io.anamnesis.api.spi;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;

/**
 * What a {@link Dequantizer} may look at while claiming: the archive, the limits, and small
 * config files beside the input ({@code config.json}, {@code quantize_config.json}): in the
 * model folder when the archive is a whole model, else in the file's folder; for an archive
 * with no path (read from a URL), the companions it carries ({@link TensorArchive#companion}).
 */
public record ClaimContext(TensorArchive archive, ParseLimits limits) {

    /**
     * The text of a file in the input's directory, when the archive came from a file and
     * that file exists. Bounded by {@link ParseLimits#maxHeaderBytes()}.
     *
     * @throws LimitExceededException when the file is larger than that
     * @throws MalformedFileException when it is not valid UTF-8
     * @throws TensorIOException when it cannot be read
     */
    public Optional<String> sidecar(String fileName) {
        // a model folder is its own directory; a file's is the one it is in
        Optional<Path> dir = archive.path().map(p -> Files.isDirectory(p) ? p : p.toAbsolutePath().getParent());
        if (dir.isEmpty()) {
            // no file system under it (a model read from a URL): what came with it, under the same limit
            Optional<String> carried = archive.companion(fileName);
            carried.ifPresent(text -> ParseLimits.check("size of " + fileName,
                    text.getBytes(StandardCharsets.UTF_8).length, limits.maxHeaderBytes()));
            return carried;
        }
        Path file = dir.get().resolve(fileName);
        if (!Files.isRegularFile(file)) return Optional.empty();
        try {
            ParseLimits.check("size of " + fileName, Files.size(file), limits.maxHeaderBytes());
            return Optional.of(Files.readString(file, StandardCharsets.UTF_8));
        } catch (LimitExceededException e) {
            throw e;
        } catch (CharacterCodingException e) {
            // the file was read; its bytes are what is wrong, so this is malformed input, not I/O
            throw new MalformedFileException(fileName + " beside the input is not valid UTF-8");
        } catch (IOException e) {
            throw new TensorIOException("cannot read " + fileName + " beside the input: " + e.getMessage(), e);
        }
    }
}
