package io.anamnesis.format.gguf;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Role;
import io.anamnesis.api.numeric.LittleEndian;
import io.anamnesis.api.spi.ChunkFiller;
import io.anamnesis.api.spi.ClaimContext;
import io.anamnesis.api.spi.Dequantizer;
import io.anamnesis.api.spi.Recovery;
import io.anamnesis.api.spi.RecoveryKernel;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static io.anamnesis.format.gguf.GgufBytes.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GgufWriterTest {
    @TempDir
    Path dir;

    private static byte[] seq(int n, int mul) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) (i * mul + 3);
        return b;
    }

    /** A tensor whose bytes are {@code data}, produced chunk by chunk. */
    private static PlannedTensor tensor(String name, DType dtype, Shape shape, byte[] data) {
        return new PlannedTensor(name, dtype, shape, dtype.blockElements(), arena -> {
            MemorySegment src = MemorySegment.ofArray(data);
            return (first, count, dest) -> MemorySegment.copy(src, dtype.byteSize(first), dest, 0, dest.byteSize());
        });
    }

    /** Every tensor of an archive passed through as it is stored. */
    private static List<PlannedTensor> passthrough(TensorArchive a) {
        List<PlannedTensor> out = new ArrayList<>();
        for (TensorEntry e : a.tensors()) {
            out.add(new PlannedTensor(e.name(), e.dtype(), e.shape(), e.dtype().blockElements(), arena -> {
                MemorySegment src = a.data(e, arena);
                return (first, count, dest) -> MemorySegment.copy(src, e.dtype().byteSize(first), dest, 0, dest.byteSize());
            }));
        }
        return out;
    }

    /** A GGUF v3 file laid out as the spec and gguf-py lay it out: every tensor padded to the alignment. */
    private static GgufBytes handBuilt(byte[] f32, byte[] q8, byte[] i16) {
        return handBuilt(f32, 8, q8, i16, 7, null);
    }

    /**
     * {@code fileType} is general.file_type: 7 is llama.cpp's MOSTLY_Q8_0, 0 ALL_F32;
     * {@code recoveredFrom}, when not null, the string key a recovered file gets last.
     */
    private static GgufBytes handBuilt(byte[] f32, int qType, byte[] q, byte[] i16, int fileType, String recoveredFrom) {
        GgufBytes b = v3().header(3, recoveredFrom == null ? 8 : 9)
                .key("general.file_type", UINT32).u32(fileType)
                .key("general.architecture", STRING).str("llama")
                .key("general.alignment", UINT32).u32(64)
                .key("llama.rope.scale", FLOAT32).f32(0.25f)
                .key("u64", UINT64).u64(-2L)
                .key("flag", BOOL).u8(0)
                .key("tokenizer.ggml.tokens", ARRAY).array(STRING, 3).str("<s>").str("a").str("ü")
                .key("nested", ARRAY).array(ARRAY, 1).array(FLOAT64, 2).f64(1.5).f64(-0.0);
        if (recoveredFrom != null) b.key("anamnesis.recovered_from", STRING).str(recoveredFrom);
        b.tensor("tok_embd.weight", new long[]{3, 2}, 0, 0)
                .tensor("blk.0.attn_q.weight", new long[]{64, 1}, qType, 64)
                .tensor("norm", new long[]{5}, 25, (64 + q.length + 63) / 64 * 64);
        return b.pad(64).raw(f32).pad(64).raw(q).pad(64).raw(i16).pad(64);
    }

    /** Two Q8_0 blocks: d = 0.5 (f16 0x3800) with q = i - 16, then d = -2 (f16 0xC000) with q = 3 - i. */
    private static byte[] q8Blocks() {
        byte[] b = new byte[68];
        b[0] = 0x00;
        b[1] = 0x38;
        for (int i = 0; i < 32; i++) b[2 + i] = (byte) (i - 16);
        b[34] = 0x00;
        b[35] = (byte) 0xC0;
        for (int i = 0; i < 32; i++) b[36 + i] = (byte) (3 - i);
        return b;
    }

    /** The Q8_0 formula y = d * q worked out for {@link #q8Blocks}, as little-endian F32 bytes. */
    private static byte[] q8BlocksAsF32() {
        java.nio.ByteBuffer out = java.nio.ByteBuffer.allocate(256).order(java.nio.ByteOrder.LITTLE_ENDIAN);
        for (int i = 0; i < 32; i++) out.putFloat(0.5f * (i - 16));
        for (int i = 0; i < 32; i++) out.putFloat(-2f * (3 - i));
        return out.array();
    }

    /** Stands in for quant-gguf: recovers Q8_0 tensors (y = f16 d * int8 q per block of 32) to F32. */
    private static final class Q8_0ToF32 implements Dequantizer {
        @Override
        public String scheme() {
            return "gguf";
        }

        @Override
        public String description() {
            return "test Q8_0";
        }

        @Override
        public List<Recovery> claim(ClaimContext context) {
            List<Recovery> out = new ArrayList<>();
            for (TensorEntry e : context.archive().tensors()) {
                if (!e.dtype().name().equals("Q8_0")) continue;
                out.add(new Recovery(e.name(), e.shape(), "gguf", "Q8_0", Map.of(e.name(), Role.QUANTIZED), new RecoveryKernel() {
                    @Override
                    public long granule() {
                        return 32;
                    }

                    @Override
                    public ChunkFiller open(TensorArchive archive, Arena arena, DType target) {
                        MemorySegment src = archive.data(e, arena);
                        return (first, count, dest) -> {
                            for (long i = 0; i < count; i++) {
                                long el = first + i, block = el / 32 * 34;
                                float d = Float.float16ToFloat(src.get(LittleEndian.I16, block));
                                byte q = src.get(ValueLayout.JAVA_BYTE, block + 2 + el % 32);
                                dest.set(LittleEndian.F32, 4 * i, d * q);
                            }
                        };
                    }
                }));
            }
            return out;
        }
    }

    @Test
    void rewritesAGgufSourceByteForByteWithItsTypedMetadata() throws IOException {
        byte[] f32 = seq(24, 5), q8 = seq(68, 11), i16 = seq(10, 13);
        byte[] original = handBuilt(f32, q8, i16).bytes();
        Path in = Files.write(dir.resolve("in.gguf"), original);
        Path out = dir.resolve("out.gguf");
        try (TensorArchive a = new GgufReader().open(in, io.anamnesis.api.ParseLimits.defaults())) {
            new GgufWriter().write(new OutputPlan(Optional.of(a), a.metadata(), passthrough(a)), out, WriteOptions.threads(2));
        }
        assertThat(Files.readAllBytes(out)).isEqualTo(original);
        try (TensorArchive b = new GgufReader().open(out, io.anamnesis.api.ParseLimits.defaults());
             Arena arena = Arena.ofConfined()) {
            assertThat(((GgufArchive) b).header().metadata().get("llama.rope.scale"))
                    .isEqualTo(new GgufValue(GgufValueType.FLOAT32, 0.25f));
            assertThat(b.data(b.tensor("norm").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(i16);
        }
    }

    @Test
    void rewritesABigEndianSourceAsLittleEndian() throws IOException {
        GgufBytes big = new GgufBytes(java.nio.ByteOrder.BIG_ENDIAN, 3).header(1, 3)
                .key("n", UINT32).u32(7)
                .key("a", ARRAY).array(INT16, 2).u16(1).u16(0xFFFF)
                .key("t", ARRAY).array(STRING, 1).str("tok")
                .tensor("w", new long[]{2}, 0, 0).pad(32)
                .raw((byte) 0x3F, (byte) 0x80, (byte) 0, (byte) 0, (byte) 0x40, (byte) 0, (byte) 0, (byte) 0).pad(32);
        Path in = Files.write(dir.resolve("be.gguf"), big.bytes());
        Path out = dir.resolve("le.gguf");
        try (TensorArchive a = new GgufReader().open(in, io.anamnesis.api.ParseLimits.defaults())) {
            new GgufWriter().write(new OutputPlan(Optional.of(a), a.metadata(), passthrough(a)), out, WriteOptions.threads(1));
        }
        byte[] little = v3().header(1, 3)
                .key("n", UINT32).u32(7)
                .key("a", ARRAY).array(INT16, 2).u16(1).u16(0xFFFF)
                .key("t", ARRAY).array(STRING, 1).str("tok")
                .tensor("w", new long[]{2}, 0, 0).pad(32)
                .f32(1f).f32(2f).pad(32).bytes();
        assertThat(Files.readAllBytes(out)).isEqualTo(little);
    }

    @Test
    void writesStringMetadataAndReversedShapesFromAnyOtherSource() throws IOException {
        byte[] f16 = seq(12, 7);
        Path out = dir.resolve("o.gguf");
        new GgufWriter().write(new OutputPlan(Optional.empty(), Map.of("format", "pt"),
                List.of(tensor("w", DType.F16, Shape.of(2, 3), f16))), out, WriteOptions.threads(1));
        byte[] expected = v3().header(1, 1).key("format", STRING).str("pt")
                .tensor("w", new long[]{3, 2}, 1, 0).pad(32).raw(f16).pad(32).bytes();
        assertThat(Files.readAllBytes(out)).isEqualTo(expected);
    }

    @Test
    void typedValuesOfThePlanAreWrittenWithTheirTypesOverStringMetadata() throws IOException {
        byte[] f16 = seq(4, 3);
        Path out = dir.resolve("typed.gguf");
        Map<String, io.anamnesis.api.MetaValue> typed = new java.util.LinkedHashMap<>();
        typed.put("general.file_type", io.anamnesis.api.MetaValue.u32(15));
        typed.put("x.eps", io.anamnesis.api.MetaValue.Real.f32(1e-5f));
        typed.put("x.ids", new io.anamnesis.api.MetaValue.Array(io.anamnesis.api.MetaValue.Type.I32,
                List.of(io.anamnesis.api.MetaValue.i32(-1), io.anamnesis.api.MetaValue.i32(7))));
        Map<String, String> strings = new java.util.LinkedHashMap<>();
        strings.put("general.file_type", "text");
        strings.put("general.name", "n");
        new GgufWriter().write(new OutputPlan(Optional.empty(), strings,
                List.of(tensor("w", DType.F16, Shape.of(2), f16)), typed), out, WriteOptions.threads(1));
        // a key the plan sets leaves its old place and comes last, in plan order, as ggml's
        // gguf_set_val_* does (remove, then append): how llama-quantize orders a quantized file's keys
        byte[] expected = v3().header(1, 4).key("general.name", STRING).str("n")
                .key("general.file_type", UINT32).u32(15)
                .key("x.eps", FLOAT32).f32(1e-5f)
                .key("x.ids", ARRAY).array(INT32, 2).u32(-1 & 0xFFFFFFFFL).u32(7)
                .tensor("w", new long[]{2}, 1, 0).pad(32).raw(f16).pad(32).bytes();
        assertThat(Files.readAllBytes(out)).isEqualTo(expected);
    }

    @Test
    void writesTheSameBytesWithOneAndFourThreads() throws IOException {
        List<PlannedTensor> tensors = new ArrayList<>();
        for (int i = 0; i < 12; i++) {
            int rows = 1 + i;
            byte[] data = seq(rows * 512 * 2, 31 + i);
            tensors.add(tensor("blk." + i + ".weight", DType.BF16, Shape.of(rows, 512), data));
            tensors.add(tensor("blk." + i + ".q", GgufType.byId(12).orElseThrow().dtype(), Shape.of(rows, 256), seq(rows * 144, 3 + i)));
        }
        OutputPlan plan = new OutputPlan(Optional.empty(), Map.of("general.name", "x"), tensors);
        Path one = dir.resolve("1.gguf"), four = dir.resolve("4.gguf");
        new GgufWriter().write(plan, one, WriteOptions.threads(1));
        new GgufWriter().write(plan, four, WriteOptions.threads(4));
        assertThat(Files.readAllBytes(four)).isEqualTo(Files.readAllBytes(one));
        try (TensorArchive a = new GgufReader().open(one, io.anamnesis.api.ParseLimits.defaults());
             Arena arena = Arena.ofConfined()) {
            TensorEntry q = a.tensor("blk.11.q").orElseThrow();
            assertThat(q.dtype().name()).isEqualTo("Q4_K");
            assertThat(q.shape()).isEqualTo(Shape.of(12, 256));
            assertThat(a.data(q, arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(seq(12 * 144, 14));
        }
    }

    @Test
    void convertsGgufToF32GgufThroughTheApiKeepingEveryKeyValue() throws IOException {
        byte[] f32 = seq(24, 5), i16 = seq(10, 13);
        Path in = Files.write(dir.resolve("api-in.gguf"), handBuilt(f32, q8Blocks(), i16).bytes());
        Path out = dir.resolve("api-out.gguf");
        Anamnesis.of(List.of(new GgufReader()), List.of(new GgufWriter()), List.of(new Q8_0ToF32()))
                .convert(in, "gguf", DType.F32, out, WriteOptions.threads(3));
        // The same file, but the Q8_0 tensor is now F32 (type 0) with 256 bytes of data,
        // general.file_type says ALL_F32 instead of MOSTLY_Q8_0, and a last key names the scheme
        // recovered (as in a recovered safetensors file).
        assertThat(Files.readAllBytes(out)).isEqualTo(handBuilt(f32, 0, q8BlocksAsF32(), i16, 0, "Q8_0").bytes());
    }

    /** A safetensors-like source: plain tensors, metadata typed as a GGUF file's (what the typed encoding gives back). */
    private static MemoryArchive typedSource(long fileType, DType matrices) {
        int width = matrices.equals(DType.F32) ? 4 : 2;
        return new MemoryArchive()
                .add("token_embd.weight", matrices, Shape.of(2, 32), seq(64 * width, 3))
                .add("output_norm.weight", DType.F32, Shape.of(32), seq(128, 5))
                .meta("general.architecture", MetaValue.str("llama"))
                .meta("llama.attention.layer_norm_rms_epsilon", MetaValue.Real.f32(1e-5f))
                .meta("general.file_type", MetaValue.u32(fileType))
                .meta("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING,
                        List.of(MetaValue.str("<unk>"), MetaValue.str("é"), MetaValue.str("a\u0000b"))))
                .meta("tokenizer.ggml.scores", new MetaValue.Array(MetaValue.Type.F32,
                        List.of(MetaValue.Real.f32(-0f), MetaValue.Real.f32(Float.NaN))))
                .meta("x.u64", new MetaValue.Int(MetaValue.Type.U64, -2))
                .meta("x.rows", new MetaValue.Array(MetaValue.Type.ARRAY, List.of(new MetaValue.Array(MetaValue.Type.U8,
                        List.of(new MetaValue.Int(MetaValue.Type.U8, 200))), new MetaValue.Array(MetaValue.Type.BOOL, List.of()))));
    }

    /** {@link #typedSource} as the GGUF spec lays it out, with {@code fileType} written. */
    private static byte[] typedSourceAsGguf(MemoryArchive a, long fileType, int tensorType) {
        byte[] embd = bytesOf(a, "token_embd.weight"), norm = bytesOf(a, "output_norm.weight");
        return v3().header(2, 7)
                .key("general.architecture", STRING).str("llama")
                .key("llama.attention.layer_norm_rms_epsilon", FLOAT32).f32(1e-5f)
                .key("general.file_type", UINT32).u32(fileType)
                .key("tokenizer.ggml.tokens", ARRAY).array(STRING, 3).str("<unk>").str("é").str("a\u0000b")
                .key("tokenizer.ggml.scores", ARRAY).array(FLOAT32, 2).f32(-0f).f32(Float.NaN)
                .key("x.u64", UINT64).u64(-2)
                .key("x.rows", ARRAY).array(ARRAY, 2).array(UINT8, 1).u8(200).array(BOOL, 0)
                .tensor("token_embd.weight", new long[]{32, 2}, tensorType, 0)
                .tensor("output_norm.weight", new long[]{32}, 0, (embd.length + 31) / 32 * 32)
                .pad(32).raw(embd).pad(32).raw(norm).pad(32).bytes();
    }

    private static byte[] bytesOf(TensorArchive a, String name) {
        try (Arena arena = Arena.ofConfined()) {
            return a.data(a.tensor(name).orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE);
        }
    }

    @Test
    void writesTypedKeyValuesOfAnySourceWithTheirTypesAndBits() throws IOException {
        MemoryArchive a = typedSource(1, DType.F16);
        Path out = dir.resolve("typed-source.gguf");
        new GgufWriter().write(new OutputPlan(Optional.of(a), a.metadata(), passthrough(a)), out, WriteOptions.threads(2));
        assertThat(Files.readAllBytes(out)).isEqualTo(typedSourceAsGguf(a, 1, 1));
    }

    @Test
    void aQuantizedFileTypeThatCameThroughAnotherFormatFollowsTheFloatTensorsWritten() throws IOException {
        // GGUF Q4_K_M (15) recovered to BF16 into safetensors, then back: the file is MOSTLY_BF16 (32)
        MemoryArchive bf16 = typedSource(15, DType.BF16);
        Path out = dir.resolve("bf16.gguf");
        new GgufWriter().write(new OutputPlan(Optional.of(bf16), bf16.metadata(), passthrough(bf16)), out, WriteOptions.threads(1));
        assertThat(Files.readAllBytes(out)).isEqualTo(typedSourceAsGguf(bf16, 32, 30));
        // F32 matrices: ALL_F32 (0)
        MemoryArchive f32 = typedSource(15, DType.F32);
        new GgufWriter().write(new OutputPlan(Optional.of(f32), f32.metadata(), passthrough(f32)), out, WriteOptions.threads(1));
        assertThat(Files.readAllBytes(out)).isEqualTo(typedSourceAsGguf(f32, 0, 0));
        // a float file type that already fits stays, even when it is not the dominant dtype's
        MemoryArchive kept = typedSource(1, DType.F32);
        new GgufWriter().write(new OutputPlan(Optional.of(kept), kept.metadata(), passthrough(kept)), out, WriteOptions.threads(1));
        assertThat(Files.readAllBytes(out)).isEqualTo(typedSourceAsGguf(kept, 1, 0));
        // a value the plan sets itself is the caller's word
        OutputPlan set = new OutputPlan(Optional.of(bf16), bf16.metadata(), passthrough(bf16))
                .withTyped(Map.of("general.file_type", MetaValue.u32(15)));
        new GgufWriter().write(set, out, WriteOptions.threads(1));
        try (TensorArchive back = new GgufReader().open(out, io.anamnesis.api.ParseLimits.defaults())) {
            assertThat(back.typedMetadata().get("general.file_type")).isEqualTo(MetaValue.u32(15));
        }
    }

    @Test
    void anAlignmentThatIsNotAnIntegerIsLeftOutAndSaidSo() throws IOException {
        MemoryArchive text = new MemoryArchive().add("w", DType.F16, Shape.of(2), seq(4, 3)).meta("general.alignment", "64");
        OutputPlan plan = new OutputPlan(Optional.of(text), text.metadata(), passthrough(text));
        assertThat(new GgufWriter().metadataLoss(plan)).containsOnlyKeys("general.alignment");
        Path out = dir.resolve("text-alignment.gguf");
        new GgufWriter().write(plan, out, WriteOptions.threads(1));
        assertThat(Files.readAllBytes(out)).isEqualTo(v3().header(1, 0)
                .tensor("w", new long[]{2}, 1, 0).pad(32).raw(seq(4, 3)).pad(32).bytes());
        // an integer one is the data's alignment, from any source
        MemoryArchive typed = new MemoryArchive().add("w", DType.F16, Shape.of(2), seq(4, 3))
                .meta("general.alignment", MetaValue.u32(64));
        OutputPlan aligned = new OutputPlan(Optional.of(typed), typed.metadata(), passthrough(typed));
        assertThat(new GgufWriter().metadataLoss(aligned)).isEmpty();
        new GgufWriter().write(aligned, out, WriteOptions.threads(1));
        assertThat(Files.readAllBytes(out)).isEqualTo(v3().header(1, 1).key("general.alignment", UINT32).u32(64)
                .tensor("w", new long[]{2}, 1, 0).pad(64).raw(seq(4, 3)).pad(64).bytes());
    }

    @Test
    void aGgufSourceIsTheBaseAndKeysThePlanSetsMoveToTheEnd() throws IOException {
        byte[] f32 = seq(24, 5), q8 = seq(68, 11), i16 = seq(10, 13);
        Path in = Files.write(dir.resolve("base.gguf"), handBuilt(f32, q8, i16).bytes());
        Path out = dir.resolve("set.gguf");
        try (TensorArchive a = new GgufReader().open(in, io.anamnesis.api.ParseLimits.defaults())) {
            // a plan that lists no strings (as the forget path's) and sets two typed keys
            Map<String, MetaValue> set = new java.util.LinkedHashMap<>();
            set.put("general.quantization_version", MetaValue.u32(2));
            set.put("general.file_type", MetaValue.u32(15));
            new GgufWriter().write(new OutputPlan(Optional.of(a), Map.of(), passthrough(a), set), out, WriteOptions.threads(1));
        }
        // ggml's gguf_set_val_* removes a key and appends it: the source's keys keep their order,
        // general.file_type leaves the front, and both set keys come last in the plan's order
        byte[] expected = v3().header(3, 9)
                .key("general.architecture", STRING).str("llama")
                .key("general.alignment", UINT32).u32(64)
                .key("llama.rope.scale", FLOAT32).f32(0.25f)
                .key("u64", UINT64).u64(-2L)
                .key("flag", BOOL).u8(0)
                .key("tokenizer.ggml.tokens", ARRAY).array(STRING, 3).str("<s>").str("a").str("ü")
                .key("nested", ARRAY).array(ARRAY, 1).array(FLOAT64, 2).f64(1.5).f64(-0.0)
                .key("general.quantization_version", UINT32).u32(2)
                .key("general.file_type", UINT32).u32(15)
                .tensor("tok_embd.weight", new long[]{3, 2}, 0, 0)
                .tensor("blk.0.attn_q.weight", new long[]{64, 1}, 8, 64)
                .tensor("norm", new long[]{5}, 25, (64 + q8.length + 63) / 64 * 64)
                .pad(64).raw(f32).pad(64).raw(q8).pad(64).raw(i16).pad(64).bytes();
        assertThat(Files.readAllBytes(out)).isEqualTo(expected);
    }

    @Test
    void refusesDtypesGgufCannotStoreAndLeavesNoFile() {
        Path out = dir.resolve("u8.gguf");
        OutputPlan plan = new OutputPlan(Optional.empty(), Map.of(), List.of(tensor("m", DType.U8, Shape.of(4), new byte[4])));
        assertThat(new GgufWriter().supports(DType.U8)).isFalse();
        assertThat(new GgufWriter().supports(DType.BF16)).isTrue();
        assertThatThrownBy(() -> new GgufWriter().write(plan, out, WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("'m'");
        assertThat(out).doesNotExist();
    }

    @Test
    void refusesBlockRowsThatSplitABlock() {
        DType q4k = GgufType.byId(12).orElseThrow().dtype();
        // 2 x 256 elements fill two whole blocks, but each row of 128 would split one.
        OutputPlan plan = new OutputPlan(Optional.empty(), Map.of(),
                List.of(tensor("q", q4k, Shape.of(4, 128), new byte[288])));
        assertThatThrownBy(() -> new GgufWriter().write(plan, dir.resolve("q.gguf"), WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("row length 128");
    }

    /** gguf.cpp refuses names of GGML_MAX_NAME (64) bytes or more; ggml keeps them as C strings. */
    @ParameterizedTest
    @ValueSource(strings = {"", "a\u0000b", "line\nbreak", "cr\rx",
            "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijkl"})
    void refusesNamesGgufReadersRefuseNamingTheTensorAndLeavesNoFile(String name) {
        Path out = dir.resolve("names.gguf");
        OutputPlan plan = new OutputPlan(Optional.empty(), Map.of(), List.of(tensor(name, DType.F32, Shape.of(1), new byte[4])));
        assertThatThrownBy(() -> new GgufWriter().write(plan, out, WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("tensor '" + name + "'").hasMessageContaining("GGUF readers refuse");
        assertThat(out).doesNotExist();
    }

    /** gguf.cpp refuses a tensor of more than GGML_MAX_DIMS (4) dimensions; four are written. */
    @Test
    void refusesMoreThanFourDimensionsBeforeWritingAnything() throws IOException {
        Path out = dir.resolve("rank.gguf");
        OutputPlan five = new OutputPlan(Optional.empty(), Map.of(),
                List.of(tensor("w", DType.F32, Shape.of(1, 1, 1, 1, 2), new byte[8])));
        assertThatThrownBy(() -> new GgufWriter().write(five, out, WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("tensor 'w'")
                .hasMessageContaining("5 dimensions").hasMessageContaining("at most 4");
        assertThatThrownBy(() -> new GgufWriter().writeSplits(five, out, 1 << 20, WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("5 dimensions");
        assertThat(out).doesNotExist();
        new GgufWriter().write(new OutputPlan(Optional.empty(), Map.of(),
                List.of(tensor("w", DType.F32, Shape.of(1, 1, 1, 2), new byte[8]))), out, WriteOptions.threads(1));
        try (TensorArchive a = new GgufReader().open(out, io.anamnesis.api.ParseLimits.defaults())) {
            assertThat(a.tensors().getFirst().shape()).isEqualTo(Shape.of(1, 1, 1, 2));
        }
    }

    /**
     * An alignment past 1 MiB is refused before anything is written: 2^31 overflowed the
     * header's padding (an internal error) and 2^30 made a 1 GiB file of one tiny tensor.
     */
    @ParameterizedTest
    @ValueSource(longs = {1L << 21, 1L << 30, 1L << 31, 1L << 62})
    void refusesAnAlignmentPastOneMebibyte(long alignment) {
        Path out = dir.resolve("align.gguf");
        OutputPlan plan = new OutputPlan(Optional.empty(), Map.of(), List.of(tensor("w", DType.F32, Shape.of(1), new byte[4])),
                Map.of("general.alignment", new MetaValue.Int(MetaValue.Type.U64, alignment)));
        assertThatThrownBy(() -> new GgufWriter().write(plan, out, WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("general.alignment")
                .hasMessageContaining("at most 1048576");
        assertThat(out).doesNotExist();
    }

    @Test
    void writesAnAlignmentOfOneMebibyte() throws IOException {
        Path out = dir.resolve("align-1m.gguf");
        new GgufWriter().write(new OutputPlan(Optional.empty(), Map.of(), List.of(tensor("w", DType.F32, Shape.of(1), new byte[4])),
                Map.of("general.alignment", MetaValue.u32(1 << 20))), out, WriteOptions.threads(1));
        assertThat(Files.size(out)).isEqualTo(2 << 20); // the header padded to 1 MiB, the tensor too (as gguf-py pads)
        try (TensorArchive a = new GgufReader().open(out, io.anamnesis.api.ParseLimits.defaults())) {
            assertThat(a.properties()).containsEntry("alignment", "1048576");
        }
    }

    /** A signalling NaN in an f32 key comes back bit for bit (Java's widening to double used to quiet it). */
    @Test
    void aSignallingFloat32NaNKeyKeepsItsBitsThroughWriteAndRead() throws IOException {
        Path out = dir.resolve("snan.gguf");
        float snan = Float.intBitsToFloat(0x7F800001);
        new GgufWriter().write(new OutputPlan(Optional.empty(), Map.of(), List.of(tensor("w", DType.F32, Shape.of(1), new byte[4])),
                Map.of("x.snan", MetaValue.Real.f32(snan))), out, WriteOptions.threads(1));
        try (TensorArchive a = new GgufReader().open(out, io.anamnesis.api.ParseLimits.defaults())) {
            MetaValue v = a.typedMetadata().get("x.snan");
            assertThat(v).isInstanceOf(MetaValue.Real.class);
            assertThat(Float.floatToRawIntBits(((MetaValue.Real) v).floatValue())).isEqualTo(0x7F800001);
            // and written again, as a conversion of that file does
            Path again = dir.resolve("snan-again.gguf");
            new GgufWriter().write(new OutputPlan(Optional.of(a), Map.of(), List.of(tensor("w", DType.F32, Shape.of(1), new byte[4])),
                    a.typedMetadata()), again, WriteOptions.threads(1));
            byte[] bytes = Files.readAllBytes(again);
            boolean found = false;
            for (int i = 0; i + 4 <= bytes.length && !found; i++) {
                found = bytes[i] == 0x01 && bytes[i + 1] == 0 && bytes[i + 2] == (byte) 0x80 && bytes[i + 3] == 0x7F;
            }
            assertThat(found).as("the bits 0x7f800001 in the rewritten file").isTrue();
        }
    }

    @Test
    void writesANameOfExactly63Bytes() throws IOException {
        String name = "é".repeat(31) + "x"; // 63 bytes of UTF-8
        Path out = dir.resolve("n63.gguf");
        new GgufWriter().write(new OutputPlan(Optional.empty(), Map.of(),
                List.of(tensor(name, DType.F32, Shape.of(1), new byte[4]))), out, WriteOptions.threads(1));
        try (TensorArchive a = new GgufReader().open(out, io.anamnesis.api.ParseLimits.defaults())) {
            assertThat(a.tensors().getFirst().name()).isEqualTo(name);
        }
    }
}
