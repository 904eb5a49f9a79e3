package io.anamnesis.api.spi;

import io.anamnesis.api.MetaValue;

import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * A model laid out by a {@link ModelExporter}, planned and not yet produced.
 *
 * @param tensors    the output tensors, in output order, with their output names
 * @param keyValues  the typed key/values, in output order
 * @param outputType the output type it was made at ({@code auto} resolved: {@code bf16}, ...)
 * @param notes      what the layout left out or changed that a user should hear of (a
 *                   multimodal model's vision tensors left out of a text model, say), one
 *                   sentence each
 * @param notRecovered the names of tensors the request offered recovered ({@link DenseTensor#recoveredFrom})
 *                   that the layout did not take recovered: written from their stored, quantized
 *                   form instead (gpt-oss's MXFP4 experts, which GGUF stores as they are) or left
 *                   out (a vision tower, DeepSeek's multi-token-prediction layers); not counted as
 *                   recovered
 */
public record ExportedModel(List<PlannedTensor> tensors, Map<String, MetaValue> keyValues, String outputType,
                            List<String> notes, Set<String> notRecovered) {
    public ExportedModel {
        tensors = List.copyOf(tensors);
        keyValues = java.util.Collections.unmodifiableMap(new java.util.LinkedHashMap<>(keyValues));
        notes = List.copyOf(notes);
        notRecovered = Set.copyOf(notRecovered);
    }

    /** A model laid out with notes, every tensor offered recovered taken recovered. */
    public ExportedModel(List<PlannedTensor> tensors, Map<String, MetaValue> keyValues, String outputType, List<String> notes) {
        this(tensors, keyValues, outputType, notes, Set.of());
    }

    /** A model laid out with nothing to note. */
    public ExportedModel(List<PlannedTensor> tensors, Map<String, MetaValue> keyValues, String outputType) {
        this(tensors, keyValues, outputType, List.of());
    }
}
