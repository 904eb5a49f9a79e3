package io.anamnesis.quant.awq;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Role;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class AwqDequantizerTest {
    static final String P = "model.layers.3.self_attn.o_proj";
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final String CONFIG = "{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":%d,\"zero_point\":true,\"version\":\"gemm\"}";

    /** AutoAWQ's pack order: field k of a word holds column 8j + PACK[k]. */
    static final int[] PACK = {0, 2, 4, 6, 1, 3, 5, 7};

    /** A layer built here: codes, zeros and scales known, packed by the published interleave. */
    record Layer(int in, int out, int groupSize, int[][] q, int[][] z, float[][] s, DType scaleType) {
        static Layer random(long seed, int in, int out, int groupSize, DType scaleType) {
            Random r = new Random(seed);
            int groups = (in + groupSize - 1) / groupSize;
            int[][] q = new int[in][out];
            for (int[] row : q) for (int o = 0; o < out; o++) row[o] = r.nextInt(16);
            int[][] z = new int[groups][out];
            float[][] s = new float[groups][out];
            for (int g = 0; g < groups; g++) {
                for (int o = 0; o < out; o++) {
                    z[g][o] = r.nextInt(16);
                    float v = (r.nextInt(4000) + 1) / 65536f * (r.nextBoolean() ? 1 : -1);
                    // keep the scale exactly representable in its stored dtype
                    s[g][o] = scaleType.equals(DType.F16) ? Float.float16ToFloat(Float.floatToFloat16(v))
                            : scaleType.equals(DType.BF16) ? Float.intBitsToFloat(Float.floatToRawIntBits(v) & 0xFFFF0000) : v;
                }
            }
            return new Layer(in, out, groupSize, q, z, s, scaleType);
        }

        int groups() {
            return z.length;
        }

        /** AutoAWQ reference: (float32(q) - float32(z)) * float32(scale), group i / group_size. */
        float expected(int o, int i) {
            int g = i / groupSize;
            return ((float) q[i][o] - (float) z[g][o]) * s[g][o];
        }

        static int[] packRow(int[] values, int out) {
            int[] w = new int[out / 8];
            for (int j = 0; j < out / 8; j++) {
                for (int k = 0; k < 8; k++) w[j] |= values[8 * j + PACK[k]] << (4 * k);
            }
            return w;
        }

        MemoryArchive addTo(MemoryArchive a) {
            int[] qw = new int[in * out / 8];
            for (int i = 0; i < in; i++) System.arraycopy(packRow(q[i], out), 0, qw, i * out / 8, out / 8);
            int[] qz = new int[groups() * out / 8];
            for (int g = 0; g < groups(); g++) System.arraycopy(packRow(z[g], out), 0, qz, g * out / 8, out / 8);
            a.ints(P + ".qweight", qw, in, out / 8);
            a.ints(P + ".qzeros", qz, groups(), out / 8);
            if (scaleType.equals(DType.F32)) {
                float[] f = new float[groups() * out];
                for (int g = 0; g < groups(); g++) System.arraycopy(s[g], 0, f, g * out, out);
                a.f32(P + ".scales", new long[]{groups(), out}, f);
            } else {
                short[] b = new short[groups() * out];
                for (int g = 0; g < groups(); g++) {
                    for (int o = 0; o < out; o++) {
                        b[g * out + o] = scaleType.equals(DType.F16) ? Float.floatToFloat16(s[g][o])
                                : (short) (Float.floatToRawIntBits(s[g][o]) >>> 16);
                    }
                }
                a.shorts(P + ".scales", scaleType, b, groups(), out);
            }
            return a;
        }
    }

    static List<Recovery> claim(MemoryArchive a) {
        return new AwqDequantizer().claim(new ClaimContext(a, ParseLimits.defaults()));
    }

    static MemorySegment recover(MemoryArchive a, DType target, Arena arena) {
        return Anamnesis.of(List.of(), List.of(), List.of(new AwqDequantizer())).plan(a, target)
                .materialize(P + ".weight", arena);
    }

    static short bf16(float f) {
        int b = Float.floatToRawIntBits(f);
        return (short) ((b + 0x7FFF + ((b >>> 16) & 1)) >>> 16);
    }

    static void assertMatches(Layer l, MemorySegment got, DType target) {
        for (int o = 0; o < l.out(); o++) {
            for (int i = 0; i < l.in(); i++) {
                long e = (long) o * l.in() + i;
                float want = l.expected(o, i);
                if (target.equals(DType.F32)) {
                    float g = got.get(F32, e * 4);
                    if (Float.floatToRawIntBits(g) != Float.floatToRawIntBits(want)) {
                        throw new AssertionError("W[" + o + "][" + i + "] = " + g + ", expected " + want);
                    }
                } else {
                    short w = target.equals(DType.BF16) ? bf16(want) : Float.floatToFloat16(want);
                    short g = got.get(I16, e * 2);
                    if (g != w) {
                        throw new AssertionError(target + " W[" + o + "][" + i + "] = 0x" + Integer.toHexString(g & 0xFFFF)
                                + ", expected 0x" + Integer.toHexString(w & 0xFFFF));
                    }
                }
            }
        }
    }

    @Test
    void undoesTheInterleaveOfAHandPackedWord() {
        // one input row, 8 outputs with code m for column m: fields k hold columns 0,2,4,6,1,3,5,7,
        // so the word's nibbles from the top are 7,5,3,1,6,4,2,0; zero 1 everywhere, scale 0.25:
        // W[m][0] = 0.25 * (m - 1)
        var a = new MemoryArchive().meta("quantization_config", CONFIG.formatted(1))
                .ints(P + ".qweight", new int[]{0x75316420}, 1, 1)
                .ints(P + ".qzeros", new int[]{0x11111111}, 1, 1)
                .shorts(P + ".scales", DType.F16, new short[]{
                        0x3400, 0x3400, 0x3400, 0x3400, 0x3400, 0x3400, 0x3400, 0x3400}, 1, 8);
        try (Arena arena = Arena.ofConfined()) {
            assertThat(recover(a, DType.F32, arena).toArray(F32))
                    .containsExactly(-0.25f, 0f, 0.25f, 0.5f, 0.75f, 1f, 1.25f, 1.5f);
        }
    }

    @Test
    void appliesTheInterleaveToZerosToo() {
        // codes all 0; zeros word 0x76543210: field k = k, so column PACK[k] has zero k
        var a = new MemoryArchive().meta("quantization_config", CONFIG.formatted(1))
                .ints(P + ".qweight", new int[]{0}, 1, 1)
                .ints(P + ".qzeros", new int[]{0x76543210}, 1, 1)
                .shorts(P + ".scales", DType.F16, new short[]{
                        0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3C00, 0x3C00}, 1, 8);
        try (Arena arena = Arena.ofConfined()) {
            // column m's zero is the k with PACK[k] = m: m=0->0, 1->4, 2->1, 3->5, 4->2, 5->6, 6->3, 7->7
            assertThat(recover(a, DType.F32, arena).toArray(F32))
                    .containsExactly(0f, -4f, -1f, -5f, -2f, -6f, -3f, -7f);
        }
    }

    @ParameterizedTest(name = "in {0}, out {1}, group {2}, scales {3}")
    @CsvSource({
            "256, 256, 128, F16",
            "256, 96, 64, F16",
            "320, 72, 32, BF16",
            "300, 40, 100, F32",
            "64, 8, 64, F16",
    })
    void recoversGemmLayersBitExactly(int in, int out, int groupSize, String scaleType) {
        Layer l = Layer.random(in * 31L + out, in, out, groupSize, DType.standard(scaleType).orElseThrow());
        var a = l.addTo(new MemoryArchive().meta("quantization_config", CONFIG.formatted(groupSize)));
        try (Arena arena = Arena.ofConfined()) {
            for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) assertMatches(l, recover(a, t, arena), t);
        }
    }

    @Test
    void fillsAnyRowRangeWithTheSameBytesAsTheWholeTensor() {
        Layer l = Layer.random(3, 128, 88, 32, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", CONFIG.formatted(32)));
        Recovery r = claim(a).getFirst();
        assertThat(r.kernel().granule()).isEqualTo(128);
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller f = r.kernel().open(a, arena, DType.F16);
            MemorySegment whole = arena.allocate(88L * 128 * 2);
            f.fill(0, 88L * 128, whole);
            MemorySegment pieces = arena.allocate(88L * 128 * 2);
            int[] cuts = {0, 3, 13, 14, 40, 77, 88};
            for (int c = 0; c + 1 < cuts.length; c++) {
                long first = cuts[c] * 128L;
                long count = (cuts[c + 1] - cuts[c]) * 128L;
                f.fill(first, count, pieces.asSlice(first * 2, count * 2));
            }
            assertThat(pieces.mismatch(whole)).isEqualTo(-1);
        }
    }

    @Test
    void fillsTheSameBytesFromSeveralThreadsAtOnce() throws Exception {
        Layer l = Layer.random(12, 512, 256, 128, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", CONFIG.formatted(128)));
        Recovery r = claim(a).getFirst();
        try (Arena arena = Arena.ofShared()) {
            ChunkFiller f = r.kernel().open(a, arena, DType.BF16);
            long n = 256L * 512;
            MemorySegment whole = arena.allocate(n * 2);
            f.fill(0, n, whole);
            MemorySegment parallel = arena.allocate(n * 2);
            List<Thread> threads = new java.util.ArrayList<>();
            for (int k = 0; k < 4; k++) {
                long first = k * 64L * 512;
                long count = 64L * 512;
                threads.add(Thread.ofPlatform().start(() -> f.fill(first, count, parallel.asSlice(first * 2, count * 2))));
            }
            for (Thread t : threads) t.join();
            assertThat(parallel.mismatch(whole)).isEqualTo(-1);
        }
    }

    @Test
    void claimsTheGroupWithRolesShapeAndDescription() {
        var a = Layer.random(1, 256, 64, 128, DType.F16).addTo(new MemoryArchive().meta("quantization_config", CONFIG.formatted(128)));
        Recovery r = claim(a).getFirst();
        assertThat(r.outputName()).isEqualTo(P + ".weight");
        assertThat(r.outputShape()).isEqualTo(Shape.of(64, 256));
        assertThat(r.description()).isEqualTo("AWQ GEMM 4-bit, group 128, zero point");
        assertThat(r.inputs()).containsExactly(Map.entry(P + ".qweight", Role.QUANTIZED),
                Map.entry(P + ".scales", Role.SCALE), Map.entry(P + ".qzeros", Role.ZERO_POINT));
    }

    // ------------------------------------------------------------------ config discovery

    @Test
    void readsQuantConfigJsonBesideTheFile(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("quant_config.json"),
                "{\"zero_point\": true, \"q_group_size\": 64, \"w_bit\": 4, \"version\": \"GEMM\"}");
        Layer l = Layer.random(5, 128, 32, 64, DType.F16);
        var a = l.addTo(new MemoryArchive().at(dir.resolve("model.safetensors")));
        assertThat(claim(a).getFirst().description()).isEqualTo("AWQ GEMM 4-bit, group 64, zero point");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32);
        }
    }

    @Test
    void readsConfigJsonQuantizationConfigBesideTheFile(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("config.json"),
                "{\"architectures\": [\"LlamaForCausalLM\"], \"quantization_config\": " + CONFIG.formatted(32) + "}");
        Layer l = Layer.random(6, 96, 16, 32, DType.F16);
        var a = l.addTo(new MemoryArchive().at(dir.resolve("model.safetensors")));
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32);
        }
    }

    @Test
    void infersTheLayoutFromShapesWithoutConfig() {
        // scales 8x as wide as qweight and no g_idx: AWQ; 2 groups over 64 inputs -> group 32
        Layer l = Layer.random(7, 64, 32, 32, DType.F16);
        var a = l.addTo(new MemoryArchive());
        assertThat(claim(a).getFirst().description()).isEqualTo("AWQ GEMM 4-bit, group 32, zero point");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.BF16, arena), DType.BF16);
        }
    }

    @Test
    void namesTheMissingGroupSizeWhenShapesDoNotTell() {
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[50 * 2], 50, 2)
                .ints(P + ".qzeros", new int[3 * 2], 3, 2)
                .shorts(P + ".scales", DType.F16, new short[3 * 16], 3, 16);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("group_size");
    }

    // ------------------------------------------------------------------ GPTQ or AWQ

    @Test
    void leavesGptqShapedGroupsAlone() {
        // GPTQ: qweight [in/8, out], scales [groups, out]
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[8 * 32], 8, 32)
                .ints(P + ".qzeros", new int[2 * 4], 2, 4)
                .shorts(P + ".scales", DType.F16, new short[2 * 32], 2, 32);
        assertThat(claim(a)).isEmpty();
    }

    @Test
    void leavesGroupsWithGIdxAlone() {
        var a = Layer.random(1, 64, 32, 32, DType.F16).addTo(new MemoryArchive());
        a.ints(P + ".g_idx", new int[64], 64);
        assertThat(claim(a)).isEmpty();
    }

    @Test
    void leavesGroupsAloneWhenTheConfigSaysGptq() {
        var a = Layer.random(1, 64, 32, 32, DType.F16)
                .addTo(new MemoryArchive().meta("quantization_config", "{\"quant_method\":\"gptq\",\"bits\":4}"));
        assertThat(claim(a)).isEmpty();
    }

    @Test
    void refusesToGuessWhenShapesFitNeitherScheme() {
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[8 * 8], 8, 8)
                .ints(P + ".qzeros", new int[2], 2, 1)
                .shorts(P + ".scales", DType.F16, new short[2 * 16], 2, 16);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("quant_method").hasMessageContaining(P + ".qweight");
    }

    // ------------------------------------------------------------------ malformed and unsupported

    @Test
    void refusesLayersWiderThanTheArrayLimit() {
        var a = Layer.random(1, 256, 32, 64, DType.F16).addTo(new MemoryArchive().meta("quantization_config", CONFIG.formatted(64)));
        ParseLimits d = ParseLimits.defaults();
        var small = new ParseLimits(d.maxHeaderBytes(), d.maxTensors(), d.maxRank(), d.maxMetadataEntries(),
                d.maxStringBytes(), 255, d.maxNestingDepth(), d.maxPickleBytes(), d.maxPickleValues(),
                d.maxInflatedBytes(), d.maxInflationRatio());
        assertThatThrownBy(() -> new AwqDequantizer().claim(new ClaimContext(a, small)))
                .isInstanceOf(io.anamnesis.api.LimitExceededException.class).hasMessageContaining("in_features");
    }

    @Test
    void rejectsMoreGroupsThanInputs() {
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[4], 4, 1)
                .ints(P + ".qzeros", new int[5], 5, 1)
                .shorts(P + ".scales", DType.F16, new short[5 * 8], 5, 8);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".scales"));
    }

    @Test
    void refusesTheGemvLayout() {
        var a = Layer.random(1, 64, 32, 32, DType.F16).addTo(new MemoryArchive().meta("quantization_config",
                "{\"quant_method\":\"awq\",\"bits\":4,\"group_size\":32,\"version\":\"gemv\"}"));
        assertThatThrownBy(() -> claim(a)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("gemv").hasMessageContaining("GEMM");
    }

    @Test
    void refusesOtherBitWidths() {
        var a = Layer.random(1, 64, 32, 32, DType.F16).addTo(new MemoryArchive().meta("quantization_config",
                "{\"quant_method\":\"awq\",\"w_bit\":8,\"q_group_size\":32,\"version\":\"gemm\"}"));
        assertThatThrownBy(() -> claim(a)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("8 bits");
    }

    @Test
    void namesAMissingQzeros() {
        var a = new MemoryArchive().meta("quantization_config", CONFIG.formatted(32))
                .ints(P + ".qweight", new int[64 * 4], 64, 4)
                .shorts(P + ".scales", DType.F16, new short[2 * 32], 2, 32);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(P + ".qzeros")
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".qweight"));
    }

    @Test
    void rejectsQzerosOfTheWrongShape() {
        var a = new MemoryArchive().meta("quantization_config", CONFIG.formatted(32))
                .ints(P + ".qweight", new int[64 * 4], 64, 4)
                .ints(P + ".qzeros", new int[2 * 3], 2, 3)
                .shorts(P + ".scales", DType.F16, new short[2 * 32], 2, 32);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".qzeros"));
    }

    @Test
    void rejectsScalesThatDisagreeWithTheGroupSize() {
        var a = Layer.random(1, 128, 32, 32, DType.F16).addTo(new MemoryArchive().meta("quantization_config", CONFIG.formatted(64)));
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".scales"));
    }

    @Test
    void rejectsScalesNotEightTimesAsWideAsQweightUnderAnAwqConfig() {
        var a = new MemoryArchive().meta("quantization_config", CONFIG.formatted(32))
                .ints(P + ".qweight", new int[64 * 4], 64, 4)
                .ints(P + ".qzeros", new int[2 * 4], 2, 4)
                .shorts(P + ".scales", DType.F16, new short[2 * 4], 2, 4);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".scales"));
    }
}
