package io.anamnesis.quant.gguf;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.ErrorKind;
import io.anamnesis.api.ForgetOptions;
import io.anamnesis.api.InvalidRequestException;
import io.anamnesis.api.LossMeter;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Shape;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ForgetPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.quant.gguf.llama.GgmlType;
import org.junit.jupiter.api.Test;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The quantizer's plumbing with a stand-in encoder, so that it runs before ggml's encoders
 * exist: "q8_0 with d = 1", each block f16 1.0 then round(x) clamped to int8, which the real
 * Q8_0 decoder reads back as round(x). The real encoders are checked byte for byte against
 * ggml in their own tests and in the corpus.
 */
class GgufQuantizerTest {

    static final List<float[]> SEEN = Collections.synchronizedList(new ArrayList<>());

    static void fakeQ8(float[] src, int so, byte[] dst, int dOff, int rows, int perRow, float[] importance) {
        if (importance != null) SEEN.add(importance.clone());
        int blocks = rows * perRow / 32;
        for (int b = 0; b < blocks; b++) {
            dst[dOff + 34 * b] = 0x00;
            dst[dOff + 34 * b + 1] = 0x3C; // f16 1.0
            for (int i = 0; i < 32; i++) {
                dst[dOff + 34 * b + 2 + i] = (byte) Math.max(-127, Math.min(127, Math.round(src[so + 32 * b + i])));
            }
        }
    }

    static Optional<RowEncoder> fakes(GgmlType t) {
        return switch (t) {
            case F32 -> Optional.of(FloatEncoders::f32);
            case Q8_0 -> Optional.of(GgufQuantizerTest::fakeQ8);
            default -> Optional.empty();
        };
    }

    static Anamnesis amn() {
        return Anamnesis.of(List.of(), List.of(), List.of(new GgufDequantizer()), List.of(new GgufQuantizer(GgufQuantizerTest::fakes)));
    }

    static float[] ramp(int n, float start, float step) {
        float[] v = new float[n];
        for (int i = 0; i < n; i++) v[i] = start + i * step;
        return v;
    }

    /** A one-layer llama with tied embeddings, rows of 32. */
    static TestArchive tinyGguf() {
        return new TestArchive("gguf").meta("general.architecture", "llama").meta("llama.block_count", 1L)
                .meta("general.file_type", 0L)
                .f32("token_embd.weight", Shape.of(2, 32), ramp(64, -8, 0.25f))
                .f32("output_norm.weight", Shape.of(32), ramp(32, 1, 0))
                .f32("blk.0.attn_q.weight", Shape.of(2, 32), ramp(64, 0.25f, 0.5f))
                .f32("blk.0.attn_v.weight", Shape.of(2, 32), ramp(64, 3, -0.125f))
                .f32("blk.0.attn_norm.weight", Shape.of(32), ramp(32, 2, 0));
    }

    static byte[] produce(PlannedTensor t, long chunkElements) {
        try (Arena arena = Arena.ofConfined()) {
            ChunkFiller f = t.producer().open(arena);
            MemorySegment out = arena.allocate(Math.max(1, t.byteSize())).asSlice(0, t.byteSize());
            for (long first = 0; first < t.elementCount(); first += chunkElements) {
                long n = Math.min(chunkElements, t.elementCount() - first);
                f.fill(first, n, out.asSlice(t.dtype().byteSize(first), t.dtype().byteSize(n)));
            }
            return out.toArray(ValueLayout.JAVA_BYTE);
        }
    }

    static PlannedTensor tensor(ForgetPlan p, String name) {
        return p.tensors().stream().filter(t -> t.name().equals(name)).findFirst().orElseThrow();
    }

    /** The stand-in's bytes for one row of values, worked out from its definition. */
    static byte[] fakeBlocks(float[] v) {
        byte[] out = new byte[v.length / 32 * 34];
        fakeQ8(v, 0, out, 0, 1, v.length, null);
        return out;
    }

