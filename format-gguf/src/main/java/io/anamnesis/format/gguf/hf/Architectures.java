package io.anamnesis.format.gguf.hf;

import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The model families this exporter lays out, as llama.cpp's {@code convert_hf_to_gguf.py}
 * does at commit ca01960e6a (tensor names from gguf-py's {@code tensor_mapping.py} and
 * {@code constants.py}, keys from {@code TextModel.set_gguf_parameters} and the family's
 * class).
 *
 * <p>llama: {@code LlamaModel}, which also takes Mistral-style checkpoints
 * ({@code MistralForCausalLM}, the same tensor names and keys); verified byte for byte
 * against the converter's own files in the {@code hf-to-gguf} corpus, and by llama.cpp
 * loading them and computing the recorded logits.
 *
 * <p>qwen2 and qwen3: {@code Qwen2Model} and {@code Qwen3Model} (a subclass of it): the
 * common keys only (no {@code vocab_size}, no {@code rope.dimension_count}: llama.cpp takes
 * the rope width from the head size), the pooling type of a sentence-transformers folder, no
 * row permutation (ggml's NEOX rope is Hugging Face's rotate-half), q/k/v biases for qwen2
 * and per-head q/k RMS norms for qwen3; verified by llama.cpp computing the logits of an
 * independent forward pass (docs/hf-to-gguf.md), not against a converter file.
 *
 * <p>gemma and gemma2: {@code GemmaModel} and {@code Gemma2Model}, which write their own keys
 * rather than TextModel's (no rope keys; gemma2 adds the attention and final logit
 * soft-caps and the sliding window), drop lm_head (tied embeddings), add 1 to every norm
 * weight, and read only a SentencePiece tokenizer.model; gemma2's four norms per block;
 * verified by llama.cpp computing the logits of an independent forward pass.
 *
 * <p>gemma3: {@code Gemma3Model} ({@code Gemma3ForCausalLM}, and the text model of
 * {@code Gemma3ForConditionalGeneration}: {@code text_config} merged into the top level,
 * {@code language_model.} removed from the names, the vision tower and projector left out):
 * TextModel's keys with the local rope base ({@code rope.freq_base_swa}) and a linear rope
 * scaling, then its own over them; gemma2's norms with per-head q/k norms, all shifted by 1;
 * transformers' Gemma3TextConfig defaults for what its config files leave out; verified by
 * llama.cpp computing the logits of an independent forward pass with local (sliding-window)
 * and global layers.
 *
 * <p>qwen3moe: {@code Qwen3MoeModel}: qwen3's attention, a router and the experts stacked
 * into one 3-D tensor per projection and block; verified by llama.cpp computing the logits of
 * an independent forward pass.
 *
 * <p>llama with experts: {@code MixtralForCausalLM} as {@code LlamaModel} writes it, the
 * experts stacked the same way; verified the same way.
 *
 * <p>phi3: {@code Phi3MiniModel} ({@code Phi3ForCausalLM}): fused attention and feed-forward
 * tensors, its own keys and vocabulary reading; verified the same way as qwen2/qwen3.
 *
 * <p>gpt-oss: {@code GptOssModel} ({@code GptOssForCausalLM}): attention sinks, alternating local
 * and global layers, experts stored packed ({@link Architecture.PackedExperts}, split and
 * transposed; a published checkpoint's MXFP4 blocks written as ggml MXFP4); verified byte for
 * byte against the converter and by llama.cpp computing the logits of an independent forward pass.
 *
 * <p>mistral3: {@code Mistral3Model} ({@code Mistral3ForConditionalGeneration}, Mistral Small
 * 3.x): the multimodal checkpoint's text model as llama writes it; verified the same way.
 *
 * <p>arcee: {@code ArceeModel} ({@code ArceeForCausalLM}): llama without a gate in its MLP;
 * verified the same way. seed_oss: {@code SeedOssModel} ({@code SeedOssForCausalLM}): qwen2's
 * block with its own head size; verified the same way. glm4: {@code Glm4Model}
 * ({@code Glm4ForCausalLM}, GLM-4-0414): four norms a block, fused gate/up, the rope over half of
 * each head; verified the same way. lfm2: {@code LFM2Model} ({@code Lfm2ForCausalLM}): short
 * convolutions beside attention; verified the same way. command-r: {@code CommandR2Model}
 * ({@code CohereForCausalLM}): one norm a block, tied; verified the same way. cohere2:
 * {@code Cohere2Model} ({@code Cohere2ForCausalLM}): three local layers to one global without
 * rope; verified the same way. mpt: {@code MPTModel} ({@code MPTForCausalLM}): ALiBi, the fused Wqkv in blocks,
 * its keys from the nested attn_config; verified the same way. orion: {@code OrionModel} ({@code OrionForCausalLM}): llama's names with LayerNorm
 * biases, unpermuted, its own keys; verified the same way. internlm2: {@code InternLM2Model} ({@code InternLM2ForCausalLM}): its grouped fused
 * q/k/v split and permuted, its own vocabulary reading; verified the same way. deepseek: {@code DeepseekModel} ({@code DeepseekForCausalLM}, deepseek-moe-16b):
 * llama's attention with DeepSeek's dense lead, stacked and shared experts; verified the same way. nemotron: {@code NemotronModel} ({@code NemotronForCausalLM}): LayerNorm1P's weights
 * shifted by 1, squared ReLU, a partial rope; verified the same way. minicpm: {@code MiniCPMModel} ({@code MiniCPMForCausalLM}): llama's block with its
 * embedding, residual and logit scales as keys; verified the same way. exaone: {@code ExaoneModel} ({@code ExaoneForCausalLM}, EXAONE 3.x): llama's
 * block under {@code transformer.*} names, unpermuted, plus the RMS epsilon key llama.cpp needs and the converter
 * no longer writes; verified the same way, that key aside. exaone4: {@code Exaone4Model} ({@code Exaone4ForCausalLM}): post
 * norms, per-head q/k norms, llama.cpp's 64-layer window; verified the same way. qwen2vl:
 * {@code Qwen2VLModel} (Qwen2-VL and Qwen2.5-VL's language model): qwen2 with M-RoPE sections;
 * verified the same way on text. qwen3vl and qwen3vlmoe: {@code Qwen3VLTextModel} and
 * {@code Qwen3VLMoeTextModel} (Qwen3-VL's language models): qwen3 and qwen3moe with interleaved
 * M-RoPE sections and the DeepStack layer count, the MoE's experts stored packed; verified byte
 * for byte against the converter and by llama.cpp computing the logits of an independent forward
 * pass on text.
 *
 * <p>granitemoe: {@code GraniteMoeModel} (granite-3.x MoE, and GraniteMoeShared): granite's keys with
 * JetMoE's fused experts split into their halves of rows. minimax-m2: {@code MiniMaxM2Model}:
 * whole-projection q/k norms, partial rope, sigmoid routing with the experts' selection bias. Each
 * verified byte for byte against the converter and by llama.cpp computing the logits of an
 * independent forward pass. lfm2moe: {@code LFM2MoeModel} (LFM2-8B-A1B): LFM2's layers with dense
 * leading layers and then sigmoid-routed experts; verified the same way. starcoder2:
 * {@code StarCoder2Model}: LayerNorms and biases, an up/down MLP; verified the same way. apertus:
 * {@code ApertusModel}: q/k norms, an up/down xIELU MLP whose parameters become key arrays; verified the
 * same way. phi2: {@code Phi2Model}: its own keys, a parallel block on one LayerNorm; verified the same way.
 * gptneox: {@code GPTNeoXModel}: the per-head fused q/k/v re-laid in blocks, its own keys; verified the same way.
 *
 * <p>deepseek2: {@code DeepseekV2Model} (DeepSeek-V2/V2-Lite/V3/R1, and GLM-4.7-Flash's
 * {@code Glm4MoeLiteModel}): latent attention split for llama.cpp's absorbed form, grouped expert
 * routing, the multi-token-prediction layers left out. glm4moe: {@code Glm4MoeModel} (GLM-4.5/4.6):
 * DeepSeek-V3's MoE with GLM's attention, the multi-token-prediction layers kept as nextn tensors.
 * llama4: {@code Llama4Model} (Llama 4's text model): packed experts in halves, dense layers between.
 * olmoe: {@code OlmoeModel}: whole-projection q/k norms and stacked experts. ernie4_5:
 * {@code Ernie4_5Model} (ERNIE 4.5 dense); ernie4_5-moe: {@code Ernie4_5MoeModel}. Each verified byte for byte against the converter and by
 * llama.cpp computing the logits of an independent forward pass (docs/hf-to-gguf.md).
 */
final class Architectures {
    private Architectures() {
    }

    /**
     * The keys every text model writes, in the converter's order
     * ({@code TextModel.set_gguf_parameters}); the rope and head-dimension keys that follow
     * them are written by {@link HfGgufExporter}, which knows their conditions.
     */
    static final List<HyperParameter> COMMON = List.of(
            HyperParameter.u32("{arch}.context_length", "max_position_embeddings", "n_ctx", "n_positions", "max_length",
                    "max_sequence_length", "model_max_length"),
            HyperParameter.u32("{arch}.embedding_length", "hidden_size", "n_embd", "dim"),
            HyperParameter.u32("{arch}.feed_forward_length", "intermediate_size", "n_inner", "hidden_dim"),
            HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads", "n_head", "n_heads"),
            HyperParameter.u32("{arch}.attention.head_count_kv", "num_key_value_heads", "n_kv_heads"));

    /** {@code block_count}: the converter's first key, and the bound on block numbers in names. */
    static final HyperParameter BLOCK_COUNT =
            HyperParameter.u32("{arch}.block_count", "n_layers", "num_hidden_layers", "n_layer", "num_layers").asRequired();

    static final HyperParameter RMS_EPS = HyperParameter.f32("{arch}.attention.layer_norm_rms_epsilon", "rms_norm_eps", "norm_eps");
    static final HyperParameter NORM_EPS =
            HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon");

    // The Hugging Face decoder's tensors and their GGUF names (gguf-py's tensor_mapping), shared
    // by the families that have them; each family lists its own on top. Patterns are exact
    // names, so a list's order does not matter.
    private static final Architecture.TensorName TOKEN_EMBD = Architecture.TensorName.of("model.embed_tokens", "token_embd");
    private static final Architecture.TensorName OUTPUT = Architecture.TensorName.of("lm_head", "output");
    private static final Architecture.TensorName OUTPUT_NORM = Architecture.TensorName.of("model.norm", "output_norm");
    private static final Architecture.TensorName ATTN_NORM =
            Architecture.TensorName.of("model.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm");
    private static final Architecture.TensorName ATTN_OUTPUT =
            Architecture.TensorName.of("model.layers.{bid}.self_attn.o_proj", "blk.{bid}.attn_output");
    /** {@code post_attention_layernorm} as the norm before the MLP (every family but gemma2). */
    private static final Architecture.TensorName FFN_NORM =
            Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm");
    private static final Architecture.TensorName FFN_DOWN =
            Architecture.TensorName.of("model.layers.{bid}.mlp.down_proj", "blk.{bid}.ffn_down");
    /** The attention block with separate q, k, v projections, and its input norm. */
    private static final List<Architecture.TensorName> ATTENTION = List.of(ATTN_NORM,
            Architecture.TensorName.of("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
            Architecture.TensorName.of("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
            Architecture.TensorName.of("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
            ATTN_OUTPUT);
    /** Qwen3's per-head q/k RMS norms. */
    private static final List<Architecture.TensorName> QK_NORMS = List.of(
            Architecture.TensorName.of("model.layers.{bid}.self_attn.q_norm", "blk.{bid}.attn_q_norm"),
            Architecture.TensorName.of("model.layers.{bid}.self_attn.k_norm", "blk.{bid}.attn_k_norm"));
    /** The dense SwiGLU MLP. */
    private static final List<Architecture.TensorName> MLP = List.of(
            Architecture.TensorName.of("model.layers.{bid}.mlp.gate_proj", "blk.{bid}.ffn_gate"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"),
            FFN_DOWN);
    /** Embeddings, output head and norm, attention, the norm before the MLP, and the dense MLP: llama's and qwen2's decoder. */
    private static final List<Architecture.TensorName> DECODER = parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION,
            List.of(FFN_NORM), MLP);

    static final Architecture LLAMA = Architecture.of("llama", "LlamaForCausalLM", "LLaMAForCausalLM", "MistralForCausalLM")
            .tensors(DECODER)
            // LlamaModel.modify_tensors: q with num_attention_heads, k with num_key_value_heads
            .ropeRows(List.of(new Architecture.RopeRows("q_proj.weight", false), new Architecture.RopeRows("q_proj.bias", false),
                    new Architecture.RopeRows("k_proj.weight", true), new Architecture.RopeRows("k_proj.bias", true)))
            // LlamaModel.set_gguf_parameters: vocab_size, then rope.dimension_count
            .keys(List.of(HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(), new Architecture.RopeDimensionCount()))
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .llama3Rope()
            .build();

    /**
     * IBM Granite ({@code GraniteForCausalLM}, the converter's {@code GraniteModel}, a
     * {@code LlamaModel}): llama's tensors, rows, keys and vocabulary; config.json's
     * {@code head_dim} removed before anything reads it (no key/value length, the rope
     * dimension from hidden size over heads), then the four multipliers as
     * {@code attention.scale}, {@code embedding_scale}, {@code residual_scale} and
     * {@code logit_scale} (each only when not zero). gguf-py's granite tensors have no
     * {@code rope_freqs}, so a llama3 rope scaling is refused (the converter stops on it).
     * GraniteConfig's defaults for the multipliers (1.0) are not guessed: they are required.
     */
    static final Architecture GRANITE = Architecture.of("granite", "GraniteForCausalLM")
            .tensors(DECODER)
            .ropeRows(LLAMA.ropeRows())
            .keys(List.of(LLAMA.extraKeys().get(0), LLAMA.extraKeys().get(1),
                    HyperParameter.f32("{arch}.attention.scale", "attention_multiplier").skippedWhenZero(),
                    HyperParameter.f32("{arch}.embedding_scale", "embedding_multiplier").skippedWhenZero(),
                    HyperParameter.f32("{arch}.residual_scale", "residual_multiplier").skippedWhenZero(),
                    HyperParameter.f32("{arch}.logit_scale", "logits_scaling").skippedWhenZero()))
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .requires(List.of("attention_multiplier", "embedding_multiplier", "residual_multiplier", "logits_scaling"))
            .extras(Architecture.Extras.builder().configIgnored("head_dim"))
            .build();

    /**
     * IBM Granite MoE ({@code GraniteMoeForCausalLM}, granite-3.x-MoE; {@code GraniteMoeSharedForCausalLM},
     * with a shared expert; the converter's {@code GraniteMoeModel}, a {@code GraniteModel}): granite's
     * attention, rows, keys and vocabulary with a mixture of experts stored as JetMoE's parallel experts:
     * the router {@code block_sparse_moe.router.layer} ({@code ffn_gate_inp}, F32),
     * {@code block_sparse_moe.input_linear} {@code [E, 2 I, hidden]} split into its halves of rows, every
     * expert's gate then its up ({@code ffn_gate_exps}, {@code ffn_up_exps}), and
     * {@code block_sparse_moe.output_linear} {@code [E, hidden, I]} ({@code ffn_down_exps}) as they are;
     * the shared expert's {@code shared_mlp.input_linear} split the same way ({@code ffn_gate_shexp},
     * {@code ffn_up_shexp}) and {@code output_linear} ({@code ffn_down_shexp}). {@code intermediate_size}
     * is the experts' width; {@code shared_intermediate_size}, when set, is written after granite's keys.
     * transformers' router softmaxes the top-k logits, which is llama.cpp's renormalized top-k of the
     * softmax.
     */
    static final Architecture GRANITEMOE = Architecture.of("granitemoe", "GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.router.layer", "blk.{bid}.ffn_gate_inp"),
                    // the halves of input_linear, under the names RowHalves gives them
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.gate_linear", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.up_linear", "blk.{bid}.ffn_up_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.output_linear", "blk.{bid}.ffn_down_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.shared_mlp.gate_linear", "blk.{bid}.ffn_gate_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.shared_mlp.up_linear", "blk.{bid}.ffn_up_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.shared_mlp.output_linear", "blk.{bid}.ffn_down_shexp"))))
            .ropeRows(LLAMA.ropeRows())
            // GraniteMoeModel.set_gguf_parameters: GraniteModel's, then the shared expert's width
            .keys(concat(GRANITE.extraKeys(), List.of(
                    HyperParameter.u32("{arch}.expert_shared_feed_forward_length", "shared_intermediate_size").skippedWhenZero())))
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .requires(concat(GRANITE.requiredConfig(), List.of("num_local_experts", "num_experts_per_tok", "intermediate_size")))
            .extras(Architecture.Extras.builder().configIgnored("head_dim")
                    .rowHalves(new Architecture.RowHalves("block_sparse_moe.input_linear.weight", "block_sparse_moe.gate_linear.weight",
                                    "block_sparse_moe.up_linear.weight", "intermediate_size", Optional.of("num_local_experts")),
                            new Architecture.RowHalves("shared_mlp.input_linear.weight", "shared_mlp.gate_linear.weight",
                                    "shared_mlp.up_linear.weight", "shared_intermediate_size", Optional.empty())))
            .build();

    /**
     * MiniMax-M2 ({@code MiniMaxM2ForCausalLM}, the converter's {@code MiniMaxM2Model}; MiniMax-M2 and
     * M2.1, published in FP8 with 128 x 128 block scales, recovered on the way): a pre-norm decoder with
     * q/k RMS norms over the whole projection ({@code q_norm} {@code [heads x head_dim]}, {@code k_norm}
     * {@code [kv heads x head_dim]}, F32), no permutation (NEOX rope over the first {@code rotary_dim}
     * of each head); a sparse block in every layer: the router {@code block_sparse_moe.gate} (F32), its
     * selection bias {@code e_score_correction_bias} ({@code exp_probs_b.bias}, F32) and each block's
     * experts {@code w1}, {@code w2}, {@code w3} stacked in that order into {@code ffn_gate_exps},
     * {@code ffn_down_exps}, {@code ffn_up_exps}. TextModel's keys (the gating function from
     * {@code scoring_func}), then {@code expert_feed_forward_length} ({@code intermediate_size}, the
     * experts' width) and {@code rope.dimension_count} ({@code rotary_dim}); {@code TextModel.set_vocab}.
     * llama.cpp's minimax-m2 loads an output tensor, the selection bias and the gating function as
     * required, and has no shared expert: what would make a file it cannot load, or runs as another
     * model, is refused.
     */
    static final Architecture MINIMAX_M2 = Architecture.of("minimax-m2", "MiniMaxM2ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, QK_NORMS, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.gate", "blk.{bid}.ffn_gate_inp"),
                    // modify_tensors renames e_score_correction_bias to e_score_correction.bias
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.e_score_correction", "blk.{bid}.exp_probs_b"),
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.experts.w1", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.experts.w2", "blk.{bid}.ffn_down_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.experts.w3", "blk.{bid}.ffn_up_exps"))))
            // MiniMaxM2Model.set_gguf_parameters: TextModel's, then these
            .keys(List.of(HyperParameter.u32("{arch}.expert_feed_forward_length", "intermediate_size").asRequired(),
                    HyperParameter.u32("{arch}.rope.dimension_count", "rotary_dim").asRequired()))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "rope_theta", "head_dim", "rotary_dim", "num_local_experts",
                    "num_experts_per_tok", "scoring_func"))
            .experts(new Architecture.Experts("model.layers.{bid}.block_sparse_moe.experts.{xid}.{proj}.weight",
                    List.of(new Architecture.Experts.Projection("w1", true), new Architecture.Experts.Projection("w2", false),
                            new Architecture.Experts.Projection("w3", true)),
                    "model.layers.{bid}.block_sparse_moe.experts.{proj}.weight",
                    HyperParameter.u32("{arch}.expert_count", "num_local_experts", "num_experts").asRequired(),
                    "intermediate_size", "block_sparse_moe.gate.weight",
                    List.of(new Architecture.ConfigValue("tie_word_embeddings", Boolean.FALSE, false, "llama.cpp's minimax-m2 "
                                    + "loads an output tensor of its own"),
                            new Architecture.ConfigValue("use_routing_bias", Boolean.TRUE, false, "llama.cpp's minimax-m2 loads "
                                    + "the experts' selection bias (e_score_correction_bias) as required"),
                            new Architecture.ConfigValue("use_qk_norm", Boolean.TRUE, false, "llama.cpp's minimax-m2 always "
                                    + "normalizes q and k"),
                            new Architecture.ConfigValue("shared_intermediate_size", 0L, false, "llama.cpp's minimax-m2 has no "
                                    + "shared expert")),
                    // TextModel writes the gating function; no expert groups in MiniMax's configs
                    Optional.empty(), true))
            .build();

    /**
     * BigCode's StarCoder2 ({@code Starcoder2ForCausalLM}, the converter's {@code StarCoder2Model}, a plain
     * {@code TextModel}): LayerNorms with weight and bias ({@code input_layernorm}, {@code post_attention_layernorm},
     * {@code model.norm}), q/k/v/o with biases, no permutation (NEOX rope), the MLP {@code mlp.c_fc}
     * ({@code ffn_up}) and {@code mlp.c_proj} ({@code ffn_down}) with biases and no gate; TextModel's keys only
     * (the norm epsilon from {@code norm_epsilon}); {@code TextModel.set_vocab}. llama.cpp's starcoder2 computes
     * GELU (tanh) and loads the biases as required: another activation or {@code use_bias} false is refused.
     * The checkpoints' {@code sliding_window} (4096) is applied by neither: converted with a note.
     */
    static final Architecture STARCODER2 = Architecture.of("starcoder2", "Starcoder2ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.mlp.c_fc", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.c_proj", "blk.{bid}.ffn_down"))))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "norm_epsilon", "rope_theta"))
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("hidden_act", "gelu_pytorch_tanh", false, "llama.cpp's starcoder2 "
                                    + "computes GELU's tanh approximation"),
                            new Architecture.ConfigValue("use_bias", Boolean.TRUE, false, "llama.cpp's starcoder2 loads the "
                                    + "biases as required"),
                            new Architecture.ConfigValue("norm_type", "layer_norm", false, "llama.cpp's starcoder2 normalizes "
                                    + "with LayerNorm"),
                            new Architecture.ConfigValue("mlp_type", "default", false, "llama.cpp's starcoder2 has one up "
                                    + "projection, no gate"))
                    .unappliedWindow())
            .build();

    /**
     * Swiss AI's Apertus ({@code ApertusForCausalLM}, the converter's {@code ApertusModel}, a
     * {@code LlamaModel} that does not permute): {@code attention_layernorm} ({@code attn_norm}) and
     * {@code feedforward_layernorm} ({@code ffn_norm}), per-head q/k norms, NEOX rope, an MLP of
     * {@code up_proj} and {@code down_proj} with the xIELU activation whose four parameters per layer
     * ({@code mlp.act_fn.alpha_n}, {@code alpha_p}, {@code beta}, {@code eps}) become the arrays
     * {@code xielu.alpha_n}, ... (llama.cpp takes softplus of the alphas as transformers does); llama's
     * keys, vocabulary and llama3 {@code rope_freqs}.
     */
    static final Architecture APERTUS = Architecture.of("apertus", "ApertusForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.attention_layernorm", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
                    ATTN_OUTPUT,
                    Architecture.TensorName.of("model.layers.{bid}.feedforward_layernorm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"), FFN_DOWN), QK_NORMS))
            // ApertusModel: LlamaModel's keys; the xIELU arrays come with the tensors
            .keys(LLAMA.extraKeys())
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "rope_theta"))
            .llama3Rope()
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("hidden_act", "xielu", false, "llama.cpp's apertus computes xIELU"))
                    .layerScalars(new Architecture.LayerScalar("mlp.act_fn.alpha_n", "xielu.alpha_n"),
                            new Architecture.LayerScalar("mlp.act_fn.alpha_p", "xielu.alpha_p"),
                            new Architecture.LayerScalar("mlp.act_fn.beta", "xielu.beta"),
                            new Architecture.LayerScalar("mlp.act_fn.eps", "xielu.eps")))
            .build();

    /**
     * Microsoft's Phi-2 and Phi-1.5 ({@code PhiForCausalLM}, the converter's {@code Phi2Model}): one LayerNorm
     * per block (weight and bias) feeding attention and the MLP in parallel, q/k/v and {@code self_attn.dense}
     * with biases, no permutation (NEOX rope over the first {@code partial_rotary_factor} of each head), the MLP
     * {@code mlp.fc1} ({@code ffn_up}) and {@code mlp.fc2} ({@code ffn_down}) with biases, {@code
     * model.final_layernorm} ({@code output_norm}), {@code lm_head} with a bias; its own keys, none of
     * TextModel's: context length, embedding length, feed-forward length 4 x hidden, block count, heads (and
     * as many key/value heads), the LayerNorm epsilon, the rope dimension count, the file type and
     * {@code tokenizer.ggml.add_bos_token} false; {@code TextModel.set_vocab}. What llama.cpp's phi2 assumes
     * (gelu_new, no q/k layernorm, rope base 10000, which no key carries) is refused otherwise.
     */
    static final Architecture PHI2 = Architecture.of("phi2", "PhiForCausalLM")
            .tensors(List.of(TOKEN_EMBD, OUTPUT, Architecture.TensorName.of("model.final_layernorm", "output_norm"), ATTN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.dense", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.fc1", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.fc2", "blk.{bid}.ffn_down")))
            // Phi2Model.set_gguf_parameters, in its order
            .keys(List.of(HyperParameter.u32("{arch}.context_length", "n_positions", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size", "n_embd").asRequired(),
                    Architecture.OwnKey.FOUR_HIDDEN_FEED_FORWARD_LENGTH, Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads", "n_head").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count_kv", "num_attention_heads", "n_head").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_epsilon", "layer_norm_eps").asRequired(),
                    Architecture.OwnKey.PARTIAL_ROPE_DIMENSION_COUNT, Architecture.OwnKey.FILE_TYPE, Architecture.OwnKey.NO_BOS_TOKEN))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "num_attention_heads", "partial_rotary_factor"))
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("hidden_act", "gelu_new", false, "llama.cpp's phi2 computes GELU's "
                                    + "tanh approximation"),
                            new Architecture.ConfigValue("qk_layernorm", Boolean.FALSE, false, "llama.cpp's phi2 has no q/k "
                                    + "layernorm"),
                            new Architecture.ConfigValue("rope_theta", 10000.0, false, "the converter writes no rope base for phi2, "
                                    + "and llama.cpp runs 10000")))
            .build();

    /**
     * EleutherAI's GPT-NeoX ({@code GPTNeoXForCausalLM}: Pythia, GPT-NeoX-20B, and models built on them; the
     * converter's {@code GPTNeoXModel}): LayerNorms with bias before attention and before the MLP (in parallel
     * unless {@code use_parallel_residual} is false), {@code attention.query_key_value} with its bias kept fused
     * ({@code attn_qkv}) but re-laid from per-head rows to q, k, v blocks ({@link QkvRows}), {@code attention.dense},
     * the MLP {@code dense_h_to_4h}/{@code dense_4h_to_h} with biases, {@code final_layer_norm}, {@code embed_out};
     * its own keys: context and embedding lengths, block count, feed-forward length, the rope dimension count
     * ({@code int(rotary_pct x head_dim)}), heads, {@code use_parallel_residual}, the LayerNorm epsilon, and no file
     * type (the converter writes none). No rope base is written (llama.cpp runs 10000): another is refused.
     * transformers' GPT-NeoX computes the exact GELU, llama.cpp's gptneox the tanh approximation (a difference of
     * about 1e-3 of the logits: llama.cpp's, which every converter's file has).
     */
    static final Architecture GPTNEOX = Architecture.of("gptneox", "GPTNeoXForCausalLM")
            .tensors(List.of(Architecture.TensorName.of("gpt_neox.embed_in", "token_embd"),
                    Architecture.TensorName.of("embed_out", "output"),
                    Architecture.TensorName.of("gpt_neox.final_layer_norm", "output_norm"),
                    Architecture.TensorName.of("gpt_neox.layers.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("gpt_neox.layers.{bid}.attention.query_key_value", "blk.{bid}.attn_qkv"),
                    Architecture.TensorName.of("gpt_neox.layers.{bid}.attention.dense", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("gpt_neox.layers.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("gpt_neox.layers.{bid}.mlp.dense_h_to_4h", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("gpt_neox.layers.{bid}.mlp.dense_4h_to_h", "blk.{bid}.ffn_down")))
            // GPTNeoXModel.set_gguf_parameters, in its order
            .keys(List.of(HyperParameter.u32("{arch}.context_length", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size").asRequired(), Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.feed_forward_length", "intermediate_size").asRequired(),
                    Architecture.OwnKey.ROTARY_PCT_DIMENSION_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads").asRequired(),
                    Architecture.OwnKey.PARALLEL_RESIDUAL,
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_eps").asRequired()))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "num_attention_heads", "rotary_pct"))
            .extras(Architecture.Extras.builder()
                    .perHeadQkv("attention.query_key_value.weight", "attention.query_key_value.bias")
                    .configValues(new Architecture.ConfigValue("rotary_emb_base", 10000L, false, "the converter writes no rope "
                                    + "base for gptneox, and llama.cpp runs 10000"),
                            new Architecture.ConfigValue("rope_theta", 10000L, false, "the converter writes no rope base for "
                                    + "gptneox, and llama.cpp runs 10000")))
            .build();

    /**
     * OpenAI's GPT-2 ({@code GPT2LMHeadModel}: gpt2 to gpt2-xl, DistilGPT2, DialoGPT and the many checkpoints built
     * on them; the converter's {@code GPT2Model}): names with or without {@code transformer.}, learned position
     * embeddings ({@code wpe} {@code position_embd}), LayerNorms with bias ({@code ln_1} {@code attn_norm}, {@code
     * ln_2} {@code ffn_norm}, {@code ln_f} {@code output_norm}), the fused {@code attn.c_attn} ({@code attn_qkv}),
     * {@code attn.c_proj}, {@code mlp.c_fc} ({@code ffn_up}) and {@code mlp.c_proj} ({@code ffn_down}) with biases,
     * each {@code Conv1D} weight stored {@code [in, out]} and transposed; the output tied to {@code wte} (an
     * {@code lm_head.weight} written when the checkpoint has one). The causal-mask buffers older checkpoints carry
     * ({@code attn.bias}, {@code attn.masked_bias}) are left out, as {@code GPT2Model.modify_tensors}' "we don't need
     * these" means (at the converter's pinned commit its code passes them on to be mapped, and it stops on them
     * with "Can not map tensor": openai-community/gpt2's own safetensors has them). Its own keys, in {@code
     * set_gguf_parameters}' order: block count, context length ({@code n_ctx}, or {@code n_positions} where a
     * config.json has no {@code n_ctx}), embedding length, feed-forward length 4 x {@code n_embd}, heads, the
     * LayerNorm epsilon, the file type; {@code TextModel.set_vocab}'s GPT-2 BPE vocabulary. What llama.cpp's gpt2
     * does not compute (another activation than gelu_new, unscaled or layer-scaled attention, cross-attention) is
     * refused.
     */
    static final Architecture GPT2 = Architecture.of("gpt2", "GPT2LMHeadModel")
            .tensors(gpt2Names())
            // GPT2Model.set_gguf_parameters, in its order
            .keys(List.of(Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.context_length", "n_ctx", "n_positions", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "n_embd", "hidden_size").asRequired(),
                    Architecture.OwnKey.FOUR_HIDDEN_FEED_FORWARD_LENGTH,
                    HyperParameter.u32("{arch}.attention.head_count", "n_head", "num_attention_heads").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_epsilon").asRequired(),
                    Architecture.OwnKey.FILE_TYPE))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "n_embd", "n_head"))
            .extras(Architecture.Extras.builder()
                    .transposed("attn.c_attn.weight", "attn.c_proj.weight", "mlp.c_fc.weight", "mlp.c_proj.weight")
                    .buffers(".attn.bias", ".attn.masked_bias")
                    .configValues(new Architecture.ConfigValue("activation_function", "gelu_new", false, "llama.cpp's gpt2 "
                                    + "computes GELU's tanh approximation"),
                            new Architecture.ConfigValue("scale_attn_weights", Boolean.TRUE, false, "llama.cpp's gpt2 divides "
                                    + "the attention scores by the square root of the head size"),
                            new Architecture.ConfigValue("scale_attn_by_inverse_layer_idx", Boolean.FALSE, false, "llama.cpp's "
                                    + "gpt2 does not scale the scores by layer"),
                            new Architecture.ConfigValue("add_cross_attention", Boolean.FALSE, false, "llama.cpp's gpt2 is a "
                                    + "decoder without cross-attention")))
            .build();

    /**
     * BigCode's StarCoder ({@code GPTBigCodeForCausalLM}: StarCoder, StarCoderBase, tiny_starcoder, WizardCoder and
     * other checkpoints of transformers' GPTBigCode; the converter's {@code StarCoderModel}): GPT-2's names and
     * layout (learned positions kept F32, LayerNorms and biases, {@code c_attn}, {@code c_proj}, {@code c_fc}) with
     * linear layers ({@code [out, in]}, nothing transposed) and multi-query attention: {@code c_attn} is the query
     * and one key/value head ({@code n_embd + 2 x head_dim} rows). Its own keys, in {@code set_gguf_parameters}'
     * order: context length ({@code n_positions}), embedding length, feed-forward length 4 x {@code n_embd},
     * block count, heads, one key/value head, the LayerNorm epsilon, the file type; {@code TextModel.set_vocab}.
     * A checkpoint with {@code multi_query} false (llama.cpp's starcoder has one key/value head), another activation
     * than GELU's tanh approximation, or unscaled attention is refused.
     */
    static final Architecture STARCODER = Architecture.of("starcoder", "GPTBigCodeForCausalLM")
            .tensors(gpt2Names())
            // StarCoderModel.set_gguf_parameters, in its order
            .keys(List.of(HyperParameter.u32("{arch}.context_length", "n_positions", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "n_embd", "hidden_size").asRequired(),
                    Architecture.OwnKey.FOUR_HIDDEN_FEED_FORWARD_LENGTH, Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "n_head", "num_attention_heads").asRequired(),
                    Architecture.OwnKey.ONE_KEY_VALUE_HEAD,
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_epsilon").asRequired(),
                    Architecture.OwnKey.FILE_TYPE))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "n_embd", "n_head"))
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("multi_query", Boolean.TRUE, false, "llama.cpp's starcoder "
                                    + "has one key/value head (the converter writes head_count_kv 1 whatever it says)"),
                            new Architecture.ConfigValue("activation_function", "gelu_pytorch_tanh", false, "llama.cpp's "
                                    + "starcoder computes GELU's tanh approximation"),
                            new Architecture.ConfigValue("scale_attn_weights", Boolean.TRUE, false, "llama.cpp's starcoder "
                                    + "divides the attention scores by the square root of the head size"),
                            new Architecture.ConfigValue("add_cross_attention", Boolean.FALSE, false, "llama.cpp's starcoder "
                                    + "is a decoder without cross-attention")))
            .build();

    /**
     * BigScience's BLOOM ({@code BloomForCausalLM}: bloom-560m to bloom, BLOOMZ, and checkpoints built on them; the
     * converter's {@code BloomModel}): names with or without {@code transformer.}, {@code word_embeddings} and its
     * LayerNorm ({@code token_embd_norm}), LayerNorms with bias, {@code self_attention.query_key_value} and its bias
     * kept fused ({@code attn_qkv}) but re-laid from per-head rows to q, k, v blocks ({@link QkvRows}, as the
     * converter re-lays them), {@code self_attention.dense}, the MLP {@code dense_h_to_4h}/{@code dense_4h_to_h} with
     * biases, {@code ln_f}; no positions (llama.cpp's bloom computes ALiBi); the output tied to the embeddings. Its
     * own keys, in {@code set_gguf_parameters}' order: context length ({@code seq_length}, else the embedding length,
     * as the converter writes it), embedding length, feed-forward length 4 x hidden, block count, heads and as many
     * key/value heads, the LayerNorm epsilon, the file type. A residual taken after the LayerNorm
     * ({@code apply_residual_connection_post_layernorm}), which llama.cpp's bloom does not compute, is refused.
     */
    static final Architecture BLOOM = Architecture.of("bloom", "BloomForCausalLM")
            .tensors(bloomNames())
            // BloomModel.set_gguf_parameters, in its order
            .keys(List.of(HyperParameter.u32("{arch}.context_length", "seq_length", "hidden_size", "n_embed").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size", "n_embed").asRequired(),
                    Architecture.OwnKey.FOUR_HIDDEN_FEED_FORWARD_LENGTH, Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "n_head", "num_attention_heads").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count_kv", "n_head", "num_attention_heads").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_epsilon").asRequired(),
                    Architecture.OwnKey.FILE_TYPE))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size"))
            .extras(Architecture.Extras.builder()
                    .perHeadQkv("self_attention.query_key_value.weight", "self_attention.query_key_value.bias")
                    .configValues(new Architecture.ConfigValue("apply_residual_connection_post_layernorm", Boolean.FALSE, false,
                            "llama.cpp's bloom adds each block's input, not its LayerNorm's output, to the residual")))
            .build();

    /** BLOOM's tensor names, with and without {@code transformer.} (the converter removes it before mapping). */
    private static List<Architecture.TensorName> bloomNames() {
        List<Architecture.TensorName> names = new java.util.ArrayList<>();
        names.add(Architecture.TensorName.of("lm_head", "output"));
        for (String p : List.of("", "transformer.")) {
            names.add(Architecture.TensorName.of(p + "word_embeddings", "token_embd"));
            names.add(Architecture.TensorName.of(p + "word_embeddings_layernorm", "token_embd_norm"));
            names.add(Architecture.TensorName.of(p + "ln_f", "output_norm"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.input_layernorm", "blk.{bid}.attn_norm"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.self_attention.query_key_value", "blk.{bid}.attn_qkv"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.self_attention.dense", "blk.{bid}.attn_output"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.post_attention_layernorm", "blk.{bid}.ffn_norm"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.mlp.dense_h_to_4h", "blk.{bid}.ffn_up"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.mlp.dense_4h_to_h", "blk.{bid}.ffn_down"));
        }
        return List.copyOf(names);
    }

    /**
     * Stability AI's StableLM ({@code StableLmForCausalLM}: StableLM 2 1.6B and Zephyr, StableLM-3B-4E1T, Stable Code 3B;
     * {@code StableLMEpochForCausalLM}, the same model under its remote-code class and keys; the converter's
     * {@code StableLMModel}): llama's tensor names with LayerNorms (weight and bias) for {@code input_layernorm},
     * {@code post_attention_layernorm} (absent with parallel residuals) and {@code model.norm}, optional q/k/v
     * biases, no permutation (NEOX rope over the first {@code int(partial_rotary_factor x head_dim)} dims, {@code
     * rope_pct} under the older keys), the SwiGLU MLP. Its own keys, in {@code set_gguf_parameters}' order: context
     * length, embedding length, block count, feed-forward length, the rope dimension count, heads and key/value
     * heads, {@code use_parallel_residual} (true when absent, as the converter writes it), the LayerNorm epsilon
     * ({@code layer_norm_eps} or {@code norm_eps}), the file type; the vocabulary from {@code tokenizer.json}. No rope
     * base is written (llama.cpp runs 10000): another is refused, as are rope scaling and the per-head q/k LayerNorms
     * of StableLM 2 12B (not converted here).
     */
    static final Architecture STABLELM = Architecture.of("stablelm", "StableLmForCausalLM", "StableLMEpochForCausalLM")
            .tensors(DECODER)
            // StableLMModel.set_gguf_parameters, in its order
            .keys(List.of(HyperParameter.u32("{arch}.context_length", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size").asRequired(), Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.feed_forward_length", "intermediate_size").asRequired(),
                    Architecture.OwnKey.ROTARY_PCT_DIMENSION_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count_kv", "num_key_value_heads").asRequired(),
                    Architecture.OwnKey.PARALLEL_RESIDUAL,
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_eps", "norm_eps").asRequired(),
                    Architecture.OwnKey.FILE_TYPE))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads"))
            .extras(Architecture.Extras.builder()
                    .configRefused(Map.of("rope_scaling", "the converter writes no rope scaling for stablelm"))
                    .configValues(new Architecture.ConfigValue("rope_theta", 10000.0, false, "the converter writes no rope base "
                                    + "for stablelm, and llama.cpp runs 10000"),
                            new Architecture.ConfigValue("qk_layernorm", Boolean.FALSE, false, "StableLM 2 12B's per-head q/k "
                                    + "LayerNorms are not converted here"),
                            new Architecture.ConfigValue("hidden_act", "silu", false, "llama.cpp's stablelm computes SwiGLU")))
            .build();

    /**
     * AI2's first OLMo ({@code OlmoForCausalLM}, {@code OLMoForCausalLM}: OLMo-1B-hf, OLMo-7B-hf, OLMo-7B-0424-hf; the
     * converter's {@code OlmoModel}): llama's attention and MLP names without any norm tensor (its LayerNorms have no
     * weights: llama.cpp's olmo normalizes without them), q/k rows permuted as llama's, no biases. TextModel's keys,
     * then {@code attention.layer_norm_epsilon} 1e-5 (what {@code set_gguf_parameters} writes, the model's own) and
     * {@code attention.clamp_kqv} when {@code clip_qkv} is set (OLMo-7B-0424's 8). Attention biases, which llama.cpp's
     * olmo does not load, and another activation than silu are refused.
     */
    static final Architecture OLMO = Architecture.of("olmo", "OlmoForCausalLM", "OLMoForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT), ATTENTION.subList(1, ATTENTION.size()), MLP))
            // OlmoModel.modify_tensors: LlamaModel's permutation of the q and k weights
            .ropeRows(List.of(new Architecture.RopeRows("q_proj.weight", false), new Architecture.RopeRows("k_proj.weight", true)))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            // OlmoModel.set_gguf_parameters: TextModel's, then these
            .keys(List.of(Architecture.OwnKey.OLMO_LAYER_NORM_EPSILON, HyperParameter.f32("{arch}.attention.clamp_kqv", "clip_qkv")))
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "rope_theta"))
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("attention_bias", Boolean.FALSE, false, "llama.cpp's olmo loads no "
                                    + "attention biases"),
                            new Architecture.ConfigValue("hidden_act", "silu", false, "llama.cpp's olmo computes SwiGLU")))
            .build();

    /**
     * TII's Falcon ({@code FalconForCausalLM}, {@code RWForCausalLM} under its remote-code class: Falcon-7B and 40B
     * and their instruct models, Falcon-180B; the converter's {@code FalconModel}): {@code transformer.word_embeddings},
     * one LayerNorm a block ({@code input_layernorm}, 7B) or two ({@code ln_attn} {@code attn_norm_2} before attention,
     * {@code ln_mlp} {@code attn_norm} before the MLP: the new decoder architecture of 40B and 180B), attention and MLP
     * in parallel, the fused {@code self_attention.query_key_value} re-laid from groups (each group's queries, then
     * its key and value head) to every query, key, then value ({@link QkvRows#grouped}), {@code self_attention.dense},
     * {@code mlp.dense_h_to_4h}/{@code dense_4h_to_h}, no biases, {@code ln_f}, {@code lm_head}. Its own keys, in
     * {@code set_gguf_parameters}' order: context length 2048 (not in config.json), {@code tensor_data_layout}
     * "jploski" (the re-layout's name), embedding length, feed-forward length 4 x hidden, block count, heads,
     * key/value heads ({@code num_kv_heads}, {@code n_head_kv}, else 1), the LayerNorm epsilon, the file type. ALiBi,
     * biases, sequential attention and a rope base other than 10000, which llama.cpp's falcon does not compute, are
     * refused, and so is a per-head q/k/v layout (neither multi-query nor the new architecture), which the converter's
     * re-layout would scramble.
     */
    static final Architecture FALCON = Architecture.of("falcon", "FalconForCausalLM", "RWForCausalLM")
            .tensors(List.of(Architecture.TensorName.of("transformer.word_embeddings", "token_embd"),
                    Architecture.TensorName.of("lm_head", "output"),
                    Architecture.TensorName.of("transformer.ln_f", "output_norm"),
                    Architecture.TensorName.of("transformer.h.{bid}.input_layernorm", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("transformer.h.{bid}.ln_mlp", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("transformer.h.{bid}.ln_attn", "blk.{bid}.attn_norm_2"),
                    Architecture.TensorName.of("transformer.h.{bid}.self_attention.query_key_value", "blk.{bid}.attn_qkv"),
                    Architecture.TensorName.of("transformer.h.{bid}.self_attention.dense", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("transformer.h.{bid}.mlp.dense_h_to_4h", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("transformer.h.{bid}.mlp.dense_4h_to_h", "blk.{bid}.ffn_down")))
            // FalconModel.set_gguf_parameters, in its order
            .keys(List.of(Architecture.OwnKey.FALCON_CONTEXT_AND_LAYOUT,
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size").asRequired(),
                    Architecture.OwnKey.FOUR_HIDDEN_FEED_FORWARD_LENGTH, Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads", "n_head").asRequired(),
                    Architecture.OwnKey.FALCON_KEY_VALUE_HEADS,
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_epsilon").asRequired(),
                    Architecture.OwnKey.FILE_TYPE))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size"))
            .extras(Architecture.Extras.builder()
                    .groupedQkv("self_attention.query_key_value.weight")
                    .configValues(new Architecture.ConfigValue("alibi", Boolean.FALSE, false, "llama.cpp's falcon computes rope, "
                                    + "not ALiBi"),
                            new Architecture.ConfigValue("bias", Boolean.FALSE, false, "llama.cpp's falcon loads no biases"),
                            new Architecture.ConfigValue("parallel_attn", Boolean.TRUE, false, "llama.cpp's falcon runs attention "
                                    + "and the MLP in parallel"),
                            new Architecture.ConfigValue("rope_theta", 10000.0, false, "the converter writes no rope base for "
                                    + "falcon, and llama.cpp runs 10000")))
            .build();

    /**
     * LG's EXAONE 3.0 and 3.5 ({@code ExaoneForCausalLM}, the converter's {@code ExaoneModel}; EXAONE Deep too): the
     * {@code transformer.*} names of its remote-code model ({@code wte}, {@code h.N.ln_1}, {@code attn.attention.q_proj}
     * ... {@code out_proj}, {@code ln_2}, {@code mlp.c_fc_0} the gate, {@code c_fc_1} the up projection, {@code c_proj},
     * {@code ln_f}, {@code lm_head}), RMS norms, no biases, no permutation (llama.cpp's exaone rotates NEOX-style, as
     * the model's rotate-half does); TextModel's keys (the block count from {@code num_layers}, the norms' epsilon
     * from {@code layer_norm_epsilon} as {@code attention.layer_norm_epsilon}), then the rope dimension count (hidden /
     * heads), a llama3 rope scaling as {@code rope_freqs}; {@code _set_vocab_gpt2}'s vocabulary.
     *
     * <p>One key more than the converter writes: {@code attention.layer_norm_rms_epsilon}, the same epsilon, after the
     * rope dimension count. The converter at the commit followed dropped it in its rope refactor (ExaoneModel wrote it
     * before), and llama.cpp's exaone does not load a file without it ("key not found in model:
     * exaone.attention.layer_norm_rms_epsilon"). A partial rotary factor or a head size other than hidden / heads,
     * which llama.cpp's exaone asserts against, and another activation are refused.
     */
    static final Architecture EXAONE = Architecture.of("exaone", "ExaoneForCausalLM")
            .tensors(List.of(Architecture.TensorName.of("transformer.wte", "token_embd"),
                    Architecture.TensorName.of("lm_head", "output"),
                    Architecture.TensorName.of("transformer.ln_f", "output_norm"),
                    Architecture.TensorName.of("transformer.h.{bid}.ln_1", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("transformer.h.{bid}.attn.attention.q_proj", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("transformer.h.{bid}.attn.attention.k_proj", "blk.{bid}.attn_k"),
                    Architecture.TensorName.of("transformer.h.{bid}.attn.attention.v_proj", "blk.{bid}.attn_v"),
                    Architecture.TensorName.of("transformer.h.{bid}.attn.attention.out_proj", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("transformer.h.{bid}.ln_2", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("transformer.h.{bid}.mlp.c_fc_0", "blk.{bid}.ffn_gate"),
                    Architecture.TensorName.of("transformer.h.{bid}.mlp.c_fc_1", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("transformer.h.{bid}.mlp.c_proj", "blk.{bid}.ffn_down")))
            // ExaoneModel.set_gguf_parameters: TextModel's, then the rope dimension count; then the key llama.cpp reads
            .keys(List.of(new Architecture.RopeDimensionCount(),
                    HyperParameter.f32("{arch}.attention.layer_norm_rms_epsilon", "layer_norm_epsilon").asRequired()))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "layer_norm_epsilon", "rope_theta"))
            .llama3Rope()
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("activation_function", "silu", true, "the converter asserts it, "
                                    + "and llama.cpp's exaone computes SwiGLU"),
                            new Architecture.ConfigValue("partial_rotary_factor", 1.0, false, "llama.cpp's exaone rotates whole "
                                    + "heads"),
                            new Architecture.ConfigValue("rope_pct", 1.0, false, "llama.cpp's exaone rotates whole heads")))
            .build();

    /**
     * OpenBMB's MiniCPM ({@code MiniCPMForCausalLM}: MiniCPM-1B and MiniCPM-2B and their sft/dpo models; the converter's
     * {@code MiniCPMModel}): llama's tensors and permuted q/k rows; TextModel's keys, then its three scales
     * ({@link Architecture.OwnKey#MINICPM_SCALES}: the embeddings times {@code scale_emb}, each residual branch times
     * {@code scale_depth / sqrt(layers)}, the logits over {@code hidden_size / dim_model_base}, which llama.cpp's
     * minicpm computes with granite's graph); {@code _set_vocab_sentencepiece}'s vocabulary. Its longrope scaling
     * (MiniCPM4-8B's), which the converter writes as {@code rope_factors_long}/{@code short} without the attention
     * factor the model applies, and MiniCPM-MoE's experts (refused as every unlisted mixture of experts is) are not
     * converted here.
     */
    static final Architecture MINICPM = Architecture.of("minicpm", "MiniCPMForCausalLM")
            .tensors(DECODER)
            // MiniCPMModel.modify_tensors: LlamaModel's permutation of the q and k weights
            .ropeRows(List.of(new Architecture.RopeRows("q_proj.weight", false), new Architecture.RopeRows("k_proj.weight", true)))
            // MiniCPMModel.set_gguf_parameters: TextModel's, then the scales
            .keys(List.of(Architecture.OwnKey.MINICPM_SCALES))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "rope_theta", "scale_emb", "scale_depth", "dim_model_base"))
            .extras(Architecture.Extras.builder()
                    .configRefused(Map.of("rope_scaling", "MiniCPM4's longrope is not converted yet (the converter writes its "
                            + "factors without the attention factor the model applies)"))
                    .configValues(new Architecture.ConfigValue("hidden_act", "silu", false, "llama.cpp's minicpm computes SwiGLU")))
            .build();

    /**
     * NVIDIA's Nemotron ({@code NemotronForCausalLM}: Nemotron-Mini-4B-Instruct, Minitron-4B; the converter's
     * {@code NemotronModel}): llama's names with LayerNorms (weight and bias) whose weights the model applies as
     * {@code 1 + w} (LayerNorm1P: the converter adds 1 to every {@code *norm.weight}), no permutation (NEOX rope over
     * the first {@code int(rot_pct x hidden) // heads} dims), an MLP of {@code up_proj} and {@code down_proj} with
     * squared ReLU, an {@code lm_head} of its own; TextModel's keys, then {@code vocab_size}, the LayerNorm epsilon,
     * the rope dimension count and rope scaling type none; the SentencePiece vocabulary with padding id 0 and unknown
     * id 1. A head size other than hidden / heads (Minitron-8B's: llama.cpp's nemotron takes q and the output
     * projection as hidden x hidden), biases in attention or the MLP, another activation, and rope scaling (which the
     * converter reads from a top-level {@code factor}) are refused.
     */
    static final Architecture NEMOTRON = Architecture.of("nemotron", "NemotronForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"), FFN_DOWN)))
            // NemotronModel.set_gguf_parameters: TextModel's, then these
            .keys(List.of(HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "layer_norm_eps", "layer_norm_epsilon", "norm_epsilon",
                            "norm_eps").asRequired(),
                    Architecture.OwnKey.NEMOTRON_ROPE_DIMENSION_COUNT, Architecture.OwnKey.ROPE_SCALING_NONE))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_PAD0_UNK1)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rope_theta"))
            // NemotronModel.modify_tensors: + 1 on every *norm.weight (LayerNorm1P)
            .shifts(List.of(new Architecture.Shift("norm.weight", 1.0f)))
            .extras(Architecture.Extras.builder()
                    .configRefused(Map.of("rope_scaling", "the converter reads its factor from a top-level key, not the "
                            + "scaling's; not converted"))
                    .configValues(new Architecture.ConfigValue("hidden_act", "relu2", false, "llama.cpp's nemotron computes the "
                                    + "squared ReLU"),
                            new Architecture.ConfigValue("attention_bias", Boolean.FALSE, false, "attention biases are not "
                                    + "converted for nemotron"),
                            new Architecture.ConfigValue("mlp_bias", Boolean.FALSE, false, "MLP biases are not converted for "
                                    + "nemotron")))
            .build();

    /**
     * Shanghai AI Lab's InternLM2 and InternLM2.5 ({@code InternLM2ForCausalLM}, the converter's {@code InternLM2Model}):
     * its own names ({@code model.tok_embeddings}, {@code attention_norm}, {@code attention.wo}, {@code ffn_norm},
     * {@code feed_forward.w1} the gate, {@code w3} the up projection, {@code w2}, {@code model.norm}, {@code output}),
     * the fused {@code attention.wqkv} in groups (each group's query heads, then its key and its value head) split
     * into q, k and v with q and k permuted as llama's ({@link QkvRows#groupedParts}); TextModel's keys only (a dynamic
     * NTK rope scaling, which the converter leaves out, converted with a note); the vocabulary read its own way
     * ({@link Vocabulary#internLm2}). Biases and another activation are refused.
     */
    static final Architecture INTERNLM2 = Architecture.of("internlm2", "InternLM2ForCausalLM")
            .tensors(List.of(Architecture.TensorName.of("model.tok_embeddings", "token_embd"),
                    Architecture.TensorName.of("output", "output"),
                    Architecture.TensorName.of("model.norm", "output_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.attention_norm", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.attention.wq", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("model.layers.{bid}.attention.wk", "blk.{bid}.attn_k"),
                    Architecture.TensorName.of("model.layers.{bid}.attention.wv", "blk.{bid}.attn_v"),
                    Architecture.TensorName.of("model.layers.{bid}.attention.wo", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("model.layers.{bid}.ffn_norm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w1", "blk.{bid}.ffn_gate"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w3", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w2", "blk.{bid}.ffn_down")))
            .vocabulary(Architecture.VocabularyRule.INTERNLM2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "rope_theta"))
            .extras(Architecture.Extras.builder()
                    .configValues(new Architecture.ConfigValue("bias", Boolean.FALSE, false, "InternLM2's biases are not converted "
                                    + "(the converter cannot map a fused q/k/v bias)"),
                            new Architecture.ConfigValue("hidden_act", "silu", false, "llama.cpp's internlm2 computes SwiGLU")))
            .build();

    /**
     * OrionStar's Orion ({@code OrionForCausalLM}: Orion-14B-Base and -Chat; the converter's {@code OrionModel}): llama's
     * names with LayerNorms (weight and bias; the config calls its epsilon {@code rms_norm_eps}, the model normalizes
     * with LayerNorm), no permutation (NEOX rope over the whole head), SwiGLU, an {@code lm_head} of its own. Its own
     * keys in {@code set_gguf_parameters}' order: the file type, {@code tensor_data_layout} "Meta AI original pth", the
     * context length ({@code max_sequence_length}, else {@code max_position_embeddings}, else {@code
     * model_max_length}), embedding length, block count, feed-forward length, heads, key/value heads (the heads when
     * absent), {@code attention.layer_norm_epsilon} from {@code rms_norm_eps}; {@code _set_vocab_sentencepiece}. No key
     * carries the rope base, so one other than 10000 is refused, as are rope scaling, attention biases, another
     * activation and a head size other than hidden / heads.
     */
    static final Architecture ORION = Architecture.of("orion", "OrionForCausalLM")
            .tensors(DECODER)
            // OrionModel.set_gguf_parameters, in its order
            .keys(List.of(Architecture.OwnKey.FILE_TYPE, Architecture.OwnKey.META_AI_LAYOUT,
                    HyperParameter.u32("{arch}.context_length", "max_sequence_length", "max_position_embeddings", "model_max_length")
                            .asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size").asRequired(), Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.feed_forward_length", "intermediate_size").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count_kv", "num_key_value_heads", "num_attention_heads").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_epsilon", "rms_norm_eps").asRequired()))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE)
            .requires(List.of("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads"))
            .extras(Architecture.Extras.builder()
                    .configRefused(Map.of("rope_scaling", "the converter writes no rope scaling for orion"))
                    .configValues(new Architecture.ConfigValue("rope_theta", 10000.0, false, "the converter writes no rope base "
                                    + "for orion, and llama.cpp runs 10000"),
                            new Architecture.ConfigValue("attention_bias", Boolean.FALSE, false, "llama.cpp's orion loads no "
                                    + "attention biases"),
                            new Architecture.ConfigValue("hidden_act", "silu", false, "llama.cpp's orion computes SwiGLU")))
            .build();

    /**
     * MosaicML's MPT ({@code MPTForCausalLM}: mpt-7b and its instruct, chat and storywriter models, mpt-7b-8k, mpt-30b;
     * the converter's {@code MPTModel}): {@code transformer.wte} (the output tied to it), per block {@code norm_1},
     * {@code attn.Wqkv} (q, k and v in blocks, kept fused as {@code attn_qkv}), {@code attn.out_proj}, {@code norm_2},
     * {@code ffn.up_proj} and {@code ffn.down_proj} (GELU), {@code norm_f}; LayerNorms without biases, no biases at
     * all, ALiBi. Its own keys in its order, without a file type: context length ({@code max_seq_len}), embedding
     * length ({@code d_model}), block count, feed-forward length 4 x {@code d_model}, heads, then {@code attn_config}'s
     * (key/value heads, the epsilon 1e-5, the clamp, the ALiBi bias maximum); {@code _set_vocab_gpt2}'s vocabulary.
     * What llama.cpp's mpt would not compute is refused ({@link HfGgufExporter}'s MPT check), and so is a folder with
     * only a SentencePiece model (SEA-LION's, which the converter writes with ids of its own).
     */
    static final Architecture MPT = Architecture.of("mpt", "MPTForCausalLM")
            .tensors(List.of(Architecture.TensorName.of("transformer.wte", "token_embd"),
                    Architecture.TensorName.of("lm_head", "output"),
                    Architecture.TensorName.of("transformer.norm_f", "output_norm"),
                    Architecture.TensorName.of("transformer.blocks.{bid}.norm_1", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("transformer.blocks.{bid}.attn.Wqkv", "blk.{bid}.attn_qkv"),
                    Architecture.TensorName.of("transformer.blocks.{bid}.attn.out_proj", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("transformer.blocks.{bid}.norm_2", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("transformer.blocks.{bid}.ffn.up_proj", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("transformer.blocks.{bid}.ffn.down_proj", "blk.{bid}.ffn_down")))
            // MPTModel.set_gguf_parameters, in its order
            .keys(List.of(HyperParameter.u32("{arch}.context_length", "max_seq_len").asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "d_model").asRequired(), Architecture.OwnKey.BLOCK_COUNT,
                    Architecture.OwnKey.MPT_FEED_FORWARD_LENGTH,
                    HyperParameter.u32("{arch}.attention.head_count", "n_heads").asRequired(),
                    Architecture.OwnKey.MPT_ATTENTION_CONFIG))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "d_model", "n_heads", "max_seq_len"))
            .build();

    /**
     * Google's BERT encoder ({@code BertModel}, {@code BertForMaskedLM}: bert-base/large, and the sentence-transformers
     * embedding models built on it, all-MiniLM-L6-v2, bge-small/base/large-en-v1.5, e5, gte and others; the converter's
     * {@code BertModel}): names with or without {@code bert.}, the old {@code LayerNorm.gamma}/{@code beta} names as
     * {@code weight}/{@code bias}; word, learned position ({@code position_embd}, F32) and token type ({@code token_types},
     * F32) embeddings with their LayerNorm ({@code token_embd_norm}); per layer q/k/v with biases, the attention output
     * ({@code attn_output}) and its post-LayerNorm ({@code attn_output_norm}), {@code intermediate.dense} ({@code ffn_up})
     * and {@code output.dense} ({@code ffn_down}) and their post-LayerNorm ({@code layer_output_norm}); no output head (the
     * pooler and the pre-training heads are left out, as the converter leaves them). TextModel's keys, then
     * {@code attention.causal} false and a sentence-transformers folder's pooling type; the vocabulary a WordPiece
     * tokenizer.json ({@link Vocabulary#bert}). llama.cpp's bert computes GELU's tanh approximation where transformers
     * computes the exact one (a difference of about 1e-3 of the output), and only absolute positions.
     */
    /** What llama.cpp's bert computes: GELU, absolute positions, an encoder without cross-attention. */
    private static final Architecture.ConfigValue[] BERT_CONFIG = {
            new Architecture.ConfigValue("hidden_act", "gelu", false, "llama.cpp's bert computes GELU"),
            new Architecture.ConfigValue("position_embedding_type", "absolute", false, "llama.cpp's bert adds absolute position "
                    + "embeddings"),
            new Architecture.ConfigValue("is_decoder", Boolean.FALSE, false, "llama.cpp's bert is an encoder"),
            new Architecture.ConfigValue("add_cross_attention", Boolean.FALSE, false, "llama.cpp's bert has no cross-attention")};

    static final Architecture BERT = Architecture.of("bert", "BertModel", "BertForMaskedLM")
            .tensors(bertNames("", "bert."))
            // BertModel.set_gguf_parameters: TextModel's, then these
            .keys(List.of(Architecture.OwnKey.NOT_CAUSAL, new Architecture.PoolingType(), Architecture.OwnKey.CLASSIFIER_LABELS))
            .vocabulary(Architecture.VocabularyRule.BERT)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "layer_norm_eps"))
            .skips(List.of("embeddings.position_ids", "bert.embeddings.position_ids"))
            .extras(Architecture.Extras.builder()
                    .leftOut(new Architecture.LeftOut(List.of("pooler.", "bert.pooler.", "cls.predictions.", "cls.seq_relationship."),
                            "pooler and pre-training heads"))
                    .suffixRename(".gamma", ".weight")
                    .suffixRename(".beta", ".bias")
                    .configValues(BERT_CONFIG))
            .build();

    /**
     * DistilBERT ({@code DistilBertModel}, {@code DistilBertForMaskedLM}: distilbert-base, msmarco-distilbert and the
     * sentence-transformers models on it; the converter's {@code DistilBertModel}, a {@code BertModel}): BERT's layout
     * under its own names ({@code transformer.layer.N.attention.q_lin/k_lin/v_lin/out_lin}, {@code sa_layer_norm},
     * {@code ffn.lin1/lin2}, {@code output_layer_norm}), with or without {@code distilbert.}, no token type embeddings;
     * the masked-language-model head ({@code vocab_transform}, {@code vocab_layer_norm}, {@code vocab_projector}) left
     * out. Its keys: the LayerNorm epsilon 1e-12 first (the converter writes it before TextModel's, whatever config.json
     * says), then TextModel's from DistilBERT's names ({@code n_layers}, {@code dim}, {@code hidden_dim},
     * {@code n_heads}), then BERT's; BERT's WordPiece vocabulary.
     */
    static final Architecture DISTILBERT = Architecture.of("bert", "DistilBertModel", "DistilBertForMaskedLM")
            .tensors(distilBertNames())
            // DistilBertModel.set_gguf_parameters: the epsilon, then BertModel's (TextModel's, then these)
            .keys(List.of(Architecture.OwnKey.NOT_CAUSAL, new Architecture.PoolingType(), Architecture.OwnKey.CLASSIFIER_LABELS))
            .vocabulary(Architecture.VocabularyRule.BERT)
            .requires(List.of("vocab_size", "max_position_embeddings", "dim", "hidden_dim", "n_heads"))
            .skips(List.of("embeddings.position_ids", "distilbert.embeddings.position_ids"))
            .extras(Architecture.Extras.builder()
                    .leftOut(new Architecture.LeftOut(List.of("vocab_transform.", "vocab_layer_norm.", "vocab_projector."),
                            "masked-language-model head"))
                    .configValues(new Architecture.ConfigValue("activation", "gelu", false, "llama.cpp's bert computes GELU")))
            .build();

    /** DistilBERT's names (gguf-py's {@code distillbert} entries), bare and under {@code distilbert.}. */
    private static List<Architecture.TensorName> distilBertNames() {
        List<Architecture.TensorName> names = new java.util.ArrayList<>();
        for (String p : List.of("", "distilbert.")) {
            names.add(Architecture.TensorName.of(p + "embeddings.word_embeddings", "token_embd"));
            names.add(Architecture.TensorName.of(p + "embeddings.position_embeddings", "position_embd"));
            names.add(Architecture.TensorName.of(p + "embeddings.LayerNorm", "token_embd_norm"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.attention.q_lin", "blk.{bid}.attn_q"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.attention.k_lin", "blk.{bid}.attn_k"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.attention.v_lin", "blk.{bid}.attn_v"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.attention.out_lin", "blk.{bid}.attn_output"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.sa_layer_norm", "blk.{bid}.attn_output_norm"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.ffn.lin1", "blk.{bid}.ffn_up"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.ffn.lin2", "blk.{bid}.ffn_down"));
            names.add(Architecture.TensorName.of(p + "transformer.layer.{bid}.output_layer_norm", "blk.{bid}.layer_output_norm"));
        }
        return List.copyOf(names);
    }

    /**
     * XLM-RoBERTa encoders ({@code XLMRobertaModel}: multilingual-e5-small/base/large, bge-m3, paraphrase-multilingual and
     * other sentence-transformers models on xlm-roberta; the converter's {@code XLMRobertaModel}): BERT's layout (arch
     * {@code bert}) under names with or without {@code roberta.}, the position embeddings without their first
     * {@code pad_token_id + 1} rows (RoBERTa's positions start past the padding id) and the context length as many
     * fewer; the vocabulary the SentencePiece unigram model {@code sentencepiece.bpe.model} as llama.cpp's t5 tokenizer
     * reads it ({@link Vocabulary#xlmRoberta}). {@code XLMRobertaForSequenceClassification} (the rerankers: bge-reranker-base,
     * -large, -v2-m3) adds its classification head, {@code classifier.dense} ({@code cls}) and {@code classifier.out_proj}
     * ({@code cls.output}), which llama.cpp's rank pooling runs on the first token, and the labels of {@code id2label}.
     * jina-embeddings-v3's LoRA adapters ({@code lora_adaptations}) are not converted yet.
     */
    static final Architecture XLM_ROBERTA = Architecture.of("bert", "XLMRobertaModel", "XLMRobertaForSequenceClassification")
            .tensors(concat(bertNames("", "roberta."), List.of(Architecture.TensorName.of("classifier.dense", "cls"),
                    Architecture.TensorName.of("classifier.out_proj", "cls.output"))))
            // XLMRobertaModel.set_gguf_parameters: BertModel's (TextModel's, then these)
            .keys(List.of(Architecture.OwnKey.NOT_CAUSAL, new Architecture.PoolingType(), Architecture.OwnKey.CLASSIFIER_LABELS))
            .vocabulary(Architecture.VocabularyRule.XLM_ROBERTA)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "layer_norm_eps"))
            .skips(List.of("embeddings.position_ids", "roberta.embeddings.position_ids"))
            .extras(Architecture.Extras.builder()
                    .leftOut(new Architecture.LeftOut(List.of("pooler.", "roberta.pooler.", "lm_head."), "pooler and pre-training heads"))
                    .configValues(BERT_CONFIG))
            .build();

    /**
     * Nomic's BERT ({@code NomicBertModel}: nomic-embed-text v1 and v1.5, their remote-code model; the converter's
     * {@code NomicBertModel}): BERT's embeddings without position embeddings ({@code emb_ln} {@code token_embd_norm}),
     * per layer the fused {@code attn.Wqkv} ({@code attn_qkv}: q, k, v in blocks, kept fused), {@code attn.out_proj},
     * {@code norm1} ({@code attn_output_norm}), a SwiGLU MLP ({@code mlp.fc11} {@code ffn_up}, {@code mlp.fc12}
     * {@code ffn_gate}, {@code mlp.fc2} {@code ffn_down}) and {@code norm2} ({@code layer_output_norm}), no biases but
     * the norms'; NEOX rope over whole heads from {@code rotary_emb_base}. TextModel's keys, its context length the
     * positions it was trained for ({@code n_positions} 8192 over {@code max_trained_positions} 2048 is 2048, as the
     * converter rewrites it), then BERT's; BERT's WordPiece vocabulary. The mixture-of-experts model
     * (nomic-embed-text-v2-moe, an XLM-RoBERTa vocabulary) is not converted yet.
     */
    static final Architecture NOMIC_BERT = Architecture.of("nomic-bert", "NomicBertModel")
            .tensors(List.of(Architecture.TensorName.of("embeddings.word_embeddings", "token_embd"),
                    Architecture.TensorName.of("embeddings.token_type_embeddings", "token_types"),
                    Architecture.TensorName.of("emb_ln", "token_embd_norm"),
                    Architecture.TensorName.of("encoder.layers.{bid}.attn.Wqkv", "blk.{bid}.attn_qkv"),
                    Architecture.TensorName.of("encoder.layers.{bid}.attn.out_proj", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("encoder.layers.{bid}.norm1", "blk.{bid}.attn_output_norm"),
                    Architecture.TensorName.of("encoder.layers.{bid}.mlp.fc11", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("encoder.layers.{bid}.mlp.fc12", "blk.{bid}.ffn_gate"),
                    Architecture.TensorName.of("encoder.layers.{bid}.mlp.fc2", "blk.{bid}.ffn_down"),
                    Architecture.TensorName.of("encoder.layers.{bid}.norm2", "blk.{bid}.layer_output_norm")))
            // NomicBertModel.set_gguf_parameters: BertModel's (TextModel's, then these)
            .keys(List.of(Architecture.OwnKey.NOT_CAUSAL, new Architecture.PoolingType(), Architecture.OwnKey.CLASSIFIER_LABELS))
            .vocabulary(Architecture.VocabularyRule.BERT)
            .requires(List.of("vocab_size", "n_embd", "n_head", "n_inner", "n_positions", "layer_norm_epsilon", "rotary_emb_base"))
            .extras(Architecture.Extras.builder()
                    // NomicBertModel.__init__'s asserts (a missing key is its KeyError)
                    .configValues(new Architecture.ConfigValue("activation_function", "swiglu", true, "llama.cpp's nomic-bert "
                                    + "computes a SwiGLU MLP"),
                            new Architecture.ConfigValue("causal", Boolean.FALSE, true, "llama.cpp's nomic-bert attends both ways"),
                            new Architecture.ConfigValue("qkv_proj_bias", Boolean.FALSE, true, "the converter takes a model without "
                                    + "q/k/v biases"),
                            new Architecture.ConfigValue("mlp_fc1_bias", Boolean.FALSE, true, "the converter takes an MLP without biases"),
                            new Architecture.ConfigValue("mlp_fc2_bias", Boolean.FALSE, true, "the converter takes an MLP without biases"),
                            new Architecture.ConfigValue("prenorm", Boolean.FALSE, true, "llama.cpp's nomic-bert normalizes after each "
                                    + "block"),
                            new Architecture.ConfigValue("rotary_emb_fraction", 1.0, true, "llama.cpp's nomic-bert rotates whole heads"),
                            new Architecture.ConfigValue("rotary_emb_interleaved", Boolean.FALSE, true, "llama.cpp's nomic-bert rotates "
                                    + "halves (NEOX), not adjacent pairs")))
            .build();

    /**
     * BERT's tensor names ({@code MODEL_ARCH.BERT}'s in gguf-py) under each of {@code prefixes}: as {@code BertModel}
     * saves them, under {@code bert.} as {@code BertForMaskedLM} does, under {@code roberta.} as some XLM-RoBERTa
     * checkpoints do (the converter's {@code modify_tensors} take those prefixes off).
     */
    private static List<Architecture.TensorName> bertNames(String... prefixes) {
        List<Architecture.TensorName> names = new java.util.ArrayList<>();
        for (String p : prefixes) {
            names.add(Architecture.TensorName.of(p + "embeddings.word_embeddings", "token_embd"));
            names.add(Architecture.TensorName.of(p + "embeddings.position_embeddings", "position_embd"));
            names.add(Architecture.TensorName.of(p + "embeddings.token_type_embeddings", "token_types"));
            names.add(Architecture.TensorName.of(p + "embeddings.LayerNorm", "token_embd_norm"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.attention.self.query", "blk.{bid}.attn_q"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.attention.self.key", "blk.{bid}.attn_k"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.attention.self.value", "blk.{bid}.attn_v"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.attention.output.dense", "blk.{bid}.attn_output"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.attention.output.LayerNorm", "blk.{bid}.attn_output_norm"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.intermediate.dense", "blk.{bid}.ffn_up"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.output.dense", "blk.{bid}.ffn_down"));
            names.add(Architecture.TensorName.of(p + "encoder.layer.{bid}.output.LayerNorm", "blk.{bid}.layer_output_norm"));
        }
        return List.copyOf(names);
    }

    /** GPT-2's tensor names, as {@code GPT2Model.from_pretrained} saves them (no prefix) and as {@code GPT2LMHeadModel} does. */
    private static List<Architecture.TensorName> gpt2Names() {
        List<Architecture.TensorName> names = new java.util.ArrayList<>();
        names.add(Architecture.TensorName.of("lm_head", "output"));
        for (String p : List.of("", "transformer.")) {
            names.add(Architecture.TensorName.of(p + "wte", "token_embd"));
            names.add(Architecture.TensorName.of(p + "wpe", "position_embd"));
            names.add(Architecture.TensorName.of(p + "ln_f", "output_norm"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.ln_1", "blk.{bid}.attn_norm"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.attn.c_attn", "blk.{bid}.attn_qkv"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.attn.c_proj", "blk.{bid}.attn_output"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.ln_2", "blk.{bid}.ffn_norm"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.mlp.c_fc", "blk.{bid}.ffn_up"));
            names.add(Architecture.TensorName.of(p + "h.{bid}.mlp.c_proj", "blk.{bid}.ffn_down"));
        }
        return List.copyOf(names);
    }

    /**
     * SmolLM3 ({@code SmolLM3ForCausalLM}, the converter's {@code SmolLM3Model}, a
     * {@code LlamaModel} under another name): llama's tensors, rows, keys, vocabulary and llama3
     * rope tensor. Its every fourth layer has no rotary embedding, which llama.cpp's smollm3
     * graph lays out by itself: a config.json that says otherwise is refused.
     */
    static final Architecture SMOLLM3 = Architecture.of("smollm3", "SmolLM3ForCausalLM")
            .tensors(DECODER)
            .ropeRows(LLAMA.ropeRows())
            .keys(LLAMA.extraKeys())
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .llama3Rope()
            .extras(Architecture.Extras.builder().noRope(new Architecture.NoRopeLayers(4)))
            .build();

    /**
     * Mixtral ({@code MixtralForCausalLM}, which the converter takes as {@code LlamaModel}): llama
     * with each block's experts {@code block_sparse_moe.experts.{x}.w1/w2/w3} stacked in that
     * order into {@code ffn_gate_exps}, {@code ffn_down_exps}, {@code ffn_up_exps}
     * ({@code LlamaModel.modify_tensors}, through the merged names {@code layers.{bid}.feed_forward.experts.w*})
     * and the router {@code block_sparse_moe.gate}; llama's keys, rows and vocabulary, with
     * TextModel's expert keys. llama.cpp's llama graph renormalizes the chosen experts' weights,
     * as Mixtral does.
     */
    static final Architecture MIXTRAL = Architecture.of("llama", "MixtralForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.block_sparse_moe.gate", "blk.{bid}.ffn_gate_inp"),
                    Architecture.TensorName.of("layers.{bid}.feed_forward.experts.w1", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("layers.{bid}.feed_forward.experts.w2", "blk.{bid}.ffn_down_exps"),
                    Architecture.TensorName.of("layers.{bid}.feed_forward.experts.w3", "blk.{bid}.ffn_up_exps"))))
            .ropeRows(LLAMA.ropeRows())
            .keys(LLAMA.extraKeys())
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .requires(List.of("num_local_experts", "num_experts_per_tok", "intermediate_size"))
            .llama3Rope()
            .experts(new Architecture.Experts("model.layers.{bid}.block_sparse_moe.experts.{xid}.{proj}.weight",
                    List.of(new Architecture.Experts.Projection("w1", true), new Architecture.Experts.Projection("w2", false),
                            new Architecture.Experts.Projection("w3", true)),
                    "layers.{bid}.feed_forward.experts.{proj}.weight",
                    // LlamaModel.modify_tensors reads hparams["num_local_experts"]
                    HyperParameter.u32("{arch}.expert_count", "num_local_experts").asRequired(),
                    "intermediate_size", "block_sparse_moe.gate.weight", List.of()))
            .build();

    /** The tensors of a Qwen2 decoder ({@code MODEL_ARCH.QWEN2}'s; the biases map with their weights). */
    private static final List<Architecture.TensorName> QWEN2_TENSORS = DECODER;

    /**
     * What a Qwen folder's config.json must say: everything the GGUF's keys, the vocabulary's
     * size and the tensors' shapes come from (transformers' Qwen2Config/Qwen3Config defaults,
     * which the converter would use for a missing one, are not guessed).
     */
    private static final List<String> QWEN2_REQUIRED = List.of("vocab_size", "max_position_embeddings", "hidden_size",
            "intermediate_size", "num_attention_heads", "num_key_value_heads", "rms_norm_eps", "rope_theta");

    static final Architecture QWEN2 = Architecture.of("qwen2", "Qwen2ForCausalLM")
            .tensors(QWEN2_TENSORS)
            // Qwen2Model.set_gguf_parameters: TextModel's, then _try_set_pooling_type
            .keys(List.of(new Architecture.PoolingType()))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_ELSE_GPT2)
            .requires(QWEN2_REQUIRED)
            .build();

    static final Architecture QWEN3 = Architecture.of("qwen3", "Qwen3ForCausalLM", "Qwen3Model")
            .tensors(concat(QWEN2_TENSORS, QK_NORMS))
            // Qwen3Model.set_gguf_parameters: Qwen2Model's (reranker keys aside)
            .keys(List.of(new Architecture.PoolingType()))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_ELSE_GPT2)
            // head_dim: key_length/value_length, and Qwen3's q/k/v widths (heads x head_dim, not hidden_size)
            .requires(concat(QWEN2_REQUIRED, List.of("head_dim")))
            // Qwen3Model._is_qwen3_reranker: a classifier head cut from lm_head, pooling RANK, a rerank template
            .refuses(List.of(new Architecture.Variant("qwen3-reranker", "a Qwen3 reranker (cls.output from lm_head's yes/no rows, "
                            + "pooling type rank, a rerank chat template)"),
                    new Architecture.Variant("qwen3-vl-reranker", "a Qwen3-VL reranker")))
            .build();

    /** The norm before the sparse block, its router and the experts' stacks (Qwen2MoeModel's, which Qwen3MoeModel inherits). */
    private static final List<Architecture.TensorName> QWEN_MOE_FFN = List.of(FFN_NORM,
            Architecture.TensorName.of("model.layers.{bid}.mlp.gate", "blk.{bid}.ffn_gate_inp"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"));

    /** The expert projections as the converters stack them: down (its columns the width), gate, up (their rows). */
    private static final List<Architecture.Experts.Projection> DOWN_GATE_UP = List.of(
            new Architecture.Experts.Projection("down_proj", false),
            new Architecture.Experts.Projection("gate_proj", true),
            new Architecture.Experts.Projection("up_proj", true));

    /**
     * Qwen2MoeModel's experts, stacked per block as down, gate, up, for llama.cpp's graph
     * {@code arch}: experts in every block, the chosen experts' weights renormalized or not
     * (config.json's {@code norm_topk_prob} must say the same; transformers' default is false).
     */
    /** transformers 5's Qwen MoE experts, one tensor per projection and block, which Qwen2MoeModel takes too. */
    private static final Architecture.FusedExperts QWEN_FUSED_EXPERTS =
            new Architecture.FusedExperts("mlp.experts.", "moe_intermediate_size", "num_experts");

    private static Architecture.Experts qwenExperts(String arch, boolean renormalized) {
        Architecture.ConfigValue norm = renormalized
                ? new Architecture.ConfigValue("norm_topk_prob", Boolean.TRUE, true, "llama.cpp's " + arch
                        + " always renormalizes the chosen experts' weights (transformers' default is false)")
                : new Architecture.ConfigValue("norm_topk_prob", Boolean.FALSE, false, "llama.cpp's " + arch
                        + " never renormalizes the chosen experts' weights");
        return new Architecture.Experts("model.layers.{bid}.mlp.experts.{xid}.{proj}.weight",
                DOWN_GATE_UP,
                "model.layers.{bid}.mlp.experts.{proj}.weight",
                HyperParameter.u32("{arch}.expert_count", "num_local_experts", "num_experts").asRequired(),
                "moe_intermediate_size", "mlp.gate.weight",
                List.of(norm,
                        new Architecture.ConfigValue("decoder_sparse_step", 1L, false, "llama.cpp's " + arch + " has "
                                + "experts in every block"),
                        new Architecture.ConfigValue("mlp_only_layers", List.of(), false, "llama.cpp's " + arch + " has "
                                + "experts in every block, no dense one")));
    }

    /**
     * Qwen3-MoE ({@code Qwen3MoeModel}, a {@code Qwen2MoeModel}): Qwen3's attention (per-head q/k
     * RMS norms, no biases), a router ({@code mlp.gate}, kept F32 as every {@code ffn_gate_inp}) and
     * each block's experts stacked per projection into {@code ffn_down_exps}, {@code ffn_gate_exps},
     * {@code ffn_up_exps} (that order: {@code Qwen2MoeModel.modify_tensors}); no dense feed-forward.
     * TextModel's keys (with {@code expert_count} and {@code expert_used_count}), then
     * {@code expert_feed_forward_length}; no pooling type; {@code TextModel.set_vocab}, byte-level BPE.
     */
    static final Architecture QWEN3MOE = Architecture.of("qwen3moe", "Qwen3MoeForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, QK_NORMS, QWEN_MOE_FFN))
            // Qwen2MoeModel.set_gguf_parameters: TextModel's, then the experts' width and the shared expert's
            .keys(List.of(HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size"),
                    HyperParameter.u32("{arch}.expert_shared_feed_forward_length", "shared_expert_intermediate_size")))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(concat(QWEN2_REQUIRED, List.of("head_dim", "num_experts", "num_experts_per_tok", "moe_intermediate_size")))
            // llama.cpp's qwen3moe graph: every block sparse, the top-k weights renormalized (norm_w true)
            .experts(qwenExperts("qwen3moe", true))
            .extras(Architecture.Extras.builder().fusedExperts(QWEN_FUSED_EXPERTS))
            .build();

    /**
     * Qwen2-MoE ({@code Qwen2MoeForCausalLM}, the converter's {@code Qwen2MoeModel}; Qwen1.5-MoE,
     * Qwen2-57B-A14B): qwen2's attention (q/k/v biases, no q/k norms, no permutation) and
     * qwen3moe's experts stacked per block with the F32 router, plus a shared expert in every
     * block ({@code mlp.shared_expert.*_proj} → {@code ffn_*_shexp}) and its sigmoid gate
     * ({@code mlp.shared_expert_gate} → {@code ffn_gate_inp_shexp}, F32 as every router); the
     * same keys; {@code TextModel.set_vocab}. llama.cpp's qwen2moe graph never renormalizes the
     * chosen experts' weights, as transformers' default ({@code norm_topk_prob} false) does not:
     * true is refused.
     */
    static final Architecture QWEN2MOE = Architecture.of("qwen2moe", "Qwen2MoeForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, QWEN_MOE_FFN, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_expert_gate", "blk.{bid}.ffn_gate_inp_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_expert.gate_proj", "blk.{bid}.ffn_gate_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_expert.up_proj", "blk.{bid}.ffn_up_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_expert.down_proj", "blk.{bid}.ffn_down_shexp"))))
            .keys(QWEN3MOE.extraKeys())
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(concat(QWEN2_REQUIRED, List.of("num_experts", "num_experts_per_tok", "moe_intermediate_size",
                    "shared_expert_intermediate_size")))
            .experts(qwenExperts("qwen2moe", false))
            .extras(Architecture.Extras.builder().fusedExperts(QWEN_FUSED_EXPERTS))
            .build();

    /**
     * OLMoE ({@code OlmoeForCausalLM}, the converter's {@code OlmoeModel}): a pre-norm decoder with
     * q/k RMS norms over the whole projection (OLMo 2's, F32), no permutation, and Qwen2-MoE's block
     * without a shared expert (the router F32, the experts stacked down, gate, up); TextModel's
     * keys with {@code layer_norm_rms_epsilon} set to 1e-5 whatever config.json says (so another
     * value is refused: llama.cpp would run with 1e-5); {@code TextModel.set_vocab}.
     */
    static final Architecture OLMOE = Architecture.of("olmoe", "OlmoeForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, QK_NORMS, QWEN_MOE_FFN))
            // OlmoeModel.set_gguf_parameters: TextModel's, then the epsilon again
            .keys(List.of(Architecture.OwnKey.RMS_EPS_1E5))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "num_experts", "num_experts_per_tok", "rope_theta"))
            .experts(new Architecture.Experts("model.layers.{bid}.mlp.experts.{xid}.{proj}.weight", DOWN_GATE_UP,
                    "model.layers.{bid}.mlp.experts.{proj}.weight",
                    HyperParameter.u32("{arch}.expert_count", "num_local_experts", "num_experts").asRequired(),
                    "intermediate_size", "mlp.gate.weight",
                    List.of(new Architecture.ConfigValue("norm_topk_prob", Boolean.FALSE, false, "llama.cpp's olmoe never "
                                    + "renormalizes the chosen experts' weights"),
                            new Architecture.ConfigValue("rms_norm_eps", 1e-5, false, "the converter writes 1e-5 whatever "
                                    + "config.json says"))))
            .extras(Architecture.Extras.builder().configRefused(Map.of("clip_qkv", "llama.cpp's olmoe reads no clamp of "
                    + "q, k and v from the converter's file")))
            .build();

    /**
     * Baidu's ERNIE 4.5 dense models ({@code Ernie4_5ForCausalLM}, {@code Ernie4_5_ForCausalLM}, the
     * converter's {@code Ernie4_5Model}) as transformers saves them: llama's tensor names without
     * the permutation (the rope is on adjacent pairs already), heads of {@code head_dim};
     * TextModel's keys only; the SentencePiece vocabulary with {@code add_space_prefix} from
     * tokenizer_config.json. PaddlePaddle-layout checkpoints ({@code ernie.*}, fused
     * {@code qkv_proj}/{@code up_gate_proj}) are not converted (their names are not mapped: exit 6).
     */
    static final Architecture ERNIE4_5 = Architecture.of("ernie4_5", "Ernie4_5ForCausalLM", "Ernie4_5_ForCausalLM")
            .tensors(DECODER)
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_SPACE_PREFIX_FROM_CONFIG)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "rope_theta"))
            .build();

    /**
     * ERNIE 4.5 MoE ({@code Ernie4_5_MoeForCausalLM}, the converter's {@code Ernie4_5MoeModel}; the
     * 21B-A3B and 300B-A47B as transformers saves them): ernie4_5's attention, {@code moe_layer_start_index}
     * leading dense blocks, then a router ({@code mlp.gate}, F32), the selection bias
     * ({@code mlp.moe_statics.e_score_correction_bias}, F32), the experts stacked as gate, up, down
     * (that order: the converter's) and the shared experts; the multi-token-prediction tensors
     * ({@code model.mtp_*}) left out. TextModel's keys, then the expert count and used count, the MoE
     * interval, the dense lead, the experts' width, the shared experts' count and their width as the
     * converter computes it ({@code intermediate_size // num_key_value_heads}, which must be their
     * real width or llama.cpp would not load the file).
     */
    static final Architecture ERNIE4_5_MOE = Architecture.of("ernie4_5-moe", "Ernie4_5_MoeForCausalLM")
            .tensors(parts(DECODER, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.mlp.gate", "blk.{bid}.ffn_gate_inp"),
                    // Ernie4_5MoeModel.modify_tensors renames e_score_correction_bias to e_score_correction.bias
                    Architecture.TensorName.of("model.layers.{bid}.mlp.moe_statics.e_score_correction", "blk.{bid}.exp_probs_b"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_experts.gate_proj", "blk.{bid}.ffn_gate_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_experts.up_proj", "blk.{bid}.ffn_up_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.shared_experts.down_proj", "blk.{bid}.ffn_down_shexp"))))
            // Ernie4_5MoeModel.set_gguf_parameters: TextModel's, then these
            .keys(List.of(HyperParameter.u32("{arch}.expert_count", "moe_num_experts").asRequired(),
                    HyperParameter.u32("{arch}.expert_used_count", "moe_k").asRequired(),
                    HyperParameter.u32("{arch}.interleave_moe_layer_step", "moe_layer_interval").asRequired(),
                    HyperParameter.u32("{arch}.leading_dense_block_count", "moe_layer_start_index").asRequired(),
                    HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size"),
                    HyperParameter.u32("{arch}.expert_shared_count", "moe_num_shared_experts"),
                    Architecture.OwnKey.ERNIE_SHARED_FEED_FORWARD_LENGTH))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_SPACE_PREFIX_FROM_CONFIG)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "rope_theta", "moe_num_experts", "moe_k", "moe_layer_interval",
                    "moe_layer_start_index", "moe_intermediate_size"))
            .experts(new Architecture.Experts("model.layers.{bid}.mlp.experts.{xid}.{proj}.weight", List.of(
                    new Architecture.Experts.Projection("gate_proj", true), new Architecture.Experts.Projection("up_proj", true),
                    new Architecture.Experts.Projection("down_proj", false)),
                    "model.layers.{bid}.mlp.experts.{proj}.weight",
                    HyperParameter.u32("{arch}.expert_count", "moe_num_experts").asRequired(), "moe_intermediate_size", "mlp.gate.weight",
                    List.of(new Architecture.ConfigValue("moe_layer_interval", 1L, true, "every block after the leading dense ones "
                            + "has experts in the layouts converted here")),
                    Optional.of("moe_layer_start_index"), false))
            .extras(Architecture.Extras.builder().leftOut(new Architecture.LeftOut(List.of("model.mtp_block.", "model.mtp_emb_norm.",
                    "model.mtp_hidden_norm.", "model.mtp_linear_proj."), "multi-token-prediction layers")))
            .build();

    /** The tensors of a Gemma decoder ({@code MODEL_ARCH.GEMMA}'s; it has no output.weight: the embeddings are tied). */
    private static final List<Architecture.TensorName> GEMMA_TENSORS = parts(List.of(TOKEN_EMBD, OUTPUT_NORM), ATTENTION,
            List.of(FFN_NORM), MLP);

    /**
     * GemmaModel.set_gguf_parameters, which does not call TextModel's: no rope keys (llama.cpp
     * takes its default base, 10000), head_count_kv from the attention heads when the config
     * has no key/value heads, key/value length from head_dim, then the file type.
     */
    private static final List<Architecture.FamilyKey> GEMMA_KEYS = List.of(
            HyperParameter.u32("{arch}.context_length", "max_position_embeddings").asRequired(),
            HyperParameter.u32("{arch}.embedding_length", "hidden_size").asRequired(),
            Architecture.OwnKey.BLOCK_COUNT,
            HyperParameter.u32("{arch}.feed_forward_length", "intermediate_size").asRequired(),
            HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads").asRequired(),
            HyperParameter.u32("{arch}.attention.head_count_kv", "num_key_value_heads", "num_attention_heads").asRequired(),
            HyperParameter.f32("{arch}.attention.layer_norm_rms_epsilon", "rms_norm_eps").asRequired(),
            HyperParameter.u32("{arch}.attention.key_length", "head_dim").asRequired(),
            HyperParameter.u32("{arch}.attention.value_length", "head_dim").asRequired(),
            Architecture.OwnKey.FILE_TYPE);

    /**
     * What a Gemma folder's config.json must say: the keys the converter reads directly
     * ({@code hparams[...]}: transformers' GemmaConfig/Gemma2Config defaults, which it would
     * take for a missing one, are not guessed) and the vocabulary size.
     */
    private static final List<String> GEMMA_REQUIRED = List.of("vocab_size", "max_position_embeddings", "hidden_size",
            "intermediate_size", "num_attention_heads", "rms_norm_eps", "head_dim");

    /**
     * GemmaModel.modify_tensors: lm_head.weight dropped (llama.cpp reads the output from
     * token_embd), 1 added to every {@code *norm.weight} (Gemma's RMSNorm scales by 1 + w).
     */
    private static final List<String> GEMMA_SKIPPED = List.of("lm_head.weight");
    private static final List<Architecture.Shift> GEMMA_SHIFTS = List.of(new Architecture.Shift("norm.weight", 1.0f));

    static final Architecture GEMMA = Architecture.of("gemma", "GemmaForCausalLM")
            .tensors(GEMMA_TENSORS)
            .keys(GEMMA_KEYS)
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.GEMMA)
            .requires(GEMMA_REQUIRED)
            .skips(GEMMA_SKIPPED)
            .shifts(GEMMA_SHIFTS)
            .build();

    /**
     * Gemma2: MODEL_ARCH.GEMMA2 has no FFN_NORM, so post_attention_layernorm is the
     * post-attention norm and pre_feedforward_layernorm takes the name ffn_norm; a
     * post-feedforward norm follows the FFN.
     */
    static final Architecture GEMMA2 = Architecture.of("gemma2", "Gemma2ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT_NORM), ATTENTION, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.pre_feedforward_layernorm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm")), MLP))
            // Gemma2Model.set_gguf_parameters: Gemma's, then the two soft-caps and the sliding window
            .keys(concat(GEMMA_KEYS, List.of(
                    HyperParameter.f32("{arch}.attn_logit_softcapping", "attn_logit_softcapping").asRequired(),
                    HyperParameter.f32("{arch}.final_logit_softcapping", "final_logit_softcapping").asRequired(),
                    HyperParameter.u32("{arch}.attention.sliding_window", "sliding_window").asRequired())))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_NO_SPACE_PREFIX)
            .requires(concat(GEMMA_REQUIRED, List.of("attn_logit_softcapping", "final_logit_softcapping", "sliding_window")))
            .skips(GEMMA_SKIPPED)
            .shifts(GEMMA_SHIFTS)
            .build();

    /**
     * Gemma 3's text model ({@code Gemma3Model}, for {@code Gemma3ForCausalLM} and the text part of
     * {@code Gemma3ForConditionalGeneration}): gemma2's four norms per block with per-head q/k
     * RMS norms (MODEL_ARCH.GEMMA3 has no FFN_NORM: pre_feedforward_layernorm is ffn_norm), an
     * output head when the checkpoint has one (the converter does not drop lm_head for gemma3),
     * 1 added to every {@code *norm.weight} (q/k norms too: Gemma3RMSNorm scales by 1 + w).
     */
    private static final List<Architecture.TensorName> GEMMA3_TENSORS = parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM),
            ATTENTION, QK_NORMS, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.pre_feedforward_layernorm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm")), MLP);

    /**
     * Gemma3TextConfig's defaults (transformers 4.50 to 5.x) of the keys the converter reads
     * and Gemma 3's own config files leave out (gemma-3-4b-it's text_config names only the
     * sizes, the layer count, the rope scaling and the sliding window). The sizes and the layer
     * count take no default: a folder without them is not taken for gemma-2-2b's, whose
     * sizes Gemma3TextConfig's defaults are.
     */
    /** The config.json keys of the local layers' rope base, first present wins ({@code TextModel.__init__}'s list). */
    private static final List<String> LOCAL_ROPE_THETA = List.of("local_rope_theta", "rope_local_theta", "rope_theta_local",
            "swa_rope_theta", "rope_local_base_freq");

    private static final Map<String, Object> GEMMA3_DEFAULTS = Map.ofEntries(
            Map.entry("vocab_size", 262208L), Map.entry("max_position_embeddings", 131072L),
            Map.entry("num_attention_heads", 8L), Map.entry("num_key_value_heads", 4L), Map.entry("head_dim", 256L),
            Map.entry("rms_norm_eps", 1e-6), Map.entry("rope_theta", 1_000_000.0), Map.entry("rope_local_base_freq", 10_000.0),
            Map.entry("sliding_window", 4096L), Map.entry("sliding_window_pattern", 6L), Map.entry("query_pre_attn_scalar", 256L));

    /** Gemma3Model.set_gguf_parameters' keys over TextModel's, in its order. */
    private static final List<Architecture.FamilyKey> GEMMA3_KEYS = List.of(HyperParameter.u32("{arch}.context_length", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_rms_epsilon", "rms_norm_eps").asRequired(),
                    HyperParameter.u32("{arch}.attention.key_length", "head_dim").asRequired(),
                    HyperParameter.u32("{arch}.attention.value_length", "head_dim").asRequired(),
                    Architecture.OwnKey.ROPE_FREQ_BASE,
                    Architecture.OwnKey.FINAL_LOGIT_SOFTCAPPING,
                    Architecture.OwnKey.SLIDING_WINDOW_UNLESS_ALL_GLOBAL,
                    HyperParameter.u32("{arch}.attention.head_count_kv", "num_key_value_heads").asRequired());

    /**
     * Gemma3Model.set_gguf_parameters: TextModel's keys (with {@code rope.freq_base_swa} from
     * the local rope base and a linear rope scaling), then these over them in its order; a key
     * TextModel wrote keeps its place, as gguf-py's writer keeps it. No attention soft-cap (the
     * converter asserts there is none).
     */
    static final Architecture GEMMA3 = Architecture.of("gemma3", "Gemma3ForCausalLM", "Gemma3ForConditionalGeneration")
            .tensors(GEMMA3_TENSORS)
            .keys(GEMMA3_KEYS)
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_NO_SPACE_PREFIX_ELSE_GPT2)
            .requires(List.of("hidden_size", "intermediate_size"))
            .shifts(GEMMA_SHIFTS)
            .extras(Architecture.Extras.builder().configDefaults(GEMMA3_DEFAULTS)
                    // Gemma3Model.modify_tensors: language_model. removed; the vision tower and projector skipped
                    .multimodal(new Architecture.MultimodalText("language_model.", List.of("multi_modal_projector.",
                            "vision_tower.", "multimodal_projector.", "vision_model."),
                            "vision tower and multimodal projector"))
                    .trimEmbeddings()
                    // llama.cpp's gemma3: swa_period 6 unless the file says otherwise
                    .slidingWindow(new Architecture.SlidingWindow(6, LOCAL_ROPE_THETA, true)))
            .build();

    /**
     * EmbeddingGemma ({@code Gemma3TextModel}: google/embeddinggemma-300m, the converter's {@code EmbeddingGemma}, a
     * {@code Gemma3Model}): Gemma 3's text model with bidirectional attention, saved without {@code model.} (the
     * base model's names); Gemma 3's tensors, norm shifts, keys and vocabulary under arch {@code gemma-embedding}, then
     * the sliding window as config.json gives it and the sentence-transformers pooling type. llama.cpp's
     * gemma-embedding attends both ways within half the window on each side in its local layers, as transformers'
     * bidirectional sliding window does; it scales the queries by 1/sqrt(head_dim) whatever
     * {@code query_pre_attn_scalar} says. The sentence-transformers Dense modules after the pooling are left out, as the
     * converter leaves them without its {@code --sentence-transformers-dense-modules}.
     */
    static final Architecture GEMMA_EMBEDDING = Architecture.of("gemma-embedding", "Gemma3TextModel")
            .tensors(GEMMA3_TENSORS)
            // EmbeddingGemma.set_gguf_parameters: Gemma3Model's, then these
            .keys(concat(GEMMA3_KEYS, List.of(Architecture.OwnKey.SLIDING_WINDOW, new Architecture.PoolingType())))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_NO_SPACE_PREFIX_ELSE_GPT2)
            .requires(List.of("hidden_size", "intermediate_size"))
            .shifts(GEMMA_SHIFTS)
            .extras(Architecture.Extras.builder().configDefaults(GEMMA3_DEFAULTS)
                    .trimEmbeddings()
                    .slidingWindow(new Architecture.SlidingWindow(6, LOCAL_ROPE_THETA, true)))
            .build();

    /**
     * Phi-3 ({@code Phi3MiniModel}): fused q/k/v ({@code qkv_proj}, rows q then k then v) and
     * fused gate/up ({@code gate_up_proj}, rows gate then up) kept fused, as llama.cpp loads
     * them; no row permutation (phi3's rope is NEOX, Hugging Face's rotate-half); its own
     * {@code set_gguf_parameters}, which writes none of TextModel's keys but these, in this order.
     */
    static final Architecture PHI3 = Architecture.of("phi3", "Phi3ForCausalLM")
            .tensors(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM, ATTN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.qkv_proj", "blk.{bid}.attn_qkv"),
                    ATTN_OUTPUT, FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.mlp.gate_up_proj", "blk.{bid}.ffn_up"),
                    FFN_DOWN))
            .keys(List.of(
                    HyperParameter.u32("{arch}.context_length", "n_positions", "max_position_embeddings").asRequired(),
                    HyperParameter.u32("{arch}.rope.scaling.original_context_length", "original_max_position_embeddings")
                            .asRequired(),
                    HyperParameter.u32("{arch}.embedding_length", "hidden_size", "n_embd").asRequired(),
                    HyperParameter.u32("{arch}.feed_forward_length", "intermediate_size").asRequired(),
                    Architecture.OwnKey.BLOCK_COUNT,
                    HyperParameter.u32("{arch}.attention.head_count", "num_attention_heads", "n_head").asRequired(),
                    HyperParameter.u32("{arch}.attention.head_count_kv", "num_key_value_heads", "n_head_kv").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_rms_epsilon", "rms_norm_eps").asRequired(),
                    Architecture.OwnKey.PARTIAL_ROPE_DIMENSION_COUNT,
                    Architecture.OwnKey.ROPE_FREQ_BASE,
                    Architecture.OwnKey.FILE_TYPE,
                    Architecture.OwnKey.SLIDING_WINDOW))
            .ownKeysOnly()
            .vocabulary(Architecture.VocabularyRule.PHI3)
            // transformers' Phi3Config defaults are not guessed; partial_rotary_factor (1.0) and
            // sliding_window (none, written 0) default the same in the converter and the config class
            .requires(List.of("vocab_size", "max_position_embeddings", "original_max_position_embeddings", "hidden_size",
                    "intermediate_size", "num_attention_heads", "num_key_value_heads", "rms_norm_eps", "rope_theta"))
            .build();

    /**
     * OLMo 2 ({@code Olmo2ForCausalLM}, the converter's {@code Olmo2Model}, a {@code TextModel}):
     * no norm before attention or MLP but one after each ({@code post_attention_layernorm}
     * {@code post_attention_norm}, {@code post_feedforward_layernorm} {@code post_ffw_norm}),
     * q/k RMS norms over the whole projection ({@code attn_q_norm}/{@code attn_k_norm}, F32);
     * no permutation (llama.cpp's olmo2 rope is NEOX); TextModel's keys (its yarn included);
     * {@code TextModel.set_vocab} (byte-level BPE tokenizer.json). OLMo 3
     * ({@code Olmo3ForCausalLM}, the same converter class): with a {@code sliding_window} in
     * config.json, the window and which layers have it ({@code attention.sliding_window_pattern},
     * from {@code layer_types}, else every fourth layer global) after TextModel's keys.
     */
    static final Architecture OLMO2 = Architecture.of("olmo2", "Olmo2ForCausalLM", "Olmo3ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION.subList(1, ATTENTION.size()), QK_NORMS,
                    List.of(Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
                            Architecture.TensorName.of("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm")),
                    MLP))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            // Olmo2Model.set_gguf_parameters: TextModel's, then Olmo 3's window keys
            .keys(List.of(Architecture.OwnKey.SLIDING_WINDOW_PATTERN_WHEN_WINDOWED))
            .requires(QWEN2_REQUIRED)
            .build();

    /**
     * OpenAI's gpt-oss ({@code GptOssForCausalLM}, the converter's {@code GptOssModel}):
     * q/k/v/o with biases, no permutation (NEOX rope), a learned attention sink per head
     * ({@code self_attn.sinks} → {@code attn_sinks}, F32), {@code post_attention_layernorm} as
     * {@code post_attention_norm} (the norm before the experts), a router with a bias
     * ({@code mlp.router} → {@code ffn_gate_inp}, F32), and the experts packed as transformers
     * holds them ({@link Architecture.PackedExperts}): split, transposed and named
     * {@code ffn_gate_exps}, {@code ffn_up_exps}, {@code ffn_down_exps} with their biases, or a
     * published MXFP4 checkpoint's blocks repacked into ggml's MXFP4 unchanged. Local and global
     * layers alternate (layer 0 local: llama.cpp's swa pattern 2, the converter writes no
     * pattern). TextModel's keys (a yarn rope scaling included), then
     * {@code attention.sliding_window} and {@code expert_feed_forward_length}
     * ({@code intermediate_size}); {@code TextModel.set_vocab}.
     */
    static final Architecture GPT_OSS = Architecture.of("gpt-oss", "GptOssForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(
                    // stored without a suffix; GptOssModel.modify_tensors adds ".weight"
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.sinks", "blk.{bid}.attn_sinks.weight"),
                    Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.router", "blk.{bid}.ffn_gate_inp"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"))))
            // GptOssModel.set_gguf_parameters: TextModel's, then these two
            .keys(List.of(HyperParameter.u32("{arch}.attention.sliding_window", "sliding_window").asRequired(),
                    HyperParameter.u32("{arch}.expert_feed_forward_length", "intermediate_size").asRequired()))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(concat(QWEN2_REQUIRED, List.of("head_dim", "num_local_experts", "num_experts_per_tok")))
            .extras(Architecture.Extras.builder().slidingWindow(new Architecture.SlidingWindow(2, LOCAL_ROPE_THETA, false))
                    .packedExperts(new Architecture.PackedExperts("model.layers.{bid}.mlp.experts.", "mlp.router.weight", "num_local_experts",
                            "intermediate_size", List.of(new Architecture.ConfigValue("swiglu_limit", 7.0, false,
                            "llama.cpp's gpt-oss clamps the experts' SwiGLU at 7 (transformers' default)")))))
            .build();

    /**
     * Mistral Small 3.x and its kin ({@code Mistral3ForConditionalGeneration}: Mistral Small
     * 3.1 and 3.2 and checkpoints built on them; the converter's {@code Mistral3Model}, whose text
     * part is a {@code LlamaModel} under the arch {@code mistral3}): the text model of the
     * multimodal checkpoint ({@code text_config} over the top level, {@code language_model.}
     * removed from the names, the vision tower and projector left out) written as llama writes
     * it: q/k rows permuted, llama's keys, its vocabulary rule, a llama3 rope as
     * {@code rope_freqs}. Ministral 3 ({@code model_type} ministral3 in the text config, and its text-only
     * {@code Ministral3ForCausalLM}: Ministral 3 3B-14B, Devstral Small 2): yarn (its {@code mscale_all_dim}
     * as the log multiplier, {@code mscale} 1) with llama 4's attention temperature
     * ({@code llama_4_scaling_beta}), two keys after llama's. Mistral 4 (a DeepSeek-V2 layout) is
     * refused, and so is a {@code sliding_window}, which llama.cpp's mistral3 does not apply.
     */
    static final Architecture MISTRAL3 = Architecture.of("mistral3", "Mistral3ForConditionalGeneration", "Ministral3ForCausalLM")
            .tensors(DECODER)
            .ropeRows(LLAMA.ropeRows())
            // Ministral3Model.set_gguf_parameters: LlamaModel's, then (ministral3 only) the yarn log multiplier and temperature
            .keys(concat(LLAMA.extraKeys(), List.of(Architecture.OwnKey.MINISTRAL3_SCALING)))
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .llama3Rope()
            // read raw by the converter without transformers; MistralConfig's defaults are not guessed
            .requires(QWEN2_REQUIRED)
            .refuses(List.of(new Architecture.Variant("mistral4", "Mistral 4 (DeepSeek-V2's layout, arch mistral4)")))
            .extras(Architecture.Extras.builder()
                    // Ministral3Model.modify_tensors: language_model. removed; the vision tower and projector skipped
                    .multimodal(new Architecture.MultimodalText("language_model.", List.of("vision_tower.", "multi_modal_projector.",
                            "model.vision_tower.", "model.multi_modal_projector."), "vision tower and multimodal projector"))
                    .configRefused(Map.of("sliding_window", "transformers' Mistral attends within the window; llama.cpp's mistral3 "
                            + "over the whole context (the converter writes no window)")))
            .build();

    /**
     * Arcee's AFM ({@code ArceeForCausalLM}, the converter's {@code ArceeModel}, a
     * {@code LlamaModel}): llama without a gate in its MLP (llama.cpp's arcee computes
     * {@code down(relu(up x)^2)}, transformers' {@code relu2}): llama's rows, keys and
     * vocabulary, then the pooling type of a sentence-transformers folder; its yarn as llama's.
     */
    static final Architecture ARCEE = Architecture.of("arcee", "ArceeForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.mlp.up_proj", "blk.{bid}.ffn_up"), FFN_DOWN)))
            .ropeRows(LLAMA.ropeRows())
            // ArceeModel.set_gguf_parameters: LlamaModel's, then _try_set_pooling_type
            .keys(concat(LLAMA.extraKeys(), List.of(new Architecture.PoolingType())))
            .vocabulary(Architecture.VocabularyRule.LLAMA)
            .llama3Rope()
            .build();

    /**
     * ByteDance's Seed-OSS ({@code SeedOssForCausalLM}, the converter's {@code SeedOssModel}, a
     * plain {@code TextModel}): qwen2's block (q/k/v biases) with {@code head_dim} apart from
     * hidden / heads; {@code post_attention_layernorm}, the norm before the MLP, is
     * {@code post_attention_norm} (gguf-py's {@code MODEL_TENSORS[SEED_OSS]} has no
     * {@code FFN_NORM}); no permutation (llama.cpp's seed_oss rope is NEOX); TextModel's keys
     * and vocabulary.
     */
    static final Architecture SEED_OSS = Architecture.of("seed_oss", "SeedOssForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm")), MLP))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(QWEN2_REQUIRED)
            .build();

    /**
     * GLM-4 of April 2025 ({@code Glm4ForCausalLM}: GLM-4-9B/32B-0414, GLM-Z1; the converter's
     * {@code Glm4Model}): q/k/v with biases, the rope over the first half of each head
     * ({@code rope.dimension_count} written so), no permutation (llama.cpp's glm4 rope and
     * transformers' GLM both rotate adjacent pairs); four norms a block: {@code input_layernorm}
     * {@code attn_norm}, {@code post_self_attn_layernorm} {@code post_attention_norm} (on the
     * attention's output), {@code post_attention_layernorm} {@code ffn_norm} (before the MLP),
     * {@code post_mlp_layernorm} {@code post_ffw_norm}; the fused {@code gate_up_proj} kept fused
     * as {@code ffn_up} (rows gate then up), as llama.cpp loads it; TextModel's keys, then the rope
     * dimension count; its own vocabulary rule. GLM-4V's M-RoPE ({@code mrope_section}) is refused.
     */
    static final Architecture GLM4 = Architecture.of("glm4", "Glm4ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.post_self_attn_layernorm", "blk.{bid}.post_attention_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.post_mlp_layernorm", "blk.{bid}.post_ffw_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.mlp.gate_up_proj", "blk.{bid}.ffn_up"), FFN_DOWN)))
            // Glm4Model.set_gguf_parameters: TextModel's, then the rope over a share of each head
            .keys(List.of(Architecture.OwnKey.HEAD_SHARE_ROPE_DIMENSION_COUNT))
            .vocabulary(Architecture.VocabularyRule.GLM4)
            .requires(QWEN2_REQUIRED)
            .build();

    /**
     * Liquid AI's LFM2 ({@code Lfm2ForCausalLM}, the converter's {@code LFM2Model}): layers that
     * are either short convolutions ({@code conv.in_proj}, the depthwise {@code conv.conv}
     * squeezed to {@code [channels, kernel]}, {@code conv.out_proj} as {@code shortconv.*}) or
     * attention with per-head q/k norms ({@code q_layernorm}/{@code k_layernorm}), each after
     * {@code operator_norm} ({@code attn_norm}), then a SwiGLU ({@code feed_forward.w1} gate,
     * {@code w3} up, {@code w2} down) after {@code ffn_norm}; the final norm is
     * {@code embedding_norm} ({@code token_embd_norm}, gguf-py's name for it); no permutation
     * (NEOX rope). TextModel's keys with {@code head_count_kv} one int32 per layer (0 for a
     * convolution), then {@code vocab_size}, {@code shortconv.l_cache} ({@code conv_L_cache}), the
     * norm epsilon again ({@code norm_eps}) and the adjusted feed-forward width;
     * {@code TextModel.set_vocab}.
     */
    static final Architecture LFM2 = Architecture.of("lfm2", "Lfm2ForCausalLM", "LFM2ForCausalLM")
            .tensors(List.of(TOKEN_EMBD, OUTPUT,
                    Architecture.TensorName.of("model.embedding_norm", "token_embd_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.operator_norm", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.ffn_norm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.conv.conv", "blk.{bid}.shortconv.conv"),
                    Architecture.TensorName.of("model.layers.{bid}.conv.in_proj", "blk.{bid}.shortconv.in_proj"),
                    Architecture.TensorName.of("model.layers.{bid}.conv.out_proj", "blk.{bid}.shortconv.out_proj"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.out_proj", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_layernorm", "blk.{bid}.attn_q_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_layernorm", "blk.{bid}.attn_k_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w1", "blk.{bid}.ffn_gate"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w3", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w2", "blk.{bid}.ffn_down")))
            // LFM2Model.set_gguf_parameters: TextModel's (head_count_kv per layer), then these
            .keys(List.of(HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(),
                    HyperParameter.u32("{arch}.shortconv.l_cache", "conv_L_cache").asRequired(),
                    HyperParameter.f32("{arch}.attention.layer_norm_rms_epsilon", "norm_eps").asRequired(),
                    Architecture.OwnKey.ADJUSTED_FEED_FORWARD_LENGTH))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "num_attention_heads", "num_key_value_heads", "layer_types",
                    "block_auto_adjust_ff_dim", "block_multiple_of", "rope_theta"))
            .extras(Architecture.Extras.builder().convLayers(new Architecture.ConvLayers("conv", List.of("conv.conv.weight"))))
            .build();

    /**
     * Liquid AI's LFM2 MoE ({@code Lfm2MoeForCausalLM}, LFM2-8B-A1B and 24B-A2B; the converter's
     * {@code LFM2MoeModel}): LFM2's convolution and attention layers, the first
     * {@code num_dense_layers} with LFM2's dense SwiGLU, the others a sparse block: the router
     * {@code feed_forward.gate} (F32), the selection bias {@code feed_forward.expert_bias} (renamed
     * {@code expert_bias.bias}: {@code exp_probs_b.bias}, F32) and the experts {@code w1}, {@code w2},
     * {@code w3} stacked in that order. Tied embeddings (gguf-py's lfm2moe has no output tensor).
     * TextModel's keys (the feed-forward width {@code intermediate_size} as it is, {@code head_count_kv}
     * one int32 per layer), then {@code expert_feed_forward_length}, {@code leading_dense_block_count},
     * the gating function sigmoid, {@code vocab_size} and {@code shortconv.l_cache};
     * {@code TextModel.set_vocab}. transformers' block chooses by the sigmoid scores plus the bias and
     * weighs by the scores renormalized, as llama.cpp's lfm2moe does; a scaling of the weights other
     * than 1, no bias or no renormalization would run as another model (exit 6).
     */
    static final Architecture LFM2MOE = Architecture.of("lfm2moe", "Lfm2MoeForCausalLM")
            .tensors(List.of(TOKEN_EMBD,
                    Architecture.TensorName.of("model.embedding_norm", "token_embd_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.operator_norm", "blk.{bid}.attn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.ffn_norm", "blk.{bid}.ffn_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.conv.conv", "blk.{bid}.shortconv.conv"),
                    Architecture.TensorName.of("model.layers.{bid}.conv.in_proj", "blk.{bid}.shortconv.in_proj"),
                    Architecture.TensorName.of("model.layers.{bid}.conv.out_proj", "blk.{bid}.shortconv.out_proj"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_proj", "blk.{bid}.attn_k"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.v_proj", "blk.{bid}.attn_v"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.out_proj", "blk.{bid}.attn_output"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_layernorm", "blk.{bid}.attn_q_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_layernorm", "blk.{bid}.attn_k_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w1", "blk.{bid}.ffn_gate"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w3", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.w2", "blk.{bid}.ffn_down"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.gate", "blk.{bid}.ffn_gate_inp"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.expert_bias", "blk.{bid}.exp_probs_b"),
                    Architecture.TensorName.of("layers.{bid}.feed_forward.experts.w1", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("layers.{bid}.feed_forward.experts.w2", "blk.{bid}.ffn_down_exps"),
                    Architecture.TensorName.of("layers.{bid}.feed_forward.experts.w3", "blk.{bid}.ffn_up_exps")))
            // LFM2MoeModel.set_gguf_parameters: TextModel's (head_count_kv per layer), then these
            .keys(List.of(HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size").asRequired(),
                    HyperParameter.u32("{arch}.leading_dense_block_count", "num_dense_layers").asRequired(),
                    Architecture.OwnKey.EXPERT_GATING_SIGMOID,
                    HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(),
                    HyperParameter.u32("{arch}.shortconv.l_cache", "conv_L_cache").asRequired()))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                    "layer_types", "rope_theta", "norm_eps", "conv_L_cache", "num_experts", "num_experts_per_tok",
                    "moe_intermediate_size", "num_dense_layers"))
            .experts(new Architecture.Experts("model.layers.{bid}.feed_forward.experts.{xid}.{proj}.weight",
                    List.of(new Architecture.Experts.Projection("w1", true), new Architecture.Experts.Projection("w2", false),
                            new Architecture.Experts.Projection("w3", true)),
                    "layers.{bid}.feed_forward.experts.{proj}.weight",
                    HyperParameter.u32("{arch}.expert_count", "num_local_experts", "num_experts").asRequired(),
                    "moe_intermediate_size", "feed_forward.gate.weight",
                    List.of(new Architecture.ConfigValue("norm_topk_prob", Boolean.TRUE, false, "llama.cpp's lfm2moe always "
                                    + "renormalizes the chosen experts' weights"),
                            new Architecture.ConfigValue("routed_scaling_factor", 1.0, false, "llama.cpp's lfm2moe does not "
                                    + "scale the experts' weights (the converter writes no scale)"),
                            new Architecture.ConfigValue("use_expert_bias", Boolean.TRUE, false, "llama.cpp's lfm2moe loads the "
                                    + "experts' selection bias as required")),
                    Optional.of("num_dense_layers"), false))
            .extras(Architecture.Extras.builder().convLayers(new Architecture.ConvLayers("conv", List.of("conv.conv.weight")))
                    // LFM2MoeModel.modify_tensors: the bias gguf-py maps is expert_bias.bias
                    .suffixRename(".expert_bias", ".expert_bias.bias"))
            .build();

    /**
     * Cohere's Command-R and Aya ({@code CohereForCausalLM}, the converter's {@code CommandR2Model}):
     * one norm a block ({@code input_layernorm}, a LayerNorm without bias; llama.cpp's command-r
     * runs attention and MLP in parallel on it), Command R+'s per-head q/k norms
     * ({@code [heads, head_dim]}), tied embeddings, no permutation (transformers' Cohere and
     * llama.cpp's command-r both rotate adjacent pairs); TextModel's keys, the context length
     * from {@code model_max_length} when config.json has it (the converter sets it so: the models
     * were trained on 128k, their config says 8k), then {@code logit_scale} and a rope scaling
     * type "none"; {@code TextModel.set_vocab}. A {@code rope_scaling} is refused: the converter
     * overwrites its type with none.
     */
    static final Architecture COMMAND_R = Architecture.of("command-r", "CohereForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT_NORM), ATTENTION, QK_NORMS, MLP))
            // CommandR2Model.set_gguf_parameters: TextModel's, then these
            .keys(List.of(HyperParameter.f32("{arch}.logit_scale", "logit_scale").asRequired(), Architecture.OwnKey.ROPE_SCALING_NONE))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                    "layer_norm_eps", "rope_theta", "logit_scale"))
            .extras(Architecture.Extras.builder()
                    .configFrom(Map.of("max_position_embeddings", List.of("model_max_length", "max_position_embeddings")))
                    .configRefused(Map.of("rope_scaling", "the converter writes rope scaling type none over it")))
            .build();

    /**
     * Cohere's Command R7B and Aya Expanse's successors ({@code Cohere2ForCausalLM}, the
     * converter's {@code Cohere2Model}): Command-R's block without q/k norms, three local
     * (sliding-window, rotary) layers to one global (no rotary) as llama.cpp's cohere2 lays them
     * out (the converter writes no pattern); bias tensors, which the checkpoints hold as zeros,
     * left out (a non-zero one stops the converter: exit 3); TextModel's keys, then
     * {@code logit_scale}, {@code attention.sliding_window}, {@code vocab_size}, the rope dimension
     * from {@code rotary_pct} and rope scaling type none.
     */
    static final Architecture COHERE2 = Architecture.of("cohere2", "Cohere2ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT_NORM), ATTENTION, MLP))
            // Cohere2Model.set_gguf_parameters: TextModel's, then these
            .keys(List.of(HyperParameter.f32("{arch}.logit_scale", "logit_scale").asRequired(),
                    HyperParameter.u32("{arch}.attention.sliding_window", "sliding_window").asRequired(),
                    HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(),
                    Architecture.OwnKey.ROTARY_PCT_DIMENSION_COUNT, Architecture.OwnKey.ROPE_SCALING_NONE))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
                    "layer_norm_eps", "rope_theta", "logit_scale", "sliding_window", "rotary_pct"))
            .extras(Architecture.Extras.builder()
                    // llama.cpp's cohere2: swa pattern 4, the global layers without rope
                    .slidingWindow(new Architecture.SlidingWindow(4, LOCAL_ROPE_THETA, false))
                    .configRefused(Map.of("rope_scaling", "the converter writes rope scaling type none over it")))
            .build();

    /**
     * LG's EXAONE 4.0 ({@code Exaone4ForCausalLM}, the converter's {@code Exaone4Model}): OLMo 2's
     * post norms ({@code post_attention_layernorm} {@code post_attention_norm},
     * {@code post_feedforward_layernorm} {@code post_ffw_norm}, no norm before attention or the
     * MLP) with Qwen3's per-head q/k norms; no permutation (NEOX rope); a llama3 rope scaling as
     * the {@code rope_freqs} tensor (its {@code factor} must be given: the converter's default
     * for EXAONE 4 is 16, not llama's 8); TextModel's keys, then {@code vocab_size} and, with a
     * sliding window, the window and which layers have it; {@code _set_vocab_gpt2}'s vocabulary.
     */
    static final Architecture EXAONE4 = Architecture.of("exaone4", "Exaone4ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION.subList(1, ATTENTION.size()), QK_NORMS, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.post_feedforward_layernorm", "blk.{bid}.post_ffw_norm")), MLP))
            // Exaone4Model.set_gguf_parameters: TextModel's, then these
            .keys(List.of(HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(), Architecture.OwnKey.EXAONE4_SLIDING_WINDOW))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(QWEN2_REQUIRED)
            .llama3Rope()
            .build();

    /**
     * Qwen2-VL and Qwen2.5-VL's language model ({@code Qwen2VLForConditionalGeneration},
     * {@code Qwen2_5_VLForConditionalGeneration}, the converter's {@code Qwen2VLModel}): qwen2's
     * tensors (q/k/v biases, no permutation) in the layout these checkpoints were published in
     * ({@code model.*}, {@code lm_head}), the vision tower ({@code visual.*}) left out; TextModel's
     * keys with the M-RoPE sections ({@code rope.dimension_sections}, {@code mrope_section} padded
     * to four) the rope scaling of type mrope carries; {@code Qwen2Model}'s vocabulary rule. For
     * text alone every section takes the same position: the rope of qwen2.
     */
    static final Architecture QWEN2VL = Architecture.of("qwen2vl", "Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration")
            .tensors(QWEN2_TENSORS)
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_ELSE_GPT2)
            .requires(QWEN2_REQUIRED)
            .extras(Architecture.Extras.builder()
                    // Qwen2VLModel.modify_tensors: thinker. removed; visual, audio, talker, token2wav skipped
                    .multimodal(new Architecture.MultimodalText("thinker.", List.of("visual", "audio", "talker", "token2wav"),
                            "vision tower")))
            .build();

    /** Qwen3-VL's checkpoints: the language model under {@code model.language_model.}, the vision tower under {@code model.visual.}. */
    private static final Architecture.MultimodalText QWEN3VL_TEXT =
            // Qwen3VLTextModel.modify_tensors: model.visual. skipped; Qwen2Model's (or Qwen2MoeModel's) removes language_model.
            new Architecture.MultimodalText("language_model.", List.of("model.visual."), "vision tower");

    /**
     * Qwen3-VL's language model ({@code Qwen3VLForConditionalGeneration}, the converter's
     * {@code Qwen3VLTextModel}, a {@code Qwen3Model}): qwen3's tensors (per-head q/k norms, no
     * biases, no permutation) from the checkpoints' {@code model.language_model.*} and
     * {@code lm_head}, the vision tower ({@code model.visual.*}) left out; the text config over the
     * top level; TextModel's keys with the M-RoPE sections (required: llama.cpp's qwen3vl does not
     * load without them), the pooling type, then {@code n_deepstack_layers}; Qwen2Model's vocabulary
     * rule. llama.cpp interleaves the sections (time, height, width, time, ...) as transformers'
     * {@code apply_interleaved_mrope} does; for text alone every section takes the token's position,
     * so where the interleave covers every rotated pair it is qwen3's rope.
     */
    static final Architecture QWEN3VL = Architecture.of("qwen3vl", "Qwen3VLForConditionalGeneration")
            .tensors(concat(QWEN2_TENSORS, QK_NORMS))
            // Qwen3VLTextModel.set_gguf_parameters: Qwen3Model's (Qwen2Model's: TextModel's and the pooling type), then this
            .keys(List.of(new Architecture.PoolingType(), Architecture.OwnKey.DEEPSTACK_LAYER_COUNT))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_ELSE_GPT2)
            .requires(concat(QWEN2_REQUIRED, List.of("head_dim")))
            // Qwen3Model._is_qwen3_reranker, which Qwen3VLTextModel inherits
            .refuses(List.of(new Architecture.Variant("qwen3-vl-reranker", "a Qwen3-VL reranker (cls.output from lm_head's yes/no "
                    + "rows, pooling type rank, a rerank chat template)"),
                    new Architecture.Variant("qwen3-reranker", "a Qwen3 reranker")))
            .extras(Architecture.Extras.builder().multimodal(QWEN3VL_TEXT))
            .build();

    /**
     * Qwen3-VL's MoE language model ({@code Qwen3VLMoeForConditionalGeneration}, Qwen3-VL-30B-A3B
     * and 235B-A22B; the converter's {@code Qwen3VLMoeTextModel}, a {@code Qwen3MoeModel}): qwen3moe's
     * attention and router, the experts stored packed as transformers' {@code Qwen3VLMoeTextExperts}
     * holds them ({@code mlp.experts.gate_up_proj} {@code [E, hidden, 2 I]}, gate the first half, and
     * {@code down_proj} {@code [E, I, hidden]}, no {@code .weight}), split and transposed into
     * {@code ffn_gate_exps}, {@code ffn_up_exps}, {@code ffn_down_exps}; the keys of qwen3moe, then
     * {@code n_deepstack_layers}; the vision tower left out. transformers' block renormalizes the
     * chosen experts' weights whatever {@code norm_topk_prob} says, as llama.cpp's qwen3vlmoe does.
     */
    static final Architecture QWEN3VLMOE = Architecture.of("qwen3vlmoe", "Qwen3VLMoeForConditionalGeneration")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, QK_NORMS, QWEN_MOE_FFN))
            // Qwen3VLMoeTextModel.set_gguf_parameters: Qwen2MoeModel's (TextModel's, the experts' widths), then this
            .keys(List.of(HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size"),
                    HyperParameter.u32("{arch}.expert_shared_feed_forward_length", "shared_expert_intermediate_size"),
                    Architecture.OwnKey.DEEPSTACK_LAYER_COUNT))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(concat(QWEN2_REQUIRED, List.of("head_dim", "num_experts", "num_experts_per_tok", "moe_intermediate_size")))
            .extras(Architecture.Extras.builder()
                    .multimodal(QWEN3VL_TEXT)
                    .packedExperts(new Architecture.PackedExperts("model.layers.{bid}.mlp.experts.", "mlp.gate.weight", "num_experts",
                            "moe_intermediate_size", List.of(
                            new Architecture.ConfigValue("decoder_sparse_step", 1L, false, "llama.cpp's qwen3vlmoe has experts in "
                                    + "every block"),
                            new Architecture.ConfigValue("mlp_only_layers", List.of(), false, "llama.cpp's qwen3vlmoe has experts "
                                    + "in every block, no dense one")),
                            true)))
            .build();

    /** DeepSeek's and GLM-4.5's MoE blocks: the router and its selection bias, the stacked experts, the shared experts. */
    private static final List<Architecture.TensorName> SHARED_EXPERT_MOE = List.of(
            Architecture.TensorName.of("model.layers.{bid}.mlp.gate", "blk.{bid}.ffn_gate_inp"),
            // modify_tensors renames e_score_correction_bias to e_score_correction.bias
            Architecture.TensorName.of("model.layers.{bid}.mlp.gate.e_score_correction", "blk.{bid}.exp_probs_b"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.experts.up_proj", "blk.{bid}.ffn_up_exps"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.experts.down_proj", "blk.{bid}.ffn_down_exps"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.shared_experts.gate_proj", "blk.{bid}.ffn_gate_shexp"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.shared_experts.up_proj", "blk.{bid}.ffn_up_shexp"),
            Architecture.TensorName.of("model.layers.{bid}.mlp.shared_experts.down_proj", "blk.{bid}.ffn_down_shexp"));

    /**
     * DeepSeek-V2 and V3 ({@code DeepseekV2ForCausalLM}, {@code DeepseekV3ForCausalLM}, the
     * converter's {@code DeepseekV2Model}; also Kimi K2's and Moonlight's layout): multi-head latent
     * attention ({@link Architecture.LatentAttention}: the query through a low-rank pair
     * {@code q_a_proj}/{@code q_b_proj} with a norm between, or one {@code q_proj} when
     * {@code q_lora_rank} is null; keys and values through {@code kv_a_proj_with_mqa}, its norm, and
     * {@code kv_b_proj} split per head for llama.cpp's absorbed form), no row permutation (the
     * rotated part is already in ggml's adjacent-pair order); {@code first_k_dense_replace} leading
     * blocks with a dense MLP, the others a router ({@code mlp.gate}, F32), V3's expert-selection
     * bias ({@code e_score_correction_bias}, F32), the experts stacked per block (down, gate, up)
     * and the shared experts; the multi-token-prediction layers left out. TextModel's keys with one
     * key/value head (with the expert groups and the gating function), then DeepSeek's own;
     * {@code _set_vocab_gpt2}'s vocabulary.
     */
    static final Architecture DEEPSEEK2 = Architecture.of("deepseek2", "DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM, ATTN_NORM, ATTN_OUTPUT, FFN_NORM), MLP, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_proj", "blk.{bid}.attn_q"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_a_proj", "blk.{bid}.attn_q_a"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_a_layernorm", "blk.{bid}.attn_q_a_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.q_b_proj", "blk.{bid}.attn_q_b"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.kv_a_proj_with_mqa", "blk.{bid}.attn_kv_a_mqa"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.kv_a_layernorm", "blk.{bid}.attn_kv_a_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.k_b_proj", "blk.{bid}.attn_k_b"),
                    Architecture.TensorName.of("model.layers.{bid}.self_attn.v_b_proj", "blk.{bid}.attn_v_b")), SHARED_EXPERT_MOE))
            // DeepseekV2Model.set_gguf_parameters: TextModel's, then these, in this order
            .keys(List.of(HyperParameter.u32("{arch}.leading_dense_block_count", "first_k_dense_replace").asRequired(),
                    HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(),
                    HyperParameter.u32("{arch}.attention.q_lora_rank", "q_lora_rank"),
                    HyperParameter.u32("{arch}.attention.kv_lora_rank", "kv_lora_rank").asRequired(),
                    Architecture.OwnKey.LATENT_KEY_LENGTH,
                    HyperParameter.u32("{arch}.attention.value_length", "kv_lora_rank").asRequired(),
                    Architecture.OwnKey.HEAD_KEY_LENGTH_MLA,
                    HyperParameter.u32("{arch}.attention.value_length_mla", "v_head_dim").asRequired(),
                    HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size", "intermediate_size").asRequired(),
                    HyperParameter.u32("{arch}.expert_count", "n_routed_experts"),
                    HyperParameter.u32("{arch}.expert_shared_count", "n_shared_experts").asRequired(),
                    HyperParameter.f32("{arch}.expert_weights_scale", "routed_scaling_factor"),
                    Architecture.OwnKey.EXPERT_WEIGHTS_NORM_WHEN_SET,
                    HyperParameter.u32("{arch}.rope.dimension_count", "qk_rope_head_dim").asRequired(),
                    Architecture.OwnKey.YARN_LOG_MULTIPLIER_FROM_MSCALE))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            // what the converter reads as hparams[...] (or llama.cpp cannot load without), not guessed: transformers'
            // DeepseekV2Config and DeepseekV3Config defaults differ (first_k_dense_replace 0 and 3, ...)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "first_k_dense_replace", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim",
                    "moe_intermediate_size", "n_routed_experts", "n_shared_experts", "num_experts_per_tok", "routed_scaling_factor"))
            .experts(sharedExpertMoe("deepseek2"))
            // DeepseekV2Model.set_gguf_parameters: rms_norm_eps defaults to 1e-6
            .extras(Architecture.Extras.builder().configDefaults(Map.of("rms_norm_eps", 1e-6))
                    .latentAttention(new Architecture.LatentAttention("self_attn.kv_b_proj.weight", "self_attn.k_b_proj.weight",
                            "self_attn.v_b_proj.weight")))
            .build();

    /**
     * The first DeepSeek MoE ({@code DeepseekForCausalLM}: deepseek-moe-16b-base and -chat; the converter's
     * {@code DeepseekModel}): llama's attention with q/k rows permuted (weights and biases), a dense MLP in the first
     * {@code first_k_dense_replace} blocks, then DeepSeek's MoE block: the router {@code mlp.gate} ({@code ffn_gate_inp},
     * F32), the routed experts stacked per block (down, gate, up) and the shared experts' MLP. TextModel's keys (the
     * used count and the softmax gating function with them), then the rope dimension count, rope scaling none, the
     * dense lead, {@code vocab_size}, the experts' width, {@code expert_weights_scale} 1, the expert and shared-expert
     * counts; tokenizer.model, else a byte-level BPE tokenizer.json. llama.cpp's deepseek routes by softmax without
     * renormalizing, so {@code norm_topk_prob} true, another scoring function, rope scaling or expert groups are refused.
     */
    static final Architecture DEEPSEEK = Architecture.of("deepseek", "DeepseekForCausalLM")
            .tensors(parts(DECODER, SHARED_EXPERT_MOE.stream().filter(t -> !t.gguf().contains("exp_probs_b")).toList()))
            .ropeRows(LLAMA.ropeRows())
            // DeepseekModel.set_gguf_parameters: TextModel's, then these, in this order
            .keys(List.of(new Architecture.RopeDimensionCount(), Architecture.OwnKey.ROPE_SCALING_NONE,
                    HyperParameter.u32("{arch}.leading_dense_block_count", "first_k_dense_replace").asRequired(),
                    HyperParameter.u32("{arch}.vocab_size", "vocab_size").asRequired(),
                    HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size").asRequired(),
                    Architecture.OwnKey.EXPERT_WEIGHTS_SCALE_ONE,
                    HyperParameter.u32("{arch}.expert_count", "n_routed_experts").asRequired(),
                    HyperParameter.u32("{arch}.expert_shared_count", "n_shared_experts").asRequired()))
            .vocabulary(Architecture.VocabularyRule.SENTENCEPIECE_ELSE_GPT2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "rms_norm_eps", "rope_theta", "first_k_dense_replace", "moe_intermediate_size", "n_routed_experts",
                    "n_shared_experts", "num_experts_per_tok"))
            .experts(sharedExpertMoe("deepseek"))
            .extras(Architecture.Extras.builder()
                    .configRefused(Map.of("rope_scaling", "the converter writes rope scaling type none for deepseek",
                            "n_group", "llama.cpp's deepseek routes without expert groups",
                            "topk_group", "llama.cpp's deepseek routes without expert groups"))
                    .configValues(new Architecture.ConfigValue("norm_topk_prob", Boolean.FALSE, false, "llama.cpp's deepseek does "
                                    + "not renormalize the chosen experts' weights"),
                            new Architecture.ConfigValue("scoring_func", "softmax", false, "llama.cpp's deepseek routes by softmax"),
                            new Architecture.ConfigValue("hidden_act", "silu", false, "llama.cpp's deepseek computes SwiGLU")))
            .build();

    /** DeepSeek's and GLM-4.5's routed experts: stacked per block (down, gate, up), after a dense lead, routed in groups. */
    private static Architecture.Experts sharedExpertMoe(String arch) {
        return new Architecture.Experts("model.layers.{bid}.mlp.experts.{xid}.{proj}.weight",
                DOWN_GATE_UP,
                "model.layers.{bid}.mlp.experts.{proj}.weight",
                HyperParameter.u32("{arch}.expert_count", "n_routed_experts").asRequired(),
                "moe_intermediate_size", "mlp.gate.weight",
                List.of(new Architecture.ConfigValue("moe_layer_freq", 1L, false, "llama.cpp's " + arch + " has experts in every "
                        + "block after the leading dense ones")),
                Optional.of("first_k_dense_replace"), true);
    }

    /**
     * GLM-4.5, 4.5-Air and 4.6 ({@code Glm4MoeForCausalLM}, the converter's {@code Glm4MoeModel}):
     * q/k/v with biases, optional per-head q/k norms, the rope over a share of each head (NEOX
     * order, no permutation), {@code post_attention_layernorm} as {@code post_attention_norm} (the
     * norm before the MLP), DeepSeek-V3's MoE (a dense lead, the router and its selection bias in
     * F32, the experts stacked, the shared experts, sigmoid routing), and the multi-token-prediction
     * layers written after the others ({@code blk.N.nextn.*}, counted in {@code block_count}; llama.cpp
     * loads them and does not run them). TextModel's keys, then its own; {@code _set_vocab_glm}.
     */
    static final Architecture GLM4MOE = Architecture.of("glm4moe", "Glm4MoeForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, QK_NORMS, MLP, SHARED_EXPERT_MOE, List.of(
                    Architecture.TensorName.of("model.layers.{bid}.post_attention_layernorm", "blk.{bid}.post_attention_norm"),
                    Architecture.TensorName.of("model.layers.{bid}.eh_proj", "blk.{bid}.nextn.eh_proj"),
                    Architecture.TensorName.of("model.layers.{bid}.embed_tokens", "blk.{bid}.nextn.embed_tokens"),
                    Architecture.TensorName.of("model.layers.{bid}.enorm", "blk.{bid}.nextn.enorm"),
                    Architecture.TensorName.of("model.layers.{bid}.hnorm", "blk.{bid}.nextn.hnorm"),
                    Architecture.TensorName.of("model.layers.{bid}.shared_head.head", "blk.{bid}.nextn.shared_head_head"),
                    Architecture.TensorName.of("model.layers.{bid}.shared_head.norm", "blk.{bid}.nextn.shared_head_norm"))))
            // Glm4MoeModel.set_gguf_parameters: TextModel's, then these, in this order
            .keys(List.of(Architecture.OwnKey.TOP_LEVEL_HEAD_SHARE_ROPE_DIMENSION_COUNT,
                    HyperParameter.u32("{arch}.expert_count", "n_routed_experts"),
                    HyperParameter.u32("{arch}.expert_feed_forward_length", "moe_intermediate_size"),
                    HyperParameter.u32("{arch}.expert_shared_count", "n_shared_experts"),
                    HyperParameter.u32("{arch}.leading_dense_block_count", "first_k_dense_replace"),
                    Architecture.OwnKey.EXPERT_GATING_SIGMOID,
                    HyperParameter.f32("{arch}.expert_weights_scale", "routed_scaling_factor"),
                    Architecture.OwnKey.EXPERT_WEIGHTS_NORM_WHEN_GIVEN,
                    HyperParameter.u32("{arch}.nextn_predict_layers", "num_nextn_predict_layers")))
            .vocabulary(Architecture.VocabularyRule.GLM4)
            // read raw by the converter; Glm4MoeConfig's defaults (first_k_dense_replace 1, n_shared_experts 1, ...) not guessed
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "num_attention_heads",
                    "num_key_value_heads", "rms_norm_eps", "first_k_dense_replace", "moe_intermediate_size", "n_routed_experts",
                    "n_shared_experts", "num_experts_per_tok", "routed_scaling_factor", "norm_topk_prob"))
            .experts(sharedExpertMoe("glm4moe"))
            .extras(Architecture.Extras.builder().extraLayers("num_nextn_predict_layers"))
            .build();

    /**
     * GLM-4.7-Flash ({@code Glm4MoeLiteForCausalLM}, the converter's {@code Glm4MoeLiteModel}, a
     * {@code DeepseekV2Model}): DeepSeek's layout and keys under arch deepseek2, with GLM's vocabulary
     * ({@code _set_vocab_glm}).
     */
    static final Architecture GLM4MOE_LITE = DEEPSEEK2.renamed(Architecture.VocabularyRule.GLM4, "Glm4MoeLiteForCausalLM");

    /**
     * Llama 4's text model ({@code Llama4ForConditionalGeneration}, Llama 4 Scout and Maverick, and
     * {@code Llama4ForCausalLM}; the converter's {@code Llama4Model}, a {@code LlamaModel} that does not
     * permute): the text config merged over the top level, {@code language_model.} removed from the
     * names, the vision model and projector left out; {@code intermediate_size} (the experts' width)
     * renamed {@code intermediate_size_moe} and {@code intermediate_size_mlp} (the dense MLP's)
     * taken as {@code intermediate_size}, as {@code Llama4Model.__init__} does; the experts stored
     * packed ({@code feed_forward.experts.gate_up_proj} {@code [E, hidden, 2 I]}, gate the first half,
     * and {@code down_proj} {@code [E, I, hidden]}, each transposed), the router F32, a shared expert,
     * dense MLPs in the layers {@code interleave_moe_layer_step} skips; llama's keys, then
     * {@code interleave_moe_layer_step} and {@code expert_feed_forward_length}; a llama3 rope scaling
     * as {@code rope_freqs}; {@code _set_vocab_gpt2}. What llama.cpp's llama4 hard-codes (no rope in
     * every fourth layer, chunks of 8192, the NoPE layers' temperature 0.1 over 8192, the L2 q/k norm
     * unless the model has 128 experts, Maverick's) must be what config.json says, or it is refused.
     */
    static final Architecture LLAMA4 = Architecture.of("llama4", "Llama4ForConditionalGeneration", "Llama4ForCausalLM")
            .tensors(parts(List.of(TOKEN_EMBD, OUTPUT, OUTPUT_NORM), ATTENTION, List.of(FFN_NORM,
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.gate_proj", "blk.{bid}.ffn_gate"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.up_proj", "blk.{bid}.ffn_up"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.down_proj", "blk.{bid}.ffn_down"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.router", "blk.{bid}.ffn_gate_inp"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.experts.gate_proj", "blk.{bid}.ffn_gate_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.experts.up_proj", "blk.{bid}.ffn_up_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.experts.down_proj", "blk.{bid}.ffn_down_exps"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.shared_expert.gate_proj", "blk.{bid}.ffn_gate_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.shared_expert.up_proj", "blk.{bid}.ffn_up_shexp"),
                    Architecture.TensorName.of("model.layers.{bid}.feed_forward.shared_expert.down_proj", "blk.{bid}.ffn_down_shexp"))))
            // Llama4Model.set_gguf_parameters: LlamaModel's, then these
            .keys(concat(LLAMA.extraKeys(), List.of(
                    HyperParameter.u32("{arch}.interleave_moe_layer_step", "interleave_moe_layer_step").asRequired(),
                    HyperParameter.u32("{arch}.expert_feed_forward_length", "intermediate_size_moe").asRequired())))
            .vocabulary(Architecture.VocabularyRule.GPT2)
            .requires(List.of("vocab_size", "max_position_embeddings", "hidden_size", "intermediate_size", "intermediate_size_mlp",
                    "num_attention_heads", "num_key_value_heads", "rms_norm_eps", "num_local_experts", "num_experts_per_tok",
                    "interleave_moe_layer_step", "rope_theta"))
            .llama3Rope()
            .extras(Architecture.Extras.builder()
                    .multimodal(new Architecture.MultimodalText("language_model.", List.of("vision_model.", "multi_modal_projector."),
                            "vision model and multimodal projector"))
                    .noRope(new Architecture.NoRopeLayers(4))
                    .configRefused(Map.of("layer_types", "the converter then writes a sliding window of 0 (MobileLLM's layout), "
                            + "which llama.cpp's llama4 of this generation does not read"))
                    .packedExperts(new Architecture.PackedExperts("model.layers.{bid}.feed_forward.experts.", "feed_forward.router.weight",
                            "num_local_experts", "intermediate_size_moe", List.of(
                            new Architecture.ConfigValue("attention_chunk_size", 8192L, false, "llama.cpp's llama4 attends in "
                                    + "chunks of 8192 (no key says otherwise)"),
                            new Architecture.ConfigValue("attn_temperature_tuning", Boolean.TRUE, false, "llama.cpp's llama4 always "
                                    + "scales the queries of its layers without rope"),
                            new Architecture.ConfigValue("floor_scale", 8192L, false, "llama.cpp's llama4 scales the queries of its "
                                    + "layers without rope over 8192 positions"),
                            new Architecture.ConfigValue("attn_scale", 0.1, false, "llama.cpp's llama4 scales the queries of its "
                                    + "layers without rope by 0.1 ln(...)")),
                            true))
                    // Llama4Model.__init__, in this order: the experts' width kept as intermediate_size_moe, then the
                    // dense MLP's width as intermediate_size
                    .configFrom(orderedFrom("intermediate_size_moe", List.of("intermediate_size"), "intermediate_size",
                            List.of("intermediate_size_mlp"))))
            .build();

    private static Map<String, List<String>> orderedFrom(String k1, List<String> v1, String k2, List<String> v2) {
        Map<String, List<String>> m = new java.util.LinkedHashMap<>();
        m.put(k1, v1);
        m.put(k2, v2);
        return java.util.Collections.unmodifiableMap(m);
    }

    static final List<Architecture> ALL = List.of(LLAMA, QWEN2, QWEN3, GEMMA, GEMMA2, GEMMA3, PHI3, QWEN3MOE, MIXTRAL, GRANITE, GRANITEMOE, MINIMAX_M2, STARCODER2, APERTUS, PHI2, GPTNEOX, GPT2, STARCODER, BLOOM, STABLELM, OLMO, FALCON, EXAONE, MINICPM, NEMOTRON, INTERNLM2, ORION, MPT, SMOLLM3,
            OLMO2, QWEN2MOE, GPT_OSS, MISTRAL3, ARCEE, SEED_OSS, GLM4, LFM2, LFM2MOE, COMMAND_R, COHERE2, EXAONE4, QWEN2VL, QWEN3VL, QWEN3VLMOE,
            DEEPSEEK, DEEPSEEK2, GLM4MOE, GLM4MOE_LITE, LLAMA4, OLMOE, ERNIE4_5, ERNIE4_5_MOE, BERT, NOMIC_BERT, XLM_ROBERTA, DISTILBERT,
            GEMMA_EMBEDDING);

    @SafeVarargs
    private static <T> List<T> parts(List<T>... lists) {
        return java.util.Arrays.stream(lists).flatMap(List::stream).toList();
    }

    private static <T> List<T> concat(List<T> a, List<T> b) {
        return java.util.stream.Stream.concat(a.stream(), b.stream()).toList();
    }

    static Optional<Architecture> byHfName(String name) {
        return ALL.stream().filter(a -> a.hfNames().contains(name)).findFirst();
    }

    static List<String> supportedNames() {
        return ALL.stream().flatMap(a -> a.hfNames().stream()).toList();
    }
}
