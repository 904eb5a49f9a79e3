package io.anamnesis.api.model;

import io.anamnesis.api.DType;
import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.SecurityViolationException;
import io.anamnesis.api.Shape;
import io.anamnesis.api.TensorIOException;
import io.anamnesis.api.spi.PlannedTensor;
import io.anamnesis.api.spi.ShardPosition;
import io.anamnesis.api.testing.MemoryArchive;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The format-free half of issue 10: finding a model's files, checking shards, sizes, config and index text. */
class ModelFilesTest {
    @TempDir
    Path dir;

    static final List<String> EXTENSIONS = List.of("safetensors", "bin", "gguf");

    private Path touch(String name) throws IOException {
        return Files.writeString(dir.resolve(name), "x");
    }

    // ---------------------------------------------------------------- sizes

    @Test
    void sizesAreSpelledAsTransformersAndGgufSplitSpellThem() {
        assertThat(ByteSize.parse("5GB")).isEqualTo(5_000_000_000L);
        assertThat(ByteSize.parse("500MB")).isEqualTo(500_000_000L);
        assertThat(ByteSize.parse("4GiB")).isEqualTo(4L << 30);
        assertThat(ByteSize.parse("64kib")).isEqualTo(65_536L);
        assertThat(ByteSize.parse("128M")).isEqualTo(128_000_000L);
        assertThat(ByteSize.parse("2G")).isEqualTo(2_000_000_000L);
        assertThat(ByteSize.parse("1.5GB")).isEqualTo(1_500_000_000L);
        assertThat(ByteSize.parse("4096")).isEqualTo(4096L);
        for (String bad : List.of("", "GB", "5 parsecs", "-1GB", "0", "0.1B", "99999999999TB")) {
            assertThatThrownBy(() -> ByteSize.parse(bad)).as(bad).isInstanceOf(IllegalArgumentException.class)
                    .hasMessageContaining("not a size");
        }
    }

    // ---------------------------------------------------------------- finding files

