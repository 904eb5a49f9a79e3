/**
 * Every ggml block type (Q4_0 ... IQ1_M, TQ, MXFP4, NVFP4, Q1_0, Q2_0): recovery bit-exact with
 * ggml, and quantization to GGUF with llama-quantize's file types and type mix.
 */
module io.anamnesis.quant.gguf {
    requires transitive io.anamnesis.api;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.gguf;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.gguf.GgufDequantizer;
    provides io.anamnesis.api.spi.Quantizer with io.anamnesis.quant.gguf.GgufQuantizer;
}
