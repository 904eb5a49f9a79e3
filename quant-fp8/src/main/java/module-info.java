/** FP8 (E4M3, E5M2, E4M3FNUZ, E5M2FNUZ) recovery with per-tensor, per-channel and 128x128 block scales; quantization to E4M3 and E5M2. */
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
