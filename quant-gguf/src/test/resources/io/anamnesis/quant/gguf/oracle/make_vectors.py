"""Oracle vectors for the ggml encoders: small F32 matrices and the bytes ggml's own
ggml_quantize_chunk makes of them, with and without an importance matrix.

This script holds no ggml code: it calls the reference library through the project's
oracle wrapper (ggml_ref.py, see the README beside this file), so every expected byte
comes from ggml itself. Output: one gzip'd text file, one line per array,
"<key> <base64 of the little-endian bytes>", sorted by key.

Keys:
  input/<matrix>         float32 rows x cols (cols in shape/<matrix>)
  shape/<matrix>         two little-endian int32: rows, cols
  imatrix/<matrix>       float32 cols, the importance weights given with that matrix
  <type>/<matrix>        ggml_quantize_chunk(type, input, imatrix=NULL)
                         (q8_1, q8_K: quantize_row_<type>_ref, which the chunk path lacks)
  <type>+imatrix/<matrix> ggml_quantize_chunk(type, input, imatrix)
"""
import base64
import gzip
import struct
import sys

import numpy as np

from ggml_ref import GGML, synthetic_imatrix

# ggml's own spelling
PLAIN = ["f16", "bf16"]
BLOCK = ["q4_0", "q4_1", "q5_0", "q5_1", "q8_0", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
         "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0", "q2_0"]
# ggml_quantize_chunk has no case for these internal dot-product types: quantize_row_*_ref
REF_ONLY = ["q8_1", "q8_K"]
# the chunk path reads the importance matrix for these (q1_0 reads it and ignores it)
WITH_IMATRIX = ["q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K", "q1_0"]


def weights():
    """4 x 512 weight-like rows: N(0, 0.02), per-row scale jitter, 0.5 % outliers x12."""
    rng = np.random.default_rng(20240618)
    x = rng.normal(0.0, 0.02, size=(4, 512)).astype(np.float32)
    x *= np.exp(rng.normal(0.0, 0.3, size=(4, 1))).astype(np.float32)
    mask = rng.random(x.shape) < 0.005
    x[mask] *= 12
    return x.astype(np.float32)


def edges():
    """8 x 256 edge rows: zero, constant, huge (f16 scales overflow), tiny (f16 scales
    underflow), float subnormals (1/d overflows), dyadic k/16 ties, alternating, negative."""
    rng = np.random.default_rng(7)
    n = 256
    rows = [
        np.zeros(n),
        np.full(n, 0.5),
        rng.normal(0.0, 1.0, n) * np.where(np.arange(n) % 37 == 0, 1.0e5, 1.0),
        rng.normal(0.0, 1.0e-7, n),
        rng.normal(0.0, 1.0e-39, n),
        (np.arange(n) % 65 - 32) / 16.0,
        np.where(np.arange(n) % 2 == 0, 1.0, -1.0),
        -np.abs(rng.normal(0.0, 1.0, n)),
    ]
    return np.array(rows, dtype=np.float32)


def binades():
    """1 x 512: sixteen 32-blocks whose largest magnitude sits at or next to a power of two,
    where glibc's log2f rounds up to the next integer for some (MXFP4's exponent), across
    the float range (2^-126 and 2^127 included; sums of squares overflow there)."""
    f = lambda b: struct.unpack("<f", struct.pack("<I", b))[0]
    bits = lambda v: struct.unpack("<I", struct.pack("<f", v))[0]
    below = lambda k, d: f(bits(2.0 ** k) - d)
    tops = [below(-126, 1), below(-30, 2), below(-10, 1), below(-10, 2), below(3, 1), below(3, 2),
            below(7, 2), below(7, 8), below(20, 8), below(60, 1), below(127, 8), below(0, 1),
            8.0, 2.0 ** -20, f(bits(4.0) + 1), 1.0e-39]
    rng = np.random.default_rng(3)
    x = np.zeros((1, 512), dtype=np.float32)
    for b, top in enumerate(tops):
        block = (rng.uniform(-1.0, 1.0, 32) * top).astype(np.float32)
        block[b % 32] = top if b % 2 == 0 else -top
        x[0, 32 * b:32 * b + 32] = block
    return x


def specials():
    """1 x 64 values for F16/BF16: infinities, NaNs (payloads, signs), signed zeros,
    f16 overflow and its rounding boundary, f16 subnormals and ties, bf16 ties."""
    u = lambda b: struct.unpack("<f", struct.pack("<I", b))[0]
    v = [float("inf"), float("-inf"), u(0x7FC00000), u(0xFFC00000), u(0x7F800001), u(0x7FA12345),
         u(0xFF812345), -0.0, 0.0, 65504.0, 65519.99, 65520.0, -65520.0, 1.0e5, 3.0e38, -3.0e38,
         2.0 ** -24, 2.0 ** -25, 3 * 2.0 ** -26, 2.0 ** -25 + 2.0 ** -40, 5.9e-8, -5.9e-8,
         1.0 + 2.0 ** -11, 1.0 + 3 * 2.0 ** -11, 1.0 + 2.0 ** -8, 1.0 + 3 * 2.0 ** -8,
         1.0 + 2.0 ** -8 + 2.0 ** -20, 1.0e-40, -1.0e-40, u(0x00000001), u(0x807FFFFF),
         6.1e-5, 6.097e-5, 0.1, -0.1, 1.0 / 3.0, 2.0 / 3.0, 1.0e-3, 1234.5678, -7.77]
    rng = np.random.default_rng(11)
    v += list(rng.normal(0.0, 10.0, 64 - len(v)))
    return np.array([v], dtype=np.float32)


def main(out_path):
    g = GGML()
    mats = {"weights": weights(), "edges": edges(), "binades": binades(), "specials": specials()}
    lines = {}
    put = lambda k, b: lines.__setitem__(k, base64.b64encode(bytes(b)).decode())
    imatrices = {}
    for name, x in mats.items():
        put("input/" + name, x.astype("<f4").tobytes())
        put("shape/" + name, struct.pack("<ii", *x.shape))
        im = synthetic_imatrix(x.shape[1], seed=len(name))
        im[::17] = 0.0  # some columns carry no weight at all
        imatrices[name] = im.astype(np.float32)
        put("imatrix/" + name, imatrices[name].astype("<f4").tobytes())
    for t in PLAIN:
        for name, x in mats.items():
            put(f"{t}/{name}", g.quantize_chunk(t, x))
    for t in BLOCK:
        for name in ("weights", "edges", "binades"):
            x = mats[name]
            put(f"{t}/{name}", g.quantize_chunk(t, x))
            if t in WITH_IMATRIX:
                put(f"{t}+imatrix/{name}", g.quantize_chunk(t, x, imatrices[name]))
    for t in REF_ONLY:
        for name in ("weights", "edges", "binades"):
            put(f"{t}/{name}", g.quantize_ref(t, mats[name]))
    with gzip.GzipFile(out_path, "wb", mtime=0) as f:
        for k in sorted(lines):
            f.write(f"{k} {lines[k]}\n".encode())


if __name__ == "__main__":
    main(sys.argv[1])
