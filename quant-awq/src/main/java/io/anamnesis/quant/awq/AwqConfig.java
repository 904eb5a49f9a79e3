package io.anamnesis.quant.awq;

import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.ClaimContext;

import java.util.Optional;

/**
 * Where an AWQ checkpoint keeps its quantization config, and which method a config names.
 *
 * <p>The search order is fixed and the first source found wins: the file's metadata
 * ({@code quantization_config}, {@code quant_config}), {@code config.json}'s
 * {@code quantization_config}, then {@code quant_config.json} (AutoAWQ) beside the file.
 *
 * <p>GPTQ and AWQ store tensors under the same names, so the config decides first, and the
 * GPTQ module names a config's method by the same rules ({@code GptqConfig}): a declared
 * {@code quant_method}; without one, the keys only AutoAWQ writes mean AWQ and the keys only
 * AutoGPTQ and GPTQModel write mean GPTQ; otherwise AutoAWQ's own file means AWQ.
 *
 * @param config the config found
 * @param method "awq", another method's name, or "" when the config does not say
 */
record AwqConfig(QuantizationConfig config, String method) {
    static final String AWQ = "awq";

    /** The first config found, in the fixed search order. */
    static Optional<AwqConfig> find(ClaimContext context) {
        Optional<QuantizationConfig> shared = QuantizationConfig.find(context);
        if (shared.isPresent()) return Optional.of(named(shared.get(), ""));
        return QuantizationConfig.sidecar(context, "quant_config.json").map(c -> named(c, AWQ));
    }

    private static AwqConfig named(QuantizationConfig c, String bySource) {
        if (c.quantMethod().isPresent()) return new AwqConfig(c, c.quantMethod().get());
        if (c.hasAny("w_bit", "q_group_size", "version")) return new AwqConfig(c, AWQ);
        boolean gptqKeys = c.hasAny("desc_act", "checkpoint_format", "damp_percent", "static_groups", "true_sequential");
        return new AwqConfig(c, gptqKeys ? "gptq" : bySource);
    }
}
