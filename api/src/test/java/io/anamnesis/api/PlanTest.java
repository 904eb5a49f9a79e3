package io.anamnesis.api;

import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.FormatWriter;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class PlanTest {
    /** A toy scheme: {@code <p>.q} (I8) times the scalar {@code <p>.s} (F32). */
    static class ScaledInt8 implements Dequantizer {
        @Override
        public String scheme() {
            return "toy";
        }

        @Override
        public String description() {
            return "int8 times a scalar";
        }

        @Override
        public List<Recovery> claim(ClaimContext ctx) {
            List<Recovery> out = new ArrayList<>();
            for (TensorEntry e : ctx.archive().tensors()) {
                if (!e.name().endsWith(".q")) continue;
                String prefix = e.name().substring(0, e.name().length() - 2);
                Map<String, Role> inputs = new LinkedHashMap<>();
                inputs.put(e.name(), Role.QUANTIZED);
                inputs.put(prefix + ".s", Role.SCALE);
                out.add(new Recovery(prefix, e.shape(), scheme(), "toy int8", inputs, new RecoveryKernel() {
                    @Override
                    public long granule() {
                        return 1;
                    }

                    @Override
                    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
                        MemorySegment q = archive.data(e, arena);
                        float s = archive.data(archive.tensor(prefix + ".s").orElseThrow(), arena).get(LittleEndian.F32, 0);
                        return (first, count, dest) -> {
                            for (long i = 0; i < count; i++) {
                                dest.setAtIndex(LittleEndian.F32, i, q.get(java.lang.foreign.ValueLayout.JAVA_BYTE, first + i) * s);
                            }
                        };
                    }
                }));
            }
            return out;
        }
    }

    static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(v.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    static MemoryArchive toyModel() {
        return new MemoryArchive()
                .add("layer.q", DType.I8, Shape.of(2, 2), new byte[]{1, -2, 3, 127})
                .add("norm", DType.F32, Shape.of(2), f32(0.5f, 2f))
                .add("layer.s", DType.F32, Shape.SCALAR, f32(0.25f));
    }

    @Test
    void recoversClaimedGroupsAndPassesTheRestThrough() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new ScaledInt8()));
        RecoveryPlan plan = amn.plan(toyModel(), DType.F32);

        assertThat(plan.roles()).containsExactly(
                Map.entry("layer.q", Role.QUANTIZED), Map.entry("norm", Role.PASSTHROUGH), Map.entry("layer.s", Role.SCALE));
        assertThat(plan.outputs()).extracting(t -> t.name() + ":" + t.dtype()).containsExactly("layer:F32", "norm:F32");
        assertThat(plan.schemeDescriptions()).containsExactly("toy int8");
        assertThat(plan.problems()).isEmpty();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment layer = plan.materialize("layer", arena);
            assertThat(layer.toArray(LittleEndian.F32)).containsExactly(0.25f, -0.5f, 0.75f, 31.75f);
            assertThat(plan.materialize("norm", arena).toArray(LittleEndian.F32)).containsExactly(0.5f, 2f);
        }
        assertThat(plan.outputBytes()).isEqualTo(16 + 8);
    }

    @Test
    void aRecoveredPlanDropsTheQuantizationConfigAndSaysWhereItCameFrom() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new ScaledInt8()));
        MemoryArchive model = toyModel().meta("format", "pt").meta("quantization_config", "{\"quant_method\":\"toy\"}");
        assertThat(amn.plan(model, DType.F32).toOutputPlan().metadata())
                .containsExactly(Map.entry("format", "pt"), Map.entry("anamnesis.recovered_from", "toy int8"));

        MemoryArchive plain = new MemoryArchive().add("norm", DType.F32, Shape.of(2), f32(1f, 2f))
                .meta("quantization_config", "{}");
        assertThat(amn.plan(plain, DType.F32).toOutputPlan().metadata()).containsOnlyKeys("quantization_config");
    }

    @Test
    void theOutputPlanCarriesTypedMetadataAndNamesWhatItDrops() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new ScaledInt8()));
        MemoryArchive model = toyModel()
                .meta("format", "pt")
                .meta("llama.block_count", MetaValue.u32(2))
                .meta("eps", MetaValue.Real.f32(1e-5f))
                .meta("tokens", new MetaValue.Array(MetaValue.Type.STRING,
                        java.util.stream.IntStream.range(0, 20).mapToObj(i -> (MetaValue) MetaValue.str("t" + i)).toList()))
                .untypedMeta("optimizer.none", "None")
                .meta("quantization_config", "{\"quant_method\":\"toy\"}");
        RecoveryPlan plan = amn.plan(model, DType.F32);
        OutputPlan out = plan.toOutputPlan();
        assertThat(plan.droppedMetadata()).containsOnlyKeys("optimizer.none", "quantization_config");
        assertThat(plan.droppedMetadata().get("optimizer.none")).contains("no typed form").contains("None");
        assertThat(plan.droppedMetadata().get("quantization_config")).contains("quantization");
        // the metadata strings keep the rendering; the key/values a writer stores are the typed values, whole
        assertThat(out.metadata()).containsEntry("tokens", "[array of 20 string]").doesNotContainKey("optimizer.none");
        assertThat(out.keyValues()).containsExactly(
                Map.entry("format", MetaValue.str("pt")),
                Map.entry("llama.block_count", MetaValue.u32(2)),
                Map.entry("eps", MetaValue.Real.f32(1e-5f)),
                Map.entry("tokens", model.typedMetadata().get("tokens")),
                Map.entry("anamnesis.recovered_from", MetaValue.str("toy int8")));
    }

    @Test
    void aPlanMadeByHandTakesTheSourcesTypedValuesForTheStringsItKeeps() {
        MemoryArchive model = toyModel().meta("n", MetaValue.u32(7)).meta("name", MetaValue.str("x")).meta("changed", MetaValue.u32(1));
        Map<String, String> metadata = new LinkedHashMap<>(model.metadata());
        metadata.put("changed", "2");
        OutputPlan plan = new OutputPlan(java.util.Optional.of(model), metadata, List.of())
                .withTyped(Map.of("added", MetaValue.i32(-1), "name", MetaValue.str("y")));
        assertThat(plan.keyValues()).containsExactly(
                Map.entry("n", MetaValue.u32(7)),
                Map.entry("name", MetaValue.str("y")),        // set by the plan, in place
                Map.entry("changed", MetaValue.str("2")),     // the plan's own string, not the source's value
                Map.entry("added", MetaValue.i32(-1)));
    }

    @Test
    void aWriterOfStringsSaysItCannotStoreTypedValues() {
        FormatWriter strings = new FormatWriter() {
            public String format() {
                return "text";
            }

            public List<String> fileExtensions() {
                return List.of("txt");
            }

            public String description() {
                return "strings only";
            }

            public boolean supports(DType dtype) {
                return true;
            }

            public void write(OutputPlan plan, java.nio.file.Path target, io.anamnesis.api.spi.WriteOptions options) {
            }
        };
        OutputPlan plan = new OutputPlan(java.util.Optional.empty(), Map.of("format", "pt"), List.of(),
                Map.of("n", MetaValue.u32(7)));
        assertThat(strings.metadataLoss(plan)).containsOnlyKeys("n");
        assertThat(strings.metadataLoss(plan).get("n")).contains("u32");
    }

    @Test
    void namesTheModuleForQuantizedTensorsNobodyClaims() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of());
        MemoryArchive gptq = new MemoryArchive()
                .add("m.qweight", DType.I32, Shape.of(1, 1), new byte[4])
                .add("m.bias", DType.F16, Shape.of(1), new byte[2]);
        RecoveryPlan plan = amn.plan(gptq, DType.BF16);
        assertThat(plan.problems()).singleElement().asString()
                .contains("m.qweight").contains("anamnesis-quant-gptq").contains("anamnesis-quant-awq");
        assertThatThrownBy(plan::requireComplete).isInstanceOf(UnsupportedFeatureException.class);
        assertThatThrownBy(plan::toOutputPlan).isInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void refusesTwoSchemesClaimingOneTensor() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of(new ScaledInt8(), new ScaledInt8() {
            @Override
            public String scheme() {
                return "toy2";
            }
        }));
        assertThatThrownBy(() -> amn.plan(toyModel(), DType.F32))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("claimed by two schemes");
    }

    @Test
    void recoveryTargetsAreTheThreeFloatTypes() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of());
        assertThatThrownBy(() -> amn.plan(toyModel(), DType.I8)).isInstanceOf(UnsupportedFeatureException.class);
    }

    @Test
    void missingWriterNamesTheModule() {
        Anamnesis amn = Anamnesis.of(List.of(), List.of(), List.of());
        assertThatThrownBy(() -> amn.writer("gguf")).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("io.anamnesis:anamnesis-format-gguf");
    }
}
