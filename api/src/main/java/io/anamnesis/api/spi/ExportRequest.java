package io.anamnesis.api.spi;

import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;

import java.util.List;

/**
 * What a {@link ModelExporter} lays out.
 *
 * @param source     the model as opened (its companion files: {@code config.json}, the tokenizer)
 * @param tensors    every tensor of the model as dense values, recovered where it was
 *                   quantized, in the source's order, with the source's names
 * @param outputType one of {@link ModelExporter#outputTypes()}
 * @param vocabulary whether to write the vocabulary ({@code false}: {@code --no-vocab})
 * @param encoder    encodes a tensor as a quantizer's target with the installed quantizers
 * @param limits     bounds for the companion files read
 */
public record ExportRequest(TensorArchive source, List<DenseTensor> tensors, String outputType, boolean vocabulary,
                            Encoder encoder, ParseLimits limits) {
    public ExportRequest {
        tensors = List.copyOf(tensors);
    }

    /** Encodes one dense tensor as a quantizer's target ({@code ggml:q8_0}). */
    @FunctionalInterface
    public interface Encoder {
        /**
         * @return the encoded tensor, named as {@code tensor}
         * @throws io.anamnesis.api.UnsupportedFeatureException when no installed quantizer encodes the target
         */
        PlannedTensor encode(DenseTensor tensor, String target);
    }
}
