package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.UnsupportedFeatureException;

import java.nio.charset.StandardCharsets;
import java.text.Normalizer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.UnaryOperator;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * The encoder of a Hugging Face {@code tokenizer.json} whose model is byte-level BPE (GPT-2,
 * Llama 3, Qwen2): text in, token ids out, as the {@code tokenizers} library's
 * {@code encode(text, add_special_tokens)} gives them. It runs the pieces such files use:
 *
 * <ul>
 * <li>added tokens, split out of the text first (leftmost, then longest; {@code lstrip},
 *     {@code rstrip}, {@code single_word}), those marked {@code normalized} after normalizing;</li>
 * <li>normalizers {@code NFC}, {@code NFD}, {@code NFKC}, {@code NFKD} and {@code Sequence};</li>
 * <li>pre-tokenizers {@code Split} (a regex or a string, {@code Isolated} or {@code Removed}),
 *     {@code Digits}, {@code ByteLevel} (with or without its GPT-2 regex) and {@code Sequence};</li>
 * <li>the BPE model: merges by rank, lowest first and leftmost among equals, a word found
 *     whole in the vocabulary taken as it is under {@code ignore_merges};</li>
 * <li>post-processors {@code TemplateProcessing}, {@code RobertaProcessing},
 *     {@code BertProcessing}, {@code ByteLevel} and {@code Sequence}: the special tokens they
 *     put around a single sequence (what {@code encode} adds by default).</li>
 * </ul>
 *
 * Anything else in the file is an {@link UnsupportedFeatureException} naming it; a file
 * without the parts a BPE tokenizer needs is a {@link MalformedFileException}. Regexes are
 * run by {@code java.util.regex} with Unicode classes, which agrees with the Oniguruma
 * expressions these files hold ({@code \p{L}}, {@code \p{N}}, {@code \s}, {@code (?i:...)},
 * look-ahead).
 */
final class ByteLevelBpe {
    static final String FILE = "tokenizer.json";

    /** GPT-2's pre-tokenizer regex ({@code ByteLevel} with {@code use_regex}). */
    private static final Pattern GPT2_SPLIT = Pattern.compile(
            "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
            Pattern.UNICODE_CHARACTER_CLASS);

    /** Byte-level BPE's alphabet: byte b as one printable character (GPT-2's {@code bytes_to_unicode}). */
    private static final char[] BYTE_CHAR = new char[256];
    private static final Map<Character, Integer> CHAR_BYTE = new HashMap<>();

    static {
        int next = 256;
        for (int b = 0; b < 256; b++) {
            boolean printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            BYTE_CHAR[b] = (char) (printable ? b : next++);
            CHAR_BYTE.put(BYTE_CHAR[b], b);
        }
    }

    /**
     * One of the file's {@code added_tokens}.
     *
     * @param normalized matched in the normalized text (else in the raw text)
     */
    record AddedToken(int id, String content, boolean special, boolean normalized, boolean lstrip, boolean rstrip,
                      boolean singleWord) {
    }

    private final Map<String, Integer> vocab;
    /** (left id, right id) to (rank, merged id). */
    private final Map<Long, long[]> merges;
    private final boolean ignoreMerges;
    private final Integer unknown;
    private final List<AddedToken> added;
    private final UnaryOperator<String> normalizer;
    private final List<PreStep> preTokenizer;
    private final List<Integer> prefix, suffix;

    private ByteLevelBpe(Map<String, Integer> vocab, Map<Long, long[]> merges, boolean ignoreMerges, Integer unknown,
                         List<AddedToken> added, UnaryOperator<String> normalizer, List<PreStep> preTokenizer,
                         List<Integer> prefix, List<Integer> suffix) {
        this.vocab = vocab;
        this.merges = merges;
        this.ignoreMerges = ignoreMerges;
        this.unknown = unknown;
        this.added = added;
        this.normalizer = normalizer;
        this.preTokenizer = preTokenizer;
        this.prefix = prefix;
        this.suffix = suffix;
    }

