package io.anamnesis.api;

import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.testing.MemoryArchive;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.DenseReader;
import io.anamnesis.api.spi.DenseTensor;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.ForgetRequest;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.Quantizer;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.within;

/** The forget path through the api: dense sources, a quantizer's plan, the loss it reports. */
class ForgetPathTest {

    /** A toy quantizer: every numeric tensor of rank 2 becomes F16, row by row; the rest stays. */
    static class ToHalf implements Quantizer {
        @Override
        public String scheme() {
            return "toy";
        }

        @Override
        public String description() {
            return "rank-2 tensors to F16";
        }

        @Override
        public String format() {
            return "safetensors";
        }

        @Override
        public SequencedMap<String, String> targets() {
            SequencedMap<String, String> m = new LinkedHashMap<>();
            m.put("half", "F16, row by row");
            return m;
        }

        @Override
        public ForgetPlan plan(ForgetRequest request) {
            List<PlannedTensor> out = new ArrayList<>();
            List<ForgetPlan.Decision> decisions = new ArrayList<>();
            for (DenseTensor t : request.tensors()) {
                if (t.keep() || !t.isNumeric() || t.shape().rank() != 2) {
                    out.add(t.asStored());
                    decisions.add(new ForgetPlan.Decision(t.name(), t.asStored().dtype().name(), false,
                            t.keep() ? "--keep" : "not a numeric matrix"));
                    continue;
                }
                int row = (int) t.rowLength();
                request.loss().expect(t.name());
                out.add(new PlannedTensor(t.name(), DType.F16, t.shape(), row, arena -> {
                    DenseReader reader = DenseReader.open(t, arena);
                    return (first, count, dest) -> {
                        float[] v = new float[(int) count];
                        float[] back = new float[(int) count];
                        reader.read(first, (int) count, v, 0);
                        for (int i = 0; i < count; i++) {
                            short h = Float.floatToFloat16(v[i]);
                            dest.set(LittleEndian.I16, 2L * i, h);
                            back[i] = Float.float16ToFloat(h);
                        }
                        request.loss().record(t.name(), first, LossMeter.measure(v, 0, back, 0, (int) count));
                    };
                }));
                decisions.add(new ForgetPlan.Decision(t.name(), "f16", true, "rank 2"));
            }
            return new ForgetPlan(out, Map.of("quantized_by", "toy"), Map.of("toy.version", MetaValue.u32(1)), decisions);
        }
    }

