package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.PlannedTensor;

import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * A 128k Phi-3's rope scaling ({@code rope_scaling} of type {@code longrope}, older
 * {@code su}: Phi-3-mini/medium-128k, Phi-3.5-mini, Phi-4-mini) as the converter writes it
 * ({@code Phi3MiniModel.generate_extra_tensors}): two extra F32 tensors, the first of the
 * file, {@code rope_factors_long.weight} then {@code rope_factors_short.weight}, each the
 * config's list as it is (every number rounded to float32), one factor per rotary pair
 * ({@code rope_dims / 2}); and the key {@code phi3.rope.scaling.attn_factor}, written while
 * the tensors are prepared and so right after {@code general.architecture}:
 * {@code sqrt(1 + ln(s) / ln(original))} for {@code s = max_position_embeddings /
 * original_max_position_embeddings} above 1, else 1 (computed in double, stored float32).
 *
 * <p>llama.cpp divides each rotary frequency by the long factors when the context it runs
 * ({@code n_ctx / n_seq_max}) exceeds {@code rope.scaling.original_context_length}, else by
 * the short ones, and scales cos/sin by the attention factor; Hugging Face chooses by the
 * length of the sequence instead, so the two agree when both are on the same side of the
 * original context.
 */
record LongRope(float attnFactor, float[] longFactors, float[] shortFactors) {
    /** gguf-py's {@code MODEL_TENSOR.ROPE_FACTORS_LONG} and {@code ROPE_FACTORS_SHORT} names. */
    static final String LONG = "rope_factors_long.weight", SHORT = "rope_factors_short.weight";

    /** Whether config.json has a top-level {@code rope_scaling} object of type longrope or su (what the converter reads). */
    static boolean declared(Map<?, ?> config) {
        return !config.containsKey("rope_parameters") && config.get("rope_scaling") instanceof Map<?, ?> m
                && type(m).filter(t -> t.equals("longrope") || t.equals("su")).isPresent();
    }

    /**
     * The longrope scaling of a phi3 config.json, empty without {@code rope_scaling}. The
     * converter's checks are made as it makes them (a missing type, a missing factor list, or
     * lists not of {@code rope_dims / 2} factors are malformed; a type other than longrope/su is
     * not converted); beyond them, a factor that is not a positive finite number is malformed,
     * and an {@code attention_factor} that Hugging Face would use in place of the one the
     * converter computes is not converted.
     */
    static Optional<LongRope> phi3(Map<?, ?> config) {
        Object scaling = config.get("rope_scaling");
        if (scaling == null || scaling == Json.NULL || config.containsKey("rope_parameters")) return Optional.empty();
        if (!(scaling instanceof Map<?, ?> rope)) throw HfGgufExporter.badKey("rope_scaling", "is not an object: " + scaling);
        String type = type(rope).orElseThrow(() -> new MalformedFileException(
                "config.json rope_scaling has no type (rope_type or type); the converter requires it"));
        if (type.equals("yarn")) {
            throw new UnsupportedFeatureException("config.json rope scaling type yarn on phi3 is not converted yet (the "
                    + "converter writes it as rope_factors_long/short and a yarn attention factor, not yet checked against "
                    + "llama.cpp); longrope/su and none are");
        }
        if (!type.equals("longrope") && !type.equals("su")) {
            throw new UnsupportedFeatureException("config.json rope scaling type " + type + " on phi3 is not converted "
                    + "(the converter takes longrope, su and yarn only); longrope/su and none are");
        }
        long max = positiveInteger(config, HfConfig.find(config, List.of("n_positions", "max_position_embeddings"))
                .orElse(null), config.containsKey("n_positions") ? "n_positions" : "max_position_embeddings");
        String origKey = "original_max_position_embeddings";
        long orig = positiveInteger(config, config.get(origKey), origKey);
        double scale = (double) max / orig;
        if (scale > 1.0 && orig == 1) {
            throw HfGgufExporter.badKey(origKey, "is 1: the converter's attention factor divides by its logarithm");
        }
        double attn = scale > 1.0 ? Math.sqrt(1 + Math.log(scale) / Math.log(orig)) : 1.0;
        float attnFactor = (float) attn;
        if (rope.containsKey("attention_factor") && rope.get("attention_factor") != Json.NULL) {
            Object given = rope.get("attention_factor");
            if (HfConfig.number(given).map(g -> g.floatValue() != attnFactor).orElse(true)) {
                throw new UnsupportedFeatureException("config.json rope_scaling attention_factor " + given + " is not the "
                        + attnFactor + " the converter computes from max_position_embeddings / " + origKey
                        + " (and writes as phi3.rope.scaling.attn_factor); the file would not run as the model does");
            }
        }
        long pairs = HfGgufExporter.partialRopeDims(config) / 2;
        return Optional.of(new LongRope(attnFactor, factors(rope, "long_factor", pairs), factors(rope, "short_factor", pairs)));
    }

    /** The two tensors, long then short, as the converter yields them. */
    List<PlannedTensor> tensors() {
        return List.of(RopeFreqs.constant(LONG, longFactors), RopeFreqs.constant(SHORT, shortFactors));
    }

    /** {@code rope_type}, else {@code type}, lower-cased as the converter does; empty when neither or empty. */
    private static Optional<String> type(Map<?, ?> rope) {
        Object t = rope.containsKey("rope_type") ? rope.get("rope_type") : rope.get("type");
        if (t == null) return Optional.empty();
        if (!(t instanceof String s)) throw HfGgufExporter.badKey("rope_scaling type", "is not a string: " + t);
        return s.isEmpty() ? Optional.empty() : Optional.of(s.toLowerCase(Locale.ROOT));
    }

    private static long positiveInteger(Map<?, ?> config, Object v, String key) {
        long n = HfConfig.asInteger(v).orElseThrow(() -> HfGgufExporter.badKey(key, "is not an integer: " + v));
        if (n <= 0) throw HfGgufExporter.badKey(key, n + " is not positive");
        return n;
    }

    private static float[] factors(Map<?, ?> rope, String key, long pairs) {
        Object v = rope.get(key);
        String where = "config.json rope_scaling " + key;
        if (v == null || v == Json.NULL) {
            throw new MalformedFileException(where + " is missing; a longrope scaling needs long_factor and short_factor");
        }
        if (!(v instanceof List<?> list)) throw new MalformedFileException(where + " is not a list of numbers");
        if (list.size() != pairs) {
            throw new MalformedFileException(where + " has " + list.size() + " factors, not the " + pairs
                    + " (rotary dimensions / 2) that the rope of this config takes");
        }
        float[] out = new float[list.size()];
        for (int i = 0; i < out.length; i++) {
            Object x = list.get(i);
            double d = HfConfig.number(x).orElseThrow(() -> new MalformedFileException(where + " holds " + x
                    + ", not a number"));
            float f = (float) d;
            if (!(f > 0) || Float.isInfinite(f)) {
                throw new MalformedFileException(where + " holds " + x + ", not a positive number (a rotary frequency "
                        + "is divided by it)");
            }
            out[i] = f;
        }
        return out;
    }
}
