/** FP8 (E4M3, E5M2) recovery with per-tensor, per-channel and 128x128 block scales. */
module io.anamnesis.quant.fp8 {
    requires io.anamnesis.api;
    requires static jdk.incubator.vector;


    // exports and provides arrive with the implementation.
}
