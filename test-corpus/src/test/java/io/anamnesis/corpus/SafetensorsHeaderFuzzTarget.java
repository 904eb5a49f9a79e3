package io.anamnesis.corpus;

import com.code_intelligence.jazzer.junit.FuzzTest;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.format.safetensors.SafetensorsHeader;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.ByteArrayInputStream;
import java.util.stream.Stream;

/**
 * The safetensors header parser on a stream ({@code SafetensorsHeader.read(InputStream)},
 * what {@code amn inspect -} and a server reading an upload use): no file, no size to
 * check the declared length against.
 */
class SafetensorsHeaderFuzzTarget {
    static Stream<byte[]> seeds() {
        return SafetensorsOpenFuzzTarget.seeds();
    }

    @MethodSource("seeds")
    @FuzzTest(maxDuration = "4s")
    void read(byte[] input) {
        try {
            SafetensorsHeader h = SafetensorsHeader.read(new ByteArrayInputStream(input));
            h.tensors();
            h.metadata();
            h.dataBytes();
        } catch (AnamnesisException expected) {
            // typed
        }
    }
}
