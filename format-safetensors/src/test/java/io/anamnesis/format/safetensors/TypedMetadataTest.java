package io.anamnesis.format.safetensors;

import io.anamnesis.api.DType;
import io.anamnesis.api.LimitExceededException;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.MetaValue.Array;
import io.anamnesis.api.MetaValue.Int;
import io.anamnesis.api.MetaValue.Real;
import io.anamnesis.api.MetaValue.Str;
import io.anamnesis.api.MetaValue.Type;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

import static io.anamnesis.format.safetensors.SafetensorsBytes.entry;
import static io.anamnesis.format.safetensors.SafetensorsBytes.file;
import static io.anamnesis.format.safetensors.SafetensorsBytes.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Typed values in {@code __metadata__} ({@code typed-json/1}, docs/metadata.md): the header
 * text is compared with the specification's form written out by hand, and reading it back
 * must give the same types and bits.
 */
class TypedMetadataTest {
    @TempDir
    Path dir;

    private final SafetensorsReader reader = new SafetensorsReader();
    private final SafetensorsWriter writer = new SafetensorsWriter();

    private static PlannedTensor one() {
        return new PlannedTensor("w", DType.U8, Shape.of(1), 1, arena -> (first, count, dest) -> dest.set(ValueLayout.JAVA_BYTE, 0, (byte) 7));
    }

    private Path writeTyped(String name, Map<String, MetaValue> typed) {
        Map<String, String> strings = new LinkedHashMap<>();
        typed.forEach((k, v) -> strings.put(k, v.render()));
        Path out = dir.resolve(name);
        writer.write(new OutputPlan(Optional.empty(), strings, List.of(one()), typed), out, WriteOptions.threads(1));
        return out;
    }

    private static String header(Path file) throws IOException {
        byte[] b = Files.readAllBytes(file);
        int n = (b[0] & 0xFF) | (b[1] & 0xFF) << 8 | (b[2] & 0xFF) << 16;
        return new String(b, 8, n, StandardCharsets.UTF_8).stripTrailing();
    }

    @Test
    void typedValuesAreJsonTextUnderTheirOwnKeysAfterTheMarker() throws IOException {
        Map<String, MetaValue> typed = new LinkedHashMap<>();
        typed.put("general.architecture", new Str("llama"));
        typed.put("llama.block_count", MetaValue.u32(2));
        typed.put("llama.attention.layer_norm_rms_epsilon", Real.f32(1e-5f));
        typed.put("tokenizer.ggml.tokens", new Array(Type.STRING, List.of(new Str("<unk>"), new Str("é"))));
        typed.put("chat_template", new Str("{% if x %}"));
        Path out = writeTyped("typed.safetensors", typed);
        assertThat(header(out)).isEqualTo("{\"__metadata__\":{"
                + "\"anamnesis.metadata_encoding\":\"typed-json/1\","
                + "\"general.architecture\":\"llama\","
                + "\"llama.block_count\":\"{\\\"type\\\":\\\"u32\\\",\\\"value\\\":2}\","
                + "\"llama.attention.layer_norm_rms_epsilon\":\"{\\\"type\\\":\\\"f32\\\",\\\"value\\\":1.0E-5}\","
                + "\"tokenizer.ggml.tokens\":\"{\\\"type\\\":\\\"array\\\",\\\"item_type\\\":\\\"string\\\",\\\"value\\\":[\\\"<unk>\\\",\\\"é\\\"]}\","
                // a string that starts with '{' would read as a typed value: it is written in the typed form
                + "\"chat_template\":\"{\\\"type\\\":\\\"string\\\",\\\"value\\\":\\\"{% if x %}\\\"}\"},"
                + entry("w", "U8", "[1]", 0, 1) + "}");
        try (TensorArchive a = reader.open(out, ParseLimits.defaults())) {
            assertThat(a.typedMetadata()).containsExactlyEntriesOf(typed);
            // the marker is the encoding's, not a key/value
            assertThat(a.metadata()).doesNotContainKey("anamnesis.metadata_encoding")
                    .containsEntry("tokenizer.ggml.tokens", "[\"<unk>\", \"é\"]")
                    .containsEntry("llama.attention.layer_norm_rms_epsilon", "1.0E-5")
                    .containsEntry("chat_template", "{% if x %}");
            assertThat(a.structuredMetadata()).containsEntry("llama.block_count", 2L)
                    .containsEntry("tokenizer.ggml.tokens", List.of("<unk>", "é"));
            assertThat(a.properties()).containsEntry("metadata encoding", "typed-json/1").containsEntry("metadata entries", "5");
        }
    }

