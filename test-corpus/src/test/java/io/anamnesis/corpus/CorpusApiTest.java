package io.anamnesis.corpus;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.RecoveryPlan;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.PlannedTensor;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.fail;

/**
 * Every case of the shared corpus through the public API: {@code Anamnesis.installed()},
 * open, plan, materialize. One dynamic test per case, named {@code family/case}.
 */
class CorpusApiTest {
    static final Anamnesis AMN = Anamnesis.installed();

    @TestFactory
    Stream<DynamicTest> corpus() {
        Stream<DynamicTest> hf = CorpusCase.hfRoot().isPresent() ? Stream.of() : Stream.of(DynamicTest.dynamicTest(
                "shared corpus-hf", () -> Assumptions.abort("shared corpus-hf not found (set -Danamnesis.corpus.hf or "
                        + "ANAMNESIS_CORPUS_HF): every hf-to-gguf case is skipped")));
        if (CorpusCase.root().isEmpty()) {
            hf = Stream.concat(hf, Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort(
                    "shared corpus not found (set -Danamnesis.corpus or ANAMNESIS_CORPUS): every corpus case is skipped"))));
        }
        return Stream.concat(hf, CorpusCase.everyRoot().stream().map(c -> DynamicTest.dynamicTest(c.id(), () -> run(c))));
    }

    static void run(CorpusCase c) throws Exception {
        Optional<String> missing = Requirements.missing(c, AMN);
        Assumptions.assumeTrue(missing.isEmpty(), () -> c.id() + ": " + missing.orElse(""));
        switch (c.operation()) {
            case "dequantize" -> dequantize(c);
            case "parse" -> parse(c);
            case "reject" -> reject(c);
            case "quantize" -> quantize(c);
            case "convert" -> HfToGgufCases.api(c, AMN);
            default -> fail("unknown operation " + c.operation() + " in " + c.id());
        }
    }

    /**
     * ggml-quantize: only {@code weight} of the input, to exactly the case's ggml type, with its
     * {@code imatrix} as a legacy .dat; llama-quantize: the whole model to the case's file type,
     * with its imatrix.gguf. Written with 2 threads and with 1: the same bytes.
     */
    static void quantize(CorpusCase c) throws Exception {
        Path tmp = java.nio.file.Files.createTempDirectory("amn-corpus-quantize-");
        try {
            boolean ggml = QuantizeCases.isGgml(c);
            Path input = ggml ? QuantizeCases.weightOnly(c, tmp) : c.input();
            Optional<TensorArchive> imatrix = !QuantizeCases.hasImatrix(c) ? Optional.empty()
                    : ggml ? Optional.of(AMN.open(QuantizeCases.legacyImatrix(c, tmp)))
                    : Optional.of(new QuantizeLayoutTest.GivenAs(AMN.open(c.dir().resolve("imatrix.gguf")), Path.of("imatrix.gguf")));
            try (TensorArchive archive = AMN.open(input)) {
                io.anamnesis.api.ForgetOptions options = new io.anamnesis.api.ForgetOptions(Map.of(), imatrix, false, List.of());
                Path two = tmp.resolve("out-2.gguf"), one = tmp.resolve("out-1.gguf");
                AMN.forget(archive, QuantizeCases.target(c), options, new io.anamnesis.api.LossMeter(), two,
                        io.anamnesis.api.spi.WriteOptions.threads(2));
                if (ggml) QuantizeCases.compareWeight(c, two);
                else QuantizeCases.compareModel(c, two, imatrix.map(i -> "imatrix.gguf"));
                AMN.forget(archive, QuantizeCases.target(c), options, new io.anamnesis.api.LossMeter(), one,
                        io.anamnesis.api.spi.WriteOptions.threads(1));
                assertThat(QuantizeCases.sha256(one)).as(c.id() + ": 1 thread, the same bytes as 2").isEqualTo(QuantizeCases.sha256(two));
            } finally {
                if (imatrix.isPresent()) imatrix.get().close();
            }
        } finally {
            try (Stream<Path> all = java.nio.file.Files.walk(tmp)) {
                for (Path p : all.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) java.nio.file.Files.deleteIfExists(p);
            }
        }
    }

    static void dequantize(CorpusCase c) throws Exception {
        Map<String, ReferenceSafetensors.Tensor> expected = ReferenceSafetensors.read(c.expected());
        try (TensorArchive archive = AMN.open(c.input())) {
            for (String target : List.of("F32", "BF16", "F16")) {
                if (c.expectedDtype().equals("BF16") && !target.equals("BF16")) continue;
                RecoveryPlan plan = AMN.plan(archive, DType.standard(target).orElseThrow()).requireComplete();
                for (var e : expected.entrySet()) {
                    PlannedTensor out = plan.output(e.getKey()).orElseThrow(() ->
                            new AssertionError(c.id() + ": no output tensor " + e.getKey() + " (outputs: "
                                    + plan.outputs().stream().map(PlannedTensor::name).toList() + ")"));
                    assertThat(out.shape().toArray()).as("%s %s shape", c.id(), e.getKey()).isEqualTo(e.getValue().shape());
                    try (Arena arena = Arena.ofConfined()) {
                        byte[] actual = plan.materialize(e.getKey(), arena).toArray(ValueLayout.JAVA_BYTE);
                        compare(c, e.getKey(), target, e.getValue(), out.dtype().name(), actual);
                    }
                }
            }
        }
    }

    /**
     * F32: exact bits. BF16/F16 output: the expected F32 narrowed by round-to-nearest-even.
     * A tensor passed through in its own float dtype is widened (exactly) and compared as F32.
     */
    static void compare(CorpusCase c, String name, String target, ReferenceSafetensors.Tensor expected,
                        String actualDtype, byte[] actual) {
        String what = c.id() + " " + name + " at " + target;
        int[] expectedF32 = Bits.asF32Bits(expected.dtype(), expected.bytes());
        if (actualDtype.equals(target) && !target.equals("F32") && !expected.dtype().equals(target)) {
            short[] want = Bits.narrow(expectedF32, target);
            short[] got = Bits.asShorts(actual);
            assertThat(got.length).as(what + " element count").isEqualTo(want.length);
            int i = Bits.firstMismatch(want, got, target);
            if (i >= 0) {
                fail("%s: element %d is 0x%04x, expected 0x%04x (narrowed from F32 0x%08x)",
                        what, i, got[i] & 0xFFFF, want[i] & 0xFFFF, expectedF32[i]);
            }
            return;
        }
        int[] got = Bits.asF32Bits(actualDtype, actual);
        int[] want = actualDtype.equals("F32") || expected.dtype().equals(actualDtype) ? expectedF32
                : Bits.asF32Bits(actualDtype, toBytes(Bits.narrow(expectedF32, actualDtype)));
        assertThat(got.length).as(what + " element count").isEqualTo(want.length);
        int i = Bits.firstMismatch(want, got);
        if (i >= 0) {
            fail("%s: element %d is 0x%08x (%s), expected 0x%08x (%s)", what, i, got[i],
                    Float.intBitsToFloat(got[i]), want[i], Float.intBitsToFloat(want[i]));
        }
    }

    private static byte[] toBytes(short[] s) {
        byte[] b = new byte[s.length * 2];
        for (int i = 0; i < s.length; i++) {
            b[2 * i] = (byte) s[i];
            b[2 * i + 1] = (byte) (s[i] >> 8);
        }
        return b;
    }

    static void parse(CorpusCase c) throws Exception {
        Map<String, ReferenceSafetensors.Tensor> expected = ReferenceSafetensors.read(c.expected());
        try (TensorArchive archive = AMN.open(c.input()); Arena arena = Arena.ofConfined()) {
            assertThat(archive.tensors().stream().map(TensorEntry::name).sorted().toList())
                    .as(c.id() + " tensor names").isEqualTo(expected.keySet().stream().sorted().toList());
            for (var e : expected.entrySet()) {
                TensorEntry entry = archive.tensor(e.getKey()).orElseThrow();
                assertThat(entry.dtype().name()).as(c.id() + " " + e.getKey() + " dtype").isEqualTo(e.getValue().dtype());
                assertThat(entry.shape().toArray()).as(c.id() + " " + e.getKey() + " shape").isEqualTo(e.getValue().shape());
                MemorySegment data = archive.data(entry, arena);
                assertThat(data.toArray(ValueLayout.JAVA_BYTE)).as(c.id() + " " + e.getKey() + " bytes")
                        .isEqualTo(e.getValue().bytes());
            }
        }
    }

    /** Both the header-only route (open + plan) and the full route must refuse, with the right kind. */
    static void reject(CorpusCase c) {
        List<String> accepted = c.acceptedErrors();
        assertThatThrownBy(() -> {
            try (TensorArchive archive = AMN.open(c.input())) {
                AMN.plan(archive, DType.BF16).requireComplete();
            }
        }).as(c.id() + " header-only route").isInstanceOf(AnamnesisException.class)
                .satisfies(t -> assertThat(((AnamnesisException) t).kind().shortName())
                        .as(c.id() + " error kind of: " + t.getMessage()).isIn(accepted));
        assertThatThrownBy(() -> {
            try (TensorArchive archive = AMN.open(c.input()); Arena arena = Arena.ofConfined()) {
                RecoveryPlan plan = AMN.plan(archive, DType.BF16).requireComplete();
                for (PlannedTensor t : plan.outputs()) plan.materialize(t.name(), arena);
            }
        }).as(c.id() + " full route").isInstanceOf(AnamnesisException.class)
                .satisfies(t -> assertThat(((AnamnesisException) t).kind().shortName()).isIn(accepted));
    }
}
