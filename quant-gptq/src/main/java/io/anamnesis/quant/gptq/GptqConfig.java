package io.anamnesis.quant.gptq;

import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.spi.ClaimContext;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Optional;

/**
 * Where a GPTQ checkpoint keeps its quantization config, and which method a config names.
 *
 * <p>The search order is fixed and the first source found wins: the file's metadata
 * ({@code quantization_config}, {@code quant_config}), AutoGPTQ's flat {@code gptq_*}
 * metadata keys, {@code config.json}'s {@code quantization_config}, then
 * {@code quantize_config.json} (AutoGPTQ, GPTQModel) beside the file.
 *
 * <p>GPTQ and AWQ store tensors under the same names, so the config decides first, and the
 * AWQ module names a config's method by the same rules ({@code AwqConfig}): a declared
 * {@code quant_method}; without one, the keys only AutoAWQ writes mean AWQ and the keys only
 * AutoGPTQ and GPTQModel write mean GPTQ; otherwise a GPTQ tool's own source (the flat keys,
 * {@code quantize_config.json}) means GPTQ.
 *
 * @param config the config found
 * @param method "gptq", another method's name, or "" when the config does not say
 */
record GptqConfig(QuantizationConfig config, String method) {
    static final String GPTQ = "gptq";

    /** The first config found, in the fixed search order. */
    static Optional<GptqConfig> find(ClaimContext context) {
        Optional<QuantizationConfig> inMetadata = QuantizationConfig.inMetadata(context);
        if (inMetadata.isPresent()) return Optional.of(named(inMetadata.get(), ""));
        Map<String, Object> flat = new LinkedHashMap<>();
        for (var e : context.archive().metadata().entrySet()) {
            if (e.getKey().startsWith("gptq_")) flat.put(e.getKey().substring(5), e.getValue());
        }
        if (!flat.isEmpty()) return Optional.of(named(QuantizationConfig.of(flat, "__metadata__ gptq_* keys"), GPTQ));
        Optional<QuantizationConfig> inConfigJson = QuantizationConfig.inConfigJson(context);
        if (inConfigJson.isPresent()) return Optional.of(named(inConfigJson.get(), ""));
        return QuantizationConfig.sidecar(context, "quantize_config.json").map(c -> named(c, GPTQ));
    }

    private static GptqConfig named(QuantizationConfig c, String bySource) {
        return new GptqConfig(c, c.quantMethod().orElse(c.hasAny("w_bit", "q_group_size", "version") ? "awq"
                : c.hasAny("desc_act", "checkpoint_format", "damp_percent", "static_groups", "true_sequential") ? GPTQ
                : bySource));
    }
}
