# SPDX-License-Identifier: MIT
"""KV caches as engines keep them, in FlashAttention's terms:
clattn.attention_with_kvcache (flash_attn_with_kvcache: a contiguous or
paged cache, new keys appended in place at cache_seqlens, then attention
over the cache) and clattn.attention_varlen (flash_attn_varlen_func:
packed batches by cu_seqlens). K and V may be clattn.QuantizedArray
(q8_0, q4_0, fp8_e4m3) in either; numpy arrays run on the host
(clattn_kv_append, clattn_attention_ex), pyopencl arrays on their queue
(clattn_kv_append_cl, clattn_attention_ex_cl)."""
import ctypes
import numbers
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from . import _args, _lib
from ._attention import Operand, _call_host, _dtype_code, _enqueue, _extras, _host_out, \
    _is_cl_array, _options, _variant, operand
from ._core import check, context_for_queue, lib
from ._dlpack import host_array
from ._quant import QuantizedArray

FA4 = (0, 2, 1, 3)           # [B, N, heads, d] -> [B, heads, N, d]
PACKED = (None, 1, 0, 2)     # [total, heads, d] -> [1, heads, total, d]
_FP = ctypes.POINTER(ctypes.c_float)
_I32 = ctypes.POINTER(ctypes.c_int32)


def _memory(x: Any) -> Any:
    return x.data if isinstance(x, QuantizedArray) else x


def _on_device(named: List[Tuple[str, Any]]) -> bool:
    """Whether the tensors are pyopencl arrays (all of them) or host
    arrays (all of them); TypeError for a mixture."""
    given = [(name, _is_cl_array(_memory(x))) for name, x in named if x is not None]
    if any(d for _, d in given) and not all(d for _, d in given):
        raise TypeError("%s must be all host arrays or all pyopencl arrays (device: %s)" % (
            ", ".join(n for n, _ in given), ", ".join(n for n, d in given if d)))
    return any(d for _, d in given)


def _query(q: Any, on_device: bool) -> Tuple[Any, np.dtype, int]:
    """q as the array read (host or device), its dtype and clattn_dtype."""
    if isinstance(q, QuantizedArray):
        raise TypeError("q must be float16, float32 or bfloat16; only K and V are quantized")
    if not on_device:
        q = host_array(q, "q")
    dt, code = _dtype_code(q)
    return q, dt, code


def _unsupported(**given: Any) -> None:
    for name, value in given.items():
        if value is not None:
            raise NotImplementedError("%s: clattn does not take FlashAttention's %s" %
                                      (name, name))


def _shape(dims: Tuple[Tuple[str, int], ...], code: int) -> Any:
    return _lib.Shape(*(_args.integer("shape's " + n, x) for n, x in dims), code)


def _check_heads(H: int, Hkv: int) -> None:
    if Hkv < 1 or H % Hkv:
        raise ValueError("q's %d heads must be a multiple of the %d key/value heads" % (H, Hkv))


def _cache_types(opts: Any, k: Operand, v: Operand, hkv: int, keep: list) -> None:
    """K's and V's storage types and fp8 scales into opts (a per-head scale
    on either side makes both per head)."""
    opts.k_type, opts.v_type = k.kv_type, v.kv_type
    per_head = k.per_head or v.per_head
    opts.kv_scale_per_head = int(per_head)
    for name, op in (("k_scale", k), ("v_scale", v)):
        if op.scale is None:
            continue
        s = np.ascontiguousarray(np.broadcast_to(op.scale, (hkv,)) if per_head else op.scale,
                                 dtype=np.float32)
        keep.append(s)
        setattr(opts, name, s.ctypes.data_as(_FP))


def _wait_list(events: List[Any]) -> Tuple[int, Any]:
    arr = (_lib.c_ptr * max(len(events), 1))(*[e.int_ptr for e in events])
    return len(events), arr if events else None


# -------------------------------------------------------- kvcache pieces

@dataclass
class _Cache:
    """The cache of one call: its operands, its keys per sequence, its pages."""
    k: Operand
    v: Operand
    paged: bool
    capacity: int                    # keys per sequence: Nk of the shape
    page_size: int = 0
    num_pages: int = 0
    max_pages: int = 0
    table: Optional[np.ndarray] = None     # host block table, int32 [B, max_pages]
    table_buf: Any = None                  # device block table
    events: List[Any] = field(default_factory=list)


def _cache(k_cache: Any, v_cache: Any, block_table: Any, batch: int, d: int, dt: np.dtype,
           writable: bool) -> _Cache:
    paged = block_table is not None
    spec = "[num_pages, page_size, Hkv, d]" if paged else "[B, Nk, Hkv, d]"
    k = operand(k_cache, "k_cache", FA4, spec, dt, writable)
    v = operand(v_cache, "v_cache", FA4, spec, dt, writable)
    if k.dims[:3] != v.dims[:3]:
        raise ValueError("k_cache %r and v_cache %r must agree on all but d" %
                         (_fa_shape(k.dims), _fa_shape(v.dims)))
    if k.dims[3] != d:
        raise ValueError("k_cache's d = %d is not q's %d" % (k.dims[3], d))
    lead, slots = k.dims[0], k.dims[2]
    _args.integer("k_cache's %s" % ("page_size" if paged else "Nk"), slots)
    c = _Cache(k, v, paged, slots, events=k.events + v.events)
    if not paged:
        if lead != batch:
            raise ValueError("k_cache holds %d sequences and q %d" % (lead, batch))
        return c
    c.page_size, c.num_pages = slots, _args.integer("k_cache's num_pages", lead)
    if _is_cl_array(block_table):
        _device_table(c, block_table, batch)
    else:
        c.table = _host_table(block_table, batch)
        c.max_pages = c.table.shape[1]
    c.capacity = c.page_size * c.max_pages
    return c


