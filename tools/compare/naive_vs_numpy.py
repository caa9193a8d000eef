#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The naive path on a CPU device (its built-in GEMM and softmax, or
CLBlast's GEMMs) beside numpy's matmul-softmax-matmul, stage by stage:
Q·Kᵀ, softmax, P·V and the whole path, B = 1, H = 2, d = 128, no mask,
N = 1024 and 4096, fp16 and fp32 (numpy in fp32: its fp16 matmul is not BLAS).

How it times: ROUNDS interleaved rounds, the order rotating each round; each
round first measures the FMA peak (`clattn devices --measure --no-sweep`, a
private cache folder). clattn by tests/perf/time_naive (each stage from the
profiling events of the kernels it launched; 10 calls at N = 1024, 3 at
4096, the median), numpy by tools/compare/cpu_peers.py stages (each stage on
the wall clock, the same counts). Every figure is a median over rounds of
the per-round medians, every ratio a median of per-round ratios; % of peak
is of the best peak the rounds measured (a round's own measurement can lose
a core to another job at another moment than its runs). Every clattn case
is checked once first (`clattn verify --shape --path naive`).

usage: tools/compare/naive_vs_numpy.py [ROUNDS] [--quick] [--clblast]
           [--kernels LABEL=DIR]... [--json OUT.jsonl]
  --quick     N = 1024 only
  --clblast   also the fp32 path with CLBlast's GEMMs (use_clblast = 1)
  --kernels   also the built-in path with the kernel sources of DIR
              (CLATTN_KERNEL_DIR: a variant of cl/), beside the default
  PEERS_PY: a Python with numpy.
"""
import json
import os
import sys

from cpu_common import TIME_NAIVE, med, peak, peer, run, verify

B, H, D = 1, 2, 128
STAGES = ("qk", "softmax", "pv", "total")


def flops(stage, N):
    f = 2.0 * B * H * N * N * D
    return {"qk": f, "pv": f, "softmax": 0.0, "total": 2 * f}[stage]


def main():
    args = sys.argv[1:]
    rounds = int(args[0]) if args and args[0].isdigit() else 3
    ns = [1024] if "--quick" in args else [1024, 4096]
    variants = [("builtin", None)]
    for i, a in enumerate(args):
        if a == "--kernels":
            label, _, folder = args[i + 1].partition("=")
            variants.append((label, os.path.abspath(folder)))
    log = open(args[args.index("--json") + 1], "w") if "--json" in args else None
    runs = []  # (key, argv, env)
    for N in ns:
        reps = "10" if N <= 1024 else "3"
        shape = "%d,%d,%d,%d,%d,%d" % (B, H, H, N, N, D)
        runs.append((("numpy", N, "fp32"), ["stages", "%d,%d,%d,%d" % (B, H, N, D), reps], None))
        for dt in ("fp16", "fp32"):
            verify(shape, dt, "none", path="naive")
            for label, folder in variants:
                env = dict(os.environ, CLATTN_KERNEL_DIR=folder) if folder else None
                runs.append(((label, N, dt), [TIME_NAIVE, shape, dt, "none", "builtin", reps], env))
            if "--clblast" in args and dt == "fp32":
                runs.append((("clblast", N, dt), [TIME_NAIVE, shape, dt, "none", "clblast", reps], None))
    res, kernels, peaks = {}, {}, []
    for r in range(rounds):
        peaks.append(peak())
        for key, argv, env in runs[r % len(runs):] + runs[:r % len(runs)]:
            rec = peer(argv) if key[0] == "numpy" else json.loads(run(argv, env))
            if "kernel" in rec:
                kernels[key] = rec["kernel"]
            for s in STAGES:
                res.setdefault(key + (s,), []).append(med(rec[s]))
            cpu = rec["cpu_per_rep"] if "cpu_per_rep" in rec else med(rec["cpu"])
            res.setdefault(key + ("cpu",), []).append(cpu)
            if log:
                log.write(json.dumps({"round": r, "key": list(key), "peak": peaks[-1], **rec}) + "\n")
                log.flush()
        print("round %d/%d done" % (r + 1, rounds), file=sys.stderr, flush=True)
    best = max(peaks)
    print("fp32 FMA peak (clattn devices --measure, every round): best %.0f GFLOP/s, median %.0f "
          "(rounds: %s); %d rounds\n" % (best / 1e9, med(peaks) / 1e9,
                                         ", ".join("%.0f" % (p / 1e9) for p in peaks), rounds))
    print("| N | dtype | GEMM | stage | ms | GFLOP/s | % peak | numpy fp32 ms | numpy / clattn |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    labels = [l for l, _ in variants] + (["clblast"] if "--clblast" in args else [])
    for N in ns:
        for dt in ("fp16", "fp32"):
            for label in labels:
                key = (label, N, dt)
                if key + ("qk",) not in res:
                    continue
                for s in STAGES:
                    t, npy, f = res[key + (s,)], res[("numpy", N, "fp32", s)], flops(s, N)
                    print("| %d | %s | %s (%s) | %s | %.2f | %s | %s | %.2f | %.2f |" % (
                        N, dt, label, kernels.get(key, "?"), s, med(t) * 1e3,
                        "%.0f" % (f / med(t) / 1e9) if f else "—",
                        "%.0f%%" % (100 * f / med(t) / best) if f else "—", med(npy) * 1e3,
                        med([b / a for a, b in zip(t, npy)])))
                c, nc = res[key + ("cpu",)], res[("numpy", N, "fp32", "cpu")]
                cg = 2 * flops("total", N) / med(c)
                print("| %d | %s | %s | whole path, CPU s | %.2f CPU ms | %.0f | %.0f%% | %.2f CPU ms "
                      "| %.2f |" % (N, dt, label, med(c) * 1e3, cg / 1e9, 100 * cg / best,
                                    med(nc) * 1e3, med([b / a for a, b in zip(c, nc)])))
    print()
    print("ms: median over rounds of each run's median; numpy / clattn: median of per-round ratios. "
          "The CPU-s row: the whole path's FLOPs per CPU-second of the process × the 2 cores, and "
          "CPU ms per call.")


if __name__ == "__main__":
    main()
