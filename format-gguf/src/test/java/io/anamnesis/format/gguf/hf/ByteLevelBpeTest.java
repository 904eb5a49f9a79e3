package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The byte-level BPE encoder on tokenizer.json files small enough to work out by hand. The
 * real tokenizers (Llama 3, Qwen3) are checked in {@link RealTokenizersTest}.
 */
class ByteLevelBpeTest {
    /**
     * Ids: a=0 b=1 c=2 Ġ(space)=3 ab=4 abc=5 Ġa=6 bc=7 1=8 2=9 3=10 12=11 123=12, added
     * {@code <s>}=20 (special) and {@code <x>}=21. Merges by rank: a b, ab c, Ġ a, 1 2, 12 3.
     */
    static String tokenizer(String preTokenizer, String postProcessor, boolean ignoreMerges, String merges) {
        return """
                {"version": "1.0", "added_tokens": [
                  {"id": 20, "content": "<s>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": true},
                  {"id": 21, "content": "<x>", "single_word": false, "lstrip": false, "rstrip": false, "normalized": false, "special": false}],
                 "normalizer": null, "pre_tokenizer": %s, "post_processor": %s, "decoder": {"type": "ByteLevel"},
                 "model": {"type": "BPE", "dropout": null, "unk_token": null, "byte_fallback": false, "ignore_merges": %s,
                   "vocab": {"a": 0, "b": 1, "c": 2, "Ġ": 3, "ab": 4, "abc": 5, "Ġa": 6, "bc": 7, "1": 8, "2": 9, "3": 10,
                             "12": 11, "123": 12},
                   "merges": %s}}
                """.formatted(preTokenizer, postProcessor, ignoreMerges, merges);
    }

    static final String BYTE_LEVEL = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
    static final String MERGES = "[\"a b\", \"ab c\", \"Ġ a\", \"1 2\", \"12 3\"]";
    static final String BOS = """
            {"type": "TemplateProcessing", "single": [{"SpecialToken": {"id": "<s>", "type_id": 0}}, {"Sequence": {"id": "A", "type_id": 0}}],
             "pair": [], "special_tokens": {"<s>": {"id": "<s>", "ids": [20], "tokens": ["<s>"]}}}""";

    static ByteLevelBpe bpe(String json) {
        return ByteLevelBpe.of((Map<?, ?>) Json.parse(json, 64));
    }

