package io.anamnesis.corpus;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

/**
 * The GGUF reader's open, which is the GGUF header parser (magic, version, counts, typed
 * key/values, tensor infos, alignment), then the whole library route: every block type is
 * recovered by quant-gguf from what the header declared.
 */
class GgufOpenFuzzTarget {
    static Stream<byte[]> seeds() {
        return Stream.concat(Stream.of(SeedFiles.gguf(), CraftedFiles.manyGguf(3), CraftedFiles.nestedGguf(4)),
                Fuzzing.corpusSeeds(16 << 10, "gguf"));
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void open(byte[] input) {
        Fuzzing.open("gguf", "model.gguf", input);
    }
}
