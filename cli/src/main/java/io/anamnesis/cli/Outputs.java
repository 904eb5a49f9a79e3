package io.anamnesis.cli;

import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Optional;

/** Where {@code remember} and {@code convert} write. */
final class Outputs {
    private Outputs() {
    }

    /** {@code model-<suffix>.<extension>}: {@code model-bf16.safetensors} for {@code model.safetensors} to BF16. */
    static String derivedName(InputRef in, String suffix, String extension) {
        return in.displayName() + "-" + suffix + "." + extension;
    }

    /**
     * The output path: {@code -o} when given (a folder gets the derived name inside it);
     * otherwise the derived name beside the input, or in the current folder for an
     * {@code ollama:} model (never inside the Ollama store).
     *
     * @throws UsageException when the output would be the input itself
     */
    static Path choose(InputRef in, Optional<String> requested, String suffix, String extension) {
        String name = derivedName(in, suffix, extension);
        Path out;
        if (requested.isPresent()) {
            try {
                out = Path.of(requested.get());
            } catch (InvalidPathException e) {
                throw new UsageException("not a valid output path: " + requested.get() + " (" + e.getReason() + ")");
            }
            if (Files.isDirectory(out)) out = out.resolve(name);
        } else {
            out = in.fromOllama() ? Path.of(name) : in.file().resolveSibling(name);
        }
        refuseInput(in.file(), out);
        Path dir = out.toAbsolutePath().getParent();
        if (dir != null && !Files.isDirectory(dir)) {
            throw new TensorIOException("cannot write " + out + ": folder " + dir + " does not exist");
        }
        return out;
    }

    private static void refuseInput(Path input, Path output) {
        boolean same;
        try {
            same = Files.exists(output) && Files.exists(input) ? Files.isSameFile(input, output)
                    : input.toAbsolutePath().normalize().equals(output.toAbsolutePath().normalize());
        } catch (IOException e) {
            same = false;
        }
        if (same) throw new UsageException("the output " + output + " is the input itself; choose another with -o");
    }
}
