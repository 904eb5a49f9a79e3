package io.anamnesis.quant.gptq;

import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.core.StreamReadConstraints;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.spi.ClaimContext;

import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * The quantization config of a checkpoint, wherever it is kept, and which method it names.
 *
 * <p>GPTQ and AWQ store tensors under the same names ({@code qweight}, {@code qzeros},
 * {@code scales}), so the config decides first. The search order is fixed and is the same
 * in the AWQ module, so that both modules reach the same verdict on the same file:
 * safetensors {@code __metadata__} ({@code quantization_config}, {@code quant_config},
 * AutoGPTQ's flat {@code gptq_*} keys), then {@code config.json}'s
 * {@code quantization_config}, {@code quantize_config.json} (AutoGPTQ, GPTQModel) and
 * {@code quant_config.json} (AutoAWQ) beside the file. The first source found wins.
 *
 * @param method "gptq", "awq", another method's name, or "" when the source does not say
 * @param node   the config object
 * @param origin where it came from, for messages
 */
record QuantizationConfig(String method, JsonNode node, String origin) {

    static final String GPTQ = "gptq";
    static final String AWQ = "awq";

    /** The first config found, in the fixed search order. */
    static Optional<QuantizationConfig> find(ClaimContext context) {
        ObjectMapper json = mapper(context.limits().maxNestingDepth());
        Map<String, String> meta = context.archive().metadata();
        for (String key : new String[]{"quantization_config", "quant_config"}) {
            String text = meta.get(key);
            if (text != null) {
                JsonNode node = parse(json, text, "__metadata__ " + key);
                if (node.isObject()) return Optional.of(of(node, "__metadata__ " + key, ""));
            }
        }
        ObjectNode flat = JsonNodeFactory.instance.objectNode();
        for (var e : meta.entrySet()) {
            if (e.getKey().startsWith("gptq_")) flat.put(e.getKey().substring(5), e.getValue());
        }
        if (!flat.isEmpty()) return Optional.of(new QuantizationConfig(GPTQ, flat, "__metadata__ gptq_* keys"));

        Optional<String> config = context.sidecar("config.json");
        if (config.isPresent()) {
            JsonNode q = parse(json, config.get(), "config.json").path("quantization_config");
            if (q.isObject()) return Optional.of(of(q, "config.json quantization_config", ""));
        }
        Optional<String> gptq = context.sidecar("quantize_config.json");
        if (gptq.isPresent()) {
            JsonNode node = parse(json, gptq.get(), "quantize_config.json");
            if (node.isObject()) return Optional.of(of(node, "quantize_config.json", GPTQ));
        }
        Optional<String> awq = context.sidecar("quant_config.json");
        if (awq.isPresent()) {
            JsonNode node = parse(json, awq.get(), "quant_config.json");
            if (node.isObject()) return Optional.of(of(node, "quant_config.json", AWQ));
        }
        return Optional.empty();
    }

    /** Names the method: {@code quant_method} when given, else the keys each tool writes, else the file's name. */
    private static QuantizationConfig of(JsonNode node, String origin, String byFileName) {
        String method = node.path("quant_method").asText("").toLowerCase(Locale.ROOT);
        if (method.isEmpty()) {
            if (node.has("w_bit") || node.has("q_group_size") || node.has("version")) {
                method = AWQ;
            } else if (node.has("desc_act") || node.has("checkpoint_format") || node.has("damp_percent")
                    || node.has("static_groups") || node.has("true_sequential")) {
                method = GPTQ;
            } else {
                method = byFileName;
            }
        }
        return new QuantizationConfig(method, node, origin);
    }

    private static ObjectMapper mapper(int maxDepth) {
        JsonFactory factory = JsonFactory.builder()
                .streamReadConstraints(StreamReadConstraints.builder().maxNestingDepth(Math.max(1, maxDepth)).build())
                .build();
        return new ObjectMapper(factory);
    }

    private static JsonNode parse(ObjectMapper json, String text, String origin) {
        try {
            return json.readTree(text);
        } catch (JsonProcessingException e) {
            throw new MalformedFileException(origin + " is not valid JSON: " + e.getOriginalMessage());
        }
    }

    /** An integer field, also when written as a string (safetensors metadata holds only strings). */
    Optional<Integer> integer(String... names) {
        for (String n : names) {
            JsonNode v = node.get(n);
            if (v == null || v.isNull()) continue;
            if (v.isIntegralNumber() && v.canConvertToInt()) return Optional.of(v.intValue());
            if (v.isTextual()) {
                try {
                    return Optional.of(Integer.parseInt(v.asText().trim()));
                } catch (NumberFormatException e) {
                    throw new MalformedFileException(origin + ": " + n + " is not an integer: " + v.asText());
                }
            }
            throw new MalformedFileException(origin + ": " + n + " is not an integer: " + v);
        }
        return Optional.empty();
    }

    Optional<Boolean> bool(String... names) {
        for (String n : names) {
            JsonNode v = node.get(n);
            if (v == null || v.isNull()) continue;
            if (v.isBoolean()) return Optional.of(v.booleanValue());
            String s = v.asText().trim().toLowerCase(Locale.ROOT);
            if (s.equals("true") || s.equals("1")) return Optional.of(true);
            if (s.equals("false") || s.equals("0")) return Optional.of(false);
            throw new MalformedFileException(origin + ": " + n + " is not a boolean: " + v);
        }
        return Optional.empty();
    }

    Optional<String> text(String... names) {
        for (String n : names) {
            JsonNode v = node.get(n);
            if (v != null && !v.isNull() && !v.isContainerNode()) return Optional.of(v.asText());
        }
        return Optional.empty();
    }
}