    /**
     * The tokenizer of a parsed tokenizer.json.
     *
     * @throws MalformedFileException         when a part the model needs is missing or of the wrong type
     * @throws UnsupportedFeatureException    for a model, normalizer, pre-tokenizer or post-processor not run here
     */
    static ByteLevelBpe of(Map<?, ?> json) {
        Map<?, ?> model = object(json.get("model"), "model");
        String type = String.valueOf(model.get("type"));
        if (!type.equals("BPE")) throw unsupported("its model is " + type + ", not BPE");
        if (Boolean.TRUE.equals(model.get("byte_fallback"))) throw unsupported("its BPE model falls back to bytes (byte_fallback)");
        for (String k : List.of("continuing_subword_prefix", "end_of_word_suffix")) {
            if (model.get(k) instanceof String s && !s.isEmpty()) throw unsupported("its BPE model has a " + k + " (" + s + ")");
        }
        if (HfConfig.number(model.get("dropout")).filter(d -> d > 0).isPresent()) throw unsupported("its BPE model has dropout");

        // sized up front: Llama 3's 128,256 tokens and 280,147 merges grew these maps through a
        // dozen resizes each, and an id message built per token cost as much (docs/benchmarks.md)
        Map<?, ?> vocabJson = object(model.get("vocab"), "model.vocab");
        Map<String, Integer> vocab = HashMap.newHashMap(vocabJson.size());
        for (Map.Entry<?, ?> e : vocabJson.entrySet()) {
            Object v = e.getValue();
            int id = v instanceof Long n && n >= 0 && n <= Integer.MAX_VALUE ? (int) (long) n
                    : id(v, "model.vocab[" + e.getKey() + "]");
            vocab.put(String.valueOf(e.getKey()), id);
        }
        List<?> mergeList = model.get("merges") instanceof List<?> l ? l : List.of();
        Map<Long, long[]> merges = HashMap.newHashMap(mergeList.size());
        for (int rank = 0; rank < mergeList.size(); rank++) {
            String[] pair = mergePair(mergeList.get(rank), rank);
            Integer a = vocab.get(pair[0]), b = vocab.get(pair[1]), ab = vocab.get(pair[0] + pair[1]);
            if (a == null || b == null || ab == null) {
                throw malformed("merge " + rank + " (" + pair[0] + " " + pair[1] + ") has a token that is not in the vocabulary");
            }
            merges.putIfAbsent(key(a, b), new long[]{rank, ab});
        }
        Integer unknown = null;
        if (model.get("unk_token") instanceof String unk) unknown = vocab.get(unk);

        List<AddedToken> added = addedTokens(json);
        return new ByteLevelBpe(vocab, merges, Boolean.TRUE.equals(model.get("ignore_merges")), unknown, added,
                normalizer(json.get("normalizer")), preTokenizer(json.get("pre_tokenizer")),
                around(json.get("post_processor"), true), around(json.get("post_processor"), false));
    }

    /** The file's {@code added_tokens}, in file order. */
    static List<AddedToken> addedTokens(Map<?, ?> json) {
        Object list = json.get("added_tokens");
        if (list == null || list == io.anamnesis.api.json.Json.NULL) return List.of();
        if (!(list instanceof List<?> l)) throw malformed("added_tokens is not a list");
        List<AddedToken> out = new ArrayList<>();
        for (Object o : l) {
            Map<?, ?> m = object(o, "an added token");
            if (!(m.get("content") instanceof String content)) throw malformed("an added token has no content");
            int id = id(m.get("id"), "the id of added token " + content);
            boolean special = Boolean.TRUE.equals(m.get("special"));
            boolean normalized = m.get("normalized") instanceof Boolean b ? b : !special;
            out.add(new AddedToken(id, content, special, normalized, Boolean.TRUE.equals(m.get("lstrip")),
                    Boolean.TRUE.equals(m.get("rstrip")), Boolean.TRUE.equals(m.get("single_word"))));
        }
        return List.copyOf(out);
    }

