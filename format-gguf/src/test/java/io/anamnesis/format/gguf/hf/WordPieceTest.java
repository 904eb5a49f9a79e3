package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.Json;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The WordPiece tokenizer on a small vocabulary, each expectation worked out by hand from the {@code tokenizers}
 * library's documented steps (BertNormalizer, BertPreTokenizer, WordPiece, the post-processor). {@code
 * RealTokenizersTest} checks bert-base-uncased's against transformers.js and the converter's check hash.
 */
class WordPieceTest {
    private static final List<String> VOCAB = List.of("[PAD]", "[UNK]", "[CLS]", "[SEP]", "un", "##aff", "##able", "hello", ",",
            "world", "!", "中", "i", "σ", "##σ", "ο", "##δ", "##ο", "a", "##a");

    static WordPiece tokenizer(String normalizer, int maxChars) {
        StringBuilder vocab = new StringBuilder();
        for (int i = 0; i < VOCAB.size(); i++) vocab.append(i == 0 ? "" : ", ").append('"').append(VOCAB.get(i)).append("\": ").append(i);
        String json = "{\"added_tokens\": [{\"id\": 2, \"content\": \"[CLS]\", \"special\": true}], \"normalizer\": " + normalizer
                + ", \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"post_processor\": {\"type\": \"BertProcessing\", "
                + "\"sep\": [\"[SEP]\", 3], \"cls\": [\"[CLS]\", 2]}, \"model\": {\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", "
                + "\"continuing_subword_prefix\": \"##\", \"max_input_chars_per_word\": " + maxChars + ", \"vocab\": {" + vocab + "}}}";
        return WordPiece.of((Map<?, ?>) Json.parse(json, 16));
    }

    static final String UNCASED = "{\"type\": \"BertNormalizer\", \"clean_text\": true, \"handle_chinese_chars\": true, "
            + "\"strip_accents\": null, \"lowercase\": true}";

    @Test
    void theNormalizerCleansSpacesIdeographsStripsAccentsAndLowercases() {
        WordPiece t = tokenizer(UNCASED, 100);
        // the zero-width joiner (Cf) and the NUL dropped, the tab a space, the ideographs spaced, é and ö without their marks
        assertThat(t.normalize("H\u00e9llo\u200d\u0000 W\u00f6rld\t\u4e2d\u6587")).isEqualTo("hello world  \u4e2d  \u6587 ");
        // İ decomposes to I and a combining dot (Mn), which is stripped before lowercasing
        assertThat(t.normalize("\u0130")).isEqualTo("i");
        // a no-break space is White_Space (Java's isWhitespace says no): a space
        assertThat(t.normalize("a\u00a0b")).isEqualTo("a b");
    }

    @Test
    void lowercasingIsACharacterAtATime() {
        WordPiece t = tokenizer("{\"type\": \"BertNormalizer\", \"strip_accents\": false, \"lowercase\": true}", 100);
        // no final-sigma rule (String.toLowerCase would end this word in ς)
        assertThat(t.normalize("\u039f\u0394\u039f\u03a3")).isEqualTo("\u03bf\u03b4\u03bf\u03c3");
        // accents kept when strip_accents is false
        assertThat(t.normalize("\u00c9")).isEqualTo("\u00e9");
        WordPiece cased = tokenizer("{\"type\": \"BertNormalizer\", \"lowercase\": false}", 100);
        assertThat(cased.normalize("\u00c9A")).isEqualTo("\u00c9A");
    }

    @Test
    void wordsSplitAtSpacesAndAroundPunctuation() {
        assertThat(WordPiece.words("  hello, world!!  a$b\u3001c")).containsExactly("hello", ",", "world", "!", "!", "a", "$", "b", "\u3001", "c");
    }

    @Test
    void greedyLongestPiecesOrTheUnknownTokenForTheWholeWord() {
        WordPiece t = tokenizer(UNCASED, 100);
        assertThat(t.pieces("unaffable")).containsExactly(4, 5, 6);
        // "unaffxable": after un, ##aff, "xable" matches nothing: the whole word is unknown
        assertThat(t.pieces("unaffxable")).containsExactly(1);
        assertThat(t.pieces("\u03bf\u03b4\u03bf")).containsExactly(15, 16, 17);
        assertThat(tokenizer(UNCASED, 3).pieces("aaaa")).containsExactly(1);
        assertThat(tokenizer(UNCASED, 4).pieces("aaaa")).containsExactly(18, 19, 19, 19);
    }

    @Test
    void encodeAddsThePostProcessorsTokens() {
        WordPiece t = tokenizer(UNCASED, 100);
        assertThat(t.encode("Hello, WORLD! \u4e2d\u00cd", true)).containsExactly(2, 7, 8, 9, 10, 11, 12, 3);
        assertThat(t.encode("Hello", false)).containsExactly(7);
        assertThatThrownBy(() -> t.encode("a [CLS] b", true)).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("[CLS]");
    }

    @Test
    void otherNormalizersAndPreTokenizersAreRefused() {
        String json = "{\"normalizer\": {\"type\": \"NFC\"}, \"pre_tokenizer\": {\"type\": \"BertPreTokenizer\"}, \"model\": "
                + "{\"type\": \"WordPiece\", \"unk_token\": \"[UNK]\", \"vocab\": {\"[UNK]\": 0}}}";
        assertThatThrownBy(() -> WordPiece.of((Map<?, ?>) Json.parse(json, 16))).isInstanceOf(UnsupportedFeatureException.class)
                .hasMessageContaining("NFC");
        String noUnknown = json.replace("{\"type\": \"NFC\"}", UNCASED).replace("\"[UNK]\": 0", "\"a\": 0");
        assertThatThrownBy(() -> WordPiece.of((Map<?, ?>) Json.parse(noUnknown, 16)))
                .isInstanceOf(io.anamnesis.api.MalformedFileException.class).hasMessageContaining("[UNK]");
    }
}
