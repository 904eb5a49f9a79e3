package io.anamnesis.format.gguf;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.FileProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.math.BigInteger;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

import static io.anamnesis.format.gguf.GgufBytes.*;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class GgufReaderTest {
    @TempDir
    Path dir;

    private TensorArchive open(GgufBytes b) {
        return open(b, ParseLimits.defaults());
    }

    private TensorArchive open(GgufBytes b, ParseLimits limits) {
        return new GgufReader().open(b.write(dir, "t.gguf"), limits);
    }

    private static byte[] seq(int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) b[i] = (byte) (i * 7 + 1);
        return b;
    }

    /** One KV of every scalar value type, with values chosen to expose sign and width mistakes. */
    private static GgufBytes everyScalarType(GgufBytes b) {
        return b.key("u8", UINT8).u8(0xFF)
                .key("i8", INT8).u8(0xFB)
                .key("u16", UINT16).u16(0xFFFE)
                .key("i16", INT16).u16(0x8000)
                .key("u32", UINT32).u32(0xFFFF_FFFFL)
                .key("i32", INT32).u32(-7)
                .key("f32", FLOAT32).f32(0.1f)
                .key("bool", BOOL).u8(1)
                .key("str", STRING).str("héllo")
                .key("u64", UINT64).u64(-1L)
                .key("i64", INT64).u64(Long.MIN_VALUE)
                .key("f64", FLOAT64).f64(-2.5);
    }

    private static final int SCALAR_KVS = 12;

    private void assertEveryScalarType(TensorArchive a) {
        var s = a.structuredMetadata();
        assertThat(s.get("u8")).isEqualTo(255L);
        assertThat(s.get("i8")).isEqualTo(-5L);
        assertThat(s.get("u16")).isEqualTo(65534L);
        assertThat(s.get("i16")).isEqualTo(-32768L);
        assertThat(s.get("u32")).isEqualTo(4294967295L);
        assertThat(s.get("i32")).isEqualTo(-7L);
        assertThat(s.get("f32")).isEqualTo(0.1);
        assertThat(s.get("bool")).isEqualTo(true);
        assertThat(s.get("str")).isEqualTo("héllo");
        assertThat(s.get("u64")).isEqualTo(new BigInteger("18446744073709551615"));
        assertThat(s.get("i64")).isEqualTo(Long.MIN_VALUE);
        assertThat(s.get("f64")).isEqualTo(-2.5);
        var m = a.metadata();
        assertThat(m.get("u64")).isEqualTo("18446744073709551615");
        assertThat(m.get("i8")).isEqualTo("-5");
        assertThat(m.get("f32")).isEqualTo("0.1");
        assertThat(m.get("bool")).isEqualTo("true");
        assertThat(m.keySet()).containsExactly("u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "str",
                "u64", "i64", "f64");
    }

    @Test
    void readsEveryMetadataValueType() {
        try (TensorArchive a = open(everyScalarType(v3().header(0, SCALAR_KVS)))) {
            assertEveryScalarType(a);
            assertThat(a.properties()).containsEntry("version", "3").containsEntry("byte order", "little-endian")
                    .containsEntry("kv count", "12").containsEntry("tensor count", "0").containsEntry("alignment", "32");
        }
    }

    @Test
    void givesEveryValueTypedWithItsWidthAndBits() {
        GgufBytes b = everyScalarType(v3().header(0, SCALAR_KVS + 3))
                .key("nested", ARRAY).array(ARRAY, 2).array(INT16, 2).u16(1).u16(0xFFFF).array(STRING, 0)
                .key("empty", ARRAY).array(FLOAT32, 0)
                .key("nul", STRING).str("a\u0000b");
        try (TensorArchive a = open(b)) {
            assertThat(a.typedMetadata()).containsExactly(
                    Map.entry("u8", new MetaValue.Int(MetaValue.Type.U8, 255)),
                    Map.entry("i8", new MetaValue.Int(MetaValue.Type.I8, -5)),
                    Map.entry("u16", new MetaValue.Int(MetaValue.Type.U16, 65534)),
                    Map.entry("i16", new MetaValue.Int(MetaValue.Type.I16, -32768)),
                    Map.entry("u32", new MetaValue.Int(MetaValue.Type.U32, 4294967295L)),
                    Map.entry("i32", new MetaValue.Int(MetaValue.Type.I32, -7)),
                    Map.entry("f32", MetaValue.Real.f32(0.1f)),
                    Map.entry("bool", new MetaValue.Bool(true)),
                    Map.entry("str", new MetaValue.Str("héllo")),
                    Map.entry("u64", new MetaValue.Int(MetaValue.Type.U64, -1L)),
                    Map.entry("i64", new MetaValue.Int(MetaValue.Type.I64, Long.MIN_VALUE)),
                    Map.entry("f64", new MetaValue.Real(MetaValue.Type.F64, -2.5)),
                    Map.entry("nested", new MetaValue.Array(MetaValue.Type.ARRAY, List.of(
                            new MetaValue.Array(MetaValue.Type.I16, List.of(new MetaValue.Int(MetaValue.Type.I16, 1),
                                    new MetaValue.Int(MetaValue.Type.I16, -1))),
                            new MetaValue.Array(MetaValue.Type.STRING, List.of())))),
                    Map.entry("empty", new MetaValue.Array(MetaValue.Type.F32, List.of())),
                    Map.entry("nul", new MetaValue.Str("a\u0000b")));
            // 0.1f is 0x3DCCCCCD: the float32's own bits, not the double 0.1's
            assertThat(Float.floatToRawIntBits((float) ((MetaValue.Real) a.typedMetadata().get("f32")).value())).isEqualTo(0x3DCCCCCD);
        }
    }

    @Test
    void readsVersion2LikeVersion3() {
        try (TensorArchive a = open(everyScalarType(new GgufBytes(ByteOrder.LITTLE_ENDIAN, 2).header(0, SCALAR_KVS)))) {
            assertEveryScalarType(a);
            assertThat(a.properties()).containsEntry("version", "2");
        }
    }

    @Test
    void readsVersion1WithThirtyTwoBitCounts() {
        GgufBytes b = new GgufBytes(ByteOrder.LITTLE_ENDIAN, 1).header(1, 1)
                .key("names", ARRAY).array(STRING, 2).str("a").str("bc")
                .tensor("w", new long[]{2, 3}, 0, 0).pad(32).raw(seq(24));
        // v1 counts are 4 bytes: magic 4 + version 4 + counts 4+4 = 16 bytes before the first key.
        assertThat(b.bytes()[16]).isEqualTo((byte) 5);
        try (TensorArchive a = open(b); Arena arena = Arena.ofConfined()) {
            assertThat(a.structuredMetadata().get("names")).isEqualTo(List.of("a", "bc"));
            TensorEntry w = a.tensors().getFirst();
            assertThat(w.shape()).isEqualTo(Shape.of(3, 2));
            assertThat(a.data(w, arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(seq(24));
        }
    }

    @Test
    void readsNestedArraysAsNestedLists() {
        GgufBytes b = v3().header(0, 1).key("nested", ARRAY).array(ARRAY, 2)
                .array(INT32, 2).u32(1).u32(-2)
                .array(STRING, 1).str("x\"y");
        try (TensorArchive a = open(b)) {
            assertThat(a.structuredMetadata().get("nested")).isEqualTo(List.of(List.of(1L, -2L), List.of("x\"y")));
            assertThat(a.metadata().get("nested")).isEqualTo("[[1, -2], [\"x\\\"y\"]]");
        }
    }

    @Test
    @SuppressWarnings("unchecked")
    void summarizesArraysLongerThanSixteenButKeepsThemWholeInStructuredMetadata() {
        GgufBytes b = v3().header(0, 2).key("tokens", ARRAY).array(STRING, 17);
        for (int i = 0; i < 17; i++) b.str("t" + i);
        b.key("short", ARRAY).array(BOOL, 2).u8(0).u8(1);
        try (TensorArchive a = open(b)) {
            assertThat(a.metadata().get("tokens")).isEqualTo("[array of 17 string]");
            assertThat(a.metadata().get("short")).isEqualTo("[false, true]");
            assertThat((List<Object>) a.structuredMetadata().get("tokens")).hasSize(17).startsWith("t0").endsWith("t16");
        }
    }

    @Test
    void reversesNeIntoRowMajorShapesAndMapsData() {
        byte[] f32 = seq(2 * 3 * 4 * 4);
        byte[] q40 = seq(2 * 2 * 18);
        GgufBytes b = v3().header(2, 0)
                .tensor("a.weight", new long[]{4, 3, 2}, 0, 0)
                .tensor("q.weight", new long[]{64, 2}, 2, 96);
        b.pad(32).raw(f32).pad(32).raw(q40);
        try (TensorArchive a = open(b); Arena arena = Arena.ofConfined()) {
            TensorEntry e = a.tensors().get(0);
            assertThat(e.name()).isEqualTo("a.weight");
            assertThat(e.shape()).isEqualTo(Shape.of(2, 3, 4));
            assertThat(e.dtype()).isEqualTo(DType.F32);
            assertThat(a.data(e, arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(f32);
            TensorEntry q = a.tensors().get(1);
            assertThat(q.shape()).isEqualTo(Shape.of(2, 64));
            assertThat(q.dtype()).isEqualTo(new DType("Q4_0", DType.Kind.QUANTIZED, 32, 18));
            assertThat(q.byteSize()).isEqualTo(72);
            assertThat(a.data(q, arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(q40);
        }
    }

    @Test
    void honorsGeneralAlignment() {
        GgufBytes b = v3().header(2, 1).key("general.alignment", UINT32).u32(64)
                .tensor("a", new long[]{3}, 0, 0)
                .tensor("b", new long[]{2}, 26, 64);
        b.pad(64).raw(seq(12)).pad(64).raw(new byte[]{9, 0, 0, 0, 8, 0, 0, 0});
        try (TensorArchive a = open(b); Arena arena = Arena.ofConfined()) {
            assertThat(((GgufArchive) a).header().dataStart() % 64).isZero();
            assertThat(a.properties()).containsEntry("alignment", "64");
            assertThat(a.data(a.tensors().get(1), arena).toArray(ValueLayout.JAVA_INT_UNALIGNED)).containsExactly(9, 8);
            assertThat(a.tensors().get(1).dtype()).isEqualTo(DType.I32);
        }
    }

    @Test
    void readsBigEndianFilesAndSwapsScalarData() {
        GgufBytes b = new GgufBytes(ByteOrder.BIG_ENDIAN, 3).header(2, 2)
                .key("general.architecture", STRING).str("llama")
                .key("llama.context_length", UINT32).u32(4096)
                .tensor("f", new long[]{2}, 0, 0)
                .tensor("h", new long[]{3}, 25, 32);
        // Big-endian float32 1.5 = 3F C0 00 00, -2.0 = C0 00 00 00; int16 1, 2, -1.
        b.pad(32).raw((byte) 0x3F, (byte) 0xC0, (byte) 0, (byte) 0, (byte) 0xC0, (byte) 0, (byte) 0, (byte) 0)
                .pad(32).raw((byte) 0, (byte) 1, (byte) 0, (byte) 2, (byte) 0xFF, (byte) 0xFF);
        assertThat(b.bytes()[4]).as("version's first byte in a big-endian file").isZero();
        try (TensorArchive a = open(b); Arena arena = Arena.ofConfined()) {
            assertThat(a.properties()).containsEntry("byte order", "big-endian").containsEntry("context length", "4096")
                    .containsEntry("architecture", "llama");
            assertThat(a.data(a.tensors().get(0), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(0, 0, (byte) 0xC0, 0x3F, 0, 0, 0, (byte) 0xC0);
            assertThat(a.data(a.tensors().get(1), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(1, 0, 2, 0, (byte) 0xFF, (byte) 0xFF);
        }
    }

    @Test
    void readsBigEndianArrays() {
        GgufBytes b = new GgufBytes(ByteOrder.BIG_ENDIAN, 3).header(0, 4)
                .key("i32", ARRAY).array(INT32, 2).u32(-2).u32(0x01020304)
                .key("f32", ARRAY).array(FLOAT32, 1).f32(-1.5f)
                .key("u16", ARRAY).array(UINT16, 1).u16(0xFFFE)
                .key("s", ARRAY).array(STRING, 2).str("ab").str("");
        // Big-endian int32 -2 is FF FF FF FE: the last byte of its 4.
        assertThat(b.bytes()[4 + 4 + 16 + 8 + 3 + 4 + 4 + 8 + 3]).isEqualTo((byte) 0xFE);
        try (TensorArchive a = open(b)) {
            assertThat(a.structuredMetadata().get("i32")).isEqualTo(List.of(-2L, 16909060L));
            assertThat(a.structuredMetadata().get("f32")).isEqualTo(List.of(-1.5));
            assertThat(a.structuredMetadata().get("u16")).isEqualTo(List.of(65534L));
            assertThat(a.structuredMetadata().get("s")).isEqualTo(List.of("ab", ""));
        }
    }

    @Test
    void readsStringArraysLongerThanTheirFirstGuess() {
        String s40 = "é".repeat(20);
        GgufBytes b = v3().header(0, 1).key("s", ARRAY).array(STRING, 3).str(s40).str("x").str(s40 + "!");
        try (TensorArchive a = open(b)) {
            assertThat(a.structuredMetadata().get("s")).isEqualTo(List.of(s40, "x", s40 + "!"));
        }
    }

    @Test
    void rejectsBoolArrayElementOtherThanZeroOrOne() {
        assertRejected(v3().header(0, 1).key("b", ARRAY).array(BOOL, 3).u8(1).u8(0).u8(7),
                MalformedFileException.class, "bool element");
    }

    @Test
    void refusesBlockDataOfBigEndianFiles() {
        GgufBytes b = new GgufBytes(ByteOrder.BIG_ENDIAN, 3).header(1, 0)
                .tensor("q", new long[]{32}, 8, 0).pad(32).raw(seq(34));
        try (TensorArchive a = open(b); Arena arena = Arena.ofConfined()) {
            assertThat(a.tensors().getFirst().dtype().name()).isEqualTo("Q8_0");
            assertThatThrownBy(() -> a.data(a.tensors().getFirst(), arena))
                    .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("big-endian").hasMessageContaining("'q'");
        }
    }

    @Test
    void reportsPropertiesOfTheModel() {
        GgufBytes b = v3().header(0, 5)
                .key("general.architecture", STRING).str("qwen2")
                .key("general.name", STRING).str("Tiny")
                .key("qwen2.context_length", UINT32).u32(32768)
                .key("general.quantization_version", UINT32).u32(2)
                .key("general.file_type", UINT32).u32(15);
        try (TensorArchive a = open(b)) {
            assertThat(a.properties()).containsEntry("architecture", "qwen2").containsEntry("name", "Tiny")
                    .containsEntry("context length", "32768").containsEntry("quantization version", "2")
                    .containsEntry("file type", "15 (MOSTLY_Q4_K_M)");
            assertThat(a.format()).isEqualTo("gguf");
        }
    }

    @Test
    void probesTheMagic() {
        GgufReader r = new GgufReader();
        assertThat(r.canRead(new FileProbe("x.bin", 8, ByteBuffer.wrap("GGUF\3\0\0\0".getBytes())))).isTrue();
        assertThat(r.canRead(new FileProbe("x.gguf", 8, ByteBuffer.wrap("GGML\3\0\0\0".getBytes())))).isFalse();
    }

    // ------------------------------------------------------------------ malformed input

    private void assertRejected(GgufBytes b, Class<? extends AnamnesisException> type, String... message) {
        assertRejected(b, ParseLimits.defaults(), type, message);
    }

    private void assertRejected(GgufBytes b, ParseLimits limits, Class<? extends AnamnesisException> type, String... message) {
        var t = assertThatThrownBy(() -> open(b, limits).close()).isInstanceOf(type);
        for (String m : message) t.hasMessageContaining(m);
    }

    @Test
    void rejectsBadMagic() {
        assertRejected(new GgufBytes(ByteOrder.LITTLE_ENDIAN, 3).raw("GGML".getBytes()).u32(3).u64(0).u64(0),
                MalformedFileException.class, "magic");
    }

    @Test
    void rejectsUnknownVersion() {
        assertRejected(new GgufBytes(ByteOrder.LITTLE_ENDIAN, 4).header(0, 0), UnsupportedFeatureException.class, "version 4");
    }

    @Test
    void rejectsTruncatedHeader() {
        byte[] whole = everyScalarType(v3().header(0, SCALAR_KVS)).bytes();
        for (int cut : new int[]{3, 10, 30, whole.length - 1}) {
            assertRejected(new GgufBytes(ByteOrder.LITTLE_ENDIAN, 3).raw(Arrays.copyOf(whole, cut)),
                    MalformedFileException.class, "truncated");
        }
    }

    @Test
    void rejectsAbsurdTensorCount() {
        assertRejected(v3().header(1L << 60, 0), LimitExceededException.class, "tensor count");
    }

    @Test
    void rejectsMoreTensorsThanTheFileCanHold() {
        assertRejected(v3().header(1000, 0), MalformedFileException.class, "tensor infos");
    }

    @Test
    void rejectsKvCountPastTwoToThe63() {
        assertRejected(v3().header(0, -1L), LimitExceededException.class, "18446744073709551615");
    }

    @Test
    void rejectsStringLengthPastEndOfFile() {
        assertRejected(v3().header(0, 1).key("k", STRING).u64(1000).raw("abc".getBytes()),
                MalformedFileException.class, "string value of k");
    }

    @Test
    void rejectsAbsurdArrayLength() {
        assertRejected(v3().header(0, 1).key("a", ARRAY).array(UINT8, 1L << 62), LimitExceededException.class, "length of array a");
    }

    @Test
    void rejectsArrayLongerThanTheFile() {
        assertRejected(v3().header(0, 1).key("a", ARRAY).array(INT64, 100).u64(1), MalformedFileException.class, "array a");
    }

    @Test
    void rejectsHeaderLongerThanTheLimit() {
        GgufBytes b = v3().header(0, 1).key("s", STRING).str("x".repeat(2000));
        assertRejected(b, ParseLimits.defaults().withMaxHeaderBytes(1000), LimitExceededException.class, "header");
    }

    @Test
    void rejectsMoreKeysThanTheLimit() {
        ParseLimits limits = new ParseLimits(1000, 10, 4, 2, 100, 100, 4, 1, 1, 1, 1);
        assertRejected(v3().header(0, 3), limits, LimitExceededException.class, "key/value count");
    }

    @Test
    void rejectsStringLongerThanTheLimit() {
        ParseLimits limits = new ParseLimits(1000, 10, 4, 2, 100, 100, 4, 1, 1, 1, 1);
        assertRejected(v3().header(0, 1).key("s", STRING).str("y".repeat(101)), limits,
                LimitExceededException.class, "string value of s");
    }

    @Test
    void rejectsUnknownValueType() {
        assertRejected(v3().header(0, 1).key("k", 13).u32(0), MalformedFileException.class, "value type 13");
    }

    @Test
    void rejectsBoolOtherThanZeroOrOne() {
        assertRejected(v3().header(0, 1).key("k", BOOL).u8(2), MalformedFileException.class, "bool");
    }

    @Test
    void rejectsDuplicateKeys() {
        assertRejected(v3().header(0, 2).key("k", UINT8).u8(1).key("k", UINT8).u8(2), MalformedFileException.class, "twice");
    }

    @Test
    void rejectsNestingDeeperThanTheLimit() {
        GgufBytes b = v3().header(0, 1).key("deep", ARRAY);
        for (int i = 0; i < 9; i++) b.array(ARRAY, 1);
        b.array(UINT8, 0);
        assertRejected(b, ParseLimits.defaults().withMaxNestingDepth(8), LimitExceededException.class, "nesting depth");
    }

    @Test
    void acceptsNestingAtTheLimit() {
        GgufBytes b = v3().header(0, 1).key("deep", ARRAY);
        for (int i = 0; i < 7; i++) b.array(ARRAY, 1);
        b.array(UINT8, 0);
        try (TensorArchive a = open(b, ParseLimits.defaults().withMaxNestingDepth(8))) {
            assertThat(a.metadata().get("deep")).isEqualTo("[[[[[[[[]]]]]]]]");
        }
    }

    @Test
    void rejectsUnknownTypeIdNamingIdAndTensor() {
        GgufBytes b = v3().header(1, 0).tensor("blk.0.w", new long[]{32}, 99, 0).pad(32).raw(seq(128));
        assertRejected(b, UnsupportedFeatureException.class, "99", "blk.0.w");
    }

    @Test
    void rejectsRemovedTypeIdByItsName() {
        GgufBytes b = v3().header(1, 0).tensor("w", new long[]{32}, 4, 0).pad(32).raw(seq(128));
        assertRejected(b, UnsupportedFeatureException.class, "Q4_2", "removed");
    }

    @Test
    void rejectsMisalignedOffset() {
        GgufBytes b = v3().header(1, 0).tensor("w", new long[]{4}, 0, 8).pad(32).raw(seq(64));
        assertRejected(b, MalformedFileException.class, "alignment", "'w'");
    }

    @Test
    void rejectsOverlappingTensors() {
        GgufBytes b = v3().header(2, 0)
                .tensor("a", new long[]{16}, 0, 0)
                .tensor("b", new long[]{8}, 0, 32).pad(32).raw(seq(96));
        assertRejected(b, MalformedFileException.class, "overlaps");
    }

    @Test
    void rejectsDataPastTheEndOfFile() {
        GgufBytes b = v3().header(1, 0).tensor("w", new long[]{16}, 0, 0).pad(32).raw(seq(63));
        assertRejected(b, MalformedFileException.class, "past the end", "'w'");
    }

    @Test
    void rejectsZeroAlignment() {
        assertRejected(v3().header(0, 1).key("general.alignment", UINT32).u32(0), MalformedFileException.class, "power of two");
    }

    @Test
    void rejectsNonPowerOfTwoAlignment() {
        assertRejected(v3().header(0, 1).key("general.alignment", UINT32).u32(48), MalformedFileException.class, "power of two");
    }

    @Test
    void rejectsNonIntegerAlignment() {
        assertRejected(v3().header(0, 1).key("general.alignment", STRING).str("32"), MalformedFileException.class, "alignment");
    }

    @Test
    void rejectsRowLengthNotAMultipleOfTheBlock() {
        GgufBytes b = v3().header(1, 0).tensor("q", new long[]{48, 2}, 12, 0).pad(32).raw(seq(1024));
        assertRejected(b, MalformedFileException.class, "ne[0] = 48", "Q4_K", "256");
    }

    @Test
    void rejectsRankOverTheLimit() {
        GgufBytes b = v3().header(1, 0).str("w").u32(33).raw(new byte[64 * 8]);
        assertRejected(b, LimitExceededException.class, "rank");
    }

    @Test
    void rejectsShapeProductOverflow() {
        GgufBytes b = v3().header(1, 0).tensor("w", new long[]{1L << 32, 1L << 32}, 0, 0).pad(32);
        assertRejected(b, LimitExceededException.class, "overflow");
    }

    @Test
    void rejectsNegativeDimension() {
        GgufBytes b = v3().header(1, 0).tensor("w", new long[]{-1}, 0, 0).pad(32);
        assertRejected(b, MalformedFileException.class, "ne[0]");
    }

    @Test
    void rejectsDuplicateTensorNames() {
        GgufBytes b = v3().header(2, 0).tensor("w", new long[]{1}, 0, 0).tensor("w", new long[]{1}, 0, 32).pad(32).raw(seq(64));
        assertRejected(b, MalformedFileException.class, "twice");
    }

    /** Every truncation and 3000 seeded byte corruptions: each opens or fails typed, never otherwise. */
    @Test
    void failsOnlyWithTypedErrorsOnTruncatedOrCorruptedFiles() {
        byte[] good = everyScalarType(v3().header(2, SCALAR_KVS + 2))
                .key("general.alignment", UINT32).u32(16)
                .key("nested", ARRAY).array(ARRAY, 2).array(STRING, 2).str("a").str("b").array(INT16, 1).u16(5)
                .tensor("w", new long[]{4, 2}, 0, 0)
                .tensor("q", new long[]{32}, 8, 32).pad(16).raw(seq(32)).raw(seq(34)).bytes();
        try (TensorArchive a = open(new GgufBytes(ByteOrder.LITTLE_ENDIAN, 3).raw(good))) {
            assertThat(a.tensors()).hasSize(2);
        }
        java.util.SplittableRandom random = new java.util.SplittableRandom(7);
        for (int trial = 0; trial < good.length + 3000; trial++) {
            byte[] bad = trial < good.length ? Arrays.copyOf(good, trial) : good.clone();
            if (trial >= good.length) {
                bad[random.nextInt(bad.length)] = (byte) random.nextInt(256);
                if (random.nextBoolean()) bad[random.nextInt(bad.length)] = (byte) 0xFF;
            }
            try (TensorArchive a = open(new GgufBytes(ByteOrder.LITTLE_ENDIAN, 3).raw(bad)); Arena arena = Arena.ofConfined()) {
                for (TensorEntry e : a.tensors()) assertThat(a.data(e, arena).byteSize()).isEqualTo(e.byteSize());
                a.metadata();
                a.structuredMetadata();
            } catch (AnamnesisException expected) {
                // typed: fine
            }
        }
    }

    @Test
    void readsStringsLongerThanTheParseBuffer() {
        String big = "x".repeat(GgufParser.BUFFER_BYTES * 2 + 3);
        GgufBytes b = v3().header(1, 2).key("a", UINT8).u8(1).key("big", STRING).str(big)
                .tensor("w", new long[]{2}, 0, 0).pad(32).raw(seq(8));
        try (TensorArchive a = open(b); Arena arena = Arena.ofConfined()) {
            assertThat(a.structuredMetadata().get("big")).isEqualTo(big);
            assertThat(a.data(a.tensors().getFirst(), arena).toArray(ValueLayout.JAVA_BYTE)).isEqualTo(seq(8));
        }
    }
}