    /**
     * The ids of {@code text}, with the post-processor's special tokens around them when
     * {@code addSpecialTokens} (as {@code tokenizer.encode(text)} gives them).
     */
    List<Integer> encode(String text, boolean addSpecialTokens) {
        List<Integer> ids = new ArrayList<>();
        if (addSpecialTokens) ids.addAll(prefix);
        for (Segment raw : splitAdded(text, false)) {
            if (raw.token() != null) {
                ids.add(raw.token().id());
                continue;
            }
            for (Segment s : splitAdded(normalizer.apply(raw.text()), true)) {
                if (s.token() != null) {
                    ids.add(s.token().id());
                    continue;
                }
                List<String> pieces = List.of(s.text());
                for (PreStep step : preTokenizer) {
                    List<String> next = new ArrayList<>();
                    for (String p : pieces) next.addAll(step.split(p));
                    pieces = next;
                }
                for (String word : pieces) word(word, ids);
            }
        }
        if (addSpecialTokens) ids.addAll(suffix);
        return ids;
    }

    /**
     * This tokenizer with other special tokens around a single sequence (what transformers
     * does for a tokenizer class that rebuilds the post-processor).
     */
    ByteLevelBpe withSpecialTokens(List<Integer> before, List<Integer> after) {
        return new ByteLevelBpe(vocab, merges, ignoreMerges, unknown, added, normalizer, preTokenizer, List.copyOf(before),
                List.copyOf(after));
    }

    /** A byte-level string as the text it stands for, or the string itself when it has a character outside that alphabet. */
    static String byteLevelDecode(String s) {
        byte[] bytes = new byte[s.length()];
        for (int i = 0; i < s.length(); i++) {
            Integer b = CHAR_BYTE.get(s.charAt(i));
            if (b == null) return s;
            bytes[i] = (byte) (int) b;
        }
        return new String(bytes, StandardCharsets.UTF_8);
    }

    /** The text's UTF-8 bytes in the byte-level alphabet. */
    static String byteLevel(String s) {
        byte[] utf8 = s.getBytes(StandardCharsets.UTF_8);
        StringBuilder b = new StringBuilder(utf8.length);
        for (byte x : utf8) b.append(BYTE_CHAR[x & 0xFF]);
        return b.toString();
    }

    private void word(String word, List<Integer> out) {
        if (word.isEmpty()) return;
        Integer whole = vocab.get(word);
        if (ignoreMerges && whole != null) {
            out.add(whole);
            return;
        }
        List<Integer> symbols = new ArrayList<>(word.length());
        word.codePoints().forEach(cp -> {
            Integer id = vocab.get(Character.toString(cp));
            if (id != null) symbols.add(id);
            else if (unknown != null) symbols.add(unknown);
        });
        while (symbols.size() > 1) {
            int best = -1;
            long bestRank = Long.MAX_VALUE, merged = 0;
            for (int i = 0; i + 1 < symbols.size(); i++) {
                long[] m = merges.get(key(symbols.get(i), symbols.get(i + 1)));
                if (m != null && m[0] < bestRank) {
                    bestRank = m[0];
                    merged = m[1];
                    best = i;
                }
            }
            if (best < 0) break;
            symbols.set(best, (int) merged);
            symbols.remove(best + 1);
        }
        out.addAll(symbols);
    }

    /** A piece of text, or an added token found in it. */
    private record Segment(String text, AddedToken token) {
    }

    /** The text split at the added tokens matched at this stage ({@code normalized} ones or the others). */
    private List<Segment> splitAdded(String text, boolean normalizedStage) {
        List<Segment> out = new ArrayList<>();
        int start = 0, pos = 0;
        while (pos < text.length()) {
            AddedToken best = null;
            for (AddedToken t : added) {
                if (t.normalized() != normalizedStage || t.content().isEmpty()) continue;
                if (text.startsWith(t.content(), pos) && (best == null || t.content().length() > best.content().length())) best = t;
            }
            if (best == null) {
                pos++;
                continue;
            }
            int from = pos, to = pos + best.content().length();
            if (best.singleWord() && ((from > 0 && wordChar(text.codePointBefore(from)))
                    || (to < text.length() && wordChar(text.codePointAt(to))))) {
                pos = to;
                continue;
            }
            if (best.lstrip()) {
                while (from > start && Character.isWhitespace(text.charAt(from - 1))) from--;
            }
            if (best.rstrip()) {
                while (to < text.length() && Character.isWhitespace(text.charAt(to))) to++;
            }
            if (from > start) out.add(new Segment(text.substring(start, from), null));
            out.add(new Segment(null, best));
            start = pos = to;
        }
        if (start < text.length() || out.isEmpty()) out.add(new Segment(text.substring(start), null));
        return out;
    }

