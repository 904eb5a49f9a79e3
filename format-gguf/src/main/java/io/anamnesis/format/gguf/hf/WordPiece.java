package io.anamnesis.format.gguf.hf;

import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * A Hugging Face WordPiece {@code tokenizer.json} (BERT's and the sentence-transformers embedding
 * models built on it), as far as the converter needs it: its vocabulary, and the ids of a text
 * encoded the way the {@code tokenizers} library encodes it, so that {@link BpePreTokenizers}'s
 * check hash names its pre-tokenizer as {@code get_vocab_base_pre} does. Written from the
 * library's documented behaviour:
 * <ol>
 * <li>the {@code BertNormalizer}: {@code clean_text} drops NUL, U+FFFD and every character of the
 *     Unicode "other" categories (Cc, Cf, Cs, Co, Cn) but tab, newline and carriage return, and
 *     makes each White_Space character a space; {@code handle_chinese_chars} puts spaces around
 *     each CJK ideograph; {@code strip_accents} (when null, what {@code lowercase} is) decomposes
 *     (NFD) and drops the non-spacing marks (Mn); {@code lowercase} lowercases;</li>
 * <li>the {@code BertPreTokenizer}: words split at White_Space (dropped) and at each punctuation
 *     character (ASCII punctuation or a P* category), which stands alone;</li>
 * <li>the {@code WordPiece} model: a word longer than {@code max_input_chars_per_word} characters
 *     is the unknown token; otherwise the longest prefix in the vocabulary, then the longest
 *     continuation (with {@code continuing_subword_prefix}) from where it ended, and so on; a word
 *     with a part that matches nothing is the unknown token, whole;</li>
 * <li>the post-processor's special tokens around the whole ({@code TemplateProcessing} or
 *     {@code BertProcessing}).</li>
 * </ol>
 * Added tokens that occur in the text are not split out: the check text holds none (an encode
 * of a text that has one is refused rather than guessed).
 */
final class WordPiece {
    /** The model type in tokenizer.json. */
    static final String TYPE = "WordPiece";

    private final Map<String, Integer> vocab;
    private final int unknown;
    private final String continuing;
    private final int maxCharsPerWord;
    private final boolean cleanText, chineseChars, stripAccents, lowercase;
    private final List<String> added;
    private final List<Integer> prefix, suffix;

    private WordPiece(Map<String, Integer> vocab, int unknown, String continuing, int maxCharsPerWord, boolean cleanText,
                      boolean chineseChars, boolean stripAccents, boolean lowercase, List<String> added, List<Integer> prefix,
                      List<Integer> suffix) {
        this.vocab = vocab;
        this.unknown = unknown;
        this.continuing = continuing;
        this.maxCharsPerWord = maxCharsPerWord;
        this.cleanText = cleanText;
        this.chineseChars = chineseChars;
        this.stripAccents = stripAccents;
        this.lowercase = lowercase;
        this.added = added;
        this.prefix = prefix;
        this.suffix = suffix;
    }

    /** Whether a parsed tokenizer.json's model is WordPiece. */
    static boolean is(Map<?, ?> json) {
        return json.get("model") instanceof Map<?, ?> m && TYPE.equals(m.get("type"));
    }

    /**
     * The tokenizer of a parsed WordPiece tokenizer.json.
     *
     * @throws io.anamnesis.api.MalformedFileException      for a vocabulary or setting of the wrong type, or an unknown token not in it
     * @throws io.anamnesis.api.UnsupportedFeatureException for a normalizer, pre-tokenizer or post-processor not run here
     */
    static WordPiece of(Map<?, ?> json) {
        if (!(json.get("model") instanceof Map<?, ?> model) || !TYPE.equals(model.get("type"))) {
            throw ByteLevelBpe.unsupported("its model is not " + TYPE);
        }
        if (!(model.get("vocab") instanceof Map<?, ?> vocabJson)) throw ByteLevelBpe.malformed("model.vocab is not a JSON object");
        Map<String, Integer> vocab = HashMap.newHashMap(vocabJson.size());
        for (Map.Entry<?, ?> e : vocabJson.entrySet()) {
            vocab.put(String.valueOf(e.getKey()), ByteLevelBpe.id(e.getValue(), "model.vocab[" + e.getKey() + "]"));
        }
        String unk = model.get("unk_token") instanceof String s ? s : "[UNK]";
        Integer unknown = vocab.get(unk);
        if (unknown == null) throw ByteLevelBpe.malformed("the WordPiece unknown token " + unk + " is not in model.vocab");
        String continuing = model.get("continuing_subword_prefix") instanceof String s ? s : "##";
        long maxChars = HfConfig.asInteger(model.get("max_input_chars_per_word")).orElse(100L);

        if (!(json.get("normalizer") instanceof Map<?, ?> n) || !"BertNormalizer".equals(n.get("type"))) {
            throw ByteLevelBpe.unsupported("its WordPiece normalizer is " + describe(json.get("normalizer"))
                    + ", not BertNormalizer");
        }
        boolean lowercase = flag(n, "lowercase", true);
        Object strip = n.get("strip_accents");
        boolean stripAccents = strip instanceof Boolean b ? b : lowercase;
        if (!(json.get("pre_tokenizer") instanceof Map<?, ?> p) || !"BertPreTokenizer".equals(p.get("type"))) {
            throw ByteLevelBpe.unsupported("its WordPiece pre-tokenizer is " + describe(json.get("pre_tokenizer"))
                    + ", not BertPreTokenizer");
        }
        List<String> added = ByteLevelBpe.addedTokens(json).stream().map(ByteLevelBpe.AddedToken::content).toList();
        return new WordPiece(vocab, unknown, continuing, (int) Math.min(maxChars, Integer.MAX_VALUE), flag(n, "clean_text", true),
                flag(n, "handle_chinese_chars", true), stripAccents, lowercase, added,
                ByteLevelBpe.around(json.get("post_processor"), true), ByteLevelBpe.around(json.get("post_processor"), false));
    }

