package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.ParseLimits;
import io.anamnesis.api.TensorArchive;
import io.anamnesis.api.TensorEntry;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The keys {@code _set_vocab_gpt2} and SpecialVocab write for a tokenizer.json-only folder,
 * on the hand-made tokenizer of {@link ByteLevelBpeTest} (whose check hash is in no table, so
 * the pre-tokenizer name is given here; the real lookup is {@link RealTokenizersTest}'s).
 */
class BpeVocabularyTest {
    @TempDir
    Path dir;

    static final Function<ByteLevelBpe, String> PRE = t -> "test-pre";

    /** Id 22 is one more added token, {@code <e>}. */
    static String tokenizer(String postProcessor, String merges) {
        return ByteLevelBpeTest.tokenizer(ByteLevelBpeTest.BYTE_LEVEL, postProcessor, false, merges)
                .replace("\"special\": false}],", "\"special\": false},\n"
                        + "{\"id\": 22, \"content\": \"<e>\", \"single_word\": false, \"lstrip\": false, \"rstrip\": false, "
                        + "\"normalized\": false, \"special\": true}],");
    }

    static final String CONFIG = "{\"architectures\": [\"LlamaForCausalLM\"], \"vocab_size\": 24}";
    static final String TOKENIZER_CONFIG = "{\"bos_token\": \"<s>\", \"eos_token\": \"<e>\", \"chat_template\": \"{{ x }}\", "
            + "\"tokenizer_class\": \"PreTrainedTokenizerFast\"}";

    private Map<String, MetaValue> convert(String tokenizer, String tokenizerConfig, String config,
                                           Function<ByteLevelBpe, String> pre) throws IOException {
        Files.writeString(dir.resolve("tokenizer.json"), tokenizer);
        if (tokenizerConfig != null) Files.writeString(dir.resolve("tokenizer_config.json"), tokenizerConfig);
        Files.writeString(dir.resolve("config.json"), config);
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        Vocabulary.llama(new ModelFiles(new Folder(dir), ParseLimits.defaults()), (Map<?, ?>) Json.parse(config, 64), kv, pre);
        return kv;
    }

    private static List<Object> values(MetaValue v) {
        List<Object> out = new ArrayList<>();
        for (MetaValue x : ((MetaValue.Array) v).values()) out.add(x instanceof MetaValue.Str s ? s.value() : ((MetaValue.Int) x).value());
        return out;
    }

    @Test
    void tokensTypesMergesAndSpecialsInTheConvertersOrder() throws IOException {
        Map<String, MetaValue> kv = convert(tokenizer(ByteLevelBpeTest.BOS, ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG, CONFIG, PRE);
        assertThat(kv.keySet()).containsExactly("tokenizer.ggml.model", "tokenizer.ggml.pre", "tokenizer.ggml.tokens",
                "tokenizer.ggml.token_type", "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id",
                "tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_bos_token", "tokenizer.chat_template");
        assertThat(kv.get("tokenizer.ggml.model")).isEqualTo(MetaValue.str("gpt2"));
        assertThat(kv.get("tokenizer.ggml.pre")).isEqualTo(MetaValue.str("test-pre"));
        List<Object> tokens = new ArrayList<>(List.of("a", "b", "c", "Ġ", "ab", "abc", "Ġa", "bc", "1", "2", "3", "12", "123"));
        for (int i = 13; i < 20; i++) tokens.add("[PAD" + i + "]");
        tokens.addAll(List.of("<s>", "<x>", "<e>", "[PAD23]"));
        assertThat(values(kv.get("tokenizer.ggml.tokens"))).isEqualTo(tokens);
        // normal, unused holes, <s> special: control, <x> not special: user-defined, <e> control
        List<Object> types = new ArrayList<>();
        for (int i = 0; i < 13; i++) types.add(1L);
        for (int i = 13; i < 20; i++) types.add(5L);
        types.addAll(List.of(3L, 4L, 3L, 5L));
        assertThat(values(kv.get("tokenizer.ggml.token_type"))).isEqualTo(types);
        assertThat(values(kv.get("tokenizer.ggml.merges"))).containsExactly("a b", "ab c", "Ġ a", "1 2", "12 3");
        assertThat(kv.get("tokenizer.ggml.bos_token_id")).isEqualTo(MetaValue.u32(20));
        assertThat(kv.get("tokenizer.ggml.eos_token_id")).isEqualTo(MetaValue.u32(22));
        // the template's leading <s> is the BOS: added
        assertThat(kv.get("tokenizer.ggml.add_bos_token")).isEqualTo(new MetaValue.Bool(true));
        assertThat(kv.get("tokenizer.chat_template")).isEqualTo(MetaValue.str("{{ x }}"));
    }

    @Test
    void mergePairsAreWrittenAsStringsTheirSpacesAsU0120() throws IOException {
        String pairs = "[[\"a\", \"b\"], [\"ab\", \"c\"], [\"Ġ\", \"a\"], [\"1\", \"2\"], [\"12\", \"3\"], [\"a c\", \"b\"]]";
        String t = tokenizer("null", pairs).replace("\"123\": 12}", "\"123\": 12, \"a c\": 13, \"a cb\": 14}");
        Map<String, MetaValue> kv = convert(t, TOKENIZER_CONFIG, CONFIG, PRE);
        assertThat(values(kv.get("tokenizer.ggml.merges"))).containsExactly("a b", "ab c", "Ġ a", "1 2", "12 3", "aĠc b");
        assertThat(kv).doesNotContainKey("tokenizer.ggml.add_bos_token");
    }

    @Test
    void aTrailingSpecialTokenOtherThanTheEosBecomesItAndTheOldOneTheEot() throws IOException {
        String template = ByteLevelBpeTest.BOS.replace("{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}]",
                "{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": {\"id\": \"<x>\", \"type_id\": 0}}]")
                .replace("\"special_tokens\": {", "\"special_tokens\": {\"<x>\": {\"id\": \"<x>\", \"ids\": [21], \"tokens\": [\"<x>\"]}, ");
        Map<String, MetaValue> kv = convert(tokenizer(template, ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG, CONFIG, PRE);
        assertThat(kv.get("tokenizer.ggml.eos_token_id")).isEqualTo(MetaValue.u32(21));
        assertThat(kv.get("tokenizer.ggml.eot_token_id")).isEqualTo(MetaValue.u32(22));
        assertThat(kv.get("tokenizer.ggml.add_eos_token")).isEqualTo(new MetaValue.Bool(true));
        assertThat(List.copyOf(kv.keySet()).subList(5, 10)).containsExactly("tokenizer.ggml.bos_token_id",
                "tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id", "tokenizer.ggml.add_bos_token",
                "tokenizer.ggml.add_eos_token");
    }

    @Test
    void theHashIsOfWhatTransformersEncodes() throws IOException {
        List<List<Integer>> seen = new ArrayList<>();
        Function<ByteLevelBpe, String> record = t -> {
            seen.add(t.encode("a", true));
            return "x";
        };
        convert(tokenizer(ByteLevelBpeTest.BOS, ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG, CONFIG, record);
        // Llama's tokenizer class puts BOS (add_bos_token, default true) and EOS (add_eos_token) itself
        String llama = TOKENIZER_CONFIG.replace("PreTrainedTokenizerFast", "LlamaTokenizerFast").replaceFirst("\\{", "{\"add_eos_token\": true, ");
        convert(tokenizer("null", ByteLevelBpeTest.MERGES), llama, CONFIG, record);
        assertThat(seen).containsExactly(List.of(20, 0), List.of(20, 0, 22));
    }

    /**
     * Glm4Model.set_vocab: after SpecialVocab has read the files, EOS, EOT, UNK and BOS are
     * set, in that order, to the added tokens {@code <|endoftext|>}, {@code <|user|>},
     * {@code <|endoftext|>}, {@code <|endoftext|>}, each only where the files named none
     * (gguf-py's {@code _set_special_token} keeps an id already found).
     */
    @Test
    void glm4sFixedSpecialTokensFillWhatTheFilesLeaveOpen() throws IOException {
        String t = tokenizer("null", ByteLevelBpeTest.MERGES).replace("\"content\": \"<s>\"", "\"content\": \"<|endoftext|>\"")
                .replace("\"content\": \"<x>\"", "\"content\": \"<|user|>\"");
        Files.writeString(dir.resolve("tokenizer.json"), t);
        Files.writeString(dir.resolve("tokenizer_config.json"), "{\"eos_token\": \"<e>\"}");
        String config = "{\"architectures\": [\"Glm4ForCausalLM\"], \"vocab_size\": 24}";
        Files.writeString(dir.resolve("config.json"), config);
        Map<String, MetaValue> kv = new LinkedHashMap<>();
        Vocabulary.glm4(new ModelFiles(new Folder(dir), ParseLimits.defaults()), (Map<?, ?>) Json.parse(config, 64), kv, PRE);
        // EOS named by tokenizer_config.json (22) stays; the others are the fixed ones
        assertThat(kv.get("tokenizer.ggml.eos_token_id")).isEqualTo(MetaValue.u32(22));
        assertThat(kv.get("tokenizer.ggml.eot_token_id")).isEqualTo(MetaValue.u32(21));
        assertThat(kv.get("tokenizer.ggml.unknown_token_id")).isEqualTo(MetaValue.u32(20));
        assertThat(kv.get("tokenizer.ggml.bos_token_id")).isEqualTo(MetaValue.u32(20));
        assertThat(values(kv.get("tokenizer.ggml.tokens")).subList(20, 23)).containsExactly("<|endoftext|>", "<|user|>", "<e>");

        // no <|user|> among the added tokens: the converter's get_added_vocab()["<|user|>"] fails
        Files.writeString(dir.resolve("tokenizer.json"), t.replace("<|user|>", "<y>"));
        assertThatThrownBy(() -> Vocabulary.glm4(new ModelFiles(new Folder(dir), ParseLimits.defaults()), (Map<?, ?>) Json.parse(config, 64),
                new LinkedHashMap<>(), PRE)).isInstanceOf(MalformedFileException.class).hasMessageContaining("<|user|>");
    }

    @Test
    void anUnknownPreTokenizerStopsAsTheConverterDoes() {
        assertThatThrownBy(() -> convert(tokenizer("null", ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG, CONFIG, BpePreTokenizers::require))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("check hash").hasMessageContaining("--no-vocab");
    }

    @Test
    void badInputIsATypedErrorNamingWhatIsWrong() {
        assertThatThrownBy(() -> convert("{\"model\": ", TOKENIZER_CONFIG, CONFIG, PRE))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("tokenizer.json");
        assertThatThrownBy(() -> convert(tokenizer("null", ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG,
                CONFIG.replace("24", "21"), PRE)).isInstanceOf(MalformedFileException.class).hasMessageContaining("vocab_size 21");
        assertThatThrownBy(() -> convert(tokenizer("null", ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG.replace("PreTrainedTokenizerFast",
                "BloomTokenizerFast"), CONFIG, PRE)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("BloomTokenizerFast");
        String sentencePieceLike = tokenizer("null", ByteLevelBpeTest.MERGES).replace("\"byte_fallback\": false", "\"byte_fallback\": true")
                .replace("\"decoder\": {\"type\": \"ByteLevel\"}", "\"decoder\": {\"type\": \"Sequence\", \"decoders\": []}");
        assertThatThrownBy(() -> convert(sentencePieceLike, TOKENIZER_CONFIG, CONFIG, PRE))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("byte_fallback").hasMessageContaining("--no-vocab");
        assertThatThrownBy(() -> convert(tokenizer("null", ByteLevelBpeTest.MERGES), TOKENIZER_CONFIG.replace("\"<e>\"", "\"<zz>\""),
                CONFIG, PRE)).isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("<zz>");
    }

    /** A model folder with no tensors: what {@link ModelFiles} needs. */
    record Folder(Path dir) implements TensorArchive {
        public String format() {
            return "test";
        }

        public Optional<Path> path() {
            return Optional.of(dir);
        }

        public Map<String, String> metadata() {
            return Map.of();
        }

        public Map<String, String> properties() {
            return Map.of();
        }

        public List<TensorEntry> tensors() {
            return List.of();
        }

        public MemorySegment data(TensorEntry entry, Arena arena) {
            throw new UnsupportedOperationException();
        }

        public void close() {
        }
    }
}
