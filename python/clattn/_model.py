# SPDX-License-Identifier: MIT
"""clattn.predict: the byte model of docs/MODEL.md for shapes on a device,
as `clattn predict` computes it. The result's fields are those of `clattn
predict --json`, name for name (Prediction.as_dict() is that object without
its "tool", "version" and "command" keys); tests/python/test_api.py compares
the two."""
import ctypes
import dataclasses
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from . import _args, _lib
from ._core import BF16, CAUSAL, F16, F32, MASK_ADD, MASK_BOOL, Figure, check, context_for, lib

DEFAULT_TILE = 64
DTYPES = {"float16": F16, "fp16": F16, "f16": F16, "half": F16, "float32": F32, "fp32": F32,
          "f32": F32, "float": F32, "bfloat16": BF16, "bf16": BF16}
DTYPE_NAMES = {F16: "fp16", F32: "fp32", BF16: "bf16"}
CAUSAL_NAMES = {0: "none", 1: "top-left", 2: "bottom-right"}
# clattn_model_device's fields, the names `figures` takes.
FIGURE_KEYS = tuple(f[0] for f in _lib.ModelDevice._fields_)
LIMITS = ("head_s_in_cache", "shared_s_in_cache", "scores_in_memory", "naive_fits", "fused_fits")


def _null(v, zero_is_null=True):
    """A number as the JSON writer prints it: None where it is not finite
    (or zero, for the figures whose zero means 'none')."""
    if v is None or v != v or v in (float("inf"), float("-inf")):
        return None
    if zero_is_null and v == 0:
        return None
    return int(v) if float(v).is_integer() and abs(v) < 2 ** 63 else float(v)


def _num(v):
    return _null(v, False)


@dataclass(frozen=True)
class ShapeInfo:
    """The shape every row shares."""
    batch: int
    heads: int
    kv_heads: int
    head_dim: int
    dtype: str            # "fp16", "fp32", "bf16"
    element_bytes: int
    causal: str           # "none", "top-left", "bottom-right"
    kv_lens: Optional[List[int]]


@dataclass(frozen=True)
class DeviceFigures:
    """The figures the model priced the rows with, each with its source."""
    name: str             # the device, "preset seed" or "none"
    capacity_bytes: Figure
    max_alloc_bytes: Figure
    cache_bytes: Figure
    bandwidth_bytes_per_s: Figure
    peak_flops: Figure
    peak_flops_is_fp32: bool  # fp16 priced at the fp32 rate (half storage, float math)
    launch_latency_s: Figure
    ridge_flop_per_byte: Optional[float]


@dataclass(frozen=True)
class Limit:
    """The largest N (Nq = Nk = N) meeting a constraint, and the real root."""
    n: int
    root: float


@dataclass(frozen=True)
class Limits:
    """Q2: where S stops fitting in the cache, where each path stops fitting
    in memory (None: the figure it needs is unknown); Q3's intensities."""
    head_s_in_cache: Optional[Limit]
    shared_s_in_cache: Optional[Limit]
    scores_in_memory: Optional[Limit]
    naive_fits: Optional[Limit]
    fused_fits: Optional[Limit]
    naive_intensity_limit: float          # FLOP/byte: d/2 in fp16
    naive_compute_bound_from: Optional[int]  # N from which the path is compute bound
    fused_compute_bound_from: Optional[int]


@dataclass(frozen=True)
class Decode:
    """The batch at its own lengths and the split, as the fused estimate counts it."""
    splits: int
    splits_source: str    # "device" (its plan), "given", "none"
    split_workspace_bytes: int
    empty_sequences: int
    kv_rows_total: int
    kv_rows_read: int
    total_blocks: int
    visited_blocks: int
    total_pairs: int
    computed_pairs: int
    visible_pairs: int


@dataclass(frozen=True)
class HeadTraffic:
    """Q1 for one head: bytes moved by each path."""
    score_bytes: int
    endpoint_bytes: int
    naive_bytes: int
    fused_bytes: int
    ratio: float
    closed_form: float    # 1 + N/d for Nq = Nk = N


@dataclass(frozen=True)
class Traffic:
    """Q1 for all heads."""
    score_bytes: int
    endpoint_bytes: int
    naive_bytes: int
    fused_bytes: int
    ratio: float