    static byte[] bf16(float... v) {
        ByteBuffer b = ByteBuffer.allocate(2 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putShort((short) (Float.floatToRawIntBits(f) >>> 16));
        return b.array();
    }

    static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    static final Anamnesis TOY = Anamnesis.of(List.of(), List.of(), List.of(new PlanTest.ScaledInt8()), List.of(new ToHalf()));

    @Test
    void widensStoredBf16AndRecoversOnTheFlyThenEncodes() {
        // every value exact in both BF16 and F16 (65280 = 0xFF00: 8 significant bits, below F16's max)
        float[] w = {1.25f, -3.5f, 1000.0f, 0.0f, -0.0f, 65280f};
        MemoryArchive archive = new MemoryArchive()
                .add("w", DType.BF16, Shape.of(2, 3), bf16(w))
                .add("norm", DType.F32, Shape.of(3), f32(1, 2, 3))
                .add("ids", DType.I32, Shape.of(2, 2), new byte[16])
                // toy recovery: q * s, q = [2, -1, 4, 0] as I8, s = 0.5
                .add("lin.q", DType.I8, Shape.of(2, 2), new byte[]{2, -1, 4, 0})
                .add("lin.s", DType.F32, Shape.SCALAR, f32(0.5f));
        LossMeter loss = new LossMeter();
        ForgetPlan plan = TOY.planForget(archive, "HALF", ForgetOptions.defaults(), loss);

        assertThat(plan.decisions()).extracting(ForgetPlan.Decision::tensor, ForgetPlan.Decision::becomes)
                .containsExactly(org.assertj.core.groups.Tuple.tuple("w", "f16"), org.assertj.core.groups.Tuple.tuple("norm", "F32"),
                        org.assertj.core.groups.Tuple.tuple("ids", "I32"), org.assertj.core.groups.Tuple.tuple("lin", "f16"));
        assertThat(plan.encodedCount()).isEqualTo(2);
        assertThat(plan.typed()).containsEntry("toy.version", MetaValue.u32(1));

        try (Arena arena = Arena.ofConfined()) {
            MemorySegment wOut = produce(plan, "w", arena);
            for (int i = 0; i < w.length; i++) {
                assertThat(wOut.get(LittleEndian.I16, 2L * i)).isEqualTo(Float.floatToFloat16(w[i]));
            }
            MemorySegment lin = produce(plan, "lin", arena);
            float[] want = {1.0f, -0.5f, 2.0f, 0.0f};
            for (int i = 0; i < 4; i++) {
                assertThat(Float.float16ToFloat(lin.get(LittleEndian.I16, 2L * i))).isEqualTo(want[i]);
            }
        }
        // every value above is exact in F16: nothing was lost
        assertThat(loss.perTensor().keySet()).containsExactly("w", "lin");
        assertThat(loss.total().count()).isEqualTo(10);
        assertThat(loss.total().maxAbs()).isZero();
        assertThat(loss.total().snrDb()).isInfinite();
    }

    @Test
    void keepPatternsLeaveTensorsAsStored() {
        MemoryArchive archive = new MemoryArchive().add("w", DType.BF16, Shape.of(1, 2), bf16(1, 2));
        ForgetOptions keepW = new ForgetOptions(Map.of(), Optional.empty(), false, List.of(Pattern.compile("^w$")));
        ForgetPlan plan = TOY.planForget(archive, "half", keepW, new LossMeter());
        assertThat(plan.tensors().getFirst().dtype()).isEqualTo(DType.BF16);
        assertThat(plan.decisions().getFirst().why()).isEqualTo("--keep");
    }

    @Test
    void unknownTargetNamesTheInstalledOnes() {
        MemoryArchive archive = new MemoryArchive();
        assertThatThrownBy(() -> TOY.planForget(archive, "q4_k", ForgetOptions.defaults(), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("q4_k").hasMessageContaining("targets: half");
    }

    @Test
    void denseReaderReadsRangesAcrossTheProducersGranule() {
        // a producer with granule 4 that counts how it is asked
        List<long[]> asked = new ArrayList<>();
        PlannedTensor values = new PlannedTensor("t", DType.F32, Shape.of(10), 4, arena -> (first, count, dest) -> {
            asked.add(new long[]{first, count});
            for (long i = 0; i < count; i++) dest.set(LittleEndian.F32, 4 * i, (float) (first + i));
        });
        DenseTensor t = new DenseTensor("t", Shape.of(10), DType.F32, Optional.empty(), values, Optional.of(values), false);
        try (Arena arena = Arena.ofConfined()) {
            DenseReader r = DenseReader.open(t, arena);
            float[] got = new float[7];
            r.read(3, 6, got, 1);
            assertThat(got).containsExactly(0f, 3f, 4f, 5f, 6f, 7f, 8f);
            // 3..9 widened to the granule: [0, 10) (the tensor's end cuts the last granule)
            assertThat(asked.getLast()).containsExactly(0L, 10L);
            assertThatThrownBy(() -> r.read(8, 3, got, 0)).isInstanceOf(IndexOutOfBoundsException.class);
        }
    }

    @Test
    void lossIsTheSameInWhateverOrderChunksArrive() {
        float[] x = {1, -2, 3, 4};
        float[] y = {1.5f, -2, 2, 4};
        LossMeter a = new LossMeter();
        a.record("t", 0, LossMeter.measure(x, 0, y, 0, 2));
        a.record("t", 2, LossMeter.measure(x, 2, y, 2, 2));
        LossMeter b = new LossMeter();
        b.record("t", 2, LossMeter.measure(x, 2, y, 2, 2));
        b.record("t", 0, LossMeter.measure(x, 0, y, 0, 2));
        assertThat(a.total()).isEqualTo(b.total());
        LossMeter.Loss l = a.total();
        // errors 0.5, 0, -1, 0: MAE 1.5/4, RMSE sqrt(1.25/4), max 1, SNR 10 log10(30 / 1.25)
        assertThat(l.mae()).isEqualTo(0.375);
        assertThat(l.rmse()).isCloseTo(Math.sqrt(0.3125), within(1e-15));
        assertThat(l.maxAbs()).isEqualTo(1.0);
        assertThat(l.snrDb()).isCloseTo(10 * Math.log10(24), within(1e-12));
    }

    @Test
    void measureSkipsNonFiniteOriginalsMidRowAndKeepsANaNAsTheMaximum() {
        // errors 0.5, 0, (inf skipped), -1, 0, 0.25, 0, 0, 1: all sums exact in double
        float[] x = {1, 2, Float.POSITIVE_INFINITY, 4, 5, 6, 7, 8, 9};
        float[] y = {1.5f, 2, 0, 3, 5, 6.25f, 7, 8, 10};
        LossMeter.Loss l = LossMeter.measure(x, 0, y, 0, 9);
        assertThat(l.count()).isEqualTo(8);
        assertThat(l.nonFinite()).isEqualTo(1);
        assertThat(l.sumAbs()).isEqualTo(2.75);
        assertThat(l.sumSq()).isEqualTo(2.3125);
        assertThat(l.maxAbs()).isEqualTo(1.0);
        assertThat(l.sumSignalSq()).isEqualTo(1 + 4 + 16 + 25 + 36 + 49 + 64 + 81);
        // a decoded NaN is the largest error there is
        y[5] = Float.NaN;
        assertThat(LossMeter.measure(x, 0, y, 0, 9).maxAbs()).isNaN();
        assertThat(LossMeter.measure(x, 4, y, 4, 5).maxAbs()).isNaN();
    }

    @Test
    void nonFiniteOriginalsAreCountedApart() {
        LossMeter.Loss l = LossMeter.measure(new float[]{Float.NaN, 1, Float.NEGATIVE_INFINITY}, 0,
                new float[]{0, 1, 0}, 0, 3);
        assertThat(l.count()).isEqualTo(1);
        assertThat(l.nonFinite()).isEqualTo(2);
        assertThat(l.sumSq()).isZero();
    }

    @Test
    void denseReaderWidensStoredHalvesExactlyOverAnyRange() {
        // BF16 and F16 bit patterns across the range, subnormals, signed zeros, inf and NaN included
        int n = 70_000;
        byte[] bf = new byte[2 * n];
        byte[] hf = new byte[2 * n];
        for (int i = 0; i < n; i++) {
            short b = (short) (i * 937);
            bf[2 * i] = (byte) b;
            bf[2 * i + 1] = (byte) (b >> 8);
            hf[2 * i] = (byte) b;
            hf[2 * i + 1] = (byte) (b >> 8);
        }
        MemoryArchive archive = new MemoryArchive().add("b", DType.BF16, Shape.of(n), bf).add("h", DType.F16, Shape.of(n), hf);
        ForgetPlan plan = TOY.planForget(archive, "half", ForgetOptions.defaults(), new LossMeter());
        assertThat(plan.decisions()).hasSize(2);
        List<DenseTensor> dense = new ArrayList<>();
        Anamnesis.of(List.of(), List.of(), List.of(), List.of(new ToHalf() {
            @Override
            public ForgetPlan plan(io.anamnesis.api.spi.ForgetRequest request) {
                dense.addAll(request.tensors());
                return super.plan(request);
            }
        })).planForget(archive, "half", ForgetOptions.defaults(), new LossMeter());
        try (Arena arena = Arena.ofConfined()) {
            for (DenseTensor t : dense) {
                DenseReader r = DenseReader.open(t, arena);
                float[] got = new float[n];
                r.read(0, 1, got, 0);
                r.read(1, 40_000, got, 1);
                r.read(40_001, n - 40_001, got, 40_001);
                for (int i = 0; i < n; i++) {
                    short bits = (short) (i * 937);
                    float want = t.name().equals("b") ? Float.intBitsToFloat(bits << 16) : Float.float16ToFloat(bits);
                    assertThat(Float.floatToRawIntBits(got[i])).as("%s[%d]", t.name(), i).isEqualTo(Float.floatToRawIntBits(want));
                }
            }
        }
    }

    @Test
    void theLinearLayerPolicyKeepsEmbeddingsNormsBiasesAndTheHead() {
        PlannedTensor any = new PlannedTensor("x", DType.F32, Shape.of(4, 4), 1, arena -> (f, c, d) -> {
        });
        java.util.function.BiFunction<String, Shape, DenseTensor> t = (name, shape) -> {
            PlannedTensor p = new PlannedTensor(name, DType.F32, shape, 1, any.producer());
            return new DenseTensor(name, shape, DType.BF16, Optional.empty(), p, Optional.of(p), false);
        };
        Map<String, Optional<String>> cases = new LinkedHashMap<>();
        cases.put("model.layers.0.self_attn.q_proj.weight", Optional.empty());
        cases.put("transformer.h.0.mlp.c_fc.weight", Optional.empty());
        cases.put("model.embed_tokens.weight", Optional.of("embeddings stay"));
        cases.put("transformer.wte.weight", Optional.of("embeddings stay"));
        cases.put("lm_head.weight", Optional.of("lm_head stays"));
        cases.put("model.layers.0.input_layernorm.weight", Optional.of("norms and other vectors stay"));
        cases.put("model.layers.0.self_attn.q_proj.bias", Optional.of("biases stay"));
        for (var e : cases.entrySet()) {
            Shape shape = e.getKey().contains("norm") || e.getKey().endsWith("bias") ? Shape.of(4) : Shape.of(4, 4);
            assertThat(io.anamnesis.api.spi.LinearWeights.whyKept(t.apply(e.getKey(), shape))).as(e.getKey()).isEqualTo(e.getValue());
        }
        assertThat(io.anamnesis.api.spi.LinearWeights.whyKept(t.apply("conv.weight", Shape.of(2, 2, 2, 2))))
                .contains("not a matrix (rank 4)");
        PlannedTensor ids = new PlannedTensor("ids", DType.I32, Shape.of(2, 2), 1, any.producer());
        assertThat(io.anamnesis.api.spi.LinearWeights.whyKept(new DenseTensor("ids.weight", Shape.of(2, 2), DType.I32,
                Optional.empty(), ids, Optional.empty(), false))).contains("not floating point");
    }

    @Test
    void theErrorHistogramCountsByBinaryMagnitude() {
        LossMeter meter = new LossMeter(true);
        float[] x = {1f, 1f, 1f, Float.NaN, 0x1p-45f};
        float[] y = {1f, 1.5f, 1f + 0x1p-20f, 0f, 0f};
        LossMeter.Loss l = meter.record("t", 0, x, 0, y, 0, x.length);
        assertThat(l.count()).isEqualTo(4);
        assertThat(l.nonFinite()).isEqualTo(1);
        LossMeter.Histogram h = meter.histogram();
        assertThat(h.exact()).isEqualTo(1);
        long[] c = h.counts();
        // 0.5 = 2^-1, 2^-20, and 2^-45 (below 2^-40: the first bin)
        assertThat(c[-1 - LossMeter.Histogram.MIN_EXPONENT]).isEqualTo(1);
        assertThat(c[-20 - LossMeter.Histogram.MIN_EXPONENT]).isEqualTo(1);
        assertThat(c[0]).isEqualTo(1);
        assertThat(h.total()).isEqualTo(4);
        assertThat(meter.total()).isEqualTo(l);
        LossMeter sumsOnly = new LossMeter();
        assertThat(sumsOnly.record("t", 0, x, 0, y, 0, x.length)).isEqualTo(l);
        assertThat(sumsOnly.histogram().total()).isZero();
    }

    @Test
    void imitationNeedsAQuantizedReference() {
        MemoryArchive plain = new MemoryArchive().add("w", DType.BF16, Shape.of(1, 2), bf16(1, 2));
        assertThatThrownBy(() -> TOY.imitation(plain)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("holds no quantized tensor");
        MemoryArchive quantized = new MemoryArchive().add("lin.q", DType.I8, Shape.of(2, 2), new byte[]{2, -1, 4, 0})
                .add("lin.s", DType.F32, Shape.SCALAR, f32(0.5f));
        assertThatThrownBy(() -> TOY.imitation(quantized)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("the toy quantizer takes no --like reference (name the type with --to)");
        Anamnesis imitating = Anamnesis.of(List.of(), List.of(), List.of(new PlanTest.ScaledInt8()), List.of(new ToHalf() {
            @Override
            public Optional<String> imitates(TensorArchive reference) {
                return reference.tensor("lin.q").map(e -> "HALF");
            }
        }));
        assertThat(imitating.imitation(quantized)).isEqualTo("half");
        ForgetOptions like = ForgetOptions.defaults().imitating(quantized);
        assertThat(like.like()).containsSame(quantized);
        assertThat(like.settings()).isEmpty();
    }

    static MemorySegment produce(ForgetPlan plan, String name, Arena arena) {
        PlannedTensor t = plan.tensors().stream().filter(p -> p.name().equals(name)).findFirst().orElseThrow();
        MemorySegment dest = arena.allocate(t.byteSize());
        ChunkFiller f = t.producer().open(arena);
        f.fill(0, t.elementCount(), dest);
        return dest;
    }
}
