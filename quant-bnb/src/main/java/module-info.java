/**
 * bitsandbytes recovery and quantization: NF4, FP4 (with double quantization) and LLM.int8().
 *
 * <p><b>Add it for</b>: recovering checkpoints saved by transformers with bitsandbytes
 * ({@code load_in_4bit}, {@code load_in_8bit}), and quantizing a model to them
 * ({@code amn forget --to nf4}).
 *
 * @provides io.anamnesis.api.spi.Dequantizer {@code bnb}: 4-bit with its quant-state, and int8 with {@code SCB}
 * @provides io.anamnesis.api.spi.Quantizer {@code bnb}: {@code nf4}, {@code fp4}, {@code int8}
 */
module io.anamnesis.quant.bnb {
    requires transitive io.anamnesis.api;
    requires com.fasterxml.jackson.core;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.bnb;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.bnb.BnbDequantizer;
    provides io.anamnesis.api.spi.Quantizer with io.anamnesis.quant.bnb.BnbQuantizer;
}
