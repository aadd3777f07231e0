#!/usr/bin/env python3
"""PyTorch on the same GPU workloads as `kiln-perf --devices cuda`, for a side-by-side table.

Run it in the same device session as kiln-perf (docs/performance-history.md, "CUDA"): same GPU, same
sizes, same formulas (written out of primitives, as kiln-perf's workloads are), same GB/s
accounting (one read + one write of the tensor). Each workload is timed in PyTorch eager, with
the fused torch op where one exists (F.gelu(approximate='tanh'), F.layer_norm, softmax), and
with torch.compile (skipped with a note where it cannot run, e.g. without a C compiler).
Times: CUDA events around each repetition, median of --reps after --warmup runs.

Usage: python3 perf/torch_cuda.py [--size small|default] [--reps N] [--json FILE]
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F


def ramp(n, lo, hi, device):
    # The same inputs as kiln-perf's ramp_input: lo + (hi - lo) * frac(i * golden ratio).
    i = torch.arange(n, dtype=torch.float64)
    f = i * 0.6180339887498949
    return (lo + (hi - lo) * (f - torch.floor(f)).to(torch.float32)).to(device)


def gelu_prims(x):
    inner = (x + 0.044715 * x * x * x) * 0.79788456
    return 0.5 * x * (1.0 + torch.tanh(inner))


def layernorm_prims(x, w, b):
    mu = x.mean(-1, keepdim=True)
    var = x.var(-1, unbiased=False, keepdim=True)
    return (x - mu) / torch.sqrt(var + 1e-5) * w + b


def softmax_prims(x):
    e = torch.exp(x - x.amax(-1, keepdim=True))
    return e / e.sum(-1, keepdim=True)


def time_ms(fn, reps, warmup):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start = torch.cuda.Event(enable_timing=True)
        end = torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--size", choices=["small", "default"], default="default")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--no-compile", action="store_true", help="skip torch.compile")
    a = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_cuda.py: torch sees no CUDA device", file=sys.stderr)
        return 2
    dev = torch.device("cuda", 0)
    small = a.size == "small"
    n_copy = 1 << (24 if small else 26)
    n_gelu = 1 << (22 if small else 24)
    rows, cols = (2048 if small else 8192), 1024

    x_copy = ramp(n_copy, -1.0, 1.0, dev)
    y_copy = torch.zeros_like(x_copy)
    x_gelu = ramp(n_gelu, -6.0, 6.0, dev)
    x_ln = ramp(rows * cols, -3.0, 3.0, dev).view(rows, cols)
    w_ln = ramp(cols, 0.5, 1.5, dev)
    b_ln = ramp(cols, -0.5, 0.5, dev)
    x_sm = ramp(rows * cols, -8.0, 8.0, dev).view(rows, cols)

    cases = [
        # workload, variant, fn, bytes
        ("copy", "torch copy_ (cudaMemcpy)", lambda: y_copy.copy_(x_copy), 8.0 * n_copy),
        ("gelu", "torch eager (primitives)", lambda: gelu_prims(x_gelu), 8.0 * n_gelu),
        ("gelu", "torch F.gelu(tanh)", lambda: F.gelu(x_gelu, approximate="tanh"), 8.0 * n_gelu),
        ("layernorm", "torch eager (primitives)", lambda: layernorm_prims(x_ln, w_ln, b_ln),
         8.0 * rows * cols),
        ("layernorm", "torch F.layer_norm", lambda: F.layer_norm(x_ln, (cols,), w_ln, b_ln, 1e-5),
         8.0 * rows * cols),
        ("softmax", "torch eager (primitives)", lambda: softmax_prims(x_sm), 8.0 * rows * cols),
        ("softmax", "torch softmax", lambda: torch.softmax(x_sm, -1), 8.0 * rows * cols),
    ]
    if not a.no_compile:
        compiled = [
            ("gelu", gelu_prims, (x_gelu,), 8.0 * n_gelu),
            ("layernorm", layernorm_prims, (x_ln, w_ln, b_ln), 8.0 * rows * cols),
            ("softmax", softmax_prims, (x_sm,), 8.0 * rows * cols),
        ]
        for name, fn, args, nbytes in compiled:
            try:
                c = torch.compile(fn)
                c(*args)  # compile outside the timing
                cases.append((name, "torch.compile", (lambda c=c, args=args: c(*args)), nbytes))
            except Exception as e:  # no compiler, no triton: say so, keep the rest
                print(f"torch_cuda.py: torch.compile of {name} failed: {type(e).__name__}: {e}",
                      file=sys.stderr)

    results = []
    name = torch.cuda.get_device_name(dev)
    print(f"device: {name}; torch {torch.__version__}; CUDA {torch.version.cuda}")
    print(f"{'workload':<10} {'variant':<26} {'median ms':>10} {'min ms':>8} {'GB/s':>9}")
    for workload, variant, fn, nbytes in cases:
        med, lo, hi = time_ms(fn, a.reps, a.warmup)
        gbps = nbytes / (med * 1e-3) / 1e9
        print(f"{workload:<10} {variant:<26} {med:10.4f} {lo:8.4f} {gbps:9.1f}")
        results.append({"workload": workload, "variant": variant, "median_ms": med,
                        "min_ms": lo, "max_ms": hi, "gbps": gbps})
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"device": name, "torch": torch.__version__, "cuda": torch.version.cuda,
                       "size": a.size, "reps": a.reps, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
