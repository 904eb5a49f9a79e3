/** bitsandbytes recovery: NF4, FP4 (with double quantization) and LLM.int8(). */
module io.anamnesis.quant.bnb {
    requires io.anamnesis.api;
    requires com.fasterxml.jackson.databind;
    requires static jdk.incubator.vector;


    // exports and provides arrive with the implementation.
}