@dataclass(frozen=True)
class PathEstimate:
    """One path's roofline estimate and memory plan."""
    bytes: int
    flops: float
    intensity: float      # FLOP/byte
    launches: int
    memory_time_s: Optional[float]
    compute_time_s: Optional[float]
    time_s: Optional[float]   # None: the figures it needs are unknown
    bound: str            # "memory", "compute", "unknown"
    peak_bytes: int
    largest_buffer: Optional[str]
    largest_bytes: int
    workspace_bytes: int
    fit: str              # "fits", "exceeds capacity", ...
    kernel: Optional[str] = None   # what the device would run ("fused/cpu"), None without one
    efficiency: Optional[float] = None  # its recorded fraction of the roofline (clattn tune)
    expected_time_s: Optional[float] = None  # time_s / efficiency; None: none recorded


@dataclass(frozen=True)
class CausalBlocks:
    """Q4: the fused kernel's block accounting under the causal mask (a
    top-left what-if when the call has none)."""
    mode: str
    what_if: bool
    q_blocks: int
    k_blocks: int
    total_blocks: int
    visited_blocks: int
    visited_fraction: float
    closed_form: Optional[float]
    empty_q_blocks: int
    empty_rows: int
    total_pairs: int
    computed_pairs: int
    visible_pairs: int
    kv_rows_read: int
    kv_rows_streamed: int
    speedup: float
    roofline_speedup: Optional[float]


@dataclass(frozen=True)
class VariantCounts:
    """The variant of the rows and what it changes in the fused estimate."""
    softcap: Optional[float]
    window_left: int
    window_right: int
    alibi: bool
    sinks: bool
    mask: Optional[str]   # "bool", "f32", "f16", "bf16"
    score_mod: bool
    mask_mod: bool
    head_dim_v: int
    visible_pairs: int
    computed_pairs: int
    visited_blocks: int
    total_blocks: int
    kv_rows_read: int
    mask_bytes: int


@dataclass(frozen=True)
class Row:
    """One pair of lengths and the model's answers for it."""
    q_len: int
    kv_len: int
    block_m: int          # one head's query rows per tile
    block_n: int
    tiles_source: str     # "device", "given", "preset", "default"
    decode: Decode
    per_head: HeadTraffic
    all_heads: Traffic
    naive: PathEstimate
    fused: PathEstimate
    causal: CausalBlocks
    variant: Optional[VariantCounts] = None


@dataclass(frozen=True)
class Prediction:
    """What `clattn predict` prints, as named fields with their units."""
    shape: ShapeInfo
    device: DeviceFigures
    limits: Limits
    rows: List[Row]

    def as_dict(self) -> Dict[str, Any]:
        """The object `clattn predict --json` writes, less tool, version and
        command (a row without a variant has no "variant" key)."""
        d = dataclasses.asdict(self)
        for r in d["rows"]:
            if r["variant"] is None:
                del r["variant"]
        return d


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


def _lens_rows(q_len, kv_len):
    """The rows' (Nq, Nk) pairs from an int or a list each, as the tool's
    -N LIST, --q-len and --nq/--nk give them."""
    def listed(name, x):
        if isinstance(x, (list, tuple)):
            if not x:
                raise ValueError("%s must not be empty" % name)
            return [_args.integer("%s[%d]" % (name, i), n) for i, n in enumerate(x)]
        return None
    ql, kl = listed("q_len", q_len), listed("kv_len", kv_len)
    if kv_len is None:
        return [(n, n) for n in ql] if ql else [(_args.integer("q_len", q_len),) * 2]
    if ql and kl:
        if len(ql) != len(kl):
            raise ValueError("q_len and kv_len lists must have one length each, not %d and %d"
                             % (len(ql), len(kl)))
        return list(zip(ql, kl))
    if ql:
        k = _args.integer("kv_len", kv_len)
        return [(n, k) for n in ql]
    q = _args.integer("q_len", q_len)
    return [(q, n) for n in kl] if kl else [(q, _args.integer("kv_len", kv_len))]


def _given_figures(figures):
    given = {}
    for key, value in (figures or {}).items():
        if key not in FIGURE_KEYS:
            raise ValueError("unknown figure %r (known: %s)" % (key, ", ".join(FIGURE_KEYS)))
        given[key] = _args.figure(key, value, key.endswith("_bytes"))
    return given


