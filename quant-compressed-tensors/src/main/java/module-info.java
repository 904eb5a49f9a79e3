/**
 * compressed-tensors recovery (the checkpoint layout of llm-compressor and vLLM):
 * pack-quantized int4/int8, naive/int/float-quantized int8 and FP8, NVFP4, MXFP4 and MXFP8.
 *
 * <p><b>Add it for</b>: recovering checkpoints with {@code quant_method: compressed-tensors}
 * (W4A16, W8A16, W8A8, FP8, NVFP4 models of llm-compressor).
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code compressed-tensors}
 */
module io.anamnesis.quant.compressed.tensors {
    requires io.anamnesis.api;
    // Optional: the vector lookups run only when the platform resolves this module.
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.compressed.tensors;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.compressed.tensors.CompressedTensorsDequantizer;
}
