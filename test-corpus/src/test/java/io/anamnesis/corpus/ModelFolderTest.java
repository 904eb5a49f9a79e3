package io.anamnesis.corpus;

import io.anamnesis.api.Anamnesis;
import io.anamnesis.api.DType;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.model.ModelFolderWriter;
import io.anamnesis.api.model.ShardedArchive;
import io.anamnesis.api.spi.OutputPlan;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.WriteOptions;
import io.anamnesis.cli.Amn;
import io.anamnesis.format.safetensors.SafetensorsWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.lang.foreign.Arena;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Random;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Issue 10: whole models as people download them. Small sharded FP8 models are built here in
 * code (several shards, a scale in another shard than its weight, companion files, a
 * {@code config.json} with a {@code quantization_config}); what {@code amn remember} writes
 * is read back by {@link ReferenceModelFolder} and compared with the recovery of the same
 * tensors from one file, and with the FP8 formula worked out here.
 */
class ModelFolderTest {
    @TempDir
    Path dir;

    record T(String dtype, long[] shape, byte[] bytes) {
    }

    static final String CONFIG = """
            {
              "architectures": [
                "Qwen3ForCausalLM"
              ],
              "hidden_size": 256,
              "quantization_config": {
                "activation_scheme": "dynamic",
                "fmt": "e4m3",
                "quant_method": "fp8",
                "weight_block_size": [
                  128,
                  128
                ]
              },
              "rms_norm_eps": 1e-06,
              "torch_dtype": "bfloat16",
              "vocab_size": 8
            }
            """;

    /** The config above as transformers should find it after recovery to bf16, written out by hand. */
    static final String CONFIG_RECOVERED = """
            {
              "architectures": [
                "Qwen3ForCausalLM"
              ],
              "hidden_size": 256,
              "rms_norm_eps": 1e-06,
              "torch_dtype": "bfloat16",
              "vocab_size": 8
            }
            """;

    /** Files a model folder carries beside its weights, copied unchanged. */
    static final Map<String, String> COMPANIONS = Map.of(
            "tokenizer.json", "{\"version\": \"1.0\", \"model\": {\"type\": \"BPE\"}}",
            "tokenizer_config.json", "{\"eos_token\": \"<|im_end|>\"}",
            "generation_config.json", "{\"temperature\": 0.6}",
            "chat_template.jinja", "{% for m in messages %}{{ m.content }}{% endfor %}",
            "README.md", "# A model\nmodel card text é\n",
            "LICENSE", "Apache License 2.0\n");

    static byte[] f32(float... v) {
        ByteBuffer b = ByteBuffer.allocate(4 * v.length).order(ByteOrder.LITTLE_ENDIAN);
        for (float f : v) b.putFloat(f);
        return b.array();
    }

