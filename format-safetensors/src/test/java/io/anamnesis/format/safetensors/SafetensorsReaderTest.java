package io.anamnesis.format.safetensors;

import io.anamnesis.api.AnamnesisException;
import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.FileProbe;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.RandomAccessFile;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;

import static io.anamnesis.format.safetensors.SafetensorsBytes.bytes;
import static io.anamnesis.format.safetensors.SafetensorsBytes.concat;
import static io.anamnesis.format.safetensors.SafetensorsBytes.entry;
import static io.anamnesis.format.safetensors.SafetensorsBytes.file;
import static io.anamnesis.format.safetensors.SafetensorsBytes.prefix;
import static io.anamnesis.format.safetensors.SafetensorsBytes.write;
import static io.anamnesis.format.safetensors.SafetensorsBytes.zeros;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsReaderTest {
    @TempDir
    Path dir;

    private final SafetensorsReader reader = new SafetensorsReader();

    private TensorArchive open(byte[] content) {
        return reader.open(write(dir, content), ParseLimits.defaults());
    }

    private TensorArchive open(byte[] content, ParseLimits limits) {
        return reader.open(write(dir, content), limits);
    }

    /** The failure of opening {@code content}, with its type and (when given) the tensor named. */
    private void assertRejected(byte[] content, Class<? extends AnamnesisException> type, String tensor) {
        assertRejected(content, ParseLimits.defaults(), type, tensor);
    }

    private void assertRejected(byte[] content, ParseLimits limits, Class<? extends AnamnesisException> type,
                                String tensor) {
        assertThatThrownBy(() -> open(content, limits).close())
                .isInstanceOf(type)
                .satisfies(e -> assertThat(((AnamnesisException) e).tensor())
                        .isEqualTo(java.util.Optional.ofNullable(tensor)));
    }

    // ---------------------------------------------------------------- reading

    @Test
    void readsNamesDtypesShapesAndExactBytes() {
        // F32 1.5 = 0x3FC00000 and -2.0 = 0xC0000000, little-endian; I16 0x1234 as 34 12.
        byte[] data = bytes(0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0, 0x34, 0x12);
        String header = "{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "I16", "[1,1]", 8, 10) + "}";
        try (TensorArchive archive = open(file(header, data)); Arena arena = Arena.ofConfined()) {
            assertThat(archive.format()).isEqualTo("safetensors");
            assertThat(archive.tensors()).containsExactly(
                    new TensorEntry("a", DType.F32, Shape.of(2), 8),
                    new TensorEntry("b", DType.I16, Shape.of(1, 1), 2));
            MemorySegment a = archive.data(archive.tensor("a").orElseThrow(), arena);
            assertThat(a.toArray(ValueLayout.JAVA_BYTE)).containsExactly(bytes(0x00, 0x00, 0xC0, 0x3F, 0x00, 0x00, 0x00, 0xC0));
            assertThat(a.getAtIndex(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 1)).isEqualTo(-2.0f);
            MemorySegment b = archive.data(archive.tensor("b").orElseThrow(), arena);
            assertThat(b.toArray(ValueLayout.JAVA_BYTE)).containsExactly(bytes(0x34, 0x12));
        }
    }

    @Test
    void mapsTensorDataZeroCopyIntoTheCallersArena() {
        String header = "{" + entry("a", "U8", "[4]", 0, 4) + "}";
        try (TensorArchive archive = open(file(header, bytes(1, 2, 3, 4)))) {
            MemorySegment seg;
            try (Arena arena = Arena.ofConfined()) {
                seg = archive.data(archive.tensors().getFirst(), arena);
                assertThat(seg.isMapped()).isTrue();
                assertThat(seg.isReadOnly()).isTrue();
                assertThat(seg.byteSize()).isEqualTo(4);
                assertThat(seg.get(ValueLayout.JAVA_BYTE, 3)).isEqualTo((byte) 4);
            }
            assertThat(seg.scope().isAlive()).isFalse();
        }
    }

    @Test
    void everySpecDtypeParsesWithItsByteSize() {
        // name, shape, bytes worked out from the spec: bits per element x elements / 8.
        record Case(String dtype, String shape, long[] dims, int bytes) {
        }
        List<Case> cases = List.of(
                new Case("BOOL", "[3]", new long[]{3}, 3),
                new Case("F4", "[2,3]", new long[]{2, 3}, 3),          // 6 x 4 bits
                new Case("F6_E2M3", "[4]", new long[]{4}, 3),          // 4 x 6 bits
                new Case("F6_E3M2", "[2,4]", new long[]{2, 4}, 6),     // 8 x 6 bits
                new Case("U8", "[5]", new long[]{5}, 5),
                new Case("I8", "[5]", new long[]{5}, 5),
                new Case("F8_E5M2", "[5]", new long[]{5}, 5),
                new Case("F8_E4M3", "[5]", new long[]{5}, 5),
                new Case("F8_E8M0", "[5]", new long[]{5}, 5),
                new Case("F8_E4M3FNUZ", "[5]", new long[]{5}, 5),
                new Case("F8_E5M2FNUZ", "[5]", new long[]{5}, 5),
                new Case("I16", "[3]", new long[]{3}, 6),
                new Case("U16", "[3]", new long[]{3}, 6),
                new Case("F16", "[3]", new long[]{3}, 6),
                new Case("BF16", "[3]", new long[]{3}, 6),
                new Case("I32", "[3]", new long[]{3}, 12),
                new Case("U32", "[3]", new long[]{3}, 12),
                new Case("F32", "[3]", new long[]{3}, 12),
                new Case("C64", "[3]", new long[]{3}, 24),
                new Case("F64", "[3]", new long[]{3}, 24),
                new Case("I64", "[3]", new long[]{3}, 24),
                new Case("U64", "[3]", new long[]{3}, 24));
        StringBuilder header = new StringBuilder("{");
        int offset = 0;
        for (Case c : cases) {
            if (offset > 0) header.append(',');
            header.append(entry(c.dtype().toLowerCase(), c.dtype(), c.shape(), offset, offset + c.bytes()));
            offset += c.bytes();
        }
        header.append('}');
        try (TensorArchive archive = open(file(header.toString(), zeros(offset)))) {
            assertThat(archive.tensors()).hasSize(22);
            for (Case c : cases) {
                TensorEntry e = archive.tensor(c.dtype().toLowerCase()).orElseThrow();
                assertThat(e.dtype().name()).isEqualTo(c.dtype());
                assertThat(e.shape().toArray()).isEqualTo(c.dims());
                assertThat(e.byteSize()).as(c.dtype()).isEqualTo(c.bytes());
            }
        }
        assertThat(cases).extracting(Case::dtype)
                .containsExactlyElementsOf(DType.SAFETENSORS.stream().map(DType::name).toList());
    }

    @Test
    void rejectsSubByteTensorsThatDoNotFillWholeBytes() {
        // F4 x 3 = 12 bits; F6 x 2 = 12 bits: neither is a whole number of bytes.
        assertRejected(file("{" + entry("f4", "F4", "[3]", 0, 2) + "}", zeros(2)), MalformedFileException.class, "f4");
        assertRejected(file("{" + entry("f6", "F6_E2M3", "[2]", 0, 2) + "}", zeros(2)), MalformedFileException.class, "f6");
    }

    @Test
    void readsScalarAndEmptyTensors() {
        String header = "{" + entry("s", "F32", "[]", 0, 4) + "," + entry("e", "U8", "[0,5]", 4, 4)
                + "," + entry("z", "BF16", "[2,0]", 4, 4) + "}";
        try (TensorArchive archive = open(file(header, bytes(0x00, 0x00, 0x80, 0x3F))); Arena arena = Arena.ofConfined()) {
            TensorEntry s = archive.tensor("s").orElseThrow();
            assertThat(s.shape().rank()).isZero();
            assertThat(s.elementCount()).isEqualTo(1);
            assertThat(archive.data(s, arena).get(ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(java.nio.ByteOrder.LITTLE_ENDIAN), 0))
                    .isEqualTo(1.0f);
            TensorEntry e = archive.tensor("e").orElseThrow();
            assertThat(e.shape().toArray()).containsExactly(0, 5);
            assertThat(e.byteSize()).isZero();
            assertThat(archive.data(e, arena).byteSize()).isZero();
            assertThat(archive.tensor("z").orElseThrow().byteSize()).isZero();
        }
    }

    @Test
    void readsMetadataAsAnOrderedStringMap() {
        String header = "{\"__metadata__\":{\"format\":\"pt\",\"b\":\"2\",\"a\":\"\\u00e9\"}," + entry("w", "U8", "[1]", 0, 1) + "}";
        try (TensorArchive archive = open(file(header, bytes(7)))) {
            assertThat(archive.metadata()).containsExactly(Map.entry("format", "pt"), Map.entry("b", "2"), Map.entry("a", "é"));
            assertThat(archive.tensors()).extracting(TensorEntry::name).containsExactly("w");
        }
    }

    @Test
    void acceptsNullMetadataAndEmptyHeader() {
        try (TensorArchive archive = open(file("{\"__metadata__\":null}", new byte[0]))) {
            assertThat(archive.metadata()).isEmpty();
            assertThat(archive.tensors()).isEmpty();
        }
        try (TensorArchive archive = open(file("{}      ", new byte[0]))) {
            assertThat(archive.tensors()).isEmpty();
        }
    }

    @Test
    void listsTensorsInDataOrderAndIndexesThemByName() {
        String header = "{" + entry("b", "U8", "[2]", 2, 4) + "," + entry("a", "U8", "[2]", 0, 2) + "}";
        try (TensorArchive archive = open(file(header, bytes(1, 2, 3, 4))); Arena arena = Arena.ofConfined()) {
            assertThat(archive.tensors()).extracting(TensorEntry::name).containsExactly("a", "b");
            assertThat(archive.data(archive.tensor("b").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(3, 4);
            assertThat(archive.tensor("c")).isEmpty();
        }
    }

    @Test
    void readsNonAsciiNamesAndJsonEscapes() {
        String header = "{" + entry("ün.名前", "U8", "[1]", 0, 1) + "," + entry("q\\\"x\\\\y", "U8", "[1]", 1, 2) + "}";
        try (TensorArchive archive = open(file(header, bytes(1, 2)))) {
            assertThat(archive.tensors()).extracting(TensorEntry::name).containsExactly("ün.名前", "q\"x\\y");
        }
    }

    @Test
    void acceptsWhitespaceBetweenTokensAndTrailingSpaces() {
        String header = "{ \"a\" :\n { \"shape\" : [ 1 ] , \"data_offsets\" : [0, 4], \"dtype\" : \"I32\" } }   ";
        try (TensorArchive archive = open(file(header, bytes(1, 0, 0, 0)))) {
            assertThat(archive.tensors()).containsExactly(new TensorEntry("a", DType.I32, Shape.of(1), 4));
            assertThat(archive.properties()).containsEntry("header bytes", Integer.toString(header.length()));
        }
    }

    @Test
    void describesTheFileInProperties() {
        String header = "{" + entry("a", "U8", "[3]", 0, 3) + "}";   // 53 bytes
        try (TensorArchive archive = open(file(header, bytes(1, 2, 3)))) {
            assertThat(archive.properties())
                    .containsEntry("header bytes", "53")
                    .containsEntry("data offset", "61")
                    .containsEntry("data bytes", "3")
                    .containsEntry("byte order", "little-endian");
            assertThat(archive.path()).isPresent();
        }
    }

    @Test
    void opensAFileLargerThan2GiBAndMapsOneTensorPastThatOffset() throws Exception {
        // A sparse file: the header declares 3 GiB of U8 after a 1-byte tensor; opening must
        // not read them, and data() maps the tensor whatever its offset and size.
        long big = 3L << 30;
        String header = "{" + entry("head", "U8", "[8]", 0, 8) + "," + entry("big", "U8", "[" + big + "]", 8, 8 + big) + "}";
        Path path = write(dir, file(header, bytes(1, 2, 3, 4, 5, 6, 7, 8)));
        try (RandomAccessFile raf = new RandomAccessFile(path.toFile(), "rw")) {
            raf.setLength(raf.length() + big);
            raf.seek(raf.length() - 1);
            raf.write(42);
        }
        try (TensorArchive archive = reader.open(path, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
            MemorySegment seg = archive.data(archive.tensor("big").orElseThrow(), arena);
            assertThat(seg.byteSize()).isEqualTo(big);
            assertThat(seg.get(ValueLayout.JAVA_BYTE, big - 1)).isEqualTo((byte) 42);
            assertThat(seg.get(ValueLayout.JAVA_BYTE, 0)).isZero();
        }
    }

    @Test
    void refusesDataAfterClose() {
        TensorArchive archive = open(file("{" + entry("a", "U8", "[1]", 0, 1) + "}", bytes(1)));
        TensorEntry a = archive.tensors().getFirst();
        archive.close();
        try (Arena arena = Arena.ofConfined()) {
            assertThatThrownBy(() -> archive.data(a, arena)).isInstanceOf(TensorIOException.class);
        }
    }

    // ---------------------------------------------------------------- detection

    private static FileProbe probe(byte[] content) {
        return new FileProbe("x.bin", content.length, ByteBuffer.wrap(content, 0, Math.min(content.length, FileProbe.HEAD_BYTES)));
    }

    @Test
    void recognizesTheLengthPrefixAndOpeningBrace() {
        byte[] good = file("{" + entry("a", "U8", "[1]", 0, 1) + "}", bytes(1));
        assertThat(reader.canRead(probe(good))).isTrue();
        assertThat(reader.canRead(probe(file("{}", new byte[0])))).isTrue();
        assertThat(reader.canRead(probe(concat(prefix(1), bytes('{'))))).isFalse();               // n < 2
        assertThat(reader.canRead(probe(concat(prefix(100), "{}".getBytes(StandardCharsets.UTF_8))))).isFalse(); // past EOF
        assertThat(reader.canRead(probe(file("[1,2,3] ", new byte[0])))).isFalse();                // not '{'
        assertThat(reader.canRead(probe(concat(prefix(-8), "{}".getBytes(StandardCharsets.UTF_8))))).isFalse(); // 2^64-8
        assertThat(reader.canRead(probe(bytes(2, 0, 0, 0)))).isFalse();                             // too short
    }

    // ---------------------------------------------------------------- length and limits

    @Test
    void rejectsAFileTooShortForTheLengthPrefix() {
        assertRejected(bytes(16, 0, 0, 0), MalformedFileException.class, null);
    }

    @Test
    void rejectsAHeaderLengthPastTheEndOfTheFile() {
        assertRejected(concat(prefix(1056), "{}".getBytes(StandardCharsets.UTF_8), zeros(70)), MalformedFileException.class, null);
    }

    @Test
    void rejectsAHeaderOverTheLimitBeforeAllocatingIt() {
        // 200 MB declared in an 80-byte file: the limit speaks first, as the reference's HeaderTooLarge.
        assertRejected(concat(prefix(200_000_000L), "{}".getBytes(StandardCharsets.UTF_8), zeros(70)),
                LimitExceededException.class, null);
        // 2^64 - 8 read as unsigned: huge, not negative.
        assertRejected(concat(prefix(-8), "{}".getBytes(StandardCharsets.UTF_8), zeros(70)), LimitExceededException.class, null);
        // A caller's own limit.
        byte[] ok = file("{" + entry("a", "U8", "[1]", 0, 1) + "}", bytes(1));
        assertRejected(ok, ParseLimits.defaults().withMaxHeaderBytes(16), LimitExceededException.class, null);
    }

    @Test
    void rejectsAHeaderThatDoesNotStartWithABrace() {
        assertRejected(file("[1,2,3] ", new byte[0]), MalformedFileException.class, null);
        assertRejected(file(" {}", new byte[0]), MalformedFileException.class, null);
        assertRejected(file(new byte[0], new byte[0]), MalformedFileException.class, null);
    }

    @Test
    void rejectsPaddingOtherThanSpaces() {
        String json = "{" + entry("w", "F32", "[1]", 0, 4) + "}";
        assertRejected(file(concat(json.getBytes(StandardCharsets.UTF_8), zeros(4)), zeros(4)), MalformedFileException.class, null);
        assertRejected(file(json + "\t  ", zeros(4)), MalformedFileException.class, null);
    }

    @Test
    void rejectsMalformedUtf8() {
        byte[] start = "{\"w".getBytes(StandardCharsets.UTF_8);
        byte[] rest = "\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}".getBytes(StandardCharsets.UTF_8);
        assertRejected(file(concat(start, bytes(0xFF, 0xFE), rest), bytes(1)), MalformedFileException.class, null);
        assertRejected(file(concat(start, bytes(0xC0, 0xAF), rest), bytes(1)), MalformedFileException.class, null);       // overlong '/'
        assertRejected(file(concat(start, bytes(0xED, 0xA0, 0x80), rest), bytes(1)), MalformedFileException.class, null); // surrogate
        assertRejected(file(concat(start, bytes(0xE4, 0xBD), rest), bytes(1)), MalformedFileException.class, null);       // cut short
        assertRejected(file(concat(start, bytes(0xF4, 0x90, 0x80, 0x80), rest), bytes(1)), MalformedFileException.class, null); // > U+10FFFF
    }

    @Test
    void utf8CheckAcceptsEveryEncodingLength() {
        byte[] s = "a\u00e9\u540d\uD83D\uDE00".getBytes(StandardCharsets.UTF_8);  // 1, 2, 3, 4 bytes
        assertThat(SafetensorsHeader.firstInvalidUtf8(s, s.length)).isEqualTo(-1);
        assertThat(SafetensorsHeader.firstInvalidUtf8(bytes('a', 0x80), 2)).isEqualTo(1);
    }

    // ---------------------------------------------------------------- JSON structure

    @Test
    void rejectsAHeaderThatIsNotAnObjectOfObjects() {
        assertRejected(file("{\"w\":[1,2]}", new byte[0]), MalformedFileException.class, "w");
        assertRejected(file("{\"w\":\"F32\"}", new byte[0]), MalformedFileException.class, "w");
        assertRejected(file("{}{}", new byte[0]), MalformedFileException.class, null);
    }

    @Test
    void rejectsTruncatedJson() {
        assertRejected(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]   ", zeros(16)),
                MalformedFileException.class, null);
        // Ends with a brace but the object is still open.
        assertRejected(file("{\"w\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}", zeros(16)),
                MalformedFileException.class, "w");
    }

    @Test
    void rejectsUnknownAndMisspelledDtypes() {
        assertRejected(file("{" + entry("w", "F128", "[1]", 0, 16) + "}", zeros(16)), MalformedFileException.class, "w");
        assertRejected(file("{" + entry("w", "f32", "[1]", 0, 4) + "}", zeros(4)), MalformedFileException.class, "w");
        assertRejected(file("{" + entry("w", "Q4_0", "[32]", 0, 18) + "}", zeros(18)), MalformedFileException.class, "w");
    }

    @Test
    void rejectsMissingFields() {
        assertRejected(file("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", zeros(1)), MalformedFileException.class, "w");
        assertRejected(file("{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", zeros(1)), MalformedFileException.class, "w");
        assertRejected(file("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", zeros(1)), MalformedFileException.class, "w");
        assertRejected(file("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", zeros(1)), MalformedFileException.class, "w");
        assertRejected(file("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", zeros(1)), MalformedFileException.class, "w");
    }

    @Test
    void rejectsMetadataThatIsNotAStringMap() {
        assertRejected(file("{\"__metadata__\":{\"n\":1}}", new byte[0]), MalformedFileException.class, null);
        assertRejected(file("{\"__metadata__\":{\"n\":{\"x\":\"y\"}}}", new byte[0]), MalformedFileException.class, null);
        assertRejected(file("{\"__metadata__\":[\"a\"]}", new byte[0]), MalformedFileException.class, null);
        assertRejected(file("{\"__metadata__\":\"text\"}", new byte[0]), MalformedFileException.class, null);
    }

    @Test
    void rejectsDuplicateKeys() {
        String w1 = entry("w", "F32", "[2]", 0, 8);
        String w2 = entry("w", "F32", "[2]", 8, 16);
        assertRejected(file("{" + w1 + "," + w2 + "}", zeros(16)), MalformedFileException.class, "w");
        assertRejected(file("{\"w\":{\"dtype\":\"U8\",\"dtype\":\"I8\",\"shape\":[1],\"data_offsets\":[0,1]}}", zeros(1)),
                MalformedFileException.class, "w");
        assertRejected(file("{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", new byte[0]), MalformedFileException.class, null);
        assertRejected(file("{\"__metadata__\":{},\"__metadata__\":{}}", new byte[0]), MalformedFileException.class, null);
    }

    // ---------------------------------------------------------------- shapes

    @Test
    void rejectsNegativeAndNonIntegerDimensions() {
        assertRejected(file("{" + entry("w", "F32", "[-4]", 0, 16) + "}", zeros(16)), MalformedFileException.class, "w");
        assertRejected(file("{" + entry("w", "F32", "[4.0]", 0, 16) + "}", zeros(16)), MalformedFileException.class, "w");
        assertRejected(file("{" + entry("w", "F32", "[\"4\"]", 0, 16) + "}", zeros(16)), MalformedFileException.class, "w");
    }

    @Test
    void rejectsAShapeWhoseProductOverflowsAsALimit() {
        // 2^40 cubed = 2^120 elements.
        assertRejected(file("{" + entry("w", "F32", "[1099511627776,1099511627776,1099511627776]", 0, 16) + "}", zeros(16)),
                LimitExceededException.class, "w");
        // 2^61 F64 elements fit a count, but their 2^64 bytes do not.
        assertRejected(file("{" + entry("w", "F64", "[2305843009213693952]", 0, 16) + "}", zeros(16)),
                LimitExceededException.class, "w");
        // A dimension beyond a signed 64-bit integer.
        assertRejected(file("{" + entry("w", "F32", "[18446744073709551615]", 0, 16) + "}", zeros(16)),
                LimitExceededException.class, "w");
    }

    @Test
    void rejectsMoreDimensionsThanTheRankLimit() {
        ParseLimits d = ParseLimits.defaults();
        ParseLimits rank2 = new ParseLimits(d.maxHeaderBytes(), d.maxTensors(), 2, d.maxMetadataEntries(),
                d.maxStringBytes(), d.maxArrayLength(), d.maxNestingDepth(), d.maxPickleBytes(), d.maxPickleValues(),
                d.maxInflatedBytes(), d.maxInflationRatio());
        byte[] rank3 = file("{" + entry("w", "U8", "[1,1,1]", 0, 1) + "}", zeros(1));
        assertRejected(rank3, rank2, LimitExceededException.class, "w");
        open(rank3).close();
    }

    @Test
    void rejectsMoreTensorsThanTheLimit() {
        byte[] two = file("{" + entry("a", "U8", "[1]", 0, 1) + "," + entry("b", "U8", "[1]", 1, 2) + "}", zeros(2));
        assertRejected(two, ParseLimits.defaults().withMaxTensors(1), LimitExceededException.class, null);
        open(two, ParseLimits.defaults().withMaxTensors(2)).close();
    }

    // ---------------------------------------------------------------- data offsets

    @Test
    void rejectsReversedOffsets() {
        assertRejected(file("{" + entry("w", "F32", "[4]", 16, 0) + "}", zeros(16)), MalformedFileException.class, "w");
    }

    @Test
    void rejectsOffsetsWhoseSpanIsNotTheDtypeTimesShape() {
        assertRejected(file("{" + entry("w", "F32", "[3]", 0, 16) + "}", zeros(16)), MalformedFileException.class, "w");
    }

    @Test
    void rejectsOverlappingOffsets() {
        assertRejected(file("{" + entry("a", "F32", "[4]", 0, 16) + "," + entry("b", "F32", "[4]", 8, 24) + "}", zeros(24)),
                MalformedFileException.class, "b");
    }

    @Test
    void rejectsAGapBetweenTensors() {
        assertRejected(file("{" + entry("a", "U8", "[4]", 0, 4) + "," + entry("b", "U8", "[4]", 8, 12) + "}", zeros(12)),
                MalformedFileException.class, "b");
        // Data that does not start at offset 0 leaves a gap too.
        assertRejected(file("{" + entry("a", "U8", "[4]", 4, 8) + "}", zeros(8)), MalformedFileException.class, "a");
    }

    @Test
    void rejectsOffsetsPastTheEndOfTheFile() {
        assertRejected(file("{" + entry("w", "F32", "[8]", 0, 32) + "}", zeros(16)), MalformedFileException.class, "w");
    }

    @Test
    void rejectsTrailingBytesAfterTheData() {
        assertRejected(file("{" + entry("w", "F32", "[4]", 0, 16) + "}", zeros(17)), MalformedFileException.class, null);
        assertRejected(file("{}", zeros(1)), MalformedFileException.class, null);
    }
}
