package io.anamnesis.api.spi;

import java.util.Locale;
import java.util.Optional;

/**
 * The default policy of the schemes that quantize a Hugging Face checkpoint layer by layer
 * (bitsandbytes, FP8): the weights of linear layers are quantized, everything else stays as
 * it is. That is what transformers does when it loads such a model: it swaps {@code nn.Linear}
 * modules for quantized ones, leaves embeddings, norms and biases alone, and keeps the output
 * projection ({@code lm_head}) in full precision.
 *
 * <p>A file does not say which module a tensor belongs to, so the names and shapes decide: a
 * linear layer's weight is a 2-D floating-point {@code *.weight}; embeddings are recognized by
 * the names the common architectures use.
 */
public final class LinearWeights {
    private LinearWeights() {
    }

    /** Why {@code tensor} stays as it is under this policy, or empty when it is a linear layer's weight. */
    public static Optional<String> whyKept(DenseTensor tensor) {
        if (tensor.keep()) return Optional.of("--keep");
        if (!tensor.isNumeric()) return Optional.of("not floating point");
        String name = tensor.name();
        if (name.endsWith(".bias") || name.equals("bias")) return Optional.of("biases stay");
        if (!name.endsWith(".weight")) return Optional.of("not a layer weight");
        int rank = tensor.shape().rank();
        if (rank < 2) return Optional.of("norms and other vectors stay");
        if (rank > 2) return Optional.of("not a matrix (rank " + rank + ")");
        if (isEmbedding(name)) return Optional.of("embeddings stay");
        if (isOutputHead(name)) return Optional.of("lm_head stays");
        return Optional.empty();
    }

    /** The module a weight belongs to: its name without {@code .weight}. */
    public static String module(String weightName) {
        return weightName.endsWith(".weight") ? weightName.substring(0, weightName.length() - ".weight".length()) : weightName;
    }

    /** Token and position embeddings: {@code embed_tokens}, {@code wte}, {@code word_embeddings}, ... */
    static boolean isEmbedding(String name) {
        String n = name.toLowerCase(Locale.ROOT);
        if (n.contains("embed")) return true;
        for (String part : n.split("\\.")) {
            switch (part) {
                case "wte", "wpe", "shared" -> {
                    return true;
                }
                default -> {
                }
            }
        }
        return false;
    }

    /** The output projection: {@code lm_head.weight} (at any prefix) or GGUF's {@code output.weight}. */
    static boolean isOutputHead(String name) {
        return name.equals("lm_head.weight") || name.endsWith(".lm_head.weight") || name.equals("output.weight");
    }
}
