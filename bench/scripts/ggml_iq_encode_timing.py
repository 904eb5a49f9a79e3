"""Times ggml's C i-quant encoder (ggml_quantize_chunk, one thread) on GgufIqEncodeBench's matrix.

Builds the same [16, 4096] F32 matrix and importance row as the JMH class (counter-based
splitmix64, bit for bit), checks nothing, and prints per type and imatrix setting the median
wall time of the timed calls in ms and Melem/s, and the median thread CPU time (the figure
that holds up on a loaded machine). Uses tools/oracles/ggml_ref.py (the plain C build of
libggml-base that the corpus was made with).

    ORACLE_CACHE=<oracle cache> python3 bench/scripts/ggml_iq_encode_timing.py <folder of ggml_ref.py> [calls [types]]

`types` is a comma-separated subset (default: all nine), so that each type can be timed
right before or after its JMH run on a shared machine.
"""
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.abspath(sys.argv[1]))
from ggml_ref import GGML  # noqa: E402

ROWS, COLS = 16, 4096
M64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def draw(seed, k):
    with np.errstate(over="ignore"):
        z = np.uint64(seed) + (k.astype(np.uint64) + np.uint64(1)) * np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (z >> np.uint64(11)).astype(np.float64) * 2.0 ** -53


i = np.arange(ROWS * COLS, dtype=np.int64)
g = draw(1, 5 * i) + draw(1, 5 * i + 1) + draw(1, 5 * i + 2) + draw(1, 5 * i + 3) - 2
row_scale = 0.5 + (i // COLS % 7) * 0.25
x = (g * 0.02 * row_scale).astype(np.float32)
x = np.where(draw(1, 5 * i + 4) < 1.0 / 512, x * np.float32(12), x).astype(np.float32).reshape(ROWS, COLS)
imp = (0.25 + 4 * draw(2, np.arange(COLS, dtype=np.int64))).astype(np.float32)

calls = int(sys.argv[2]) if len(sys.argv) > 2 else 15
gg = GGML()
types = sys.argv[3].split(",") if len(sys.argv) > 3 else \
    ["iq4_nl", "iq4_xs", "iq3_xxs", "iq3_s", "iq2_xxs", "iq2_xs", "iq2_s", "iq1_s", "iq1_m"]
for t in types:
    for use in (False, True):
        w = imp if use or gg.requires_imatrix(t) else None
        if not use and w is not None:
            continue
        c = time.thread_time()
        gg.quantize_chunk(t, x, w)  # the first call runs ggml_quantize_init: timed apart
        first = time.thread_time() - c
        times, cpu = [], []
        for _ in range(calls):
            s, c = time.perf_counter(), time.thread_time()
            gg.quantize_chunk(t, x, w)
            times.append(time.perf_counter() - s)
            cpu.append(time.thread_time() - c)
        med = statistics.median(times)
        print(f"{t:8s} imatrix={str(w is not None):5s} {med * 1e3:9.2f} ms  {x.size / med / 1e6:7.2f} Melem/s"
              f"  (min {min(times) * 1e3:.2f} ms; thread CPU median {statistics.median(cpu) * 1e3:.2f} ms;"
              f" first call {first * 1e3:.0f} ms CPU)")
