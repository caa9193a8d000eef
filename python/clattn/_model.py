# SPDX-License-Identifier: MIT
"""clattn.predict: the byte model of docs/MODEL.md for a shape on a device."""
import ctypes

from . import _args, _lib
from ._core import BF16, CAUSAL, F16, F32, MASK_ADD, MASK_BOOL, check, context_for, lib


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


def peak_figure(ceilings, code):
    """The FLOP rate the model prices a dtype at, and whether it is the fp32
    rate standing in for fp16: a device with no fp16 figure but an fp32 one
    runs fp16 as half storage with float arithmetic, so the float rate is the
    roof its kernels meet (the rule of `clattn predict` and `clattn bench`)."""
    if code == F32:
        return ceilings.flops_f32, False
    if not ceilings.flops_f16.source and ceilings.flops_f32.source:
        return ceilings.flops_f32, True
    return ceilings.flops_f16, False


def predict(batch, heads, q_len, kv_len=None, head_dim=128, *, kv_heads=None, dtype="float16",
            causal=None, device=None, block_m=None, block_n=None, figures=None, kv_lens=None,
            splits=0, head_dim_v=None, window_size=(-1, -1), mask=None, mask_batch=1,
            mask_heads=1):
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
    the library runs them; "batch" in the result sums the whole batch.

    Variants (clattn_model_predict_variant): head_dim_v (V's and O's head
    dimension), window_size (left, right; -1 unbounded) and a mask the
    kernel reads: mask None, "bool" or an additive mask's dtype ("float32",
    "float16", "bfloat16"), broadcast as [mask_batch, mask_heads, Nq, Nk].

    fp16 on a device with no fp16 rate (PoCL's CPU device: half storage,
    float arithmetic) takes the fp32 rate, as `clattn predict` and `clattn
    bench` do ("peak_flops_is_fp32" in the result says so).

    Every number is checked first (ValueError or TypeError naming it): the
    sizes are integers from 1 (block_m, block_n, splits from 0: the
    device's or the library's choice), each of kv_lens from 0 to kv_len,
    the figures finite and >= 0."""
    L = lib()
    kv_len = q_len if kv_len is None else kv_len
    dims = [_args.integer(n, x) for n, x in (("batch", batch), ("heads", heads),
                                              ("kv_heads", heads if kv_heads is None else kv_heads),
                                              ("q_len", q_len), ("kv_len", kv_len),
                                              ("head_dim", head_dim))]
    batch, heads, kv_heads, q_len, kv_len, head_dim = dims
    splits = _args.integer("splits", splits, 0, _args.U32_MAX)
    block_m = _args.integer("block_m", block_m, 0) if block_m is not None else None
    block_n = _args.integer("block_n", block_n, 0) if block_n is not None else None
    dtypes = {"float16": F16, "fp16": F16, "float32": F32, "fp32": F32, "bfloat16": BF16,
              "bf16": BF16}
    code = dtypes.get(str(dtype))
    if code is None:
        raise TypeError("dtype must be 'float16', 'float32' or 'bfloat16', not %r" % (dtype,))
    variant = _lib.ModelVariant()
    L.clattn_model_default_variant(ctypes.byref(variant))
    if head_dim_v is not None:
        variant.head_dim_v = _args.integer("head_dim_v", head_dim_v, 1, 512)
    variant.window_left, variant.window_right = _args.window(window_size)
    if mask is not None:
        if mask != "bool" and mask not in dtypes:
            raise ValueError("mask must be None, 'bool' or a dtype name, not %r" % (mask,))
        variant.mask_kind = MASK_BOOL if mask == "bool" else MASK_ADD
        variant.mask_dtype = F32 if mask == "bool" else dtypes[mask]
        variant.mask_batch = _args.integer("mask_batch", mask_batch)
        variant.mask_heads = _args.integer("mask_heads", mask_heads)
    if causal not in CAUSAL:
        raise ValueError("causal must be None, 'top-left' or 'bottom-right', not %r" % (causal,))
    peak_is_fp32 = False
    problem = _lib.ModelProblem()
    L.clattn_model_default_problem(ctypes.byref(problem))
    problem.shape = _lib.Shape(batch, heads, kv_heads, q_len, kv_len, head_dim, code)
    problem.causal = CAUSAL[causal]
    problem.splits = splits
    lens = None
    if kv_lens is not None:
        lens = (ctypes.c_uint32 * batch)(*_args.lengths("kv_lens", kv_lens, batch, kv_len))
        problem.kv_lens = ctypes.cast(lens, ctypes.c_void_p)
    given = {}
    for key, value in (figures or {}).items():
        if key not in dict(_lib.ModelDevice._fields_):
            raise ValueError("unknown figure %r (known: %s)"
                             % (key, ", ".join(k for k, _ in _lib.ModelDevice._fields_)))
        given[key] = _args.figure(key, value, key.endswith("_bytes"))
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
                group = max(1, heads // kv_heads)
                problem.block_m = max(1, bm.value // group)
                problem.block_n = bn.value
        peak, peak_is_fp32 = peak_figure(c, code)
        for key, fig in (("capacity_bytes", c.global_mem_bytes),
                         ("max_alloc_bytes", c.max_alloc_bytes), ("cache_bytes", c.cache_bytes),
                         ("bandwidth", c.bandwidth), ("peak_flops", peak),
                         ("launch_latency_s", c.launch_latency_s)):
            if fig.source:
                setattr(dev, key, type(getattr(dev, key))(fig.value))
                sources[key] = L.clattn_source_name(fig.source).decode()
    for key, value in given.items():
        setattr(dev, key, value)
        sources[key] = "given"
        if key == "peak_flops":
            peak_is_fp32 = False
    if block_m:
        problem.block_m = block_m
    if block_n:
        problem.block_n = block_n
    out = _lib.Prediction()
    check("clattn_model_predict_variant",
          L.clattn_model_predict_variant(ctypes.byref(problem), ctypes.byref(variant),
                                         ctypes.byref(dev), ctypes.byref(out)))
    t = out.traffic
    return {
        "device": name,
        "device_figures": {k: getattr(dev, k) for k, _ in _lib.ModelDevice._fields_},
        "figure_sources": sources,
        "peak_flops_is_fp32": peak_is_fp32,
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
