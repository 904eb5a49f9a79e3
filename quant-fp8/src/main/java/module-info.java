/**
 * FP8 (E4M3, E5M2, E4M3FNUZ, E5M2FNUZ) recovery with per-tensor, per-channel and 128x128 block
 * scales; quantization to all four (E4M3FNUZ also as vLLM's ROCm path makes it from E4M3).
 *
 * <p><b>Add it for</b>: recovering FP8 checkpoints (DeepSeek, Qwen, Llama FP8 releases, AMD's
 * FNUZ variants) to BF16, F16 or F32, and quantizing a model to FP8 ({@code amn forget --to fp8},
 * {@code fp8_e4m3fnuz} for ROCm).
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code fp8}: a weight with {@code weight_scale} or {@code weight_scale_inv}
 * @provides io.anamnesis.api.spi.Quantizer {@code fp8}: {@code fp8} (E4M3), {@code fp8_e5m2}, {@code fp8_e4m3fnuz},
 *     {@code fp8_e5m2fnuz} and {@code fp8_e4m3fnuz_vllm}
 */
// the digits name the format (FP8), as the module names of every scheme do
@SuppressWarnings("module")
module io.anamnesis.quant.fp8 {
    requires transitive io.anamnesis.api;
    // Optional: the vectorized kernels run only when the platform resolves this module.
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.fp8;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.fp8.Fp8Dequantizer;
    provides io.anamnesis.api.spi.Quantizer with io.anamnesis.quant.fp8.Fp8Quantizer;
}
