package io.anamnesis.format.safetensors;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Stream;

import static io.anamnesis.format.safetensors.SafetensorsBytes.bytes;
import static io.anamnesis.format.safetensors.SafetensorsBytes.entry;
import static io.anamnesis.format.safetensors.SafetensorsBytes.file;
import static io.anamnesis.format.safetensors.SafetensorsBytes.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SafetensorsWriterTest {
    @TempDir
    Path dir;

    private final SafetensorsReader reader = new SafetensorsReader();
    private final SafetensorsWriter writer = new SafetensorsWriter();

    /** A tensor whose byte i (counted over the whole tensor) is {@code (i * 7 + seed) mod 256}. */
    private static PlannedTensor pattern(String name, DType dtype, Shape shape, int seed) {
        return new PlannedTensor(name, dtype, shape, dtype.blockElements(), arena -> (first, count, dest) -> {
            long base = dtype.byteSize(first);
            for (long i = 0; i < dest.byteSize(); i++) {
                dest.set(ValueLayout.JAVA_BYTE, i, (byte) ((base + i) * 7 + seed));
            }
        });
    }

    private static PlannedTensor constant(String name, DType dtype, Shape shape, byte... content) {
        return new PlannedTensor(name, dtype, shape, dtype.blockElements(), arena -> (first, count, dest) -> {
            long base = dtype.byteSize(first);
            for (long i = 0; i < dest.byteSize(); i++) dest.set(ValueLayout.JAVA_BYTE, i, content[(int) (base + i)]);
        });
    }

    private static OutputPlan plan(Map<String, String> metadata, PlannedTensor... tensors) {
        return new OutputPlan(Optional.empty(), metadata, List.of(tensors));
    }

    @Test
    void writesTheHeaderAsTheSpecLaysItOut() throws IOException {
        Path out = dir.resolve("out.safetensors");
        writer.write(plan(Map.of("k", "v"),
                constant("a", DType.F32, Shape.of(2), bytes(0, 0, 0x80, 0x3F, 0, 0, 0, 0x40)),
                constant("s", DType.I64, Shape.SCALAR, bytes(5, 0, 0, 0, 0, 0, 0, 0))), out, WriteOptions.threads(1));

        byte[] content = Files.readAllBytes(out);
        String json = "{\"__metadata__\":{\"k\":\"v\"},"
                + "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"s\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}";
        assertThat(json).hasSize(132);       // 26 + 53 + 53, so the header is 136 bytes: four spaces of padding
        assertThat(content[0] & 0xFF).isEqualTo(136);
        assertThat(Arrays.copyOfRange(content, 1, 8)).containsOnly(0);
        assertThat(new String(content, 8, 136, StandardCharsets.UTF_8)).isEqualTo(json + "    ");
        assertThat(Arrays.copyOfRange(content, 144, 160))
                .containsExactly(bytes(0, 0, 0x80, 0x3F, 0, 0, 0, 0x40, 5, 0, 0, 0, 0, 0, 0, 0));
        assertThat(content).hasSize(160);
    }

    @Test
    void padsTheHeaderWithSpacesToAMultipleOf8() throws IOException {
        for (String name : List.of("a", "ab", "abc", "abcd", "abcde", "abcdef", "abcdefg", "abcdefgh")) {
            Path out = dir.resolve(name + ".safetensors");
            writer.write(plan(Map.of(), constant(name, DType.U8, Shape.of(1), bytes(9))), out, WriteOptions.threads(1));
            byte[] content = Files.readAllBytes(out);
            int n = content[0] & 0xFF;
            assertThat(n % 8).as(name).isZero();
            String header = new String(content, 8, n, StandardCharsets.UTF_8);
            String json = header.stripTrailing();
            assertThat(json).endsWith("}");
            assertThat(header.substring(json.length())).matches(" {0,7}");
            assertThat(content[content.length - 1]).isEqualTo((byte) 9);
        }
    }

    @Test
    void writesAnEmptyPlanAsBracesAndSixSpaces() throws IOException {
        Path out = dir.resolve("empty.safetensors");
        writer.write(plan(Map.of()), out, WriteOptions.threads(1));
        assertThat(Files.readAllBytes(out)).containsExactly(bytes(8, 0, 0, 0, 0, 0, 0, 0, '{', '}', ' ', ' ', ' ', ' ', ' ', ' '));
    }

    @Test
    void escapesNamesAndMetadataAsJsonStrings() throws IOException {
        Path out = dir.resolve("names.safetensors");
        String odd = "a\"b\\c\nd\u0001é名\uD83D\uDE00";
        writer.write(plan(Map.of("note", "tab\there"), constant(odd, DType.U8, Shape.of(1), bytes(1))), out,
                WriteOptions.threads(1));
        byte[] content = Files.readAllBytes(out);
        String header = new String(content, 8, content[0] & 0xFF, StandardCharsets.UTF_8);
        assertThat(header).contains("\"a\\\"b\\\\c\\nd\\u0001é名\uD83D\uDE00\"").contains("\"tab\\there\"");
        try (TensorArchive archive = reader.open(out, ParseLimits.defaults())) {
            assertThat(archive.tensors()).extracting(TensorEntry::name).containsExactly(odd);
            assertThat(archive.metadata()).containsEntry("note", "tab\there");
        }
    }

    @Test
    void roundTripsAPlanMadeFromAnArchive() throws IOException {
        // F32 [1.0, -2.0], BF16 [1.0] = 0x3F80, I8 scalar -3, F4 [2,2] (2 bytes), empty U8 [0,3].
        String header = "{\"__metadata__\":{\"format\":\"pt\",\"z\":\"last\"},"
                + entry("f32", "F32", "[2]", 0, 8) + "," + entry("bf16", "BF16", "[1]", 8, 10) + ","
                + entry("i8", "I8", "[]", 10, 11) + "," + entry("f4", "F4", "[2,2]", 11, 13) + ","
                + entry("none", "U8", "[0,3]", 13, 13) + "}";
        byte[] data = bytes(0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0, 0x80, 0x3F, 0xFD, 0x21, 0x43);
        Path source = write(dir, "in.safetensors", file(header, data));
        Path out = dir.resolve("out.safetensors");
        Anamnesis amn = Anamnesis.of(List.of(reader), List.of(writer), List.of());
        try (TensorArchive archive = amn.open(source)) {
            writer.write(amn.plan(archive, DType.BF16).toOutputPlan(), out, WriteOptions.threads(2));
        }
        try (TensorArchive back = reader.open(out, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
            assertThat(back.metadata()).containsExactly(Map.entry("format", "pt"), Map.entry("z", "last"));
            assertThat(back.tensors()).containsExactly(
                    new TensorEntry("f32", DType.F32, Shape.of(2), 8),
                    new TensorEntry("bf16", DType.BF16, Shape.of(1), 2),
                    new TensorEntry("i8", DType.I8, Shape.SCALAR, 1),
                    new TensorEntry("f4", DType.F4, Shape.of(2, 2), 2),
                    new TensorEntry("none", DType.U8, Shape.of(0, 3), 0));
            assertThat(back.data(back.tensor("f32").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(bytes(0, 0, 0x80, 0x3F, 0, 0, 0, 0xC0));
            assertThat(back.data(back.tensor("bf16").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(bytes(0x80, 0x3F));
            assertThat(back.data(back.tensor("i8").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(bytes(0xFD));
            assertThat(back.data(back.tensor("f4").orElseThrow(), arena).toArray(ValueLayout.JAVA_BYTE))
                    .containsExactly(bytes(0x21, 0x43));
            assertThat(back.properties().get("data offset")).satisfies(o -> assertThat(Long.parseLong(o) % 8).isZero());
        }
    }

    @Test
    void writesIdenticalBytesWithOneAndFourThreads() throws IOException {
        // Several tensors larger than one 4 MB chunk, so that threads interleave within and across tensors.
        PlannedTensor[] tensors = {
                pattern("a", DType.F32, Shape.of(1500, 1000), 1),
                pattern("b", DType.U8, Shape.of(5_000_001), 2),
                pattern("c", DType.BF16, Shape.of(3, 1_000_000), 3),
                pattern("d", DType.F4, Shape.of(6), 4),
                pattern("e", DType.I64, Shape.SCALAR, 5)};
        Path one = dir.resolve("one.safetensors");
        Path four = dir.resolve("four.safetensors");
        writer.write(plan(Map.of("m", "1"), tensors), one, WriteOptions.threads(1));
        writer.write(plan(Map.of("m", "1"), tensors), four, WriteOptions.threads(4));
        assertThat(Files.mismatch(one, four)).isEqualTo(-1);

        try (TensorArchive archive = reader.open(four, ParseLimits.defaults()); Arena arena = Arena.ofConfined()) {
            var b = archive.data(archive.tensor("b").orElseThrow(), arena);
            assertThat(b.byteSize()).isEqualTo(5_000_001);
            // byte i of b is (i * 7 + 2) mod 256: i = 4,999,999 gives 34,999,995 mod 256 = 187.
            assertThat(b.get(ValueLayout.JAVA_BYTE, 4_999_999) & 0xFF).isEqualTo(187);
            var c = archive.data(archive.tensor("c").orElseThrow(), arena);
            // byte 4,194,305 of c (just past the first 4 MiB chunk): 29,360,138 mod 256 = 10.
            assertThat(c.get(ValueLayout.JAVA_BYTE, 4_194_305) & 0xFF).isEqualTo(10);
        }
    }

    @Test
    void leavesNoFileBehindWhenAProducerThrows() throws IOException {
        PlannedTensor failing = new PlannedTensor("bad", DType.U8, Shape.of(10_000_000), 1, arena -> (first, count, dest) -> {
            if (first > 0) throw MalformedFileException.inTensor("bad", "source data is corrupt");
            dest.fill((byte) 1);
        });
        Path out = dir.resolve("out.safetensors");
        for (int threads : new int[]{1, 4}) {
            assertThatThrownBy(() -> writer.write(plan(Map.of(), pattern("ok", DType.U8, Shape.of(100), 0), failing),
                    out, WriteOptions.threads(threads)))
                    .isInstanceOf(MalformedFileException.class).hasMessageContaining("corrupt");
            try (Stream<Path> files = Files.list(dir)) {
                assertThat(files.toList()).as("no target and no temporary file").isEmpty();
            }
        }
    }

    @Test
    void keepsAnExistingTargetWhenTheWriteFails() throws IOException {
        Path out = write(dir, "out.safetensors", bytes(1, 2, 3));
        PlannedTensor failing = new PlannedTensor("bad", DType.U8, Shape.of(4), 1, arena -> {
            throw new IllegalStateException("producer cannot open its input");
        });
        assertThatThrownBy(() -> writer.write(plan(Map.of(), failing), out, WriteOptions.threads(1)))
                .isInstanceOf(IllegalStateException.class);
        assertThat(Files.readAllBytes(out)).containsExactly(bytes(1, 2, 3));
        try (Stream<Path> files = Files.list(dir)) {
            assertThat(files.toList()).containsExactly(out);
        }
    }

    @Test
    void supportsEverySpecDtypeButNoBlockDtype() {
        assertThat(DType.SAFETENSORS).allMatch(writer::supports);
        DType q40 = new DType("Q4_0", DType.Kind.QUANTIZED, 32, 18);
        assertThat(writer.supports(q40)).isFalse();
        Path out = dir.resolve("q.safetensors");
        assertThatThrownBy(() -> writer.write(plan(Map.of(), pattern("q", q40, Shape.of(32), 0)), out, WriteOptions.threads(1)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("'q'");
        assertThat(out).doesNotExist();
    }

    @Test
    void refusesNamesTheFormatCannotHold() {
        Path out = dir.resolve("x.safetensors");
        assertThatThrownBy(() -> writer.write(plan(Map.of(), pattern("__metadata__", DType.U8, Shape.of(1), 0)), out,
                WriteOptions.threads(1))).isInstanceOf(UnsupportedFeatureException.class);
        assertThatThrownBy(() -> writer.write(plan(Map.of(), pattern("lone\uD800", DType.U8, Shape.of(1), 0)), out,
                WriteOptions.threads(1))).isInstanceOf(UnsupportedFeatureException.class);
        Map<String, String> badMeta = new LinkedHashMap<>();
        badMeta.put("k", "\uDC00");
        assertThatThrownBy(() -> writer.write(plan(badMeta, pattern("a", DType.U8, Shape.of(1), 0)), out,
                WriteOptions.threads(1))).isInstanceOf(UnsupportedFeatureException.class);
        assertThat(out).doesNotExist();
    }
}
