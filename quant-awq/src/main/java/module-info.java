/**
 * AWQ (AutoAWQ GEMM) recovery.
 *
 * <p><b>Add it for</b>: recovering checkpoints quantized by AutoAWQ or llm-awq
 * ({@code quant_method: awq}) to BF16, F16 or F32.
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code awq}: {@code qweight + qzeros + scales -> weight}
 */
module io.anamnesis.quant.awq {
    requires transitive io.anamnesis.api;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.awq;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.awq.AwqDequantizer;
}
