package io.anamnesis.quant.gptq;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.RecoveryPlan;
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

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GptqDequantizerTest {
    static final String P = "model.layers.0.mlp.up_proj";
    static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    static final ValueLayout.OfShort I16 = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    static List<Recovery> claim(MemoryArchive a) {
        return new GptqDequantizer().claim(new ClaimContext(a, ParseLimits.defaults()));
    }

    static MemorySegment recover(MemoryArchive a, DType target, Arena arena) {
        RecoveryPlan plan = Anamnesis.of(List.of(), List.of(), List.of(new GptqDequantizer())).plan(a, target);
        return plan.materialize(P + ".weight", arena);
    }

    static String config(int bits, int groupSize, boolean descAct, String format) {
        return "{\"quant_method\":\"gptq\",\"bits\":" + bits + ",\"group_size\":" + groupSize + ",\"desc_act\":" + descAct
                + (format == null ? "" : ",\"checkpoint_format\":\"" + format + "\"") + "}";
    }

    /** Round-to-nearest-even F32 to BF16, as the corpus README states it. */
    static short bf16(float f) {
        int b = Float.floatToRawIntBits(f);
        return (short) ((b + 0x7FFF + ((b >>> 16) & 1)) >>> 16);
    }

    static void assertMatches(GptqLayer l, MemorySegment got, DType target, int zeroOffset) {
        for (int o = 0; o < l.out; o++) {
            for (int i = 0; i < l.in; i++) {
                long e = (long) o * l.in + i;
                float want = l.expected(o, i, zeroOffset);
                if (target.equals(DType.F32)) {
                    int g = Float.floatToRawIntBits(got.get(F32, e * 4));
                    if (g != Float.floatToRawIntBits(want)) {
                        throw new AssertionError("W[" + o + "][" + i + "] = " + Float.intBitsToFloat(g) + ", expected " + want);
                    }
                } else {
                    short w = target.equals(DType.BF16) ? bf16(want) : Float.floatToFloat16(want);
                    short g = got.get(I16, e * 2);
                    if (g != w) {
                        throw new AssertionError(target + " W[" + o + "][" + i + "] = 0x" + Integer.toHexString(g & 0xFFFF)
                                + ", expected 0x" + Integer.toHexString(w & 0xFFFF) + " (from " + want + ")");
                    }
                }
            }
        }
    }

    @Test
    void decodesAHandPackedFourBitWord() {
        // one output column, 8 inputs: codes 0..7 in one word (0x76543210), v1 stored zero 7 -> zero 8,
        // scale 0.5: W = 0.5 * (i - 8) = -4, -3.5, ..., -0.5
        var a = new MemoryArchive().meta("quantization_config", config(4, -1, false, "gptq"))
                .ints(P + ".qweight", new int[]{0x76543210}, 1, 1)
                .ints(P + ".qzeros", new int[]{7}, 1, 1)
                .shorts(P + ".scales", DType.F16, new short[]{Float.floatToFloat16(0.5f)}, 1, 1);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment w = recover(a, DType.F32, arena);
            assertThat(w.toArray(F32)).containsExactly(-4f, -3.5f, -3f, -2.5f, -2f, -1.5f, -1f, -0.5f);
        }
    }

    @Test
    void decodesAHandPackedThreeBitTripletAcrossWordBoundaries() {
        // 32 inputs of one column, code of input j = j % 8. Input 10 (code 2 = 0b010) has its low two
        // bits at the top of word 0 and its high bit at bit 0 of word 1; input 21 (code 5 = 0b101)
        // has its low bit at bit 31 of word 1 and its high two bits at bits 0-1 of word 2.
        int[] codes = new int[32];
        for (int j = 0; j < 32; j++) codes[j] = j % 8;
        int w0 = 0, w1 = 0, w2 = 0;
        for (int j = 0; j < 10; j++) w0 |= codes[j] << (3 * j);
        w0 |= (2 & 3) << 30;
        w1 |= 0; // high bit of code 2 is 0
        for (int j = 11; j < 21; j++) w1 |= codes[j] << (3 * (j - 11) + 1);
        w1 |= 1 << 31; // low bit of code 5
        w2 |= 0b10;    // high two bits of code 5 (0b10)
        for (int j = 22; j < 32; j++) w2 |= codes[j] << (3 * (j - 22) + 2);
        // v2 zero 4 (as stored), scale 1: W = code - 4
        var a = new MemoryArchive().meta("quantization_config", config(3, 32, false, "gptq_v2"))
                .ints(P + ".qweight", new int[]{w0, w1, w2}, 3, 1)
                .ints(P + ".qzeros", new int[]{4}, 1, 1)
                .shorts(P + ".scales", DType.F16, new short[]{Float.floatToFloat16(1f)}, 1, 1);
        // qzeros for one 3-bit column needs one word; the layer has 32 inputs, one output
        try (Arena arena = Arena.ofConfined()) {
            float[] got = recover(a, DType.F32, arena).toArray(F32);
            for (int j = 0; j < 32; j++) assertThat(got[j]).as("input %d", j).isEqualTo((float) (j % 8 - 4));
        }
    }

    @ParameterizedTest(name = "{0}-bit, group {1}, act-order {2}, sym {3}, {4}, {5}")
    @CsvSource({
            "2, 32, false, true, gptq, F16",
            "2, 128, true, false, gptq_v2, F16",
            "3, 32, false, true, gptq, F16",
            "3, 64, true, false, gptq, BF16",
            "3, -1, false, false, gptq_v2, F16",
            "4, 32, false, false, gptq, F16",
            "4, 64, true, true, gptq, F16",
            "4, 128, false, true, gptq, BF16",
            "4, -1, false, false, gptq_v2, F16",
            "4, 128, true, false, gptq_v2, F16",
            "8, 32, true, false, gptq, F16",
            "8, 64, false, true, gptq_v2, F16",
            "8, 128, false, true, gptq, F16",
            "8, -1, true, true, gptq, BF16",
    })
    void recoversEveryVariantBitExactly(int bits, int groupSize, boolean actOrder, boolean sym, String format,
                                        String scaleType) {
        // 320 inputs cross the 256-input tile, 96 outputs cross the 32-row tile
        GptqLayer l = GptqLayer.random(bits * 1000L + groupSize, bits, 320, 96, groupSize, actOrder, sym,
                DType.standard(scaleType).orElseThrow());
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(bits, groupSize, actOrder, format)), P, true);
        int zeroOffset = format.equals("gptq") ? 1 : 0;
        try (Arena arena = Arena.ofConfined()) {
            for (DType t : List.of(DType.F32, DType.BF16, DType.F16)) assertMatches(l, recover(a, t, arena), t, zeroOffset);
        }
    }

    @Test
    void honoursAPermutedGIdxInsteadOfSequentialGroups() {
        GptqLayer l = GptqLayer.random(7, 4, 256, 64, 32, true, false, DType.F16);
        // the permutation really scatters groups: some row's group differs from i / 32
        boolean scattered = false;
        for (int i = 0; i < l.in; i++) scattered |= l.gIdx[i] != i / 32;
        assertThat(scattered).isTrue();
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 32, true, "gptq")), P, true);
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 1);
        }
        assertThat(claim(a).getFirst().description()).isEqualTo("GPTQ 4-bit, group 32, act-order, v1 zeros");
    }

    @Test
    void recoversOddShapesWithoutGIdx() {
        // 40 inputs (5 words of 4-bit), 20 outputs (qzeros: 80 bits -> 3 words), group size 8 ... 5 groups
        GptqLayer l = GptqLayer.random(11, 4, 40, 20, 8, false, false, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 8, false, null)), P, false);
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 1);
            assertMatches(l, recover(a, DType.BF16, arena), DType.BF16, 1);
        }
    }

    @Test
    void fillsAnyRowRangeWithTheSameBytesAsTheWholeTensor() {
        GptqLayer l = GptqLayer.random(5, 4, 256, 100, 64, true, false, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 64, true, "gptq")), P, true);
        Recovery r = claim(a).getFirst();
        assertThat(r.kernel().granule()).isEqualTo(256);
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller f = r.kernel().open(a, arena, DType.BF16);
            MemorySegment whole = arena.allocate(100L * 256 * 2);
            f.fill(0, 100L * 256, whole);
            MemorySegment pieces = arena.allocate(100L * 256 * 2);
            int[] cuts = {0, 1, 2, 33, 34, 70, 99, 100};
            for (int c = 0; c + 1 < cuts.length; c++) {
                long first = cuts[c] * 256L;
                long count = (cuts[c + 1] - cuts[c]) * 256L;
                f.fill(first, count, pieces.asSlice(first * 2, count * 2));
            }
            assertThat(pieces.mismatch(whole)).isEqualTo(-1);
        }
    }

    @Test
    void fillsTheSameBytesFromSeveralThreadsAtOnce() throws Exception {
        GptqLayer l = GptqLayer.random(12, 4, 512, 160, 128, true, false, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 128, true, "gptq")), P, true);
        Recovery r = claim(a).getFirst();
        try (Arena arena = Arena.ofShared()) {
            ChunkFiller f = r.kernel().open(a, arena, DType.BF16);
            long n = 160L * 512;
            MemorySegment whole = arena.allocate(n * 2);
            f.fill(0, n, whole);
            MemorySegment parallel = arena.allocate(n * 2);
            List<Thread> threads = new java.util.ArrayList<>();
            for (int k = 0; k < 4; k++) {
                long first = k * 40L * 512;
                long count = 40L * 512;
                threads.add(Thread.ofPlatform().start(() -> f.fill(first, count, parallel.asSlice(first * 2, count * 2))));
            }
            for (Thread t : threads) t.join();
            assertThat(parallel.mismatch(whole)).isEqualTo(-1);
        }
    }

    @Test
    void claimsTheGroupWithRolesShapeAndDescription() {
        GptqLayer l = GptqLayer.random(1, 8, 256, 32, 128, false, true, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(8, 128, false, "gptq")), P, true);
        a.shorts(P + ".bias", DType.F16, new short[32], 32);
        Recovery r = claim(a).getFirst();
        assertThat(r.outputName()).isEqualTo(P + ".weight");
        assertThat(r.outputShape()).isEqualTo(Shape.of(32, 256));
        assertThat(r.scheme()).isEqualTo("gptq");
        assertThat(r.description()).isEqualTo("GPTQ 8-bit, group 128, v1 zeros");
        assertThat(r.inputs()).containsExactly(
                java.util.Map.entry(P + ".qweight", Role.QUANTIZED), java.util.Map.entry(P + ".scales", Role.SCALE),
                java.util.Map.entry(P + ".qzeros", Role.ZERO_POINT), java.util.Map.entry(P + ".g_idx", Role.G_IDX));
    }

    // ------------------------------------------------------------------ config discovery

    @Test
    void readsAutoGptqFlatMetadataKeys() {
        GptqLayer l = GptqLayer.random(2, 4, 64, 32, 32, false, true, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("gptq_bits", "4").meta("gptq_group_size", "32"), P, true);
        assertThat(claim(a).getFirst().description()).isEqualTo("GPTQ 4-bit, group 32, v1 zeros");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 1);
        }
    }

    @Test
    void readsQuantizeConfigJsonBesideTheFile(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("quantize_config.json"),
                "{\"bits\": 2, \"group_size\": 64, \"desc_act\": false, \"sym\": false, \"checkpoint_format\": \"gptq_v2\"}");
        GptqLayer l = GptqLayer.random(3, 2, 128, 32, 64, false, false, DType.F16);
        var a = l.addTo(new MemoryArchive().at(dir.resolve("model.safetensors")), P, false);
        assertThat(claim(a).getFirst().description()).isEqualTo("GPTQ 2-bit, group 64, v2 zeros");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 0);
        }
    }

    @Test
    void readsConfigJsonQuantizationConfigBesideTheFile(@TempDir Path dir) throws Exception {
        Files.writeString(dir.resolve("config.json"), "{\"model_type\": \"llama\", \"quantization_config\": "
                + config(8, 32, true, "gptq") + "}");
        GptqLayer l = GptqLayer.random(4, 8, 64, 32, 32, true, false, DType.F16);
        var a = l.addTo(new MemoryArchive().at(dir.resolve("model.safetensors")), P, true);
        assertThat(claim(a).getFirst().description()).isEqualTo("GPTQ 8-bit, group 32, act-order, v1 zeros");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 1);
        }
    }

    @Test
    void infersBitsAndGroupSizeFromShapesWithoutConfig() {
        // qweight 32 rows for 256 g_idx entries -> 4 bits; 4 scale rows over 256 inputs -> group 64
        GptqLayer l = GptqLayer.random(6, 4, 256, 32, 64, false, false, DType.F16);
        var a = l.addTo(new MemoryArchive(), P, true);
        assertThat(claim(a).getFirst().description()).isEqualTo("GPTQ 4-bit, group 64, v1 zeros");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 1);
        }
    }

    @Test
    void infersBitsFromQzerosWhenThereIsNoGIdx() {
        // scales as wide as qweight: GPTQ by shape; qzeros 8 words for 32 outputs -> 8 bits; one group
        GptqLayer l = GptqLayer.random(8, 8, 64, 32, -1, false, true, DType.F16);
        var a = l.addTo(new MemoryArchive(), P, false);
        assertThat(claim(a).getFirst().description()).isEqualTo("GPTQ 8-bit, one group, v1 zeros");
        try (Arena arena = Arena.ofConfined()) {
            assertMatches(l, recover(a, DType.F32, arena), DType.F32, 1);
        }
    }

    @Test
    void namesTheMissingBitsWhenShapesDoNotTell() {
        // 20 outputs in 3 zero words: 96 bits / 20 is not a whole width
        GptqLayer l = GptqLayer.random(9, 4, 40, 20, 8, false, false, DType.F16);
        var a = l.addTo(new MemoryArchive(), P, false);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("bits").hasMessageContaining(P + ".qweight");
    }

    @Test
    void namesTheMissingGroupSizeWhenShapesDoNotTell() {
        // 3 groups over 64 inputs, no g_idx and no config: no even split
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[8 * 8], 8, 8)
                .ints(P + ".qzeros", new int[3], 3, 1)
                .shorts(P + ".scales", DType.F16, new short[3 * 8], 3, 8);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("group_size");
    }

    @Test
    void rejectsMalformedConfigJson() {
        var a = GptqLayer.random(1, 4, 64, 32, 32, false, true, DType.F16)
                .addTo(new MemoryArchive().meta("quantization_config", "{\"bits\": 4,"), P, true);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class).hasMessageContaining("quantization_config");
    }

    // ------------------------------------------------------------------ GPTQ or AWQ

    @Test
    void leavesAwqShapedGroupsAlone() {
        // AWQ GEMM: qweight [in, out/8], scales [groups, out]
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[64 * 4], 64, 4)
                .ints(P + ".qzeros", new int[2 * 4], 2, 4)
                .shorts(P + ".scales", DType.F16, new short[2 * 32], 2, 32);
        assertThat(claim(a)).isEmpty();
    }

    @Test
    void leavesGroupsAloneWhenTheConfigSaysAwq() {
        var a = GptqLayer.random(1, 4, 64, 32, 32, false, true, DType.F16)
                .addTo(new MemoryArchive().meta("quantization_config", "{\"quant_method\":\"awq\",\"bits\":4}"), P, true);
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
    void namesAMissingQzeros() {
        var a = new MemoryArchive().meta("quantization_config", config(4, 32, false, "gptq"))
                .ints(P + ".qweight", new int[8 * 8], 8, 8)
                .shorts(P + ".scales", DType.F16, new short[2 * 8], 2, 8);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining(P + ".qzeros").satisfies(e ->
                        assertThat(((AnamnesisException) e).tensor()).contains(P + ".qweight"));
    }

    @Test
    void rejectsScalesThatDisagreeWithTheGroupSize() {
        GptqLayer l = GptqLayer.random(1, 4, 256, 32, 64, false, true, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 128, false, "gptq")), P, true);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".scales"));
    }

    @Test
    void rejectsQweightRowsThatDisagreeWithBits() {
        GptqLayer l = GptqLayer.random(1, 4, 256, 32, 64, false, true, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(8, 64, false, "gptq")), P, true);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).isPresent());
    }

    @Test
    void rejectsAnOutOfRangeGIdxWhenOpened() {
        GptqLayer l = GptqLayer.random(1, 4, 64, 32, 32, false, true, DType.F16);
        l.gIdx[17] = 2; // only groups 0 and 1 exist
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 32, false, "gptq")), P, true);
        Recovery r = claim(a).getFirst();
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> r.kernel().open(a, arena, DType.BF16)).isInstanceOf(MalformedFileException.class)
                    .hasMessageContaining("g_idx[17] = 2")
                    .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".g_idx"));
        }
    }

    @Test
    void refusesUnsupportedBitsAndCheckpointFormats() {
        GptqLayer l = GptqLayer.random(1, 4, 64, 32, 32, false, true, DType.F16);
        var fiveBits = l.addTo(new MemoryArchive().meta("quantization_config", config(5, 32, false, "gptq")), P, true);
        assertThatThrownBy(() -> claim(fiveBits)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("5 bits");
        var marlin = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 32, false, "marlin")), P, true);
        assertThatThrownBy(() -> claim(marlin)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("marlin");
    }

    @Test
    void refusesLayersWiderThanTheArrayLimit() {
        GptqLayer l = GptqLayer.random(1, 4, 256, 32, 64, false, true, DType.F16);
        var a = l.addTo(new MemoryArchive().meta("quantization_config", config(4, 64, false, "gptq")), P, true);
        ParseLimits d = ParseLimits.defaults();
        var small = new ParseLimits(d.maxHeaderBytes(), d.maxTensors(), d.maxRank(), d.maxMetadataEntries(),
                d.maxStringBytes(), 255, d.maxNestingDepth(), d.maxPickleBytes(), d.maxPickleValues(),
                d.maxInflatedBytes(), d.maxInflationRatio());
        assertThatThrownBy(() -> new GptqDequantizer().claim(new ClaimContext(a, small)))
                .isInstanceOf(io.anamnesis.api.LimitExceededException.class).hasMessageContaining("in_features");
    }

    @Test
    void rejectsMoreGroupsThanInputs() {
        // 8 inputs (one 4-bit word per column) but 9 scale rows, no config
        var a = new MemoryArchive()
                .ints(P + ".qweight", new int[8], 1, 8)
                .ints(P + ".qzeros", new int[9], 9, 1)
                .shorts(P + ".scales", DType.F16, new short[9 * 8], 9, 8)
                .ints(P + ".g_idx", new int[8], 8);
        assertThatThrownBy(() -> claim(a)).isInstanceOf(MalformedFileException.class)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor()).contains(P + ".scales"));
    }

    @Test
    void ignoresArchivesWithoutQweight() {
        var a = new MemoryArchive().shorts("model.norm.weight", DType.F16, new short[4], 4);
        assertThat(claim(a)).isEmpty();
    }
}
