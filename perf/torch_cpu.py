#!/usr/bin/env python3
"""PyTorch eager on the CPU, for kiln-perf's CPU workloads, on machines without libtorch-dev.

kiln-perf's own peer column (perf/peers/, KILN_WITH_LIBTORCH=ON) needs Debian's libtorch-dev;
the GPU machine has none, but its python3 has PyTorch. This script times the same programs op
for op (perf/peers/libtorch_*.cpp: the same sizes, formulas and inputs; mlp_train through
autograd and torch.optim.SGD; block's attention written out as kiln's composite), in eager mode,
at each thread count of --threads, so that the table beside `kiln-perf --modes eager,jit`
answers BENCHMARKS.md's "faster than libtorch eager at its best thread count" on that machine.
Times: wall clock around each repetition, median of --reps after --warmup runs.

With --compile-latency it times torch.compile's first call instead, for BENCHMARKS.md's
compile_latency beside kiln-perf's `jit first ms` and `jit disk first ms`: each workload in a
fresh Python process (this script again, --first-call NAME), twice with one
TORCHINDUCTOR_CACHE_DIR: first empty (cold), then holding what the first process stored (warm
FX graph and kernel caches, as a program's second run finds them), at the machine's thread count.

Usage: python3 perf/torch_cpu.py [--threads 1,2,4,8,16] [--reps N] [--json FILE]
       python3 perf/torch_cpu.py --compile-latency [--workloads gelu,...]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import torch
import torch.nn.functional as F


def ramp(n, lo, hi):
    # kiln-perf's ramp_input: lo + (hi - lo) * frac(i * golden ratio).
    f = torch.arange(n, dtype=torch.float64) * 0.6180339887498949
    return (lo + (hi - lo) * (f - torch.floor(f))).to(torch.float32)


def gelu_case():
    x = ramp(1 << 24, -6.0, 6.0)

    def run():
        inner = (x + 0.044715 * x * x * x) * 0.79788456
        return 0.5 * x * (1.0 + torch.tanh(inner))

    return run


def layernorm_case():
    rows, cols = 8192, 1024
    x = ramp(rows * cols, -3.0, 3.0).view(rows, cols)
    w, b = ramp(cols, 0.5, 1.5), ramp(cols, -0.5, 0.5)

    def run():
        mu = x.mean(-1, keepdim=True)
        var = x.var(-1, unbiased=False, keepdim=True)
        return (x - mu) / torch.sqrt(var + 1e-5) * w + b

    return run


def softmax_case():
    x = ramp(8192 * 1024, -8.0, 8.0).view(8192, 1024)

    def run():
        e = torch.exp(x - x.amax(-1, keepdim=True))
        return e / e.sum(-1, keepdim=True)

    return run


def mlp_train_case():
    torch.manual_seed(0)
    widths = [784, 1024, 1024, 10]
    params = []
    for i in range(3):
        w = (torch.randn(widths[i + 1], widths[i]) * math.sqrt(2.0 / widths[i])).requires_grad_()
        params += [w, torch.zeros(widths[i + 1]).requires_grad_()]
    x, target = torch.randn(256, 784), torch.randint(0, 10, (256,))
    opt = torch.optim.SGD(params, lr=0.01)

    def run():
        opt.zero_grad()
        h = torch.relu(F.linear(x, params[0], params[1]))
        h = torch.relu(F.linear(h, params[2], params[3]))
        loss = F.cross_entropy(F.linear(h, params[4], params[5]), target)
        loss.backward()
        opt.step()
        return loss.item()

    return run


def block_case():
    torch.manual_seed(0)
    d, heads, batch, seq = 512, 8, 8, 512

    def weight(o, i):
        return torch.randn(o, i) * (1.0 / math.sqrt(i))

    x = torch.randn(batch, seq, d)
    ones, zeros = torch.ones(d), torch.zeros(d)
    qkv_w, qkv_b = weight(3 * d, d), torch.zeros(3 * d)
    proj_w, fc1_w, fc2_w = weight(d, d), weight(4 * d, d), weight(d, 4 * d)
    fc1_b = torch.zeros(4 * d)
    hd = d // heads

    def attention(q, k, v):
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(q.size(-1)))
        above = torch.ones(q.size(-2), k.size(-2), dtype=torch.bool).triu(1)
        scores = scores.masked_fill(above, float("-inf"))
        return torch.matmul(torch.softmax(scores, -1), v)

    def run():
        with torch.no_grad():
            h = F.layer_norm(x, (d,), ones, zeros)
            q, k, v = F.linear(h, qkv_w, qkv_b).chunk(3, -1)
            heads_of = lambda t: t.reshape(batch, seq, heads, hd).transpose(1, 2)
            a = attention(heads_of(q), heads_of(k), heads_of(v))
            a = a.transpose(1, 2).reshape(batch, seq, d)
            y = x + F.linear(a, proj_w, zeros)
            m = F.gelu(F.linear(F.layer_norm(y, (d,), ones, zeros), fc1_w, fc1_b), approximate="tanh")
            return y + F.linear(m, fc2_w, zeros)

    return run


def rnn_loop_case():
    torch.manual_seed(0)
    steps, batch, hidden = 64, 64, 256
    xs = torch.randn(steps, batch, hidden)
    w = torch.randn(hidden, hidden) * (1.0 / math.sqrt(hidden))
    u = torch.randn(hidden, hidden) * (1.0 / math.sqrt(hidden))
    b = torch.randn(hidden) * 0.1
    h0 = torch.zeros(batch, hidden)

    def run():
        with torch.no_grad():
            h, hs = h0, []
            for t in range(steps):
                h = torch.tanh(F.linear(xs[t], w, b) + F.linear(h, u))
                hs.append(h)
            return torch.stack(hs, 0)

    return run


def newton_case():
    a = ramp(1 << 20, 0.01, 10000.0)

    def run():
        x, prev, it = torch.ones_like(a), torch.zeros_like(a), 0
        while (torch.abs(x - prev) / x).amax().item() > 1e-6 and it < 100:
            prev, x, it = x, (x + a / x) * 0.5, it + 1
        return x

    return run


CASES = {"gelu": gelu_case, "layernorm": layernorm_case, "softmax": softmax_case,
         "mlp_train": mlp_train_case, "block": block_case, "rnn_loop": rnn_loop_case,
         "newton": newton_case}


def time_ms(run, reps, warmup):
    for _ in range(warmup):
        run()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times), min(times)


def first_call(name):
    # This process's first torch.compile of the workload: the first call (tracing, compiling or
    # loading from the caches, running), then the steady median.
    run = torch.compile(CASES[name]())
    t0 = time.perf_counter()
    run()
    first = (time.perf_counter() - t0) * 1e3
    med, _ = time_ms(run, 5, 1)
    print(json.dumps({"first_ms": first, "median_ms": med}))


def compile_latency(workloads):
    print(f"torch {torch.__version__} torch.compile on the CPU ({torch.get_num_threads()} threads): "
          "first call in a fresh process, cold and warm TORCHINDUCTOR_CACHE_DIR")
    print(f"{'workload':<12} {'cold first ms':>14} {'warm first ms':>14} {'median ms':>10}")
    for name in workloads:
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, TORCHINDUCTOR_CACHE_DIR=cache)
            got = []
            for _ in range(2):
                out = subprocess.run([sys.executable, __file__, "--first-call", name], env=env,
                                     capture_output=True, text=True)
                lines = [l for l in out.stdout.splitlines() if l.startswith("{")]
                if out.returncode != 0 or not lines:
                    got.append(None)
                    print(f"{name}: torch.compile failed: {out.stderr.strip()[-300:]}")
                    continue
                got.append(json.loads(lines[-1]))
            cells = [f"{g['first_ms']:>14.1f}" if g else f"{'-':>14}" for g in got]
            med = f"{got[-1]['median_ms']:>10.3f}" if got[-1] else f"{'-':>10}"
            print(f"{name:<12} {cells[0]} {cells[1]} {med}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compile-latency", action="store_true")
    ap.add_argument("--first-call")
    ap.add_argument("--threads", default="1,2,4,8,16")
    ap.add_argument("--workloads", default=",".join(CASES))
    ap.add_argument("--reps", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--json")
    args = ap.parse_args()
    if args.first_call:
        first_call(args.first_call)
        return
    if args.compile_latency:
        compile_latency(args.workloads.split(","))
        return
    threads = [int(t) for t in args.threads.split(",")]
    print(f"torch {torch.__version__} eager on the CPU; median / min ms of {args.reps} runs")
    print("workload     " + "".join(f"{t:>10} thr" for t in threads) + "   best")
    results = []
    for name in args.workloads.split(","):
        run = CASES[name]()
        row = []
        for t in threads:
            torch.set_num_threads(t)
            med, lo = time_ms(run, args.reps, args.warmup)
            row.append(med)
            results.append({"workload": name, "threads": t, "median_ms": med, "min_ms": lo})
        best = min(range(len(threads)), key=lambda i: row[i])
        print(f"{name:<12} " + "".join(f"{m:>14.3f}" for m in row) +
              f"   {row[best]:.3f} ({threads[best]} thr)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"torch": torch.__version__, "results": results}, f, indent=1)


if __name__ == "__main__":
    main()
