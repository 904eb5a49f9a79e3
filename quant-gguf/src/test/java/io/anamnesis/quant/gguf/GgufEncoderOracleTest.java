package io.anamnesis.quant.gguf;

import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every encoder against ggml itself: each oracle vector ({@code <type>[+imatrix]/<matrix>})
 * is what ggml's {@code ggml_quantize_chunk} wrote for that input, and the encoder must
 * give the same bytes, on the scalar and the Vector API path; the rows also go through in two calls (first row, then the rest) at
 * nonzero offsets, which must not change a byte. Types another change adds are skipped.
 */
class GgufEncoderOracleTest {

    @TestFactory
    Stream<DynamicTest> everyOracleVector() {
        List<DynamicTest> tests = new ArrayList<>();
        for (String key : OracleVectors.keys()) {
            if (key.startsWith("input/") || key.startsWith("shape/") || key.startsWith("imatrix/")) continue;
            tests.add(DynamicTest.dynamicTest(key, () -> check(key, false)));
            tests.add(DynamicTest.dynamicTest(key + " (vector)", () -> check(key, true)));
        }
        assertThat(tests).hasSize(2 * 92);
        return tests.stream();
    }

    private static void check(String key, boolean vector) {
        Assumptions.assumeTrue(!vector || GgufEncoders.VECTOR, "Vector API not available on this JVM/CPU");
        String[] parts = key.split("/");
        boolean withImatrix = parts[0].endsWith("+imatrix");
        String typeName = parts[0].replace("+imatrix", "");
        String matrix = parts[1];
        GgufBlockType type = GgufBlockType.byName(typeName.toUpperCase(Locale.ROOT)).orElseThrow();
        RowEncoder encoder = GgufEncoders.forType(type, vector).orElse(null);
        Assumptions.assumeTrue(encoder != null, () -> typeName + " has no encoder yet");
        float[] x = OracleVectors.floats("input/" + matrix);
        int[] shape = OracleVectors.shape(matrix);
        float[] importance = withImatrix ? OracleVectors.floats("imatrix/" + matrix) : null;
        byte[] expected = OracleVectors.bytes(key);

        byte[] actual = new byte[expected.length];
        encoder.encode(x, 0, actual, 0, shape[0], shape[1], importance);
        assertSameBytes(key, actual, expected, type);

        // Split in two calls, at offsets: the encoder is a pure function of each row.
        int rowBytes = shape[1] / type.blockElements() * type.blockBytes();
        float[] shifted = new float[x.length + 3];
        System.arraycopy(x, 0, shifted, 3, x.length);
        byte[] split = new byte[expected.length + 5];
        encoder.encode(shifted, 3, split, 5, 1, shape[1], importance);
        encoder.encode(shifted, 3 + shape[1], split, 5 + rowBytes, shape[0] - 1, shape[1], importance);
        assertSameBytes(key + " (two calls)", Arrays.copyOfRange(split, 5, split.length), expected, type);
    }

    static void assertSameBytes(String what, byte[] actual, byte[] expected, GgufBlockType type) {
        assertThat(actual.length).as("%s length", what).isEqualTo(expected.length);
        int first = Arrays.mismatch(actual, expected);
        if (first >= 0) {
            int block = first / type.blockBytes();
            int from = block * type.blockBytes();
            int to = from + type.blockBytes();
            assertThat(Arrays.copyOfRange(actual, from, to)).as("%s: block %d differs first at byte %d of it",
                    what, block, first - from).isEqualTo(Arrays.copyOfRange(expected, from, to));
        }
    }
}
