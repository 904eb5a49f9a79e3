"""Reference timings for GgufEncodeBench: ggml's C quantizer (ggml_quantize_chunk, one
thread, through the oracle wrapper ggml_ref.py) and gguf-py's NumPy quantizers
(gguf.quants.quantize, where it has the type) on the same shape, a weight-like
[256, 4096] F32 matrix and, for +imatrix, an importance row. No ggml code here.

    export ORACLE_CACHE=<oracle cache>     # see the shared tools/oracles/README.md
    PYTHONPATH=<shared tools>/oracles:$ORACLE_CACHE/llama/gguf-py python3 bench/scripts/ggml_encode_reference.py [types...]

Prints one line per type: best and median milliseconds of 7 runs after 2 warm-ups, and
Gelem/s from the median, measured as the thread's CPU time (time.thread_time), as
bench's CpuTime measures the Java encoders (GgufEncodeBench), so that both stand on a shared machine.
"""
import statistics
import sys
import time

import numpy as np

from ggml_ref import GGML

ROWS, COLS = 256, 4096
TYPES = ["q8_0", "q4_0", "q4_1", "q5_0", "q5_1", "q2_K", "q3_K", "q4_K", "q5_K", "q6_K",
         "q4_0+imatrix", "q4_1+imatrix", "q5_0+imatrix", "q5_1+imatrix",
         "q2_K+imatrix", "q3_K+imatrix", "q4_K+imatrix", "q5_K+imatrix", "q6_K+imatrix",
         "tq1_0", "tq2_0", "mxfp4", "nvfp4", "q1_0", "q2_0", "f16", "bf16"]


def weight_like(seed=20240618):
    rng = np.random.default_rng(seed)
    x = rng.normal(0.0, 0.02, size=(ROWS, COLS)) * np.exp(rng.normal(0.0, 0.3, size=(ROWS, 1)))
    x[rng.random(x.shape) < 0.002] *= 12
    return np.ascontiguousarray(x, dtype=np.float32)


def importance(seed=1234):
    rng = np.random.default_rng(seed)
    return (np.exp(rng.normal(0.0, 0.5, COLS)) ** 2).astype(np.float32)


def timed(fn, warm=2, runs=7):
    for _ in range(warm):
        fn()
    ts = []
    for _ in range(runs):
        t0 = time.thread_time()
        fn()
        ts.append((time.thread_time() - t0) * 1e3)
    return min(ts), statistics.median(ts)


def main(types):
    g = GGML()
    x = weight_like()
    im = importance()
    try:
        import gguf
        from gguf import quants
    except ImportError:
        gguf = None
    print(f"{'type':14s} {'ggml ms':>9s} {'(best)':>8s} {'Gelem/s':>8s} {'gguf-py ms':>11s} {'Gelem/s':>8s}")
    for t in types:
        name = t.replace("+imatrix", "")
        w = im if t.endswith("+imatrix") else None
        best, med = timed(lambda: g.quantize_chunk(name, x, w))
        line = f"{t:14s} {med:9.2f} {best:8.2f} {x.size / med / 1e6:8.3f}"
        if gguf is not None and w is None:
            qt = getattr(gguf.GGMLQuantizationType, name.upper(), None)
            try:
                if qt is None:
                    raise NotImplementedError
                quants.quantize(x[:2], qt)
                _, pmed = timed(lambda: quants.quantize(x, qt), warm=1, runs=3)
                line += f" {pmed:11.2f} {x.size / pmed / 1e6:8.3f}"
            except (NotImplementedError, ValueError, TypeError):
                line += f" {'-':>11s} {'-':>8s}"
        print(line, flush=True)


if __name__ == "__main__":
    main(sys.argv[1:] or TYPES)
