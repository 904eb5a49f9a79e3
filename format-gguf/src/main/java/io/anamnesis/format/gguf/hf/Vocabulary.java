package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.UnsupportedFeatureException;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code tokenizer.*} key/values llama.cpp's converter writes for a SentencePiece model
 * ({@code _set_vocab_sentencepiece}, {@code _create_vocab_sentencepiece}, gguf-py's
 * {@code SpecialVocab}), in its order.
 */
final class Vocabulary {
    /** gguf-py's token types ({@code SentencePieceTokenTypes}). */
    static final int NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;

    /** SpecialVocab's token kinds, in its order, with the GGUF key of each id (none for {@code cls}). */
    private static final List<String> SPECIAL = List.of("bos", "eos", "unk", "sep", "pad", "cls", "mask");
    private static final Map<String, String> ID_KEYS = Map.of(
            "bos", "tokenizer.ggml.bos_token_id", "eos", "tokenizer.ggml.eos_token_id",
            "unk", "tokenizer.ggml.unknown_token_id", "sep", "tokenizer.ggml.seperator_token_id",
            "pad", "tokenizer.ggml.padding_token_id", "mask", "tokenizer.ggml.mask_token_id");
    private static final Map<String, String> ADD_KEYS = Map.of(
            "bos", "tokenizer.ggml.add_bos_token", "eos", "tokenizer.ggml.add_eos_token", "sep", "tokenizer.ggml.add_sep_token");

    private Vocabulary() {
    }

    /** What llama.cpp loads as "no vocabulary" ({@code _set_vocab_none}). */
    static void none(Map<String, MetaValue> kv) {
        kv.put("tokenizer.ggml.model", MetaValue.str("none"));
    }

