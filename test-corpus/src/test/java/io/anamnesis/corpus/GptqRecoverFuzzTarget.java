package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/** The gptq dequantizer's claim and recover path on fuzzed GPTQ (qweight, qzeros, scales, g_idx; bits, group size, act order, v1/v2 zeros) groups. */
class GptqRecoverFuzzTarget {
    @FuzzTest(maxDuration = "4s")
    void recover(FuzzedDataProvider in) {
        RecoverFuzzTargets.gptq(in);
    }
}