    /** FP8 E4M3 codes, never NaN (0x7F, 0xFF), seeded. */
    static byte[] fp8(int n, long seed) {
        Random r = new Random(seed);
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            int c;
            do c = r.nextInt(256); while ((c & 0x7F) == 0x7F);
            b[i] = (byte) c;
        }
        return b;
    }

    static byte[] bf16(int n, long seed) {
        Random r = new Random(seed);
        byte[] b = new byte[2 * n];
        for (int i = 0; i < n; i++) {
            int bits = Float.floatToIntBits((float) r.nextGaussian()) >>> 16;
            b[2 * i] = (byte) bits;
            b[2 * i + 1] = (byte) (bits >>> 8);
        }
        return b;
    }

    /** The model's tensors in file order: three FP8 linears with 128x128 block scales, plain BF16 tensors between. */
    static LinkedHashMap<String, T> tensors() {
        LinkedHashMap<String, T> t = new LinkedHashMap<>();
        t.put("model.embed_tokens.weight", new T("BF16", new long[]{8, 256}, bf16(8 * 256, 1)));
        t.put("model.layers.0.mlp.down_proj.weight", new T("F8_E4M3", new long[]{256, 256}, fp8(256 * 256, 2)));
        t.put("model.layers.0.mlp.down_proj.weight_scale_inv", new T("F32", new long[]{2, 2}, f32(0.5f, 2f, 0.125f, 3f)));
        t.put("model.layers.1.mlp.down_proj.weight", new T("F8_E4M3", new long[]{256, 256}, fp8(256 * 256, 3)));
        // shard break here: the scale of layer 1 lives in the next shard
        t.put("model.layers.1.mlp.down_proj.weight_scale_inv", new T("F32", new long[]{2, 2}, f32(1f, 0.25f, 4f, 1.5f)));
        t.put("model.layers.1.input_layernorm.weight", new T("BF16", new long[]{256}, bf16(256, 4)));
        t.put("model.layers.2.mlp.down_proj.weight", new T("F8_E4M3", new long[]{128, 256}, fp8(128 * 256, 5)));
        t.put("model.layers.2.mlp.down_proj.weight_scale_inv", new T("F32", new long[]{1, 2}, f32(0.75f, 6f)));
        t.put("model.norm.weight", new T("BF16", new long[]{256}, bf16(256, 6)));
        return t;
    }

    /** A safetensors file as the spec lays one out, written here without the library. */
    static void safetensors(Path file, Map<String, T> tensors) throws IOException {
        StringBuilder json = new StringBuilder("{\"__metadata__\":{\"format\":\"pt\"}");
        long offset = 0;
        for (var e : tensors.entrySet()) {
            long end = offset + e.getValue().bytes().length;
            json.append(",\"").append(e.getKey()).append("\":{\"dtype\":\"").append(e.getValue().dtype())
                    .append("\",\"shape\":").append(java.util.Arrays.toString(e.getValue().shape()).replace(" ", ""))
                    .append(",\"data_offsets\":[").append(offset).append(',').append(end).append("]}");
            offset = end;
        }
        json.append('}');
        while ((json.length() + 8) % 8 != 0) json.append(' ');
        byte[] header = json.toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate((int) (8 + header.length + offset)).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(header.length).put(header);
        for (T t : tensors.values()) b.put(t.bytes());
        Files.write(file, b.array());
    }

    /** Cuts {@link #tensors()} into shards at the given tensor indexes, with an index, config and companions. */
    Path model(String name, int... cuts) throws IOException {
        Path folder = Files.createDirectories(dir.resolve(name));
        List<Map.Entry<String, T>> all = new ArrayList<>(tensors().entrySet());
        List<Integer> bounds = new ArrayList<>();
        bounds.add(0);
        for (int c : cuts) bounds.add(c);
        bounds.add(all.size());
        int count = bounds.size() - 1;
        StringBuilder weightMap = new StringBuilder();
        for (int s = 0; s < count; s++) {
            String file = String.format("model-%05d-of-%05d.safetensors", s + 1, count);
            LinkedHashMap<String, T> part = new LinkedHashMap<>();
            for (var e : all.subList(bounds.get(s), bounds.get(s + 1))) {
                part.put(e.getKey(), e.getValue());
                weightMap.append(weightMap.isEmpty() ? "" : ", ").append('"').append(e.getKey()).append("\": \"").append(file).append('"');
            }
            safetensors(folder.resolve(file), part);
        }
        Files.writeString(folder.resolve("model.safetensors.index.json"),
                "{\"metadata\": {\"total_size\": 1}, \"weight_map\": {" + weightMap + "}}");
        Files.writeString(folder.resolve("config.json"), CONFIG);
        for (var c : COMPANIONS.entrySet()) Files.writeString(folder.resolve(c.getKey()), c.getValue());
        return folder;
    }

    /** The same tensors in one file, with the same config beside it. */
    Path single() throws IOException {
        Path folder = Files.createDirectories(dir.resolve("single"));
        safetensors(folder.resolve("model.safetensors"), tensors());
        Files.writeString(folder.resolve("config.json"), CONFIG);
        return folder.resolve("model.safetensors");
    }

    record Run(int code, String out, String err) {
    }

    static Run amn(String... args) {
        StringWriter out = new StringWriter();
        StringWriter err = new StringWriter();
        int code = Amn.execute(new PrintWriter(out), new PrintWriter(err), args);
        return new Run(code, out.toString(), err.toString());
    }

    /** E4M3 (OCP FP8: bias 7, no infinities) to F32, from the format's definition. */
    static float e4m3(int code) {
        int sign = code >> 7 & 1, exp = code >> 3 & 0xF, man = code & 7;
        float v = exp == 0 ? man / 8f * (float) Math.pow(2, -6) : (1 + man / 8f) * (float) Math.pow(2, exp - 7);
        return sign == 1 ? -v : v;
    }

    /** BF16 bits of an F32 by round-to-nearest-even. */
    static int bf16(float f) {
        int bits = Float.floatToRawIntBits(f);
        return (bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16;
    }

    // ---------------------------------------------------------------- remember a folder

    @Test
    void aShardedFolderRecoversToTheSameTensorsAsOneFileAndWritesAModelFolder() throws IOException {
        Path in = model("fp8-model", 4, 7);
        Path singleOut = dir.resolve("single-bf16.safetensors");
        assertThat(amn("remember", "--quiet", "-o", singleOut.toString(), single().toString()).code()).isZero();
        Path out = dir.resolve("fp8-model-bf16");
        // 256x256 BF16 is 131,072 bytes: 150KB (150,000) holds one of them with the small tensors after it,
        // [embed, layer 0] [layer 1, its norm] [layer 2, norm]
        Run r = amn("remember", "--max-shard-size", "150KB", "--threads", "2", in.toString());
        assertThat(r.code()).as(r.err()).isZero();
        assertThat(r.out()).contains("folder " + out);
        assertThat(out).isDirectory();

        Map<String, ReferenceSafetensors.Tensor> folder = ReferenceModelFolder.read(out);
        Map<String, ReferenceSafetensors.Tensor> one = ReferenceSafetensors.read(singleOut);
        assertThat(folder.keySet()).containsExactlyElementsOf(one.keySet());
        assertThat(folder).hasSize(6);
        for (String name : one.keySet()) {
            assertThat(folder.get(name).dtype()).as(name).isEqualTo(one.get(name).dtype());
            assertThat(folder.get(name).shape()).as(name).isEqualTo(one.get(name).shape());
            assertThat(folder.get(name).bytes()).as(name).isEqualTo(one.get(name).bytes());
        }
        // layer 1's weight and its scale were in different shards: check it by the formula
        T w = tensors().get("model.layers.1.mlp.down_proj.weight");
        float[] scale = {1f, 0.25f, 4f, 1.5f};
        byte[] got = folder.get("model.layers.1.mlp.down_proj.weight").bytes();
        for (int row = 0; row < 256; row += 37) {
            for (int col = 0; col < 256; col += 13) {
                int i = row * 256 + col;
                float expect = e4m3(w.bytes()[i] & 0xFF) * scale[(row / 128) * 2 + col / 128];
                int bits = (got[2 * i] & 0xFF) | (got[2 * i + 1] & 0xFF) << 8;
                assertThat(bits).as("[%d, %d]", row, col).isEqualTo(bf16(expect));
            }
        }
        // shards of at most 150 KB, in transformers' names, and the index beside them
        try (Stream<Path> files = Files.list(out)) {
            List<String> names = files.map(p -> p.getFileName().toString()).sorted().toList();
            assertThat(names).containsExactlyInAnyOrder("model-00001-of-00003.safetensors", "model-00002-of-00003.safetensors",
                    "model-00003-of-00003.safetensors", "model.safetensors.index.json", "config.json", "tokenizer.json",
                    "tokenizer_config.json", "generation_config.json", "chat_template.jinja", "README.md", "LICENSE");
        }
        for (int s = 1; s <= 3; s++) {
            assertThat(Files.size(out.resolve(String.format("model-%05d-of-00003.safetensors", s)))).isLessThan(150_000 + 1024);
        }
        assertThat(Files.readString(out.resolve("config.json"))).isEqualTo(CONFIG_RECOVERED);
        for (var c : COMPANIONS.entrySet()) assertThat(Files.readString(out.resolve(c.getKey()))).isEqualTo(c.getValue());

        // and our own reader opens it back as one model, with the same bytes
        try (TensorArchive back = Anamnesis.installed().open(out); Arena arena = Arena.ofConfined()) {
            assertThat(back).isInstanceOf(ShardedArchive.class);
            assertThat(back.tensors()).extracting(TensorEntry::name).containsExactlyElementsOf(one.keySet());
            for (TensorEntry e : back.tensors()) {
                assertThat(back.data(e, arena).toArray(java.lang.foreign.ValueLayout.JAVA_BYTE)).as(e.name())
                        .isEqualTo(one.get(e.name()).bytes());
            }
            assertThat(Anamnesis.installed().plan(back, DType.BF16).recoveries()).isEmpty();
        }
    }

    @Test
    void theIndexOrAnyShardOpensTheWholeModelAndParseListsTheShards() throws IOException {
        Path in = model("m", 2, 5);
        List<String> whole;
        try (TensorArchive a = Anamnesis.installed().open(in)) {
            whole = a.tensors().stream().map(TensorEntry::name).toList();
            assertThat(whole).containsExactlyElementsOf(tensors().keySet());
            assertThat(a.path()).contains(in);
        }
        for (String f : List.of("model.safetensors.index.json", "model-00002-of-00003.safetensors")) {
            try (TensorArchive a = Anamnesis.installed().open(in.resolve(f))) {
                assertThat(a.tensors()).extracting(TensorEntry::name).as(f).containsExactlyElementsOf(whole);
            }
        }
        Run parse = amn("parse", in.resolve("model-00003-of-00003.safetensors").toString());
        assertThat(parse.code()).as(parse.err()).isZero();
        assertThat(parse.out()).contains("shards   3 (model.safetensors.index.json)")
                .contains("model-00001-of-00003.safetensors").contains("model-00003-of-00003.safetensors")
                .contains("3 quantized, 3 scale, 3 passthrough");
        Run inspect = amn("inspect", in.toString());
        assertThat(inspect.out()).contains("shards (3, model.safetensors.index.json)").contains("FP8 E4M3");
    }

    @Test
    void oneFileOutMergesTheShardsAndAFolderOutOfOneFileShardsIt() throws IOException {
        Path in = model("m", 3);
        Path merged = dir.resolve("merged.safetensors");
        assertThat(amn("remember", "--quiet", "-o", merged.toString(), in.toString()).code()).isZero();
        Path singleOut = dir.resolve("one.safetensors");
        assertThat(amn("remember", "--quiet", "-o", singleOut.toString(), single().toString()).code()).isZero();
        assertThat(Files.readAllBytes(merged)).isEqualTo(Files.readAllBytes(singleOut));
        // a single file with -o ending in '/' becomes a model folder (no companions: it has no model folder)
        Path folder = dir.resolve("sharded");
        assertThat(amn("remember", "--quiet", "--max-shard-size", "150KB", "-o", folder + "/", singleOut.toString()).code())
                .isZero();
        assertThat(ReferenceModelFolder.read(folder).keySet()).containsExactlyElementsOf(ReferenceSafetensors.read(singleOut).keySet());
        assertThat(folder.resolve("config.json")).doesNotExist();
    }

    // ---------------------------------------------------------------- forget a folder

    /**
     * forget of a sharded FP8 folder to a safetensors scheme writes a model folder as remember
     * does: the same tensors as forgetting the one-file model, in shards with an index, the
     * companions unchanged, and config.json with the quantizer's quantization_config in place
     * of the FP8 one (what transformers and vLLM read from a folder), every other key as written.
     */
    @Test
    void forgetOfAShardedFolderWritesAModelFolderWithTheQuantizersConfig() throws IOException {
        Path in = model("fp8-model", 4, 7);
        Path singleOut = dir.resolve("single-nf4.safetensors");
        Run one = amn("forget", "--quiet", "--to", "nf4", "-o", singleOut.toString(), single().toString());
        assertThat(one.code()).as(one.err()).isZero();
        Run r = amn("forget", "--to", "nf4", "--max-shard-size", "40KB", in.toString());
        assertThat(r.code()).as(r.err()).isZero();
        Path out = dir.resolve("fp8-model-nf4");
        assertThat(r.out()).startsWith("wrote folder " + out + " (");

        Map<String, ReferenceSafetensors.Tensor> folder = ReferenceModelFolder.read(out);
        Map<String, ReferenceSafetensors.Tensor> expected = ReferenceSafetensors.read(singleOut);
        assertThat(folder.keySet()).containsExactlyInAnyOrderElementsOf(expected.keySet());
        for (String name : expected.keySet()) {
            assertThat(folder.get(name).dtype()).as(name).isEqualTo(expected.get(name).dtype());
            assertThat(folder.get(name).shape()).as(name).isEqualTo(expected.get(name).shape());
            assertThat(folder.get(name).bytes()).as(name).isEqualTo(expected.get(name).bytes());
        }
        List<String> shards;
        try (Stream<Path> files = Files.list(out)) {
            shards = files.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("model-")).sorted().toList();
        }
        assertThat(shards).hasSizeGreaterThan(1);
        for (String shard : shards) assertThat(Files.size(out.resolve(shard))).as(shard).isLessThan(40_000 + 4096);
        for (var c : COMPANIONS.entrySet()) assertThat(Files.readString(out.resolve(c.getKey()))).isEqualTo(c.getValue());

        var json = new com.fasterxml.jackson.databind.ObjectMapper();
        var config = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(out.resolve("config.json").toFile());
        var metadata = new LinkedHashMap<String, String>();
        try (TensorArchive written = Anamnesis.installed().open(singleOut)) {
            metadata.putAll(written.metadata());
        }
        assertThat(config.get("quantization_config")).isEqualTo(json.readTree(metadata.get("quantization_config")));
        assertThat(config.get("quantization_config").get("quant_method").asText()).isEqualTo("bitsandbytes");
        assertThat(config.get("quantization_config").get("bnb_4bit_quant_type").asText()).isEqualTo("nf4");
        var before = (com.fasterxml.jackson.databind.node.ObjectNode) json.readTree(CONFIG);
        before.remove("quantization_config");
        config.remove("quantization_config");
        assertThat(config).isEqualTo(before);
    }

    /**
     * forget to GGUF: one file from a folder, or llama.cpp's splits with --split-max-size (the
     * same tensors, by name, as the one file); --max-shard-size names the option that splits a
     * GGUF, and convert of a Hugging Face folder to GGUF refuses it too.
     */
    @Test
    void forgetToGgufSplitsWithSplitMaxSizeAndRefusesMaxShardSize() throws IOException {
        Path in = model("fp8-model", 4, 7);
        Path whole = dir.resolve("whole.gguf");
        Run one = amn("forget", "--quiet", "--to", "ggml:q8_0", "-o", whole.toString(), in.toString());
        assertThat(one.code()).as(one.err()).isZero();
        Path splits = Files.createDirectories(dir.resolve("splits"));
        Run r = amn("forget", "--to", "ggml:q8_0", "--split-max-size", "80K", "-o", splits.resolve("m.gguf").toString(),
                in.toString());
        assertThat(r.code()).as(r.err()).isZero();
        List<Path> files;
        try (Stream<Path> list = Files.list(splits)) {
            files = list.sorted().toList();
        }
        assertThat(files).hasSizeGreaterThan(1);
        assertThat(files.getFirst().getFileName().toString()).isEqualTo("m-00001-of-%05d.gguf".formatted(files.size()));
        Map<String, byte[]> fromSplits = new LinkedHashMap<>();
        for (Path f : files) {
            for (ReferenceGguf.Tensor t : ReferenceGguf.read(f).tensors) fromSplits.put(t.name(), t.bytes());
        }
        List<ReferenceGguf.Tensor> expected = ReferenceGguf.read(whole).tensors;
        assertThat(fromSplits.keySet()).containsExactlyElementsOf(expected.stream().map(ReferenceGguf.Tensor::name).toList());
        for (ReferenceGguf.Tensor t : expected) assertThat(fromSplits.get(t.name())).as(t.name()).isEqualTo(t.bytes());

        Run shard = amn("forget", "--to", "ggml:q8_0", "--max-shard-size", "80KB", "-o", dir.resolve("x.gguf").toString(),
                in.toString());
        assertThat(shard.code()).isEqualTo(2);
        assertThat(shard.err()).contains("--split-max-size");
        Run convert = amn("convert", in.toString(), "--to", "gguf", "--max-shard-size", "1MB", "-o", dir.resolve("y.gguf").toString());
        assertThat(convert.code()).isEqualTo(2);
        assertThat(convert.err()).contains("--max-shard-size writes a model folder of safetensors shards");
        assertThat(dir.resolve("x.gguf")).doesNotExist();
        assertThat(dir.resolve("y.gguf")).doesNotExist();
    }

    /**
     * No output or report may replace a file the input model consists of: -o naming another
     * shard of the model, or the folder's config.json, used to replace it with exit 0 and
     * leave a model that no longer opened; so did --report naming the index.
     */
    @Test
    void anOutputOrReportNamingAFileOfTheInputModelIsRefusedAndNothingChanges() throws IOException {
        Path in = model("m", 4, 7);
        Map<Path, byte[]> before = new LinkedHashMap<>();
        try (Stream<Path> files = Files.list(in)) {
            for (Path f : files.toList()) before.put(f, Files.readAllBytes(f));
        }
        String shard1 = in.resolve("model-00001-of-00003.safetensors").toString();
        Run shard = amn("remember", shard1, "-o", in.resolve("model-00002-of-00003.safetensors").toString());
        assertThat(shard.code()).as(shard.err()).isEqualTo(2);
        assertThat(shard.err()).contains("is a file of the input model (model-00002-of-00003.safetensors)");
        Run index = amn("forget", shard1, "--to", "ggml:q8_0", "-o", dir.resolve("q.gguf").toString(),
                "--report", in.resolve("model.safetensors.index.json").toString());
        assertThat(index.code()).as(index.err()).isEqualTo(2);
        Run config = amn("forget", in.toString(), "--to", "ggml:q8_0", "-o", dir.resolve("q.gguf").toString(),
                "--report", in.resolve("config.json").toString());
        assertThat(config.code()).as(config.err()).isEqualTo(2);
        assertThat(config.err()).contains("would replace config.json of the input model folder");
        Run gguf = amn("convert", in.toString(), "--to", "gguf", "-o", in.resolve("tokenizer.json").toString());
        assertThat(gguf.code()).as(gguf.err()).isEqualTo(2);
        assertThat(gguf.err()).contains("would replace tokenizer.json of the input model folder");
        // a report into a folder that does not exist: refused before the output is written
        Run missing = amn("forget", in.toString(), "--to", "ggml:q8_0", "-o", dir.resolve("q.gguf").toString(),
                "--report", dir.resolve("no-such-folder").resolve("r.json").toString());
        assertThat(missing.code()).as(missing.err()).isEqualTo(7);
        assertThat(missing.err()).contains("folder").contains("does not exist");
        assertThat(dir.resolve("q.gguf")).doesNotExist();
        for (var e : before.entrySet()) assertThat(Files.readAllBytes(e.getKey())).as(e.getKey().toString()).isEqualTo(e.getValue());
        // a file of the writer's format beside the model, not part of it, may be written again
        Path beside = in.resolve("m-q8_0.gguf");
        for (int run = 0; run < 2; run++) {
            Run again = amn("forget", "-q", in.toString(), "--to", "ggml:q8_0", "-o", beside.toString());
            assertThat(again.code()).as(again.err()).isZero();
        }
    }

    /**
     * A companion that links outside the model was copied into the output (a cloned folder's
     * tokenizer.json linking to a private file went into a folder its owner would upload):
     * refused now, exit 5, nothing written. The Hugging Face cache's own links, from
     * snapshots/REV to the repository's blobs, are followed as before.
     */
    @Test
    void aCompanionLinkingOutsideTheModelIsRefusedAndTheHubCachesLinksAreFollowed() throws IOException {
        Path in = model("linked", 4, 7);
        Path secret = Files.writeString(dir.resolve("secret.txt"), "not for upload");
        Files.delete(in.resolve("tokenizer.json"));
        Files.createSymbolicLink(in.resolve("tokenizer.json"), secret);
        Path out = dir.resolve("linked-out");
        Run r = amn("remember", "--quiet", "-o", out + "/", in.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(5);
        assertThat(r.err()).contains("tokenizer.json").contains("is a link to " + secret.toRealPath()).contains("outside the model folder");
        assertThat(out).doesNotExist();

        // the hub's cache: models--org--name/snapshots/<rev>/<file> -> ../../blobs/<hash>
        Path repo = Files.createDirectories(dir.resolve("models--org--m"));
        Path blobs = Files.createDirectories(repo.resolve("blobs"));
        Path snapshot = Files.createDirectories(repo.resolve("snapshots").resolve("0123abc"));
        Path plain = model("plain", 4, 7);
        try (Stream<Path> files = Files.list(plain)) {
            for (Path f : files.toList()) {
                Path blob = Files.copy(f, blobs.resolve("blob-" + f.getFileName()));
                Files.createSymbolicLink(snapshot.resolve(f.getFileName()), snapshot.relativize(blob));
            }
        }
        Path cached = dir.resolve("cached-out");
        Run ok = amn("remember", "--quiet", "-o", cached + "/", snapshot.toString());
        assertThat(ok.code()).as(ok.err()).isZero();
        assertThat(Files.readString(cached.resolve("tokenizer.json"))).isEqualTo(COMPANIONS.get("tokenizer.json"));
    }

    // ---------------------------------------------------------------- errors that name the fix

    @Test
    void aMissingShardIsAnIOErrorNamingIt() throws IOException {
        Path in = model("m", 3, 6);
        Files.delete(in.resolve("model-00002-of-00003.safetensors"));
        Run r = amn("remember", "--quiet", in.toString());
        assertThat(r.code()).isEqualTo(7);
        assertThat(r.err()).contains("model-00002-of-00003.safetensors").contains("listed in model.safetensors.index.json is missing");
    }

    @Test
    void aTensorInTwoShardsOrAnIndexNamingWhatAShardLacksIsMalformed() throws IOException {
        Path in = model("m", 3);
        var dup = new LinkedHashMap<String, T>();
        dup.put("model.norm.weight", tensors().get("model.norm.weight"));
        safetensors(in.resolve("model-00001-of-00002.safetensors"), dup); // now also in shard 2
        Run r = amn("inspect", in.toString());
        assertThat(r.code()).isEqualTo(3);
        assertThat(r.err()).contains("model.norm.weight").contains("two shards");

        Path in2 = model("m2", 3);
        String index = Files.readString(in2.resolve("model.safetensors.index.json"));
        Files.writeString(in2.resolve("model.safetensors.index.json"),
                index.replace("\"model.norm.weight\": \"model-00002-of-00002", "\"model.norm.weight\": \"model-00001-of-00002"));
        Run r2 = amn("parse", in2.toString());
        assertThat(r2.code()).isEqualTo(3);
        assertThat(r2.err()).contains("model.norm.weight").contains("puts it in model-00001-of-00002.safetensors, but it is in");
    }

    @Test
    void aScaleWhoseWeightIsInNoShardIsMalformedNamingBoth() throws IOException {
        Path in = model("m", 4);
        // shard 1 loses layer 1's weight: its scale in shard 2 belongs to nothing
        var first = new LinkedHashMap<String, T>();
        tensors().entrySet().stream().limit(3).forEach(e -> first.put(e.getKey(), e.getValue()));
        safetensors(in.resolve("model-00001-of-00002.safetensors"), first);
        String index = Files.readString(in.resolve("model.safetensors.index.json"));
        Files.writeString(in.resolve("model.safetensors.index.json"),
                index.replace("\"model.layers.1.mlp.down_proj.weight\": \"model-00001-of-00002.safetensors\", ", ""));
        Run r = amn("remember", "--quiet", in.toString());
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("model.layers.1.mlp.down_proj.weight_scale_inv").contains("model.layers.1.mlp.down_proj.weight ")
                .contains("all 2 shards");
        assertThat(dir.resolve("m-bf16")).doesNotExist();
    }

    @Test
    void aShardAloneWithoutItsSiblingsSaysToOpenTheFolder() throws IOException {
        Path in = model("m", 4);
        Path lonely = Files.createDirectories(dir.resolve("lonely"));
        Files.copy(in.resolve("model-00002-of-00002.safetensors"), lonely.resolve("model-00002-of-00002.safetensors"));
        Files.copy(in.resolve("config.json"), lonely.resolve("config.json"));
        Run r = amn("remember", "--quiet", "-o", dir.resolve("x.safetensors").toString(),
                lonely.resolve("model-00002-of-00002.safetensors").toString());
        assertThat(r.code()).as(r.err()).isEqualTo(3);
        assertThat(r.err()).contains("model.layers.1.mlp.down_proj.weight_scale_inv")
                .contains("model-00001-of-00002.safetensors").contains("open the folder");
    }

    // ---------------------------------------------------------------- complete or not at all

    @Test
    void aProducerFailingMidWayLeavesNoFolder() throws IOException {
        Path target = dir.resolve("out");
        List<PlannedTensor> tensors = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            int n = i;
            tensors.add(new PlannedTensor("t" + i, DType.F32, Shape.of(1024), 1, arena -> (first, count, dest) -> {
                if (n == 2) throw new TensorIOException("the input vanished under tensor t2");
                dest.fill((byte) n);
            }));
        }
        OutputPlan plan = new OutputPlan(Optional.empty(), Map.of(), tensors);
        assertThatThrownBy(() -> ModelFolderWriter.write(plan, new SafetensorsWriter(), target, 5000, Optional.empty(),
                List.of("safetensors"), Optional.empty(), WriteOptions.threads(2)))
                .isInstanceOf(TensorIOException.class).hasMessageContaining("t2");
        assertThat(target).doesNotExist();
        try (Stream<Path> left = Files.list(dir)) {
            assertThat(left.toList()).as("no temporary folder is left behind").isEmpty();
        }
        // the same plan without the failure makes the folder: shards of one 4 KB tensor each
        tensors.set(2, new PlannedTensor("t2", DType.F32, Shape.of(1024), 1, arena -> (first, count, dest) -> dest.fill((byte) 2)));
        var written = ModelFolderWriter.write(new OutputPlan(Optional.empty(), Map.of(), tensors), new SafetensorsWriter(),
                target, 5000, Optional.empty(), List.of("safetensors"), Optional.empty(), WriteOptions.threads(2));
        assertThat(written.shards()).hasSize(4);
        assertThat(ReferenceModelFolder.read(target).get("t3").bytes()[4095]).isEqualTo((byte) 3);
    }
}