    private static boolean wordChar(int cp) {
        return Character.isLetterOrDigit(cp) || cp == '_';
    }

    // --- the file's parts -------------------------------------------------------------------

    /** One pre-tokenizer: a piece in, its pieces out. */
    private interface PreStep {
        List<String> split(String piece);
    }

    private static UnaryOperator<String> normalizer(Object n) {
        if (n == null || n == io.anamnesis.api.json.Json.NULL) return UnaryOperator.identity();
        Map<?, ?> m = object(n, "normalizer");
        String type = String.valueOf(m.get("type"));
        return switch (type) {
            case "NFC" -> s -> Normalizer.normalize(s, Normalizer.Form.NFC);
            case "NFD" -> s -> Normalizer.normalize(s, Normalizer.Form.NFD);
            case "NFKC" -> s -> Normalizer.normalize(s, Normalizer.Form.NFKC);
            case "NFKD" -> s -> Normalizer.normalize(s, Normalizer.Form.NFKD);
            case "Sequence" -> {
                List<UnaryOperator<String>> all = new ArrayList<>();
                for (Object o : list(m.get("normalizers"), "normalizer.normalizers")) all.add(normalizer(o));
                yield s -> {
                    for (UnaryOperator<String> f : all) s = f.apply(s);
                    return s;
                };
            }
            default -> throw unsupported("its normalizer is " + type);
        };
    }

    private static List<PreStep> preTokenizer(Object p) {
        if (p == null || p == io.anamnesis.api.json.Json.NULL) throw unsupported("it has no pre-tokenizer (a byte-level BPE has ByteLevel)");
        List<PreStep> steps = new ArrayList<>();
        boolean[] byteLevel = {false};
        addPreSteps(object(p, "pre_tokenizer"), steps, byteLevel);
        if (!byteLevel[0]) throw unsupported("its pre-tokenizer has no ByteLevel step, so its vocabulary is not byte-level");
        return List.copyOf(steps);
    }

    private static void addPreSteps(Map<?, ?> m, List<PreStep> steps, boolean[] byteLevel) {
        String type = String.valueOf(m.get("type"));
        switch (type) {
            case "Sequence" -> {
                for (Object o : list(m.get("pretokenizers"), "pre_tokenizer.pretokenizers")) {
                    addPreSteps(object(o, "a pre-tokenizer"), steps, byteLevel);
                }
            }
            case "ByteLevel" -> {
                if (Boolean.TRUE.equals(m.get("add_prefix_space"))) throw unsupported("its ByteLevel pre-tokenizer adds a prefix space");
                boolean regex = !Boolean.FALSE.equals(m.get("use_regex"));
                byteLevel[0] = true;
                steps.add(piece -> {
                    List<String> parts = regex ? split(GPT2_SPLIT, piece, false) : List.of(piece);
                    return parts.stream().map(ByteLevelBpe::byteLevel).toList();
                });
            }
            case "Split" -> {
                if (Boolean.TRUE.equals(m.get("invert"))) throw unsupported("its Split pre-tokenizer is inverted");
                String behavior = String.valueOf(m.get("behavior"));
                if (!behavior.equals("Isolated") && !behavior.equals("Removed")) {
                    throw unsupported("its Split pre-tokenizer's behavior is " + behavior);
                }
                Map<?, ?> pattern = object(m.get("pattern"), "pre_tokenizer Split pattern");
                Pattern re;
                if (pattern.get("Regex") instanceof String r) {
                    try {
                        re = Pattern.compile(r, Pattern.UNICODE_CHARACTER_CLASS);
                    } catch (PatternSyntaxException e) {
                        throw unsupported("its Split regex " + r + " does not compile here: " + e.getDescription());
                    } catch (StackOverflowError e) {
                        throw unsupported("its Split regex is nested too deeply to compile");
                    }
                } else if (pattern.get("String") instanceof String s) {
                    re = Pattern.compile(Pattern.quote(s));
                } else {
                    throw malformed("a Split pre-tokenizer's pattern is neither Regex nor String");
                }
                boolean removed = behavior.equals("Removed");
                steps.add(piece -> split(re, piece, removed));
            }
            case "Digits" -> {
                Pattern re = Pattern.compile(Boolean.TRUE.equals(m.get("individual_digits")) ? "\\p{N}" : "\\p{N}+");
                steps.add(piece -> split(re, piece, false));
            }
            default -> throw unsupported("its pre-tokenizer " + type + " is not run here");
        }
    }

