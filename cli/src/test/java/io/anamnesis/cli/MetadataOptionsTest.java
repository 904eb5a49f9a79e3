package io.anamnesis.cli;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.MetaValue.Type;
import io.anamnesis.api.TensorArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;

import static io.anamnesis.cli.Runs.amn;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@code convert --to gguf --gguf-kv/--gguf-metadata}, and what every conversion says about
 * the metadata it drops, through the installed modules.
 */
class MetadataOptionsTest {
    @TempDir
    Path dir;

    private static final Anamnesis AMN = Anamnesis.installed();

    /** A safetensors file as the spec lays it out: one F16 tensor [2, 32] and the given {@code __metadata__} JSON. */
    private Path safetensors(String name, String metadataJson) throws IOException {
        String header = "{\"__metadata__\":" + metadataJson + ",\"w\":{\"dtype\":\"F16\",\"shape\":[2,32],\"data_offsets\":[0,128]}}";
        byte[] json = header.getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(8 + json.length + 128).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(json.length).put(json);
        for (int i = 0; i < 64; i++) b.putShort((short) 0x3C00); // 1.0 in F16
        return Files.write(dir.resolve(name), b.array());
    }

    private Map<String, MetaValue> typedOf(Path file) {
        try (TensorArchive a = AMN.open(file)) {
            return a.typedMetadata();
        }
    }

    @Test
    void setsTypedKeysFromAFileAndTheCommandLine() throws IOException {
        Path in = safetensors("plain.safetensors", "{\"format\":\"pt\"}");
        Path json = Files.writeString(dir.resolve("kv.json"), """
                {"general.architecture": "llama",
                 "llama.context_length": 2048,
                 "tokenizer.ggml.tokens": {"type": "array", "item_type": "string", "value": ["<unk>", "é"]},
                 "tokenizer.ggml.scores": {"type": "array", "item_type": "f32", "value": [0.0, -1.5]}}
                """);
        Path out = dir.resolve("out.gguf");
        Runs.Run r = amn(AMN, "convert", in.toString(), "--to", "gguf", "-o", out.toString(),
                "--gguf-metadata", json.toString(),
                "--gguf-kv", "llama.context_length=u32:4096",
                "--gguf-kv", "llama.attention.layer_norm_rms_epsilon=f32:1e-5",
                "--gguf-kv", "x.big=u64:18446744073709551615",
                "--gguf-kv", "tokenizer.ggml.add_bos_token=bool:true",
                "--gguf-kv", "general.name=str:a=b:c");
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("; 9 metadata keys").doesNotContain("dropped");
        Map<String, MetaValue> kv = typedOf(out);
        assertThat(kv).containsEntry("format", MetaValue.str("pt"))
                .containsEntry("general.architecture", MetaValue.str("llama"))
                .containsEntry("llama.context_length", MetaValue.u32(4096))        // --gguf-kv wins over the file
                .containsEntry("tokenizer.ggml.tokens", new MetaValue.Array(Type.STRING, List.of(MetaValue.str("<unk>"), MetaValue.str("é"))))
                .containsEntry("tokenizer.ggml.scores", new MetaValue.Array(Type.F32, List.of(MetaValue.Real.f32(0f), MetaValue.Real.f32(-1.5f))))
                .containsEntry("x.big", new MetaValue.Int(Type.U64, -1))
                .containsEntry("tokenizer.ggml.add_bos_token", new MetaValue.Bool(true))
                .containsEntry("general.name", MetaValue.str("a=b:c"))
                .hasSize(9);
        // 1e-5 as float32 is 0x3727C5AC
        assertThat(Float.floatToRawIntBits((float) ((MetaValue.Real) kv.get("llama.attention.layer_norm_rms_epsilon")).value()))
                .isEqualTo(0x3727C5AC);
    }

