"""Reference vectors for the i-quant encoders, made by ggml itself.

Writes input.bin (the rows and an importance row) and one <type>.bin per i-quant type
holding ggml_quantize_chunk's bytes: first without an importance matrix (skipped for the
types ggml refuses to quantize without one), then with it. All little-endian.

    input.bin:  u32 rows, u32 cols, f32 x[rows][cols], f32 importance[cols]

Usage (from this folder): ORACLE_CACHE=<oracle cache> python3 make_vectors.py <folder of ggml_ref.py>
"""
import os
import struct
import sys

import numpy as np

sys.path.insert(0, os.path.abspath(sys.argv[1]))
from ggml_ref import GGML, synthetic_imatrix  # noqa: E402

TYPES = ["iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "iq4_nl", "iq4_xs"]
ROWS, COLS = 6, 512

rng = np.random.default_rng(20260611)
x = np.empty((ROWS, COLS), np.float32)
# weight-like: N(0, 0.02), a few outliers x12
w = rng.standard_normal(COLS) * 0.02
w[rng.random(COLS) < 0.01] *= 12
x[0] = w
# heavy tails at a larger scale
x[1] = rng.laplace(size=COLS) * 0.5
# sparse: 70 % exact zeros
x[2] = np.where(rng.random(COLS) < 0.7, 0.0, rng.standard_normal(COLS))
# dyadic k/8: many exact ties
x[3] = rng.integers(-8, 9, COLS) / 8.0
# first half tiny (1e-7, block scales underflow f16), then a zero block and a constant block
x[4, :256] = rng.standard_normal(256) * 1e-7
x[4, 256:384] = 0.0
x[4, 384:] = -0.75
# N(0, 1) with per-32 scale jitter
x[5] = rng.standard_normal(COLS) * np.repeat(np.exp(rng.normal(0, 1, COLS // 32)), 32)
imp = synthetic_imatrix(COLS, seed=7)
imp[rng.random(COLS) < 0.05] = 0.0  # some columns never seen by the calibration data

with open("input.bin", "wb") as f:
    f.write(struct.pack("<II", ROWS, COLS))
    f.write(x.astype("<f4").tobytes())
    f.write(imp.astype("<f4").tobytes())

g = GGML()
for t in TYPES:
    out = b""
    if not g.requires_imatrix(t):
        out += g.quantize_chunk(t, x, None)
    out += g.quantize_chunk(t, x, imp)
    with open(f"{t}.bin", "wb") as f:
        f.write(out)
    print(t, len(out), "bytes")
