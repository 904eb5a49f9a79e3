package io.anamnesis.corpus;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

/**
 * The PyTorch reader's open: the zip directory or the legacy pickle sequence, the pickle VM
 * on {@code data.pkl}, storages and views, then the library route.
 */
class PthOpenFuzzTarget {
    static Stream<byte[]> seeds() {
        return Stream.concat(Stream.of(CraftedFiles.nestedPickle(8)), Fuzzing.corpusSeeds(16 << 10, "pth", "pt", "bin"));
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void open(byte[] input) {
        Fuzzing.open("pth", "model.pth", input);
    }
}