    /**
     * The matches and the text between them, in order ({@code Isolated}), or only the text
     * between ({@code Removed}). The pattern comes from the file, and a backtracking regex can
     * take exponential time, so the matcher reads the text through {@link Budgeted}: a pattern
     * that reads it more than {@value Budgeted#READS_PER_CHAR} times per character (the
     * pre-tokenizers of real tokenizers read each a few times) is refused, never a hang.
     */
    private static List<String> split(Pattern re, String s, boolean removed) {
        List<String> out = new ArrayList<>();
        Matcher m = re.matcher(new Budgeted(s));
        int last = 0;
        try {
            while (m.find()) {
                if (m.end() == m.start()) continue;
                if (m.start() > last) out.add(s.substring(last, m.start()));
                if (!removed) out.add(s.substring(m.start(), m.end()));
                last = m.end();
            }
        } catch (Budgeted.Exhausted e) {
            throw unsupported("its pre-tokenizer regex " + re.pattern() + " backtracks without end on the converter's check text");
        } catch (StackOverflowError e) {
            throw unsupported("its pre-tokenizer regex " + re.pattern() + " recurses too deeply on the converter's check text");
        }
        if (last < s.length()) out.add(s.substring(last));
        return out;
    }

    /** Text a regex may read a bounded number of times ({@link #split}). */
    private static final class Budgeted implements CharSequence {
        static final int READS_PER_CHAR = 4096;

        /** Thrown when the budget is spent; no stack trace, it is caught right away. */
        static final class Exhausted extends RuntimeException {
            Exhausted() {
                super(null, null, false, false);
            }
        }

        private final String text;
        private long left;

        Budgeted(String text) {
            this.text = text;
            this.left = (long) READS_PER_CHAR * (text.length() + 16);
        }

        @Override
        public char charAt(int index) {
            if (--left < 0) throw new Exhausted();
            return text.charAt(index);
        }

        @Override
        public int length() {
            return text.length();
        }

        @Override
        public CharSequence subSequence(int start, int end) {
            return text.substring(start, end);
        }

        @Override
        public String toString() {
            return text;
        }
    }

    /** The special-token ids a post-processor puts before ({@code before}) or after a single sequence. */
    static List<Integer> around(Object p, boolean before) {
        if (p == null || p == io.anamnesis.api.json.Json.NULL) return List.of();
        Map<?, ?> m = object(p, "post_processor");
        String type = String.valueOf(m.get("type"));
        return switch (type) {
            case "ByteLevel" -> List.of();
            case "Sequence" -> {
                // each processor wraps what the ones before it gave
                List<Integer> out = new ArrayList<>();
                for (Object o : list(m.get("processors"), "post_processor.processors")) {
                    List<Integer> these = around(o, before);
                    if (before) out.addAll(0, these);
                    else out.addAll(these);
                }
                yield out;
            }
            case "RobertaProcessing", "BertProcessing" -> {
                List<?> token = list(m.get(before ? "cls" : "sep"), "post_processor " + (before ? "cls" : "sep"));
                if (token.size() != 2) throw malformed("post_processor " + (before ? "cls" : "sep") + " is not [token, id]");
                yield List.of(id(token.get(1), "the post-processor's " + (before ? "cls" : "sep") + " id"));
            }
            case "TemplateProcessing" -> template(m, before);
            default -> throw unsupported("its post-processor " + type + " is not run here");
        };
    }

