#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""PyTorch's attention on the same GPU, the peer of the tools/compare/ scripts.

Every figure is the median of per-call CUDA-event times: after a few untimed
calls, each timed call is enqueued between two events with no
synchronisation between calls (a burst: the calls run back to back on the
device), then the median of the event pairs is taken. One JSON line per row
on stdout.

usage:
  torch_attention.py sdpa N[,N..] B H d [--backends naive,flash,cudnn] [--flex]
      fp16, Nq = Nk = N, no mask and causal (top-left, PyTorch's is_causal):
      naive = matmul, softmax, matmul (S materialised; 5 timed calls),
      flash / cudnn = SDPA with that backend alone (10 timed calls),
      --flex adds FlexAttention (torch.compile(flex_attention), a causal
      block mask; compiled once per shape before timing)
  torch_attention.py cases CASE...
      CASE = B,H,Hkv,Nq,Nk,d,dtype,causal with dtype 16 or 32 and causal
      0 (none), 1 (top-left) or 2 (bottom-right, torch's causal_lower_right);
      SDPA's flash, cudnn, efficient (memory-efficient) and math backends,
      20 timed calls each; grouped-query cases use SDPA's enable_gqa, and
      K/V expanded to every query head where a backend refuses that
  torch_attention.py kvcache CASE FORM[,FORM..]
      a decoding step over a KV cache kept in FORM, as PyTorch runs it
      without a kernel for the form: fp16 (SDPA on the cache itself), paged16 / paged256 (fp16
      pages [num_pages, page, Hkv, d] gathered through a shuffled block
      table), q8_0 / q4_0 (ggml's blocks of 32 along d: int8 or packed
      nibbles and an fp16 scale each) and fp8_e4m3 (float8_e4m3fn and one
      fp32 scale), dequantized to fp16 and then SDPA flash and cuDNN, each
      call the whole step (20 timed calls); "dequant_ms" is the conversion
      (or gather) alone
  torch_attention.py sustained CASE BACKEND SECONDS
      one backend (flash, cudnn, efficient) for SECONDS of calls back to
      back, each call between its own two events: the median of a 20-call
      burst first, then of every call of the sustained run (the board may
      reach its power limit; read nvidia-smi beside it)
Rows that cannot run say why ("out of memory", "error: ...").
"""
import json
import math
import sys
import time

import torch
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION,
            "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}


def emit(row):
    print(json.dumps(row), flush=True)


def event_times(fn, reps, warm):
    """Per-call milliseconds of `reps` calls enqueued back to back."""
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(reps)]
    for s, e in ev:
        s.record()
        fn()
        e.record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in ev]


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2]


def guarded(fn):
    """fn()'s result, or what stopped it."""
    try:
        return fn()
    except torch.OutOfMemoryError:
        return "out of memory"
    except RuntimeError as ex:
        return "error: " + str(ex).split("\n")[0][:100]
    finally:
        torch.cuda.empty_cache()


def naive(q, k, v, causal):
    s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(q.shape[-1]))
    if causal:
        n = s.shape[-1]
        mask = torch.triu(torch.ones(n, n, dtype=torch.bool, device=s.device), 1)
        s = s.masked_fill(mask, float("-inf"))
    return torch.softmax(s, dim=-1) @ v


def sdpa_rows(argv):
    ns = [int(x) for x in argv[0].split(",")]
    B, H, d = (int(x) for x in argv[1:4])
    backends = ["naive", "flash", "cudnn"]
    if "--backends" in argv:
        backends = argv[argv.index("--backends") + 1].split(",")
    flex = "--flex" in argv
    p = torch.cuda.get_device_properties(0)
    emit({"gpu": p.name, "torch": torch.__version__, "sms": p.multi_processor_count})
    if flex:
        # "import torch._dynamo" here would make torch a local name of this
        # function: the module comes in under a name of its own.
        import torch._dynamo as dynamo
        from torch.nn.attention.flex_attention import create_block_mask, flex_attention
        dynamo.config.recompile_limit = 64
        dynamo.config.cache_size_limit = 64
        flex_fn = torch.compile(flex_attention, dynamic=False)
    for N in ns:
        q, k, v = (torch.randn(B, H, N, d, device="cuda", dtype=torch.float16) for _ in range(3))
        for causal in (False, True):
            row = {"B": B, "H": H, "N": N, "d": d, "causal": causal}
            for name in backends:
                if name == "naive":
                    fn, reps = (lambda: naive(q, k, v, causal)), 5
                else:
                    def fn(be=BACKENDS[name]):
                        with sdpa_kernel([be]):
                            return torch.nn.functional.scaled_dot_product_attention(
                                q, k, v, is_causal=causal)
                    reps = 10
                row[name] = guarded(lambda: {"ms": round(median(event_times(fn, reps, 2)), 5)})
            if flex:
                def flex_ms():
                    mask = (create_block_mask(lambda b, h, qi, ki: qi >= ki, None, None, N, N)
                            if causal else None)
                    t0 = time.perf_counter()
                    flex_fn(q, k, v, block_mask=mask)
                    torch.cuda.synchronize()
                    compile_s = time.perf_counter() - t0
                    ms = median(event_times(lambda: flex_fn(q, k, v, block_mask=mask), 10, 2))
                    return {"ms": round(ms, 5), "first_call_s": round(compile_s, 2)}
                row["flex"] = guarded(flex_ms)
            emit(row)
        del q, k, v
        torch.cuda.empty_cache()


def case_tensors(case):
    B, H, Hk, Nq, Nk, d, dt, causal = (int(x) for x in case.split(",")[:8])
    dtype = torch.float16 if dt == 16 else torch.float32
    q = torch.randn(B, H, Nq, d, device="cuda", dtype=dtype)
    k = torch.randn(B, Hk, Nk, d, device="cuda", dtype=dtype)
    v = torch.randn_like(k)
    if causal == 2:
        from torch.nn.attention.bias import causal_lower_right
        kw = {"attn_mask": causal_lower_right(Nq, Nk)}
    else:
        kw = {"is_causal": bool(causal)}
    return q, k, v, H, Hk, kw


def sdpa_call(backend, q, k, v, H, Hk, kw, expand):
    """A call of one SDPA backend, GQA native or with K/V expanded."""
    if expand:
        k, v = k.repeat_interleave(H // Hk, 1), v.repeat_interleave(H // Hk, 1)

    def fn():
        with sdpa_kernel([BACKENDS[backend]]):
            return torch.nn.functional.scaled_dot_product_attention(
                q, k, v, enable_gqa=(H != Hk and not expand), **kw)
    return fn


def case_rows(argv):
    for case in argv:
        q, k, v, H, Hk, kw = case_tensors(case)
        row = {"case": case}
        for name in BACKENDS:
            for expand in ((False, True) if H != Hk else (False,)):
                fn = sdpa_call(name, q, k, v, H, Hk, kw, expand)
                r = guarded(lambda: {"ms": round(median(event_times(fn, 20, 3)), 5)})
                row[name] = r
                if isinstance(r, dict):
                    row[name]["gqa"] = "expanded" if expand else ("native" if H != Hk else "-")
                    break
        emit(row)
        del q, k, v
        torch.cuda.empty_cache()


def cache_form(form, k):
    """K [B, Hkv, Nk, d] fp16 kept in `form`: (what the cache holds, the
    function that gives it back as fp16 [B, Hkv, Nk, d])."""
    B, Hk, Nk, d = k.shape
    if form == "fp16":
        return k, lambda: k
    if form.startswith("paged"):
        page = int(form[5:])
        per_seq = (Nk + page - 1) // page
        pad = per_seq * page - Nk
        kp = torch.nn.functional.pad(k.transpose(1, 2), (0, 0, 0, 0, 0, pad))  # [B, N', Hk, d]
        pages = kp.reshape(B * per_seq, page, Hk, d)
        perm = torch.randperm(B * per_seq, device=k.device)
        store = torch.empty_like(pages)
        store[perm] = pages
        table = perm.view(B, per_seq)
        return (store, table), lambda: store[table].reshape(B, per_seq * page, Hk, d)[:, :Nk].transpose(1, 2)
    if form == "fp8_e4m3":
        scale = k.abs().amax().float() / 448.0
        q8 = (k.float() / scale).to(torch.float8_e4m3fn)
        return q8, lambda: (q8.to(torch.float16) * scale.half())
    blocks = k.float().reshape(B, Hk, Nk, d // 32, 32)
    amax = blocks.abs().amax(-1, keepdim=True)
    if form == "q8_0":
        s = (amax / 127.0).half()
        q = torch.round(blocks / s.float().clamp_min(1e-30)).clamp(-127, 127).to(torch.int8)
        return (q, s), lambda: (q.half() * s).reshape(B, Hk, Nk, d)
    if form == "q4_0":
        s = (amax / 8.0).half()
        q = (torch.round(blocks / s.float().clamp_min(1e-30)) + 8).clamp(0, 15).to(torch.uint8)
        nib = q[..., :16] | (q[..., 16:] << 4)
        def deq():
            lo = (nib & 15).half() - 8.0
            hi = (nib >> 4).half() - 8.0
            return (torch.cat((lo, hi), -1) * s).reshape(B, Hk, Nk, d)
        return (nib, s), deq
    raise SystemExit("unknown cache form %r" % form)


def kvcache_rows(argv):
    case, forms = argv[0], argv[1].split(",")
    q, k, v, H, Hk, kw = case_tensors(case)
    for form in forms:
        row = {"case": case, "form": form}
        _, k_back = cache_form(form, k)
        _, v_back = cache_form(form, v)
        if form != "fp16":
            row["dequant_ms"] = guarded(lambda: round(median(event_times(
                lambda: (k_back(), v_back()), 20, 3)), 5))
        for name in ("flash", "cudnn"):
            for expand in ((False, True) if H != Hk else (False,)):
                def step(be=BACKENDS[name], expand=expand):
                    kk, vv = k_back(), v_back()
                    if expand:
                        kk, vv = kk.repeat_interleave(H // Hk, 1), vv.repeat_interleave(H // Hk, 1)
                    with sdpa_kernel([be]):
                        return torch.nn.functional.scaled_dot_product_attention(
                            q, kk, vv, enable_gqa=(H != Hk and not expand), **kw)
                r = guarded(lambda: {"ms": round(median(event_times(step, 20, 3)), 5)})
                row[name] = r
                if isinstance(r, dict):
                    r["gqa"] = "expanded" if expand else "native"
                    break
        emit(row)
        del k_back, v_back
        torch.cuda.empty_cache()


def sustained(argv):
    case, backend, seconds = argv[0], argv[1], float(argv[2])
    q, k, v, H, Hk, kw = case_tensors(case)
    fn = sdpa_call(backend, q, k, v, H, Hk, kw, False)
    burst = median(event_times(fn, 20, 3))
    # About `seconds` of calls, from the burst's per-call time.
    reps = max(20, int(seconds * 1e3 / burst))
    t0 = time.perf_counter()
    times = event_times(fn, reps, 0)
    wall = time.perf_counter() - t0
    emit({"case": case, "backend": backend, "burst_ms": round(burst, 5),
          "sustained_ms": round(median(times), 5), "sustained_calls": reps,
          "sustained_s": round(wall, 3)})


def main():
    modes = {"sdpa": sdpa_rows, "cases": case_rows, "kvcache": kvcache_rows,
             "sustained": sustained}
    if len(sys.argv) < 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    modes[sys.argv[1]](sys.argv[2:])


if __name__ == "__main__":
    main()
