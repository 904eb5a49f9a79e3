#!/usr/bin/env python3
"""The llama3 rope factors (`rope_freqs.weight`) as llama.cpp's convert_hf_to_gguf.py
computes them (LlamaModel.generate_extra_tensors, commit ca01960e6a), with torch, to check
amn's float32 replica bit for bit.

    python3 llama3_rope_factors.py torch [--sweep] > factors.json
        one JSON object per configuration: base, dim, factor, low, high, old (the
        converter's old_context_len) and "bits", the factors' float32 bit patterns (hex),
        plus "freq_bits", the inverse frequencies'. Without --sweep: Llama 3.1 8B,
        3.2 1B/3B, 3.3 70B and a few other head sizes; with it, also every head size 2..300
        for several bases.

The arithmetic is the converter's, step for step, on torch tensors (float32): the inverse
frequencies 1 / base ** (arange(0, dim, 2) / dim), then per frequency the wavelength
2 * pi / freq and the branch on it. Compare with amn's values with RopeFreqsTest
(format-gguf): AMN_ROPE_FACTORS_TORCH=factors.json.
"""
import argparse
import json
import math
import sys

import torch


def converter_factors(base, dim, factor, low_freq_factor, high_freq_factor, old_context_len):
    freqs = 1.0 / (base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    rope_factors = []
    for freq in freqs:
        wavelen = 2 * math.pi / freq
        if wavelen < high_freq_wavelen:
            rope_factors.append(1)
        elif wavelen > low_freq_wavelen:
            rope_factors.append(factor)
        else:
            smooth = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
            rope_factors.append(1 / ((1 - smooth) / factor + smooth))
    return freqs, torch.tensor(rope_factors, dtype=torch.float32)


def bits(t):
    return ["%08x" % (v & 0xFFFFFFFF) for v in t.view(torch.int32).tolist()]


# name, base (rope_theta), head size, factor, low_freq_factor, high_freq_factor, old_context_len
REAL = [
    ("Llama-3.1-8B", 500000.0, 128, 8.0, 1.0, 4.0, 8192),
    ("Llama-3.1-70B/405B, Llama-3.3-70B", 500000.0, 128, 8.0, 1.0, 4.0, 8192),
    ("Llama-3.2-1B", 500000.0, 64, 32.0, 1.0, 4.0, 8192),
    ("Llama-3.2-3B", 500000.0, 128, 32.0, 1.0, 4.0, 8192),
    ("head 80", 500000.0, 80, 8.0, 1.0, 4.0, 8192),
    ("head 96", 500000.0, 96, 8.0, 1.0, 4.0, 8192),
    ("head 120", 500000.0, 120, 8.0, 1.0, 4.0, 8192),
    ("head 72, theta 1e4", 10000.0, 72, 8.0, 1.0, 4.0, 8192),
    ("odd head 81", 500000.0, 81, 8.0, 1.0, 4.0, 8192),
    ("head 16, old 64", 10000.0, 16, 8.0, 1.0, 4.0, 64),
    ("head 64, old 3000, low 1.5, high 3.5", 250000.0, 64, 16.0, 1.5, 3.5, 3000),
]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["torch"])
    ap.add_argument("--sweep", action="store_true")
    a = ap.parse_args()
    configs = [dict(name=n, base=b, dim=d, factor=f, low=lo, high=hi, old=o) for n, b, d, f, lo, hi, o in REAL]
    if a.sweep:
        for base in [10000.0, 500000.0, 1000000.0, 5000000.0, 123456.7]:
            for dim in range(2, 301):
                # old_context_len 8192 and a short one, so that the smooth band meets more frequencies
                for old in [8192, 512]:
                    configs.append(dict(name="sweep", base=base, dim=dim, factor=8.0, low=1.0, high=4.0, old=old))
    out = []
    for c in configs:
        freqs, f = converter_factors(c["base"], c["dim"], c["factor"], c["low"], c["high"], c["old"])
        out.append(dict(c, bits=bits(f), freq_bits=bits(freqs)))
    json.dump(dict(torch=torch.__version__, configs=out), sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
