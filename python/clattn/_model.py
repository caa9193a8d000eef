# SPDX-License-Identifier: MIT
"""clattn.predict: the byte model of docs/MODEL.md for a shape on a device."""
import ctypes

from . import _lib
from ._core import CAUSAL, F16, F32, check, context_for, lib


def _estimate(e):
    L = lib()
    return {
        "bytes": e.bytes, "flops": e.flops, "intensity": e.intensity, "launches": e.launches,
        "memory_time_s": e.memory_time_s, "compute_time_s": e.compute_time_s,
        "time_s": e.time_s, "bound": L.clattn_bound_name(e.bound).decode(),
        "peak_bytes": e.memory.peak_bytes, "largest_bytes": e.memory.largest_bytes,
        "largest_buffer": (e.memory.largest_name or b"").decode(),
        "fit": L.clattn_fit_name(e.fit).decode(),
    }


def predict(batch, heads, q_len, kv_len=None, head_dim=128, *, kv_heads=None, dtype="float16",
            causal=None, device=None, block_m=None, block_n=None, figures=None, kv_lens=None,
            splits=0):
    """What the byte model says about one attention call, as a dict:
    traffic (bytes per head and for all heads, naive vs fused), each path's
    estimate (bytes, FLOPs, intensity, roofline time and bound, peak memory
    and whether it fits), the ridge point and the causal speedup.

    The device's figures (capacity, cache, bandwidth, FLOP/s, launch latency)
    come from `device` (None: the default device; an index or a name; False:
    none, the figures unknown) as clattn devices reports them, each
    overridden by `figures` (a dict with the keys of "device_figures" in the
    result). The fused tiles are the device's choice unless given (64 x 64
    without a device). Decoding: `kv_lens` (one key count per sequence, each
    <= kv_len) and `splits` (split-KV chunks per sequence) are counted as
    the library runs them; "batch" in the result sums the whole batch."""
    L = lib()
    kv_len = q_len if kv_len is None else kv_len
    code = {"float16": F16, "fp16": F16, "float32": F32, "fp32": F32}.get(str(dtype))
    if code is None:
        raise TypeError("dtype must be 'float16' or 'float32', not %r" % (dtype,))
    if causal not in CAUSAL:
        raise ValueError("causal must be None, 'top-left' or 'bottom-right', not %r" % (causal,))
    problem = _lib.ModelProblem()
    L.clattn_model_default_problem(ctypes.byref(problem))
    problem.shape = _lib.Shape(batch, heads, kv_heads or heads, q_len, kv_len, head_dim, code)
    problem.causal = CAUSAL[causal]
    problem.splits = int(splits)
    lens = None
    if kv_lens is not None:
        if len(kv_lens) != batch:
            raise ValueError("kv_lens needs %d lengths, one per sequence" % batch)
        lens = (ctypes.c_uint32 * batch)(*[int(x) for x in kv_lens])
        problem.kv_lens = ctypes.cast(lens, ctypes.c_void_p)
    dev = _lib.ModelDevice()
    L.clattn_model_default_device(ctypes.byref(dev))
    sources = {}
    name = None
    if device is not False:
        ctx = context_for(device)
        name = ctx.name
        c = _lib.Ceilings()
        with ctx.lock:
            check("clattn_device_ceilings", L.clattn_device_ceilings(ctx.handle, ctypes.byref(c)))
            bm, bn = _lib.c_size(), _lib.c_size()
            opts = _lib.Options()
            L.clattn_default_options(ctypes.byref(opts))
            opts.causal = problem.causal
            if L.clattn_fused_tiles(ctx.handle, ctypes.byref(problem.shape), ctypes.byref(opts),
                                    ctypes.byref(bm), ctypes.byref(bn), None) == 0:
                # The kernel packs the H / Hkv query heads of a KV head into
                # its BLOCK_M rows; the model counts one head's rows.
                group = heads // (kv_heads or heads)
                problem.block_m = max(1, bm.value // group)
                problem.block_n = bn.value
        peak = c.flops_f16 if code == F16 else c.flops_f32
        for key, fig in (("capacity_bytes", c.global_mem_bytes),
                         ("max_alloc_bytes", c.max_alloc_bytes), ("cache_bytes", c.cache_bytes),
                         ("bandwidth", c.bandwidth), ("peak_flops", peak),
                         ("launch_latency_s", c.launch_latency_s)):
            if fig.source:
                setattr(dev, key, type(getattr(dev, key))(fig.value))
                sources[key] = L.clattn_source_name(fig.source).decode()
    for key, value in (figures or {}).items():
        if key not in dict(_lib.ModelDevice._fields_):
            raise ValueError("unknown figure %r (known: %s)"
                             % (key, ", ".join(k for k, _ in _lib.ModelDevice._fields_)))
        setattr(dev, key, type(getattr(dev, key))(value))
        sources[key] = "given"
    if block_m:
        problem.block_m = int(block_m)
    if block_n:
        problem.block_n = int(block_n)
    out = _lib.Prediction()
    check("clattn_model_predict", L.clattn_model_predict(ctypes.byref(problem), ctypes.byref(dev),
                                                         ctypes.byref(out)))
    t = out.traffic
    return {
        "device": name,
        "device_figures": {k: getattr(dev, k) for k, _ in _lib.ModelDevice._fields_},
        "figure_sources": sources,
        "tiles": (problem.block_m, problem.block_n),
        "traffic": {k: getattr(t, k) for k, _ in _lib.Traffic._fields_},
        "naive": _estimate(out.naive),
        "fused": _estimate(out.fused),
        "ridge": out.ridge,
        "naive_intensity_limit": out.naive_intensity_limit,
        "causal_speedup": out.causal_speedup,
        "causal_blocks": {k: getattr(out.blocks, k) for k, _ in _lib.CausalBlocks._fields_},
        "batch": {k: getattr(out.batch, k) for k, _ in _lib.BatchBlocks._fields_},
    }
