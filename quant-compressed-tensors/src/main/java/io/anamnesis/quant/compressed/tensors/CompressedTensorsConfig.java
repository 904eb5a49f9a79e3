package io.anamnesis.quant.compressed.tensors;

import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.config.QuantizationConfig;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * A compressed-tensors {@code quantization_config}: the checkpoint-wide {@code format}, the
 * config groups (which modules each quantizes, with which weight arguments and format), the
 * {@code ignore} list, the status, and the sparsity and transform configs this module
 * refuses rather than misreads. Parsed from the generic JSON object the api finds (the
 * file's metadata or {@code config.json} beside it).
 *
 * @param format      the top-level format, when given
 * @param status      {@code quantization_status} ("compressed" for a saved checkpoint), or ""
 * @param ignore      module names and {@code re:} patterns left unquantized
 * @param groups      the config groups, in file order
 * @param sparsity    the sparsity config's format, when one other than "dense" is declared
 * @param transformed whether {@code transform_config} declares any transform
 * @param origin      where the config came from, for messages
 */
record CompressedTensorsConfig(Optional<String> format, String status, List<String> ignore, List<ConfigGroup> groups,
                               Optional<String> sparsity, boolean transformed, String origin) {

    static final String QUANT_METHOD = "compressed-tensors";

    /**
     * One entry of {@code config_groups}.
     *
     * @param targets module names, {@code re:} patterns, or module class names ("Linear")
     * @param weights the weights' quantization arguments; empty for an activation-only group
     * @param format  the group's own format, when given
     */
    record ConfigGroup(String name, List<String> targets, Optional<WeightArgs> weights, Optional<String> format) {
    }

    /**
     * The {@code weights} arguments of a config group (the library's {@code QuantizationArgs}).
     *
     * @param numBits        bits per value
     * @param type           "int" or "float"
     * @param symmetric      no zero point when true
     * @param groupSize      columns per group (group and tensor_group strategies)
     * @param strategy       tensor, channel, group, tensor_group, block (token for activations)
     * @param blockStructure [rows, cols] of a block (block strategy)
     */
    record WeightArgs(int numBits, String type, boolean symmetric, Optional<Integer> groupSize,
                      Optional<String> strategy, Optional<long[]> blockStructure) {
        boolean isFloat() {
            return type.equals("float");
        }
    }

    /** The config when the archive's quantization config names this method. */
    static Optional<CompressedTensorsConfig> of(Optional<QuantizationConfig> found) {
        if (found.isEmpty() || !found.get().quantMethod().orElse("").equals(QUANT_METHOD)) return Optional.empty();
        return Optional.of(parse(found.get().values(), found.get().origin()));
    }

    static CompressedTensorsConfig parse(Map<String, Object> root, String origin) {
        Optional<String> format = text(root, "format", origin);
        String status = text(root, "quantization_status", origin).orElse("");
        List<String> ignore = strings(root.get("ignore"), origin + " ignore");
        List<ConfigGroup> groups = new ArrayList<>();
        Object cg = root.get("config_groups");
        if (cg instanceof Map<?, ?> m) {
            for (var e : m.entrySet()) {
                String where = origin + " config_groups." + e.getKey();
                if (!(e.getValue() instanceof Map<?, ?> g)) throw new MalformedFileException(where + " is not an object");
                Object w = g.get("weights");
                Optional<WeightArgs> weights = w == null || w == Json.NULL ? Optional.empty()
                        : Optional.of(weightArgs(w, where + ".weights"));
                groups.add(new ConfigGroup(String.valueOf(e.getKey()), strings(g.get("targets"), where + ".targets"),
                        weights, text(g, "format", where)));
            }
        } else if (cg != null && cg != Json.NULL) {
            throw new MalformedFileException(origin + " config_groups is not an object");
        }
        Optional<String> sparsity = Optional.empty();
        if (root.get("sparsity_config") instanceof Map<?, ?> s && !s.isEmpty()) {
            sparsity = text(s, "format", origin + " sparsity_config").filter(f -> !f.equals("dense"));
        }
        boolean transformed = root.get("transform_config") instanceof Map<?, ?> t && !t.isEmpty()
                && !(t.get("config_groups") instanceof Map<?, ?> tg && tg.isEmpty());
        return new CompressedTensorsConfig(format, status, ignore, groups, sparsity, transformed, origin);
    }

    private static WeightArgs weightArgs(Object w, String where) {
        if (!(w instanceof Map<?, ?> m)) throw new MalformedFileException(where + " is not an object");
        int bits = integer(m.get("num_bits"), where + ".num_bits").orElse(8);
        if (bits < 1 || bits > 32) throw new MalformedFileException(where + ".num_bits is " + bits);
        String type = text(m, "type", where).orElse("int").toLowerCase(Locale.ROOT);
        if (!type.equals("int") && !type.equals("float")) {
            throw new MalformedFileException(where + ".type is '" + type + "', expected int or float");
        }
        Object sym = m.get("symmetric");
        boolean symmetric = sym == null || sym == Json.NULL || Boolean.TRUE.equals(sym);
        if (sym != null && sym != Json.NULL && !(sym instanceof Boolean)) {
            throw new MalformedFileException(where + ".symmetric is not a boolean: " + sym);
        }
        Optional<Integer> groupSize = integer(m.get("group_size"), where + ".group_size");
        if (groupSize.isPresent() && groupSize.get() < 1 && groupSize.get() != -1) {
            throw new MalformedFileException(where + ".group_size is " + groupSize.get());
        }
        groupSize = groupSize.filter(g -> g > 0);
        Optional<String> strategy = text(m, "strategy", where).map(s -> s.toLowerCase(Locale.ROOT));
        Optional<long[]> block = Optional.empty();
        Object bs = m.get("block_structure");
        if (bs != null && bs != Json.NULL) {
            if (bs instanceof List<?> l && l.size() == 2) {
                long h = integer(l.get(0), where + ".block_structure").orElse(0);
                long wd = integer(l.get(1), where + ".block_structure").orElse(0);
                if (h < 1 || wd < 1) throw new MalformedFileException(where + ".block_structure must be two positive integers: " + bs);
                block = Optional.of(new long[]{h, wd});
            } else {
                throw new MalformedFileException(where + ".block_structure must be two positive integers: " + bs);
            }
        }
        return new WeightArgs(bits, type, symmetric, groupSize, strategy, block);
    }

    /**
     * The config group that quantized module {@code module}, the way compressed-tensors
     * matches targets: a module's exact name or a {@code re:} pattern first; otherwise a
     * target that names no module here names a module class ("Linear"), which names cannot
     * show, so such a group applies when it is the only one, or the only one whose weight
     * type fits the stored dtype ({@code isFloat}).
     */
    Optional<ConfigGroup> groupFor(String module, boolean storedAsFloat) {
        for (ConfigGroup g : groups) {
            if (g.weights().isEmpty()) continue;
            for (String t : g.targets()) {
                if (t.equals(module) || (t.startsWith("re:") && matches(t, module))) return Optional.of(g);
            }
        }
        List<ConfigGroup> byClass = new ArrayList<>();
        for (ConfigGroup g : groups) {
            if (g.weights().isPresent() && g.targets().stream().anyMatch(t -> !t.startsWith("re:"))) byClass.add(g);
        }
        if (byClass.size() > 1) {
            byClass.removeIf(g -> g.weights().orElseThrow().isFloat() != storedAsFloat);
        }
        return byClass.size() == 1 ? Optional.of(byClass.getFirst()) : Optional.empty();
    }

    /** Whether the {@code ignore} list leaves this module unquantized. */
    boolean ignores(String module) {
        for (String t : ignore) {
            if (t.equals(module) || (t.startsWith("re:") && matches(t, module))) return true;
        }
        return false;
    }

    /**
     * Python's {@code re.match}: anchored at the start only. The pattern comes from the file,
     * so its matching runs on a budget: a pattern that backtracks for ever is refused, not run.
     */
    private boolean matches(String target, String module) {
        try {
            return Pattern.compile(target.substring(3)).matcher(new Budgeted(module)).lookingAt();
        } catch (PatternSyntaxException e) {
            throw new MalformedFileException(origin + ": target " + target + " is not a valid pattern: " + e.getDescription());
        } catch (Budgeted.Exhausted e) {
            throw new LimitExceededException(origin + ": pattern " + target + " takes too long to match " + module);
        }
    }

    /** A string whose characters may be read a bounded number of times in all. */
    private static final class Budgeted implements CharSequence {
        static final class Exhausted extends RuntimeException {
            Exhausted() {
                super(null, null, false, false);
            }
        }

        private final String text;
        private final int[] reads;

        Budgeted(String text) {
            this(text, new int[]{1_000_000});
        }

        private Budgeted(String text, int[] reads) {
            this.text = text;
            this.reads = reads;
        }

        @Override
        public int length() {
            return text.length();
        }

        @Override
        public char charAt(int index) {
            if (--reads[0] < 0) throw new Exhausted();
            return text.charAt(index);
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return new Budgeted(text.substring(start, end), reads);
        }

        @Override
        public String toString() {
            return text;
        }
    }

    private static Optional<String> text(Map<?, ?> m, String key, String where) {
        Object v = m.get(key);
        if (v == null || v == Json.NULL) return Optional.empty();
        if (v instanceof String s) return Optional.of(s);
        throw new MalformedFileException(where + " " + key + " is not a string: " + v);
    }

    private static Optional<Integer> integer(Object v, String where) {
        if (v == null || v == Json.NULL) return Optional.empty();
        if (v instanceof Double d && d == Math.rint(d) && Math.abs(d) <= Integer.MAX_VALUE) return Optional.of(d.intValue());
        throw new MalformedFileException(where + " is not an integer: " + v);
    }

    private static List<String> strings(Object v, String where) {
        if (v == null || v == Json.NULL) return List.of();
        if (!(v instanceof List<?> l)) throw new MalformedFileException(where + " is not a list");
        List<String> out = new ArrayList<>();
        for (Object o : l) {
            if (!(o instanceof String s)) throw new MalformedFileException(where + " holds a non-string: " + o);
            out.add(s);
        }
        return out;
    }
}
