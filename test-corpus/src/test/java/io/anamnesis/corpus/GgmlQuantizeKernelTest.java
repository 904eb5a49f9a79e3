package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.quant.gguf.GgufEncoding;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.util.Optional;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The encoder kernels alone against ggml: every {@code ggml-quantize} case's weight (and
 * importance matrix, when the case names one) through {@link GgufEncoding#encode}, compared
 * byte for byte with the tensor ggml's {@code ggml_quantize_chunk} wrote to
 * {@code expected.gguf}.
 * (The whole {@code amn forget} path over the same cases is the corpus suite's.)
 */
class GgmlQuantizeKernelTest {
    private static final Anamnesis AMN = Anamnesis.installed();

    @TestFactory
    Stream<DynamicTest> ggmlQuantizeCases() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort(
                    "shared corpus not found (set -Danamnesis.corpus or ANAMNESIS_CORPUS)")));
        }
        return CorpusCase.all(root.get()).stream().filter(c -> c.family().equals("ggml-quantize"))
                .map(c -> DynamicTest.dynamicTest(c.id(), () -> run(c)));
    }

    static void run(CorpusCase c) throws Exception {
        String type = c.json().path("params").path("ggml_type").asText();
        String imatrixName = c.json().path("params").path("imatrix").asText(null);
        try (TensorArchive input = AMN.open(c.input()); TensorArchive expected = AMN.open(c.dir().resolve("expected.gguf"));
             Arena arena = Arena.ofConfined()) {
            TensorEntry weight = input.tensor("weight").orElseThrow();
            assertThat(weight.dtype().name()).as("%s input dtype", c.id()).isEqualTo("F32");
            long[] shape = weight.shape().toArray();
            int rows = (int) shape[0];
            int cols = (int) shape[1];
            float[] values = input.data(weight, arena).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            float[] importance = null;
            if (imatrixName != null && !imatrixName.equals("null")) {
                TensorEntry im = input.tensor(imatrixName).orElseThrow();
                importance = input.data(im, arena).toArray(ValueLayout.JAVA_FLOAT_UNALIGNED);
            }
            byte[] actual = GgufEncoding.encode(type, values, rows, cols, importance);
            TensorEntry out = expected.tensor("weight").orElseThrow();
            assertThat(out.dtype().name()).as("%s stored type", c.id()).isEqualToIgnoringCase(type);
            assertThat(out.shape().toArray()).as("%s stored shape", c.id()).isEqualTo(shape);
            byte[] reference = expected.data(out, arena).toArray(ValueLayout.JAVA_BYTE);
            assertThat(actual.length).as("%s byte count", c.id()).isEqualTo(reference.length);
            int first = java.util.Arrays.mismatch(actual, reference);
            assertThat(first).as("%s: first differing byte %d (block %d of %d bytes): ours %s, ggml %s", c.id(), first,
                    first < 0 ? -1 : first / blockBytes(c), blockBytes(c),
                    first < 0 ? "" : String.format("0x%02x", actual[first]),
                    first < 0 ? "" : String.format("0x%02x", reference[first])).isEqualTo(-1);
        }
    }

    private static int blockBytes(CorpusCase c) {
        return c.json().path("params").path("type_size").asInt(1);
    }
}
