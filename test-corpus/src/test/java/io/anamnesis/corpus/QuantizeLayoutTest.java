package io.anamnesis.corpus;

import com.fasterxml.jackson.databind.JsonNode;
import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Quantizer;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.quant.gguf.GgufQuantizer;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.DynamicTest;
import org.junit.jupiter.api.TestFactory;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The quantize cases with headers only, independent of the encoders: for every
 * llama-quantize case, the type llama.cpp chose for each tensor ({@code params.tensor_types}),
 * the output order, the shapes and the key/values must be what the plan says; then the plan
 * is written with the encoded tensors' bytes taken from {@code expected.gguf} (the tensors
 * left as they are produced for real), and the file must be {@code expected.gguf} byte for
 * byte: layout, key order, alignment and the copied tensors are all ours.
 */
class QuantizeLayoutTest {
    static final Anamnesis AMN = CorpusApiTest.AMN;

    /** The installed GGUF quantizer planning the layout alone ({@link GgufQuantizer#planLayout}). */
    record LayoutOnly(GgufQuantizer q) implements Quantizer {
        @Override public String scheme() { return q.scheme(); }
        @Override public String description() { return q.description(); }
        @Override public String format() { return q.format(); }
        @Override public SequencedMap<String, String> targets() { return q.targets(); }
        @Override public ForgetPlan plan(ForgetRequest r) { return q.planLayout(r); }
    }

    static final Anamnesis LAYOUT = Anamnesis.of(AMN.readers(), AMN.writers(), AMN.dequantizers(),
            List.of(new LayoutOnly(new GgufQuantizer())));

    @TestFactory
    Stream<DynamicTest> typeMixOfEveryCase() {
        Optional<Path> root = CorpusCase.root();
        if (root.isEmpty()) {
            return Stream.of(DynamicTest.dynamicTest("shared corpus", () -> Assumptions.abort(
                    "shared corpus not found (set -Danamnesis.corpus or ANAMNESIS_CORPUS): the quantize layout cases are skipped")));
        }
        return CorpusCase.all(root.get()).stream()
                .filter(c -> c.family().equals("llama-quantize") || c.family().equals("ggml-quantize"))
                .map(c -> DynamicTest.dynamicTest(c.id(), () -> run(c)));
    }

    static void run(CorpusCase c) throws Exception {
        Path tmp = Files.createTempDirectory("amn-quantize-layout-");
        try {
            if (QuantizeCases.isGgml(c)) ggml(c, tmp);
            else llama(c, tmp);
        } finally {
            try (Stream<Path> all = Files.walk(tmp)) {
                for (Path p : all.sorted((a, b) -> b.getNameCount() - a.getNameCount()).toList()) Files.deleteIfExists(p);
            }
        }
    }

    /** ggml-quantize: the one tensor becomes exactly the case's type, with its shape. */
    static void ggml(CorpusCase c, Path tmp) throws Exception {
        Path input = QuantizeCases.weightOnly(c, tmp);
        Optional<TensorArchive> imatrix = QuantizeCases.hasImatrix(c)
                ? Optional.of(AMN.open(QuantizeCases.legacyImatrix(c, tmp))) : Optional.empty();
        try (TensorArchive archive = AMN.open(input)) {
            ForgetPlan plan = LAYOUT.planForget(archive, QuantizeCases.target(c),
                    new ForgetOptions(Map.of(), imatrix, false, List.of()), new LossMeter());
            PlannedTensor w = plan.tensors().getFirst();
            assertThat(ggmlName(w)).as(c.id() + " type").isEqualTo(c.json().path("params").path("ggml_type").asText());
            assertThat(w.shape().reversed().toArray()).as(c.id() + " ne").isEqualTo(
                    ReferenceGguf.read(QuantizeCases.expected(c)).tensor("weight").ne());
        } finally {
            if (imatrix.isPresent()) imatrix.get().close();
        }
    }