    @Test
    void aGgufModelComesOutInLlamaOrderWithItsFileTypeAndNormsCopied() {
        LossMeter loss = new LossMeter();
        ForgetPlan p = amn().planForget(tinyGguf(), "Q8_0", ForgetOptions.defaults(), loss);
        assertThat(p.tensors()).extracting(PlannedTensor::name).containsExactly("output_norm.weight", "token_embd.weight",
                "blk.0.attn_norm.weight", "blk.0.attn_q.weight", "blk.0.attn_v.weight");
        assertThat(p.tensors()).extracting(t -> t.dtype().name()).containsExactly("F32", "Q8_0", "F32", "Q8_0", "Q8_0");
        assertThat(p.typed()).containsExactly(Map.entry("general.quantization_version", MetaValue.u32(2)),
                Map.entry("general.file_type", MetaValue.u32(7)));
        assertThat(p.encodedCount()).isEqualTo(3);
        assertThat(p.decisions()).filteredOn(d -> d.tensor().equals("output_norm.weight"))
                .extracting(ForgetPlan.Decision::why).containsExactly("1-D tensors stay as they are");
        assertThat(p.warnings()).isEmpty();

        // blk.0.attn_q: 0.25, 0.75, 1.25, ...: round() is off by exactly 0.25 each time
        float[] q = ramp(64, 0.25f, 0.5f);
        assertThat(produce(tensor(p, "blk.0.attn_q.weight"), 32)).isEqualTo(fakeBlocks(q));
        // the norm is the stored bytes
        byte[] norm = produce(tensor(p, "output_norm.weight"), 32);
        assertThat(ByteBuffer.wrap(norm).order(ByteOrder.LITTLE_ENDIAN).getFloat(0)).isEqualTo(1f);
        LossMeter.Loss l = loss.perTensor().get("blk.0.attn_q.weight");
        assertThat(l.count()).isEqualTo(64);
        assertThat(l.maxAbs()).isEqualTo(0.25);
        assertThat(l.mae()).isEqualTo(0.25);
    }

    @Test
    void aMeterThatIsOffRecordsNothingAndChangesNoByte() {
        LossMeter off = LossMeter.off();
        assertThat(off.measures()).isFalse();
        ForgetPlan p = amn().planForget(tinyGguf(), "Q8_0", ForgetOptions.defaults(), off);
        float[] q = ramp(64, 0.25f, 0.5f);
        assertThat(produce(tensor(p, "blk.0.attn_q.weight"), 32)).isEqualTo(fakeBlocks(q));
        assertThat(off.perTensor()).isEmpty();
        assertThat(off.total()).isEqualTo(LossMeter.Loss.NONE);
        assertThat(new LossMeter().measures()).isTrue();
    }

    @Test
    void theBytesDoNotDependOnHowRowsAreChunked() {
        ForgetPlan p = amn().planForget(tinyGguf(), "q8_0", ForgetOptions.defaults(), new LossMeter());
        PlannedTensor v = tensor(p, "blk.0.attn_v.weight");
        assertThat(v.granule()).isEqualTo(32);
        assertThat(produce(v, 32)).isEqualTo(produce(v, 64));
        float[] all = ramp(64, 3, -0.125f);
        byte[] want = new byte[68];
        fakeQ8(all, 0, want, 0, 2, 32, null);
        assertThat(produce(v, 64)).isEqualTo(want);
    }