    @Test
    void badValuesAreUsageErrorsNamingTheKeyAndWriteNothing() throws IOException {
        Path in = safetensors("plain.safetensors", "{\"format\":\"pt\"}");
        Path badJson = Files.writeString(dir.resolve("bad.json"), "{\"ok\": 1, \"x.bad\": {\"type\": \"u8\", \"value\": 300}}");
        Path out = dir.resolve("out.gguf");
        for (String[] args : List.of(
                new String[]{"--gguf-kv", "x.bad=u8:256"},
                new String[]{"--gguf-kv", "x.bad=q4:1"},
                new String[]{"--gguf-kv", "x.bad=u32"},
                new String[]{"--gguf-kv", "x.bad=array:[1]"},
                new String[]{"--gguf-kv", "x.bad=f32:one"},
                new String[]{"--gguf-kv", "=u8:1"},
                new String[]{"--gguf-metadata", badJson.toString()},
                new String[]{"--gguf-metadata", dir.resolve("missing.json").toString()})) {
            String[] all = Stream.concat(Stream.of("convert", in.toString(), "--to", "gguf", "-o", out.toString()),
                    Stream.of(args)).toArray(String[]::new);
            Runs.Run r = amn(AMN, all);
            // a missing file is an I/O error, as a missing input is; a bad value a usage error
            assertThat(r.code()).as(String.join(" ", args) + ": " + r.err()).isEqualTo(args[1].endsWith("missing.json") ? 7 : 2);
            assertThat(r.err()).as(String.join(" ", args)).startsWith("amn: ").doesNotContain("\tat ");
            if (!args[1].startsWith("=") && !args[1].endsWith("missing.json")) assertThat(r.err()).contains("x.bad");
            assertThat(out).doesNotExist();
        }
        Runs.Run st = amn(AMN, "convert", in.toString(), "--to", "safetensors", "-o", dir.resolve("o.safetensors").toString(),
                "--gguf-kv", "a=u8:1");
        assertThat(st.code()).isEqualTo(2);
        assertThat(st.err()).contains("--to gguf");
    }

    @Test
    void aTypedValueThatDoesNotDecodeIsMalformedNamingTheKey() throws IOException {
        Path in = safetensors("bad.safetensors", "{\"anamnesis.metadata_encoding\":\"typed-json/1\","
                + "\"llama.block_count\":\"{\\\"type\\\":\\\"u33\\\",\\\"value\\\":2}\"}");
        for (String command : List.of("inspect", "convert")) {
            Runs.Run r = command.equals("inspect") ? amn(AMN, "inspect", in.toString())
                    : amn(AMN, "convert", in.toString(), "--to", "gguf", "-o", dir.resolve("o.gguf").toString());
            assertThat(r.code()).as(command + ": " + r.err()).isEqualTo(3);
            assertThat(r.err()).contains("metadata key 'llama.block_count'").contains("u33");
        }
        assertThat(dir.resolve("o.gguf")).doesNotExist();
    }

    @Test
    void theSummarySaysHowManyKeysWereDroppedAndDebugNamesThem() throws IOException {
        // safetensors metadata is strings; GGUF's general.alignment must be an integer the writer sets
        Path in = safetensors("aligned.safetensors", "{\"format\":\"pt\",\"general.alignment\":\"64\"}");
        Path out = dir.resolve("out.gguf");
        Runs.Run r = amn(AMN, "convert", in.toString(), "--to", "gguf", "-o", out.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("; 1 metadata key, 1 dropped (--debug names them)");
        assertThat(r.err()).doesNotContain("general.alignment");
        assertThat(typedOf(out)).containsOnlyKeys("format");

        Runs.Run debug = amn(AMN, "--debug", "convert", in.toString(), "--to", "gguf", "-o", dir.resolve("debug.gguf").toString());
        assertThat(debug.code()).as(debug.err()).isZero();
        assertThat(debug.err()).contains("amn: metadata key 'general.alignment' dropped: ");
    }
}