def _fa_shape(dims: Tuple[int, int, int, int]) -> Tuple[int, int, int, int]:
    return dims[0], dims[2], dims[1], dims[3]


def _host_table(block_table: Any, batch: int) -> np.ndarray:
    a = host_array(block_table, "block_table")
    if a.ndim != 2 or a.shape[0] != batch or a.shape[1] < 1:
        raise ValueError("block_table must be [B, max_pages] = [%d, >= 1], not shape %r"
                         % (batch, a.shape))
    if a.dtype.kind not in "iu":
        raise TypeError("block_table must hold integers (int32), not %s" % a.dtype)
    if a.size and (a.min() < -2 ** 31 or a.max() >= 2 ** 31):
        raise ValueError("block_table's entries must fit int32")
    return np.ascontiguousarray(a, dtype=np.int32)


def _device_table(c: _Cache, t: Any, batch: int) -> None:
    if t.dtype != np.int32 or t.ndim != 2 or t.shape[0] != batch or t.shape[1] < 1:
        raise ValueError("a device block_table must be int32 [B, max_pages] = [%d, >= 1], "
                         "not %s %r" % (batch, t.dtype, tuple(t.shape)))
    if t.offset or not t.flags.c_contiguous:
        raise ValueError("a device block_table must be contiguous at offset 0 of its buffer")
    c.table_buf, c.max_pages = t.base_data, t.shape[1]
    c.events += list(t.events)


