/** AWQ (AutoAWQ GEMM) recovery. */
module io.anamnesis.quant.awq {
    requires transitive io.anamnesis.api;
    requires static jdk.incubator.vector;

    exports io.anamnesis.quant.awq;

    provides io.anamnesis.api.spi.Dequantizer with io.anamnesis.quant.awq.AwqDequantizer;
}
