/** AWQ (AutoAWQ GEMM) recovery. */
module io.anamnesis.quant.awq {
    requires io.anamnesis.api;
    requires com.fasterxml.jackson.databind;
    requires static jdk.incubator.vector;


    // exports and provides arrive with the implementation.
}