    @Test
    void aTypeWithoutAnEncoderIsRefusedUpFrontButItsLayoutIsPlanned() {
        TestArchive wide = new TestArchive("gguf").f32("token_embd.weight", Shape.of(2, 256), ramp(512, 0, 0.01f))
                .f32("blk.0.attn_q.weight", Shape.of(2, 256), ramp(512, 0, 0.01f))
                .f32("blk.0.ffn_up.weight", Shape.of(2, 32), ramp(64, 0, 0.01f));
        // Q4_K_M: the tied embeddings q6_K, attn_q q4_K, and rows of 32 fall back to q5_0: none has an encoder here
        assertThatThrownBy(() -> amn().planForget(wide, "q4_k_m", ForgetOptions.defaults(), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("needs q6_K, q4_K, q5_0")
                .hasMessageContaining("cannot encode yet");
        GgufQuantizer q = new GgufQuantizer(GgufQuantizerTest::fakes);
        Anamnesis layoutOnly = Anamnesis.of(List.of(), List.of(), List.of(), List.of(new LayoutOnly(q)));
        ForgetPlan p = layoutOnly.planForget(wide, "q4_k_m", ForgetOptions.defaults(), new LossMeter());
        assertThat(p.tensors()).extracting(t -> t.dtype().name()).containsExactly("Q6_K", "Q4_K", "Q5_0");
        assertThat(p.warnings()).containsExactly("1 of 3 tensors needed fallback quantization: their rows do not fit "
                + "the chosen type (blk.0.ffn_up.weight)");
        assertThatThrownBy(() -> produce(tensor(p, "blk.0.attn_q.weight"), 256))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("q4_K");
    }

    @Test
    void aTypeThatNeedsAnImportanceMatrixWithoutOneIsAUsageError() {
        TestArchive wide = new TestArchive("gguf").f32("blk.0.ffn_up.weight", Shape.of(2, 256), ramp(512, 0, 0.01f));
        // ggml's own requirement (ggml_quantize_requires_imatrix)
        assertThatThrownBy(() -> amn().planForget(wide, "ggml:iq2_xxs", ForgetOptions.defaults(), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("needs an importance matrix")
                .hasMessageContaining("'blk.0.ffn_up.weight'")
                .satisfies(e -> assertThat(((InvalidRequestException) e).kind()).isEqualTo(ErrorKind.USAGE));
        // llama.cpp's, for its file type
        assertThatThrownBy(() -> amn().planForget(wide, "iq2_xxs", ForgetOptions.defaults(), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("IQ2_XXS needs an importance matrix");
        // rows of 32 do not fit iq2_xxs (256): they fall back to iq4_nl, which needs none (but has no encoder here)
        assertThatThrownBy(() -> amn().planForget(tinyGguf(), "ggml:iq2_xxs", ForgetOptions.defaults(), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("iq4_nl");
    }

    @Test
    void importanceRowsGoToTheirExpertAndAWrongSizeNamesTheTensor() {
        SEEN.clear();
        TestArchive model = new TestArchive("gguf")
                .f32("blk.0.ffn_up_exps.weight", Shape.of(2, 1, 32), ramp(64, -4, 0.125f));
        TestArchive imatrix = new TestArchive("imatrix").f32("blk.0.ffn_up_exps.weight", Shape.of(64), ramp(64, 1, 1))
                .meta("ncall.blk.0.ffn_up_exps.weight", 1L);
        ForgetOptions opts = new ForgetOptions(Map.of(), Optional.of(imatrix), false, List.of());
        ForgetPlan p = amn().planForget(model, "ggml:q8_0", opts, new LossMeter());
        assertThat(p.typed()).containsEntry("quantize.imatrix.entries_count", MetaValue.u32(1))
                .doesNotContainKey("quantize.imatrix.chunks_count").doesNotContainKey("quantize.imatrix.dataset");
        produce(tensor(p, "blk.0.ffn_up_exps.weight"), 64);
        assertThat(SEEN).hasSize(2);
        assertThat(SEEN.get(0)).containsExactly(ramp(32, 1, 1));
        assertThat(SEEN.get(1)).containsExactly(ramp(32, 33, 1));

        TestArchive short_ = new TestArchive("imatrix").f32("blk.0.ffn_up_exps.weight", Shape.of(32), ramp(32, 1, 1));
        assertThatThrownBy(() -> amn().planForget(model, "ggml:q8_0",
                new ForgetOptions(Map.of(), Optional.of(short_), false, List.of()), new LossMeter()))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("'blk.0.ffn_up_exps.weight'")
                .hasMessageContaining("32 values").hasMessageContaining("needs 64");
    }

    @Test
    void tokenEmbeddingsWithAnImportanceRowOfTheWrongSizeAreQuantizedWithoutIt() {
        TestArchive imatrix = new TestArchive("imatrix").f32("token_embd.weight", Shape.of(8), ramp(8, 1, 1))
                .meta("ncall.token_embd.weight", 1L);
        ForgetPlan p = amn().planForget(tinyGguf(), "q8_0", new ForgetOptions(Map.of(), Optional.of(imatrix), false, List.of()),
                new LossMeter());
        assertThat(p.warnings()).anyMatch(w -> w.startsWith("token_embd.weight: the importance matrix holds 8 values"))
                .anyMatch(w -> w.contains("no entry for blk.0.attn_q.weight, blk.0.attn_v.weight"));
    }

    @Test
    void aSafetensorsModelKeepsItsNamesAndWritesVectorsAsF32() {
        ByteBuffer bf = ByteBuffer.allocate(64).order(ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 32; i++) bf.putShort((short) (Float.floatToRawIntBits(1 + i) >>> 16)); // exact in BF16
        TestArchive st = new TestArchive("safetensors").meta("format", "pt").meta("quantization_config", "{...}")
                .f32("model.layers.0.mlp.down_proj.weight", Shape.of(1, 64), ramp(64, 0, 0.5f))
                .f32("model.layers.0.mlp.up_proj.weight", Shape.of(2, 64), ramp(128, 0, 0.5f))
                .bytes("model.norm.weight", DType.BF16, Shape.of(32), bf.array());
        ForgetPlan p = amn().planForget(st, "q8_0", ForgetOptions.defaults(), new LossMeter());
        // [1, 64] is 1-D to ggml (ggml_n_dims): kept, as F32; the norm too
        assertThat(p.tensors()).extracting(PlannedTensor::name, t -> t.dtype().name()).containsExactly(
                org.assertj.core.groups.Tuple.tuple("model.layers.0.mlp.down_proj.weight", "F32"),
                org.assertj.core.groups.Tuple.tuple("model.layers.0.mlp.up_proj.weight", "Q8_0"),
                org.assertj.core.groups.Tuple.tuple("model.norm.weight", "F32"));
        assertThat(p.metadata()).containsExactly(Map.entry("format", "pt"));
        byte[] norm = produce(tensor(p, "model.norm.weight"), 32);
        assertThat(ByteBuffer.wrap(norm).order(ByteOrder.LITTLE_ENDIAN).getFloat(4 * 31)).isEqualTo(32f);
    }

    @Test
    void aRecoveredBlockTensorIsRequantizedAndOneOfTheTargetTypeCopied() {
        byte[] block = new byte[34];
        block[1] = 0x40; // d = f16 2.0
        for (int i = 0; i < 32; i++) block[2 + i] = (byte) (i - 16);
        TestArchive model = new TestArchive("gguf").bytes("blk.0.attn_q.weight", new DType("Q8_0", DType.Kind.QUANTIZED, 32, 34),
                Shape.of(2, 32), concat(block, block));
        ForgetPlan same = amn().planForget(model, "ggml:q8_0", ForgetOptions.defaults(), new LossMeter());
        assertThat(same.encodedCount()).isZero();
        assertThat(produce(same.tensors().getFirst(), 32)).isEqualTo(concat(block, block));

        ForgetPlan f32 = amn().planForget(model, "ggml:f32", ForgetOptions.defaults(), new LossMeter());
        assertThat(f32.warnings()).anyMatch(w -> w.startsWith("requantized from q8_0"));
        ByteBuffer out = ByteBuffer.wrap(produce(f32.tensors().getFirst(), 32)).order(ByteOrder.LITTLE_ENDIAN);
        assertThat(out.getFloat(0)).isEqualTo(-32f); // 2.0 x -16
        assertThat(out.getFloat(4 * 31)).isEqualTo(30f);
    }

    @Test
    void aNonFloatTensorToQuantizeIsUnsupportedAndKeepLeavesIt() {
        TestArchive model = new TestArchive("gguf").bytes("blk.0.ids.weight", DType.I32, Shape.of(2, 32), new byte[256]);
        assertThatThrownBy(() -> amn().planForget(model, "q8_0", ForgetOptions.defaults(), new LossMeter()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("'blk.0.ids.weight'")
                .hasMessageContaining("I32");
        ForgetPlan kept = amn().planForget(model, "q8_0",
                new ForgetOptions(Map.of(), Optional.empty(), false, List.of(Pattern.compile("ids"))), new LossMeter());
        assertThat(kept.decisions()).extracting(ForgetPlan.Decision::why).containsExactly("--keep");
        assertThat(kept.tensors().getFirst().dtype()).isEqualTo(DType.I32);
    }

    /** ggml aborts (GGML_ASSERT in its grid search) on a NaN in an IQ2_S row; the forget path names the tensor instead. */
    @Test
    void aRowGgmlAbortsOnIsUnsupportedNamingTheTensor() {
        float[] v = ramp(512, -1, 1f / 256);
        v[300] = Float.NaN;
        TestArchive model = new TestArchive("gguf").meta("general.architecture", "llama")
                .f32("blk.0.attn_q.weight", Shape.of(2, 256), v);
        Anamnesis real = Anamnesis.of(List.of(), List.of(), List.of(new GgufDequantizer()), List.of(new GgufQuantizer()));
        ForgetPlan p = real.planForget(model, "ggml:iq2_s", ForgetOptions.defaults(), new LossMeter());
        assertThatThrownBy(() -> produce(tensor(p, "blk.0.attn_q.weight"), 256))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("'blk.0.attn_q.weight'")
                .hasMessageContaining("rows 1..1").hasMessageContaining("iq2_s").hasMessageContaining("ggml aborts");
    }

    @Test
    void schemeSettingsAreAUsageError() {
        assertThatThrownBy(() -> amn().planForget(tinyGguf(), "q8_0",
                new ForgetOptions(Map.of("block-size", "64"), Optional.empty(), false, List.of()), new LossMeter()))
                .isInstanceOf(InvalidRequestException.class).hasMessageContaining("--block-size");
    }

    @Test
    void itTakesEveryLlamaQuantizeNameAndTheGgmlTypes() {
        GgufQuantizer q = new GgufQuantizer();
        assertThat(q.targets().keySet()).contains("q4_k_m", "q2_k_s", "iq3_xs", "mxfp4_moe", "nvfp4", "q2_0", "ggml:q4_k");
        assertThat(q.targets().get("q4_k")).isEqualTo("alias for Q4_K_M");
        assertThat(GgufQuantizer.canEncode("f32")).isTrue();
        assertThat(GgufQuantizer.canEncode("no_such")).isFalse();
    }

    static byte[] concat(byte[] a, byte[] b) {
        byte[] c = java.util.Arrays.copyOf(a, a.length + b.length);
        System.arraycopy(b, 0, c, a.length, b.length);
        return c;
    }

    /** A quantizer that plans the layout only, as a dry run would. */
    record LayoutOnly(GgufQuantizer q) implements io.anamnesis.api.spi.Quantizer {
        @Override public String scheme() { return q.scheme(); }
        @Override public String description() { return q.description(); }
        @Override public String format() { return q.format(); }
        @Override public java.util.SequencedMap<String, String> targets() { return q.targets(); }
        @Override public ForgetPlan plan(io.anamnesis.api.spi.ForgetRequest r) { return q.planLayout(r); }
    }
}