    /**
     * Adds the vocabulary's keys to {@code kv}.
     *
     * @param config the model's config.json
     * @throws MalformedFileException naming tokenizer.model when there is no tokenizer
     * @throws UnsupportedFeatureException for a tokenizer.json-only (BPE) vocabulary
     */
    static void sentencePiece(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        Optional<byte[]> model = files.bytes(SentencePieceModel.FILE);
        if (model.isEmpty()) {
            if (files.has("tokenizer.json")) {
                throw new UnsupportedFeatureException("the model's vocabulary is a tokenizer.json without "
                        + SentencePieceModel.FILE + "; only SentencePiece vocabularies are converted yet (--no-vocab "
                        + "writes the GGUF without a vocabulary)");
            }
            throw new MalformedFileException("no tokenizer: " + SentencePieceModel.FILE + " is not in "
                    + files.folder().map(Object::toString).orElse("the model folder")
                    + " (--no-vocab writes the GGUF without a vocabulary)");
        }
        SentencePieceModel sp = SentencePieceModel.parse(model.get(), files.limits().maxArrayLength());
        int spSize = sp.pieces().size();
        long declared = HfConfig.integer(config, "vocab_size_per_layer_input").or(() -> HfConfig.integer(config, "vocab_size"))
                .filter(v -> v != 0).orElse((long) spSize);
        if (declared < 0 || declared > files.limits().maxArrayLength()) {
            throw new MalformedFileException("config.json: vocab_size " + declared + " is out of range");
        }
        int vocabSize = (int) declared;

        String[] tokens = new String[vocabSize];
        float[] scores = new float[vocabSize];
        int[] types = new int[vocabSize];
        for (int i = 0; i < vocabSize; i++) tokens[i] = "[PAD" + i + "]";
        Arrays.fill(scores, -10000.0f);
        Arrays.fill(types, UNUSED);
        for (int id = 0; id < Math.min(spSize, vocabSize); id++) {
            SentencePieceModel.Piece p = sp.pieces().get(id);
            tokens[id] = p.text();
            scores[id] = p.score();
            // IsUnknown, IsControl, IsUnused, IsByte; a user-defined piece counts as normal
            types[id] = switch (p.type()) {
                case SentencePieceModel.UNKNOWN -> UNKNOWN;
                case SentencePieceModel.CONTROL -> CONTROL;
                case SentencePieceModel.UNUSED -> UNUSED;
                case SentencePieceModel.BYTE -> BYTE;
                default -> NORMAL;
            };
        }
        files.json("added_tokens.json").ifPresent(added -> added.forEach((k, v) -> {
            long id = HfConfig.asInteger(v).orElseThrow(() -> new MalformedFileException(
                    "added_tokens.json: the id of " + k + " is not an integer"));
            if (id < 0 || id >= vocabSize) return;
            tokens[(int) id] = String.valueOf(k);
            scores[(int) id] = -1000.0f;
            types[(int) id] = USER_DEFINED;
        }));
        Optional<Map<?, ?>> tokenizerConfig = files.json("tokenizer_config.json");
        if (tokenizerConfig.isPresent() && tokenizerConfig.get().get("added_tokens_decoder") instanceof Map<?, ?> decoder) {
            for (Map.Entry<?, ?> e : decoder.entrySet()) {
                long id;
                try {
                    id = Long.parseLong(String.valueOf(e.getKey()));
                } catch (NumberFormatException bad) {
                    throw new MalformedFileException("tokenizer_config.json: added_tokens_decoder key " + e.getKey() + " is not an id");
                }
                if (id < 0 || id >= vocabSize) continue;
                if (!(e.getValue() instanceof Map<?, ?> data) || !(data.get("content") instanceof String content)) {
                    throw new MalformedFileException("tokenizer_config.json: added token " + id + " has no content");
                }
                String token = content;
                if (Boolean.TRUE.equals(data.get("special")) || looksSpecial(token)) {
                    types[(int) id] = CONTROL;
                } else {
                    token = token.replace("\u2581", " "); // pre-normalized user-defined spaces
                    types[(int) id] = USER_DEFINED;
                }
                scores[(int) id] = -1000.0f;
                tokens[(int) id] = token;
            }
        }

        kv.put("tokenizer.ggml.model", MetaValue.str("llama"));
        kv.put("tokenizer.ggml.pre", MetaValue.str("default"));
        List<MetaValue> t = new ArrayList<>(vocabSize), s = new ArrayList<>(vocabSize), y = new ArrayList<>(vocabSize);
        for (int i = 0; i < vocabSize; i++) {
            t.add(MetaValue.str(tokens[i]));
            s.add(MetaValue.Real.f32(scores[i]));
            y.add(MetaValue.i32(types[i]));
        }
        if (vocabSize > 0) {
            kv.put("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING, t));
            kv.put("tokenizer.ggml.scores", new MetaValue.Array(MetaValue.Type.F32, s));
            kv.put("tokenizer.ggml.token_type", new MetaValue.Array(MetaValue.Type.I32, y));
        }
        special(files, config, tokenizerConfig, vocabSize, kv);
    }

    /** {@code does_token_look_special}. */
    static boolean looksSpecial(String t) {
        return t.equals("<pad>") || t.equals("<mask>") || t.equals("<2mass>") || t.equals("[@BOS@]")
                || (t.startsWith("<|") && t.endsWith("|>")) || (t.startsWith("<\uFF5C") && t.endsWith("\uFF5C>"))
                || (t.startsWith("<unused") && t.endsWith(">"));
    }

    /**
     * gguf-py's SpecialVocab without merges: special token ids, first from tokenizer.json's
     * added tokens whose content tokenizer_config.json names, then from config.json's
     * {@code <kind>_token_id}; the {@code add_<kind>_token} flags of tokenizer_config.json;
     * its chat template. Then {@code LlamaModel.set_vocab}'s {@code add_prefix_space}.
     */
    private static void special(ModelFiles files, Map<?, ?> config, Optional<Map<?, ?>> tokenizerConfig, int vocabSize,
                                Map<String, MetaValue> kv) {
        Map<String, Long> ids = new LinkedHashMap<>();
        Map<String, Boolean> add = new LinkedHashMap<>();
        Optional<Map<?, ?>> tokenizer = files.json("tokenizer.json");
        if (tokenizer.isPresent() && tokenizer.get().get("post_processor") != null) {
            throw new UnsupportedFeatureException("tokenizer.json has a post_processor, whose special-token rules "
                    + "are not converted yet (--no-vocab writes the GGUF without a vocabulary)");
        }
        List<?> addedTokens = tokenizer.map(t -> t.get("added_tokens")).filter(List.class::isInstance)
                .map(List.class::cast).orElse(List.of());
        if (tokenizerConfig.isPresent()) {
            Map<?, ?> tc = tokenizerConfig.get();
            for (String kind : SPECIAL) {
                if (tc.get("add_" + kind + "_token") instanceof Boolean b) add.put(kind, b);
                Object entry = tc.get(kind + "_token");
                String content = entry instanceof String s ? s
                        : entry instanceof Map<?, ?> m && m.get("content") instanceof String s ? s : null;
                if (content == null) continue;
                for (Object a : addedTokens) {
                    if (a instanceof Map<?, ?> m && content.equals(m.get("content"))) {
                        HfConfig.asInteger(m.get("id")).ifPresent(id -> setSpecial(ids, kind, id, vocabSize));
                        break;
                    }
                }
            }
        }
        for (String kind : SPECIAL) {
            HfConfig.asInteger(config.get(kind + "_token_id")).ifPresent(id -> setSpecial(ids, kind, id, vocabSize));
        }
        ids.forEach((kind, id) -> {
            String key = ID_KEYS.get(kind);
            if (key != null) kv.put(key, MetaValue.u32(id));
        });
        add.forEach((kind, value) -> {
            String key = ADD_KEYS.get(kind);
            if (key != null) kv.put(key, new MetaValue.Bool(value));
        });
        if (tokenizerConfig.isPresent()) {
            Object template = tokenizerConfig.get().get("chat_template");
            if (template == null) {
                template = files.has("chat_template.jinja") ? "jinja" : null;
                if (template != null || files.has("chat_template.json")) {
                    throw new UnsupportedFeatureException("a chat template in its own file (chat_template.jinja or "
                            + "chat_template.json) is not converted yet");
                }
            }
            if (template instanceof String s && !s.isEmpty()) kv.put("tokenizer.chat_template", MetaValue.str(s));
            else if (template instanceof List<?>) {
                throw new UnsupportedFeatureException("tokenizer_config.json: named chat templates are not converted yet");
            }
            if (tokenizerConfig.get().get("add_prefix_space") instanceof Boolean b) {
                kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(b));
            }
        }
    }

    /** {@code _set_special_token}: the first id of a kind wins; one out of the vocabulary is skipped. */
    private static void setSpecial(Map<String, Long> ids, String kind, long id, int vocabSize) {
        if (id < 0) throw new MalformedFileException("the " + kind + " token id " + id + " is negative");
        if (id < vocabSize) ids.putIfAbsent(kind, id);
    }
}
