package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.quant.gguf.GgufIqEncoding;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * The {@code ggml-quantize} cases of the corpus straight through the encoder kernels, before
 * any quantizer SPI or CLI: tensor {@code weight} (and {@code imatrix} when the case names
 * one) of {@code input.safetensors}, read with the project's readers, encoded row by row,
 * and compared byte for byte with tensor {@code weight} of {@code expected.gguf}. Cases of a
 * type whose encoder is not here yet are skipped, naming the type.
 */
class GgmlQuantizeKernelTest {
    private static final Anamnesis AMN = Anamnesis.installed();
    private static final Set<String> I_QUANTS = Set.of(
            "iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq4_nl", "iq4_xs");

    @TestFactory
    Stream<DynamicTest> ggmlQuantize() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort(
                    "shared corpus not found (set -Danamnesis.corpus or ANAMNESIS_CORPUS): every corpus case is skipped")));
        }
        return CorpusCase.all(root.get()).stream()
                .filter(c -> c.family().equals("ggml-quantize"))
                .map(c -> DynamicTest.dynamicTest(c.id(), () -> run(c)));
    }

    static void run(CorpusCase c) throws Exception {
        String type = c.json().path("params").path("ggml_type").asText();
        Assumptions.assumeTrue(I_QUANTS.contains(type), () -> c.id() + ": no encoder kernel for " + type + " here yet");
        int rows = c.json().path("params").path("rows").asInt();
        int cols = c.json().path("params").path("cols").asInt();
        String imatrixName = c.json().path("params").path("imatrix").isTextual()
                ? c.json().path("params").path("imatrix").asText() : null;

        float[] weight;
        float[] importance = null;
        try (TensorArchive in = AMN.open(c.input()); Arena arena = Arena.ofConfined()) {
            weight = floats(in, "weight", arena);
            if (imatrixName != null) importance = floats(in, imatrixName, arena);
        }
        assertThat(weight).as(c.id() + " weight").hasSize(rows * cols);
        if (importance != null) assertThat(importance).as(c.id() + " imatrix").hasSize(cols);

        byte[] expected;
        try (TensorArchive out = AMN.open(c.dir().resolve("expected.gguf")); Arena arena = Arena.ofConfined()) {
            TensorEntry e = out.tensor("weight").orElseThrow(() -> new AssertionError(c.id() + ": expected.gguf has no weight"));
            assertThat(e.dtype().name()).as(c.id() + " expected type").isEqualTo(c.expectedDtype());
            expected = out.data(e, arena).toArray(ValueLayout.JAVA_BYTE);
        }

        byte[] actual = GgufIqEncoding.encode(type, weight, rows, cols, importance);
        assertThat(actual.length).as(c.id() + " byte count").isEqualTo(expected.length);
        int rowBytes = expected.length / rows;
        for (int i = 0; i < expected.length; i++) {
            if (actual[i] != expected[i]) {
                fail("%s: byte %d (row %d, byte %d of the row) is 0x%02x, ggml wrote 0x%02x", c.id(), i,
                        i / rowBytes, i % rowBytes, actual[i] & 0xFF, expected[i] & 0xFF);
            }
        }
    }

    private static float[] floats(TensorArchive archive, String name, Arena arena) {
        TensorEntry e = archive.tensor(name).orElseThrow(() -> new AssertionError("no tensor " + name));
        assertThat(e.dtype().name()).as(name + " dtype").isEqualTo("F32");
        MemorySegment data = archive.data(e, arena);
        float[] out = new float[(int) e.elementCount()];
        MemorySegment.copy(data, LittleEndian.F32, 0, out, 0, out.length);
        return out;
    }
}