SEED_FIGURES = {"capacity_bytes": 192 * 2 ** 30, "max_alloc_bytes": 192 * 2 ** 30,
                "cache_bytes": 256 * 2 ** 20, "bandwidth": 5e12, "peak_flops": 1e15}


def _device_figures(ctx, code):
    """The context's ceilings as the model's figures, each with its source."""
    L = lib()
    c = _lib.Ceilings()
    with ctx.lock:
        rc = L.clattn_device_ceilings(ctx.handle, ctypes.byref(c))
    if rc < 0:
        return {}, False
    peak, is_fp32 = peak_figure(c, code)
    out = {}
    for key, fig in (("capacity_bytes", c.global_mem_bytes), ("max_alloc_bytes", c.max_alloc_bytes),
                     ("cache_bytes", c.cache_bytes), ("bandwidth", c.bandwidth),
                     ("peak_flops", peak), ("launch_latency_s", c.launch_latency_s)):
        if fig.source and fig.value > 0:
            out[key] = (fig.value, L.clattn_source_name(fig.source).decode())
    return out, is_fp32 and "peak_flops" in out


def _settle_figures(device, given, preset, code):
    """The figures by the tool's rule: given, then the device's, then the
    preset's. The device is opened when named, or (None) when neither the
    preset nor the given figures supply capacity, cache, bandwidth and peak."""
    figs = {k: (v, "given") for k, v in given.items()}
    ctx = None
    complete = all(k in given for k in ("capacity_bytes", "cache_bytes", "bandwidth",
                                        "peak_flops"))
    if device is not False and (device is not None or (not preset and not complete)):
        ctx = context_for(device)
    is_fp32 = False
    if ctx is not None:
        dev, dev_fp32 = _device_figures(ctx, code)
        if "peak_flops" not in figs:
            is_fp32 = dev_fp32
        for k, v in dev.items():
            figs.setdefault(k, v)
    if preset:
        for k, v in SEED_FIGURES.items():
            figs.setdefault(k, (v, "preset"))
    return ctx, figs, is_fp32


def _model_device(figs):
    dev = _lib.ModelDevice()
    lib().clattn_model_default_device(ctypes.byref(dev))
    for k, (v, _) in figs.items():
        setattr(dev, k, int(v) if k.endswith("_bytes") else float(v))
    return dev


def _figure(figs, key):
    v, src = figs.get(key, (0, "unknown"))
    return Figure(_null(v), src)


def _estimate(e, ctx=None, kernel="", shape=None):
    """A path's estimate, with the time to expect from `kernel`'s recorded
    efficiency on ctx's device where e's roof binds."""
    L = lib()
    eff = ctypes.c_double(0)
    if ctx is not None and kernel and e.time_s > 0 and e.bound in (1, 2):
        name = kernel.split(" ")[0].encode()
        with ctx.lock:
            if L.clattn_kernel_efficiency(ctx.handle, name, shape.dtype, shape.head_dim, e.bound,
                                          ctypes.byref(eff)) != 1:
                eff.value = 0
    return PathEstimate(
        bytes=e.bytes, flops=_num(e.flops), intensity=_num(e.intensity), launches=e.launches,
        memory_time_s=_null(e.memory_time_s), compute_time_s=_null(e.compute_time_s),
        time_s=_null(e.time_s), bound=L.clattn_bound_name(e.bound).decode(),
        peak_bytes=e.memory.peak_bytes,
        largest_buffer=e.memory.largest_name.decode() if e.memory.largest_name else None,
        largest_bytes=e.memory.largest_bytes, workspace_bytes=e.memory.workspace_bytes,
        fit=L.clattn_fit_name(e.fit).decode(), kernel=kernel or None,
        efficiency=_null(eff.value), expected_time_s=_null(e.time_s / eff.value)
        if eff.value > 0 else None)


