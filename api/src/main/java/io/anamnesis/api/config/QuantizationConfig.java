package io.anamnesis.api.config;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.ClaimContext;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A checkpoint's quantization config, parsed: the object a quantizing tool records beside its
 * tensors. The api reads it from the two places every scheme shares, in a fixed order, the
 * first found winning: the file's own metadata ({@link #METADATA_KEYS}, a JSON string, as
 * safetensors {@code __metadata__} holds it), then the {@code quantization_config} member of
 * {@code config.json} beside the file. What a config means (which scheme it names, the keys a
 * tool writes, a tool's own config file such as AutoGPTQ's {@code quantize_config.json}) is
 * for the quant module that reads it to decide: the api knows no scheme.
 *
 * @param values the config object ({@link Json} values)
 * @param origin where it came from, for messages
 */
public record QuantizationConfig(Map<String, Object> values, String origin) {

    /** The metadata keys a file keeps its quantization config under, in the order they are read. */
    public static final List<String> METADATA_KEYS = List.of("quantization_config", "quant_config");

    public QuantizationConfig {
        values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
    }

    /** The config in the file's metadata, else in {@code config.json} beside the file. */
    public static Optional<QuantizationConfig> find(ClaimContext context) {
        Optional<QuantizationConfig> inMetadata = inMetadata(context);
        return inMetadata.isPresent() ? inMetadata : inConfigJson(context);
    }

    /** The first of {@link #METADATA_KEYS} in the file's metadata that holds a JSON object. */
    public static Optional<QuantizationConfig> inMetadata(ClaimContext context) {
        Map<String, String> meta = context.archive().metadata();
        for (String key : METADATA_KEYS) {
            String text = meta.get(key);
            if (text != null && parse(text, "__metadata__ " + key, context) instanceof Map<?, ?> m) {
                return Optional.of(of(m, "__metadata__ " + key));
            }
        }
        return Optional.empty();
    }

    /** The {@code quantization_config} object of {@code config.json} beside the file. */
    public static Optional<QuantizationConfig> inConfigJson(ClaimContext context) {
        Optional<String> config = context.sidecar("config.json");
        if (config.isPresent()
                && Json.member(parse(config.get(), "config.json", context), "quantization_config").orElse(null) instanceof Map<?, ?> q) {
            return Optional.of(of(q, "config.json quantization_config"));
        }
        return Optional.empty();
    }

    /** A tool's own config file beside the file, whose whole object is the config. */
    public static Optional<QuantizationConfig> sidecar(ClaimContext context, String fileName) {
        Optional<String> text = context.sidecar(fileName);
        if (text.isPresent() && parse(text.get(), fileName, context) instanceof Map<?, ?> m) {
            return Optional.of(of(m, fileName));
        }
        return Optional.empty();
    }

    /** A config from key/values found elsewhere (a module's own source, e.g. flat metadata keys). */
    /**
     * A reference checkpoint's {@code quantization_config} text, checked before a quantizer
     * copies it into its output ({@code forget --like}): a JSON object whose
     * {@code quant_method}, if it has one, {@code fits}. A reference whose entry said gptq, or
     * was not JSON, was copied into an output of NF4 or FP8 tensors.
     *
     * @param text   the entry as the reference holds it
     * @param fits   whether a {@code quant_method} describes the quantizer's tensors
     * @param scheme what the quantizer's tensors are, for the message
     * @return {@code text}, unchanged
     * @throws MalformedFileException when it is not a JSON object
     * @throws io.anamnesis.api.UnsupportedFeatureException when its quant_method does not fit
     */
    public static String checkedForCopy(String text, int maxNesting, java.util.function.Predicate<String> fits, String scheme) {
        Object root;
        try {
            root = io.anamnesis.api.json.Json.parse(text, maxNesting);
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException("the reference's quantization_config is not JSON: " + e.getMessage());
        }
        if (!(root instanceof Map<?, ?> m)) throw new MalformedFileException("the reference's quantization_config is not a JSON object");
        if (m.get("quant_method") instanceof String method && !fits.test(method)) {
            throw new io.anamnesis.api.UnsupportedFeatureException("the reference's quantization_config says quant_method '"
                    + method + "', but its tensors are quantized as " + scheme + ": the output would carry a config that "
                    + "describes it wrongly");
        }
        return text;
    }

    public static QuantizationConfig of(Map<?, ?> raw, String origin) {
        Map<String, Object> node = new LinkedHashMap<>();
        raw.forEach((k, v) -> node.put(String.valueOf(k), v));
        return new QuantizationConfig(node, origin);
    }

    /** {@code quant_method}, lower case, when the config names one. */
    public Optional<String> quantMethod() {
        return value("quant_method").filter(String.class::isInstance).map(m -> ((String) m).toLowerCase(Locale.ROOT))
                .filter(m -> !m.isEmpty());
    }

    /** Whether the config holds any of these keys. */
    public boolean hasAny(String... keys) {
        for (String k : keys) {
            if (values.containsKey(k)) return true;
        }
        return false;
    }

    private static Object parse(String text, String origin, ClaimContext context) {
        try {
            return Json.parse(text, Math.max(1, context.limits().maxNestingDepth()));
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