    private static boolean flag(Map<?, ?> m, String key, boolean otherwise) {
        return m.get(key) instanceof Boolean b ? b : otherwise;
    }

    private static String describe(Object part) {
        return part instanceof Map<?, ?> m ? String.valueOf(m.get("type")) : "none";
    }

    /**
     * The ids of {@code text}, with the post-processor's special tokens around them when
     * {@code addSpecialTokens} (as {@code tokenizer.encode(text)} gives them).
     */
    List<Integer> encode(String text, boolean addSpecialTokens) {
        for (String a : added) {
            if (!a.isEmpty() && text.contains(a)) {
                throw ByteLevelBpe.unsupported("a text holding its added token " + a + " is not encoded here");
            }
        }
        List<Integer> ids = new ArrayList<>();
        if (addSpecialTokens) ids.addAll(prefix);
        for (String word : words(normalize(text))) ids.addAll(pieces(word));
        if (addSpecialTokens) ids.addAll(suffix);
        return ids;
    }

    /** The BertNormalizer's four steps, in its order. */
    String normalize(String text) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints().forEach(c -> {
            if (cleanText) {
                if (c == 0 || c == 0xFFFD || isOther(c)) return;
                if (isWhiteSpace(c)) c = ' ';
            }
            if (chineseChars && isCjk(c)) {
                out.append(' ').appendCodePoint(c).append(' ');
            } else {
                out.appendCodePoint(c);
            }
        });
        String s = out.toString();
        if (stripAccents) {
            StringBuilder kept = new StringBuilder(s.length());
            Normalizer.normalize(s, Normalizer.Form.NFD).codePoints()
                    .filter(c -> Character.getType(c) != Character.NON_SPACING_MARK).forEach(kept::appendCodePoint);
            s = kept.toString();
        }
        if (!lowercase) return s;
        // a character at a time, as the library lowercases (no final-sigma rule; full mappings such as U+0130)
        StringBuilder lower = new StringBuilder(s.length());
        s.codePoints().forEach(c -> lower.append(Character.toString(c).toLowerCase(Locale.ROOT)));
        return lower.toString();
    }

    /** The BertPreTokenizer's words: split at White_Space (dropped) and around each punctuation character. */
    static List<String> words(String text) {
        List<String> words = new ArrayList<>();
        StringBuilder word = new StringBuilder();
        text.codePoints().forEach(c -> {
            if (isWhiteSpace(c) || isPunctuation(c)) {
                if (!word.isEmpty()) words.add(word.toString());
                word.setLength(0);
                if (!isWhiteSpace(c)) words.add(Character.toString(c));
            } else {
                word.appendCodePoint(c);
            }
        });
        if (!word.isEmpty()) words.add(word.toString());
        return words;
    }

    /** The WordPiece model's ids of one word: greedy longest matches, or the unknown token for the whole word. */
    List<Integer> pieces(String word) {
        if (word.codePointCount(0, word.length()) > maxCharsPerWord) return List.of(unknown);
        List<Integer> out = new ArrayList<>();
        int start = 0;
        while (start < word.length()) {
            int end = word.length();
            Integer found = null;
            while (start < end) {
                String piece = word.substring(start, end);
                found = vocab.get(start > 0 ? continuing + piece : piece);
                if (found != null) break;
                end = word.offsetByCodePoints(end, -1);
            }
            if (found == null) return List.of(unknown);
            out.add(found);
            start = end;
        }
        return out;
    }

    /** Unicode's White_Space property (Rust's {@code char::is_whitespace}, which the library uses; Java's differs). */
    static boolean isWhiteSpace(int c) {
        return (c >= 0x09 && c <= 0x0D) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A)
                || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
    }

    /** The "other" categories, tab, newline and carriage return aside (the library's {@code is_control}). */
    private static boolean isOther(int c) {
        if (c == '\t' || c == '\n' || c == '\r') return false;
        int t = Character.getType(c);
        return t == Character.CONTROL || t == Character.FORMAT || t == Character.SURROGATE || t == Character.PRIVATE_USE
                || t == Character.UNASSIGNED;
    }

    /** ASCII punctuation or a character of a Unicode punctuation category. */
    static boolean isPunctuation(int c) {
        if (c < 0x80) return (c >= 0x21 && c <= 0x2F) || (c >= 0x3A && c <= 0x40) || (c >= 0x5B && c <= 0x60) || (c >= 0x7B && c <= 0x7E);
        int t = Character.getType(c);
        return t == Character.CONNECTOR_PUNCTUATION || t == Character.DASH_PUNCTUATION || t == Character.START_PUNCTUATION
                || t == Character.END_PUNCTUATION || t == Character.INITIAL_QUOTE_PUNCTUATION
                || t == Character.FINAL_QUOTE_PUNCTUATION || t == Character.OTHER_PUNCTUATION;
    }

    /** The CJK Unified Ideographs blocks and their extensions, and the compatibility ideographs, as BERT's tokenizer has them. */
    private static boolean isCjk(int c) {
        return (c >= 0x4E00 && c <= 0x9FFF) || (c >= 0x3400 && c <= 0x4DBF) || (c >= 0x20000 && c <= 0x2A6DF)
                || (c >= 0x2A700 && c <= 0x2B73F) || (c >= 0x2B740 && c <= 0x2B81F) || (c >= 0x2B820 && c <= 0x2CEAF)
                || (c >= 0xF900 && c <= 0xFAFF) || (c >= 0x2F800 && c <= 0x2FA1F);
    }
}
