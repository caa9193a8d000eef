#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The attention variants on a CPU device (the `cpu` fused kernel under
PoCL) against plain attention on the same kernel, and an additive mask
against numpy's masked matmul-softmax-matmul, interleaved on the same cores.

How it times: ROUNDS rounds, the order of the cases rotating each round.
clattn by `clattn bench --path fused --kernel cpu` (one row, --reps-seconds
1 of calls waited for one by one, the median; each row is also checked
against the CPU reference, and a failed check stops the script); numpy by
tools/compare/cpu_peers.py (one warm-up, then 3 calls, the median). Every
ratio is the median over rounds of the per-round ratio.

Cases: B = 1, H = 4, d = 128, N = 2048, in fp32 and fp16 (storage):
  causal            plain causal, the base of the ratios
  none              plain without a mask, the base of the mask's ratio
  softcap 30        causal + softcap
  alibi             causal + ALiBi (slopes from max_bias 8)
  sinks             causal + a sink per head
  window 512        causal + window (512, 0): the visible fraction is about
                    0.44 of causal's, so the ideal ratio is about 0.44
  mask              an additive fp32 mask [1, 1, N, N] (random values in
                    [-1, 1), no causal mask; its ratio is against `none`),
                    and against numpy (fp32) adding
                    a [N, N] mask of -inf above the diagonal to its scores
                    (neither skips work for it)

usage: tools/compare/cpu_variants.py [ROUNDS] [--json OUT.jsonl]
  ROUNDS default 3. PEERS_PY: a Python with numpy (tools/compare/cpu_common.py).
"""
import json
import sys

from cpu_common import CLATTN, med, peer, run

B, H, N, D = 1, 4, 2048, 128
SHAPE = "%d,%d,%d,%d,%d,%d" % (B, H, H, N, N, D)
WINDOW = 512

VARIANTS = [
    ("causal", ["--causal", "top-left"]),
    ("none", ["--causal", "none"]),
    ("softcap 30", ["--causal", "top-left", "--softcap", "30"]),
    ("alibi", ["--causal", "top-left", "--alibi"]),
    ("sinks", ["--causal", "top-left", "--sinks", "random"]),
    ("window %d" % WINDOW, ["--causal", "top-left", "--window", "%d,0" % WINDOW]),
    ("mask", ["--causal", "none", "--mask", "random-add"]),
]


def visible_fraction():
    """Keys a query sees under the window over those under causal alone."""
    causal = sum(i + 1 for i in range(N))
    window = sum(min(i, WINDOW) + 1 for i in range(N))
    return window / causal


def bench(dtype, args):
    out = run([CLATTN, "bench", "--shape", SHAPE, "--dtype", dtype, "--path", "fused",
               "--kernel", "cpu", "--reps-seconds", "1", "--check", "sampled",
               "--json"] + args)
    row = json.loads(out)["rows"][0]
    if row["status"] != "ok" or not row["check_ok"]:
        sys.exit("clattn bench %s %s: %s" % (dtype, " ".join(args), json.dumps(row)[:800]))
    return row["time_median_s"]


def main():
    argv = sys.argv[1:]
    rounds, out = 3, None
    if "--json" in argv:
        i = argv.index("--json")
        out = argv[i + 1]
        del argv[i:i + 2]
    if argv:
        rounds = int(argv[0])
    cases = [(dt, name, args) for dt in ("fp32", "fp16") for name, args in VARIANTS]
    cases.append(("fp32", "numpy mask", None))
    times = {(dt, name): [] for dt, name, _ in cases}
    for r in range(rounds):
        order = cases[r % len(cases):] + cases[:r % len(cases)]
        for dt, name, args in order:
            if args is None:
                res = peer(["numpy", "fp32", str(D), str(B), str(H), str(N), "yes", "3"])
                t = med(res["wall"])
            else:
                t = bench(dt, args)
            times[(dt, name)].append(t)
            print("round %d: %-5s %-12s %.4f s" % (r + 1, dt, name, t), file=sys.stderr)
    frac = visible_fraction()
    print("B=%d H=%d N=%d d=%d, cpu kernel, %d rounds; ratios are medians of per-round "
          "ratios" % (B, H, N, D, rounds))
    print("%-5s %-12s %10s %14s" % ("dtype", "variant", "median s", "vs plain"))
    rows = []
    for dt in ("fp32", "fp16"):
        for name, _ in VARIANTS:
            base = times[(dt, "none" if name in ("none", "mask") else "causal")]
            t = times[(dt, name)]
            ratio = med([a / b for a, b in zip(t, base)])
            note = ""
            if name.startswith("window"):
                note = "  (ideal %.2f: %.0f%% of the speedup)" % (frac, 100 * (1 - ratio) / (1 - frac))
            print("%-5s %-12s %10.4f %13.3fx%s" % (dt, name, med(t), ratio, note))
            rows.append({"dtype": dt, "variant": name, "median_s": med(t), "vs_plain": ratio})
    mask, npm = times[("fp32", "mask")], times[("fp32", "numpy mask")]
    speed = med([b / a for a, b in zip(mask, npm)])
    print("fp32 mask: clattn %.4f s, numpy %.4f s: clattn %.2fx numpy's speed"
          % (med(mask), med(npm), speed))
    rows.append({"dtype": "fp32", "variant": "mask vs numpy", "clattn_s": med(mask),
                 "numpy_s": med(npm), "speedup": speed})
    if out:
        with open(out, "w") as f:
            for row in rows:
                f.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
