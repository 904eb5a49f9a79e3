package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.write.AtomicOutput;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.TensorIOException;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.InvalidPathException;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;

/** Where {@code remember} and {@code convert} write. */
final class Outputs {
    private Outputs() {
    }

    /** {@code model-bf16.safetensors} for {@code model.safetensors} recovered to BF16. */
    static String derivedName(InputRef in, String suffix, String extension) {
        return in.displayName() + "-" + suffix + "." + extension;
    }

    static boolean isStandardOutput(Path output) {
        return output.toString().equals(AtomicOutput.STANDARD_OUTPUT);
    }

    /**
     * The output path: {@code -o} when given ({@code -} for standard output; a folder gets the
     * derived name inside it); otherwise the derived name beside the input, or in the current
     * folder for an {@code ollama:} model (never inside the Ollama store).
     *
     * @param command {@code remember} or {@code convert}, for the advice in usage errors
     * @throws UsageException when the output is empty, the input itself, something that
     *                        cannot be written (a directory, socket, block device), or a file
     *                        name whose extension names another format than the writer's
     */
    static Path choose(InputRef in, Optional<String> requested, String suffix, FormatWriter writer, Anamnesis amn,
                       String command) {
        String name = derivedName(in, suffix, writer.fileExtensions().getFirst());
        Path out;
        if (requested.isPresent()) {
            String r = requested.get();
            if (r.isEmpty()) throw new UsageException("-o needs a path (or '-' for standard output)");
            if (r.equals(AtomicOutput.STANDARD_OUTPUT)) return Path.of(r);
            try {
                out = Path.of(r);
            } catch (InvalidPathException e) {
                throw new UsageException("not a valid output path: " + r + " (" + e.getReason() + ")");
            }
            if (Files.isDirectory(out)) out = out.resolve(name);
        } else {
            out = in.fromOllama() ? Path.of(name) : in.file().resolveSibling(name);
        }
        refuseInput(in.file(), out);
        Optional<String> refusal = AtomicOutput.refusal(out);
        if (refusal.isPresent()) throw new UsageException(refusal.get());
        if (!AtomicOutput.isStream(out)) {
            refuseOtherFormat(out, writer, amn, command, in);
            Path dir = out.toAbsolutePath().getParent();
            if (dir != null && !Files.isDirectory(dir)) {
                throw new TensorIOException("cannot write " + out + ": folder " + dir + " does not exist");
            }
        }
        return out;
    }

    /** {@code remember -o x.gguf} would write safetensors bytes under a GGUF name. */
    private static void refuseOtherFormat(Path out, FormatWriter writer, Anamnesis amn, String command, InputRef in) {
        Path fileName = out.getFileName();
        if (fileName == null) return;
        String n = fileName.toString();
        int dot = n.lastIndexOf('.');
        if (dot <= 0) return;
        String ext = n.substring(dot + 1).toLowerCase(Locale.ROOT);
        if (writer.fileExtensions().contains(ext)) return;
        Optional<FormatWriter> other = amn.writers().stream().filter(w -> w.fileExtensions().contains(ext)).findFirst();
        String writes = command + " writes " + writer.format();
        if (other.isPresent()) {
            String advice = command.equals("remember")
                    ? "amn convert " + in.reference() + " --to " + other.get().format() + " -o " + out
                    : "--to " + other.get().format();
            throw new UsageException(out + " names a " + other.get().format() + " file, but " + writes
                    + "; use '" + advice + "'");
        }
        var reader = amn.readers().stream().filter(r -> r.fileExtensions().contains(ext)).findFirst();
        if (reader.isPresent()) {
            throw new UsageException(out + " names a " + reader.get().format() + " file, but " + writes
                    + " (no installed writer makes " + reader.get().format() + "); name it ." + writer.fileExtensions().getFirst());
        }
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
