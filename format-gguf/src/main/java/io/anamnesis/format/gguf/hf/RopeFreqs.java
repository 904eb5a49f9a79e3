package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.PlannedTensor;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;

/**
 * Llama 3.1's rope scaling ({@code rope_type: llama3}) as the converter writes it
 * ({@code LlamaModel.generate_extra_tensors}): no key, but an extra F32 tensor
 * {@code rope_freqs.weight} of one factor per rotary pair, the first tensor of the file,
 * by which llama.cpp divides each rotary frequency.
 *
 * <p>The factors are computed as the converter computes them, in torch's float32: the
 * inverse frequency {@code 1 / base^(2i/dim)} (the exponent a float32 division, the power
 * rounded to float32), its wavelength {@code (1/freq) * float32(2 pi)} (Python's
 * {@code 2 * math.pi / freq} is torch's {@code freq.reciprocal() * 2pi}), compared in float32
 * with {@code old / high_freq_factor} and {@code old / low_freq_factor}: 1 below the first,
 * {@code factor} above the second, else {@code 1 / ((1 - smooth) / factor + smooth)} with
 * {@code smooth = ((1/wavelen) * old - low) / (high - low)}, every step a float32 operation
 * on float32-rounded Python numbers. The one step that is not exact IEEE arithmetic is the
 * power: it is rounded correctly here, where torch's vectorized {@code pow} (SLEEF, within
 * 1 ulp) is not always; for the configurations of Llama 3.1, 3.2 and 3.3 the inverse
 * frequencies and the factors are torch's bit for bit (docs/hf-to-gguf.md says how that was
 * checked and how often other head sizes and bases differ).
 */
final class RopeFreqs {
    /** gguf-py's {@code MODEL_TENSOR.ROPE_FREQS} name. */
    static final String NAME = "rope_freqs.weight";
    /** The converter's defaults for a llama3 rope scaling without them. */
    static final double DEFAULT_FACTOR = 8.0, DEFAULT_LOW = 1.0, DEFAULT_HIGH = 4.0, DEFAULT_BASE = 10000.0;
    static final long DEFAULT_OLD_CONTEXT = 8192;

    private RopeFreqs() {
    }

    /** Whether {@code type} (config.json's {@code rope_type}, else {@code type}) is llama3, as the converter compares it. */
    static boolean isLlama3(Object type) {
        return type instanceof String s && s.toLowerCase(Locale.ROOT).equals("llama3");
    }

    /**
     * The {@code rope_freqs.weight} tensor of a llama3 rope scaling, when {@code rope} (the
     * rope parameters) says llama3.
     *
     * @param config the whole config.json ({@code original_max_position_embeddings} and the
     *               head size are read from its top level, as the converter reads them)
     * @param rope   {@code rope_parameters}/{@code rope_scaling}
     * @param base   the rope theta the converter uses, if any
     */
    static Optional<PlannedTensor> llama3(Map<?, ?> config, Map<?, ?> rope, Optional<Double> base) {
        Object type = rope.get("rope_type") != null ? rope.get("rope_type") : rope.get("type");
        if (!isLlama3(type)) return Optional.empty();
        String where = config.containsKey("rope_parameters") ? "rope_parameters" : "rope_scaling";
        double factor = positive(rope, where, "factor", DEFAULT_FACTOR);
        double low = positive(rope, where, "low_freq_factor", DEFAULT_LOW);
        double high = positive(rope, where, "high_freq_factor", DEFAULT_HIGH);
        long old = oldContext(config, rope, where);
        double theta = base.orElse(DEFAULT_BASE);
        if (!(theta > 0) || Double.isInfinite(theta)) throw HfGgufExporter.badKey("rope_theta", theta + " is not a positive number");
        long dim = headDim(config);
        return Optional.of(constant(NAME, factors(theta, dim, factor, low, high, old)));
    }

