package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/** The bnb dequantizer's claim and recover path on fuzzed bitsandbytes (NF4/FP4 with absmax, quant_map, double quant and a JSON quant_state; LLM.int8 with SCB) groups. */
class BnbRecoverFuzzTarget {
    @FuzzTest(maxDuration = "4s")
    void recover(FuzzedDataProvider in) {
        RecoverFuzzTargets.bnb(in);
    }
}
