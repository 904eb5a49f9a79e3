package io.anamnesis.api.config;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.ClaimContext;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The quantization config of a checkpoint, wherever it is kept, and which method it names.
 *
 * <p>GPTQ and AWQ store tensors under the same names ({@code qweight}, {@code qzeros},
 * {@code scales}), so the config decides first; both modules ask this one class, so they
 * can never reach different verdicts on the same file. The search order is fixed:
 * safetensors {@code __metadata__} ({@code quantization_config}, {@code quant_config},
 * AutoGPTQ's flat {@code gptq_*} keys), then {@code config.json}'s
 * {@code quantization_config}, {@code quantize_config.json} (AutoGPTQ, GPTQModel) and
 * {@code quant_config.json} (AutoAWQ) beside the file. The first source found wins.
 *
 * @param method "gptq", "awq", another method's name, or "" when the source does not say
 * @param values the config object ({@link Json} values)
 * @param origin where it came from, for messages
 */
public record QuantizationConfig(String method, Map<String, Object> values, String origin) {

    public static final String GPTQ = "gptq";
    public static final String AWQ = "awq";

    /** The first config found, in the fixed search order. */
    public static Optional<QuantizationConfig> find(ClaimContext context) {
        int depth = context.limits().maxNestingDepth();
        Map<String, String> meta = context.archive().metadata();
        for (String key : new String[]{"quantization_config", "quant_config"}) {
            String text = meta.get(key);
            if (text != null && parse(text, "__metadata__ " + key, depth) instanceof Map<?, ?> m) {
                return Optional.of(of(m, "__metadata__ " + key, ""));
            }
        }
        Map<String, Object> flat = new LinkedHashMap<>();
        for (var e : meta.entrySet()) {
            if (e.getKey().startsWith("gptq_")) flat.put(e.getKey().substring(5), e.getValue());
        }
        if (!flat.isEmpty()) return Optional.of(new QuantizationConfig(GPTQ, flat, "__metadata__ gptq_* keys"));

        Optional<String> config = context.sidecar("config.json");
        if (config.isPresent()
                && Json.member(parse(config.get(), "config.json", depth), "quantization_config").orElse(null) instanceof Map<?, ?> q) {
            return Optional.of(of(q, "config.json quantization_config", ""));
        }
        Optional<String> gptq = context.sidecar("quantize_config.json");
        if (gptq.isPresent() && parse(gptq.get(), "quantize_config.json", depth) instanceof Map<?, ?> m) {
            return Optional.of(of(m, "quantize_config.json", GPTQ));
        }
        Optional<String> awq = context.sidecar("quant_config.json");
        if (awq.isPresent() && parse(awq.get(), "quant_config.json", depth) instanceof Map<?, ?> m) {
            return Optional.of(of(m, "quant_config.json", AWQ));
        }
        return Optional.empty();
    }

    /** Names the method: {@code quant_method} when given, else the keys each tool writes, else the file's name. */
    private static QuantizationConfig of(Map<?, ?> raw, String origin, String byFileName) {
        Map<String, Object> node = new LinkedHashMap<>();
        raw.forEach((k, v) -> node.put(String.valueOf(k), v));
        Object declared = node.get("quant_method");
        String method = declared instanceof String s ? s.toLowerCase(Locale.ROOT) : "";
        if (method.isEmpty()) {
            if (node.containsKey("w_bit") || node.containsKey("q_group_size") || node.containsKey("version")) {
                method = AWQ;
            } else if (node.containsKey("desc_act") || node.containsKey("checkpoint_format") || node.containsKey("damp_percent")
                    || node.containsKey("static_groups") || node.containsKey("true_sequential")) {
                method = GPTQ;
            } else {
                method = byFileName;
            }
        }
        return new QuantizationConfig(method, node, origin);
    }

    private static Object parse(String text, String origin, int maxDepth) {
        try {
            return Json.parse(text, Math.max(1, maxDepth));
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException(origin + " is not valid JSON: " + e.getMessage());
        }
    }

    private Optional<Object> value(String name) {
        Object v = values.get(name);
        return v == null || v == Json.NULL ? Optional.empty() : Optional.of(v);
    }

    /** An integer field, also when written as a string (safetensors metadata holds only strings). */
    public Optional<Integer> integer(String... names) {
        for (String n : names) {
            Optional<Object> v = value(n);
            if (v.isEmpty()) continue;
            if (v.get() instanceof Double d) {
                if (d == Math.rint(d) && Math.abs(d) <= Integer.MAX_VALUE) return Optional.of(d.intValue());
            } else if (v.get() instanceof String s) {
                try {
                    return Optional.of(Integer.parseInt(s.trim()));
                } catch (NumberFormatException e) {
                    throw new MalformedFileException(origin + ": " + n + " is not an integer: " + s);
                }
            }
            throw new MalformedFileException(origin + ": " + n + " is not an integer: " + v.get());
        }
        return Optional.empty();
    }

    /** A boolean field, also as "true"/"false"/"1"/"0" strings. */
    public Optional<Boolean> bool(String... names) {
        for (String n : names) {
            Optional<Object> v = value(n);
            if (v.isEmpty()) continue;
            if (v.get() instanceof Boolean b) return Optional.of(b);
            String s = scalarText(v.get()).trim().toLowerCase(Locale.ROOT);
            if (s.equals("true") || s.equals("1")) return Optional.of(true);
            if (s.equals("false") || s.equals("0")) return Optional.of(false);
            throw new MalformedFileException(origin + ": " + n + " is not a boolean: " + v.get());
        }
        return Optional.empty();
    }

    /** A scalar field as text (numbers without a trailing ".0" when whole). */
    public Optional<String> text(String... names) {
        for (String n : names) {
            Optional<Object> v = value(n);
            if (v.isPresent() && !(v.get() instanceof Map<?, ?>) && !(v.get() instanceof List<?>)) {
                return Optional.of(scalarText(v.get()));
            }
        }
        return Optional.empty();
    }

    private static String scalarText(Object v) {
        if (v instanceof Double d && d == Math.rint(d) && !Double.isInfinite(d)) return Long.toString(d.longValue());
        return String.valueOf(v);
    }
}
