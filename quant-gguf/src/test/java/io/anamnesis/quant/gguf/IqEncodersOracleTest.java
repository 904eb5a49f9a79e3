package io.anamnesis.quant.gguf;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Arrays;
import java.util.Locale;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * Every i-quant encoder against bytes made by ggml's own {@code ggml_quantize_chunk}
 * (resources {@code iq-oracle/}, see the README there): six rows of 512 values, without and
 * with an importance matrix.
 */
class IqEncodersOracleTest {
    private static final String FOLDER = "iq-oracle/";

    record Input(int rows, int cols, float[] x, float[] importance) {
    }

    static byte[] resource(String name) {
        try (InputStream in = IqEncodersOracleTest.class.getResourceAsStream(FOLDER + name)) {
            if (in == null) throw new IllegalStateException("missing test resource " + FOLDER + name);
            return in.readAllBytes();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Input input() {
        ByteBuffer b = ByteBuffer.wrap(resource("input.bin")).order(ByteOrder.LITTLE_ENDIAN);
        int rows = b.getInt();
        int cols = b.getInt();
        float[] x = new float[rows * cols];
        float[] importance = new float[cols];
        b.asFloatBuffer().get(x).get(importance);
        return new Input(rows, cols, x, importance);
    }

    @ParameterizedTest
    @EnumSource(value = GgufBlockType.class, names = {"IQ1_S", "IQ1_M", "IQ2_XXS", "IQ2_XS", "IQ2_S",
            "IQ3_XXS", "IQ3_S", "IQ4_NL", "IQ4_XS"})
    void matchesGgmlByteForByte(GgufBlockType type) {
        Input in = input();
        byte[] expected = resource(type.name().toLowerCase(Locale.ROOT) + ".bin");
        int size = in.rows() * in.cols() / type.blockElements() * type.blockBytes();
        boolean plain = !GgufEncoders.requiresImportance(type);
        assertThat(expected).hasSize(plain ? 2 * size : size);
        int at = 0;
        if (plain) {
            compare(type, "no importance", Arrays.copyOfRange(expected, 0, size),
                    GgufEncoding.encode(type.name(), in.x(), in.rows(), in.cols(), null));
            at = size;
        }
        compare(type, "importance", Arrays.copyOfRange(expected, at, at + size),
                GgufEncoding.encode(type.name(), in.x(), in.rows(), in.cols(), in.importance()));
    }

    static void compare(GgufBlockType type, String what, byte[] expected, byte[] actual) {
        assertThat(actual).hasSize(expected.length);
        for (int i = 0; i < expected.length; i++) {
            if (expected[i] != actual[i]) {
                fail("%s with %s: byte %d (block %d, offset %d) is 0x%02x, ggml wrote 0x%02x", type, what, i,
                        i / type.blockBytes(), i % type.blockBytes(), actual[i] & 0xFF, expected[i] & 0xFF);
            }
        }
    }
}