    @Test
    void everyValueTypeComesBackWithItsTypeAndBits() throws IOException {
        Map<String, MetaValue> typed = new LinkedHashMap<>();
        typed.put("u8", new Int(Type.U8, 255));
        typed.put("i8", new Int(Type.I8, -128));
        typed.put("u16", new Int(Type.U16, 65535));
        typed.put("i16", new Int(Type.I16, -32768));
        typed.put("u32", new Int(Type.U32, 4294967295L));
        typed.put("i32", new Int(Type.I32, Integer.MIN_VALUE));
        typed.put("u64", new Int(Type.U64, -1));
        typed.put("i64", new Int(Type.I64, Long.MIN_VALUE));
        typed.put("f32", Real.f32(Float.intBitsToFloat(0x3DCCCCCD)));
        typed.put("f32.subnormal", Real.f32(Float.MIN_VALUE));
        typed.put("f32.nan", Real.f32(Float.NaN));
        typed.put("f64", new Real(Type.F64, -0.0));
        typed.put("f64.inf", new Real(Type.F64, Double.POSITIVE_INFINITY));
        typed.put("bool", new MetaValue.Bool(false));
        typed.put("nul", new Str("a\u0000b"));
        typed.put("text", new Str("漢字 🦙 \"q\" \\ \n"));
        typed.put("empty", new Str(""));
        typed.put("empty.array", new Array(Type.I64, List.of()));
        typed.put("rows", new Array(Type.ARRAY, List.of(new Array(Type.F32, List.of(Real.f32(0.5f))),
                new Array(Type.ARRAY, List.of()), new Array(Type.STRING, List.of(new Str("x"))))));
        Path out = writeTyped("every.safetensors", typed);
        try (TensorArchive a = reader.open(out, ParseLimits.defaults())) {
            assertThat(a.typedMetadata()).containsExactlyEntriesOf(typed);
            assertThat(Float.floatToRawIntBits((float) ((Real) a.typedMetadata().get("f32")).value())).isEqualTo(0x3DCCCCCD);
        }
    }

    @Test
    void aPlanOfStringsIsWrittenPlainWithoutTheMarker() throws IOException {
        Path out = dir.resolve("plain.safetensors");
        writer.write(new OutputPlan(Optional.empty(), Map.of("quantization_config", "{\"bits\":4}"), List.of(one())),
                out, WriteOptions.threads(1));
        assertThat(header(out)).startsWith("{\"__metadata__\":{\"quantization_config\":\"{\\\"bits\\\":4}\"},");
        try (TensorArchive a = reader.open(out, ParseLimits.defaults())) {
            assertThat(a.typedMetadata()).containsExactly(Map.entry("quantization_config", new Str("{\"bits\":4}")));
            assertThat(a.properties()).doesNotContainKey("metadata encoding");
        }
    }

    @Test
    void aFileWithoutTheMarkerIsReadAsStringsWhateverItsValuesLookLike() throws IOException {
        Path in = write(dir, "nomarker.safetensors", file("{\"__metadata__\":{\"k\":\"{\\\"type\\\":\\\"u32\\\",\\\"value\\\":1}\"},"
                + entry("w", "U8", "[1]", 0, 1) + "}", new byte[]{7}));
        try (TensorArchive a = reader.open(in, ParseLimits.defaults())) {
            assertThat(a.typedMetadata()).containsExactly(Map.entry("k", new Str("{\"type\":\"u32\",\"value\":1}")));
        }
    }

