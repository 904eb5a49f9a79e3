/**
 * GPTQ recovery (2/3/4/8-bit, act-order, v1 and v2 zeros).
 *
 * <p><b>Add it for</b>: recovering checkpoints of AutoGPTQ, GPTQModel and optimum
 * ({@code quant_method: gptq}).
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code gptq}: {@code qweight + qzeros + scales [+ g_idx] -> weight}
 */
module io.anamnesis.quant.gptq {
    requires transitive io.anamnesis.api;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.gptq;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.gptq.GptqDequantizer;
}
