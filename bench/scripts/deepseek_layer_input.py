#!/usr/bin/env python3
"""A DeepSeek-V3 FP8 folder at the real model's sizes, cut to what a disk of a few GB holds, for
timing `amn convert FOLDER --to gguf` and its peak memory on DeepSeek's real shapes.

    python3 deepseek_layer_input.py DIR [EXPERTS]

DeepSeek-V3's config.json with its own widths (hidden 7168, 128 heads, q_lora_rank 1536,
kv_lora_rank 512, qk_nope_head_dim 128, qk_rope_head_dim 64, v_head_dim 128, experts of width
2048, one shared expert), cut to one MoE layer (first_k_dense_replace 0), EXPERTS routed experts
(default 16, in 8 groups) and a vocabulary of 32000. As the published checkpoint stores them: the
attention and expert matrices F8_E4M3 with an F32 weight_scale_inv per 128 x 128 block, the
embeddings, head, norms and router BF16, the selection bias F32. Values are random (FP8 codes
uniform over the finite ones, scales 1e-4 to 1e-3): what is timed is the recovery, the latent
attention split and the expert stacking, not what the model computes. About 1.9 GB with 16 experts.
"""
import json
import os
import struct
import sys

import numpy as np

HIDDEN, HEADS, Q_RANK, KV_RANK, NOPE, ROPE, V, WIDTH, VOCAB = 7168, 128, 1536, 512, 128, 64, 128, 2048, 32000


def fp8_codes(rng, rows, cols):
    # E4M3FN: 0x7F and 0xFF are NaN; every other byte is a finite value
    c = rng.integers(0, 256, size=(rows, cols), dtype=np.uint8)
    c[(c & 0x7F) == 0x7F] = 0
    return c


def main():
    out = sys.argv[1]
    experts = int(sys.argv[2]) if len(sys.argv) > 2 else 16
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(0)
    config = {
        "architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3", "vocab_size": VOCAB,
        "hidden_size": HIDDEN, "intermediate_size": 18432, "moe_intermediate_size": WIDTH, "num_hidden_layers": 1,
        "num_attention_heads": HEADS, "num_key_value_heads": HEADS, "n_shared_experts": 1, "n_routed_experts": experts,
        "routed_scaling_factor": 2.5, "kv_lora_rank": KV_RANK, "q_lora_rank": Q_RANK, "qk_rope_head_dim": ROPE,
        "v_head_dim": V, "qk_nope_head_dim": NOPE, "topk_method": "noaux_tc", "n_group": 8, "topk_group": 4,
        "num_experts_per_tok": 8, "moe_layer_freq": 1, "first_k_dense_replace": 0, "norm_topk_prob": True,
        "scoring_func": "sigmoid", "hidden_act": "silu", "max_position_embeddings": 163840, "rms_norm_eps": 1e-06,
        "rope_theta": 10000, "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                                              "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                                              "type": "yarn"},
        "tie_word_embeddings": False, "torch_dtype": "bfloat16",
        "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                "weight_block_size": [128, 128]}}
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)

    # name -> (dtype, shape, writer of its bytes); written in name order, streamed
    entries = {}

    def bf16(name, shape, scale):
        entries[name] = ("BF16", shape, lambda: (rng.standard_normal(shape, dtype=np.float32) * scale)
                         .view(np.uint32).__rshift__(16).astype(np.uint16).tobytes())

    def fp8(name, rows, cols):
        entries[name] = ("F8_E4M3", (rows, cols), lambda: fp8_codes(rng, rows, cols).tobytes())
        sr, sc = -(-rows // 128), -(-cols // 128)
        entries[name + "_scale_inv"] = ("F32", (sr, sc),
                                        lambda: rng.uniform(1e-4, 1e-3, size=(sr, sc)).astype(np.float32).tobytes())

    bf16("model.embed_tokens.weight", (VOCAB, HIDDEN), 0.02)
    bf16("lm_head.weight", (VOCAB, HIDDEN), 0.02)
    bf16("model.norm.weight", (HIDDEN,), 1.0)
    p = "model.layers.0."
    bf16(p + "input_layernorm.weight", (HIDDEN,), 1.0)
    bf16(p + "post_attention_layernorm.weight", (HIDDEN,), 1.0)
    fp8(p + "self_attn.q_a_proj.weight", Q_RANK, HIDDEN)
    bf16(p + "self_attn.q_a_layernorm.weight", (Q_RANK,), 1.0)
    fp8(p + "self_attn.q_b_proj.weight", HEADS * (NOPE + ROPE), Q_RANK)
    fp8(p + "self_attn.kv_a_proj_with_mqa.weight", KV_RANK + ROPE, HIDDEN)
    bf16(p + "self_attn.kv_a_layernorm.weight", (KV_RANK,), 1.0)
    fp8(p + "self_attn.kv_b_proj.weight", HEADS * (NOPE + V), KV_RANK)
    fp8(p + "self_attn.o_proj.weight", HIDDEN, HEADS * V)
    bf16(p + "mlp.gate.weight", (experts, HIDDEN), 0.02)
    entries[p + "mlp.gate.e_score_correction_bias"] = ("F32", (experts,),
                                                      lambda: rng.uniform(0, 0.5, experts).astype(np.float32).tobytes())
    for x in range(experts):
        fp8(p + f"mlp.experts.{x}.gate_proj.weight", WIDTH, HIDDEN)
        fp8(p + f"mlp.experts.{x}.up_proj.weight", WIDTH, HIDDEN)
        fp8(p + f"mlp.experts.{x}.down_proj.weight", HIDDEN, WIDTH)
    fp8(p + "mlp.shared_experts.gate_proj.weight", WIDTH, HIDDEN)
    fp8(p + "mlp.shared_experts.up_proj.weight", WIDTH, HIDDEN)
    fp8(p + "mlp.shared_experts.down_proj.weight", HIDDEN, WIDTH)

    size = {"BF16": 2, "F32": 4, "F8_E4M3": 1}
    header, offset = {}, 0
    for name in sorted(entries):
        dtype, shape, _ = entries[name]
        n = int(np.prod(shape)) * size[dtype]
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    raw = json.dumps(header, separators=(",", ":")).encode()
    raw += b" " * (-len(raw) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for name in sorted(entries):
            f.write(entries[name][2]())
    print(f"{out}: {offset / 1e9:.2f} GB of tensors, {len(entries)} tensors")


if __name__ == "__main__":
    main()