    @Test
    void aFolderWithAnIndexIsTheIndexsShardsInNameOrder() throws IOException {
        touch("model-00002-of-00002.safetensors");
        touch("model-00001-of-00002.safetensors");
        touch("config.json");
        Files.writeString(dir.resolve("model.safetensors.index.json"), """
                {"metadata": {"total_size": 8}, "weight_map": {"b": "model-00002-of-00002.safetensors",
                 "a": "model-00001-of-00002.safetensors", "c": "model-00002-of-00002.safetensors"}}""");
        ModelLayout l = ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults());
        assertThat(l.folder()).contains(dir);
        assertThat(l.index()).map(p -> p.getFileName().toString()).contains("model.safetensors.index.json");
        assertThat(l.shards()).extracting(p -> p.getFileName().toString())
                .containsExactly("model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors");
        assertThat(l.weightMap()).containsExactly(Map.entry("b", "model-00002-of-00002.safetensors"),
                Map.entry("a", "model-00001-of-00002.safetensors"), Map.entry("c", "model-00002-of-00002.safetensors"));
        // the index itself, and any one shard, find the same model
        assertThat(ModelLocator.locate(dir.resolve("model.safetensors.index.json"), EXTENSIONS, ParseLimits.defaults()).shards())
                .isEqualTo(ModelLocator.locate(dir.resolve("model-00002-of-00002.safetensors"), EXTENSIONS,
                        ParseLimits.defaults()).shards());
    }

    @Test
    void safetensorsIndexWinsOverTheBinOneAsTransformersPrefersIt() throws IOException {
        touch("model-00001-of-00001.safetensors");
        touch("pytorch_model-00001-of-00002.bin");
        touch("pytorch_model-00002-of-00002.bin");
        Files.writeString(dir.resolve("pytorch_model.bin.index.json"), """
                {"weight_map": {"a": "pytorch_model-00001-of-00002.bin", "b": "pytorch_model-00002-of-00002.bin"}}""");
        ModelLayout bin = ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults());
        assertThat(bin.shards()).hasSize(2); // the only index: sharded .bin checkpoints open the same way
        Files.writeString(dir.resolve("model.safetensors.index.json"), """
                {"weight_map": {"a": "model-00001-of-00001.safetensors"}}""");
        assertThat(ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults()).shards())
                .extracting(p -> p.getFileName().toString()).containsExactly("model-00001-of-00001.safetensors");
    }

    @Test
    void withoutAnIndexShardsAreFoundByName() throws IOException {
        touch("m-00001-of-00003.gguf");
        touch("m-00002-of-00003.gguf");
        touch("m-00003-of-00003.gguf");
        touch("README.md");
        ModelLayout l = ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults());
        assertThat(l.shards()).extracting(p -> p.getFileName().toString())
                .containsExactly("m-00001-of-00003.gguf", "m-00002-of-00003.gguf", "m-00003-of-00003.gguf");
        assertThat(l.index()).isEmpty();
        // one split opens them all
        assertThat(ModelLocator.locate(dir.resolve("m-00003-of-00003.gguf"), EXTENSIONS, ParseLimits.defaults()).shards())
                .isEqualTo(l.shards());
    }

    @Test
    void aShardWhoseSiblingsAreAbsentOpensAloneAndNamesThem() throws IOException {
        Path one = touch("model-00002-of-00003.safetensors");
        ModelLayout l = ModelLocator.locate(one, EXTENSIONS, ParseLimits.defaults());
        assertThat(l.isFolder()).isFalse();
        assertThat(l.shards()).containsExactly(one);
        assertThat(l.absent()).extracting(p -> p.getFileName().toString())
                .containsExactly("model-00001-of-00003.safetensors", "model-00003-of-00003.safetensors");
        // a folder holding only part of a set says which are missing
        assertThatThrownBy(() -> ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults()))
                .isInstanceOf(TensorIOException.class).hasMessageContaining("model-00001-of-00003.safetensors");
    }

    @Test
    void aFolderOfOneTensorFileIsThatFileAsAModel() throws IOException {
        touch("model.safetensors");
        touch("pytorch_model.bin");
        touch("tokenizer.json");
        ModelLayout l = ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults());
        assertThat(l.isFolder()).isTrue();
        assertThat(l.shards()).extracting(p -> p.getFileName().toString()).containsExactly("model.safetensors");
        touch("other.safetensors");
        Files.delete(dir.resolve("model.safetensors"));
        assertThatThrownBy(() -> ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults()))
                .isInstanceOf(TensorIOException.class).hasMessageContaining("several tensor files")
                .hasMessageContaining("other.safetensors");
    }

    @Test
    void anEmptyFolderHasNothingToOpen() {
        assertThatThrownBy(() -> ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults()))
                .isInstanceOf(TensorIOException.class).hasMessageContaining("no tensor file");
    }

    @Test
    void aShardTheIndexListsButTheFolderLacksIsNamed() throws IOException {
        touch("model-00001-of-00002.safetensors");
        Files.writeString(dir.resolve("model.safetensors.index.json"), """
                {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}""");
        assertThatThrownBy(() -> ModelLocator.locate(dir, EXTENSIONS, ParseLimits.defaults()))
                .isInstanceOf(TensorIOException.class)
                .hasMessageContaining("shard model-00002-of-00002.safetensors listed in model.safetensors.index.json is missing");
    }

    @Test
    void anIndexThatIsNotOneIsMalformedAndOneThatLeavesTheFolderIsRefused() throws IOException {
        Path index = dir.resolve("model.safetensors.index.json");
        for (String bad : List.of("[1]", "{\"weight_map\": []}", "{\"weight_map\": {}}", "{\"weight_map\": {\"a\": 3}}", "{")) {
            Files.writeString(index, bad);
            assertThatThrownBy(() -> ModelLocator.locate(index, EXTENSIONS, ParseLimits.defaults())).as(bad)
                    .isInstanceOf(MalformedFileException.class).hasMessageContaining("model.safetensors.index.json");
        }
        Files.writeString(index, "{\"weight_map\": {\"a\": \"../../etc/passwd\"}}");
        assertThatThrownBy(() -> ModelLocator.locate(index, EXTENSIONS, ParseLimits.defaults()))
                .isInstanceOf(SecurityViolationException.class);
    }

    // ---------------------------------------------------------------- shards against each other

    private static ShardedArchive.Shard shard(String file, MemoryArchive a) {
        return new ShardedArchive.Shard(Path.of(file), a, Optional.empty());
    }

    private static ModelLayout layout(Map<String, String> weightMap, String... files) {
        return new ModelLayout(Optional.of(Path.of("m")), Optional.of(Path.of("m/model.safetensors.index.json")),
                java.util.Arrays.stream(files).map(Path::of).toList(), weightMap, List.of());
    }

    @Test
    void shardsShowAsOneArchiveInShardOrderWithEachTensorsBytesFromItsShard() {
        MemoryArchive a = new MemoryArchive().f32("x", 1f, 2f).meta("format", "pt");
        MemoryArchive b = new MemoryArchive().f32("y", 3f).f32("z", 4f).meta("format", "other");
        ShardedArchive m = ShardedArchive.open(layout(Map.of(), "a", "b"), p -> shard(p.toString(), p.toString().equals("a") ? a : b));
        assertThat(m.tensors()).extracting(e -> e.name()).containsExactly("x", "y", "z");
        assertThat(m.metadata()).containsEntry("format", "pt");
        assertThat(m.path()).contains(Path.of("m"));
        assertThat(m.properties()).containsEntry("shards", "2").containsEntry("index", "model.safetensors.index.json");
        try (var arena = java.lang.foreign.Arena.ofConfined()) {
            var z = m.data(m.tensor("z").orElseThrow(), arena);
            assertThat(z.get(io.anamnesis.api.numeric.LittleEndian.F32, 0)).isEqualTo(4f);
        }
    }

    @Test
    void aTensorInTwoShardsOrAnIndexThatDisagreesIsMalformed() {
        MemoryArchive a = new MemoryArchive().f32("x", 1f);
        MemoryArchive b = new MemoryArchive().f32("x", 2f);
        assertThatThrownBy(() -> ShardedArchive.open(layout(Map.of(), "a", "b"), p -> shard(p.toString(),
                p.toString().equals("a") ? a : b))).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("'x'").hasMessageContaining("two shards, a and b");
        MemoryArchive c = new MemoryArchive().f32("y", 2f);
        assertThatThrownBy(() -> ShardedArchive.open(layout(Map.of("x", "a", "w", "c"), "a", "c"),
                p -> shard(p.toString(), p.toString().equals("a") ? a : c))).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("'w'").hasMessageContaining("puts it in c, which lacks it");
        assertThatThrownBy(() -> ShardedArchive.open(layout(Map.of("x", "c"), "a", "c"),
                p -> shard(p.toString(), p.toString().equals("a") ? a : c))).isInstanceOf(MalformedFileException.class)
                .hasMessageContaining("puts it in c, but it is in a");
    }

    @Test
    void splitKeysMustAgreeWithTheSplitsPlace() {
        MemoryArchive a = new MemoryArchive().f32("x", 1f);
        MemoryArchive b = new MemoryArchive().f32("y", 2f);
        ModelLayout twoByName = new ModelLayout(Optional.of(Path.of("m")), Optional.empty(), List.of(Path.of("a"), Path.of("b")),
                Map.of(), List.of());
        // both say they are the first split
        assertThatThrownBy(() -> ShardedArchive.open(twoByName, p -> new ShardedArchive.Shard(p,
                p.toString().equals("a") ? a : b, Optional.of(new ShardPosition(0, 2, OptionalLong.of(2))))))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("b says it is split 1 of 2");
        // the count of tensors disagrees
        assertThatThrownBy(() -> ShardedArchive.open(twoByName, p -> new ShardedArchive.Shard(p,
                p.toString().equals("a") ? a : b, Optional.of(new ShardPosition(p.toString().equals("a") ? 0 : 1, 2,
                OptionalLong.of(3)))))).isInstanceOf(MalformedFileException.class).hasMessageContaining("3 tensors");
    }

    // ---------------------------------------------------------------- writing

    private static PlannedTensor planned(String name, long elements) {
        return new PlannedTensor(name, DType.BF16, Shape.of(elements), 1, arena -> (first, count, dest) -> { });
    }

    @Test
    void shardsFillUpToTheLimitAndAnOversizedTensorStandsAlone() {
        var t = List.of(planned("a", 10), planned("b", 10), planned("c", 10), planned("big", 100), planned("d", 5));
        // 20, 20, 20, 200, 10 bytes with a 45-byte limit: [a b] [c] [big] [d]
        assertThat(ModelFolderWriter.partition(t, 45)).extracting(p -> p.stream().map(PlannedTensor::name).toList())
                .containsExactly(List.of("a", "b"), List.of("c"), List.of("big"), List.of("d"));
        assertThat(ModelFolderWriter.partition(t, 1000)).hasSize(1);
        assertThat(ModelFolderWriter.shardName(2, 14, "safetensors")).isEqualTo("model-00002-of-00014.safetensors");
        assertThat(ModelFolderWriter.shardName(1, 1, "safetensors")).isEqualTo("model.safetensors");
    }

    @Test
    void theIndexIsJsonDumpsWithIndentTwoAndSortedKeys() {
        var parts = List.of(List.of(planned("z.w", 1), planned("é", 1)), List.of(planned("a.w", 1)));
        String text = ModelFolderWriter.indexJson(parts, List.of("model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors"), 6);
        // what python3 -c 'import json; print(json.dumps(index, indent=2, sort_keys=True))' prints
        assertThat(text).isEqualTo("""
                {
                  "metadata": {
                    "total_size": 6
                  },
                  "weight_map": {
                    "a.w": "model-00002-of-00002.safetensors",
                    "z.w": "model-00001-of-00002.safetensors",
                    "\\u00e9": "model-00001-of-00002.safetensors"
                  }
                }
                """);
    }

    @Test
    void configLosesItsQuantizationConfigAndTakesTheOutputDtypeKeepingEverythingElse() {
        String in = """
                {
                  "architectures": ["Qwen3ForCausalLM"],
                  "quantization_config": {
                    "activation_scheme": "dynamic",
                    "weight_block_size": [128, 128]
                  },
                  "rms_norm_eps": 1e-06,
                  "torch_dtype": "float16",
                  "vocab_size": 151936
                }
                """;
        assertThat(ConfigJson.rewrite(in, "bfloat16")).isEqualTo("""
                {
                  "architectures": ["Qwen3ForCausalLM"],
                  "rms_norm_eps": 1e-06,
                  "torch_dtype": "bfloat16",
                  "vocab_size": 151936
                }
                """);
        // first member, last member, no torch_dtype: added last with the file's indentation; dtype set too
        assertThat(ConfigJson.rewrite("{\"quantization_config\": {}, \"dtype\": \"float8\"}", "float32"))
                .isEqualTo("{\"dtype\": \"float32\", \"torch_dtype\": \"float32\"}");
        assertThat(ConfigJson.rewrite("{\n    \"a\": 1,\n    \"quantization_config\": {\"b\": [1, {\"c\": \"}\"}]}\n}", "float16"))
                .isEqualTo("{\n    \"a\": 1,\n    \"torch_dtype\": \"float16\"\n}");
        assertThat(ConfigJson.rewrite("{}", "bfloat16")).isEqualTo("{\"torch_dtype\": \"bfloat16\"}");
        assertThatThrownBy(() -> ConfigJson.rewrite("[1, 2]", "bfloat16")).isInstanceOf(MalformedFileException.class);
    }

    @Test
    void configOfAQuantizedModelGetsTheQuantizersConfigInPlaceOfTheInputs() {
        String nf4 = "{\"quant_method\": \"bitsandbytes\", \"load_in_4bit\": true}";
        // a recovered GPTQ input's member replaced where it stands; everything else as written
        assertThat(ConfigJson.quantized("""
                {
                  "architectures": ["LlamaForCausalLM"],
                  "quantization_config": {"bits": 4, "quant_method": "gptq"},
                  "torch_dtype": "float16"
                }
                """, Optional.of(nf4))).isEqualTo("""
                {
                  "architectures": ["LlamaForCausalLM"],
                  "quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": true},
                  "torch_dtype": "float16"
                }
                """);
        // none before: added last, with the file's indentation; an empty object
        assertThat(ConfigJson.quantized("{\n  \"a\": 1e-06\n}\n", Optional.of(nf4)))
                .isEqualTo("{\n  \"a\": 1e-06,\n  \"quantization_config\": " + nf4 + "\n}\n");
        assertThat(ConfigJson.quantized("{}", Optional.of("{}"))).isEqualTo("{\"quantization_config\": {}}");
        // a quantizer without a config: the input's goes (as the first, the last or the only member)
        assertThat(ConfigJson.quantized("{\"quantization_config\": {\"x\": \"}\"}, \"b\": 2}", Optional.empty())).isEqualTo("{\"b\": 2}");
        assertThat(ConfigJson.quantized("{\"a\": 1, \"quantization_config\": {}}", Optional.empty())).isEqualTo("{\"a\": 1}");
        assertThat(ConfigJson.quantized("{\"quantization_config\": 1}", Optional.empty())).isEqualTo("{}");
        assertThatThrownBy(() -> ConfigJson.quantized("{}", Optional.of("[1]"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> ConfigJson.quantized("{\"a\": }", Optional.of("{}"))).isInstanceOf(MalformedFileException.class);
    }
}
