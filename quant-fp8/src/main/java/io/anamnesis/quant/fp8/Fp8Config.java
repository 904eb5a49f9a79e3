package io.anamnesis.quant.fp8;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.config.QuantizationConfig;
import io.anamnesis.api.json.Json;
import io.anamnesis.api.spi.ClaimContext;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The block size of fine-grained FP8 scales. Checkpoints declare it as
 * {@code quantization_config.weight_block_size} in {@code config.json} (block FP8 as
 * DeepSeek-V3 and Qwen3 ship it), sometimes copied into the safetensors
 * {@code __metadata__} as a JSON string; compressed-tensors spells it
 * {@code config_groups.<g>.weights.block_structure}. Absent a declaration, 128 x 128, the
 * size every published block-FP8 model uses.
 *
 * @param block  the block size
 * @param source where it came from, for messages
 */
record Fp8Config(ScaleLayout.Block block, String source) {
    static final ScaleLayout.Block DEFAULT = new ScaleLayout.Block(128, 128);

    /** The declared block size: archive metadata first, then {@code config.json} beside the file. */
    static Fp8Config find(ClaimContext context) {
        Optional<Fp8Config> declared = declared(QuantizationConfig.inMetadata(context));
        if (declared.isEmpty()) declared = declared(QuantizationConfig.inConfigJson(context));
        return declared.orElse(new Fp8Config(DEFAULT, "the default block size"));
    }

    private static Optional<Fp8Config> declared(Optional<QuantizationConfig> config) {
        return config.flatMap(c -> blockSize(c.values(), c.origin()).map(b -> new Fp8Config(b, c.origin())));
    }

    /** {@code weight_block_size}, or one {@code block_structure} shared by every config group. */
    static Optional<ScaleLayout.Block> blockSize(Object quantizationConfig, String source) {
        Optional<Object> declared = Json.member(quantizationConfig, "weight_block_size");
        if (declared.isPresent() && declared.get() != Json.NULL) {
            return Optional.of(pair(declared.get(), source + " weight_block_size"));
        }
        Optional<Object> groups = Json.member(quantizationConfig, "config_groups");
        Optional<ScaleLayout.Block> found = Optional.empty();
        if (groups.isPresent() && groups.get() instanceof Map<?, ?> m) {
            for (Object group : m.values()) {
                Optional<Object> structure = Json.member(group, "weights")
                        .flatMap(w -> Json.member(w, "block_structure"))
                        .filter(s -> s != Json.NULL);
                if (structure.isEmpty()) continue;
                ScaleLayout.Block b = pair(structure.get(), source + " block_structure");
                if (found.isPresent() && !found.get().equals(b)) {
                    throw new MalformedFileException(source + ": config groups declare different block sizes, "
                            + found.get().describe() + " and " + b.describe());
                }
                found = Optional.of(b);
            }
        }
        return found;
    }

    private static ScaleLayout.Block pair(Object value, String what) {
        if (value instanceof List<?> l && l.size() == 2 && l.get(0) instanceof Double r && l.get(1) instanceof Double c
                && r >= 1 && c >= 1 && r <= Integer.MAX_VALUE && c <= Integer.MAX_VALUE
                && r == Math.rint(r) && c == Math.rint(c)) {
            return new ScaleLayout.Block(r.longValue(), c.longValue());
        }
        throw new MalformedFileException(what + " must be two positive integers, not " + value);
    }
}
