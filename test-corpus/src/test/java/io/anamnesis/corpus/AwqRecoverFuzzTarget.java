package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/** The awq dequantizer's claim and recover path on fuzzed AWQ (qweight, qzeros, scales; GEMM packing) groups. */
class AwqRecoverFuzzTarget {
    @FuzzTest(maxDuration = "4s")
    void recover(FuzzedDataProvider in) {
        RecoverFuzzTargets.awq(in);
    }
}
