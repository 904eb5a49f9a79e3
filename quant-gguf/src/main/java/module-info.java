/** Recovery of every ggml block type (Q4_0 ... IQ1_M, TQ, MXFP4, NVFP4, Q1_0, Q2_0), bit-exact with ggml. */
module io.anamnesis.quant.gguf {
    requires transitive io.anamnesis.api;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.gguf;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.gguf.GgufDequantizer;
}