    private static List<Integer> template(Map<?, ?> m, boolean before) {
        List<?> single = list(m.get("single"), "post_processor.single");
        Map<?, ?> specials = m.get("special_tokens") instanceof Map<?, ?> s ? s : Map.of();
        List<Integer> pre = new ArrayList<>(), post = new ArrayList<>();
        int sequences = 0;
        for (Object o : single) {
            Map<?, ?> piece = object(o, "a post_processor.single piece");
            if (piece.get("Sequence") instanceof Map<?, ?> seq) {
                if (!"A".equals(seq.get("id"))) throw unsupported("its TemplateProcessing single template holds sequence " + seq.get("id"));
                sequences++;
            } else if (piece.get("SpecialToken") instanceof Map<?, ?> tok) {
                Object name = tok.get("id");
                if (!(specials.get(name) instanceof Map<?, ?> spec) || !(spec.get("ids") instanceof List<?> tokIds)) {
                    throw malformed("the post-processor's special token " + name + " is not in its special_tokens");
                }
                for (Object i : tokIds) (sequences == 0 ? pre : post).add(id(i, "an id of special token " + name));
            } else {
                throw malformed("a post_processor.single piece is neither Sequence nor SpecialToken");
            }
        }
        if (sequences != 1) throw unsupported("its TemplateProcessing single template has " + sequences + " sequences");
        return before ? pre : post;
    }

    private static String[] mergePair(Object merge, int rank) {
        if (merge instanceof String s) {
            int space = s.indexOf(' ');
            if (space < 0 || s.indexOf(' ', space + 1) >= 0) {
                throw malformed("merge " + rank + " (" + s + ") is not two tokens separated by a space");
            }
            return new String[]{s.substring(0, space), s.substring(space + 1)};
        }
        if (merge instanceof List<?> l && l.size() == 2 && l.get(0) instanceof String a && l.get(1) instanceof String b) {
            return new String[]{a, b};
        }
        throw malformed("merge " + rank + " is neither \"a b\" nor [a, b]");
    }

    /**
     * The merges' map key of the pair (a, b): the pair's 64 bits times an odd constant, which
     * keeps every pair's key distinct and spreads them over {@link Long#hashCode}. The pair's
     * bits as they are hash to a ^ b, which a vocabulary's merges share by the thousand:
     * HashMap made trees of its bins, and building a Llama 3 tokenizer's 280,147 merges took
     * most of a convert's vocabulary time (docs/benchmarks.md).
     */
    private static long key(int a, int b) {
        return (((long) a << 32) | (b & 0xFFFF_FFFFL)) * 0x9E37_79B9_7F4A_7C15L;
    }

    static int id(Object v, String what) {
        long id = HfConfig.asInteger(v).orElseThrow(() -> malformed(what + " is not an integer"));
        if (id < 0 || id > Integer.MAX_VALUE) throw malformed(what + " is out of range: " + id);
        return (int) id;
    }

    private static Map<?, ?> object(Object v, String what) {
        if (v instanceof Map<?, ?> m) return m;
        throw malformed(what + " is not a JSON object");
    }

    private static List<?> list(Object v, String what) {
        if (v instanceof List<?> l) return l;
        throw malformed(what + " is not a list");
    }

    static MalformedFileException malformed(String what) {
        return new MalformedFileException(FILE + ": " + what);
    }

    static UnsupportedFeatureException unsupported(String what) {
        return new UnsupportedFeatureException("the model's " + FILE + " cannot be converted: " + what
                + " (--no-vocab writes the GGUF without a vocabulary)");
    }
}