    private Path withMarker(String name, String key, String jsonText) {
        String escaped = jsonText.replace("\\", "\\\\").replace("\"", "\\\"");
        return write(dir, name, file("{\"__metadata__\":{\"anamnesis.metadata_encoding\":\"typed-json/1\",\"ok\":\"plain\",\""
                + key + "\":\"" + escaped + "\"}," + entry("w", "U8", "[1]", 0, 1) + "}", new byte[]{7}));
    }

    @Test
    void aMalformedOrUnknownTypedValueIsAMalformedFileNamingTheKey() {
        List<String> bad = List.of("{\"type\":\"u32\",\"value\":", "{\"type\":\"u24\",\"value\":1}", "{\"type\":\"u8\",\"value\":300}",
                "{\"type\":\"array\",\"item_type\":\"string\",\"value\":[1]}", "{\"value\":1}", "{not json");
        for (int i = 0; i < bad.size(); i++) {
            Path in = withMarker("bad" + i + ".safetensors", "llama.block_count", bad.get(i));
            assertThatThrownBy(() -> reader.open(in, ParseLimits.defaults())).as(bad.get(i))
                    .isInstanceOf(MalformedFileException.class).hasMessageContaining("metadata key 'llama.block_count'");
        }
    }

    @Test
    void anUnknownEncodingIsUnsupported() {
        Path in = write(dir, "v2.safetensors", file("{\"__metadata__\":{\"anamnesis.metadata_encoding\":\"typed-json/2\"},"
                + entry("w", "U8", "[1]", 0, 1) + "}", new byte[]{7}));
        assertThatThrownBy(() -> reader.open(in, ParseLimits.defaults()))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("typed-json/2");
    }

    @Test
    void aMillionElementArrayWithinTheLimitsAndATypedErrorPastThem() throws IOException {
        List<MetaValue> merges = new ArrayList<>(1_000_000);
        for (int i = 0; i < 1_000_000; i++) merges.add(new Int(Type.I32, i - 500_000));
        Array big = new Array(Type.I32, merges);
        Path out = writeTyped("big.safetensors", Map.of("tokenizer.ggml.token_type", big));
        try (TensorArchive a = reader.open(out, ParseLimits.defaults())) {
            assertThat(a.typedMetadata().get("tokenizer.ggml.token_type")).isEqualTo(big);
        }
        assertThatThrownBy(() -> reader.open(out, ParseLimits.defaults().withMaxArrayLength(999_999)))
                .isInstanceOf(LimitExceededException.class).hasMessageContaining("metadata key 'tokenizer.ggml.token_type'");
        // the header limit bounds the whole: this one is over 7 MB
        assertThatThrownBy(() -> reader.open(out, ParseLimits.defaults().withMaxHeaderBytes(1_000_000)))
                .isInstanceOf(LimitExceededException.class);
    }

    @Test
    void aConversionCarriesTheSourcesTypedValues() throws IOException {
        MemoryArchive source = new MemoryArchive().add("w", DType.U8, Shape.of(1), new byte[]{7})
                .meta("format", "pt").meta("n", MetaValue.u32(7)).meta("eps", Real.f32(1e-5f));
        Path out = dir.resolve("converted.safetensors");
        writer.write(new OutputPlan(Optional.of(source), source.metadata(), List.of(one())), out, WriteOptions.threads(1));
        try (TensorArchive a = reader.open(out, ParseLimits.defaults())) {
            assertThat(a.typedMetadata()).containsExactly(Map.entry("format", new Str("pt")),
                    Map.entry("n", MetaValue.u32(7)), Map.entry("eps", Real.f32(1e-5f)));
        }
        assertThat(writer.metadataLoss(new OutputPlan(Optional.of(source), source.metadata(), List.of(one())))).isEmpty();
    }
}
