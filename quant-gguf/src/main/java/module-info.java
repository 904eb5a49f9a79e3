/**
 * Every ggml block type (Q4_0 ... IQ1_M, TQ, MXFP4, NVFP4, Q1_0, Q2_0): recovery bit-exact with
 * ggml, and quantization to GGUF with llama-quantize's file types and type mix.
 *
 * <p><b>Add it for</b>: recovering quantized GGUF tensors to floats, and quantizing a model to
 * GGUF ({@code amn forget --to q4_k_m}); with {@code anamnesis-format-gguf}.
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code gguf}: every ggml block type
 * @provides io.anamnesis.api.spi.Quantizer {@code gguf}: llama-quantize's file types and {@code ggml:<type>}
 */
module io.anamnesis.quant.gguf {
    requires transitive io.anamnesis.api;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.gguf;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.gguf.GgufDequantizer;
    provides io.anamnesis.api.spi.Quantizer with io.anamnesis.quant.gguf.GgufQuantizer;
}
