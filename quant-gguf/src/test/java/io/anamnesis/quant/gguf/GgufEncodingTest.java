package io.anamnesis.quant.gguf;

import io.anamnesis.api.UnsupportedFeatureException;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The public entry point's contract: names, sizes and refusals. */
class GgufEncodingTest {

    @Test
    void typeNamesAreCaseInsensitiveAndSizeTheOutput() {
        float[] x = new float[2 * 64];
        assertThat(GgufEncoding.encode("Q8_0", x, 2, 64, null)).hasSize(2 * 2 * 34);
        assertThat(GgufEncoding.encode("q8_0", x, 2, 64, null)).hasSize(2 * 2 * 34);
        assertThat(GgufEncoding.encode("bf16", x, 2, 64, null)).hasSize(2 * 64 * 2);
        assertThat(GgufEncoding.encode("q8_0", new float[0], 0, 64, null)).isEmpty();
    }

    @Test
    void unknownTypesAreUnsupportedAndListWhatIsEncodable() {
        assertThatThrownBy(() -> GgufEncoding.encode("q9_9", new float[32], 1, 32, null))
                .isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("q9_9").hasMessageContaining("q8_0");
    }

    @Test
    void badShapesAreProgrammingErrors() {
        assertThatThrownBy(() -> GgufEncoding.encode("q8_0", new float[48], 1, 48, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("block of 32");
        assertThatThrownBy(() -> GgufEncoding.encode("q8_0", new float[32], 2, 32, null))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("32 values given for 2 rows");
        assertThatThrownBy(() -> GgufEncoding.encode("q4_0", new float[64], 2, 32, new float[31]))
                .isInstanceOf(IllegalArgumentException.class).hasMessageContaining("importance has 31");
    }
}
