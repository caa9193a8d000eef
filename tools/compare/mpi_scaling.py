#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""clattn_mpi_attention on several PoCL ranks beside one, on this machine's
cores: each rank pinned to a core of its own (mpirun --bind-to core) with
one PoCL worker thread, so that one rank is one core's figure and N ranks
N cores'. Rows: a compute-bound causal prefill sharded by tokens (zigzag,
the ring and the all-gather) and a decoding step over a KV cache sharded
by keys.

How it times: ROUNDS interleaved rounds, the rank counts in turn, each a
run of tests/perf/time_mpi (one untimed call, then REPS calls, a barrier
before each, a call's time the slowest rank's, the median). Figures are
medians over rounds, speedups medians of per-round ratios (one rank's
time / N ranks'). Correctness is tests/test_mpi's (meson test).

usage: tools/compare/mpi_scaling.py [ROUNDS] [--ranks 2] [--build build]
"""
import json
import os
import statistics
import subprocess
import sys

ROWS = [
    ("prefill fp32 causal, ring", "1,8,8,4096,64", "fp32", "bottom-right", "tokens", "ring"),
    ("prefill fp32 causal, all-gather", "1,8,8,4096,64", "fp32", "bottom-right", "tokens",
     "allgather"),
    ("prefill fp16 causal, ring", "1,8,8,4096,64", "fp16", "bottom-right", "tokens", "ring"),
    ("decode fp16, keys sharded", "1,32,8,262144,128", "fp16", "bottom-right", "keys", "auto"),
]


def run(build, ranks, row, reps):
    _, shape, dtype, causal, shard, scheme = row
    env = dict(os.environ, POCL_MAX_PTHREAD_COUNT="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_btl="self,vader")
    cmd = ["mpirun", "-np", str(ranks), "--bind-to", "core",
           os.path.join(build, "tests", "perf", "time_mpi"), shape, dtype, causal, shard,
           scheme, str(reps)]
    out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main():
    args = sys.argv[1:]
    rounds = int(args[0]) if args and args[0].isdigit() else 5
    ranks = int(args[args.index("--ranks") + 1]) if "--ranks" in args else 2
    build = args[args.index("--build") + 1] if "--build" in args else "build"
    counts = [1, ranks]
    times = {(r[0], n): [] for r in ROWS for n in counts}
    ratios = {r[0]: [] for r in ROWS}
    schemes = {}
    for i in range(rounds):
        for row in ROWS:
            got = {}
            for n in (counts if i % 2 == 0 else counts[::-1]):
                res = run(build, n, row, 5)
                got[n] = res["seconds"]
                times[(row[0], n)].append(res["seconds"])
                schemes[(row[0], n)] = res["scheme"]
            ratios[row[0]].append(got[1] / got[ranks])
        print("round %d of %d done" % (i + 1, rounds), file=sys.stderr)
    print("| row | shape B,H,Hkv,N,d | 1 rank ms | %d ranks ms (scheme) | speedup |" % ranks)
    print("| --- | --- | --- | --- | --- |")
    for row in ROWS:
        name = row[0]
        print("| %s | %s | %.1f | %.1f (%s) | **%.2f** |" % (
            name, row[1], 1e3 * statistics.median(times[(name, 1)]),
            1e3 * statistics.median(times[(name, ranks)]), schemes[(name, ranks)],
            statistics.median(ratios[name])))


if __name__ == "__main__":
    main()
