package io.anamnesis.corpus;

import com.code_intelligence.jazzer.junit.FuzzTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.stream.Stream;

/** The npz/npy reader's open (ZIP directory, NPY header dict, DEFLATE members), then the library route. */
class NpzOpenFuzzTarget {
    static Stream<byte[]> seeds() {
        return Stream.concat(Stream.of(SeedFiles.npz(), SeedFiles.npy("<f4", "(3, 4)", 48), SeedFiles.npy(">f8", "(2,)", 16),
                CraftedFiles.manyNpz(3)),
                Fuzzing.corpusSeeds(16 << 10, "npz", "npy"));
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void open(byte[] input) {
        // a zip opens as .npz, anything else as .npy: the reader takes both
        boolean zip = input.length > 1 && input[0] == 'P' && input[1] == 'K';
        Fuzzing.open("npz", zip ? "arrays.npz" : "array.npy", input);
    }
}
