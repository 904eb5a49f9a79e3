/**
 * gpt-oss MXFP4 recovery: {@code *_blocks} (FP4 E2M1 pairs) and {@code *_scales} (E8M0 per
 * 32 values) to the tensors transformers loads (and gpt-oss's own {@code .blocks}/{@code .scales}).
 *
 * <p><b>Add it for</b>: recovering gpt-oss's MXFP4 expert weights.
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code mxfp4}
 */
module io.anamnesis.quant.mxfp4 {
    requires io.anamnesis.api;
    // Optional: the vector kernel runs only when the platform resolves this module.
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.mxfp4;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.mxfp4.Mxfp4Dequantizer;
}
