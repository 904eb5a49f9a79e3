package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.FormatReader;

import java.util.Locale;
import java.util.Optional;
import java.util.Set;

/**
 * Which installed modules a corpus case needs, so that a case whose module is not
 * installed is reported as skipped with that reason instead of failing.
 */
final class Requirements {
    private static final Set<String> PLAIN_TYPES = Set.of("F16", "BF16", "F32", "F64");

    private Requirements() {
    }

    /** Why this case cannot run with what is installed, if it cannot. */
    static Optional<String> missing(CorpusCase c, Anamnesis amn) {
        if (c.operation().equals("quantize")) {
            return Optional.of("quantize ('forget') cases need a GGUF encoder, which no installed module provides yet");
        }
        String format = formatOf(c);
        if (amn.readers().stream().map(FormatReader::format).noneMatch(format::equals)) {
            return Optional.of("no installed reader for " + format + " (module format-" + format + ")");
        }
        if (c.operation().equals("dequantize")) {
            Optional<String> scheme = schemeOf(c);
            if (scheme.isPresent() && amn.dequantizers().stream().map(Dequantizer::scheme).noneMatch(scheme.get()::equals)) {
                return Optional.of("no installed dequantizer for " + scheme.get() + " (module quant-" + scheme.get() + ")");
            }
        }
        return Optional.empty();
    }

    static String formatOf(CorpusCase c) {
        String file = c.input().getFileName().toString();
        String ext = file.substring(file.lastIndexOf('.') + 1).toLowerCase(Locale.ROOT);
        return switch (ext) {
            case "npy" -> "npz";
            case "pt", "bin" -> "pth";
            default -> ext;
        };
    }

    /** The quant scheme family a dequantize case exercises; empty for plain dtypes. */
    static Optional<String> schemeOf(CorpusCase c) {
        return switch (c.family()) {
            case "ggml", "gguf" -> PLAIN_TYPES.contains(c.json().path("scheme").asText().toUpperCase(Locale.ROOT))
                    ? Optional.empty() : Optional.of("gguf");
            default -> Optional.of(c.family());
        };
    }
}