    /**
     * The converter's factors for rotary dimension {@code dim}: {@code ceil(dim / 2)} of
     * them ({@code torch.arange(0, dim, 2)}), in the arithmetic the class comment describes.
     */
    static float[] factors(double base, long dim, double factor, double lowFreqFactor, double highFreqFactor, long oldContext) {
        if (dim <= 0 || dim > (1 << 24)) throw new IllegalArgumentException("rotary dimension " + dim);
        float b = (float) base;
        float d = (float) dim;
        float twoPi = (float) (2 * Math.PI);
        // Python floats (doubles), each met by a float32 tensor and so rounded to float32
        float lowWavelen = (float) (oldContext / lowFreqFactor);
        float highWavelen = (float) (oldContext / highFreqFactor);
        float old = (float) oldContext;
        float low = (float) lowFreqFactor;
        float span = (float) (highFreqFactor - lowFreqFactor);
        float f = (float) factor;
        float[] out = new float[(int) ((dim + 1) / 2)];
        for (int k = 0; k < out.length; k++) {
            float exponent = (float) (2 * k) / d;
            float freq = 1f / (float) StrictMath.pow(b, exponent);
            float wavelen = (1f / freq) * twoPi;
            if (wavelen < highWavelen) {
                out[k] = 1f;
            } else if (wavelen > lowWavelen) {
                out[k] = f;
            } else {
                float smooth = ((1f / wavelen) * old - low) / span;
                out[k] = 1f / ((1f - smooth) / f + smooth);
            }
        }
        return out;
    }

    /**
     * {@code original_max_position_embeddings} as the converter takes it: config.json's top
     * level, else 8192 (it does not look in the rope parameters). Transformers takes the top
     * level too, else the rope parameters' value (else {@code max_position_embeddings}); a
     * config where the two disagree would be written with factors the model was not trained
     * with, and is refused.
     */
    private static long oldContext(Map<?, ?> config, Map<?, ?> rope, String where) {
        String key = "original_max_position_embeddings";
        if (config.containsKey(key)) {
            long old = HfConfig.asInteger(config.get(key)).orElseThrow(() ->
                    HfGgufExporter.badKey(key, "is not an integer: " + config.get(key)));
            if (old <= 0) throw HfGgufExporter.badKey(key, old + " is not positive");
            return old;
        }
        Object inRope = rope.containsKey(key) ? rope.get(key) : config.get("max_position_embeddings");
        String from = rope.containsKey(key) ? where + " " + key : "max_position_embeddings";
        Optional<Long> trained = HfConfig.asInteger(inRope);
        if (trained.isEmpty() || trained.get() != DEFAULT_OLD_CONTEXT) {
            throw new UnsupportedFeatureException("config.json llama3 rope scaling: " + from + " is " + inRope
                    + ", but the converter computes the rope factors with " + key + " " + DEFAULT_OLD_CONTEXT
                    + " (it reads only a top-level " + key + "); the file would not run as the model does. "
                    + "A top-level " + key + " is what both take");
        }
        return DEFAULT_OLD_CONTEXT;
    }

    /** {@code head_dim}, else {@code hidden_size // num_attention_heads}, as the converter's llama3 code takes it. */
    private static long headDim(Map<?, ?> config) {
        Optional<Long> h = HfConfig.integer(config, "head_dim");
        long dim;
        if (h.isPresent()) {
            dim = h.get();
        } else {
            long hidden = HfConfig.integer(config, "hidden_size").orElseThrow(() -> HfGgufExporter.badKey("hidden_size", "is missing"));
            long heads = HfConfig.integer(config, "num_attention_heads")
                    .orElseThrow(() -> HfGgufExporter.badKey("num_attention_heads", "is missing"));
            if (heads <= 0) throw HfGgufExporter.badKey("num_attention_heads", heads + " is not positive");
            dim = Math.floorDiv(hidden, heads);
        }
        if (dim <= 0 || dim > (1 << 24)) {
            throw HfGgufExporter.badKey(h.isPresent() ? "head_dim" : "hidden_size", "gives a head size of " + dim
                    + ", which has no rope factors");
        }
        return dim;
    }

    /** A rope parameter that must be a positive finite number; the converter's default when absent. */
    private static double positive(Map<?, ?> rope, String where, String key, double fallback) {
        if (!rope.containsKey(key)) return fallback;
        Object v = rope.get(key);
        double x = HfConfig.number(v).orElseThrow(() -> new MalformedFileException("config.json " + where + " " + key
                + " is not a number: " + v));
        if (!(x > 0) || Double.isInfinite(x)) {
            throw new MalformedFileException("config.json " + where + " " + key + " " + v + " is not a positive number");
        }
        return x;
    }

    /** A 1-D F32 tensor of {@code values}, as a generated tensor of the converter is written. */
    static PlannedTensor constant(String name, float[] values) {
        byte[] b = new byte[4 * values.length];
        MemorySegment.copy(values, 0, MemorySegment.ofArray(b), LittleEndian.F32, 0, values.length);
        return new PlannedTensor(name, DType.F32, Shape.of(values.length), values.length, arena -> (first, count, dest) ->
                MemorySegment.copy(b, (int) (4 * first), dest, ValueLayout.JAVA_BYTE, 0, (int) (4 * count)));
    }
}
