#!/usr/bin/env python3
"""Writes a sharded FP8 model folder for the whole-process folder benchmark (docs/benchmarks.md).

    python3 tools/mk_sharded_fp8.py OUTDIR [--gib 12] [--shard-gib 4]

Layout as a DeepSeek-V3/Qwen3 FP8 checkpoint: [8192, 8192] F8_E4M3 weights (64 MiB each) with
F32 128x128 block scales ([64, 64] weight_scale_inv) and a BF16 norm per layer, cut into
model-0000N-of-0000M.safetensors shards with model.safetensors.index.json, config.json with a
quantization_config, and a tokenizer file. Codes are seeded random bytes without NaN, one
64 MiB pattern reused for every weight (what is measured is I/O and the kernel, not entropy).
A scale can land in another shard than its weight.
"""
import argparse, json, os, struct
import numpy as np

R = C = 8192

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("outdir")
    ap.add_argument("--gib", type=float, default=12.0, help="GiB of FP8 weights")
    ap.add_argument("--shard-gib", type=float, default=4.0)
    a = ap.parse_args()
    os.makedirs(a.outdir, exist_ok=True)
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 256, R * C, dtype=np.uint8)
    codes[(codes & 0x7F) == 0x7F] = 0x3F  # no NaN
    codes = codes.tobytes()
    layers = int(a.gib * (1 << 30) // (R * C))
    tensors = []  # (name, dtype, shape, bytes or callable)
    for l in range(layers):
        p = f"model.layers.{l}.mlp.down_proj"
        tensors.append((p + ".weight", "F8_E4M3", [R, C], codes))
        tensors.append((p + ".weight_scale_inv", "F32", [R // 128, C // 128],
                        (rng.random((R // 128) * (C // 128), dtype=np.float32) * 1e-3 + 1e-4).tobytes()))
        tensors.append((f"model.layers.{l}.post_attention_layernorm.weight", "BF16", [C],
                        np.full(C, 0x3F80, dtype=np.uint16).tobytes()))
    limit = int(a.shard_gib * (1 << 30))
    shards, cur, size = [], [], 0
    for t in tensors:
        if cur and size + len(t[3]) > limit:
            shards.append(cur); cur, size = [], 0
        cur.append(t); size += len(t[3])
    shards.append(cur)
    weight_map, total = {}, 0
    for i, shard in enumerate(shards):
        name = f"model-{i + 1:05d}-of-{len(shards):05d}.safetensors"
        header, off = {"__metadata__": {"format": "pt"}}, 0
        for n, d, s, b in shard:
            header[n] = {"dtype": d, "shape": s, "data_offsets": [off, off + len(b)]}
            off += len(b); weight_map[n] = name; total += len(b)
        h = json.dumps(header, separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        with open(os.path.join(a.outdir, name), "wb") as f:
            f.write(struct.pack("<Q", len(h))); f.write(h)
            for _, _, _, b in shard: f.write(b)
    with open(os.path.join(a.outdir, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total}, "weight_map": weight_map}, f, indent=2, sort_keys=True)
    with open(os.path.join(a.outdir, "config.json"), "w") as f:
        json.dump({"architectures": ["Qwen3ForCausalLM"], "hidden_size": C, "num_hidden_layers": layers,
                   "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3", "quant_method": "fp8",
                                           "weight_block_size": [128, 128]},
                   "torch_dtype": "bfloat16"}, f, indent=2)
    with open(os.path.join(a.outdir, "tokenizer.json"), "w") as f:
        f.write('{"version": "1.0"}\n')
    print(f"{layers} layers, {len(shards)} shards, {total / (1 << 30):.2f} GiB")

if __name__ == "__main__":
    main()
