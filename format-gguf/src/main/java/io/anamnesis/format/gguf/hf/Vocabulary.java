package io.anamnesis.format.gguf.hf;

import io.anamnesis.api.MalformedFileException;
import io.anamnesis.api.MetaValue;
import io.anamnesis.api.UnsupportedFeatureException;
import io.anamnesis.api.json.Json;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.SequencedMap;
import java.util.function.Function;

/**
 * The {@code tokenizer.*} key/values llama.cpp's converter writes for a llama-family model
 * ({@code LlamaModel.set_vocab}) or a Qwen one ({@code Qwen2Model.set_vocab}, the same two
 * vocabularies without llama's extras), in its order: a SentencePiece {@code tokenizer.model}
 * ({@code _set_vocab_sentencepiece}, {@code _create_vocab_sentencepiece}), else a byte-level
 * BPE {@code tokenizer.json} ({@code _set_vocab_gpt2}, {@code get_vocab_base}), then gguf-py's
 * {@code SpecialVocab} (merges, special token ids, add flags, chat template).
 */
final class Vocabulary {
    /** gguf-py's token types ({@code SentencePieceTokenTypes}). */
    static final int NORMAL = 1, UNKNOWN = 2, CONTROL = 3, USER_DEFINED = 4, UNUSED = 5, BYTE = 6;

    /**
     * SpecialVocab's token kinds, in its order (it appends {@code eot}, then {@code eom}, when
     * a post-processor's last token overrides the EOS), with the GGUF key of each id (none for
     * {@code cls}: gguf-py has no writer for it).
     */
    private static final List<String> SPECIAL = List.of("bos", "eos", "unk", "sep", "pad", "cls", "mask");
    private static final Map<String, String> ID_KEYS = Map.of(
            "bos", "tokenizer.ggml.bos_token_id", "eos", "tokenizer.ggml.eos_token_id",
            "unk", "tokenizer.ggml.unknown_token_id", "sep", "tokenizer.ggml.seperator_token_id",
            "pad", "tokenizer.ggml.padding_token_id", "mask", "tokenizer.ggml.mask_token_id",
            "eot", "tokenizer.ggml.eot_token_id", "eom", "tokenizer.ggml.eom_token_id");
    /** The tokenizer classes whose encoding is tokenizer.json's own (transformers 4.x); Llama's rebuilds the post-processor. */
    private static final List<String> PLAIN_CLASSES = List.of("PreTrainedTokenizerFast", "GPT2Tokenizer", "GPT2TokenizerFast",
            "Qwen2Tokenizer", "Qwen2TokenizerFast");
    private static final List<String> LLAMA_CLASSES = List.of("LlamaTokenizer", "LlamaTokenizerFast");
    private static final Map<String, String> ADD_KEYS = Map.of(
            "bos", "tokenizer.ggml.add_bos_token", "eos", "tokenizer.ggml.add_eos_token", "sep", "tokenizer.ggml.add_sep_token");

    private Vocabulary() {
    }

    /** BERT's {@code tokenizer.ggml.token_type_count}: config.json's {@code type_vocab_size}, 1 without one. */
    private static void tokenTypeCount(Map<?, ?> config, Map<String, MetaValue> kv) {
        long typeCount = HfConfig.integer(config, "type_vocab_size").orElse(1L);
        if (typeCount < 0 || typeCount > 0xFFFF_FFFFL) {
            throw new MalformedFileException("config.json: type_vocab_size " + typeCount + " is not a uint32");
        }
        kv.put("tokenizer.ggml.token_type_count", MetaValue.u32(typeCount));
    }

    /** What llama.cpp loads as "no vocabulary" ({@code _set_vocab_none}). */
    static void none(Map<String, MetaValue> kv) {
        kv.put("tokenizer.ggml.model", MetaValue.str("none"));
    }

    /**
     * Adds the vocabulary's keys to {@code kv}, as {@code LlamaModel.set_vocab} chooses them:
     * {@code tokenizer.model} when the folder has one, else {@code tokenizer.json}.
     *
     * @param config the model's config.json
     * @throws MalformedFileException naming tokenizer.model and tokenizer.json when there is neither
     * @throws UnsupportedFeatureException for a tokenizer.json that is not byte-level BPE, or one
     *                                     the converter would stop at (an unknown pre-tokenizer)
     */
    static void llama(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        llama(files, config, kv, BpePreTokenizers::require);
    }

    /**
     * {@code Ernie4_5Model.set_vocab}: the SentencePiece {@code tokenizer.model} only, then
     * {@code add_space_prefix} as tokenizer_config.json's {@code add_prefix_space} says, when it does.
     *
     * @throws MalformedFileException naming tokenizer.model when the folder has none
     */
    /**
     * Adds the vocabulary's keys as {@code _set_vocab_sentencepiece} writes them for a family that calls it alone
     * (MiniCPM's {@code set_vocab}): the SentencePiece {@code tokenizer.model}, nothing after.
     *
     * @throws MalformedFileException naming tokenizer.model when the folder has none
     */
    static void sentencePieceOnly(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        byte[] model = files.bytes(SentencePieceModel.FILE).orElseThrow(() -> new MalformedFileException("no "
                + SentencePieceModel.FILE + " beside the model (the SentencePiece vocabulary this family reads; --no-vocab "
                + "writes the GGUF without a vocabulary)"));
        sentencePiece(model, files, config, kv);
    }

