package io.anamnesis.api.spi;

import java.util.List;

/**
 * Recovers one quantization family (FP8, GPTQ, AWQ, bitsandbytes, GGUF blocks). Found with
 * {@link java.util.ServiceLoader}. Knows a scheme's tensors and arithmetic, never a file
 * format: it sees tensors only through {@link io.anamnesis.api.TensorArchive}, so it works
 * the same from any container.
 */
public interface Dequantizer {

    /** Short lower-case family name: {@code fp8}, {@code gptq}, {@code awq}, {@code bnb}, {@code gguf}. */
    String scheme();

    /** One line for {@code amn formats}. */
    String description();

    /**
     * Finds the tensor groups of this scheme. Looks at names, dtypes, shapes, metadata and
     * config files beside the input; may read small companion tensors (a quant-state blob),
     * never a quantized payload. Returns an empty list when the archive holds nothing of
     * this scheme.
     *
     * @throws io.anamnesis.api.AnamnesisException for a group that is recognizably this
     *         scheme but malformed (missing companion, shapes that disagree), naming the tensor
     */
    List<Recovery> claim(ClaimContext context);
}