def _check_pages(c: _Cache, lens: Optional[np.ndarray]) -> None:
    """Every host block table entry of a page a sequence reads or is
    appended into lies within the cache's pages."""
    if c.table is None:
        return
    for b in range(c.table.shape[0]):
        used = c.max_pages if lens is None else -(-int(lens[b]) // c.page_size)
        row = c.table[b, :used]
        bad = np.nonzero((row < 0) | (row >= c.num_pages))[0]
        if bad.size:
            p = int(bad[0])
            raise ValueError("block_table[%d][%d] = %d is outside k_cache's %d pages"
                             % (b, p, row[p], c.num_pages))


def _paging(opts: Any, c: _Cache, keep: list) -> Dict[str, Any]:
    """The pages into opts; the device table as an extras field."""
    if not c.paged:
        return {}
    opts.page_size, opts.num_pages, opts.block_table_stride = (c.page_size, c.num_pages,
                                                               c.max_pages)
    if c.table is not None:
        keep.append(c.table)
        opts.block_table = c.table.ctypes.data_as(_I32)
        return {}
    return {"block_table": c.table_buf}


def _host_seqlens(cache_seqlens: Any, batch: int, capacity: int, new_len: int) -> np.ndarray:
    """cache_seqlens (an int for every sequence, or B of them) as uint32,
    each with new_len more keys within the cache's capacity."""
    if new_len > capacity:
        raise ValueError("k holds %d new keys, more than the cache's %d per sequence"
                         % (new_len, capacity))
    if isinstance(cache_seqlens, numbers.Integral) and not isinstance(cache_seqlens, bool):
        values = [cache_seqlens] * batch
    else:
        a = host_array(cache_seqlens, "cache_seqlens")
        if a.ndim != 1:
            raise ValueError("cache_seqlens must be an int or hold one length per sequence "
                             "(%d), not shape %r" % (batch, a.shape))
        values = list(a)
    limit = capacity - new_len
    try:
        return np.array(_args.lengths("cache_seqlens", values, batch, limit), np.uint32)
    except ValueError as e:
        raise ValueError("%s (the cache holds %d keys per sequence, %d of them for k's new "
                         "keys)" % (e, capacity, new_len)) from None


def _device_seqlens(lens: Any, batch: int) -> Any:
    """A device cache_seqlens (int32 or uint32 [B]) as a new uint32 array
    (the append advances it; the caller's stays as it is)."""
    if lens.dtype not in (np.int32, np.uint32) or lens.shape != (batch,):
        raise ValueError("a device cache_seqlens must be int32 [B] = [%d], not %s %r"
                         % (batch, lens.dtype, tuple(lens.shape)))
    return lens.astype(np.uint32)


def _host_new(x: Any, name: str, dt: np.dtype) -> Operand:
    """New host keys [B, Nnew, Hkv, d] as a contiguous [B, Hkv, Nnew, d]
    copy (the append's default layout)."""
    a = host_array(x, name)
    if a.ndim != 4:
        raise ValueError("%s must be 4-D [B, Nnew, Hkv, d], not shape %r" % (name, a.shape))
    if np.dtype(a.dtype) != dt:
        raise TypeError("%s must be %s (q's dtype), not %s" % (name, dt, a.dtype))
    dims = (a.shape[0], a.shape[2], a.shape[1], a.shape[3])
    return Operand(dims, _lib.Layout(), np.ascontiguousarray(a.transpose(0, 2, 1, 3)))


def _same_layout(a: Any, b: Any) -> bool:
    return all(getattr(a, f[0]) == getattr(b, f[0]) for f in _lib.Layout._fields_)


def _new_keys(k: Any, v: Any, on_device: bool, dims: Tuple[int, int, int, int], dv: int,
              dt: np.dtype) -> Tuple[Operand, Operand]:
    """The new keys and values, [B, Nnew, Hkv, d] and [B, Nnew, Hkv, d_v]:
    host ones copied, device ones read in place through one layout."""
    if isinstance(k, QuantizedArray) or isinstance(v, QuantizedArray):
        raise TypeError("k and v (the new keys) are arrays of q's dtype; the cache quantizes "
                        "them as it stores them")
    if on_device:
        kn = operand(k, "k", FA4, "[B, Nnew, Hkv, d]", dt)
        vn = operand(v, "v", FA4, "[B, Nnew, Hkv, d_v]", dt)
    else:
        kn, vn = _host_new(k, "k", dt), _host_new(v, "v", dt)
    B, Hkv, _, d = dims
    if kn.dims[:2] != (B, Hkv) or kn.dims[3] != d or vn.dims[:3] != kn.dims[:3] or \
            vn.dims[3] != dv:
        raise ValueError("k %r and v %r must be [B, Nnew, Hkv, d] = [%d, Nnew, %d, %d] and "
                         "[%d, Nnew, %d, %d]" % (_fa_shape(kn.dims), _fa_shape(vn.dims), B, Hkv,
                                                 d, B, Hkv, dv))
    if on_device and not _same_layout(kn.layout, vn.layout):
        raise ValueError("device k and v are read through one layout: give them the same "
                         "strides and offset (both contiguous, say) and d_v = d")
    return kn, vn


def _append_host(shape: Any, opts: Any, lens: np.ndarray, kn: Operand, vn: Operand,
                 c: _Cache) -> None:
    """clattn_kv_append: the new keys into the host caches at lens."""
    opts.kv_lens = lens.ctypes.data_as(ctypes.POINTER(_lib.c_u32))
    check("clattn_kv_append", lib().clattn_kv_append(
        ctypes.byref(shape), ctypes.byref(opts), kn.dims[2], None, kn.address, vn.address,
        c.k.address, c.v.address))


def _append_cl(queue: Any, shape: Any, opts: Any, kn: Operand, vn: Operand, c: _Cache,
               lens_buf: Any, more: Dict[str, Any], wait: List[Any]) -> Any:
    """clattn_kv_append_cl on the queue; its completion event. Device
    lengths (lens_buf) are advanced by the new keys."""
    import pyopencl as cl
    ctx = context_for_queue(queue)
    extras = _extras(kv_lens=lens_buf, more=more)
    n, events = _wait_list(wait)
    done = _lib.c_ptr()
    with ctx.lock:
        check("clattn_kv_append_cl", lib().clattn_kv_append_cl(
            ctx.handle, ctypes.byref(shape), ctypes.byref(opts), kn.dims[2],
            ctypes.byref(kn.layout), kn.buffer.int_ptr, vn.buffer.int_ptr, c.k.buffer.int_ptr,
            c.v.buffer.int_ptr, ctypes.byref(extras), int(lens_buf is not None), n, events,
            ctypes.byref(done)))
    return cl.Event.from_int_ptr(done.value, retain=False)


def _same_context(queue: Any, named: List[Tuple[str, Any]]) -> None:
    for name, x in named:
        m = _memory(x)
        if _is_cl_array(m) and m.context.int_ptr != queue.context.int_ptr:
            raise ValueError("%s belongs to another OpenCL context than q" % name)


def _device_queue(q: Any) -> Any:
    if q.queue is None:
        raise ValueError("q has no queue: give the pyopencl arrays one (with_queue)")
    return q.queue


def _writable_cache(c: _Cache) -> None:
    for name, op in (("k_cache", c.k), ("v_cache", c.v)):
        if not op.on_device and not op.mem.flags.writeable:
            raise ValueError("%s is appended into in place and must be writable" % name)


def attention_with_kvcache(q: Any, k_cache: Any, v_cache: Any, k: Any = None, v: Any = None,
                           *, cache_seqlens: Any = None, block_table: Any = None,
                           causal: bool = False, softmax_scale: Optional[float] = None,
                           window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                           alibi_slopes: Any = None, return_lse: bool = False, out: Any = None,
                           num_splits: int = 0, return_softmax_lse: bool = False,
                           rotary_cos: Any = None, rotary_sin: Any = None,
                           cache_batch_idx: Any = None, cache_leftpad: Any = None,
                           rotary_interleaved: bool = True, device: Any = None,
                           path: str = "auto", kernel: str = "auto",
                           info: Optional[Dict[str, Any]] = None) -> Any:
    """FlashAttention's flash_attn_with_kvcache: attention of q over a KV
    cache, after appending new keys to it in place.

    q is [B, Nq, H, d] (float16, float32 or ml_dtypes.bfloat16). The cache,
    k_cache [B, Nk_max, Hkv, d] and v_cache [B, Nk_max, Hkv, d_v], holds
    Nk_max keys per sequence; with block_table (int32 [B, max_pages]) it is
    paged instead: [num_pages, page_size, Hkv, d], key j of sequence b in
    slot j % page_size of page block_table[b, j // page_size]. Either may
    be a clattn.QuantizedArray (q8_0, q4_0, fp8_e4m3, from clattn.quantize
    or QuantizedArray.zeros; fp8 scales per tensor or per key/value head)
    or an array of q's dtype. cache_seqlens: the keys each sequence holds
    (an int, or int32 [B]; None: all of Nk_max, or max_pages * page_size).

    k and v ([B, Nnew, Hkv, d] and [.., d_v], q's dtype), when given, are
    written into the caches in place at positions cache_seqlens[b] ..
    cache_seqlens[b] + Nnew - 1 (quantized as the cache stores them;
    cache_seqlens itself is left as it is, as FlashAttention leaves it),
    and attention runs over cache_seqlens + Nnew keys. The caches must be
    writable and have room for them.

    causal: FlashAttention's, aligned bottom-right per sequence (query i
    sees keys j <= i + L - Nq, L the sequence's keys). softmax_scale (None:
    1/sqrt(d)), window_size, softcap and alibi_slopes ((H,) or (B, H)) as
    in flash_attn_func; num_splits: key chunks per sequence (0: the
    library's choice). return_lse (or FlashAttention's
    return_softmax_lse) also returns the LSE, float32 [B, H, Nq].

    numpy arrays (host DLPack tensors) run on `device` through
    clattn_kv_append and clattn_attention_ex; pyopencl arrays (and
    QuantizedArrays whose data is on a device) on q's queue through
    clattn_kv_append_cl and clattn_attention_ex_cl, the append and the
    attention enqueued back to back; cache_seqlens and block_table may be
    host arrays or device int32 arrays there.

    Returns out, [B, Nq, H, d_v] (a new array, or `out` written in
    place), or (out, lse). rotary_cos, rotary_sin, cache_batch_idx and
    cache_leftpad are not taken (NotImplementedError).
    """
    _unsupported(rotary_cos=rotary_cos, rotary_sin=rotary_sin, cache_batch_idx=cache_batch_idx,
                 cache_leftpad=cache_leftpad)
    del rotary_interleaved
    if (k is None) != (v is None):
        raise TypeError("give k and v together (the new keys and values), or neither")
    named = [("q", q), ("k_cache", k_cache), ("v_cache", v_cache), ("k", k), ("v", v),
             ("out", out)]
    on_device = _on_device(named)
    if on_device and device is not None:
        raise ValueError("device arrays run on their own queue's device; leave device None")
    q, dt, code = _query(q, on_device)
    qop = operand(q, "q", FA4, "[B, Nq, H, d]", dt)
    B, H, Nq, d = qop.dims
    c = _cache(k_cache, v_cache, block_table, B, d, dt, k is not None and not on_device)
    Hkv, dv = c.k.dims[1], c.v.dims[3]
    _check_heads(H, Hkv)
    new = _new_keys(k, v, on_device, (B, Hkv, 0, d), dv, dt) if k is not None else None
    new_len = new[0].dims[2] if new is not None else 0
    if new is not None and new_len and not on_device:
        _writable_cache(c)
    shape = _shape((("B", B), ("H", H), ("Hkv", Hkv), ("Nq", Nq), ("Nk", c.capacity),
                    ("d", d)), code)
    opts = _options("bottom-right" if causal else None, softmax_scale, path, kernel, num_splits)
    keep: list = []
    _variant(opts, shape, dv, keep, None, window_size, softcap, alibi_slopes, None, None, None)
    opts.q_layout, opts.k_layout, opts.v_layout = qop.layout, c.k.layout, c.v.layout
    _cache_types(opts, c.k, c.v, Hkv, keep)
    more = _paging(opts, c, keep)
    want_lse = bool(return_lse or return_softmax_lse)
    if cache_seqlens is None and new_len:
        raise ValueError("cache_seqlens: appending k and v needs each sequence's current length")
    step = _Step(shape, opts, keep, more, qop, c, new if new_len else None, dv, dt, want_lse,
                 info)
    if on_device:
        _same_context(_device_queue(q), named + [("cache_seqlens", cache_seqlens),
                                                 ("block_table", block_table)])
        return _kvcache_cl(step, _device_queue(q), cache_seqlens, out)
    return _kvcache_host(step, cache_seqlens, out, device)


@dataclass
class _Step:
    """One attention_with_kvcache call, its arguments checked."""
    shape: Any
    opts: Any
    keep: list
    more: Dict[str, Any]
    q: Operand
    cache: _Cache
    new: Optional[Tuple[Operand, Operand]]
    dv: int
    dt: np.dtype
    want_lse: bool
    info: Optional[Dict[str, Any]]

    @property
    def new_len(self) -> int:
        return self.new[0].dims[2] if self.new is not None else 0

    def lens(self, cache_seqlens: Any) -> Optional[np.ndarray]:
        """Host cache_seqlens checked (uint32 [B]), their pages too."""
        if cache_seqlens is None:
            _check_pages(self.cache, None)
            return None
        lens = _host_seqlens(cache_seqlens, self.shape.batch, self.cache.capacity, self.new_len)
        _check_pages(self.cache, lens + self.new_len)
        return lens

    def set_lens(self, lens: np.ndarray) -> None:
        self.keep.append(lens)
        self.opts.kv_lens = lens.ctypes.data_as(ctypes.POINTER(_lib.c_u32))


def _kvcache_host(s: _Step, cache_seqlens: Any, out: Any, device: Any) -> Any:
    lens = s.lens(cache_seqlens)
    if s.new is not None and lens is not None:
        _append_host(s.shape, s.opts, lens, s.new[0], s.new[1], s.cache)
    if lens is not None:
        s.set_lens(lens + np.uint32(s.new_len))
    if out is not None:
        o, s.opts.o_layout = _host_out(out, s.shape, s.dv, "bshd", s.dt)
    else:
        o = np.empty((s.shape.batch, s.shape.q_len, s.shape.heads, s.dv), s.dt)
        s.opts.o_layout = _lib.Layout(s.shape.q_len * s.shape.heads * s.dv, s.dv,
                                      s.shape.heads * s.dv, 0)
    lse = np.empty((s.shape.batch, s.shape.heads, s.shape.q_len), np.float32) \
        if s.want_lse else None
    _call_host(device, s.shape, s.opts, s.q.address, s.cache.k.address, s.cache.v.address,
               o.ctypes.data, lse, s.info)
    result = out if out is not None else o
    return (result, lse) if s.want_lse else result


def _device_out(queue: Any, out: Any, shape: Tuple[int, ...], spec: str, axes: Any,
                dt: np.dtype, zeros: bool = False) -> Tuple[Any, Operand]:
    """out= (a pyopencl array of `shape`) or a new one, as an Operand."""
    import pyopencl.array as cla
    if out is None:
        out = (cla.zeros if zeros else cla.empty)(queue, shape, dt)
    elif tuple(out.shape) != tuple(shape):
        raise ValueError("out must have shape %r, not %r" % (tuple(shape), tuple(out.shape)))
    return out, operand(out, "out", axes, spec, dt)


def _kvcache_cl(s: _Step, queue: Any, cache_seqlens: Any, out: Any) -> Any:
    import pyopencl.array as cla
    wait = s.q.events + s.cache.events
    lens_buf, lens = None, None
    if _is_cl_array(cache_seqlens):
        dev = _device_seqlens(cache_seqlens, s.shape.batch)
        s.keep.append(dev)
        wait += list(dev.events)
        lens_buf = dev.base_data
    else:
        lens = s.lens(cache_seqlens)
    if s.new is not None:
        if lens is not None:
            s.set_lens(lens)
        done = _append_cl(queue, s.shape, s.opts, s.new[0], s.new[1], s.cache, lens_buf, s.more,
                          wait + s.new[0].events + s.new[1].events)
        for op in (s.cache.k, s.cache.v):
            op.mem.add_event(done)
        wait.append(done)
    if lens is not None:
        s.set_lens(lens + np.uint32(s.new_len))
    B, H, Nq = s.shape.batch, s.shape.heads, s.shape.q_len
    o, oop = _device_out(queue, out, (B, Nq, H, s.dv), "[B, Nq, H, d_v]", FA4, s.dt)
    s.opts.o_layout = oop.layout
    lse = cla.empty(queue, (B, H, Nq), np.float32) if s.want_lse else None
    event = _enqueue(queue, s.shape, s.opts, s.q.buffer, s.cache.k.buffer, s.cache.v.buffer,
                     oop.buffer, lse.base_data if lse is not None else None, lens_buf,
                     wait + oop.events, s.info, None, s.more)
    o.add_event(event)
    if lse is not None:
        lse.add_event(event)
    return (o, lse) if s.want_lse else o


# ----------------------------------------------------------------- varlen

@dataclass
class _Offsets:
    """cu_seqlens: B, and the host offsets (int32 [B + 1]) with the longest
    sequence, or the device array."""
    batch: int
    host: Optional[np.ndarray] = None
    device: Any = None
    longest: Optional[int] = None


def _offsets(cu: Any, name: str, total: int, tensor: str, on_device: bool) -> _Offsets:
    if _is_cl_array(cu):
        if not on_device:
            raise TypeError("%s is a device array and q, k, v are host arrays" % name)
        if cu.dtype != np.int32 or cu.ndim != 1 or cu.shape[0] < 2:
            raise ValueError("%s must be int32 [B + 1], B >= 1, not %s %r"
                             % (name, cu.dtype, tuple(cu.shape)))
        if cu.offset or not cu.flags.c_contiguous:
            raise ValueError("a device %s must be contiguous at offset 0 of its buffer" % name)
        return _Offsets(cu.shape[0] - 1, device=cu)
    a = host_array(cu, name)
    if a.ndim != 1 or a.shape[0] < 2:
        raise ValueError("%s must be int32 [B + 1], B >= 1, not shape %r" % (name, a.shape))
    if a.dtype.kind not in "iu":
        raise TypeError("%s must hold integers (int32), not %s" % (name, a.dtype))
    x = a.astype(np.int64)
    if x[0] < 0:
        raise ValueError("%s[0] = %d is negative" % (name, x[0]))
    steps = np.diff(x)
    if np.any(steps < 0):
        b = int(np.nonzero(steps < 0)[0][0])
        raise ValueError("%s[%d] = %d is below %s[%d] = %d" % (name, b + 1, x[b + 1], name, b,
                                                               x[b]))
    if x[-1] > total:
        raise ValueError("%s[B] = %d is past the %d tokens of %s" % (name, x[-1], total, tensor))
    return _Offsets(len(x) - 1, host=np.ascontiguousarray(x, dtype=np.int32),
                    longest=int(steps.max()))


def _max_seqlen(value: Any, off: _Offsets, name: str, cu_name: str) -> int:
    if value is None:
        if off.longest is None:
            raise ValueError("%s is needed with a device %s" % (name, cu_name))
        return off.longest
    n = _args.integer(name, value, 0, 2 ** 31 - 1)
    if off.longest is not None and n < off.longest:
        raise ValueError("%s = %d is below the longest sequence's %d tokens in %s"
                         % (name, n, off.longest, cu_name))
    return n


def _packed(opts: Any, off: _Offsets, which: str, total: int, keep: list,
            more: Dict[str, Any]) -> None:
    """cu_seqlens_<which> and total_<which> into opts (or the device array
    into the extras)."""
    setattr(opts, "total_" + which, total)
    if off.host is not None:
        keep.append(off.host)
        setattr(opts, "cu_seqlens_" + which, off.host.ctypes.data_as(_I32))
    else:
        more["cu_seqlens_" + which] = off.device.base_data


def _no_keys(kop: Operand, vop: Operand, dt: np.dtype, queue: Any) -> Tuple[Operand, Operand]:
    """K and V of one zero token, for a batch without keys (the library
    gives an empty packed tensor one token of room, never read)."""
    def one(op: Operand) -> Operand:
        dims = (1, op.dims[1], 1, op.dims[3])
        if queue is None:
            return Operand(dims, _lib.Layout(), np.zeros(dims, dt))
        import pyopencl.array as cla
        return Operand(dims, _lib.Layout(), cla.zeros(queue, dims, dt))
    return one(kop), one(vop)


def _packed_lse(lse: np.ndarray, cu: np.ndarray, total: int) -> np.ndarray:
    """The padded LSE [B, H, Nq] as FlashAttention's varlen one, [H,
    total_q] (-inf for a token of no sequence)."""
    out = np.full((lse.shape[1], total), -np.inf, np.float32)
    for b in range(lse.shape[0]):
        n = int(cu[b + 1] - cu[b])
        out[:, cu[b]:cu[b + 1]] = lse[b, :, :n]
    return out


_GATHER_SOURCE = """
    const int h = i / total, t = i % total;
    if (t < cu[0] || t >= cu[B]) {
        out[i] = -INFINITY;
    } else {
        int lo = 0, hi = B;
        while (hi - lo > 1) {
            const int mid = (lo + hi) / 2;
            if (cu[mid] <= t) lo = mid; else hi = mid;
        }
        out[i] = lse[((size_t)lo * H + h) * Nq + (t - cu[lo])];
    }
"""
_gather_kernels: Dict[int, Any] = {}


def _packed_lse_cl(queue: Any, lse: Any, cu: Any, total: int) -> Any:
    """_packed_lse on the device, after lse's and cu's events."""
    import pyopencl.array as cla
    from pyopencl.elementwise import ElementwiseKernel
    key = queue.context.int_ptr
    if key not in _gather_kernels:
        _gather_kernels[key] = ElementwiseKernel(
            queue.context, "float *out, const float *lse, const int *cu, int B, int H, int Nq, "
            "int total", _GATHER_SOURCE, "clattn_packed_lse")
    B, H, Nq = lse.shape
    out = cla.empty(queue, (H, total), np.float32)
    event = _gather_kernels[key](out, lse, cu, np.int32(B), np.int32(H), np.int32(Nq),
                                 np.int32(total), wait_for=list(lse.events) + list(cu.events))
    out.add_event(event)
    return out


def attention_varlen(q: Any, k: Any, v: Any, cu_seqlens_q: Any, cu_seqlens_k: Any,
                     max_seqlen_q: Optional[int] = None, max_seqlen_k: Optional[int] = None,
                     *, dropout_p: float = 0.0, softmax_scale: Optional[float] = None,
                     causal: bool = False, window_size: Tuple[int, int] = (-1, -1),
                     softcap: float = 0.0, alibi_slopes: Any = None,
                     deterministic: bool = False, return_lse: bool = False, out: Any = None,
                     device: Any = None, path: str = "auto", kernel: str = "auto",
                     info: Optional[Dict[str, Any]] = None) -> Any:
    """FlashAttention's flash_attn_varlen_func: a batch of sequences packed
    token after token. q is [total_q, H, d], k [total_k, Hkv, d] and v
    [total_k, Hkv, d_v] (float16, float32 or ml_dtypes.bfloat16; k and v
    may be clattn.QuantizedArray, fp8 scales per head along axis -2);
    sequence b's queries are tokens cu_seqlens_q[b] .. cu_seqlens_q[b + 1]
    - 1 of q and its keys tokens cu_seqlens_k[b] .. cu_seqlens_k[b + 1] - 1
    of k and v (int32 [B + 1], non-decreasing; a sequence may be empty).
    max_seqlen_q, max_seqlen_k: the longest sequence's tokens (None: from
    host cu_seqlens; needed with device ones).

    causal aligns bottom-right per sequence (FlashAttention's); the other
    keywords as in flash_attn_func (alibi_slopes (H,) or (B, H)).
    dropout_p must be 0; deterministic changes nothing.

    numpy arrays run on `device` (clattn_attention_ex), pyopencl arrays on
    q's queue (clattn_attention_ex_cl; cu_seqlens host or device int32
    arrays). Returns out [total_q, H, d_v] (new, or `out` written in place;
    a token in no sequence is left as it is, zero in a new one), or with
    return_lse (out, lse), lse float32 [H, total_q] as FlashAttention's
    varlen LSE (-inf for a row that sees no key).
    """
    if dropout_p:
        raise NotImplementedError("dropout_p must be 0: clattn has no dropout")
    del deterministic
    named = [("q", q), ("k", k), ("v", v), ("out", out)]
    on_device = _on_device(named)
    if on_device and device is not None:
        raise ValueError("device arrays run on their own queue's device; leave device None")
    q, dt, code = _query(q, on_device)
    qop = operand(q, "q", PACKED, "[total_q, H, d]", dt)
    kop = operand(k, "k", PACKED, "[total_k, Hkv, d]", dt)
    vop = operand(v, "v", PACKED, "[total_k, Hkv, d_v]", dt)
    _, H, total_q, d = qop.dims
    _, Hkv, total_k, dk = kop.dims
    dv = vop.dims[3]
    if vop.dims[:3] != kop.dims[:3] or dk != d:
        raise ValueError("k [%d, %d, %d] and v [%d, %d, %d] must be [total_k, Hkv, d] with q's "
                         "d = %d" % (kop.dims[2], Hkv, dk, vop.dims[2], vop.dims[1], dv, d))
    _check_heads(H, Hkv)
    cq = _offsets(cu_seqlens_q, "cu_seqlens_q", total_q, "q", on_device)
    ck = _offsets(cu_seqlens_k, "cu_seqlens_k", total_k, "k", on_device)
    if cq.batch != ck.batch:
        raise ValueError("cu_seqlens_q holds %d sequences and cu_seqlens_k %d"
                         % (cq.batch, ck.batch))
    Nq = max(1, _max_seqlen(max_seqlen_q, cq, "max_seqlen_q", "cu_seqlens_q"))
    Nk = max(1, _max_seqlen(max_seqlen_k, ck, "max_seqlen_k", "cu_seqlens_k"))
    shape = _shape((("B", cq.batch), ("H", H), ("Hkv", Hkv), ("Nq", Nq), ("Nk", Nk), ("d", d)),
                   code)
    opts = _options("bottom-right" if causal else None, softmax_scale, path, kernel, 0)
    keep: list = []
    _variant(opts, shape, dv, keep, None, window_size, softcap, alibi_slopes, None, None, None)
    queue = _device_queue(q) if on_device else None
    if queue is not None:
        _same_context(queue, named + [("cu_seqlens_q", cu_seqlens_q),
                                      ("cu_seqlens_k", cu_seqlens_k)])
    if total_k == 0:
        kop, vop = _no_keys(kop, vop, dt, queue)
    _cache_types(opts, kop, vop, Hkv, keep)
    more: Dict[str, Any] = {}
    _packed(opts, cq, "q", total_q, keep, more)
    _packed(opts, ck, "k", max(total_k, 1), keep, more)
    opts.q_layout, opts.k_layout, opts.v_layout = qop.layout, kop.layout, vop.layout
    cu_events = [e for off in (cq, ck) if off.device is not None for e in off.device.events]
    run = _Varlen(shape, opts, qop, kop, vop, dv, dt, cq, total_q, bool(return_lse), info,
                  cu_events)
    if total_q == 0:
        return run.empty(out, queue)
    if queue is not None:
        return _varlen_cl(run, queue, more, out)
    return _varlen_host(run, out, device)


@dataclass
class _Varlen:
    """One attention_varlen call, its arguments checked."""
    shape: Any
    opts: Any
    q: Operand
    k: Operand
    v: Operand
    dv: int
    dt: np.dtype
    cu_q: _Offsets
    total_q: int
    want_lse: bool
    info: Optional[Dict[str, Any]]
    cu_events: List[Any]

    def empty(self, out: Any, queue: Any) -> Any:
        """The result of a batch without queries."""
        H = self.shape.heads
        if out is None:
            if queue is None:
                out = np.zeros((0, H, self.dv), self.dt)
            else:
                import pyopencl.array as cla
                out = cla.zeros(queue, (0, H, self.dv), self.dt)
        lse = np.zeros((H, 0), np.float32)
        if queue is not None:
            import pyopencl.array as cla
            lse = cla.zeros(queue, (H, 0), np.float32)
        return (out, lse) if self.want_lse else out


def _varlen_host(r: _Varlen, out: Any, device: Any) -> Any:
    shape = (r.total_q, r.shape.heads, r.dv)
    if out is not None:
        oop = operand(out, "out", PACKED, "[total_q, H, d_v]", r.dt, writable=True)
        if oop.dims[1:] != (r.shape.heads, r.total_q, r.dv):
            raise ValueError("out must have shape %r, not %r" % (shape, np.shape(out)))
    else:
        oop = operand(np.zeros(shape, r.dt), "out", PACKED, "[total_q, H, d_v]", r.dt)
    r.opts.o_layout = oop.layout
    lse = np.empty((r.shape.batch, r.shape.heads, r.shape.q_len), np.float32) \
        if r.want_lse else None
    _call_host(device, r.shape, r.opts, r.q.address, r.k.address, r.v.address, oop.address, lse,
               r.info)
    result = out if out is not None else oop.mem
    if lse is None:
        return result
    assert r.cu_q.host is not None
    return result, _packed_lse(lse, r.cu_q.host, r.total_q)


def _varlen_cl(r: _Varlen, queue: Any, more: Dict[str, Any], out: Any) -> Any:
    import pyopencl.array as cla
    o, oop = _device_out(queue, out, (r.total_q, r.shape.heads, r.dv), "[total_q, H, d_v]",
                         PACKED, r.dt, zeros=True)
    r.opts.o_layout = oop.layout
    B, H, Nq = r.shape.batch, r.shape.heads, r.shape.q_len
    lse = cla.empty(queue, (B, H, Nq), np.float32) if r.want_lse else None
    wait = r.q.events + r.k.events + r.v.events + oop.events + r.cu_events
    cu_dev = r.cu_q.device
    event = _enqueue(queue, r.shape, r.opts, r.q.buffer, r.k.buffer, r.v.buffer, oop.buffer,
                     lse.base_data if lse is not None else None, None, wait, r.info, None, more)
    o.add_event(event)
    if lse is None:
        return o
    lse.add_event(event)
    cu = cu_dev if cu_dev is not None else cla.to_device(queue, r.cu_q.host)
    return o, _packed_lse_cl(queue, lse, cu, r.total_q)


# ------------------------------------------- clattn.attention, quantized

def attention_quantized(q: Any, k: Any, v: Any, opts: Any, layout: str, device: Any,
                        kv_lens: Any, q_lens: Any, want_lse: bool,
                        info: Optional[Dict[str, Any]], variant: Tuple[Any, ...],
                        enable_gqa: Optional[bool], out: Any, out_lse: Any) -> Any:
    """clattn.attention where K or V is a clattn.QuantizedArray: q, k, v
    as `layout` has them ([B, heads, N, d], or [B, N, heads, d] for
    "bshd"; per-head fp8 scales along the heads axis), on the host or, for
    pyopencl arrays, on q's queue."""
    from ._attention import _check_gqa, _device_lengths, _host_lengths, _host_out_lse, \
        _shape as shape_of
    on_device = _on_device([("q", q), ("k", k), ("v", v), ("out", out), ("out_lse", out_lse)])
    if on_device and device is not None:
        raise ValueError("device arrays run on their own queue's device; leave device None")
    q, dt, code = _query(q, on_device)
    axes = FA4 if layout == "bshd" else (0, 1, 2, 3)
    spec = "[B, N, heads, d]" if layout == "bshd" else "[B, heads, N, d]"
    qop, kop, vop = (operand(x, n, axes, spec, dt) for x, n in ((q, "q"), (k, "k"), (v, "v")))
    shape = shape_of(qop.dims, kop.dims, vop.dims, code)
    _check_gqa(shape, enable_gqa)
    keep: list = []
    dv = vop.dims[3]
    _variant(opts, shape, dv, keep, *variant)
    opts.q_layout, opts.k_layout, opts.v_layout = qop.layout, kop.layout, vop.layout
    _cache_types(opts, kop, vop, shape.kv_heads, keep)
    B, H, Nq = shape.batch, shape.heads, shape.q_len
    o_shape = (B, Nq, H, dv) if layout == "bshd" else (B, H, Nq, dv)
    if not on_device:
        _host_lengths(opts, shape, kv_lens, q_lens, keep)
        if out is not None:
            o, opts.o_layout = _host_out(out, shape, dv, layout, dt)
        else:
            o = np.empty(o_shape, dt)
            opts.o_layout = operand(o, "out", axes, spec, dt).layout
        lse = _host_out_lse(out_lse, shape) if out_lse is not None else \
            np.empty((B, H, Nq), np.float32) if want_lse else None
        _call_host(device, shape, opts, qop.address, kop.address, vop.address, o.ctypes.data,
                   lse, info)
        result, lse_result = (out if out is not None else o), \
            (out_lse if out_lse is not None else lse)
        return (result, lse_result) if want_lse else result
    import pyopencl.array as cla
    queue = _device_queue(q)
    _same_context(queue, [("k", k), ("v", v), ("out", out), ("out_lse", out_lse)])
    wait = qop.events + kop.events + vop.events
    dev = {}
    for name, lens in (("kv_lens", kv_lens), ("q_lens", q_lens)):
        if lens is not None and _is_cl_array(lens):
            dev[name] = _device_lengths(lens, shape, name, wait)
    _host_lengths(opts, shape, None if "kv_lens" in dev else kv_lens,
                  None if "q_lens" in dev else q_lens, keep)
    o, oop = _device_out(queue, out, o_shape, spec, axes, dt)
    opts.o_layout = oop.layout
    if out_lse is not None and (tuple(out_lse.shape) != (B, H, Nq) or out_lse.offset or
                                out_lse.dtype != np.float32 or not out_lse.flags.c_contiguous):
        raise ValueError("out_lse must be a contiguous float32 [B, H, Nq] = %r array at offset "
                         "0 of its buffer" % ((B, H, Nq),))
    lse = out_lse if out_lse is not None else \
        cla.empty(queue, (B, H, Nq), np.float32) if want_lse else None
    event = _enqueue(queue, shape, opts, qop.buffer, kop.buffer, vop.buffer, oop.buffer,
                     lse.base_data if lse is not None else None, dev.get("kv_lens"),
                     wait + oop.events + (list(lse.events) if lse is not None else []), info,
                     dev.get("q_lens"))
    o.add_event(event)
    if lse is not None:
        lse.add_event(event)
    return (o, lse) if want_lse else o