class _Variant:
    """The variant keywords as the model and the plan take them."""

    def __init__(self, head_dim_v, window_size, mask, mask_batch, mask_heads, softcap, alibi,
                 sinks, score_mod, mask_mod):
        self.model = _lib.ModelVariant()
        lib().clattn_model_default_variant(ctypes.byref(self.model))
        self.head_dim_v = 0 if head_dim_v is None else _args.integer("head_dim_v", head_dim_v,
                                                                     1, 512)
        self.model.head_dim_v = self.head_dim_v
        self.window = _args.window(window_size)
        self.model.window_left, self.model.window_right = self.window
        self.softcap = _args.softcap(softcap)
        self.alibi, self.sinks = bool(alibi is not None and alibi is not False), \
            bool(sinks is not None and sinks is not False)
        for name, text in (("score_mod", score_mod), ("mask_mod", mask_mod)):
            if text is not None and (not isinstance(text, str) or not text.strip()):
                raise TypeError("%s must be OpenCL C source text, not %r" % (name, text))
        self.score_mod, self.mask_mod = score_mod, mask_mod
        self.mask = None
        if mask is not None:
            if mask != "bool" and mask not in DTYPES:
                raise ValueError("mask must be None, 'bool' or a dtype name, not %r" % (mask,))
            self.mask = mask
            self.model.mask_kind = MASK_BOOL if mask == "bool" else MASK_ADD
            self.model.mask_dtype = F32 if mask == "bool" else DTYPES[mask]
            self.model.mask_batch = _args.integer("mask_batch", mask_batch)
            self.model.mask_heads = _args.integer("mask_heads", mask_heads)
        self.given = bool(self.head_dim_v or self.window != (-1, -1) or mask is not None or
                          self.softcap or self.alibi or self.sinks or score_mod is not None or
                          mask_mod is not None)
        self._keep = []

    def options(self, opts):
        """Into clattn_options for the plan: placeholders where only presence counts."""
        one = (ctypes.c_float * 1)(0.0)
        self._keep.append(one)
        opts.softcap = self.softcap
        opts.window_left, opts.window_right = self.window
        opts.head_dim_v = self.head_dim_v
        if self.alibi:
            opts.alibi_slopes = ctypes.cast(one, ctypes.POINTER(ctypes.c_float))
        if self.sinks:
            opts.sinks = ctypes.cast(one, ctypes.POINTER(ctypes.c_float))
        if self.score_mod is not None:
            opts.score_mod = self.score_mod.encode()
        if self.mask_mod is not None:
            opts.mask_mod = self.mask_mod.encode()
        if self.mask is not None:
            opts.mask = _lib.Mask(self.model.mask_kind, self.model.mask_dtype,
                                  self.model.mask_batch, self.model.mask_heads, _lib.Layout(),
                                  None)

    def counts(self, shape, batch, mask_bytes):
        m = self.model
        word = None
        if self.mask is not None:
            word = "bool" if m.mask_kind == MASK_BOOL else {F16: "f16", BF16: "bf16"}.get(
                m.mask_dtype, "f32")
        return VariantCounts(
            softcap=_null(ctypes.c_float(self.softcap).value), window_left=self.window[0],
            window_right=self.window[1], alibi=self.alibi, sinks=self.sinks, mask=word,
            score_mod=self.score_mod is not None, mask_mod=self.mask_mod is not None,
            head_dim_v=self.head_dim_v or shape.head_dim, visible_pairs=batch.visible_pairs,
            computed_pairs=batch.computed_pairs, visited_blocks=batch.visited_blocks,
            total_blocks=batch.total_blocks, kv_rows_read=batch.kv_rows_read,
            mask_bytes=mask_bytes)


