package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.UnsupportedFeatureException;

import java.util.Map;
import java.util.Set;

/**
 * YaRN rope scaling ({@code rope_type}/{@code type} {@code yarn}, as Qwen2.5/Qwen3 long
 * context and some llama-family models declare it) as the converter's
 * {@code TextModel.set_gguf_parameters} writes it for llama, qwen2, qwen3, olmo2 (OLMo 3), gpt-oss, arcee, mistral3
 * (Ministral 3, whose {@code mscale_all_dim} its family writes as the log multiplier) and deepseek2
 * (DeepSeek-V2/V3, whose attention factor is {@link #LOG_MULTIPLIER}'s): after the head
 * counts (and {@code attention.causal}), {@code rope.scaling.type} "yarn",
 * {@code rope.scaling.factor} (float32), {@code rope.scaling.original_context_length} (uint32,
 * the rope parameters' {@code original_max_position_embeddings}), then, each only when the
 * rope parameters hold it, {@code rope.scaling.yarn_ext_factor} ({@code extrapolation_factor}),
 * {@code rope.scaling.yarn_attn_factor} ({@code attention_factor}, else {@code attn_factor}),
 * {@code rope.scaling.yarn_beta_fast} and {@code rope.scaling.yarn_beta_slow} (float32).
 *
 * <p>For these families llama.cpp reads only the type, the factor and the original context:
 * it runs YaRN with beta_fast 32, beta_slow 1, extrapolation 1 and the attention factor
 * {@code 0.1 ln(factor) + 1} whatever the other keys say, as transformers does by default.
 * A config whose values differ from those (or that sets what transformers reads and the
 * converter drops: {@code mscale} with {@code mscale_all_dim}, {@code truncate} false) would
 * give a file that does not run as the model does, and is refused naming the key; a value
 * that the converter could not write (a string factor, a fractional or missing original
 * context) is malformed.
 */
final class Yarn {
    /** The families whose {@code set_gguf_parameters} is TextModel's, checked against llama.cpp. */
    static final Set<String> FAMILIES = Set.of("llama", "qwen2", "qwen3", "gpt-oss", "olmo2", "arcee", "deepseek2", "mistral3");
    /**
     * Families whose llama.cpp graph takes YaRN's attention factor from
     * {@code rope.scaling.yarn_log_multiplier} (0.1 {@code mscale_all_dim}, written by the family's
     * own keys) rather than from the factor alone: DeepSeek's, whose softmax scale is multiplied by
     * {@code mscale(factor, mscale_all_dim)^2} and whose cos and sin by
     * {@code mscale(factor, mscale) / mscale(factor, mscale_all_dim)}, which llama.cpp leaves at 1.
     */
    static final Set<String> LOG_MULTIPLIER = Set.of("deepseek2");
    /**
     * Families whose published checkpoints all declare {@code truncate} false and which
     * llama.cpp runs with the range rounded all the same: converted as the converter converts
     * them (refusing would refuse every gpt-oss), with a note ({@link #untruncatedNote}).
     */
    static final Set<String> ROUNDED_BY_LLAMA_CPP = Set.of("gpt-oss");
    /** transformers' and llama.cpp's defaults. */
    static final double BETA_FAST = 32, BETA_SLOW = 1, EXTRAPOLATION = 1;

    private Yarn() {
    }

    /** Whether {@code type} is yarn, compared as the converter compares it (exactly). */
    static boolean isYarn(Object type) {
        return "yarn".equals(type);
    }

    /** transformers' {@code get_mscale}: the attention factor YaRN gives a scale. */
    static double mscale(double factor, double mscale) {
        return factor <= 1 ? 1.0 : 0.1 * mscale * Math.log(factor) + 1.0;
    }

    /**
     * Puts the yarn keys of {@code rope} (the rope parameters) for family {@code a} in
     * {@code kv}, in the converter's order, or throws naming the key that stops it.
     *
     * @param where {@code rope_parameters} or {@code rope_scaling}, for the messages
     */
    static void keys(String a, Map<?, ?> rope, String where, Map<String, MetaValue> kv) {
        keys(a, rope, where, false, kv);
    }