    static void sentencePieceSpacePrefixFromConfig(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        sentencePieceOnly(files, config, kv);
        files.json("tokenizer_config.json").ifPresent(tc -> {
            if (tc.get("add_prefix_space") instanceof Boolean b) kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(b));
        });
    }

    /** {@link #llama} with {@code tokenizer.ggml.pre} of a BPE vocabulary given by {@code preTokenizer} (for tests). */
    static void llama(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv, Function<ByteLevelBpe, String> preTokenizer) {
        Optional<byte[]> model = files.bytes(SentencePieceModel.FILE);
        if (model.isPresent()) {
            sentencePiece(model.get(), files, config, kv);
        } else if (files.has(ByteLevelBpe.FILE)) {
            Map<?, ?> tokenizer = files.json(ByteLevelBpe.FILE).orElseThrow();
            // _set_vocab_llama_hf takes a BPE with byte fallback and a Sequence decoder (a SentencePiece model saved by transformers)
            if (tokenizer.get("model") instanceof Map<?, ?> m && "BPE".equals(m.get("type"))
                    && Boolean.TRUE.equals(m.get("byte_fallback")) && tokenizer.get("decoder") instanceof Map<?, ?> d
                    && "Sequence".equals(d.get("type"))) {
                throw new UnsupportedFeatureException("the model's " + ByteLevelBpe.FILE + " is a SentencePiece-style BPE "
                        + "(byte_fallback) without " + SentencePieceModel.FILE + ", which the converter reads with its "
                        + "LlamaHfVocab; that is not converted yet (--no-vocab writes the GGUF without a vocabulary)");
            }
            gpt2(files, config, tokenizer, kv, preTokenizer);
        } else {
            throw noTokenizer(files);
        }
        // LlamaModel.set_vocab
        files.json("tokenizer_config.json").ifPresent(tc -> {
            if (tc.get("add_prefix_space") instanceof Boolean b) kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(b));
        });
        // granite's small models add no BOS
        if (HfConfig.integer(config, "vocab_size").orElse(32000L) == 49152) {
            kv.put("tokenizer.ggml.add_bos_token", new MetaValue.Bool(false));
        }
    }

    /**
     * Adds the vocabulary's keys as {@code Qwen2Model.set_vocab} chooses them (qwen2, qwen3):
     * {@code tokenizer.model} when the folder has one, else a byte-level BPE
     * {@code tokenizer.json}; nothing after.
     *
     * @throws MalformedFileException naming tokenizer.model and tokenizer.json when there is neither
     * @throws UnsupportedFeatureException for a tokenizer.json that is not byte-level BPE, or one
     *                                     the converter would stop at (an unknown pre-tokenizer)
     */
    static void sentencePieceElseGpt2(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        sentencePieceElseGpt2(files, config, kv, BpePreTokenizers::require);
    }

    /**
     * Adds the vocabulary's keys as {@code TextModel.set_vocab} writes them
     * ({@code _set_vocab_gpt2}): the byte-level BPE tokenizer.json only.
     */
    static void gpt2(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        if (!files.has(ByteLevelBpe.FILE) && files.has(SentencePieceModel.FILE)) {
            // the family's set_vocab reads a byte-level BPE only (MPT's converter falls back to SentencePiece with ids of
            // its own, SEA-LION's, which is not converted here)
            throw new UnsupportedFeatureException("the model folder has " + SentencePieceModel.FILE + " but no " + ByteLevelBpe.FILE
                    + ": this family's vocabulary is read from a byte-level BPE " + ByteLevelBpe.FILE + " (--no-vocab writes the "
                    + "GGUF without a vocabulary)");
        }
        if (!files.has(ByteLevelBpe.FILE)) throw noTokenizer(files);
        gpt2(files, config, files.json(ByteLevelBpe.FILE).orElseThrow(), kv, BpePreTokenizers::require);
    }

    /** The tokenizer classes whose encoding of the check text is tokenizer.json's (its post-processor's specials around it). */
    private static final List<String> BERT_CLASSES = List.of("BertTokenizer", "BertTokenizerFast", "PreTrainedTokenizerFast");

    /**
     * Adds the vocabulary's keys as {@code BertModel.set_vocab} writes them: the token type count
     * ({@code type_vocab_size}, 1 without it), then {@code get_vocab_base}'s tokens of a WordPiece
     * tokenizer.json in llama.cpp's "phantom space" spelling (a control token as it is, a
     * continuation without its {@code ##}, any other token after U+2581), model {@code bert}, the
     * pre-tokenizer named by the check hash ({@link WordPiece}), the token types, then
     * SpecialVocab without merges over {@code vocab_size} tokens.
     */
    static void bert(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        if (!files.has(ByteLevelBpe.FILE)) {
            throw new MalformedFileException("no tokenizer: " + ByteLevelBpe.FILE + " is not in "
                    + files.folder().map(Object::toString).orElse("the model folder") + (files.has("vocab.txt") ? " (a vocab.txt "
                    + "alone, which transformers turns into one, is not read here)" : "") + " (--no-vocab writes the GGUF "
                    + "without a vocabulary)");
        }
        Map<?, ?> tokenizer = files.json(ByteLevelBpe.FILE).orElseThrow();
        if (!WordPiece.is(tokenizer)) {
            Object type = tokenizer.get("model") instanceof Map<?, ?> m ? m.get("type") : null;
            throw new UnsupportedFeatureException("the model's " + ByteLevelBpe.FILE + " is a " + type + " vocabulary: BERT's is "
                    + "converted from a WordPiece one (--no-vocab writes the GGUF without a vocabulary)");
        }
        WordPiece wordPiece = WordPiece.of(tokenizer);
        List<ByteLevelBpe.AddedToken> added = ByteLevelBpe.addedTokens(tokenizer);
        Optional<Map<?, ?>> tokenizerConfig = files.json("tokenizer_config.json");
        Map<?, ?> tc = tokenizerConfig.orElse(Map.of());
        Object cls = tc.get("tokenizer_class");
        if (cls != null && cls != Json.NULL && !BERT_CLASSES.contains(cls)) {
            throw new UnsupportedFeatureException("tokenizer_config.json: tokenizer class " + cls + " is not converted yet for "
                    + "a WordPiece vocabulary (these are: " + String.join(", ", BERT_CLASSES) + "; --no-vocab writes the GGUF "
                    + "without a vocabulary)");
        }
        agreesWithTokenizerJson(tc, added);
        String hash = BpePreTokenizers.checkHash(wordPiece);
        String pre = BpePreTokenizers.name(hash).orElseThrow(() -> new UnsupportedFeatureException("the model's "
                + ByteLevelBpe.FILE + " has a WordPiece pre-tokenizer llama.cpp's converter does not know (its check hash is "
                + hash + "), so the converter would stop too (--no-vocab writes the GGUF without a vocabulary)"));

        BaseTokens base = baseTokens(files, config, tokenizer, added, false);
        List<MetaValue> tokens = new ArrayList<>(base.tokens().size()), types = new ArrayList<>(base.tokens().size());
        for (int i = 0; i < base.tokens().size(); i++) {
            String t = base.tokens().get(i);
            int type = base.types()[i];
            tokens.add(MetaValue.str(type == CONTROL ? t : t.startsWith("##") ? t.substring(2) : "\u2581" + t));
            types.add(MetaValue.i32(type));
        }
        tokenTypeCount(config, kv);
        kv.put("tokenizer.ggml.model", MetaValue.str("bert"));
        kv.put("tokenizer.ggml.pre", MetaValue.str(pre));
        kv.put("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING, tokens));
        kv.put("tokenizer.ggml.token_type", new MetaValue.Array(MetaValue.Type.I32, types));
        special(files, config, Optional.of(tokenizer), tokenizerConfig, Optional.of(tokens.size()), false, kv);
    }

    /** XLM-RoBERTa's SentencePiece model, under the name fairseq gave it. */
    static final String XLM_ROBERTA_FILE = "sentencepiece.bpe.model";

    /**
     * Adds the vocabulary's keys as {@code _xlmroberta_set_vocab} writes them from sentencepiece.bpe.model (a unigram
     * model; another type is exit 6, where the converter's assert fails): {@code max(vocab_size, pieces)} entries laid
     * out as {@link Pieces#of} lays them, then shifted as fairseq's ids are: {@code <s> <pad> </s> <unk>} (control,
     * control, control, unknown, scores 0) and the pieces from id 3 on, the last entry dropped, so that piece {@code j}
     * is token {@code j + 1}; model {@code t5}, pre-tokenizer {@code default}, tokens, scores, types, the normalizer's
     * {@code add_dummy_prefix} as {@code add_space_prefix}, the token type count, {@code remove_extra_whitespaces}, the
     * precompiled character map (when the model has one), then SpecialVocab without merges. A folder with only a
     * tokenizer.json (which the converter reads through transformers) is exit 6; neither is exit 3.
     */
    static void xlmRoberta(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        Optional<byte[]> model = files.bytes(XLM_ROBERTA_FILE);
        if (model.isEmpty()) {
            if (files.has(ByteLevelBpe.FILE)) {
                throw new UnsupportedFeatureException("the model folder has " + ByteLevelBpe.FILE + " but no " + XLM_ROBERTA_FILE
                        + ": the converter then reads the vocabulary through transformers' tokenizer, which is not converted yet "
                        + "(--no-vocab writes the GGUF without a vocabulary)");
            }
            throw new MalformedFileException("no tokenizer: " + XLM_ROBERTA_FILE + " is not in "
                    + files.folder().map(Object::toString).orElse("the model folder") + " (--no-vocab writes the GGUF without a "
                    + "vocabulary)");
        }
        SentencePieceModel sp = SentencePieceModel.parse(model.get(), files.limits().maxArrayLength(), XLM_ROBERTA_FILE);
        if (sp.modelType() != SentencePieceModel.UNIGRAM) {
            throw new UnsupportedFeatureException(XLM_ROBERTA_FILE + " is a SentencePiece model of type " + sp.modelType()
                    + ", not unigram (1), which the converter asserts and llama.cpp's t5 tokenizer runs");
        }
        long declared = Math.max(HfConfig.integer(config, "vocab_size").orElse(0L), sp.pieces().size());
        if (declared < 4 || declared > files.limits().maxArrayLength()) {
            throw new MalformedFileException("config.json: vocab_size " + declared + " is out of range for an XLM-RoBERTa vocabulary");
        }
        int vocabSize = (int) declared;
        Pieces table = Pieces.of(sp, vocabSize);
        List<MetaValue> tokens = new ArrayList<>(vocabSize), types = new ArrayList<>(vocabSize), scores = new ArrayList<>(vocabSize);
        String[] head = {"<s>", "<pad>", "</s>", "<unk>"};
        int[] headTypes = {CONTROL, CONTROL, CONTROL, UNKNOWN};
        for (int i = 0; i < 4; i++) {
            tokens.add(MetaValue.str(head[i]));
            scores.add(MetaValue.Real.f32(0.0f));
            types.add(MetaValue.i32(headTypes[i]));
        }
        for (int i = 3; i < vocabSize - 1; i++) {
            tokens.add(MetaValue.str(table.tokens()[i]));
            scores.add(MetaValue.Real.f32(table.scores()[i]));
            types.add(MetaValue.i32(table.types()[i]));
        }
        kv.put("tokenizer.ggml.model", MetaValue.str("t5"));
        kv.put("tokenizer.ggml.pre", MetaValue.str("default"));
        kv.put("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING, tokens));
        kv.put("tokenizer.ggml.scores", new MetaValue.Array(MetaValue.Type.F32, scores));
        kv.put("tokenizer.ggml.token_type", new MetaValue.Array(MetaValue.Type.I32, types));
        kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(sp.addDummyPrefix()));
        tokenTypeCount(config, kv);
        kv.put("tokenizer.ggml.remove_extra_whitespaces", new MetaValue.Bool(sp.removeExtraWhitespaces()));
        if (sp.precompiledCharsmap().length > 0) {
            List<MetaValue> bytes = new ArrayList<>(sp.precompiledCharsmap().length);
            for (byte b : sp.precompiledCharsmap()) bytes.add(new MetaValue.Int(MetaValue.Type.U8, b & 0xFF));
            kv.put("tokenizer.ggml.precompiled_charsmap", new MetaValue.Array(MetaValue.Type.U8, bytes));
        }
        special(files, config, files.json(ByteLevelBpe.FILE), files.json("tokenizer_config.json"), Optional.of(tokens.size()), false, kv);
    }

    /**
     * Adds the vocabulary's keys as {@code Glm4Model.set_vocab} writes them: a byte-level BPE
     * tokenizer.json, then SpecialVocab with merges whose EOS, EOT, UNK and BOS (in that order),
     * for the kinds the files name none of, are the added tokens {@code <|endoftext|>},
     * {@code <|user|>}, {@code <|endoftext|>}, {@code <|endoftext|>}.
     */
    static void glm4(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        glm4(files, config, kv, BpePreTokenizers::require);
    }

    /** {@link #glm4} with {@code tokenizer.ggml.pre} given by {@code preTokenizer} (for tests). */
    static void glm4(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv, Function<ByteLevelBpe, String> preTokenizer) {
        if (!files.has(ByteLevelBpe.FILE)) throw noTokenizer(files);
        gpt2(files, config, files.json(ByteLevelBpe.FILE).orElseThrow(), kv, preTokenizer,
                List.of(Map.entry("eos", "<|endoftext|>"), Map.entry("eot", "<|user|>"), Map.entry("unk", "<|endoftext|>"),
                        Map.entry("bos", "<|endoftext|>")));
    }

    /** {@link #sentencePieceElseGpt2} with {@code tokenizer.ggml.pre} given by {@code preTokenizer} (for tests). */
    static void sentencePieceElseGpt2(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv,
                                      Function<ByteLevelBpe, String> preTokenizer) {
        Optional<byte[]> model = files.bytes(SentencePieceModel.FILE);
        if (model.isPresent()) {
            sentencePiece(model.get(), files, config, kv);
        } else if (files.has(ByteLevelBpe.FILE)) {
            gpt2(files, config, files.json(ByteLevelBpe.FILE).orElseThrow(), kv, preTokenizer);
        } else {
            throw noTokenizer(files);
        }
    }

    /**
     * Adds the vocabulary's keys as {@code GemmaModel.set_vocab} writes them: the SentencePiece
     * {@code tokenizer.model} ({@code _set_vocab_sentencepiece}); then a second SpecialVocab
     * for CodeGemma's kinds (prefix, suffix, middle, fsep, eot; no bound on the ids, no chat
     * template) with the fixed ids 67, 69, 68, 70 and 107, of which gguf-py has a writer for
     * the EOT only; then {@code add_space_prefix = false}.
     *
     * @throws MalformedFileException when the folder has no tokenizer.model (the converter
     *                                reads no other vocabulary for Gemma)
     */
    static void gemma(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        sentencePiece(files.bytes(SentencePieceModel.FILE).orElseThrow(() -> noSentencePiece(files, "GemmaForCausalLM")), files,
                config, kv);
        SequencedMap<String, Long> fim = new LinkedHashMap<>();
        fim.put("prefix", 67L);
        fim.put("suffix", 69L);
        fim.put("middle", 68L);
        fim.put("fsep", 70L);
        fim.put("eot", 107L);
        special(files, config, files.json(ByteLevelBpe.FILE), files.json("tokenizer_config.json"), Optional.empty(), false,
                List.copyOf(fim.keySet()), fim, false, kv);
        kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(false));
    }

    /**
     * Adds the vocabulary's keys as {@code Gemma2Model.set_vocab} writes them: the
     * SentencePiece {@code tokenizer.model}, then {@code add_space_prefix = false}.
     *
     * @throws MalformedFileException when the folder has no tokenizer.model
     */
    static void sentencePieceNoSpacePrefix(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        sentencePiece(files.bytes(SentencePieceModel.FILE).orElseThrow(() -> noSentencePiece(files, "Gemma2ForCausalLM")), files,
                config, kv);
        kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(false));
    }

    /**
     * Adds the vocabulary's keys as {@code Gemma3Model.set_vocab} writes them: the
     * SentencePiece {@code tokenizer.model} then {@code add_space_prefix = false}, else a
     * byte-level BPE tokenizer.json ({@code _set_vocab_gpt2}).
     *
     * @throws MalformedFileException naming tokenizer.model and tokenizer.json when there is neither
     */
    static void sentencePieceNoSpacePrefixElseGpt2(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        if (files.has(SentencePieceModel.FILE)) {
            sentencePieceNoSpacePrefix(files, config, kv);
        } else if (files.has(ByteLevelBpe.FILE)) {
            gpt2(files, config, files.json(ByteLevelBpe.FILE).orElseThrow(), kv, BpePreTokenizers::require);
        } else {
            throw noTokenizer(files);
        }
    }

    /**
     * The number of tokens of the vocabulary the converter reads, as {@code Gemma3Model}
     * counts it to cut the embeddings: a SentencePiece vocabulary's size (config.json's
     * {@code vocab_size}, else the model's piece count, as {@link #sentencePieceNoSpacePrefix}
     * lays it out), else tokenizer.json's vocabulary and added tokens; empty without either.
     *
     * @throws MalformedFileException for a tokenizer.json without a vocabulary or added tokens
     */
    static Optional<Long> size(ModelFiles files, Map<?, ?> config) {
        Optional<byte[]> model = files.bytes(SentencePieceModel.FILE);
        if (model.isPresent()) {
            Optional<Long> declared = HfConfig.integer(config, "vocab_size_per_layer_input")
                    .or(() -> HfConfig.integer(config, "vocab_size")).filter(v -> v != 0);
            if (declared.isPresent()) return declared;
            return Optional.of((long) SentencePieceModel.parse(model.get(), files.limits().maxArrayLength()).pieces().size());
        }
        if (!files.has(ByteLevelBpe.FILE)) return Optional.empty();
        Map<?, ?> tokenizer = files.json(ByteLevelBpe.FILE).orElseThrow();
        if (!(tokenizer.get("model") instanceof Map<?, ?> m && m.get("vocab") instanceof Map<?, ?> vocab)
                || !(tokenizer.get("added_tokens") instanceof List<?> added)) {
            throw new MalformedFileException(ByteLevelBpe.FILE + " has no model.vocab or no added_tokens, which the converter "
                    + "counts to cut the embeddings to the vocabulary");
        }
        return Optional.of((long) vocab.size() + added.size());
    }

    private static MalformedFileException noSentencePiece(ModelFiles files, String family) {
        return new MalformedFileException("no " + SentencePieceModel.FILE + " in "
                + files.folder().map(Object::toString).orElse("the model folder") + ": the converter reads a " + family
                + " vocabulary from it only (--no-vocab writes the GGUF without a vocabulary)");
    }

    /**
     * Adds the vocabulary's keys as {@code Phi3MiniModel.set_vocab} writes them: a byte-level
     * BPE tokenizer.json ({@code _set_vocab_gpt2}) when tokenizer_config.json's
     * {@code tokenizer_class} is {@code GPT2Tokenizer} (Phi-4); else tokenizer.model, read its
     * own way: {@code vocab_size} entries (config.json's, else the model's), the pieces over
     * {@code [PAD<i>]} fillers, then the added tokens of added_tokens.json (an id past the
     * vocabulary skipped), tokenizer_config.json's {@code added_tokens_decoder} and
     * tokenizer.json's {@code added_tokens} (each score -1000, user-defined, or control when
     * marked special, the content as it is), model {@code llama}, pre {@code default}, then
     * SpecialVocab without merges.
     *
     * @throws MalformedFileException for a tokenizer_config.json without {@code tokenizer_class},
     *                                a folder without tokenizer.model (SentencePiece path), or an
     *                                added token whose id is outside the vocabulary
     */
    static void phi3(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        phi3(files, config, kv, BpePreTokenizers::require);
    }

    /** {@link #phi3} with {@code tokenizer.ggml.pre} of a BPE vocabulary given by {@code preTokenizer} (for tests). */
    static void phi3(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv, Function<ByteLevelBpe, String> preTokenizer) {
        Optional<Map<?, ?>> tokenizerConfig = files.json("tokenizer_config.json");
        if (tokenizerConfig.isPresent()) {
            // the converter reads tokenizer_config_json['tokenizer_class'] and stops without it
            if (!tokenizerConfig.get().containsKey("tokenizer_class")) {
                throw new MalformedFileException("tokenizer_config.json has no tokenizer_class, which the converter reads for "
                        + "a Phi-3 model (GPT2Tokenizer: byte-level BPE, else tokenizer.model)");
            }
            if ("GPT2Tokenizer".equals(tokenizerConfig.get().get("tokenizer_class"))) {
                if (!files.has(ByteLevelBpe.FILE)) {
                    throw new MalformedFileException("tokenizer_config.json names GPT2Tokenizer, but the model folder has no "
                            + ByteLevelBpe.FILE + " (--no-vocab writes the GGUF without a vocabulary)");
                }
                gpt2(files, config, files.json(ByteLevelBpe.FILE).orElseThrow(), kv, preTokenizer);
                return;
            }
        }
        byte[] model = files.bytes(SentencePieceModel.FILE).orElseThrow(() -> new MalformedFileException("no "
                + SentencePieceModel.FILE + " in the model folder, which the converter reads for a Phi-3 model whose "
                + "tokenizer_class is not GPT2Tokenizer (--no-vocab writes the GGUF without a vocabulary)"));
        SentencePieceModel sp = SentencePieceModel.parse(model, files.limits().maxArrayLength());
        int spSize = sp.pieces().size();
        Object v = config.get("vocab_size");
        long declared = v == null ? spSize : HfConfig.asInteger(v)
                .orElseThrow(() -> new MalformedFileException("config.json: vocab_size is not an integer: " + v));
        if (declared < spSize || declared > files.limits().maxArrayLength()) {
            throw new MalformedFileException("config.json: vocab_size " + declared + " does not hold the " + spSize + " pieces of "
                    + SentencePieceModel.FILE);
        }
        int vocabSize = (int) declared;
        Pieces table = Pieces.of(sp, vocabSize);
        String[] tokens = table.tokens();
        float[] scores = table.scores();
        int[] types = table.types();
        table.addedTokens(files, true);
        Optional<Map<?, ?>> tokenizerJson = files.json(ByteLevelBpe.FILE);
        for (AddedToken a : addedTokens(tokenizerConfig, tokenizerJson, vocabSize, " (config.json vocab_size)")) {
            tokens[a.id()] = a.content();
            scores[a.id()] = -1000.0f;
            types[a.id()] = a.special() ? CONTROL : USER_DEFINED;
        }

        kv.put("tokenizer.ggml.model", MetaValue.str("llama"));
        kv.put("tokenizer.ggml.pre", MetaValue.str("default"));
        List<MetaValue> t = new ArrayList<>(vocabSize), s = new ArrayList<>(vocabSize), y = new ArrayList<>(vocabSize);
        for (int i = 0; i < vocabSize; i++) {
            t.add(MetaValue.str(tokens[i]));
            s.add(MetaValue.Real.f32(scores[i]));
            y.add(MetaValue.i32(types[i]));
        }
        kv.put("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING, t));
        kv.put("tokenizer.ggml.scores", new MetaValue.Array(MetaValue.Type.F32, s));
        kv.put("tokenizer.ggml.token_type", new MetaValue.Array(MetaValue.Type.I32, y));
        special(files, config, tokenizerJson, tokenizerConfig, Optional.of(vocabSize), false, kv);
    }

    /**
     * Adds the vocabulary's keys as {@code InternLM2Model.set_vocab} writes them: {@code vocab_size} pieces of
     * tokenizer.model (config.json's, else the model's count; more than the model has is exit 3, where the converter
     * fails), each piece as it is but a NUL piece written as the dragon emoji the converter puts in its place, typed
     * by SentencePiece's unknown/control/unused/byte checks (user-defined pieces count as normal) and a piece starting
     * {@code [UNUSED} unused; then added_tokens.json's tokens appended (score -1000, user-defined), then
     * tokenizer_config.json's {@code added_tokens_decoder} and tokenizer.json's {@code added_tokens} over their ids
     * (score -1000, control when special, else user-defined); {@code add_space_prefix} from the model's normalizer;
     * SpecialVocab, whose EOS becomes {@code <|im_end|>}'s id when one of those added tokens is it (the converter reads
     * the EOS either way: a folder without one is exit 3).
     */
    static void internLm2(ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        byte[] model = files.bytes(SentencePieceModel.FILE).orElseThrow(() -> new MalformedFileException("no "
                + SentencePieceModel.FILE + " beside the model (the SentencePiece vocabulary InternLM2 reads; --no-vocab "
                + "writes the GGUF without a vocabulary)"));
        SentencePieceModel sp = SentencePieceModel.parse(model, files.limits().maxArrayLength());
        Object v = config.get("vocab_size");
        long declared = v == null || v == Json.NULL ? sp.pieces().size() : HfConfig.asInteger(v)
                .orElseThrow(() -> new MalformedFileException("config.json: vocab_size is not an integer: " + v));
        if (declared < 0 || declared > sp.pieces().size()) {
            throw new MalformedFileException("config.json: vocab_size " + declared + " is more than the " + sp.pieces().size()
                    + " pieces of " + SentencePieceModel.FILE + " (the converter reads that many pieces from it)");
        }
        List<String> tokens = new ArrayList<>();
        List<Float> scores = new ArrayList<>();
        List<Integer> types = new ArrayList<>();
        for (int id = 0; id < declared; id++) {
            SentencePieceModel.Piece p = sp.pieces().get(id);
            tokens.add(p.text().equals("\u0000") ? "\uD83D\uDC09" : p.text());
            scores.add(p.score());
            int type = switch (p.type()) {
                case SentencePieceModel.UNKNOWN -> UNKNOWN;
                case SentencePieceModel.CONTROL -> CONTROL;
                case SentencePieceModel.UNUSED -> UNUSED;
                case SentencePieceModel.BYTE -> BYTE;
                default -> NORMAL;
            };
            types.add(p.text().startsWith("[UNUSED") ? UNUSED : type);
        }
        files.json("added_tokens.json").ifPresent(added -> added.keySet().forEach(k -> {
            tokens.add(String.valueOf(k));
            scores.add(-1000.0f);
            types.add(USER_DEFINED);
        }));
        Optional<Map<?, ?>> tokenizerConfig = files.json("tokenizer_config.json");
        Optional<Map<?, ?>> tokenizerJson = files.json(ByteLevelBpe.FILE);
        Long chatEos = null;
        for (AddedToken a : addedTokens(tokenizerConfig, tokenizerJson, tokens.size(), " (its tokens)")) {
            if (a.content().equals("<|im_end|>")) chatEos = (long) a.id();
            tokens.set(a.id(), a.content());
            scores.set(a.id(), -1000.0f);
            types.set(a.id(), a.special() ? CONTROL : USER_DEFINED);
        }
        kv.put("tokenizer.ggml.model", MetaValue.str("llama"));
        kv.put("tokenizer.ggml.pre", MetaValue.str("default"));
        kv.put("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING, tokens.stream().<MetaValue>map(MetaValue::str).toList()));
        kv.put("tokenizer.ggml.scores", new MetaValue.Array(MetaValue.Type.F32,
                scores.stream().<MetaValue>map(MetaValue.Real::f32).toList()));
        kv.put("tokenizer.ggml.token_type", new MetaValue.Array(MetaValue.Type.I32, types.stream().<MetaValue>map(MetaValue::i32).toList()));
        kv.put("tokenizer.ggml.add_space_prefix", new MetaValue.Bool(sp.addDummyPrefix()));
        special(files, config, tokenizerJson, tokenizerConfig, Optional.of(tokens.size()), false, kv);
        if (!kv.containsKey("tokenizer.ggml.eos_token_id")) {
            throw new MalformedFileException("no EOS token id (config.json eos_token_id, or tokenizer_config.json's eos_token among "
                    + "the added tokens) below the vocabulary's " + tokens.size() + " tokens: the converter reads one for InternLM2");
        }
        // InternLM2Model.set_vocab: "so that the conversation can end normally", the chat EOS over SpecialVocab's
        if (chatEos != null) kv.put("tokenizer.ggml.eos_token_id", MetaValue.u32(chatEos));
    }

    /** An added token that tokenizer_config.json or tokenizer.json puts over a SentencePiece vocabulary's id. */
    private record AddedToken(int id, String content, boolean special) {
    }

    /**
     * tokenizer_config.json's {@code added_tokens_decoder}, then tokenizer.json's {@code added_tokens}, in their order, as
     * phi3's and InternLM2's {@code set_vocab} walk them; an id that is not an integer, outside the {@code size} tokens
     * (the converter's IndexError), or a token without content is malformed.
     */
    private static List<AddedToken> addedTokens(Optional<Map<?, ?>> tokenizerConfig, Optional<Map<?, ?>> tokenizerJson, int size,
                                                String sizeWhat) {
        List<Map.Entry<Object, Object>> added = new ArrayList<>();
        if (tokenizerConfig.isPresent() && tokenizerConfig.get().get("added_tokens_decoder") instanceof Map<?, ?> decoder) {
            for (Map.Entry<?, ?> e : decoder.entrySet()) added.add(Map.entry(e.getKey(), e.getValue()));
        }
        if (tokenizerJson.isPresent() && tokenizerJson.get().get("added_tokens") instanceof List<?> list) {
            for (Object t : list) {
                if (!(t instanceof Map<?, ?> m)) throw new MalformedFileException(ByteLevelBpe.FILE + ": an added token is not an object");
                added.add(Map.entry(m.get("id") == null ? "" : m.get("id"), m));
            }
        }
        List<AddedToken> out = new ArrayList<>();
        for (Map.Entry<Object, Object> e : added) {
            long id;
            Object key = e.getKey();
            try {
                id = key instanceof String str ? Long.parseLong(str) : HfConfig.asInteger(key).orElseThrow(NumberFormatException::new);
            } catch (NumberFormatException bad) {
                throw new MalformedFileException("an added token's id " + key + " (tokenizer_config.json or tokenizer.json) is not an integer");
            }
            if (id < 0 || id >= size) {
                throw new MalformedFileException("added token " + id + " (tokenizer_config.json or tokenizer.json) is outside "
                        + "the vocabulary of " + size + sizeWhat);
            }
            if (!(e.getValue() instanceof Map<?, ?> data) || !(data.get("content") instanceof String content)) {
                throw new MalformedFileException("added token " + id + " (tokenizer_config.json or tokenizer.json) has no content");
            }
            out.add(new AddedToken((int) id, content, truthy(data.get("special"))));
        }
        return out;
    }

    private static MalformedFileException noTokenizer(ModelFiles files) {
        return new MalformedFileException("no tokenizer: neither " + SentencePieceModel.FILE + " nor " + ByteLevelBpe.FILE
                + " is in " + files.folder().map(Object::toString).orElse("the model folder")
                + " (--no-vocab writes the GGUF without a vocabulary)");
    }

    /**
     * A SentencePiece vocabulary laid out as the converter lays it out: {@code vocabSize}
     * entries, {@code [PAD<i>]} (score -10000, unused) where no piece is, the model's pieces
     * from id 0 with their scores and types (IsUnknown, IsControl, IsUnused, IsByte; a
     * user-defined piece counts as normal). The arrays are the caller's to change.
     */
    private record Pieces(String[] tokens, float[] scores, int[] types) {
        static Pieces of(SentencePieceModel sp, int vocabSize) {
            String[] tokens = new String[vocabSize];
            float[] scores = new float[vocabSize];
            int[] types = new int[vocabSize];
            for (int i = 0; i < vocabSize; i++) tokens[i] = "[PAD" + i + "]";
            Arrays.fill(scores, -10000.0f);
            Arrays.fill(types, UNUSED);
            for (int id = 0; id < Math.min(sp.pieces().size(), vocabSize); id++) {
                SentencePieceModel.Piece p = sp.pieces().get(id);
                tokens[id] = p.text();
                scores[id] = p.score();
                types[id] = switch (p.type()) {
                    case SentencePieceModel.UNKNOWN -> UNKNOWN;
                    case SentencePieceModel.CONTROL -> CONTROL;
                    case SentencePieceModel.UNUSED -> UNUSED;
                    case SentencePieceModel.BYTE -> BYTE;
                    default -> NORMAL;
                };
            }
            return new Pieces(tokens, scores, types);
        }

        /**
         * added_tokens.json over the table: each token at its id, score -1000, user-defined;
         * an id past the vocabulary skipped, as the converter skips it; a negative id skipped
         * too, or with {@code refuseNegative} (phi3's reading) a malformed file.
         */
        void addedTokens(ModelFiles files, boolean refuseNegative) {
            files.json("added_tokens.json").ifPresent(added -> added.forEach((k, v) -> {
                long id = HfConfig.asInteger(v).orElseThrow(() -> new MalformedFileException(
                        "added_tokens.json: the id of " + k + " is not an integer"));
                if (id >= tokens.length) return;
                if (id < 0) {
                    if (refuseNegative) throw new MalformedFileException("added_tokens.json: the id of " + k + " is negative: " + id);
                    return;
                }
                tokens[(int) id] = String.valueOf(k);
                scores[(int) id] = -1000.0f;
                types[(int) id] = USER_DEFINED;
            }));
        }
    }

    private static void sentencePiece(byte[] model, ModelFiles files, Map<?, ?> config, Map<String, MetaValue> kv) {
        SentencePieceModel sp = SentencePieceModel.parse(model, files.limits().maxArrayLength());
        int spSize = sp.pieces().size();
        long declared = HfConfig.integer(config, "vocab_size_per_layer_input").or(() -> HfConfig.integer(config, "vocab_size"))
                .filter(v -> v != 0).orElse((long) spSize);
        if (declared < 0 || declared > files.limits().maxArrayLength()) {
            throw new MalformedFileException("config.json: vocab_size " + declared + " is out of range");
        }
        int vocabSize = (int) declared;

        Pieces table = Pieces.of(sp, vocabSize);
        String[] tokens = table.tokens();
        float[] scores = table.scores();
        int[] types = table.types();
        table.addedTokens(files, false);
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
        special(files, config, files.json(ByteLevelBpe.FILE), tokenizerConfig, Optional.of(vocabSize), false, kv);
    }

    /**
     * {@code _set_vocab_gpt2}: the tokens of tokenizer.json by id ({@code get_vocab_base}),
     * {@code tokenizer.ggml.pre} from the check hash ({@link BpePreTokenizers}), then
     * SpecialVocab with merges and no bound on the special ids.
     */
    private static void gpt2(ModelFiles files, Map<?, ?> config, Map<?, ?> tokenizer, Map<String, MetaValue> kv,
                             Function<ByteLevelBpe, String> preTokenizer) {
        gpt2(files, config, tokenizer, kv, preTokenizer, List.of());
    }

    /**
     * {@link #gpt2} whose SpecialVocab then sets the ids of {@code fixedByContent} (a kind and an
     * added token's content each, in the family's order) for the kinds the files name none of,
     * as the family's {@code _set_special_token} calls do.
     *
     * @throws MalformedFileException naming a content that is no added token (the converter's
     *                                {@code get_added_vocab()[...]} fails)
     */
    private static void gpt2(ModelFiles files, Map<?, ?> config, Map<?, ?> tokenizer, Map<String, MetaValue> kv,
                             Function<ByteLevelBpe, String> preTokenizer, List<Map.Entry<String, String>> fixedByContent) {
        ByteLevelBpe bpe = ByteLevelBpe.of(tokenizer);
        List<ByteLevelBpe.AddedToken> added = ByteLevelBpe.addedTokens(tokenizer);
        SequencedMap<String, Long> fixed = new LinkedHashMap<>();
        for (Map.Entry<String, String> f : fixedByContent) {
            long id = added.stream().filter(t -> t.content().equals(f.getValue())).findFirst()
                    .orElseThrow(() -> new MalformedFileException(ByteLevelBpe.FILE + " has no added token " + f.getValue()
                            + ", which the converter takes as the " + f.getKey() + " token")).id();
            fixed.put(f.getKey(), id);
        }
        Optional<Map<?, ?>> tokenizerConfig = files.json("tokenizer_config.json");
        Map<?, ?> tc = tokenizerConfig.orElse(Map.of());
        agreesWithTokenizerJson(tc, added);
        String pre = preTokenizer.apply(asTransformersLoadsIt(bpe, tc, added));

        boolean byteLevelDecoder = tokenizer.get("decoder") instanceof Map<?, ?> d && "ByteLevel".equals(d.get("type"));
        BaseTokens base = baseTokens(files, config, tokenizer, added, byteLevelDecoder);
        List<MetaValue> tokens = new ArrayList<>(base.tokens().size()), types = new ArrayList<>(base.tokens().size());
        for (int i = 0; i < base.tokens().size(); i++) {
            tokens.add(MetaValue.str(base.tokens().get(i)));
            types.add(MetaValue.i32(base.types()[i]));
        }
        kv.put("tokenizer.ggml.model", MetaValue.str("gpt2"));
        kv.put("tokenizer.ggml.pre", MetaValue.str(pre));
        kv.put("tokenizer.ggml.tokens", new MetaValue.Array(MetaValue.Type.STRING, tokens));
        kv.put("tokenizer.ggml.token_type", new MetaValue.Array(MetaValue.Type.I32, types));
        special(files, config, Optional.of(tokenizer), tokenizerConfig, Optional.empty(), true, SPECIAL, fixed, true, kv);
    }

    /** {@code get_vocab_base}'s tokens and token types, in id order. */
    private record BaseTokens(List<String> tokens, int[] types) {
    }

    /**
     * {@code get_vocab_base}'s token list of a tokenizer.json: {@code vocab_size} entries
     * (config.json's, else the vocabulary's), the model's vocabulary with each added token's
     * content at its id, {@code [PAD<i>]} (unused) where no token is; an added token control
     * when special or when it looks special, else user-defined (its U+2581 as spaces); the
     * others normal.
     */
    private static BaseTokens baseTokens(ModelFiles files, Map<?, ?> config, Map<?, ?> tokenizer,
                                         List<ByteLevelBpe.AddedToken> added, boolean byteLevelDecoder) {
        // tokenizer.vocab: the model's vocabulary, an added token's content taking its id
        Map<String, Integer> byContent = new LinkedHashMap<>();
        for (Map.Entry<?, ?> e : ((Map<?, ?>) ((Map<?, ?>) tokenizer.get("model")).get("vocab")).entrySet()) {
            byContent.put(String.valueOf(e.getKey()), ByteLevelBpe.id(e.getValue(), "model.vocab[" + e.getKey() + "]"));
        }
        Map<Integer, ByteLevelBpe.AddedToken> addedById = new HashMap<>();
        for (ByteLevelBpe.AddedToken t : added) {
            byContent.put(t.content(), t.id());
            addedById.put(t.id(), t);
        }
        Map<Integer, String> byId = new HashMap<>();
        int maxId = -1;
        for (Map.Entry<String, Integer> e : byContent.entrySet()) {
            String before = byId.put(e.getValue(), e.getKey());
            if (before != null) {
                throw ByteLevelBpe.malformed("id " + e.getValue() + " is both " + before + " and " + e.getKey());
            }
            maxId = Math.max(maxId, e.getValue());
        }
        long declared = HfConfig.integer(config, "vocab_size").orElse((long) byContent.size());
        if (declared <= maxId || declared > files.limits().maxArrayLength()) {
            throw new MalformedFileException("config.json: vocab_size " + declared + " does not hold the tokenizer's ids (up to "
                    + maxId + ")");
        }
        int vocabSize = (int) declared;
        List<String> tokens = new ArrayList<>(vocabSize);
        int[] types = new int[vocabSize];
        for (int i = 0; i < vocabSize; i++) {
            String token = byId.get(i);
            int type;
            if (token == null) {
                token = "[PAD" + i + "]";
                type = UNUSED;
            } else if (addedById.get(i) instanceof ByteLevelBpe.AddedToken a && a.content().equals(token)) {
                if (!a.normalized()) roundTrips(a, byteLevelDecoder);
                if (a.special() || looksSpecial(token)) {
                    type = CONTROL;
                } else {
                    token = token.replace("\u2581", " "); // pre-normalized user-defined spaces
                    type = USER_DEFINED;
                }
            } else {
                type = NORMAL;
            }
            tokens.add(token);
            types[i] = type;
        }
        return new BaseTokens(tokens, types);
    }

    /**
     * {@code get_vocab_base} writes a non-normalized added token as transformers decodes its
     * encoding. For a byte-level decoder that is the token itself unless the token is made of
     * byte-level characters standing for other bytes; then, and for other decoders, the round
     * trip is not modelled here and the token is refused rather than guessed.
     */
    private static void roundTrips(ByteLevelBpe.AddedToken a, boolean byteLevelDecoder) {
        String c = a.content();
        boolean asciiOnly = c.chars().allMatch(ch -> ch > ' ' && ch < 0x7F);
        boolean same = byteLevelDecoder ? ByteLevelBpe.byteLevelDecode(c).equals(c) : asciiOnly;
        if (!same || c.contains(" ")) {
            throw new UnsupportedFeatureException("the model's " + ByteLevelBpe.FILE + " has added token " + a.id() + " ("
                    + c + ") not normalized, which the converter writes as transformers decodes it; that round trip is "
                    + "not converted yet (--no-vocab writes the GGUF without a vocabulary)");
        }
    }

    /**
     * transformers adds to the tokenizer an added token of tokenizer_config.json's
     * {@code added_tokens_decoder} that tokenizer.json lacks (or has with other flags), and a
     * special token it names that is no added token; the vocabulary the converter sees then
     * differs from tokenizer.json's, which is not modelled here.
     */
    private static void agreesWithTokenizerJson(Map<?, ?> tc, List<ByteLevelBpe.AddedToken> added) {
        Map<Integer, ByteLevelBpe.AddedToken> byId = new HashMap<>();
        List<String> contents = new ArrayList<>();
        for (ByteLevelBpe.AddedToken t : added) {
            byId.put(t.id(), t);
            contents.add(t.content());
        }
        if (tc.get("added_tokens_decoder") instanceof Map<?, ?> decoder) {
            for (Map.Entry<?, ?> e : decoder.entrySet()) {
                int id;
                try {
                    id = Integer.parseInt(String.valueOf(e.getKey()));
                } catch (NumberFormatException bad) {
                    throw new MalformedFileException("tokenizer_config.json: added_tokens_decoder key " + e.getKey() + " is not an id");
                }
                ByteLevelBpe.AddedToken t = byId.get(id);
                boolean same = t != null && e.getValue() instanceof Map<?, ?> m && t.content().equals(m.get("content"))
                        && flag(m, "special", t.special()) && flag(m, "normalized", t.normalized()) && flag(m, "lstrip", t.lstrip())
                        && flag(m, "rstrip", t.rstrip()) && flag(m, "single_word", t.singleWord());
                if (!same) {
                    throw new UnsupportedFeatureException("tokenizer_config.json's added token " + id + " is not the same in "
                            + ByteLevelBpe.FILE + "; merging the two as transformers does is not converted yet (--no-vocab "
                            + "writes the GGUF without a vocabulary)");
                }
            }
        }
        List<Object> named = new ArrayList<>();
        for (String kind : SPECIAL) named.add(tc.get(kind + "_token"));
        if (tc.get("additional_special_tokens") instanceof List<?> more) named.addAll(more);
        for (Object n : named) {
            String content = content(n);
            if (content != null && !contents.contains(content)) {
                throw new UnsupportedFeatureException("tokenizer_config.json names special token " + content + ", which is not "
                        + "an added token of " + ByteLevelBpe.FILE + "; transformers would add it, which is not converted yet "
                        + "(--no-vocab writes the GGUF without a vocabulary)");
            }
        }
    }

    private static boolean flag(Map<?, ?> m, String key, boolean value) {
        return !(m.get(key) instanceof Boolean b) || b == value;
    }

    /**
     * The tokenizer as {@code AutoTokenizer} (transformers 4.x) encodes with it: tokenizer.json's
     * post-processor for the plain classes, or for Llama's the BOS/EOS of
     * {@code add_bos_token} (default true) and {@code add_eos_token} (default false).
     */
    private static ByteLevelBpe asTransformersLoadsIt(ByteLevelBpe bpe, Map<?, ?> tc, List<ByteLevelBpe.AddedToken> added) {
        Object cls = tc.get("tokenizer_class");
        if (cls == null || cls == Json.NULL || PLAIN_CLASSES.contains(cls)) return bpe;
        if (!LLAMA_CLASSES.contains(cls)) {
            throw new UnsupportedFeatureException("tokenizer_config.json: tokenizer class " + cls + " is not converted yet "
                    + "(its special tokens around an encoding are not modelled; these are: " + String.join(", ", PLAIN_CLASSES)
                    + ", " + String.join(", ", LLAMA_CLASSES) + "; --no-vocab writes the GGUF without a vocabulary)");
        }
        List<Integer> prefix = new ArrayList<>(), suffix = new ArrayList<>();
        if (!Boolean.FALSE.equals(tc.get("add_bos_token"))) prefix.add(tokenId("bos", tc, added));
        if (Boolean.TRUE.equals(tc.get("add_eos_token"))) suffix.add(tokenId("eos", tc, added));
        return bpe.withSpecialTokens(prefix, suffix);
    }

    private static int tokenId(String kind, Map<?, ?> tc, List<ByteLevelBpe.AddedToken> added) {
        String content = content(tc.get(kind + "_token"));
        for (ByteLevelBpe.AddedToken t : added) if (t.content().equals(content)) return t.id();
        throw new MalformedFileException("tokenizer_config.json: add_" + kind + "_token is set, but " + kind + "_token "
                + content + " is not an added token of " + ByteLevelBpe.FILE);
    }

    /** A special token of tokenizer_config.json, written as its content or as an object with one. */
    private static String content(Object entry) {
        return entry instanceof String s ? s : entry instanceof Map<?, ?> m && m.get("content") instanceof String s ? s : null;
    }

    /** {@code does_token_look_special}. */
    static boolean looksSpecial(String t) {
        return t.equals("<pad>") || t.equals("<mask>") || t.equals("<2mass>") || t.equals("[@BOS@]")
                || (t.startsWith("<|") && t.endsWith("|>")) || (t.startsWith("<\uFF5C") && t.endsWith("\uFF5C>"))
                || (t.startsWith("<unused") && t.endsWith(">"));
    }

    /**
     * gguf-py's {@code SpecialVocab}: with {@code loadMerges} the merges of tokenizer.json
     * (a {@code "a b"} string each, a pair's spaces written as U+0120) or else of merges.txt;
     * the add flags and EOS/EOT its post-processor implies; special token ids, first from
     * tokenizer.json's added tokens whose content tokenizer_config.json names, then from
     * config.json's {@code <kind>_token_id} (or its {@code text_config}'s), each bounded by
     * {@code nVocab} when there is one; the {@code add_<kind>_token} flags of
     * tokenizer_config.json; its chat template.
     */
    private static void special(ModelFiles files, Map<?, ?> config, Optional<Map<?, ?>> tokenizer,
                                Optional<Map<?, ?>> tokenizerConfig, Optional<Integer> nVocab, boolean loadMerges,
                                Map<String, MetaValue> kv) {
        special(files, config, tokenizer, tokenizerConfig, nVocab, loadMerges, SPECIAL, new LinkedHashMap<>(), true, kv);
    }

    /**
     * {@link #special} for the token kinds {@code types} (SpecialVocab's
     * {@code special_token_types}), then {@code fixed} ids set in their order as the family's
     * {@code _set_special_token} calls set them (a kind already found keeps its id); the chat
     * template written only with {@code chatTemplate}. Only the kinds gguf-py has a writer for
     * are written.
     */
    private static void special(ModelFiles files, Map<?, ?> config, Optional<Map<?, ?>> tokenizer,
                                Optional<Map<?, ?>> tokenizerConfig, Optional<Integer> nVocab, boolean loadMerges,
                                List<String> types, SequencedMap<String, Long> fixed, boolean writeChatTemplate,
                                Map<String, MetaValue> kv) {
        long bound = nVocab.map(Integer::longValue).orElse(Long.MAX_VALUE);
        List<String> merges = new ArrayList<>();
        if (loadMerges) {
            tokenizer.ifPresent(t -> merges.addAll(merges(t)));
            if (merges.isEmpty()) merges.addAll(mergesTxt(files));
        }
        Map<String, Long> ids = new LinkedHashMap<>();
        Map<String, Boolean> add = new LinkedHashMap<>();
        List<String> kinds = new ArrayList<>(types);
        // SpecialVocab edits its copy of tokenizer_config.json as it reads the post-processor
        Map<String, Object> tc = new LinkedHashMap<>();
        tokenizerConfig.ifPresent(m -> m.forEach((k, v) -> tc.put(String.valueOf(k), v)));
        List<?> addedTokens = List.of();
        MetaValue chatTemplate = null;
        if (tokenizer.isPresent()) {
            addedTokens = tokenizer.get().get("added_tokens") instanceof List<?> l ? l : List.of();
            postProcessor(tokenizer.get().get("post_processor"), tc, kinds, add);
        }
        if (!tc.isEmpty()) {
            Object template = tc.get("chat_template");
            if (template == null) {
                if (files.has("chat_template.jinja") || files.has("chat_template.json")) {
                    throw new UnsupportedFeatureException("a chat template in its own file (chat_template.jinja or "
                            + "chat_template.json) is not converted yet");
                }
            }
            if (template instanceof String s && !s.isEmpty()) chatTemplate = MetaValue.str(s);
            else if (template instanceof List<?>) {
                throw new UnsupportedFeatureException("tokenizer_config.json: named chat templates are not converted yet");
            }
            for (String kind : kinds) {
                if (tc.get("add_" + kind + "_token") instanceof Boolean b) add.put(kind, b);
                String content = content(tc.get(kind + "_token"));
                if (content == null) continue;
                for (Object a : addedTokens) {
                    if (a instanceof Map<?, ?> m && content.equals(m.get("content"))) {
                        HfConfig.asInteger(m.get("id")).ifPresent(id -> setSpecial(ids, kind, id, bound));
                        break;
                    }
                }
            }
        }
        // SpecialVocab reads config.json itself: its top level first, then its text_config (not the merged config)
        Map<?, ?> root = files.json("config.json").orElse(config);
        Map<?, ?> textConfig = root.get("text_config") instanceof Map<?, ?> m ? m : Map.of();
        for (String kind : kinds) {
            Object id = root.get(kind + "_token_id");
            if (id == null || id == Json.NULL) id = textConfig.get(kind + "_token_id");
            HfConfig.asInteger(id).ifPresent(v -> setSpecial(ids, kind, v, bound));
        }
        fixed.forEach((kind, id) -> setSpecial(ids, kind, id, bound));

        if (!merges.isEmpty()) {
            kv.put("tokenizer.ggml.merges", new MetaValue.Array(MetaValue.Type.STRING, merges.stream().<MetaValue>map(MetaValue::str).toList()));
        }
        ids.forEach((kind, id) -> {
            String key = ID_KEYS.get(kind);
            if (key != null) kv.put(key, MetaValue.u32(id));
        });
        add.forEach((kind, value) -> {
            String key = ADD_KEYS.get(kind);
            if (key != null) kv.put(key, new MetaValue.Bool(value));
        });
        if (chatTemplate != null && writeChatTemplate) kv.put("tokenizer.chat_template", chatTemplate);
    }

    /**
     * What SpecialVocab reads from tokenizer.json's post-processor (each of a Sequence's):
     * {@code RobertaProcessing} adds BOS, EOS and SEP; a {@code TemplateProcessing} whose
     * single template starts with the BOS (or CLS) token adds BOS, one that ends with a
     * special token adds EOS, that token becoming the EOS (the old EOS the EOT, or else the
     * EOM, when it differs), and its pair template decides whether SEP is added.
     */
    private static void postProcessor(Object pp, Map<String, Object> tc, List<String> kinds, Map<String, Boolean> add) {
        if (!truthy(pp) || !(pp instanceof Map<?, ?> post)) return;
        Object bos = tc.get("bos_token"), cls = tc.get("cls_token"), eos = tc.get("eos_token"), sep = tc.get("sep_token");
        if (!truthy(bos) && truthy(cls) && !tc.isEmpty()) tc.put("bos_token", bos = cls);
        if (!truthy(eos) && truthy(sep) && !tc.isEmpty()) tc.put("eos_token", eos = sep);
        List<?> processors = post.containsKey("processors") && post.get("processors") instanceof List<?> l ? l : List.of(post);
        for (Object o : processors) {
            if (!(o instanceof Map<?, ?> p)) continue;
            if ("RobertaProcessing".equals(p.get("type"))) {
                add.put("bos", true);
                add.put("eos", true);
                add.put("sep", true);
                if (!truthy(cls) && !tc.isEmpty()) tc.put("cls_token", cls = first(p.get("cls"), bos));
                if (!truthy(sep) && !tc.isEmpty()) tc.put("sep_token", sep = first(p.get("sep"), eos));
                continue;
            }
            if (!"TemplateProcessing".equals(p.get("type"))) continue;
            List<?> single = p.get("single") instanceof List<?> s ? s : List.of();
            List<?> pair = p.get("pair") instanceof List<?> s ? s : List.of();
            Object firstToken = null, lastToken = null;
            if (single.size() > 1) {
                firstToken = pieceId(single.getFirst(), "SpecialToken");
                if (truthy(firstToken)) {
                    if (tc.isEmpty()) bos = firstToken;
                    add.put("bos", Objects.equals(firstToken, bos) || Objects.equals(firstToken, cls));
                }
                lastToken = pieceId(single.getLast(), "SpecialToken");
                if (truthy(lastToken)) {
                    if (tc.isEmpty()) {
                        eos = lastToken;
                    } else if (!Objects.equals(lastToken, eos)) {
                        if (!kinds.contains("eot")) {
                            kinds.add("eot");
                            tc.put("eot_token", eos);
                        } else if (!kinds.contains("eom")) {
                            kinds.add("eom");
                            tc.put("eom_token", eos);
                        }
                        tc.put("eos_token", eos = lastToken);
                    }
                    add.put("eos", Objects.equals(lastToken, eos));
                }
            }
            if (!pair.isEmpty()) {
                int from = truthy(firstToken) && Objects.equals(pieceId(pair.getFirst(), "SpecialToken"), firstToken) ? 1 : 0;
                int to = truthy(lastToken) && Objects.equals(pieceId(pair.getLast(), "SpecialToken"), lastToken)
                        ? pair.size() - 1 : pair.size();
                List<?> middle = from < to ? pair.subList(from, to) : List.of();
                if (!middle.isEmpty() && "A".equals(pieceId(middle.getFirst(), "Sequence"))
                        && "B".equals(pieceId(middle.getLast(), "Sequence")) && middle.size() > 2) {
                    middle = middle.subList(1, middle.size() - 1);
                    boolean addSep = false;
                    Object entry = pieceId(middle.getFirst(), "SpecialToken");
                    if (truthy(entry) && (Objects.equals(entry, sep) || Objects.equals(entry, eos)) && !truthy(lastToken)) {
                        addSep = true;
                    }
                    if (middle.size() == 2) {
                        Object second = pieceId(middle.get(1), "SpecialToken");
                        if (truthy(second) && (Objects.equals(second, sep) || Objects.equals(second, eos))) addSep = true;
                    }
                    add.put("sep", addSep);
                    if (addSep && !truthy(sep) && !tc.isEmpty()) tc.put("sep_token", eos);
                }
            }
        }
    }

    /** {@code piece.get(kind, {}).get('id')}. */
    private static Object pieceId(Object piece, String kind) {
        return piece instanceof Map<?, ?> m && m.get(kind) instanceof Map<?, ?> k ? k.get("id") : null;
    }

    /** {@code processor.get(key, [fallback])[0]}. */
    private static Object first(Object list, Object fallback) {
        if (list == null) return fallback;
        return list instanceof List<?> l && !l.isEmpty() ? l.getFirst() : null;
    }

    /** Python's truth of a JSON value. */
    private static boolean truthy(Object v) {
        return v != null && v != Json.NULL && !(v instanceof Boolean b && !b) && !(v instanceof String s && s.isEmpty())
                && !(v instanceof Map<?, ?> m && m.isEmpty()) && !(v instanceof List<?> l && l.isEmpty())
                && !(v instanceof Double d && d == 0);
    }

    /** tokenizer.json's merges as SpecialVocab writes them. */
    private static List<String> merges(Map<?, ?> tokenizer) {
        if (!(tokenizer.get("model") instanceof Map<?, ?> model) || !(model.get("merges") instanceof List<?> list) || list.isEmpty()) {
            return List.of();
        }
        List<String> out = new ArrayList<>(list.size());
        boolean strings = list.getFirst() instanceof String;
        for (Object m : list) {
            if (strings && m instanceof String s) {
                out.add(s);
            } else if (!strings && m instanceof List<?> pair && pair.size() == 2 && pair.get(0) instanceof String a
                    && pair.get(1) instanceof String b) {
                // transformers 4.45's pairs may hold spaces; gguf-py writes each as U+0120
                out.add(a.replace(' ', '\u0120') + " " + b.replace(' ', '\u0120'));
            } else {
                throw ByteLevelBpe.malformed("model.merges mixes forms or holds neither \"a b\" nor [a, b]: " + m);
            }
        }
        return out;
    }

    /** {@code _try_load_merges_txt}: two whitespace-separated parts a line, a first line starting with # skipped. */
    private static List<String> mergesTxt(ModelFiles files) {
        Optional<byte[]> file = files.bytes("merges.txt");
        if (file.isEmpty()) return List.of();
        List<String> out = new ArrayList<>();
        List<String> lines = new String(file.get(), StandardCharsets.UTF_8).lines().toList();
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i).strip();
            if (i == 0 && line.startsWith("#")) continue;
            if (line.isEmpty()) continue;
            String[] parts = line.split("\\s+");
            if (parts.length == 2) out.add(parts[0] + " " + parts[1]);
        }
        return out;
    }

    /** {@code _set_special_token}: the first id of a kind wins; one at or above the bound is skipped. */
    private static void setSpecial(Map<String, Long> ids, String kind, long id, long bound) {
        if (id < 0) throw new MalformedFileException("the " + kind + " token id " + id + " is negative");
        if (id < bound) ids.putIfAbsent(kind, id);
    }
}
