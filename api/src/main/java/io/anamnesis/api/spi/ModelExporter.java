package io.anamnesis.api.spi;

import io.anamnesis.api.TensorArchive;

import java.util.SequencedMap;

/**
 * Lays a model out the way another runtime loads it: a Hugging Face model folder as the
 * GGUF llama.cpp runs (tensor names, the row order its kernels want, hyper-parameter keys,
 * the vocabulary), as that ecosystem's own converter writes it. Found with
 * {@link java.util.ServiceLoader}; the module of the output format provides it, since that is
 * where the knowledge of the layout lives.
 *
 * <p>It maps tensors the api has already read, or recovered on the fly, as dense F32 values,
 * and returns planned tensors: nothing is read until the writer produces them, and memory
 * stays bounded by the chunks in flight. Output types it does not encode itself are asked of
 * the installed quantizers through {@link ExportRequest#encoder()}.
 */
public interface ModelExporter {

    /** The writer format it lays models out for: {@code gguf}. */
    String format();

    /** One line for {@code amn formats}. */
    String description();

    /**
     * Whether the source is a model this exporter lays out: cheap, from the source's
     * companion files (a Hugging Face {@code config.json}), never from tensor bytes.
     */
    boolean accepts(TensorArchive source);

    /**
     * The output types of the reference converter it reproduces, lower case, each with a
     * line of help ({@code f32}, {@code f16}, {@code bf16}, {@code q8_0}, {@code auto}).
     * Any other type (a quantizer's target) is the export at {@code auto}, then quantized.
     */
    SequencedMap<String, String> outputTypes();

    /**
     * Plans the exported model.
     *
     * @throws io.anamnesis.api.AnamnesisException typed: an architecture it does not know
     *         (unsupported, naming the ones it does), a config that disagrees with the
     *         tensors or a companion file that is missing or malformed (malformed, naming it)
     */
    ExportedModel export(ExportRequest request);
}
