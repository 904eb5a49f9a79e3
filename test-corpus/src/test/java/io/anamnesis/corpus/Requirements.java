package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.FormatReader;

import java.util.List;
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

    /**
     * Cases whose capability an open issue adds, by family (and, where only some cases of a
     * family are new, by case name prefix). Each is reported as skipped with the issue named;
     * the issue that adds the capability removes its line.
     */
    private static final List<Pending> PENDING = List.of();

    private record Pending(String family, String casePrefix, String why) {
        boolean covers(CorpusCase c) {
            return c.family().equals(family) && c.name().startsWith(casePrefix);
        }
    }

    /** Why this case cannot run with what is installed, if it cannot. */
    static Optional<String> missing(CorpusCase c, Anamnesis amn) {
        for (Pending p : PENDING) {
            if (p.covers(c)) return Optional.of("not yet: " + p.why());
        }
        if (c.family().equals(HfToGgufCases.FAMILY)) return HfToGgufCases.missing(c, amn);
        String format = formatOf(c);
        if (amn.readers().stream().map(FormatReader::format).noneMatch(format::equals)) {
            return Optional.of("no installed reader for " + format + " (module format-" + format + ")");
        }
        if (c.operation().equals("quantize")) {
            // every ggml type has its encoder (issue 11): a missing one fails the case, it is not skipped
            if (amn.quantizers().stream().noneMatch(q -> q.scheme().equals("gguf"))) {
                return Optional.of("no installed quantizer for gguf (module quant-gguf)");
            }
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
