/** Recovery of every ggml block type (Q4_0 ... IQ1_M, TQ, MXFP4, NVFP4). */
module io.anamnesis.quant.gguf {
    requires io.anamnesis.api;
    requires static jdk.incubator.vector;


    // exports and provides arrive with the implementation.
}
