package io.anamnesis.api.spi;

import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.TensorArchive;

import java.util.List;

/**
 * What a {@link Quantizer} plans from.
 *
 * @param target  the name asked for, one of {@link Quantizer#targets()}
 * @param tensors every tensor of the model, dense, in input order
 * @param source  the archive they come from (its metadata: architecture, configs)
 * @param options settings, importance matrix, {@code --pure}
 * @param loss    where producers report the error they introduce, per chunk
 */
public record ForgetRequest(String target, List<DenseTensor> tensors, TensorArchive source, ForgetOptions options,
                            LossMeter loss) {
    public ForgetRequest {
        tensors = List.copyOf(tensors);
    }
}
