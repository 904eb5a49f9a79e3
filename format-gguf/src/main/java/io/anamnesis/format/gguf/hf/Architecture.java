package io.anamnesis.format.gguf.hf;

import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * One model family as llama.cpp's converter lays it out, as data: the Hugging Face
 * architecture names it takes, each tensor's GGUF name, the tensors whose rows are
 * permuted for ggml's rope, the family's own hyper-parameter keys, how it chooses its
 * vocabulary, the config.json keys it cannot do without, and the variants of it the
 * converter writes differently (not converted here). Adding a family is a new table in
 * {@link Architectures} (declared with {@link #of}) and a test, not a new code path.
 *
 * @param gguf           {@code general.architecture} and the prefix of its keys ({@code llama})
 * @param hfNames        the {@code config.json} {@code architectures[0]} values it takes
 * @param tensors        Hugging Face base names (without {@code .weight}/{@code .bias}) to GGUF base names
 * @param ropeRows       the tensors whose rows are reordered from rotate-half to adjacent pairs
 * @param extraKeys      the family's keys after the common ones, in its order ({@code <arch>.vocab_size}, ...)
 * @param vocabulary     how the family's {@code set_vocab} chooses the vocabulary
 * @param requiredConfig config.json keys refused when absent: the converter reads the config
 *                       through transformers' {@code AutoConfig}, which fills in the model
 *                       class's defaults, and those defaults are not guessed here
 * @param refused        names that make the converter take another path for the family
 *                       (a reranker, say), refused rather than written as the plain family
 * @param llama3Rope     whether the family writes a llama3 rope scaling as the
 *                       {@code rope_freqs.weight} tensor ({@code LlamaModel.generate_extra_tensors});
 *                       a family without it would drop the scaling, and refuses it
 * @param textModelKeys  whether the family's {@code set_gguf_parameters} starts with
 *                       {@code TextModel}'s keys ({@code extraKeys} then follow them), or
 *                       writes only its own ({@code extraKeys} are then all its keys, in its order)
 * @param skipped        Hugging Face tensor names the family's {@code modify_tensors} drops
 * @param shifts         values the family's {@code modify_tensors} adds to tensors
 * @param experts        the per-expert tensors the family's {@code modify_tensors} stacks into
 *                       one tensor per projection and block, when it is a mixture of experts
 * @param extras         what the family adds beyond a plain decoder: its config class's defaults,
 *                       the text model of a multimodal checkpoint, the embedding rows cut to the
 *                       vocabulary, local and global attention layers ({@link Extras#NONE} for none)
 */
record Architecture(String gguf, List<String> hfNames, List<TensorName> tensors, List<RopeRows> ropeRows,
                    List<FamilyKey> extraKeys, VocabularyRule vocabulary, List<String> requiredConfig,
                    List<Variant> refused, boolean llama3Rope, boolean textModelKeys, List<String> skipped,
                    List<Shift> shifts, Optional<Experts> experts, Extras extras) {

    /**
     * Starts the declaration of a family: {@code Architecture.of("llama", "LlamaForCausalLM")
     * .tensors(...).vocabulary(...)...build()}. What a declaration does not say is what most
     * families do: TextModel's keys first, no rows permuted, no keys of its own, no config.json
     * key required, no variant refused, no llama3 rope tensor, every tensor kept, no value
     * changed, no experts, no extras.
     */
    static Builder of(String gguf, String... hfNames) {
        return new Builder(gguf, List.of(hfNames));
    }

    /**
     * This family's layout under other Hugging Face names with another vocabulary rule: a converter
     * class that subclasses another for its tensors and keys and reads its own vocabulary
     * ({@code Glm4MoeLiteModel}, a {@code DeepseekV2Model} with GLM's).
     */
    Architecture renamed(VocabularyRule vocabulary, String... names) {
        return new Architecture(gguf, List.of(names), tensors, ropeRows, extraKeys, vocabulary, requiredConfig, refused, llama3Rope,
                textModelKeys, skipped, shifts, experts, extras);
    }

    /** A family's declaration, one named property at a time (see {@link #of}). */
    static final class Builder {
        private final String gguf;
        private final List<String> hfNames;
        private List<TensorName> tensors;
        private List<RopeRows> ropeRows = List.of();
        private List<FamilyKey> extraKeys = List.of();
        private VocabularyRule vocabulary;
        private List<String> requiredConfig = List.of();
        private List<Variant> refused = List.of();
        private boolean llama3Rope;
        private boolean textModelKeys = true;
        private List<String> skipped = List.of();
        private List<Shift> shifts = List.of();
        private Optional<Experts> experts = Optional.empty();
        private Extras extras = Extras.NONE;

        private Builder(String gguf, List<String> hfNames) {
            this.gguf = gguf;
            this.hfNames = hfNames;
        }

        /** Hugging Face base names to GGUF base names. */
        Builder tensors(List<TensorName> tensors) {
            this.tensors = tensors;
            return this;
        }

        /** The tensors whose rows are reordered for ggml's rope. */
        Builder ropeRows(List<RopeRows> ropeRows) {
            this.ropeRows = ropeRows;
            return this;
        }

        /** The family's keys: after TextModel's, or all of them with {@link #ownKeysOnly}. */
        Builder keys(List<FamilyKey> keys) {
            this.extraKeys = keys;
            return this;
        }

        /** The family's {@code set_gguf_parameters} writes only its own keys, not TextModel's. */
        Builder ownKeysOnly() {
            this.textModelKeys = false;
            return this;
        }

        Builder vocabulary(VocabularyRule vocabulary) {
            this.vocabulary = vocabulary;
            return this;
        }

        /** config.json keys refused when absent. */
        Builder requires(List<String> keys) {
            this.requiredConfig = keys;
            return this;
        }

        /** Variants the converter writes differently, refused rather than written as the plain family. */
        Builder refuses(List<Variant> variants) {
            this.refused = variants;
            return this;
        }

        /** A llama3 rope scaling is written as the {@code rope_freqs.weight} tensor. */
        Builder llama3Rope() {
            this.llama3Rope = true;
            return this;
        }

        /** Hugging Face tensor names the family drops. */
        Builder skips(List<String> names) {
            this.skipped = names;
            return this;
        }

        /** Values the family adds to tensors. */
        Builder shifts(List<Shift> shifts) {
            this.shifts = shifts;
            return this;
        }

        /** The per-expert tensors stacked into one per projection and block. */
        Builder experts(Experts experts) {
            this.experts = Optional.of(experts);
            return this;
        }

        Builder extras(Extras extras) {
            this.extras = extras;
            return this;
        }

        /** The family's extras as {@link Extras#builder} names them. */
        Builder extras(Extras.Builder extras) {
            return extras(extras.build());
        }

        Architecture build() {
            if (tensors == null || vocabulary == null) {
                throw new IllegalStateException("family " + gguf + " declares no tensors or no vocabulary rule");
            }
            return new Architecture(gguf, hfNames, tensors, ropeRows, extraKeys, vocabulary, requiredConfig, refused,
                    llama3Rope, textModelKeys, skipped, shifts, experts, extras);
        }
    }

    /**
     * A key the family's {@code set_gguf_parameters} writes after {@code TextModel}'s: a
     * config.json value ({@link HyperParameter}), the rope dimension count, or the
     * sentence-transformers pooling type.
     */
    sealed interface FamilyKey permits HyperParameter, RopeDimensionCount, PoolingType, OwnKey {
    }

    /**
     * A key of a family that writes its keys itself rather than after {@code TextModel}'s
     * ({@code textModelKeys} false): the ones that are not a plain config.json value.
     */
    enum OwnKey implements FamilyKey {
        /** {@code <arch>.block_count}. */
        BLOCK_COUNT,
        /** {@code <arch>.rope.freq_base}: the rope parameters' {@code rope_theta}, required. */
        ROPE_FREQ_BASE,
        /** {@code general.file_type}. */
        FILE_TYPE,
        /**
         * {@code <arch>.rope.dimension_count} as phi3 computes it:
         * {@code int(partial_rotary_factor * hidden_size) // num_attention_heads}, the factor 1.0
         * when config.json has none.
         */
        PARTIAL_ROPE_DIMENSION_COUNT,
        /** {@code <arch>.attention.sliding_window}: config.json {@code sliding_window}, 0 when absent or null. */
        SLIDING_WINDOW,
        /**
         * {@code <arch>.final_logit_softcapping}: config.json {@code final_logit_softcapping},
         * written only when it is set and not 0 (gemma3's {@code if (final_logit_softcap := ...)}).
         */
        FINAL_LOGIT_SOFTCAPPING,
        /**
         * {@code <arch>.attention.sliding_window}: config.json {@code sliding_window}, required,
         * unless {@code sliding_window_pattern} is 1 (every layer global): then nothing (gemma3).
         */
        SLIDING_WINDOW_UNLESS_ALL_GLOBAL,
        /**
         * Olmo 3's window ({@code Olmo2Model}): when config.json has {@code sliding_window},
         * {@code <arch>.attention.sliding_window} (uint32) and
         * {@code <arch>.attention.sliding_window_pattern}, one bool per layer, true for a local
         * layer: {@code layer_types}' {@code sliding_attention}, else every fourth layer global
         * ({@code (il + 1) % 4 == 0}); nothing without it.
         */
        SLIDING_WINDOW_PATTERN_WHEN_WINDOWED,
        /**
         * {@code <arch>.rope.dimension_count} as glm4 computes it: {@code int(head_dim x
         * partial_rotary_factor)}, {@code head_dim} config.json's or hidden / heads, the factor
         * the rope parameters' ({@code rope_parameters}/{@code rope_scaling}), 0.5 when they have
         * none. A top-level {@code partial_rotary_factor} the converter would not read (it reads
         * the rope parameters only) must say the same, or the file would rotate another share of
         * each head (exit 6).
         */
        HEAD_SHARE_ROPE_DIMENSION_COUNT,
        /**
         * {@code <arch>.feed_forward_length} as LFM2 computes it ({@code _add_feed_forward_length}):
         * {@code block_ff_dim} (else {@code intermediate_size}); with {@code block_auto_adjust_ff_dim}
         * two thirds of it, times {@code block_ffn_dim_multiplier} when set, rounded up to a multiple
         * of {@code block_multiple_of} (each {@code int()}ed as Python does). Over TextModel's value
         * where that was written (gguf-py keeps the key's place).
         */
        ADJUSTED_FEED_FORWARD_LENGTH,
        /**
         * {@code <arch>.rope.scaling.type} "none" ({@code add_rope_scaling_type(NONE)}), over a
         * scaling type TextModel wrote (gguf-py keeps the key's place): Cohere's families.
         */
        ROPE_SCALING_NONE,
        /**
         * {@code <arch>.rope.dimension_count} as cohere2, gptneox and stablelm compute it:
         * {@code int(rotary_pct x (hidden_size // num_attention_heads))}, {@code rotary_pct} required (stablelm's
         * {@code partial_rotary_factor}, or {@code rope_pct}, in its place).
         */
        ROTARY_PCT_DIMENSION_COUNT,
        /**
         * EXAONE 4's window ({@code Exaone4Model}): when config.json's {@code sliding_window} is
         * set, {@code <arch>.attention.sliding_window}, then which layers have it
         * ({@code attention.sliding_window_pattern}, one bool per layer): {@code layer_types}'
         * {@code sliding_attention}, else {@code sliding_window_pattern} as a string cycled over
         * the layers ({@code L} local) or a period ({@code (il + 1) % p != 0} local); no pattern
         * key without either.
         */
        EXAONE4_SLIDING_WINDOW,
        /**
         * DeepSeek's {@code <arch>.attention.key_length} of the absorbed attention:
         * {@code kv_lora_rank + qk_rope_head_dim} (over a {@code head_dim} TextModel wrote; gguf-py
         * keeps the key's place).
         */
        LATENT_KEY_LENGTH,
        /** DeepSeek's {@code <arch>.attention.key_length_mla}: one head's key, {@code qk_nope_head_dim + qk_rope_head_dim}. */
        HEAD_KEY_LENGTH_MLA,
        /** {@code <arch>.expert_weights_norm} true, written only when config.json's {@code norm_topk_prob} is true. */
        EXPERT_WEIGHTS_NORM_WHEN_SET,
        /**
         * {@code <arch>.rope.scaling.yarn_log_multiplier}: 0.1 x the rope parameters'
         * {@code mscale_all_dim}, when they have one (DeepSeek's).
         */
        YARN_LOG_MULTIPLIER_FROM_MSCALE,
        /**
         * {@code <arch>.attention.layer_norm_rms_epsilon} 1e-5 whatever config.json says, over
         * TextModel's (gguf-py keeps the key's place): OlmoeModel's constant.
         */
        RMS_EPS_1E5,
        /**
         * ERNIE 4.5 MoE's {@code <arch>.expert_shared_feed_forward_length}: {@code intermediate_size //
         * num_key_value_heads}, as {@code Ernie4_5MoeModel} computes it, when it has shared experts.
         */
        ERNIE_SHARED_FEED_FORWARD_LENGTH,
        /**
         * {@code <arch>.rope.dimension_count} as glm4moe computes it: {@code int(head_dim x
         * partial_rotary_factor)}, {@code head_dim} config.json's or hidden / heads, the factor
         * config.json's top-level one, 0.5 when it has none.
         */
        TOP_LEVEL_HEAD_SHARE_ROPE_DIMENSION_COUNT,
        /** {@code <arch>.expert_gating_func} 2 (sigmoid), whatever config.json says (glm4moe's). */
        EXPERT_GATING_SIGMOID,
        /** {@code <arch>.expert_weights_norm}: config.json's {@code norm_topk_prob} as it is, when it has one. */
        EXPERT_WEIGHTS_NORM_WHEN_GIVEN,
        /**
         * {@code <arch>.n_deepstack_layers}: how many vision layers feed the language model's first
         * layers (Qwen3-VL's DeepStack), the length of {@code vision_config.deepstack_visual_indexes},
         * 0 without one ({@code add_num_deepstack_layers}). llama.cpp widens the text model's input by
         * that many embeddings for image tokens; text tokens do not use them.
         */
        DEEPSTACK_LAYER_COUNT,
        /**
         * Ministral 3's ({@code model_type} ministral3: {@code Ministral3Model.set_gguf_parameters}), after
         * llama's keys: {@code <arch>.rope.scaling.yarn_log_multiplier}, the rope parameters'
         * {@code mscale_all_dim} as it is, and {@code <arch>.attention.temperature_scale}, their
         * {@code llama_4_scaling_beta} (the queries scaled by {@code 1 + beta ln(1 + floor(pos / original
         * context))}); the rope must be yarn. Nothing for another {@code model_type}.
         */
        MINISTRAL3_SCALING,
        /**
         * {@code <arch>.feed_forward_length} as phi2 and gpt2 write it: 4 x {@code hidden_size} (gpt2's
         * {@code n_embd}), whatever {@code intermediate_size} (gpt2's {@code n_inner}) says (one that differs
         * is refused: llama.cpp would not load the MLP).
         */
        FOUR_HIDDEN_FEED_FORWARD_LENGTH,
        /** {@code tokenizer.ggml.add_bos_token} false, which phi2's {@code set_gguf_parameters} writes. */
        NO_BOS_TOKEN,
        /** {@code <arch>.use_parallel_residual}: config.json's {@code use_parallel_residual}, true when absent (gptneox's). */
        PARALLEL_RESIDUAL,
        /** {@code <arch>.attention.head_count_kv} 1, which starcoder's {@code set_gguf_parameters} writes (multi-query attention). */
        ONE_KEY_VALUE_HEAD,
        /** {@code <arch>.attention.layer_norm_epsilon} 1e-5, which olmo's {@code set_gguf_parameters} writes (no config key). */
        OLMO_LAYER_NORM_EPSILON,
        /**
         * falcon's first two keys: {@code <arch>.context_length} 2048 ("not in config.json") and
         * {@code <arch>.tensor_data_layout} "jploski" (the name of its q/k/v re-layout).
         */
        FALCON_CONTEXT_AND_LAYOUT,
        /** {@code <arch>.attention.head_count_kv} as falcon reads it: {@code num_kv_heads}, else {@code n_head_kv}, else 1. */
        FALCON_KEY_VALUE_HEADS,
        /**
         * MiniCPM's three scales, as {@code MiniCPMModel.set_gguf_parameters} computes them (in Python's float64, then
         * written as F32): {@code <arch>.embedding_scale} {@code float(scale_emb)}, {@code <arch>.residual_scale}
         * {@code scale_depth / num_hidden_layers ** 0.5}, {@code <arch>.logit_scale} {@code hidden_size /
         * dim_model_base}; each key required.
         */
        MINICPM_SCALES,
        /**
         * {@code <arch>.rope.dimension_count} as nemotron computes it: {@code int(rot_pct x hidden_size) //
         * num_attention_heads}, {@code rot_pct} the first of {@code partial_rotary_factor}, {@code rope_pct},
         * {@code rope_percent} (required).
         */
        NEMOTRON_ROPE_DIMENSION_COUNT,
        /** {@code <arch>.expert_weights_scale} 1.0, which the first DeepSeek's {@code set_gguf_parameters} writes. */
        EXPERT_WEIGHTS_SCALE_ONE,
        /** {@code <arch>.attention.causal} false, which {@code BertModel.set_gguf_parameters} writes: an encoder attends both ways. */
        NOT_CAUSAL,
        /**
         * {@code <arch>.classifier.output_labels}: config.json's {@code id2label} values in the order of their ids, which
         * {@code BertModel.set_gguf_parameters} writes unless they are transformers' two placeholders (LABEL_0,
         * LABEL_1): a sequence classifier's (a reranker's) labels.
         */
        CLASSIFIER_LABELS,
        /** {@code <arch>.tensor_data_layout} "Meta AI original pth", which orion's {@code set_gguf_parameters} writes. */
        META_AI_LAYOUT,
        /** {@code <arch>.feed_forward_length} as mpt writes it: 4 x {@code d_model} ({@code expansion_ratio} other than 4 refused). */
        MPT_FEED_FORWARD_LENGTH,
        /**
         * mpt's keys from its nested {@code attn_config}, in {@code set_gguf_parameters}' order:
         * {@code attention.head_count_kv} when {@code kv_n_heads} is set and not 0, {@code attention.layer_norm_epsilon}
         * 1e-5 (the converter's constant), {@code attention.clamp_kqv} when {@code clip_qkv} is not null (the key is
         * required, as the converter reads it), {@code attention.max_alibi_bias} ({@code alibi_bias_max} with ALiBi, else 0).
         */
        MPT_ATTENTION_CONFIG
    }

    /**
     * {@code <arch>.rope.dimension_count}: config.json {@code head_dim}, else
     * {@code hidden_size / num_attention_heads} ({@code LlamaModel.set_gguf_parameters}).
     */
    record RopeDimensionCount() implements FamilyKey {
    }

    /**
     * {@code <arch>.pooling_type} when the folder is a sentence-transformers model whose
     * {@code modules.json} has a Pooling module ({@code TextModel._try_set_pooling_type}):
     * mean 1, CLS 2, last token 3; nothing without one.
     */
    record PoolingType() implements FamilyKey {
    }

    /** The family's {@code set_vocab}. */
    enum VocabularyRule {
        /**
         * {@code Gemma3Model.set_vocab}: tokenizer.model, then {@code add_space_prefix = false};
         * else a byte-level BPE tokenizer.json ({@code _set_vocab_gpt2}).
         */
        SENTENCEPIECE_NO_SPACE_PREFIX_ELSE_GPT2,
        /**
         * {@code LlamaModel.set_vocab}: tokenizer.model, else a transformers-saved SentencePiece
         * tokenizer.json (refused), else byte-level BPE; then {@code add_space_prefix} from
         * tokenizer_config.json and granite's {@code add_bos_token = false}.
         */
        LLAMA,
        /** {@code _set_vocab_sentencepiece}: tokenizer.model only, nothing after (MiniCPM's). */
        SENTENCEPIECE,
        /** {@code InternLM2Model.set_vocab}: tokenizer.model read its own way ({@link Vocabulary#internLm2}). */
        INTERNLM2,
        /** {@code NemotronModel.set_vocab}: tokenizer.model only, then the padding token id 0 and the unknown token id 1. */
        SENTENCEPIECE_PAD0_UNK1,
        /** {@code Qwen2Model.set_vocab}: tokenizer.model, else byte-level BPE tokenizer.json; nothing after. */
        SENTENCEPIECE_ELSE_GPT2,
        /**
         * {@code Ernie4_5Model.set_vocab}: tokenizer.model only ({@code _set_vocab_sentencepiece}), then
         * {@code add_space_prefix} from tokenizer_config.json's {@code add_prefix_space} when it has one.
         */
        SENTENCEPIECE_SPACE_PREFIX_FROM_CONFIG,
        /** {@code TextModel.set_vocab} ({@code _set_vocab_gpt2}): byte-level BPE tokenizer.json only. */
        GPT2,
        /**
         * {@code GemmaModel.set_vocab}: tokenizer.model only; then a second {@code SpecialVocab}
         * for CodeGemma's fill-in-the-middle kinds with fixed ids (of which gguf-py writes only
         * the EOT, 107, unless tokenizer_config.json or config.json name one first), and
         * {@code add_space_prefix = false}.
         */
        GEMMA,
        /** {@code Gemma2Model.set_vocab}: tokenizer.model only, then {@code add_space_prefix = false}. */
        SENTENCEPIECE_NO_SPACE_PREFIX,
        /**
         * {@code Glm4Model.set_vocab}: a byte-level BPE tokenizer.json ({@code get_vocab_base}),
         * then SpecialVocab with merges, whose EOS, EOT, UNK and BOS, when the files name none,
         * are the added tokens {@code <|endoftext|>}, {@code <|user|>}, {@code <|endoftext|>},
         * {@code <|endoftext|>} (both must be added tokens).
         */
        GLM4,
        /**
         * {@code Phi3MiniModel.set_vocab}: byte-level BPE when tokenizer_config.json's
         * {@code tokenizer_class} is {@code GPT2Tokenizer} (Phi-4), else tokenizer.model read
         * its own way, the added tokens of added_tokens.json, tokenizer_config.json and
         * tokenizer.json over it.
         */
        PHI3,
        /** {@code BertModel.set_vocab}: a WordPiece tokenizer.json in llama.cpp's phantom-space spelling ({@link Vocabulary#bert}). */
        BERT,
        /**
         * {@code XLMRobertaModel.set_vocab} ({@code _xlmroberta_set_vocab}): sentencepiece.bpe.model as llama.cpp's t5
         * tokenizer reads it ({@link Vocabulary#xlmRoberta}).
         */
        XLM_ROBERTA
    }

    /**
     * {@code amount} added to every tensor whose Hugging Face name ends in {@code suffix}, as the
     * converter's {@code modify_tensors} adds it to the torch tensor it holds: in float16 for a
     * tensor stored as F16 (the converter widens only other types to float32 first), in
     * float32 otherwise. Gemma's RMSNorm multiplies by {@code 1 + w}, llama.cpp's by the weight.
     */
    record Shift(String suffix, float amount) {
    }

    /** The shift of Hugging Face tensor {@code hfName}, if the family changes its values. */
    Optional<Shift> shift(String hfName) {
        return shifts.stream().filter(s -> hfName.endsWith(s.suffix())).findFirst();
    }

    /**
     * A variant the converter recognizes by name: {@code hint} (lower case) in the folder's
     * name, config.json's {@code _name_or_path} or {@code model_type}, or a README.md heading
     * {@code # <hint>}; {@code what} says what the converter then writes.
     */
    record Variant(String hint, String what) {
    }

    /**
     * A Hugging Face tensor name pattern and its GGUF name; {@code {bid}} in the pattern is the
     * block number (a decimal below {@code block_count}) and is put into the GGUF name.
     */
    record TensorName(String hf, String gguf) {
        static TensorName of(String hf, String gguf) {
            if (hf.indexOf(BLOCK) != hf.lastIndexOf(BLOCK)) throw new IllegalArgumentException(hf + " holds two " + BLOCK);
            return new TensorName(hf, gguf);
        }

        /**
         * The GGUF name of {@code base} when it is this pattern: the text around {@code {bid}}
         * literally, and between them the decimal digits of a block number. Matched with string
         * operations, not a regular expression: a pattern compiled for each of the families'
         * entries when the table is built is work no conversion needs (which entries a name
         * matches is all the pattern said).
         */
        Optional<String> map(String base, int blockCount) {
            int at = hf.indexOf(BLOCK);
            if (at < 0) return base.equals(hf) ? Optional.of(gguf) : Optional.empty();
            String before = hf.substring(0, at);
            String after = hf.substring(at + BLOCK.length());
            int end = base.length() - after.length();
            if (end <= before.length() || !base.startsWith(before) || !base.endsWith(after)) return Optional.empty();
            String digits = base.substring(before.length(), end);
            for (int i = 0; i < digits.length(); i++) {
                char c = digits.charAt(i);
                if (c < '0' || c > '9') return Optional.empty();
            }
            // the converter builds its map for blocks 0 .. block_count-1, written without leading zeros
            if (digits.length() > 9 || (digits.length() > 1 && digits.charAt(0) == '0')) return Optional.empty();
            int bid = Integer.parseInt(digits);
            return bid < blockCount ? Optional.of(gguf.replace(BLOCK, digits)) : Optional.empty();
        }

        private static final String BLOCK = "{bid}";
    }

    /**
     * Rows of a tensor whose Hugging Face name ends in {@code suffix} are permuted per head,
     * with the head count of config key {@code heads}: Hugging Face keeps each head's two
     * rotary halves apart (rotate-half RoPE), ggml's LLAMA rope (mode 0) wants them
     * interleaved ({@code LlamaModel.permute}). The head count is the attention heads', or
     * with {@code keyValueHeads} the key/value heads' (the attention heads' when the config
     * has none).
     */
    record RopeRows(String suffix, boolean keyValueHeads) {
    }

    /** The GGUF name of a Hugging Face tensor, with its {@code .weight}/{@code .bias} suffix. */
    Optional<String> map(String hfName, int blockCount) {
        for (String suffix : List.of("", ".weight", ".bias")) {
            if (!hfName.endsWith(suffix)) continue;
            String base = hfName.substring(0, hfName.length() - suffix.length());
            for (TensorName t : tensors) {
                Optional<String> g = t.map(base, blockCount);
                if (g.isPresent()) return Optional.of(g.get() + suffix);
            }
        }
        return Optional.empty();
    }

    /**
     * A mixture of experts as the family's {@code modify_tensors} merges it: the tensors named
     * {@code expert} (with {@code {bid}} the block, {@code {xid}} the expert, {@code {proj}} one
     * of {@code projections}) of a block are held until all {@code count} x projections have
     * come, then each projection's experts, in expert order, are stacked ({@code torch.stack},
     * dim 0) into one tensor named {@code stacked}, which the family's {@link #tensors} map;
     * the projections in {@code projections}' order.
     *
     * @param expert      the Hugging Face name of one expert's projection
     * @param projections the projections, in the order the converter writes their stacks
     * @param stacked     the Hugging Face name the stack takes before it is mapped
     * @param count       the config.json key(s) of the number of experts
     * @param width       the config.json key of an expert's feed-forward width
     * @param router      the Hugging Face name suffix of the router, whose rows are the experts
     * @param config      config.json values llama.cpp's graph for the family assumes
     * @param denseLead   the config.json key of the number of leading blocks that have a dense
     *                    feed-forward instead of experts (DeepSeek's {@code first_k_dense_replace}),
     *                    when the family has such blocks; every other block has experts
     * @param grouped     the family's llama.cpp graph routes as DeepSeek-V3 does, from keys: expert
     *                    groups ({@code n_group}, {@code topk_group}) and the gating function, which
     *                    TextModel writes from config.json (refused for the other families)
     */
    record Experts(String expert, List<Projection> projections, String stacked, HyperParameter count, String width,
                   String router, List<ConfigValue> config, Optional<String> denseLead, boolean grouped) {

        /** Experts in every block, routed without groups. */
        Experts(String expert, List<Projection> projections, String stacked, HyperParameter count, String width,
                String router, List<ConfigValue> config) {
            this(expert, projections, stacked, count, width, router, config, Optional.empty(), false);
        }

        /** One expert projection; {@code widthRows}: its rows (else its columns) are the feed-forward width. */
        record Projection(String name, boolean widthRows) {
        }

        /** A tensor name of one expert: block, expert and projection. */
        record Name(int block, long expert, Projection projection) {
        }

        /**
         * What tells an expert's tensor from the others: block, expert and projection of a name,
         * when it is one. Made once per conversion (a pattern compiled per tensor name was a
         * compilation for each of a large mixture's tens of thousands of tensors).
         */
        java.util.function.Function<String, Optional<Name>> matcher() {
            String alternatives = String.join("|", projections.stream().map(p -> Pattern.quote(p.name())).toList());
            Pattern p = Pattern.compile(Pattern.quote(expert).replace("{bid}", "\\E(\\d{1,9})\\Q")
                    .replace("{xid}", "\\E(\\d{1,18})\\Q").replace("{proj}", "\\E(" + alternatives + ")\\Q"));
            return hfName -> {
                Matcher m = p.matcher(hfName);
                if (!m.matches()) return Optional.empty();
                Projection proj = projections.stream().filter(x -> x.name().equals(m.group(3))).findFirst().orElseThrow();
                return Optional.of(new Name(Integer.parseInt(m.group(1)), Long.parseLong(m.group(2)), proj));
            };
        }

        /** The Hugging Face name of expert {@code xid}'s {@code proj} in block {@code bid}. */
        String name(int bid, long xid, Projection proj) {
            return expert.replace("{bid}", Integer.toString(bid)).replace("{xid}", Long.toString(xid)).replace("{proj}", proj.name());
        }

        /** The Hugging Face name of block {@code bid}'s stack of {@code proj}. */
        String stackedName(int bid, Projection proj) {
            return stacked.replace("{bid}", Integer.toString(bid)).replace("{proj}", proj.name());
        }
    }

    /**
     * A config.json value the family's llama.cpp graph assumes: {@code key} must be
     * {@code value} (a boolean, an integer, a number, a string, or an empty list); when absent, the model class's
     * default is taken when {@code required} is false (the default is {@code value}), refused
     * otherwise (its default differs from what llama.cpp computes).
     */
    record ConfigValue(String key, Object value, boolean required, String why) {
    }

    /**
     * What a family adds beyond a plain decoder, each part empty or off for the families that
     * have none of it.
     *
     * @param configDefaults the family's config class's default of each key config.json may leave
     *                       out: the converter reads the config through transformers'
     *                       {@code AutoConfig}, which fills them in (taken over the text config
     *                       before it is merged into the top level, as the sub-config is filled)
     * @param multimodal     the text model of a multimodal checkpoint, when the family's class
     *                       takes one
     * @param trimEmbeddings whether {@code embed_tokens.weight} is cut to the rows of the
     *                       vocabulary the converter reads (gemma3's "remove OOV rows")
     * @param slidingWindow  the local (sliding-window) and global layers llama.cpp's graph
     *                       lays out, when the family has them
     * @param configIgnored  config.json keys the family's {@code set_gguf_parameters} removes
     *                       before anything reads them (granite's {@code head_dim}): the keys,
     *                       the rope dimension and the row permutation then go without them
     * @param noRope         the layers without rotary embedding llama.cpp's graph for the family
     *                       lays out (no key says which), when it has them
     * @param configRefused  config.json keys with which the converter writes what is not
     *                       converted here, each with why: present and not null, exit 6
     * @param packedExperts  experts stored already stacked, transposed and with gate and up
     *                       interleaved (gpt-oss), when the family stores them so
     * @param convLayers     layers that are short convolutions instead of attention (LFM2), when
     *                       the family has them
     * @param configFrom     config.json keys the family's {@code __init__} sets from the first
     *                       present of other keys before anything reads them (Command-R's context
     *                       length from {@code model_max_length})
     * @param latentAttention DeepSeek's multi-head latent attention, when the family has it
     * @param extraLayers    the config.json key of layers past {@code num_hidden_layers} that the
     *                       family writes and counts in {@code block_count} (GLM-4.5's
     *                       multi-token-prediction layers: llama.cpp loads them and does not run
     *                       them), when it has them
     * @param leftOut        tensors of the checkpoint the family's {@code modify_tensors} skips by name
     *                       prefix (ERNIE 4.5's multi-token-prediction tensors), when it has them
     * @param rowHalves      fused tensors the family's {@code modify_tensors} splits into their two
     *                       halves of rows (Granite MoE's gate and up), when it has them
     * @param fusedExperts   the experts as transformers 5 saves them, one tensor per projection for
     *                       all experts of a block, when the family's {@code modify_tensors} takes
     *                       that layout beside the per-expert one
     * @param configValues   config.json values llama.cpp's graph for the family assumes (its
     *                       activation, its biases), each refused naming it when it says otherwise
     * @param unappliedWindow the family's checkpoints declare a {@code sliding_window} that neither the
     *                       converter nor llama.cpp applies; converted all the same (every published
     *                       checkpoint has one), with a note saying up to which length it is the same model
     * @param layerScalars   one-value tensors of every layer the family's {@code modify_tensors} gathers
     *                       into a float32 array key instead of writing them (Apertus's xIELU parameters)
     * @param suffixRenames  name endings the family's {@code modify_tensors} rewrites before mapping a name
     *                       (LFM2 MoE's {@code .expert_bias} to {@code .expert_bias.bias}), in order
     * @param perHeadQkv     name endings of fused q/k/v projections (weight and bias) stored per head, which
     *                       the family's {@code modify_tensors} re-lays as three blocks ({@link QkvRows})
     * @param transposed     name endings of weights stored as {@code [in, out]} (GPT-2's {@code Conv1D}
     *                       layers), which the family's {@code modify_tensors} transposes to a linear
     *                       layer's {@code [out, in]}
     * @param buffers        name endings of buffers the family's checkpoints may carry beside the weights
     *                       (GPT-2's causal masks {@code attn.bias}, {@code attn.masked_bias}), left out
     * @param groupedQkv     name endings of fused q/k/v projections stored by key/value groups (each group's
     *                       queries, then its key and value head: Falcon's), which the family's
     *                       {@code modify_tensors} re-lays as queries, keys, values ({@link QkvRows#grouped})
     */
    record Extras(Map<String, Object> configDefaults, Optional<MultimodalText> multimodal, boolean trimEmbeddings,
                  Optional<SlidingWindow> slidingWindow, List<String> configIgnored, Optional<NoRopeLayers> noRope,
                  Map<String, String> configRefused, Optional<PackedExperts> packedExperts, Optional<ConvLayers> convLayers,
                  Map<String, List<String>> configFrom, Optional<LatentAttention> latentAttention, Optional<String> extraLayers,
                  Optional<LeftOut> leftOut, List<RowHalves> rowHalves, Optional<FusedExperts> fusedExperts,
                  List<ConfigValue> configValues, boolean unappliedWindow, List<LayerScalar> layerScalars,
                  Map<String, String> suffixRenames, List<String> perHeadQkv, List<String> transposed,
                  List<String> buffers, List<String> groupedQkv) {

        /** No extras: a plain decoder. */
        static final Extras NONE = builder().build();

        /** Starts a family's extras, one named part at a time; what is not named is empty or off. */
        static Builder builder() {
            return new Builder();
        }

        /** A family's {@link Extras}, one named part at a time (see the record's parameters). */
        static final class Builder {
            private Map<String, Object> configDefaults = Map.of();
            private Optional<MultimodalText> multimodal = Optional.empty();
            private boolean trimEmbeddings;
            private Optional<SlidingWindow> slidingWindow = Optional.empty();
            private List<String> configIgnored = List.of();
            private Optional<NoRopeLayers> noRope = Optional.empty();
            private Map<String, String> configRefused = Map.of();
            private Optional<PackedExperts> packedExperts = Optional.empty();
            private Optional<ConvLayers> convLayers = Optional.empty();
            private Map<String, List<String>> configFrom = Map.of();
            private Optional<LatentAttention> latentAttention = Optional.empty();
            private Optional<String> extraLayers = Optional.empty();
            private Optional<LeftOut> leftOut = Optional.empty();
            private List<RowHalves> rowHalves = List.of();
            private Optional<FusedExperts> fusedExperts = Optional.empty();
            private List<ConfigValue> configValues = List.of();
            private boolean unappliedWindow;
            private List<LayerScalar> layerScalars = List.of();
            private Map<String, String> suffixRenames = Map.of();
            private List<String> perHeadQkv = List.of();
            private List<String> transposed = List.of();
            private List<String> buffers = List.of();
            private List<String> groupedQkv = List.of();

            private Builder() {
            }

            Builder configDefaults(Map<String, Object> defaults) {
                this.configDefaults = defaults;
                return this;
            }

            Builder multimodal(MultimodalText text) {
                this.multimodal = Optional.of(text);
                return this;
            }

            Builder trimEmbeddings() {
                this.trimEmbeddings = true;
                return this;
            }

            Builder slidingWindow(SlidingWindow window) {
                this.slidingWindow = Optional.of(window);
                return this;
            }

            Builder configIgnored(String... keys) {
                this.configIgnored = List.of(keys);
                return this;
            }

            Builder noRope(NoRopeLayers layers) {
                this.noRope = Optional.of(layers);
                return this;
            }

            Builder configRefused(Map<String, String> keys) {
                this.configRefused = keys;
                return this;
            }

            Builder packedExperts(PackedExperts experts) {
                this.packedExperts = Optional.of(experts);
                return this;
            }

            Builder convLayers(ConvLayers layers) {
                this.convLayers = Optional.of(layers);
                return this;
            }

            /** Keys set from others, in the map's order (an ordered map where one reads what another sets). */
            Builder configFrom(Map<String, List<String>> from) {
                this.configFrom = from;
                return this;
            }

            Builder latentAttention(LatentAttention attention) {
                this.latentAttention = Optional.of(attention);
                return this;
            }

            Builder extraLayers(String key) {
                this.extraLayers = Optional.of(key);
                return this;
            }

            Builder leftOut(LeftOut tensors) {
                this.leftOut = Optional.of(tensors);
                return this;
            }

            Builder rowHalves(RowHalves... fused) {
                this.rowHalves = List.of(fused);
                return this;
            }

            Builder fusedExperts(FusedExperts experts) {
                this.fusedExperts = Optional.of(experts);
                return this;
            }

            Builder configValues(ConfigValue... values) {
                this.configValues = List.of(values);
                return this;
            }

            Builder unappliedWindow() {
                this.unappliedWindow = true;
                return this;
            }

            Builder layerScalars(LayerScalar... scalars) {
                this.layerScalars = List.of(scalars);
                return this;
            }

            Builder perHeadQkv(String... suffixes) {
                this.perHeadQkv = List.of(suffixes);
                return this;
            }

            Builder transposed(String... suffixes) {
                this.transposed = List.of(suffixes);
                return this;
            }

            Builder groupedQkv(String... suffixes) {
                this.groupedQkv = List.of(suffixes);
                return this;
            }

            Builder buffers(String... suffixes) {
                this.buffers = List.of(suffixes);
                return this;
            }

            /**
             * A name ending the family rewrites ({@code from} replaced by {@code to}) before the name is mapped; called
             * again for each further one (BERT's first checkpoints have two: {@code gamma} and {@code beta}).
             */
            Builder suffixRename(String from, String to) {
                Map<String, String> renames = new java.util.LinkedHashMap<>(suffixRenames);
                renames.put(from, to);
                this.suffixRenames = java.util.Collections.unmodifiableMap(renames);
                return this;
            }

            Extras build() {
                return new Extras(configDefaults, multimodal, trimEmbeddings, slidingWindow, configIgnored, noRope, configRefused,
                        packedExperts, convLayers, configFrom, latentAttention, extraLayers, leftOut, rowHalves, fusedExperts,
                        configValues, unappliedWindow, layerScalars, suffixRenames, perHeadQkv, transposed, buffers, groupedQkv);
            }
        }
    }

    /**
     * Layers that are short convolutions rather than attention, as LFM2 has them: config.json's
     * {@code layer_types} says which ({@code convType}); the converter writes
     * {@code attention.head_count_kv} as one int32 per layer, 0 for a convolution layer, and
     * drops the size-1 middle dimension of the convolution weights ({@code squeeze(1)} of a
     * depthwise {@code Conv1d}'s {@code [channels, 1, kernel]}), as llama.cpp's graph takes them.
     *
     * @param convType the {@code layer_types} value of a convolution layer
     * @param squeezed Hugging Face name suffixes of the weights whose second dimension, when 1, is dropped
     */
    record ConvLayers(String convType, List<String> squeezed) {
    }

    /**
     * DeepSeek's multi-head latent attention as the converter's {@code DeepseekV2Model} writes it
     * for llama.cpp's absorbed form: keys and values share one compressed projection per token
     * ({@code kv_a_proj_with_mqa}, written as one key/value head: {@code attention.head_count_kv}
     * 1), and {@code kvB}, which expands it to every head's non-rotated key part and value
     * ({@code [heads x (qk_nope_head_dim + v_head_dim), kv_lora_rank]}), is split per head into
     * {@code kB}, each head's key part transposed ({@code [heads, kv_lora_rank, qk_nope_head_dim]}),
     * and {@code vB}, each head's value part ({@code [heads, v_head_dim, kv_lora_rank]}), the
     * names {@link Architecture#tensors} map. The checkpoints' multi-token-prediction layers
     * (layer numbers from {@code num_hidden_layers} on: DeepSeek-V3's layer 61) are left out, as
     * the converter skips them.
     *
     * @param kvB the Hugging Face name suffix of the fused projection ({@code self_attn.kv_b_proj.weight})
     * @param kB  the name its key part takes before it is mapped, in place of {@code kvB}
     * @param vB  the name its value part takes
     */
    record LatentAttention(String kvB, String kB, String vB) {
    }

    /**
     * A mixture of experts stored as transformers' {@code GptOssExperts} holds it, every expert
     * of a block in one tensor per projection, each expert's matrix {@code [in, out]} (the
     * transpose of a linear layer's): {@code <prefix>gate_up_proj} {@code [experts, hidden,
     * 2 x width]} with gate and up interleaved along its last dimension (gate the even columns,
     * up the odd), {@code <prefix>down_proj} {@code [experts, width, hidden]}, and a bias per
     * expert of each ({@code gate_up_proj_bias}, {@code down_proj_bias}); or, in a published
     * checkpoint, the two weights as MXFP4 {@code _blocks} (U8 {@code [experts, out, groups,
     * 16]}) and {@code _scales} (U8 {@code [experts, out, groups]}). The converter's
     * {@code GptOssModel} splits gate and up, transposes each to {@code [experts, out, in]} and
     * names them {@code <prefix>gate_proj.weight}, {@code up_proj.weight}, {@code down_proj.weight}
     * (biases {@code .bias}), which {@link #tensors} map; MXFP4 blocks it repacks into ggml's
     * MXFP4 as they are, written before every other tensor.
     *
     * @param prefix the experts' name prefix, {@code {bid}} the block ({@code model.layers.{bid}.mlp.experts.})
     * @param router the router's name suffix, whose rows are the experts ({@code mlp.router.weight})
     * @param count  the config.json key of the number of experts
     * @param width  the config.json key of an expert's feed-forward width
     * @param config config.json values llama.cpp's graph for the family assumes
     * @param halves gate and up are the two halves of {@code gate_up_proj}'s last dimension (gate
     *               first: Llama 4's {@code Llama4TextExperts}), not its even and odd columns (gpt-oss's)
     */
    record PackedExperts(String prefix, String router, String count, String width, List<ConfigValue> config, boolean halves) {
        /** gpt-oss's interleaving: gate the even columns, up the odd. */
        PackedExperts(String prefix, String router, String count, String width, List<ConfigValue> config) {
            this(prefix, router, count, width, config, false);
        }
    }

    /**
     * A fused tensor the family's {@code modify_tensors} splits along its rows into two halves
     * ({@code data_torch.split(width, dim=-2)}): a Hugging Face tensor whose name ends with
     * {@code suffix}, {@code [experts?, 2 x width, hidden]}, becomes the tensors named with
     * {@code first} and {@code second} in its place, the first and the last {@code width} rows of
     * each expert, in that order; {@link Architecture#tensors} map those names. Granite MoE's
     * {@code block_sparse_moe.input_linear} (every expert's gate, then its up) is one.
     *
     * @param width   the config.json key of a half's rows
     * @param experts the config.json key of the leading dimension (the experts), or empty for a 2-D tensor
     */
    record RowHalves(String suffix, String first, String second, String width, Optional<String> experts) {
        /** The name {@code hfName} (which ends with {@link #suffix}) takes for half {@code which} (0 or 1). */
        String half(String hfName, int which) {
            return hfName.substring(0, hfName.length() - suffix.length()) + (which == 0 ? first : second);
        }
    }

    /**
     * A block's experts as transformers 5 saves a Qwen MoE ({@code Qwen3MoeExperts}): {@code <prefix>gate_up_proj}
     * {@code [experts, 2 x width, hidden]} (every expert's gate rows, then its up rows) and
     * {@code <prefix>down_proj} {@code [experts, hidden, width]}, each with or without {@code .weight}.
     * {@code Qwen2MoeModel.modify_tensors} takes them as they are: gate and up split into their halves of
     * rows ({@link RowHalves}) and named {@code gate_proj.weight} and {@code up_proj.weight}, down named
     * {@code down_proj.weight}, the names the per-expert layout's stacks have (so {@link #tensors} map
     * them); a block so stored has no per-expert tensors to stack.
     *
     * @param prefix the experts' name suffix up to the projection ({@code mlp.experts.})
     * @param width  the config.json key of an expert's feed-forward width
     * @param count  the config.json key of the number of experts
     */
    record FusedExperts(String prefix, String width, String count) {
        /** The split of {@code hfName}'s gate and up when it is the fused gate_up projection. */
        Optional<RowHalves> gateUp(String hfName) {
            for (String suffix : List.of(prefix + "gate_up_proj", prefix + "gate_up_proj.weight")) {
                if (hfName.endsWith("." + suffix)) {
                    return Optional.of(new RowHalves(suffix, prefix + "gate_proj.weight", prefix + "up_proj.weight", width,
                            Optional.of(count)));
                }
            }
            return Optional.empty();
        }

        /** Whether {@code hfName} is the fused down projection (with or without {@code .weight}). */
        boolean down(String hfName) {
            return hfName.endsWith("." + prefix + "down_proj") || hfName.endsWith("." + prefix + "down_proj.weight");
        }
    }

    /**
     * A one-value tensor of every layer ({@code model.layers.{bid}.<suffix>}, shape {@code []} or {@code [1]})
     * that the family's {@code modify_tensors} reads as a Python float and, once every layer's has come,
     * writes as the float32 array key {@code key} (one value per layer, in layer order) instead of a tensor.
     * The converter adds such keys while it goes through the tensors, before the metadata: they follow
     * {@code general.architecture}, in the order their last layer's value comes.
     */
    record LayerScalar(String suffix, String key) {
    }

    /**
     * Layers without rotary embedding as llama.cpp's graph for the family lays them out, which
     * no GGUF key says: every {@code period}-th layer ({@code (il + 1) % period == 0}) attends
     * without rope. config.json's {@code no_rope_layers} (1 with rope, 0 without, per layer)
     * and {@code no_rope_layer_interval}, when given, must lay the layers out the same; when
     * neither is given, Hugging Face's default is that layout.
     */
    record NoRopeLayers(int period) {
        /** Whether layer {@code il} has rope in this layout. */
        boolean rope(long il) {
            return (il + 1) % period != 0;
        }
    }

    /**
     * The text model of a multimodal checkpoint, as the family's {@code modify_tensors} takes
     * it: {@code infix} is removed from a name that holds it ({@code language_model.model.layers.0...}
     * is {@code model.layers.0...}); a tensor whose name starts with one of {@code leftOut} (the
     * vision tower, the projector) is left out of the text GGUF.
     *
     * @param what what the left-out tensors are, for the summary
     */
    /**
     * Tensors a family's {@code modify_tensors} skips by name prefix, said in the summary: the
     * ones whose names start with one of {@code prefixes}, which are {@code what}.
     */
    record LeftOut(List<String> prefixes, String what) {
        /** Whether {@code hfName} is one of them. */
        boolean has(String hfName) {
            return prefixes.stream().anyMatch(hfName::startsWith);
        }
    }

    /**
     * The text model of a multimodal checkpoint, as the family's {@code modify_tensors} takes
     * it (see {@link #textName}).
     */
    record MultimodalText(String infix, List<String> leftOut, String what) {
        /** The name the family maps, or empty for a tensor it leaves out. */
        Optional<String> textName(String hfName) {
            if (hfName.contains(infix)) return Optional.of(hfName.replace(infix, ""));
            return leftOut.stream().anyMatch(hfName::startsWith) ? Optional.empty() : Optional.of(hfName);
        }
    }

    /**
     * Local and global attention layers as llama.cpp's graph for the family lays them out
     * without a pattern key (which the converter does not write): every {@code period}-th layer
     * global ({@code il % period == period - 1}), the others attending to the last
     * {@code sliding_window} positions with the local rope base
     * ({@code <arch>.rope.freq_base_swa}) and no rope scaling. A config.json that lays the
     * layers out otherwise ({@code sliding_window_pattern}, {@code layer_types}) is refused.
     *
     * @param period     llama.cpp's default pattern period for the family
     * @param localTheta the config.json keys of the local rope base, first present wins
     *                   ({@code TextModel.__init__}'s list)
     * @param gemma3     Gemma 3's keys are checked as well: {@code sliding_window_pattern}
     *                   (required), the query scaling, no attention soft-cap, causal
     *                   attention, a linear rope scaling or none
     */
    record SlidingWindow(int period, List<String> localTheta, boolean gemma3) {
    }
}
