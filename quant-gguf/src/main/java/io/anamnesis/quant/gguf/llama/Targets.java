package io.anamnesis.quant.gguf.llama;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;

/**
 * Every name {@code --to} takes for GGUF, with one line of help: llama-quantize's file types
 * (its {@code QUANT_OPTIONS}, aliases included, lower case), the ggml types that have no file
 * type of their own name, and {@code ggml:<type>} for each ggml type exactly. Where a name is
 * both a ggml type and a file type ({@code q4_0}, {@code iq2_s}, {@code f16}) it is the file
 * type, as llama-quantize reads it; {@code ggml:} names the type itself.
 */
public final class Targets {
    private Targets() {
    }

    /** The prefix that names one ggml type for every eligible tensor. */
    public static final String GGML_PREFIX = "ggml:";

    public record Entry(String name, Target target, String help) {
    }

    private static final SequencedMap<String, Entry> ALL = build();

    private static SequencedMap<String, Entry> build() {
        SequencedMap<String, Entry> m = new LinkedHashMap<>();
        for (FileType ft : FileType.values()) {
            put(m, ft.llamaName(), new Target.Mix(ft), "llama-quantize " + ft.llamaName() + " (file type " + ft.id()
                    + "): " + ft.description());
            // llama-quantize's aliases follow the entry before them in its table
            switch (ft) {
                case MOSTLY_IQ3_M -> alias(m, "Q3_K", FileType.MOSTLY_Q3_K_M);
                case MOSTLY_IQ4_XS -> alias(m, "Q4_K", FileType.MOSTLY_Q4_K_M);
                case MOSTLY_Q4_K_M -> alias(m, "Q5_K", FileType.MOSTLY_Q5_K_M);
                default -> {
                }
            }
        }
        for (GgmlType t : GgmlType.values()) {
            String name = t.name().toLowerCase(Locale.ROOT);
            if (!m.containsKey(name)) {
                put(m, name, new Target.Exact(t), "every eligible tensor as ggml type " + t.ggmlName()
                        + " (llama-quantize has no file type of this name)");
            }
        }
        for (GgmlType t : GgmlType.values()) {
            put(m, GGML_PREFIX + t.name().toLowerCase(Locale.ROOT), new Target.Exact(t),
                    "every eligible tensor as exactly ggml type " + t.ggmlName() + ", as ggml_quantize_chunk makes it");
        }
        return Collections.unmodifiableSequencedMap(m);
    }

    private static void put(Map<String, Entry> m, String name, Target t, String help) {
        String key = name.toLowerCase(Locale.ROOT);
        m.put(key, new Entry(key, t, help));
    }

    private static void alias(Map<String, Entry> m, String name, FileType ft) {
        put(m, name, new Target.Mix(ft), "alias for " + ft.llamaName());
    }

    /** Every target, in llama-quantize's order, then the ggml-only types, then the {@code ggml:} names. */
    public static SequencedMap<String, Entry> all() {
        return ALL;
    }

    /** The target of a name (case-insensitive). */
    public static Optional<Target> of(String name) {
        return Optional.ofNullable(ALL.get(name.toLowerCase(Locale.ROOT))).map(Entry::target);
    }
}