    static void llama(CorpusCase c, Path tmp) throws Exception {
        JsonNode params = c.json().path("params");
        Optional<TensorArchive> imatrix = QuantizeCases.hasImatrix(c)
                ? Optional.of(new GivenAs(AMN.open(c.dir().resolve("imatrix.gguf")), Path.of("imatrix.gguf"))) : Optional.empty();
        try (TensorArchive archive = AMN.open(c.input())) {
            ForgetPlan plan = LAYOUT.planForget(archive, c.json().path("scheme").asText(),
                    new ForgetOptions(Map.of(), imatrix, false, List.of()), new LossMeter());
            Map<String, String> types = new LinkedHashMap<>();
            Map<String, List<Long>> shapes = new LinkedHashMap<>();
            for (PlannedTensor t : plan.tensors()) {
                types.put(t.name(), ggmlName(t));
                List<Long> ne = new ArrayList<>();
                for (long d : t.shape().reversed().toArray()) ne.add(d);
                shapes.put(t.name(), ne);
            }
            Map<String, String> wantTypes = new LinkedHashMap<>();
            params.path("tensor_types").properties().forEach(e -> wantTypes.put(e.getKey(), e.getValue().asText()));
            assertThat(types).as(c.id() + ": llama.cpp's type for each tensor").isEqualTo(wantTypes);
            List<String> order = new ArrayList<>();
            params.path("tensor_order").forEach(n -> order.add(n.asText()));
            assertThat(List.copyOf(types.keySet())).as(c.id() + " tensor order").isEqualTo(order);
            Map<String, List<Long>> wantShapes = new LinkedHashMap<>();
            params.path("tensor_shapes_ne").properties().forEach(e -> {
                List<Long> ne = new ArrayList<>();
                e.getValue().forEach(n -> ne.add(n.asLong()));
                wantShapes.put(e.getKey(), ne);
            });
            assertThat(shapes).as(c.id() + " shapes (ne)").isEqualTo(wantShapes);
            assertThat(((io.anamnesis.api.MetaValue.Int) plan.typed().get("general.file_type")).value())
                    .as(c.id() + " general.file_type").isEqualTo(params.path("ftype_id").asLong());

            // written with the encoded bytes replayed from expected.gguf: the file must be expected.gguf
            ReferenceGguf expected = ReferenceGguf.read(QuantizeCases.expected(c));
            List<PlannedTensor> replayed = new ArrayList<>();
            for (PlannedTensor t : plan.tensors()) {
                boolean encoded = plan.decisions().stream().anyMatch(d -> d.tensor().equals(t.name()) && d.encoded());
                replayed.add(encoded ? replay(t, expected.tensor(t.name()).bytes()) : t);
            }
            Path out = tmp.resolve("out.gguf");
            AMN.writer("gguf").write(new OutputPlan(Optional.of(archive), plan.metadata(), replayed, plan.typed()), out,
                    WriteOptions.threads(2));
            QuantizeCases.compareModel(c, out, imatrix.map(i -> "imatrix.gguf"));
        } finally {
            if (imatrix.isPresent()) imatrix.get().close();
        }
    }

    static PlannedTensor replay(PlannedTensor t, byte[] bytes) {
        return new PlannedTensor(t.name(), t.dtype(), t.shape(), t.granule(), arena -> (first, count, dest) ->
                MemorySegment.copy(MemorySegment.ofArray(bytes), t.dtype().byteSize(first), dest, 0, dest.byteSize()));
    }

    /** ggml_type_name of a planned tensor's dtype: q4_K, iq2_xxs, f32. */
    static String ggmlName(PlannedTensor t) {
        String n = t.dtype().name().toLowerCase(Locale.ROOT);
        return n.endsWith("_k") ? n.substring(0, n.length() - 1) + "K" : n;
    }

    /** An archive as opened from another path: llama-quantize writes the imatrix path as it was given. */
    record GivenAs(TensorArchive a, Path given) implements TensorArchive {
        @Override public String format() { return a.format(); }
        @Override public Optional<Path> path() { return Optional.of(given); }
        @Override public Map<String, String> metadata() { return a.metadata(); }
        @Override public Map<String, Object> structuredMetadata() { return a.structuredMetadata(); }
        @Override public java.util.SequencedMap<String, io.anamnesis.api.MetaValue> typedMetadata() { return a.typedMetadata(); }
        @Override public Map<String, String> properties() { return a.properties(); }
        @Override public List<TensorEntry> tensors() { return a.tensors(); }
        @Override public MemorySegment data(TensorEntry e, Arena arena) { return a.data(e, arena); }
        @Override public void close() { a.close(); }
    }
}
