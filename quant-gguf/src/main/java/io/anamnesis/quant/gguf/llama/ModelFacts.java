package io.anamnesis.quant.gguf.llama;

import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The few hyperparameters llama.cpp's type choice reads from a model ({@code llama_hparams}
 * and {@code llm_type} as {@code llama_model::load_hparams} fills them), taken from GGUF
 * key/values. A source without them (a safetensors file) has none: no architecture, no
 * experts, no heads, and as many layers as its {@code blk.N.} names show.
 *
 * @param architecture {@code general.architecture}, "" when absent
 * @param layers       {@code <arch>.block_count}: {@code n_layer}
 * @param experts      {@code <arch>.expert_count}: {@code n_expert} (0 for a dense model)
 * @param heads        {@code <arch>.attention.head_count} of layer 0
 * @param kvHeads      {@code <arch>.attention.head_count_kv} of layer 0 (default: {@code heads})
 */
public record ModelFacts(String architecture, int layers, int experts, long heads, long kvHeads) {

    /** Reads the facts from a model's metadata (GGUF key/values as plain values) and its tensor names. */
    public static ModelFacts of(Map<String, Object> metadata, Collection<String> tensorNames) {
        String arch = metadata.get("general.architecture") instanceof String s ? s : "";
        int layers = number(metadata.get(arch + ".block_count")).map(Long::intValue)
                .orElseGet(() -> layersNamed(tensorNames));
        int experts = number(metadata.get(arch + ".expert_count")).map(Long::intValue).orElse(0);
        long heads = number(metadata.get(arch + ".attention.head_count")).orElse(0L);
        long kvHeads = number(metadata.get(arch + ".attention.head_count_kv")).orElse(heads);
        return new ModelFacts(arch, layers, experts, heads, kvHeads);
    }

    /** A per-layer array counts by its first layer, as {@code n_head()} does. */
    private static Optional<Long> number(Object v) {
        if (v instanceof Number n) return Optional.of(n.longValue());
        if (v instanceof List<?> l && !l.isEmpty() && l.getFirst() instanceof Number n) return Optional.of(n.longValue());
        return Optional.empty();
    }

    private static int layersNamed(Collection<String> names) {
        int max = -1;
        for (String n : names) max = Math.max(max, LayerNames.layerOf(n));
        return max + 1;
    }

    /** {@code n_gqa()} of layer 0: query heads per key/value head (0 without kv heads). */
    public long gqa() {
        return kvHeads == 0 ? 0 : heads / kvHeads;
    }

    public boolean isFalcon() {
        return architecture.equals("falcon");
    }

    /**
     * {@code model.type == LLM_TYPE_70B}, as load_hparams decides it at ca01960e6a: 80-layer
     * llama (not 8 experts, grouped-query attention), deci, qwen2, qwen2vl and olmo; 68-layer jais2.
     */
    public boolean is70B() {
        return switch (architecture) {
            case "llama", "llama-embed" -> layers == 80 && experts != 8 && heads != kvHeads;
            case "deci", "qwen2", "qwen2vl", "olmo" -> layers == 80;
            case "jais2" -> layers == 68;
            default -> false;
        };
    }
}