    /**
     * {@link #keys(String, Map, String, Map)} for a family that also writes {@code mscale_all_dim} as it is as
     * {@code rope.scaling.yarn_log_multiplier} ({@code rawLogMultiplier}: Ministral 3's): llama.cpp then runs the
     * attention factor {@code mscale(factor, 1) / mscale(factor, mscale_all_dim)}, which must be transformers'
     * ({@code mscale(factor, mscale) / mscale(factor, mscale_all_dim)}: so {@code mscale} 1), and reads no
     * attention factor key.
     */
    static void keys(String a, Map<?, ?> rope, String where, boolean rawLogMultiplier, Map<String, MetaValue> kv) {
        if (!FAMILIES.contains(a)) {
            throw new UnsupportedFeatureException("config.json rope scaling type yarn on " + a + " is not converted yet "
                    + "(" + String.join(", ", new java.util.TreeSet<>(FAMILIES)) + " are)");
        }
        Object f = rope.get("factor");
        if (f == null || f == io.anamnesis.api.json.Json.NULL) {
            // the converter writes no key then: the file would run without the scaling
            throw new UnsupportedFeatureException("config.json " + where + " factor is missing: the converter writes a yarn "
                    + "rope scaling without a factor as no scaling at all (transformers derives one from "
                    + "max_position_embeddings); the file would not run as the model does");
        }
        double factor = number(f, where, "factor");
        if (!(factor > 0) || Double.isInfinite(factor)) throw malformed(where, "factor", f + " is not a positive number");
        if (factor < 1) {
            throw new UnsupportedFeatureException("config.json " + where + " factor " + f + " is below 1: a yarn scaling "
                    + "that shortens the context is not converted");
        }
        Object o = rope.get("original_max_position_embeddings");
        if (o == null || o == io.anamnesis.api.json.Json.NULL) {
            throw malformed(where, "original_max_position_embeddings", "is missing (the converter requires it for yarn)");
        }
        // gguf-py packs it as a uint32 (the JSON reader does not tell 32768 from 32768.0)
        long old = HfConfig.asInteger(o).orElseThrow(() -> malformed(where, "original_max_position_embeddings",
                "is not an integer: " + o));
        if (old <= 0 || old > 0xFFFF_FFFFL) {
            throw malformed(where, "original_max_position_embeddings", old + " is not a positive uint32");
        }

        Object attnKey = rope.containsKey("attention_factor") ? "attention_factor" : "attn_factor";
        Object attn = present(rope, (String) attnKey) ? rope.get(attnKey) : null;
        double want = mscale(factor, 1);
        if (LOG_MULTIPLIER.contains(a)) {
            if (attn != null) {
                throw new UnsupportedFeatureException("config.json " + where + " " + attnKey + " " + attn + ": llama.cpp's " + a
                        + " takes the attention factor from mscale_all_dim; the file would not run as the model does");
            }
            // DeepSeek's defaults: mscale 1, mscale_all_dim 0
            double m = present(rope, "mscale") ? number(rope.get("mscale"), where, "mscale") : 1;
            double all = present(rope, "mscale_all_dim") ? number(rope.get("mscale_all_dim"), where, "mscale_all_dim") : 0;
            double cosine = mscale(factor, m) / mscale(factor, all);
            if (Math.abs(cosine - 1) > 1e-6) {
                throw new UnsupportedFeatureException("config.json " + where + " mscale " + m + " and mscale_all_dim " + all
                        + " scale the rotation's cos and sin by " + (float) cosine + ", which llama.cpp's " + a + " leaves at 1 "
                        + "(it has no key for it); the file would not run as the model does");
            }
        } else if (rawLogMultiplier) {
            if (attn != null) {
                throw new UnsupportedFeatureException("config.json " + where + " " + attnKey + " " + attn + ": llama.cpp's " + a
                        + " takes the attention factor from mscale_all_dim; the file would not run as the model does");
            }
            if (!present(rope, "mscale_all_dim")) throw malformed(where, "mscale_all_dim", "is missing (the converter requires it)");
            double all = number(rope.get("mscale_all_dim"), where, "mscale_all_dim");
            double hf = present(rope, "mscale") ? mscale(factor, number(rope.get("mscale"), where, "mscale")) / mscale(factor, all)
                    : want;
            double llamaCpp = all != 0 ? mscale(factor, 1) / mscale(factor, all) : want;
            if (Math.abs(hf - llamaCpp) > 1e-6 * llamaCpp) {
                throw new UnsupportedFeatureException("config.json " + where + " mscale " + rope.get("mscale") + " and mscale_all_dim "
                        + all + " give transformers' attention factor " + (float) hf + ", llama.cpp's " + a + " "
                        + (float) llamaCpp + " (it takes mscale as 1); the file would not run as the model does");
            }
        } else if (attn != null) {
            double given = number(attn, where, (String) attnKey);
            if (Math.abs(given - want) > 1e-6 * want) {
                throw new UnsupportedFeatureException("config.json " + where + " " + attnKey + " " + attn + " is not "
                        + "0.1 ln(factor) + 1 = " + (float) want + ", the attention factor llama.cpp runs " + a
                        + " with (it does not read the key); the file would not run as the model does");
            }
        } else if (present(rope, "mscale") && present(rope, "mscale_all_dim")) {
            double m = number(rope.get("mscale"), where, "mscale");
            double all = number(rope.get("mscale_all_dim"), where, "mscale_all_dim");
            double hf = m != 0 && all != 0 ? mscale(factor, m) / mscale(factor, all) : want;
            if (Math.abs(hf - want) > 1e-6 * want) {
                throw new UnsupportedFeatureException("config.json " + where + " mscale " + rope.get("mscale")
                        + " and mscale_all_dim " + rope.get("mscale_all_dim") + " give transformers' attention factor "
                        + (float) hf + ", which the converter does not write (llama.cpp runs " + a + " with "
                        + (float) want + "); the file would not run as the model does");
            }
        }
        if (Boolean.FALSE.equals(rope.get("truncate")) && !ROUNDED_BY_LLAMA_CPP.contains(a)) {
            throw new UnsupportedFeatureException("config.json " + where + " truncate false: transformers then blends "
                    + "frequencies over an unrounded range, which the converter does not write (llama.cpp rounds it)");
        }
        Double ext = checked(rope, where, "extrapolation_factor", EXTRAPOLATION, a);
        Double fast = checked(rope, where, "beta_fast", BETA_FAST, a);
        Double slow = checked(rope, where, "beta_slow", BETA_SLOW, a);

        kv.put(a + ".rope.scaling.type", MetaValue.str("yarn"));
        kv.put(a + ".rope.scaling.factor", MetaValue.Real.f32((float) factor));
        kv.put(a + ".rope.scaling.original_context_length", MetaValue.u32(old));
        if (ext != null) kv.put(a + ".rope.scaling.yarn_ext_factor", MetaValue.Real.f32(ext.floatValue()));
        if (attn != null) kv.put(a + ".rope.scaling.yarn_attn_factor", MetaValue.Real.f32((float) number(attn, where, (String) attnKey)));
        if (fast != null) kv.put(a + ".rope.scaling.yarn_beta_fast", MetaValue.Real.f32(fast.floatValue()));
        if (slow != null) kv.put(a + ".rope.scaling.yarn_beta_slow", MetaValue.Real.f32(slow.floatValue()));
    }

