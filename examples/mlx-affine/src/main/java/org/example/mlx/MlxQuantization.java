package org.example.mlx;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.ClaimContext;

import java.util.Map;
import java.util.Optional;

/**
 * What mlx-lm records about a model's quantization, in the {@code quantization} object of the
 * {@code config.json} beside the weights (newer versions repeat it as
 * {@code quantization_config}):
 *
 * <pre>{@code
 * "quantization": {"group_size": 64, "bits": 4,
 *                  "model.layers.0.mlp.down_proj": {"group_size": 64, "bits": 8},
 *                  "lm_head": false}
 * }</pre>
 *
 * The two numbers apply to every quantized layer; a layer's own object (mixed-precision
 * recipes such as {@code mixed_3_6}) overrides them.
 *
 * @param config the object, or an empty map when the model records none
 */
record MlxQuantization(Map<String, Object> config) {

    /** The config.json beside the archive's file, when there is one with a quantization object. */
    static MlxQuantization of(ClaimContext context) {
        Optional<String> text = context.sidecar("config.json");
        if (text.isEmpty()) return new MlxQuantization(Map.of());
        Object root;
        try {
            root = Json.parse(text.get(), Math.max(1, context.limits().maxNestingDepth()));
        } catch (IllegalArgumentException e) {
            throw new MalformedFileException("config.json is not valid JSON: " + e.getMessage());
        }
        for (String key : new String[]{"quantization", "quantization_config"}) {
            if (Json.member(root, key).orElse(null) instanceof Map<?, ?> m) {
                @SuppressWarnings("unchecked") Map<String, Object> q = (Map<String, Object>) m;
                return new MlxQuantization(q);
            }
        }
        return new MlxQuantization(Map.of());
    }

    /** The mode, when recorded: {@code affine} (MLX's default), {@code mxfp4}, ... */
    Optional<String> mode() {
        return config.get("mode") instanceof String s ? Optional.of(s) : Optional.empty();
    }

    /** Bits for the layer {@code module} (the weight's name without {@code .weight}), when recorded. */
    Optional<Integer> bits(String module) {
        return number(module, "bits");
    }

    /** Group size for the layer {@code module}, when recorded. */
    Optional<Integer> groupSize(String module) {
        return number(module, "group_size");
    }

    private Optional<Integer> number(String module, String key) {
        Object own = config.get(module);
        Object v = own instanceof Map<?, ?> layer && layer.containsKey(key) ? layer.get(key) : config.get(key);
        if (v == null) return Optional.empty();
        if (v instanceof Double d && d == Math.rint(d) && d > 0 && d <= 1024) return Optional.of(d.intValue());
        throw new MalformedFileException("config.json quantization: " + key + " of " + module + " is not a small positive integer: " + v);
    }
}
