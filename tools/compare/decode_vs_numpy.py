#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A decoding step on a CPU device: clattn's fused path (AUTO: the `cpu`
kernel's decode layout under PoCL, keys across the vector lanes) beside
numpy's (one query token per head, grouped-query: matmul, softmax, matmul),
B = 1, H = 8, Hkv = 2, Nk = 32768, d = 128, on the same cores. clattn reads
K and V in fp32, fp16 and as a q8_0 cache (fp16 queries, 34 bytes per 32
values); numpy's fp32 is also what it would run on that cache dequantized.

How it times: ROUNDS interleaved rounds, the order rotating each round:
clattn fp32, fp16 and q8_0 by tests/perf/time_fused (one untimed call, then
20 calls back to back and clFinish on the host clock, 3 times, the median),
numpy fp32 by tools/compare/cpu_peers.py decode (one warm-up, then 7 calls
timed one by one, the median). Figures are medians over rounds, ratios
medians of per-round ratios. The clattn cases are checked once first
(`clattn verify --shape`, q8_0 against the reference on the same quantized
K and V). A decoding step reads K and V once: the table gives that rate
beside the times.

usage: tools/compare/decode_vs_numpy.py [ROUNDS] [--shape B,H,Hkv,Nk,d]
  ROUNDS default 5; PEERS_PY: a Python with numpy.
"""
import sys

from cpu_common import med, peer, time_fused, verify


def main():
    args = sys.argv[1:]
    rounds = int(args[0]) if args and args[0].isdigit() else 5
    shape = args[args.index("--shape") + 1] if "--shape" in args else "1,8,2,32768,128"
    B, H, Hkv, Nk, d = (int(x) for x in shape.split(","))
    tf_shape = "%d,%d,%d,1,%d,%d" % (B, H, Hkv, Nk, d)
    for dt in ("fp32", "fp16"):
        verify(tf_shape, dt, "none")
    verify(tf_shape, "fp16", "none", kv_type="q8_0")
    runs = [("clattn fp32", lambda: time_fused(tf_shape, "fp32", "none", reps=20)),
            ("clattn fp16", lambda: time_fused(tf_shape, "fp16", "none", reps=20)),
            ("clattn q8_0", lambda: time_fused(tf_shape, "fp16", "none", reps=20, kv_type="q8_0")),
            ("numpy fp32", lambda: (med(peer(["decode", shape, "7"])["wall"]), None, "numpy"))]
    bytes_per_value = {"fp32": 4, "fp16": 2, "q8_0": 34 / 32}
    res, kernels = {}, {}
    for r in range(rounds):
        for label, fn in runs[r % len(runs):] + runs[:r % len(runs)]:
            t, _, kern = fn()
            res.setdefault(label, []).append(t)
            kernels[label] = kern
        print("round %d/%d done" % (r + 1, rounds), file=sys.stderr, flush=True)
    print("B = %d, H = %d, Hkv = %d, Nq = 1, Nk = %d, d = %d; %d rounds\n" % (B, H, Hkv, Nk, d, rounds))
    print("| who | kernel | ms | K/V read | numpy / clattn |")
    print("| --- | --- | --- | --- | --- |")
    npy, f16 = res["numpy fp32"], res["clattn fp16"]
    for label, _ in runs:
        t = res[label]
        kv = 2.0 * B * Hkv * Nk * d * bytes_per_value[label.split()[1]]
        ratio = "%.2f" % med([n / x for n, x in zip(npy, t)]) if label.startswith("clattn") else "—"
        print("| %s | %s | %.2f | %.1f GB/s | %s |" % (label, kernels[label].replace("fused/", ""),
                                                     med(t) * 1e3, kv / med(t) / 1e9, ratio))
    print("\nclattn fp16 / q8_0: %.2f (median of per-round ratios)" %
          med([h / q for h, q in zip(f16, res["clattn q8_0"])]))


if __name__ == "__main__":
    main()