    /**
     * What a conversion says of a {@code truncate} false it converts
     * ({@link #ROUNDED_BY_LLAMA_CPP}), or empty when the rope parameters do not declare it.
     */
    static java.util.Optional<String> untruncatedNote(String a, Map<?, ?> rope) {
        if (!ROUNDED_BY_LLAMA_CPP.contains(a) || !isYarn(rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type"))
                || !Boolean.FALSE.equals(rope.get("truncate"))) {
            return java.util.Optional.empty();
        }
        return java.util.Optional.of("yarn rope scaling with truncate false: transformers blends the frequencies over an "
                + "unrounded correction range, llama.cpp's " + a + " over the rounded one (it has no key for it); the file is "
                + "the converter's, and runs as llama.cpp runs every " + a + " model");
    }

    /** An optional yarn parameter the converter writes and llama.cpp does not read: only llama.cpp's own value is taken. */
    private static Double checked(Map<?, ?> rope, String where, String key, double llamaCpp, String a) {
        if (!present(rope, key)) return null;
        double v = number(rope.get(key), where, key);
        if (v != llamaCpp) {
            throw new UnsupportedFeatureException("config.json " + where + " " + key + " " + rope.get(key) + " is not "
                    + (float) llamaCpp + ", the value llama.cpp runs " + a + " with (it does not read the key the converter "
                    + "writes); the file would not run as the model does");
        }
        return v;
    }

    /** Present as the converter's {@code .get(key) is not None} sees it. */
    private static boolean present(Map<?, ?> rope, String key) {
        Object v = rope.get(key);
        return v != null && v != io.anamnesis.api.json.Json.NULL;
    }

    private static double number(Object v, String where, String key) {
        double x = HfConfig.number(v).orElseThrow(() -> malformed(where, key, "is not a number: " + v));
        if (Double.isNaN(x) || Double.isInfinite(x)) throw malformed(where, key, v + " is not a finite number");
        return x;
    }

    private static MalformedFileException malformed(String where, String key, String why) {
        return new MalformedFileException("config.json " + where + " " + key + " " + why);
    }
}