def _plan_tiles(ctx, problem, variant, split_kv, split_given, preset, block_m, block_n):
    """The fused tiles and split: given, else the device's plan, else 64 x 64
    and split_kv. The plan's BLOCK_M packs the H / Hkv query heads of a KV
    head; the model's block_m counts one head's rows."""
    L = lib()
    problem.block_m = problem.block_n = DEFAULT_TILE
    problem.splits = split_kv
    tiles = "preset" if preset else "default"
    splits = "given" if split_given else "none"
    kernel = ""
    if ctx is not None:
        opts = _lib.Options()
        L.clattn_default_options(ctypes.byref(opts))
        opts.causal = problem.causal
        opts.split_kv = split_kv
        opts.kv_lens = ctypes.cast(problem.kv_lens, ctypes.POINTER(_lib.c_u32))
        variant.options(opts)
        plan = _lib.FusedPlan()
        with ctx.lock:
            rc = L.clattn_plan_fused(ctx.handle, ctypes.byref(problem.shape), ctypes.byref(opts),
                                     ctypes.byref(plan))
        if rc == 0:
            kernel = "fused/" + L.clattn_fused_kernel_name(plan.kernel).decode()
            group = problem.shape.heads // problem.shape.kv_heads
            problem.block_m = max(1, plan.block_m // group)
            problem.block_n = plan.block_n
            problem.splits = plan.splits
            tiles = splits = "device"
    if block_m or block_n:
        tiles = "given"
    if block_m:
        problem.block_m = block_m
    if block_n:
        problem.block_n = block_n
    return tiles, splits, kernel


def _naive_kernel(ctx, shape, causal):
    """The naive path's kernel on ctx's device ("naive/builtin-gemm"), "" if none."""
    L = lib()
    opts = _lib.Options()
    L.clattn_default_options(ctypes.byref(opts))
    opts.causal = causal
    buf = ctypes.create_string_buffer(64)
    with ctx.lock:
        rc = L.clattn_describe_kernels(ctx.handle, ctypes.byref(shape), ctypes.byref(opts), None,
                                       0, buf, 64)
    return buf.value.decode() if rc >= 0 else ""


def _row(shape, nq, nk, causal, workspace, lens, dev, ctx, variant, plan_args):
    L = lib()
    problem = _lib.ModelProblem()
    L.clattn_model_default_problem(ctypes.byref(problem))
    problem.shape = _lib.Shape(shape.batch, shape.heads, shape.kv_heads, nq, nk, shape.head_dim,
                               shape.dtype)
    problem.causal = causal
    problem.naive_workspace_bytes = workspace
    problem.kv_lens = ctypes.cast(lens, ctypes.c_void_p) if lens is not None else None
    tiles, splits, fused_kernel = _plan_tiles(ctx, problem, variant, *plan_args)
    naive_kernel = _naive_kernel(ctx, problem.shape, causal) if ctx is not None else ""
    pred = _lib.Prediction()
    check("clattn_model_predict_variant", L.clattn_model_predict_variant(
        ctypes.byref(problem), ctypes.byref(variant.model), ctypes.byref(dev),
        ctypes.byref(pred)))
    m = variant.model
    mask_e = 0 if m.mask_kind == 0 else 1 if m.mask_kind == MASK_BOOL else \
        L.clattn_dtype_size(m.mask_dtype)
    mask_bytes = mask_e * shape.heads * pred.batch.computed_pairs
    what_if = _lib.ModelProblem.from_buffer_copy(problem)
    if what_if.causal == 0:
        what_if.causal = 1
    wi = _lib.Prediction()
    check("clattn_model_predict_variant", L.clattn_model_predict_variant(
        ctypes.byref(what_if), ctypes.byref(variant.model), ctypes.byref(dev), ctypes.byref(wi)))
    t, b, cb = pred.traffic, pred.batch, wi.blocks
    return Row(
        q_len=nq, kv_len=nk, block_m=problem.block_m, block_n=problem.block_n,
        tiles_source=tiles,
        decode=Decode(splits=problem.splits or 1, splits_source=splits,
                      split_workspace_bytes=b.split_workspace_bytes,
                      empty_sequences=b.empty_sequences, kv_rows_total=b.kv_rows_total,
                      kv_rows_read=b.kv_rows_read, total_blocks=b.total_blocks,
                      visited_blocks=b.visited_blocks, total_pairs=b.total_pairs,
                      computed_pairs=b.computed_pairs, visible_pairs=b.visible_pairs),
        per_head=HeadTraffic(t.head_score_bytes, t.head_endpoint_bytes, t.head_naive_bytes,
                             t.head_fused_bytes, _num(t.head_ratio), _num(t.closed_form)),
        all_heads=Traffic(t.score_bytes, t.endpoint_bytes, t.naive_bytes, t.fused_bytes,
                          _num(t.ratio)),
        naive=_estimate(pred.naive, ctx, naive_kernel, problem.shape),
        fused=_estimate(pred.fused, ctx, fused_kernel, problem.shape),
        causal=CausalBlocks(
            mode=CAUSAL_NAMES[what_if.causal], what_if=causal == 0, q_blocks=cb.q_blocks,
            k_blocks=cb.k_blocks, total_blocks=cb.total_blocks, visited_blocks=cb.visited_blocks,
            visited_fraction=_num(cb.visited_fraction), closed_form=_null(cb.closed_form),
            empty_q_blocks=cb.empty_q_blocks, empty_rows=cb.empty_rows,
            total_pairs=cb.total_pairs, computed_pairs=cb.computed_pairs,
            visible_pairs=cb.visible_pairs, kv_rows_read=cb.kv_rows_read,
            kv_rows_streamed=cb.kv_rows_streamed, speedup=_num(cb.speedup),
            roofline_speedup=_null(wi.causal_speedup)),
        variant=variant.counts(shape, b, mask_bytes) if variant.given else None), pred


def _limits(shape, workspace, dev, p0):
    L = lib()
    unit = _lib.Shape.from_buffer_copy(shape)
    unit.q_len = unit.kv_len = 1
    found = []
    for k, _ in enumerate(LIMITS):
        known = dev.cache_bytes if k <= 1 else dev.capacity_bytes
        if not known:
            found.append(None)
            continue
        n, root = _lib.c_size(), ctypes.c_double()
        check("clattn_model_max_len", L.clattn_model_max_len(
            ctypes.byref(unit), k, workspace if k == 3 else 0, ctypes.byref(dev),
            ctypes.byref(n), ctypes.byref(root)))
        found.append(Limit(n.value, _num(root.value)))
    return Limits(*found, naive_intensity_limit=_num(p0.naive_intensity_limit),
                  naive_compute_bound_from=_null(p0.naive_compute_len),
                  fused_compute_bound_from=_null(p0.fused_compute_len))


def predict(batch: int, heads: int, q_len: Union[int, Sequence[int]],
            kv_len: Union[int, Sequence[int], None] = None, head_dim: int = 128, *,
            kv_heads: Optional[int] = None, dtype: str = "float16",
            causal: Optional[str] = None, device: Any = None,
            block_m: Optional[int] = None, block_n: Optional[int] = None,
            figures: Optional[Mapping[str, float]] = None, preset: Optional[str] = None,
            kv_lens: Optional[Sequence[int]] = None, splits: Optional[int] = None,
            naive_workspace_bytes: int = 0, head_dim_v: Optional[int] = None,
            window_size: Tuple[int, int] = (-1, -1), mask: Optional[str] = None,
            mask_batch: int = 1, mask_heads: int = 1, softcap: float = 0.0,
            alibi: bool = False, sinks: bool = False, score_mod: Optional[str] = None,
            mask_mod: Optional[str] = None) -> Prediction:
    """The byte model of `clattn predict` for one or several lengths.

    q_len and kv_len take an int or a list, as the tool's -N LIST (one row
    per length, Nq = Nk), -N LIST with --q-len (kv_len a list, q_len an int:
    one row per key length), or pairs (both lists, zipped). kv_len None is
    Nq = Nk.

    The device's figures: `figures` (a dict with the keys capacity_bytes,
    max_alloc_bytes, cache_bytes, bandwidth [bytes/s], peak_flops [FLOP/s in
    the dtype], launch_latency_s [s]) first, then the device's (as `clattn
    devices` reports them: saved measurement, table, reported), then
    preset="seed" (the seed's round numbers: 192 GiB, 256 MiB, 5 TB/s, 1000
    TFLOP/s). device: None opens the default device unless the preset or the
    given figures already supply capacity, cache, bandwidth and peak (the
    tool's rule); an index, a name or a pyopencl.Device opens that one;
    False opens none. This call never measures: `clattn devices --measure`
    saves the figures it then uses.

    The fused tiles and split come from the device's plan for the shape and
    variant (block_m counts one head's rows), else 64 x 64; block_m,
    block_n and splits (split-KV chunks per sequence, 0 the library's
    choice) override them. kv_lens: each sequence's number of keys (<=
    every row's kv_len). naive_workspace_bytes: the naive path's extra
    workspace (CLBlast's).

    The variant: head_dim_v (V's and O's head dimension), window_size
    (left, right; -1 unbounded), mask (None, "bool" or an additive mask's
    dtype, broadcast as [mask_batch, mask_heads, Nq, Nk]), softcap, alibi,
    sinks, score_mod and mask_mod (OpenCL C text): those the model counts
    change the bytes and pairs, every one can change the plan's kernel.

    Returns a Prediction: shape, device (the figures with their sources),
    limits (Q2: lengths where S stops fitting the cache and each path
    memory) and rows (Q1 traffic, Q3 intensities and roofline times, Q4
    causal blocks, decoding counts per row). Every argument is checked first
    (ValueError or TypeError naming it)."""
    L = lib()
    dims = [_args.integer(n, x) for n, x in (("batch", batch), ("heads", heads),
                                              ("kv_heads", heads if kv_heads is None else kv_heads),
                                              ("head_dim", head_dim))]
    batch, heads, kv_heads, head_dim = dims
    rows = _lens_rows(q_len, kv_len)
    code = DTYPES.get(str(dtype))
    if code is None:
        raise TypeError("dtype must be 'float16', 'float32' or 'bfloat16', not %r" % (dtype,))
    if causal not in CAUSAL:
        raise ValueError("causal must be None, 'top-left' or 'bottom-right', not %r" % (causal,))
    if preset not in (None, "seed"):
        raise ValueError("preset must be None or 'seed', not %r" % (preset,))
    split_given = splits is not None
    splits = _args.integer("splits", 0 if splits is None else splits, 0, _args.U32_MAX)
    block_m = _args.integer("block_m", block_m, 1) if block_m is not None else 0
    block_n = _args.integer("block_n", block_n, 1) if block_n is not None else 0
    workspace = _args.integer("naive_workspace_bytes", naive_workspace_bytes, 0, _args.U64_MAX)
    variant = _Variant(head_dim_v, window_size, mask, mask_batch, mask_heads, softcap, alibi,
                       sinks, score_mod, mask_mod)
    lens = None
    if kv_lens is not None:
        limit = min(nk for _, nk in rows)
        lens = (ctypes.c_uint32 * batch)(*_args.lengths("kv_lens", kv_lens, batch, limit))
    given = _given_figures(figures)
    ctx, figs, is_fp32 = _settle_figures(device, given, preset, code)
    dev = _model_device(figs)
    shape = _lib.Shape(batch, heads, kv_heads, 1, 1, head_dim, code)
    out, preds = [], []
    for nq, nk in rows:
        row, pred = _row(shape, nq, nk, CAUSAL[causal], workspace, lens, dev, ctx, variant,
                         (splits, split_given, preset, block_m, block_n))
        out.append(row)
        preds.append(pred)
    name = ctx.name if ctx is not None else "preset seed" if preset else "none"
    return Prediction(
        shape=ShapeInfo(batch, heads, kv_heads, head_dim, DTYPE_NAMES[code],
                        L.clattn_dtype_size(code), CAUSAL_NAMES[CAUSAL[causal]],
                        list(lens) if lens is not None else None),
        device=DeviceFigures(
            name=name, capacity_bytes=_figure(figs, "capacity_bytes"),
            max_alloc_bytes=_figure(figs, "max_alloc_bytes"),
            cache_bytes=_figure(figs, "cache_bytes"),
            bandwidth_bytes_per_s=_figure(figs, "bandwidth"),
            peak_flops=_figure(figs, "peak_flops"), peak_flops_is_fp32=is_fp32,
            launch_latency_s=_figure(figs, "launch_latency_s"),
            ridge_flop_per_byte=_null(preds[0].ridge)),
        limits=_limits(shape, workspace, dev, preds[0]),
        rows=out)


def kernel_efficiency(kernel: str, dtype: str = "float16", head_dim: int = 128,
                      bound: str = "compute", device: Any = None) -> Optional[float]:
    """The efficiency `clattn tune` recorded on `device` for a kernel (its
    name as a run names it, with or without its tiles: "fused/cpu",
    "naive/builtin-gemm"), dtype and head dimension where `bound`
    ("memory" or "compute") binds: the roofline time over the measured
    time, by which predict and bench divide the roofline. None where none
    is recorded (clattn_kernel_efficiency)."""
    if not isinstance(kernel, str) or not kernel:
        raise TypeError("kernel must be a kernel's name such as 'fused/cpu', not %r" % (kernel,))
    code = DTYPES.get(str(dtype))
    if code is None:
        raise TypeError("dtype must be 'float16', 'float32' or 'bfloat16', not %r" % (dtype,))
    bounds = {"memory": 1, "compute": 2}
    if bound not in bounds:
        raise ValueError("bound must be 'memory' or 'compute', not %r" % (bound,))
    head_dim = _args.integer("head_dim", head_dim, 1, 576)
    ctx = context_for(device)
    out = ctypes.c_double(0)
    with ctx.lock:
        rc = check("clattn_kernel_efficiency", lib().clattn_kernel_efficiency(
            ctx.handle, kernel.split(" ")[0].encode(), code, head_dim, bounds[bound],
            ctypes.byref(out)))
    return out.value if rc == 1 else None
