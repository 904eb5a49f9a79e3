package io.anamnesis.corpus;

import com.code_intelligence.jazzer.api.FuzzedDataProvider;
import com.code_intelligence.jazzer.junit.FuzzTest;

/**
 * Every test-corpus target behind one: the first choice the fuzzer makes picks the target,
 * the rest of the input is that target's. The build fuzzes this one (and format-pth's
 * pickle VM) rather than each target in a JVM of its own: Jazzer fuzzes one target per JVM,
 * and its start-up (instrumenting every class loaded) costs several times the few seconds
 * of fuzzing. Campaigns fuzz the targets one by one (docs/robustness.md).
 */
class AllFuzzTarget {
    @FuzzTest(maxDuration = "4s")
    void any(FuzzedDataProvider in) {
        switch (in.consumeInt(0, 10)) {
            case 0 -> new SafetensorsOpenFuzzTarget().open(in.consumeRemainingAsBytes());
            case 1 -> new SafetensorsHeaderFuzzTarget().read(in.consumeRemainingAsBytes());
            case 2 -> new GgufOpenFuzzTarget().open(in.consumeRemainingAsBytes());
            case 3 -> new GgufRecoverFuzzTarget().recover(in);
            case 4 -> new NpzOpenFuzzTarget().open(in.consumeRemainingAsBytes());
            case 5 -> new PthOpenFuzzTarget().open(in.consumeRemainingAsBytes());
            case 6 -> RecoverFuzzTargets.fp8(in);
            case 7 -> RecoverFuzzTargets.gptq(in);
            case 8 -> RecoverFuzzTargets.awq(in);
            case 9 -> RecoverFuzzTargets.bnb(in);
            default -> new TokenizerJsonFuzzTarget().export(in.consumeRemainingAsBytes());
        }
    }
}
