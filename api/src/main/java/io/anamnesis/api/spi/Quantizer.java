package io.anamnesis.api.spi;

import io.anamnesis.api.TensorArchive;

import java.util.Optional;
import java.util.SequencedMap;

/**
 * Encodes dense tensors into one quantization family's stored tensors ("forget", Lethe):
 * the mirror of {@link Dequantizer}, found with {@link java.util.ServiceLoader}. Knows a
 * scheme's arithmetic and its policy (which tensors a target quantizes, and to what), never a
 * file format: it reads values through {@link DenseTensor} and returns planned tensors that a
 * {@link FormatWriter} of {@link #format()} writes.
 *
 * <p>Plans are made up front (every output's name, dtype and shape, and the typed metadata),
 * producers fill chunks in bounded memory, and the bytes are the same at any thread count:
 * each encoder is a pure function of the rows it is given.
 */
public interface Quantizer {

    /** Short lower-case family name: {@code gguf}, {@code bnb}, {@code fp8}. */
    String scheme();

    /** One line for {@code amn formats}. */
    String description();

    /** The format its output is written in: {@code gguf}, {@code safetensors}. */
    String format();

    /**
     * The names {@code amn forget --to} accepts, lower case, each with one line of help:
     * ggml types ({@code q4_k}), llama-quantize file types ({@code q4_k_m}), {@code nf4}, ...
     * Names are unique across installed quantizers.
     */
    SequencedMap<String, String> targets();

    /**
     * Decides what each tensor of the request becomes and plans the output: encoded tensors
     * (with their companions: scales, quant states), tensors left as they are, typed metadata.
     *
     * @throws io.anamnesis.api.AnamnesisException typed: a tensor that cannot take the target
     *         (unsupported), a setting out of range or an importance matrix that does not fit
     *         (malformed input names the tensor)
     */
    ForgetPlan plan(ForgetRequest request);

    /**
     * For {@code forget --like}: the target this quantizer uses to quantize a model the way
     * {@code reference} (a published checkpoint) is quantized, when the reference holds
     * tensors of this quantizer's family; empty otherwise (the default). {@link #plan} is then
     * asked for that target with the reference in {@link io.anamnesis.api.ForgetOptions#like()},
     * and takes from it which tensors are quantized and how (block size, double quantization,
     * scale dtype and layout), from its headers, companion tensors and config (and, where only
     * the values tell, some of them: FP8 E4M3FNUZ's scale convention shows only in its codes).
     *
     * <p>Added for the safetensors schemes (bitsandbytes, FP8), whose checkpoints say all of
     * that in their tensors; a quantizer that cannot read a recipe from a file keeps the default.
     *
     * @throws io.anamnesis.api.AnamnesisException typed, when the reference is of this family
     *         but malformed or uses a variant the quantizer cannot write
     */
    default Optional<String> imitates(TensorArchive reference) {
        return Optional.empty();
    }
}
