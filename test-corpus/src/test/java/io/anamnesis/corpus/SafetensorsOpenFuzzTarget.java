package io.anamnesis.corpus;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

/** The safetensors reader's open, then the whole library route over what it opened. */
class SafetensorsOpenFuzzTarget {
    static Stream<byte[]> seeds() {
        return Stream.concat(Stream.of(SeedFiles.plainSafetensors(), SeedFiles.fp8Safetensors(), CraftedFiles.manySafetensors(3)),
                Fuzzing.corpusSeeds(16 << 10, "safetensors"));
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void open(byte[] input) {
        Fuzzing.open("safetensors", "model.safetensors", input);
    }
}