    @Test
    void mergesLowestRankFirst() {
        ByteLevelBpe t = bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES));
        // "abc" -> a b c -> ab c -> abc; " ab" -> Ġ a b: (a b) ranks 0 before (Ġ a) 2 -> Ġ ab, no merge joins them
        assertThat(t.encode("abc ab", false)).containsExactly(5, 3, 4);
        // " a" alone: Ġ a merges
        assertThat(t.encode(" a", false)).containsExactly(6);
        assertThat(t.encode("", true)).isEmpty();
    }

    /** A pattern from a hostile tokenizer.json that backtracks exponentially is refused in bounded time. */
    @Test
    void aCatastrophicallyBacktrackingSplitRegexIsRefusedNotAHang() {
        String split = "{\"type\": \"Split\", \"pattern\": {\"Regex\": \"(.*a){12}#\"}, "
                + "\"behavior\": \"Isolated\", \"invert\": false}";
        String pre = "{\"type\": \"Sequence\", \"pretokenizers\": [" + split + ", " + BYTE_LEVEL.replace("true}", "false}") + "]}";
        ByteLevelBpe t = bpe(tokenizer(pre, "null", false, MERGES));
        long start = System.nanoTime();
        assertThatThrownBy(() -> t.encode("a".repeat(60) + "b", false))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("backtracks");
        // bounded by the read budget, not by the pattern's ~60^12 ways
        assertThat(System.nanoTime() - start).isLessThan(30_000_000_000L);
        // an ordinary pattern on the same text is untouched
        assertThat(bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES)).encode("abc ab", false)).containsExactly(5, 3, 4);
    }

    @Test
    void mergePairsMayBeListsOfTwo() {
        String pairs = "[[\"a\", \"b\"], [\"ab\", \"c\"], [\"Ġ\", \"a\"], [\"1\", \"2\"], [\"12\", \"3\"]]";
        assertThat(bpe(tokenizer(BYTE_LEVEL, "null", false, pairs)).encode("abc ab", false)).containsExactly(5, 3, 4);
    }

    @Test
    void ignoreMergesTakesAWordFoundWhole() {
        // "bc" has no merge: split without ignore_merges, whole with it
        assertThat(bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES)).encode("bc", false)).containsExactly(1, 2);
        assertThat(bpe(tokenizer(BYTE_LEVEL, "null", true, MERGES)).encode("bc", false)).containsExactly(7);
    }

    @Test
    void splitRegexThenByteLevelWithoutItsRegex() {
        String pre = """
                {"type": "Sequence", "pretokenizers": [
                  {"type": "Split", "pattern": {"Regex": "\\\\p{N}{1,3}| ?\\\\p{L}+"}, "behavior": "Isolated", "invert": false},
                  {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]}""";
        ByteLevelBpe t = bpe(tokenizer(pre, "null", false, MERGES));
        // 12312 -> "123" "12"; " a" stays one piece
        assertThat(t.encode("12312 a", false)).containsExactly(12, 11, 6);
    }

    @Test
    void addedTokensAreSplitOutAndThePostProcessorAddsItsSpecialTokens() {
        ByteLevelBpe t = bpe(tokenizer(BYTE_LEVEL, BOS, false, MERGES));
        assertThat(t.encode("ab<x>c", false)).containsExactly(4, 21, 2);
        assertThat(t.encode("ab<x>c", true)).containsExactly(20, 4, 21, 2);
        assertThat(t.encode("<s>a", true)).containsExactly(20, 20, 0);
        String roberta = "{\"type\": \"RobertaProcessing\", \"sep\": [\"<x>\", 21], \"cls\": [\"<s>\", 20]}";
        assertThat(bpe(tokenizer(BYTE_LEVEL, roberta, false, MERGES)).encode("a", true)).containsExactly(20, 0, 21);
        String sequence = "{\"type\": \"Sequence\", \"processors\": [{\"type\": \"ByteLevel\"}, " + BOS + "]}";
        assertThat(bpe(tokenizer(BYTE_LEVEL, sequence, false, MERGES)).encode("a", true)).containsExactly(20, 0);
    }

    @Test
    void byteLevelAlphabet() {
        assertThat(ByteLevelBpe.byteLevel(" \n!é")).isEqualTo("ĠĊ!Ã©");
        assertThat(ByteLevelBpe.byteLevelDecode("ĠĊ!Ã©")).isEqualTo(" \n!é");
        assertThat(ByteLevelBpe.byteLevelDecode("<|eot_id|>")).isEqualTo("<|eot_id|>");
        assertThat(ByteLevelBpe.byteLevelDecode("a b")).as("a space is outside the alphabet: kept").isEqualTo("a b");
    }

    @Test
    void whatIsNotRunHereIsUnsupportedNamingIt() {
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES).replace("\"BPE\"", "\"WordPiece\"")))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("WordPiece").hasMessageContaining("--no-vocab");
        assertThatThrownBy(() -> bpe(tokenizer("{\"type\": \"Metaspace\"}", "null", false, MERGES)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("Metaspace");
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES).replace("\"byte_fallback\": false", "\"byte_fallback\": true")))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("byte_fallback");
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "{\"type\": \"BertLike\"}", false, MERGES)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("BertLike");
        String noByteLevel = "{\"type\": \"Split\", \"pattern\": {\"String\": \" \"}, \"behavior\": \"Isolated\", \"invert\": false}";
        assertThatThrownBy(() -> bpe(tokenizer(noByteLevel, "null", false, MERGES)))
                .isInstanceOf(UnsupportedFeatureException.class).hasMessageContaining("ByteLevel");
    }

    @Test
    void brokenFileIsMalformedNamingIt() {
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, "[\"a z\"]")))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("tokenizer.json").hasMessageContaining("a z");
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, "[\"a b c\"]")))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("merge 0");
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES).replace("\"ab\": 4", "\"ab\": \"four\"")))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("model.vocab[ab]");
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, MERGES).replace("\"ab\": 4", "\"ab\": -4")))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("model.vocab[ab]").hasMessageContaining("out of range");
        assertThatThrownBy(() -> bpe(tokenizer(BYTE_LEVEL, "null", false, "[\"ab\"]")))
                .isInstanceOf(MalformedFileException.class).hasMessageContaining("merge 0").hasMessageContaining("separated by a space");
        assertThatThrownBy(() -> bpe("{\"model\": []}")).isInstanceOf(MalformedFileException.class).hasMessageContaining("model");
    }
}
