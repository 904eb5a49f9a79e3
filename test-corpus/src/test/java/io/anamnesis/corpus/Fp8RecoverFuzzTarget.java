package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/** The fp8 dequantizer's claim and recover path on fuzzed FP8 (weight + weight_scale or weight_scale_inv, per-tensor, per-channel, block) groups. */
class Fp8RecoverFuzzTarget {
    @FuzzTest(maxDuration = "4s")
    void recover(FuzzedDataProvider in) {
        RecoverFuzzTargets.fp8(in);
    }
}
