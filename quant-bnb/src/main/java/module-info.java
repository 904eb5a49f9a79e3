/** bitsandbytes recovery and quantization: NF4, FP4 (with double quantization) and LLM.int8(). */
module io.anamnesis.quant.bnb {
    requires transitive io.anamnesis.api;
    requires com.fasterxml.jackson.core;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.bnb;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.bnb.BnbDequantizer;
    provides io.anamnesis.api.spi.Quantizer with io.anamnesis.quant.bnb.BnbQuantizer;
}
