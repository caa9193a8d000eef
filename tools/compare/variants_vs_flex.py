#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The attention variants on a GPU: clattn beside PyTorch in one run.

B = 8, H = 32, d = 128, causal (top-left), fp16 unless said: per N, PyTorch
first (FlexAttention compiled by torch.compile with a block mask, SDPA's
cuDNN and flash backends), then clattn (`clattn bench --path fused`, AUTO's
kernel, every row checked against the CPU reference on sampled rows). The
rows:

  plain            causal; Flex, cuDNN and flash beside it
  window W         causal + sliding window of W keys (query i sees
                   i - W < j <= i): clattn --window W-1,0, Flex a block mask
  softcap 30       30 tanh(s / 30): Flex score_mod
  alibi            slopes 2^(-8 (h+1) / H) (ggml's max_bias 8): Flex
                   score_mod s + slope (j - i)
  sinks            a sink logit per head (no PyTorch peer: clattn against
                   its own plain row)
  mask             an additive fp16 mask [1, 1, N, N], no causal mask
                   (N <= 4096): cuDNN and memory-efficient SDPA with it
  bf16             plain causal in bf16: cuDNN and flash in bf16

PyTorch is timed with CUDA events, 3 warm-up calls then 20 calls each
timed alone, the median; clattn by its bench (calls waited for one by
one, --reps-seconds 0.5, the median). Prints one JSON line per row and a
markdown table of ms and peer / clattn ratios.

usage: tools/compare/variants_vs_flex.py [N ...]   (default 4096 16384)
  on the GPU machine from the repository root, after `source .gpu/env.sh`;
  CLATTN: the clattn tool (default build/cli/clattn).
"""
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import torch
import torch._dynamo
from torch.nn.attention import SDPBackend, sdpa_kernel
from torch.nn.attention.flex_attention import create_block_mask, flex_attention

CLATTN = os.environ.get("CLATTN", "build/cli/clattn")
B, H, D = 8, 32, 128
WINDOWS = (1024, 4096)
torch._dynamo.config.cache_size_limit = 64
flex = torch.compile(flex_attention, dynamic=False)
sdpa = torch.nn.functional.scaled_dot_product_attention


def event_ms(fn, reps=20, warm=3):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return sorted(times)[len(times) // 2]


def backend_ms(backend, fn):
    try:
        with sdpa_kernel([backend]):
            return event_ms(fn)
    except Exception as ex:  # a backend that refuses the case
        return "refused: %s" % str(ex).splitlines()[0][:80]


def torch_rows(n, bias):
    out = {}
    q, k, v = (torch.randn(B, H, n, D, device="cuda", dtype=torch.float16) for _ in range(3))
    causal = create_block_mask(lambda b, h, i, j: i >= j, None, None, n, n)
    out["plain", "flex"] = event_ms(lambda: flex(q, k, v, block_mask=causal))
    out["plain", "cudnn"] = backend_ms(SDPBackend.CUDNN_ATTENTION, lambda: sdpa(q, k, v, is_causal=True))
    out["plain", "flash"] = backend_ms(SDPBackend.FLASH_ATTENTION, lambda: sdpa(q, k, v, is_causal=True))
    for w in WINDOWS:
        m = create_block_mask(lambda b, h, i, j, w=w: (i >= j) & (i - j < w), None, None, n, n)
        out["window %d" % w, "flex"] = event_ms(lambda: flex(q, k, v, block_mask=m))
    out["softcap 30", "flex"] = event_ms(
        lambda: flex(q, k, v, block_mask=causal,
                     score_mod=lambda s, b, h, i, j: 30.0 * torch.tanh(s / 30.0)))
    slopes = torch.tensor([2.0 ** (-8.0 * (x + 1) / H) for x in range(H)], device="cuda")
    out["alibi", "flex"] = event_ms(
        lambda: flex(q, k, v, block_mask=causal,
                     score_mod=lambda s, b, h, i, j: s + slopes[h] * (j - i)))
    if bias is not None:
        mask = torch.from_numpy(bias).cuda()
        out["mask", "cudnn"] = backend_ms(SDPBackend.CUDNN_ATTENTION,
                                          lambda: sdpa(q, k, v, attn_mask=mask))
        out["mask", "efficient"] = backend_ms(SDPBackend.EFFICIENT_ATTENTION,
                                              lambda: sdpa(q, k, v, attn_mask=mask))
    q, k, v = (x.to(torch.bfloat16) for x in (q, k, v))
    out["bf16", "cudnn"] = backend_ms(SDPBackend.CUDNN_ATTENTION, lambda: sdpa(q, k, v, is_causal=True))
    out["bf16", "flash"] = backend_ms(SDPBackend.FLASH_ATTENTION, lambda: sdpa(q, k, v, is_causal=True))
    del q, k, v
    torch.cuda.empty_cache()
    return out


def clattn_ms(n, args):
    cmd = [CLATTN, "bench", "--shape", "%d,%d,%d,%d,%d,%d" % (B, H, H, n, n, D), "--path",
           "fused", "--reps-seconds", "0.5", "--check", "sampled", "--json"] + args
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    try:
        row = json.loads(res.stdout)["rows"][0]
    except (ValueError, KeyError, IndexError):
        return "exit %d: %s" % (res.returncode, res.stderr[-200:].strip()), ""
    if row["status"] != "ok" or not row.get("check_ok"):
        return "%s: %s" % (row["status"], row.get("detail", "check failed")[:120]), row["kernel"]
    return 1e3 * row["time_median_s"], row["kernel"]


def clattn_rows(n, mask_file):
    tl = ["--causal", "top-left", "--dtype", "fp16"]
    rows = {"plain": tl, "softcap 30": tl + ["--softcap", "30"], "alibi": tl + ["--alibi"],
            "sinks": tl + ["--sinks", "random"],
            "bf16": ["--causal", "top-left", "--dtype", "bf16"]}
    for w in WINDOWS:
        rows["window %d" % w] = tl + ["--window", "%d,0" % (w - 1)]
    if mask_file:
        rows["mask"] = ["--causal", "none", "--dtype", "fp16", "--mask", mask_file]
    return {name: clattn_ms(n, args) for name, args in rows.items()}


def main():
    ns = [int(x) for x in sys.argv[1:]] or [4096, 16384]
    table = []
    with tempfile.TemporaryDirectory(prefix="clattn-flex-") as tmp:
        for n in ns:
            bias, mask_file = None, ""
            if n <= 4096:
                bias = np.random.default_rng(1).standard_normal((1, 1, n, n)).astype(np.float16)
                mask_file = os.path.join(tmp, "mask.npy")
                np.save(mask_file, bias)
            peers = torch_rows(n, bias)
            ours = clattn_rows(n, mask_file)
            for name, (ms, kernel) in ours.items():
                row = {"N": n, "row": name, "clattn_ms": ms, "kernel": kernel}
                for (pname, peer), pms in peers.items():
                    if pname == name:
                        row[peer + "_ms"] = pms
                        if isinstance(ms, float) and isinstance(pms, float):
                            row[peer + "_over_clattn"] = round(pms / ms, 3)
                if name != "plain" and isinstance(ours["plain"][0], float) and isinstance(ms, float):
                    row["over_plain"] = round(ms / ours["plain"][0], 3)
                print(json.dumps(row), flush=True)
                table.append(row)
    print("\n| N | row | kernel | clattn ms | vs plain | peers (ms, peer / clattn) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in table:
        ms = r["clattn_ms"]
        peers = ", ".join("%s %s (%s)" % (k[:-3], "%.3f" % r[k] if isinstance(r[k], float) else r[k],
                                          r.get(k[:-3] + "_over_clattn", "—"))
                          for k in r if k.endswith("_ms") and k != "clattn_ms")
        print("| %d | %s | %s | %s | %s | %s |" % (
            r["N"], r["row"], r["kernel"], "%.3f" % ms if isinstance(ms, float) else ms,
            r.get("over_plain", "—"), peers or "—"))


if __name__ == "__main__":
    main()
