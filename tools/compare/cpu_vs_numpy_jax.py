#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""clattn's fused path on a CPU device (AUTO: the `cpu` kernel under PoCL)
beside JAX's jitted jax.nn.dot_product_attention and numpy's
matmul-softmax-matmul on the same cores, in one script.

How it times: ROUNDS interleaved rounds, the order of the cases rotating
each round; each round first measures the FMA peak (`clattn devices
--measure --no-sweep`, a private cache folder) and numpy's 2048³ sgemm,
then every case: clattn by tests/perf/time_fused (one untimed call, then 5
calls back to back and clFinish on the host clock, 3 times, the median; the
process's CPU seconds per call beside it) and each peer by
tools/compare/cpu_peers.py (one warm-up, then 3 calls timed one by one, the
median). Every figure is a median over rounds of the per-round medians,
every ratio (and % of peak) a median of per-round ratios: the machine may be
shared, so single times are not compared. Every case is checked once first
(`clattn verify --shape`, the fused path against the CPU reference).

Cases: B = 1, H = 2, d = 128, N = 1024, no mask, fp32 (JAX, numpy) and fp16
(JAX with fp16 storage and fp32 arithmetic); d = 64, N = 4096, causal
(top-left), fp32 (JAX, numpy) and fp16.

usage: tools/compare/cpu_vs_numpy_jax.py [ROUNDS] [--json OUT.jsonl] [--quick]
  ROUNDS default 3; --quick: the d = 128 N = 1024 cases only.
  PEERS_PY: a Python with numpy, JAX and threadpoolctl (see
  tools/compare/cpu_common.py for the other settings).
"""
import json
import sys

from cpu_common import med, peak, peer, time_fused, verify, PEERS_PY, run, PEER_ENV


def flops(B, H, N, d, causal):
    f = 4.0 * B * H * N * N * d
    return f / 2 if causal else f


# (name, (shape, dtype, mask), FLOPs, peers: (label, cpu_peers.py arguments))
CASES = [
    ("d128 N1024 fp32", ("1,2,2,1024,1024,128", "fp32", "none"), flops(1, 2, 1024, 128, 0),
     [("jax", ["jax", "fp32", "128", "1", "2", "1024", "no", "3"]),
      ("numpy", ["numpy", "fp32", "128", "1", "2", "1024", "no", "3"])]),
    ("d128 N1024 fp16", ("1,2,2,1024,1024,128", "fp16", "none"), flops(1, 2, 1024, 128, 0),
     [("jax-fp16c", ["jax", "fp16c", "128", "1", "2", "1024", "no", "3"])]),
    ("d64 N4096 causal fp32", ("1,2,2,4096,4096,64", "fp32", "top-left"), flops(1, 2, 4096, 64, 1),
     [("jax", ["jax", "fp32", "64", "1", "2", "4096", "yes", "3"]),
      ("numpy", ["numpy", "fp32", "64", "1", "2", "4096", "yes", "3"])]),
    ("d64 N4096 causal fp16", ("1,2,2,4096,4096,64", "fp16", "top-left"), flops(1, 2, 4096, 64, 1),
     []),
]
FP16_PAIRS = [("d128 N1024 fp16", "d128 N1024 fp32"), ("d64 N4096 causal fp16", "d64 N4096 causal fp32")]


def sgemm():
    code = ("import numpy as np, time\n"
            "a=np.random.rand(2048,2048).astype(np.float32); b=a.copy(); a@b; t=[]\n"
            "for _ in range(5):\n t0=time.perf_counter(); a@b; t.append(time.perf_counter()-t0)\n"
            "print(sorted(t)[2])")
    return 2 * 2048 ** 3 / float(run([PEERS_PY, "-c", code], env=PEER_ENV).split()[-1])


def main():
    args = sys.argv[1:]
    rounds = int(args[0]) if args and args[0].isdigit() else 3
    cases = CASES[:2] if "--quick" in args else CASES
    pairs = FP16_PAIRS[:1] if "--quick" in args else FP16_PAIRS
    log = open(args[args.index("--json") + 1], "w") if "--json" in args else None
    for _, c, _, _ in cases:
        verify(*c)
    res, kernels, peaks, gemm = {}, {}, [], []
    for r in range(rounds):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        peaks.append(peak())
        gemm.append(sgemm())
        for name, c, _, peers in order:
            t, cpu, kern = time_fused(*c)
            kernels[name] = kern
            res.setdefault((name, "clattn"), []).append(t)
            res.setdefault((name, "clattn-cpu"), []).append(cpu)
            for label, argv in peers:
                row = peer(argv)
                res.setdefault((name, label), []).append(med(row["wall"]))
                res.setdefault((name, label, "cpu"), []).append(med(row["cpu"]))
            if log:
                log.write(json.dumps({"round": r, "case": name, "peak": peaks[-1], "clattn": t,
                                      "clattn_cpu": cpu, "kernel": kern,
                                      **{l: res[(name, l)][-1] for l, _ in peers}}) + "\n")
                log.flush()
        print("round %d/%d done" % (r + 1, rounds), file=sys.stderr, flush=True)

    print("fp32 FMA peak (clattn devices --measure, every round): median %.0f GFLOP/s (rounds: %s); "
          "numpy sgemm 2048^3: %.0f GFLOP/s (%.0f%% of the round's peak); %d rounds\n" % (
              med(peaks) / 1e9, ", ".join("%.0f" % (p / 1e9) for p in peaks), med(gemm) / 1e9,
              100 * med([g / p for g, p in zip(gemm, peaks)]), rounds))
    print("| case | kernel | clattn ms | clattn GFLOP/s | % peak | CPU-s GFLOP/s | peer | peer ms "
          "| peer GFLOP/s | peer / clattn | same, CPU s |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, _, fl, peers in cases:
        t, c = res[(name, "clattn")], res[(name, "clattn-cpu")]
        pct = med([fl / x / p for x, p in zip(t, peaks)])
        line = "| %s | %s | %.2f | %.0f | %.0f%% | %.0f |" % (
            name, kernels[name].replace("fused/", ""), med(t) * 1e3, fl / med(t) / 1e9, 100 * pct,
            2 * fl / med(c) / 1e9)
        if not peers:
            print(line + " — | — | — | — | — |")
        for label, _ in peers:
            p, pc = res[(name, label)], res[(name, label, "cpu")]
            print(line + " %s | %.2f | %.0f | %.2f | %.2f |" % (
                label, med(p) * 1e3, fl / med(p) / 1e9, med([a / b for a, b in zip(p, t)]),
                med([a / b for a, b in zip(pc, c)])))
    print()
    print("% peak: median over rounds of GFLOP/s / that round's peak. CPU-s GFLOP/s: FLOPs per "
          "CPU-second of the process × the 2 cores (what the kernel does while it holds them). "
          "Ratios: medians of per-round ratios, wall clock and CPU seconds.\n")
    for a, b in pairs:
        w = med([x / y for x, y in zip(res[(a, "clattn")], res[(b, "clattn")])])
        c = med([x / y for x, y in zip(res[(a, "clattn-cpu")], res[(b, "clattn-cpu")])])
        print("- %s / fp32: %.3f (wall), %.3f (CPU seconds)" % (a, w, c))


if __name__ == "__main__":
    main()
