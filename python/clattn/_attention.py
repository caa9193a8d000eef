# SPDX-License-Identifier: MIT
"""clattn.attention: numpy arrays and DLPack tensors (host call) and pyopencl
arrays or buffers (zero copy, on the caller's queue); clattn.merge and
clattn.plan beside it."""
import ctypes
from dataclasses import dataclass
from typing import Any, Dict, Optional, Sequence, Tuple

import numpy as np

from . import _args, _lib
from ._core import BF16, CAUSAL, F16, F32, MASK_ADD, MASK_BOOL, PATH_NAMES, PATHS, ClattnError, \
    check, context_for, context_for_queue, group_for, group_selectors, lib
from ._dlpack import host_array, writable_host_array
from ._model import DTYPES
from ._quant import QuantizedArray


def _bfloat16():
    """ml_dtypes.bfloat16 as a numpy dtype, or None without ml_dtypes."""
    try:
        import ml_dtypes
    except ImportError:
        return None
    return np.dtype(ml_dtypes.bfloat16)


_DTYPES = {np.dtype(np.float32): F32, np.dtype(np.float16): F16}
if _bfloat16() is not None:
    _DTYPES[_bfloat16()] = BF16
_DTYPE_NAMES = "float16, float32 or ml_dtypes.bfloat16"
LAYOUTS = ("bhsd", "bshd")


def _is_cl_array(x):
    return type(x).__module__.startswith("pyopencl") and hasattr(x, "base_data")


def _options(causal, scale, path, kernel, split_kv):
    """A clattn_options from the keyword arguments, checked as far as Python
    can (the library checks the rest)."""
    L = lib()
    opts = _lib.Options()
    L.clattn_default_options(ctypes.byref(opts))
    if causal not in CAUSAL:
        raise ValueError("causal must be None, 'top-left' or 'bottom-right', not %r" % (causal,))
    opts.causal = CAUSAL[causal]
    scale = _args.scale(scale)
    if scale is not None:
        opts.scale = scale
    if path not in PATHS:
        raise ValueError("path must be 'auto', 'naive' or 'fused', not %r" % (path,))
    opts.path = PATHS[path]
    k = _lib.c_enum()
    check("clattn_fused_kernel_find", L.clattn_fused_kernel_find(str(kernel).encode(),
                                                                 ctypes.byref(k)))
    opts.fused_kernel = k.value
    opts.split_kv = _args.integer("split_kv (0: the library's choice)", split_kv, 0,
                                  _args.U32_MAX)
    return opts


def _shape(qs, ks, vs, dtype):
    """The clattn_shape of Q [B, H, Nq, d], K [B, Hkv, Nk, d] and V [B, Hkv,
    Nk, d_v] (d_v: head_dim_v when it differs from d)."""
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise ValueError("q, k and v must be 4-D: q [B, H, Nq, d], k [B, Hkv, Nk, d], "
                         "v [B, Hkv, Nk, d_v]")
    if tuple(ks[:3]) != tuple(vs[:3]):
        raise ValueError("k %r and v %r must agree on B, Hkv and Nk" % (tuple(ks), tuple(vs)))
    if qs[0] != ks[0] or qs[3] != ks[3]:
        raise ValueError("q %r and k %r disagree on B or d" % (tuple(qs), tuple(ks)))
    dims = (("B", qs[0]), ("H", qs[1]), ("Hkv", ks[1]), ("Nq", qs[2]), ("Nk", ks[2]),
            ("d", qs[3]))
    return _lib.Shape(*(_args.integer("shape's " + n, x) for n, x in dims), dtype)


def _dtype_code(*arrays):
    dt = {np.dtype(a.dtype) for a in arrays}
    if len(dt) != 1:
        raise TypeError("q, k and v must have one dtype, not %s" % sorted(map(str, dt)))
    dt = dt.pop()
    if dt not in _DTYPES:
        raise TypeError("dtype must be %s, not %s%s" % (
            _DTYPE_NAMES, dt, "" if _bfloat16() is not None or dt.kind != "V"
            else " (bfloat16 needs the ml_dtypes package)"))
    return dt, _DTYPES[dt]


def _mask(attn_mask, shape, keep):
    """A clattn_mask from PyTorch's attn_mask: broadcastable to [B, H, Nq, Nk]
    (right-aligned; a leading dim B or 1, H or 1, copied where Nq or Nk is
    broadcast), bool keeping a key where True, a float added to the scores."""
    m = host_array(attn_mask, "attn_mask")
    full = (shape.batch, shape.heads, shape.q_len, shape.kv_len)
    if not 2 <= m.ndim <= 4:
        raise ValueError("attn_mask must have 2 to 4 dims, broadcastable to %r, not shape %r"
                         % (full, m.shape))
    m = m.reshape((1,) * (4 - m.ndim) + m.shape)
    if any(n not in (1, want) for n, want in zip(m.shape, full)):
        raise ValueError("attn_mask of shape %r does not broadcast to [B, H, Nq, Nk] = %r"
                         % (m.shape, full))
    m = np.broadcast_to(m, m.shape[:2] + full[2:])
    if m.dtype == np.bool_:
        arr, kind, code = np.ascontiguousarray(m, dtype=np.uint8), MASK_BOOL, F32
    elif np.dtype(m.dtype) in _DTYPES:
        arr, kind, code = np.ascontiguousarray(m), MASK_ADD, _DTYPES[np.dtype(m.dtype)]
    elif m.dtype.kind == "f":
        arr, kind, code = np.ascontiguousarray(m, dtype=np.float32), MASK_ADD, F32
    else:
        raise TypeError("attn_mask must be bool or floating point, not %s" % m.dtype)
    keep.append(arr)
    return _lib.Mask(kind, code, arr.shape[0], arr.shape[1], _lib.Layout(), arr.ctypes.data)


def _per_head(name, values, shape, per_sequence, keep):
    """fp32 values per query head, [H] (or [B, H] where per_sequence is
    allowed), as the pointer the options hold, and whether they are per
    sequence."""
    a = np.ascontiguousarray(host_array(values, name), dtype=np.float32)
    heads = a.shape == (shape.heads,)
    seq = per_sequence and a.shape == (shape.batch, shape.heads)
    if not (heads or seq):
        raise ValueError("%s must have shape (H,) = (%d,)%s, not %r" % (
            name, shape.heads, " or (B, H) = (%d, %d)" % (shape.batch, shape.heads)
            if per_sequence else "", a.shape))
    if not np.all(np.isfinite(a)):
        raise ValueError("%s must be finite" % name)
    keep.append(a)
    return a.ctypes.data_as(ctypes.POINTER(ctypes.c_float)), seq


def _snippet(name, text, keep):
    if not isinstance(text, str) or not text.strip():
        raise TypeError("%s must be OpenCL C source text, not %r" % (name, text))
    b = text.encode()
    keep.append(b)
    return b


def _variant(opts, shape, dv, keep, attn_mask, window_size, softcap, alibi_slopes, sinks,
             score_mod, mask_mod):
    """The variant keywords into `opts`; the arrays they point at into keep."""
    opts.window_left, opts.window_right = _args.window(window_size)
    opts.softcap = _args.softcap(softcap)
    if dv != shape.head_dim:
        opts.head_dim_v = _args.integer("v's head dimension d_v", dv, 1, 512)
    if attn_mask is not None:
        opts.mask = _mask(attn_mask, shape, keep)
    if alibi_slopes is not None:
        opts.alibi_slopes, opts.alibi_per_sequence = _per_head("alibi_slopes", alibi_slopes,
                                                               shape, True, keep)
    if sinks is not None:
        opts.sinks, _ = _per_head("sinks", sinks, shape, False, keep)
    if score_mod is not None:
        opts.score_mod = _snippet("score_mod", score_mod, keep)
    if mask_mod is not None:
        opts.mask_mod = _snippet("mask_mod", mask_mod, keep)


def _aliases(causal, is_causal, scale, softmax_scale):
    """PyTorch's is_causal (top-left) and FlashAttention's softmax_scale, as
    causal and scale; giving both spellings of one is an error."""
    if is_causal is not None:
        if causal is not None:
            raise TypeError("give causal or is_causal, not both")
        causal = "top-left" if is_causal else None
    if softmax_scale is not None:
        if scale is not None:
            raise TypeError("give scale or softmax_scale, not both")
        scale = softmax_scale
    return causal, scale


def _check_gqa(shape, enable_gqa):
    """PyTorch's enable_gqa=False: query and key/value heads must be equal."""
    if enable_gqa is False and shape.heads != shape.kv_heads:
        raise ValueError("q has %d heads and k %d: grouped-query attention needs enable_gqa=True "
                         "(or leave enable_gqa None)" % (shape.heads, shape.kv_heads))


def _layout(shape, strides, itemsize, offset=0):
    """A clattn_layout for element strides, or None where clattn cannot take
    them: the last dimension must be contiguous, the others positive
    multiples of the element size with the token stride at least d. A
    dimension of size 1 takes any stride (0, the library's default)."""
    el = []
    for n, s in zip(shape, strides):
        if n == 1:
            el.append(0)
        elif s <= 0 or s % itemsize:
            return None
        else:
            el.append(s // itemsize)
    if shape[3] > 1 and el[3] != 1:
        return None
    if el[2] and el[2] < shape[3]:
        return None
    if offset % itemsize:
        return None
    return _lib.Layout(el[0], el[1], el[2], offset)


def _host_input(x, dtype):
    """A numpy array clattn can read in place, and its layout (copied to C
    order when its strides do not map onto a layout)."""
    lay = _layout(x.shape, x.strides, x.itemsize)
    if lay is None:
        x = np.ascontiguousarray(x, dtype=dtype)
        lay = _lib.Layout()
    return x, lay


def _lens_array(lens, batch, name="kv_lens", limit=_args.U32_MAX):
    """Host kv_lens or q_lens as the uint32 array the library reads: B
    lengths, each from 0 to `limit` (Nk or Nq)."""
    if np.ndim(lens) != 1:
        raise ValueError("%s must hold one length per sequence (%d), not shape %r"
                         % (name, batch, np.shape(lens)))
    return np.array(_args.lengths(name, lens, batch, limit), dtype=np.uint32)


def _host_lengths(opts, shape, kv_lens, q_lens, keep):
    """Host kv_lens and q_lens into opts (the arrays kept alive in keep)."""
    for name, lens, limit in (("kv_lens", kv_lens, shape.kv_len), ("q_lens", q_lens,
                                                                    shape.q_len)):
        if lens is None:
            continue
        a = _lens_array(host_array(lens, name), shape.batch, name, limit)
        keep.append(a)
        setattr(opts, name, a.ctypes.data_as(ctypes.POINTER(_lib.c_u32)))


def _device_lengths(lens, shape, name, wait):
    """A device kv_lens or q_lens: a uint32 pyopencl array of B at offset 0,
    its buffer; its events join `wait`."""
    if lens.dtype != np.uint32 or lens.shape != (shape.batch,) or lens.offset:
        raise ValueError("device %s must be a uint32 array of B = %d at offset 0"
                         % (name, shape.batch))
    wait += list(lens.events)
    return lens.base_data


def _out_shape(shape, dv, layout):
    if layout == "bshd":
        return (shape.batch, shape.q_len, shape.heads, dv)
    return (shape.batch, shape.heads, shape.q_len, dv)


def _check_out(o, name, want_shape, dt):
    if tuple(o.shape) != tuple(want_shape):
        raise ValueError("%s must have shape %r, not %r" % (name, tuple(want_shape),
                                                            tuple(o.shape)))
    if np.dtype(o.dtype) != np.dtype(dt):
        raise TypeError("%s must be %s, not %s" % (name, np.dtype(dt), o.dtype))


def _host_out(out, shape, dv, layout, dt):
    """out= as the numpy array written in place and its clattn_layout."""
    o = writable_host_array(out, "out")
    _check_out(o, "out", _out_shape(shape, dv, layout), dt)
    view = o.transpose(0, 2, 1, 3) if layout == "bshd" else o
    lay = _layout(view.shape, view.strides, view.itemsize)
    if lay is None:
        raise ValueError("out: its last dimension must be contiguous and its other strides "
                         "positive multiples of the element size (strides %r)" % (o.strides,))
    return o, lay


def _host_out_lse(out_lse, shape):
    lse = writable_host_array(out_lse, "out_lse")
    _check_out(lse, "out_lse", (shape.batch, shape.heads, shape.q_len), np.float32)
    if not lse.flags.c_contiguous:
        raise ValueError("out_lse must be C-contiguous (the library writes [B, H, Nq] in order)")
    return lse


def _fill_info(info, run):
    if info is not None:
        info.update(path=PATH_NAMES.get(run.path, "?"),
                    kernel=run.kernel.decode("utf-8", "replace"),
                    note=run.note.decode("utf-8", "replace"), splits=run.splits,
                    predicted_peak_bytes=run.predicted_peak_bytes,
                    allocated_bytes=run.allocated_bytes, build_seconds=run.build_seconds)


def attention(q: Any, k: Any, v: Any, *, causal: Optional[str] = None,
              scale: Optional[float] = None, path: str = "auto", kernel: str = "auto",
              device: Any = None, kv_lens: Any = None, q_lens: Any = None, split_kv: int = 0,
              return_lse: bool = False, info: Optional[Dict[str, Any]] = None,
              out: Any = None, out_lse: Any = None, attn_mask: Any = None,
              window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
              alibi_slopes: Any = None, sinks: Any = None, score_mod: Optional[str] = None,
              mask_mod: Optional[str] = None, layout: str = "bhsd",
              is_causal: Optional[bool] = None, softmax_scale: Optional[float] = None,
              enable_gqa: Optional[bool] = None, spread: Optional[str] = None) -> Any:
    """O = softmax(scale Q K^T) V, with the attention variants.

    q is [B, H, Nq, d], k [B, Hkv, Nk, d] and v [B, Hkv, Nk, d_v] with H a
    multiple of Hkv (grouped-query attention) and d_v = d unless it differs
    (DeepSeek's MLA), all float16, all float32 or all ml_dtypes.bfloat16.
    layout="bshd" takes and returns them as [B, N, heads, d] instead
    (FlashAttention's layout). k and v may also be clattn.QuantizedArray
    (clattn.quantize: q8_0, q4_0, fp8_e4m3; per-head fp8 scales along the
    heads axis, head_axis=1 for [B, Hkv, Nk, d]).

    numpy arrays (any strides: views are read in place when their last
    dimension is contiguous, copied otherwise) and DLPack tensors in host
    memory (PyTorch or JAX CPU tensors, anything with __dlpack__, bfloat16
    included, read in place) give a new C-order numpy array, computed on
    `device` (None: $CLATTN_DEVICE or the default; an index or a name from
    clattn.devices(); a pyopencl.Device). A list of devices, or a string of
    selectors with commas ("0,1"), runs the call across them
    (clattn_group_attention: a decoding step split by keys and merged
    exactly, longer calls by query rows; info["group"] says which, and why
    when the call ran on the first device alone); spread= asks for the
    group's scheme: "auto" (None), "one", "keys", "queries" or "ring" (each
    device's rows against the key blocks in turn, holding one block:
    clattn_group_set_scheme). The result speaks DLPack
    itself (torch.from_dlpack(o) takes it without a copy).

    pyopencl.array.Array inputs are used where they are, without a copy: the
    work is enqueued on q's queue after the arrays' events, through a clattn
    context that shares that queue and its context, and the new O (and LSE)
    arrays carry the completion event (o.events), so o.get() waits for it.

    causal: None, "top-left" (PyTorch's is_causal) or "bottom-right"
    (FlashAttention's). scale: None for 1/sqrt(d). path: "auto", "naive",
    "fused"; kernel: "auto" or a fused kernel's name. kv_lens: each
    sequence's number of keys (B of them, <= Nk); q_lens: each sequence's
    number of queries (<= Nq; rows past it output zeros and LSE -inf); for
    device arrays either may be a uint32 pyopencl array. split_kv: key
    chunks per sequence on the fused path (0: the library's choice).
    return_lse: also return each row's log-sum-exp, float32 [B, H, Nq]
    (-inf for a row that sees no key). info: a dict to receive what ran
    (path, kernel, splits, build_seconds).

    out: the array O is written into, in place and returned (PyTorch's
    out=): a writable numpy array or host DLPack tensor for host inputs, a
    pyopencl array (of q's context) for device inputs, of O's shape ([B, H,
    Nq, d_v], or [B, Nq, H, d_v] for layout "bshd") and dtype, with any
    strides whose last dimension is contiguous. out_lse: the same for the
    LSE (float32 [B, H, Nq], contiguous; implies return_lse). An output
    that overlaps an input or the other output is refused.

    The variants (clattn_options'), applied to each score in this order:
    softcap > 0 caps it, softcap tanh(s / softcap) (Gemma 2, FlashAttention);
    alibi_slopes, float32 (H,) or (B, H), subtracts slope |i + off - j|
    (FlashAttention's alibi_slopes; off is 0 top-left, Nk - Nq otherwise);
    attn_mask, broadcastable to (B, H, Nq, Nk) as PyTorch's: bool keeps a
    key where True, a float (float32, float16, bfloat16; others as float32)
    is added; score_mod, OpenCL C defining float clattn_score_mod(float s,
    uint b, uint h, uint q, uint k) (FlexAttention's score_mod). Keys are
    hidden by the causal mask, window_size=(left, right) (FlashAttention's:
    query i sees keys i + off - left .. i + off + right, -1 unbounded), a
    bool or -inf mask, and mask_mod (OpenCL C defining bool
    clattn_mask_mod(uint b, uint h, uint q, uint k)). sinks, float32 (H,):
    each head's logit joins the softmax's denominator (gpt-oss). The naive
    path takes none of them, nor bf16 or d_v != d: auto runs them fused.

    PyTorch's spellings: is_causal (True: causal "top-left"), attn_mask,
    scale, enable_gqa (False: H must equal Hkv; None, the default, allows
    grouped heads). FlashAttention's: softmax_scale, window_size, softcap,
    alibi_slopes; its causal=True is bottom-right, which here is
    causal="bottom-right" (clattn.flash_attn_func takes FlashAttention's
    arguments as they are, layout and all). Nq = Nk makes the two
    alignments one.

    Returns O, or (O, LSE). Raises clattn.ClattnError when the library
    refuses or fails (its message and detail in the exception), ValueError
    or TypeError for arguments it never sees.
    """
    causal, scale = _aliases(causal, is_causal, scale, softmax_scale)
    opts = _options(causal, scale, path, kernel, split_kv)
    return_lse = bool(return_lse) or out_lse is not None
    if layout not in LAYOUTS:
        raise ValueError("layout must be 'bhsd' ([B, heads, N, d]) or 'bshd' ([B, N, heads, d]), "
                         "not %r" % (layout,))
    variant = (attn_mask, window_size, softcap, alibi_slopes, sinks, score_mod, mask_mod)
    if isinstance(k, QuantizedArray) or isinstance(v, QuantizedArray):
        from ._kvcache import attention_quantized
        return attention_quantized(q, k, v, opts, layout, device, kv_lens, q_lens, return_lse,
                                   info, variant, enable_gqa, out, out_lse)
    if any(_is_cl_array(x) for x in (q, k, v)):
        if device is not None:
            raise ValueError("device arrays run on their own queue's device; leave device None")
        if layout != "bhsd":
            raise ValueError("device arrays take layout 'bhsd' (give their strides instead)")
        return _attention_arrays(q, k, v, opts, kv_lens, q_lens, return_lse, info, variant,
                                 enable_gqa, out, out_lse)
    if spread is not None and group_selectors(device) is None:
        raise ValueError("spread= is for a device group (device=[0, 1] or \"0,1\")")
    q, k, v = host_array(q, "q"), host_array(k, "k"), host_array(v, "v")
    if layout == "bshd":
        if q.ndim != 4 or k.ndim != 4 or v.ndim != 4:
            raise ValueError("layout 'bshd': q, k and v must be 4-D [B, N, heads, d]")
        q, k, v = (x.transpose(0, 2, 1, 3) for x in (q, k, v))  # views, read in place
    dt, code = _dtype_code(q, k, v)
    shape = _shape(q.shape, k.shape, v.shape, code)
    _check_gqa(shape, enable_gqa)
    keep: list = []
    dv = v.shape[3]
    _variant(opts, shape, dv, keep, *variant)
    q, opts.q_layout = _host_input(q, dt)
    k, opts.k_layout = _host_input(k, dt)
    v, opts.v_layout = _host_input(v, dt)
    if group_selectors(device) is not None:
        # A group splits contiguous tensors (views would run on one device).
        q, k, v = (np.ascontiguousarray(x) for x in (q, k, v))
        opts.q_layout, opts.k_layout, opts.v_layout = _lib.Layout(), _lib.Layout(), _lib.Layout()
    _host_lengths(opts, shape, kv_lens, q_lens, keep)
    if out is not None:
        o, opts.o_layout = _host_out(out, shape, dv, layout, dt)
    elif layout == "bshd":
        o = np.empty((shape.batch, shape.q_len, shape.heads, dv), dtype=dt)
        opts.o_layout = _lib.Layout(shape.q_len * shape.heads * dv, dv, shape.heads * dv, 0)
    else:
        o = np.empty((shape.batch, shape.heads, shape.q_len, dv), dtype=dt)
    if out_lse is not None:
        lse = _host_out_lse(out_lse, shape)
    else:
        lse = np.empty((shape.batch, shape.heads, shape.q_len), np.float32) if return_lse \
            else None
    _call_host(device, shape, opts, q.ctypes.data, k.ctypes.data, v.ctypes.data, o.ctypes.data,
               lse if return_lse else None, info, spread)
    if out is not None:
        o = out  # the caller's object itself (a DLPack producer stays what it was)
    if out_lse is not None:
        lse = out_lse
    return (o, lse) if return_lse else o


def _cl_layout(x, name):
    lay = _layout(x.shape, x.strides, x.dtype.itemsize, x.offset)
    if lay is None:
        raise ValueError("%s: a device array's last dimension must be contiguous and its other "
                         "strides positive multiples of the element size (strides %r); make a "
                         "contiguous copy" % (name, x.strides))
    return lay


# ------------------------------------------------------------- operands

@dataclass
class Operand:
    """A tensor as the library reads it: `dims`, its [batch, heads, tokens,
    d] (1 where the tensor has no such axis), its `layout`, `mem`, what
    holds it (a numpy array, whose first element the call reads, or a
    pyopencl array, whose buffer), its storage type `kv_type` (0: the
    shape's dtype) and fp8's `scale` (float32 (1,), or one per key/value
    head with `per_head`)."""
    dims: Tuple[int, int, int, int]
    layout: Any
    mem: Any
    kv_type: int = 0
    scale: Optional[np.ndarray] = None
    per_head: bool = False

    @property
    def on_device(self) -> bool:
        return _is_cl_array(self.mem)

    @property
    def address(self) -> int:
        """The host address of the first element."""
        return self.mem.ctypes.data

    @property
    def buffer(self) -> Any:
        """The pyopencl buffer (the layout holds the array's offset)."""
        return self.mem.base_data

    @property
    def events(self) -> list:
        return list(self.mem.events) if self.on_device else []


def _pick(values, axes, absent):
    return tuple(absent if a is None else values[a] for a in axes)


def _value_strides(shape):
    """C-order strides of `shape`, counted in values."""
    out, step = [], 1
    for n in reversed(shape):
        out.insert(0, step)
        step *= max(n, 1)
    return tuple(out)


def _quantized_operand(x, name, axes, spec):
    ndim = sum(a is not None for a in axes)
    if x.ndim != ndim:
        raise ValueError("%s must be %d-D %s, not shape %r" % (name, ndim, spec, x.shape))
    if x.per_head and x.head_axis != axes[1]:
        raise ValueError("%s: its fp8 scales are one per index of axis %d, and the key/value "
                         "heads of %s are axis %d (quantize with head_axis=%d)"
                         % (name, x.head_axis, spec, axes[1], axes[1]))
    dims = _pick(x.shape, axes, 1)
    offset = x.data.offset if x.on_device else 0
    lay = _layout(dims, _pick(_value_strides(x.shape), axes, 0), 1, offset)
    return Operand(dims, lay, x.data, x._code, x.scale, x.per_head)


def operand(x: Any, name: str, axes: Tuple[Optional[int], ...], spec: str, dtype: Any,
            writable: bool = False) -> Operand:
    """x (a numpy array or host DLPack tensor, a pyopencl array, or a
    clattn.QuantizedArray) as an Operand whose dims take x's axes `axes`
    (the axis of x for each of batch, heads, tokens and d; None: a unit
    axis x lacks); `spec` names x's axes in errors, and plain storage must
    have `dtype`. A host array whose strides map onto no layout is copied,
    unless it is `writable` (written in place): then, as for a device
    array, it is refused."""
    from ._quant import QuantizedArray
    if isinstance(x, QuantizedArray):
        return _quantized_operand(x, name, axes, spec)
    device = _is_cl_array(x)
    if not device:
        x = writable_host_array(x, name) if writable else host_array(x, name)
    ndim = sum(a is not None for a in axes)
    if len(x.shape) != ndim:
        raise ValueError("%s must be %d-D %s, not shape %r" % (name, ndim, spec, tuple(x.shape)))
    if np.dtype(x.dtype) != np.dtype(dtype):
        raise TypeError("%s must be %s (q's dtype) or a clattn.QuantizedArray, not %s"
                        % (name, np.dtype(dtype), x.dtype))
    dims = _pick(tuple(x.shape), axes, 1)
    lay = _layout(dims, _pick(tuple(x.strides), axes, 0), x.dtype.itemsize,
                  x.offset if device else 0)
    if lay is not None:
        return Operand(dims, lay, x)
    if device or writable:
        raise ValueError("%s: %s its last axis must be contiguous and its other strides "
                         "positive multiples of the element size (strides %r)"
                         % (name, "a device array is read in place:" if device else
                            "written in place,", tuple(x.strides)))
    plain = x.transpose([a for a in axes if a is not None]).reshape(dims)
    return Operand(dims, _lib.Layout(), np.ascontiguousarray(plain))


def _attend(holder, name, shape, opts, q, k, v, o, lse_p, info_struct, spread=None):
    """One host call of the C function `name` on a context or a group
    (its scheme set first: `spread`, None for auto), under its lock
    (ctypes releases the GIL during it)."""
    with holder.lock:
        if name == "clattn_group_attention":
            if not hasattr(lib(), "clattn_group_set_scheme"):
                if spread is not None:
                    raise ValueError("spread=: %s predates clattn_group_set_scheme (API 1.6)"
                                     % lib().clattn_path)
            else:
                check("clattn_group_set_scheme", lib().clattn_group_set_scheme(
                    holder.handle, spread.encode() if spread is not None else None))
        check(name, getattr(lib(), name)(
            holder.handle, ctypes.byref(shape), ctypes.byref(opts), q, k, v, o, lse_p,
            ctypes.byref(info_struct)))


def _call_host(device, shape, opts, q, k, v, o, lse, info, spread=None):
    """clattn_attention_ex on host memory (the addresses of q, k, v and o;
    lse a float32 numpy array or None); run info into `info`. A group of
    devices (a list, or "0,1") runs clattn_group_attention instead, by the
    scheme `spread` (None: auto)."""
    lse_p = lse.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) if lse is not None else None
    selectors = group_selectors(device)
    if selectors is not None:
        gi = _lib.GroupInfo()
        group = group_for(selectors)
        _attend(group, "clattn_group_attention", shape, opts, q, k, v, o, lse_p, gi, spread)
        if info is not None:
            info["group"] = {"scheme": gi.scheme.decode(), "devices": gi.devices,
                             "note": gi.note.decode(),
                             "shares": [(gi.begin[i], gi.share[i])
                                        for i in range(selectors.count(",") + 1)]}
        return
    run = _lib.RunInfo()
    ctx = context_for(device)
    _attend(ctx, "clattn_attention_ex", shape, opts, q, k, v, o, lse_p, run)
    _fill_info(info, run)


def _attention_arrays(q, k, v, opts, kv_lens, q_lens, return_lse, info, variant, enable_gqa,
                      out, out_lse):
    import pyopencl as cl
    import pyopencl.array as cla
    if not all(_is_cl_array(x) for x in (q, k, v)):
        raise TypeError("q, k and v must all be numpy arrays or all pyopencl arrays")
    queue = q.queue
    if queue is None:
        raise ValueError("q has no queue: give the pyopencl arrays one (with_queue)")
    if any(x.context.int_ptr != queue.context.int_ptr for x in (k, v)):
        raise ValueError("q, k and v must belong to one OpenCL context")
    dt, code = _dtype_code(q, k, v)
    shape = _shape(q.shape, k.shape, v.shape, code)
    _check_gqa(shape, enable_gqa)
    keep: list = []  # the variants' host arrays, copied to the device by the call
    dv = v.shape[3]
    _variant(opts, shape, dv, keep, *variant)
    opts.q_layout, opts.k_layout, opts.v_layout = (_cl_layout(q, "q"), _cl_layout(k, "k"),
                                                   _cl_layout(v, "v"))
    wait = list(q.events) + list(k.events) + list(v.events)
    if out is not None:
        if not _is_cl_array(out) or out.context.int_ptr != queue.context.int_ptr:
            raise TypeError("out must be a pyopencl array of q's context for device inputs")
        _check_out(out, "out", (shape.batch, shape.heads, shape.q_len, dv), dt)
        o = out
        opts.o_layout = _cl_layout(out, "out")
        wait += list(out.events)
    else:
        o = cla.empty(queue, (shape.batch, shape.heads, shape.q_len, dv), dt)
    if out_lse is not None:
        if not _is_cl_array(out_lse) or out_lse.context.int_ptr != queue.context.int_ptr:
            raise TypeError("out_lse must be a pyopencl array of q's context for device inputs")
        _check_out(out_lse, "out_lse", (shape.batch, shape.heads, shape.q_len), np.float32)
        if out_lse.offset or not out_lse.flags.c_contiguous:
            raise ValueError("out_lse must be contiguous at offset 0 of its buffer")
        lse = out_lse
        wait += list(out_lse.events)
    else:
        lse = cla.empty(queue, (shape.batch, shape.heads, shape.q_len), np.float32) \
            if return_lse else None
    dev_lens = {}
    host = {}
    for name, lens in (("kv_lens", kv_lens), ("q_lens", q_lens)):
        if lens is not None and _is_cl_array(lens):
            dev_lens[name] = _device_lengths(lens, shape, name, wait)
        else:
            host[name] = lens
    _host_lengths(opts, shape, host.get("kv_lens"), host.get("q_lens"), keep)
    event = _enqueue(queue, shape, opts, q.base_data, k.base_data, v.base_data, o.base_data,
                     lse.base_data if return_lse else None, dev_lens.get("kv_lens"), wait, info,
                     dev_lens.get("q_lens"))
    o.add_event(event)
    if return_lse:
        lse.add_event(event)
    return (o, lse) if return_lse else o


def _extras(lse=None, kv_lens=None, q_lens=None, more=None):
    """A clattn_extras of pyopencl buffers: the LSE, the lengths and, in
    `more`, any other field by name (block_table, cu_seqlens_q, ...)."""
    extras = _lib.Extras()
    lib().clattn_default_extras(ctypes.byref(extras))
    fields = dict(lse=lse, kv_lens=kv_lens, q_lens=q_lens, **(more or {}))
    for name, buf in fields.items():
        setattr(extras, name, buf.int_ptr if buf is not None else None)
    return extras


def _enqueue(queue, shape, opts, q, k, v, o, lse, kv_lens, wait_for, info, q_lens=None,
             more=None):
    """clattn_attention_ex_cl on pyopencl buffers; the completion event.
    `more`: further clattn_extras buffers by field name."""
    import pyopencl as cl
    ctx = context_for_queue(queue)
    extras = _extras(lse, kv_lens, q_lens, more)
    wait = (_lib.c_ptr * max(len(wait_for), 1))(*[e.int_ptr for e in wait_for])
    done = _lib.c_ptr()
    run = _lib.RunInfo()
    with ctx.lock:
        rc = lib().clattn_attention_ex_cl(
            ctx.handle, ctypes.byref(shape), ctypes.byref(opts), q.int_ptr, k.int_ptr, v.int_ptr,
            o.int_ptr, ctypes.byref(extras), len(wait_for), wait if wait_for else None,
            ctypes.byref(done), ctypes.byref(run))
        check("clattn_attention_ex_cl", rc)
    _fill_info(info, run)
    return cl.Event.from_int_ptr(done.value, retain=False)


def attention_cl(queue: Any, q: Any, k: Any, v: Any, o: Any, *, shape: Sequence[int],
                 dtype: Any, causal: Optional[str] = None, scale: Optional[float] = None,
                 path: str = "auto", kernel: str = "auto",
                 layouts: Optional[Dict[str, Sequence[int]]] = None, lse: Any = None,
                 kv_lens: Any = None, q_lens: Any = None, split_kv: int = 0,
                 wait_for: Optional[Sequence[Any]] = None, info: Optional[Dict[str, Any]] = None,
                 head_dim_v: Optional[int] = None, attn_mask: Any = None,
                 window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                 alibi_slopes: Any = None, sinks: Any = None, score_mod: Optional[str] = None,
                 mask_mod: Optional[str] = None) -> Any:
    """clattn_attention_ex_cl on raw pyopencl.Buffers: enqueues attention on
    `queue` (in order; a clattn context shares it and its context) reading q,
    k, v and writing o (and lse, float32 [B, H, Nq], when given), after
    `wait_for` (pyopencl events). Returns the completion pyopencl.Event.

    shape is (B, H, Hkv, Nq, Nk, d) and dtype numpy.float16 or float32.
    layouts maps "q", "k", "v", "o" to element strides (batch, head, token)
    and a byte offset, as clattn_layout; absent ones are contiguous [B,
    heads, N, d]. kv_lens, q_lens: a uint32 pyopencl.Buffer of B lengths,
    or host lengths. head_dim_v: V's and O's head dimension when it differs from d.
    The variants (attn_mask, window_size, softcap, alibi_slopes, sinks,
    score_mod, mask_mod) are attention()'s, their tensors numpy arrays that
    the call copies to the device. The other arguments are attention()'s.
    """
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise TypeError("dtype must be %s, not %s" % (_DTYPE_NAMES, dt))
    if len(shape) != 6:
        raise ValueError("shape is (B, H, Hkv, Nq, Nk, d)")
    s = _lib.Shape(*(_args.integer("shape's " + n, x)
                     for n, x in zip(("B", "H", "Hkv", "Nq", "Nk", "d"), shape)), _DTYPES[dt])
    opts = _options(causal, scale, path, kernel, split_kv)
    keep: list = []  # the variants' host arrays, alive until the call has copied them
    dv = s.head_dim if head_dim_v is None else head_dim_v
    _variant(opts, s, dv, keep, attn_mask, window_size, softcap, alibi_slopes, sinks, score_mod,
             mask_mod)
    for name, lay in (layouts or {}).items():
        if name not in ("q", "k", "v", "o"):
            raise ValueError("layouts keys are q, k, v, o, not %r" % (name,))
        if len(lay) != 4:
            raise ValueError("a layout is (batch_stride, head_stride, token_stride, "
                             "byte_offset)")
        setattr(opts, name + "_layout", _lib.Layout(*(
            _args.integer("layouts[%r]'s %s" % (name, what), x, 0)
            for what, x in zip(("batch_stride", "head_stride", "token_stride", "byte_offset"),
                               lay))))
    bufs, host = {}, {}
    for name, lens in (("kv_lens", kv_lens), ("q_lens", q_lens)):
        if lens is not None and hasattr(lens, "int_ptr"):
            bufs[name] = lens
        else:
            host[name] = lens
    _host_lengths(opts, s, host.get("kv_lens"), host.get("q_lens"), keep)
    return _enqueue(queue, s, opts, q, k, v, o, lse, bufs.get("kv_lens"), list(wait_for or []),
                    info, bufs.get("q_lens"))


def scaled_dot_product_attention(query: Any, key: Any, value: Any, attn_mask: Any = None,
                                 dropout_p: float = 0.0, is_causal: bool = False,
                                 scale: Optional[float] = None, enable_gqa: bool = False,
                                 **kwargs: Any) -> Any:
    """PyTorch's torch.nn.functional.scaled_dot_product_attention on numpy (or
    pyopencl) arrays, with its arguments' meanings: query [B, H, Nq, d], key
    and value [B, Hkv, Nk, d | d_v]; attn_mask broadcastable to [B, H, Nq,
    Nk], bool True taking part, a float added; is_causal the top-left causal
    mask; scale None for 1/sqrt(d); enable_gqa=False asks H = Hkv. dropout_p
    must be 0 (clattn computes inference attention). Where PyTorch refuses
    attn_mask together with is_causal, clattn applies both. The other
    keywords are clattn.attention's (device, path, return_lse, ...)."""
    if dropout_p:
        raise NotImplementedError("dropout_p must be 0: clattn has no dropout")
    return attention(query, key, value, attn_mask=attn_mask, is_causal=bool(is_causal),
                     scale=scale, enable_gqa=bool(enable_gqa), **kwargs)


def flash_attn_func(q: Any, k: Any, v: Any, dropout_p: float = 0.0,
                    softmax_scale: Optional[float] = None, causal: bool = False,
                    window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
                    alibi_slopes: Any = None, deterministic: bool = False,
                    return_attn_probs: bool = False, **kwargs: Any) -> Any:
    """FlashAttention's flash_attn_func on numpy (or pyopencl) arrays, with
    its arguments' meanings: q [B, Nq, H, d], k and v [B, Nk, Hkv, d | d_v]
    (its layout), O returned as [B, Nq, H, d_v]; causal=True aligned
    bottom-right (query i sees keys j <= i + Nk - Nq); window_size (left,
    right), -1 unbounded, aligned the same way; softcap; alibi_slopes
    float32 (H,) or (B, H); softmax_scale None for 1/sqrt(d). dropout_p must
    be 0 and return_attn_probs False (the probabilities never leave the
    kernel); deterministic changes nothing (clattn's forward pass always
    is). The other keywords are clattn.attention's (return_lse gives FA's
    softmax_lse, [B, H, Nq])."""
    if dropout_p:
        raise NotImplementedError("dropout_p must be 0: clattn has no dropout")
    if return_attn_probs:
        raise NotImplementedError("return_attn_probs: the probabilities never leave the fused "
                                  "kernel (return_lse=True gives the LSE)")
    del deterministic
    return attention(q, k, v, causal="bottom-right" if causal else None, scale=softmax_scale,
                     window_size=window_size, softcap=softcap, alibi_slopes=alibi_slopes,
                     layout="bshd", **kwargs)


def alibi_slopes(heads: int, max_bias: float = 8.0) -> np.ndarray:
    """ggml's ALiBi slopes for `heads` query heads from max_bias (8: the
    ALiBi paper's slopes for a power of two heads), float32 (H,), through
    clattn_alibi_slopes."""
    heads = _args.integer("heads", heads)
    out = np.empty(heads, np.float32)
    check("clattn_alibi_slopes", lib().clattn_alibi_slopes(
        float(max_bias), heads, out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))
    return out


# ------------------------------------------------------------------ merge

def _merge_shapes(o1, lse1, o2, lse2):
    if tuple(o1.shape) != tuple(o2.shape):
        raise ValueError("o1 %r and o2 %r must have one shape" % (tuple(o1.shape),
                                                                 tuple(o2.shape)))
    if len(o1.shape) < 1:
        raise ValueError("o1 and o2 must end in the head dimension d: [..., d]")
    for name, lse in (("lse1", lse1), ("lse2", lse2)):
        if tuple(lse.shape) != tuple(o1.shape[:-1]):
            raise ValueError("%s must have shape %r (o's without d), not %r"
                             % (name, tuple(o1.shape[:-1]), tuple(lse.shape)))
        if np.dtype(lse.dtype) != np.float32:
            raise TypeError("%s must be float32, not %s" % (name, lse.dtype))
    dt, code = _dtype_code(o1, o2)
    rows = int(np.prod(o1.shape[:-1], dtype=np.int64)) if len(o1.shape) > 1 else 1
    return dt, code, rows, int(o1.shape[-1])


def merge(o1: Any, lse1: Any, o2: Any, lse2: Any, *, out: Any = None,
          out_lse: Any = None) -> Tuple[Any, Any]:
    """The exact attention over the union of two disjoint sets of keys, from
    each set's result: o1, o2 [..., d] (float16, float32 or bfloat16) and
    their log-sum-exps lse1, lse2 [...] (float32, as return_lse gives them),
    e.g. one sequence's keys split across devices or processes. The merged
    row is exp(lse1 - lse) o1 + exp(lse2 - lse) o2 with lse = log(exp(lse1)
    + exp(lse2)); a side with lse -inf (it saw no key) contributes nothing.

    numpy arrays or host DLPack tensors run on the host (clattn_merge);
    pyopencl arrays (contiguous, at offset 0 of their buffers) are merged on
    their queue's device (clattn_merge_cl) after their events. out and
    out_lse receive the result (they may be o1 and lse1 themselves: in
    place); otherwise new arrays are returned. Returns (o, lse)."""
    if any(_is_cl_array(x) for x in (o1, lse1, o2, lse2)):
        return _merge_cl(o1, lse1, o2, lse2, out, out_lse)
    o1, lse1, o2, lse2 = (host_array(x, n) for x, n in ((o1, "o1"), (lse1, "lse1"),
                                                        (o2, "o2"), (lse2, "lse2")))
    dt, code, rows, d = _merge_shapes(o1, lse1, o2, lse2)
    o = writable_host_array(out, "out") if out is not None else np.empty(o1.shape, dt)
    lse = writable_host_array(out_lse, "out_lse") if out_lse is not None else \
        np.empty(lse1.shape, np.float32)
    _check_out(o, "out", o1.shape, dt)
    _check_out(lse, "out_lse", lse1.shape, np.float32)
    if not (o.flags.c_contiguous and lse.flags.c_contiguous):
        raise ValueError("out and out_lse must be C-contiguous")
    # In place is out being o1 itself: keep o1 as it is then, copy otherwise.
    o1 = o1 if o1.flags.c_contiguous else np.ascontiguousarray(o1)
    lse1 = lse1 if lse1.flags.c_contiguous else np.ascontiguousarray(lse1)
    o2, lse2 = np.ascontiguousarray(o2), np.ascontiguousarray(lse2)
    fp = ctypes.POINTER(ctypes.c_float)
    check("clattn_merge", lib().clattn_merge(
        rows, d, code, o1.ctypes.data, lse1.ctypes.data_as(fp), o2.ctypes.data,
        lse2.ctypes.data_as(fp), o.ctypes.data, lse.ctypes.data_as(fp)))
    return (out if out is not None else o), (out_lse if out_lse is not None else lse)


def _merge_cl(o1, lse1, o2, lse2, out, out_lse):
    import pyopencl as cl
    import pyopencl.array as cla
    arrays = [("o1", o1), ("lse1", lse1), ("o2", o2), ("lse2", lse2)]
    if out is not None:
        arrays.append(("out", out))
    if out_lse is not None:
        arrays.append(("out_lse", out_lse))
    for name, x in arrays:
        if not _is_cl_array(x):
            raise TypeError("%s: merge takes all numpy or all pyopencl arrays" % name)
        if x.offset or not x.flags.c_contiguous:
            raise ValueError("%s must be contiguous at offset 0 of its buffer" % name)
    queue = o1.queue
    if queue is None:
        raise ValueError("o1 has no queue: give the pyopencl arrays one (with_queue)")
    if any(x.context.int_ptr != queue.context.int_ptr for _, x in arrays):
        raise ValueError("the arrays must belong to one OpenCL context")
    dt, code, rows, d = _merge_shapes(o1, lse1, o2, lse2)
    o = out if out is not None else cla.empty(queue, o1.shape, dt)
    lse = out_lse if out_lse is not None else cla.empty(queue, lse1.shape, np.float32)
    _check_out(o, "out", o1.shape, dt)
    _check_out(lse, "out_lse", lse1.shape, np.float32)
    wait_for = [e for _, x in arrays for e in x.events]
    wait = (_lib.c_ptr * max(len(wait_for), 1))(*[e.int_ptr for e in wait_for])
    done = _lib.c_ptr()
    ctx = context_for_queue(queue)
    with ctx.lock:
        check("clattn_merge_cl", lib().clattn_merge_cl(
            ctx.handle, rows, d, code, o1.base_data.int_ptr, lse1.base_data.int_ptr,
            o2.base_data.int_ptr, lse2.base_data.int_ptr, o.base_data.int_ptr,
            lse.base_data.int_ptr, len(wait_for), wait if wait_for else None,
            ctypes.byref(done)))
    event = cl.Event.from_int_ptr(done.value, retain=False)
    o.add_event(event)
    lse.add_event(event)
    return o, lse


# ------------------------------------------------------------------- plan

@dataclass(frozen=True)
class FusedPlan:
    """What the fused path would run (clattn_plan_fused): the kernel, its
    tiles (block_m packs the H / Hkv query heads of a KV head), the split
    of each sequence's keys and the workspace the split keeps."""
    kernel: str
    block_m: int
    block_n: int
    rows_per_item: int
    work_group_size: int
    splits: int
    split_keys: int
    workspace_bytes: int
    note: str


@dataclass(frozen=True)
class Plan:
    """What attention() would do for a shape on a device, decided without
    allocating or running anything (clattn_attention_plan): the path AUTO
    resolves to and the kernel that would run ("fused/cpu 64x128",
    "naive/builtin-gemm"), whether the call fits (fits False: it would be refused
    with CLATTN_EWOULDOOM, `refusal` saying which buffer and which limit),
    the model's peak memory, and the fused path's plan (None
    where the fused path cannot take the call)."""
    path: str
    kernel: str
    fits: bool
    refusal: str
    predicted_peak_bytes: int
    note: str
    fused: Optional[FusedPlan]


def plan(shape: Sequence[int], dtype: Any = np.float16, *, causal: Optional[str] = None,
         scale: Optional[float] = None, path: str = "auto", kernel: str = "auto",
         device: Any = None, kv_lens: Any = None, q_lens: Any = None, split_kv: int = 0,
         head_dim_v: Optional[int] = None, attn_mask: Any = None,
         window_size: Tuple[int, int] = (-1, -1), softcap: float = 0.0,
         alibi_slopes: Any = None, sinks: Any = None, score_mod: Optional[str] = None,
         mask_mod: Optional[str] = None) -> Plan:
    """The plan and fit answer for attention on `device` before any buffer
    exists: shape (B, H, Hkv, Nq, Nk, d), dtype numpy.float16, float32 or
    ml_dtypes.bfloat16 (or their names), and attention()'s keywords.
    Returns a Plan; raises ClattnError for a call the library would refuse
    for another reason than memory, ValueError or TypeError for arguments."""
    if isinstance(dtype, str):
        if dtype not in DTYPES:
            raise TypeError("dtype must be %s or its name, not %r" % (_DTYPE_NAMES, dtype))
        code = DTYPES[dtype]
    else:
        dt = np.dtype(dtype)
        if dt not in _DTYPES:
            raise TypeError("dtype must be %s, not %s" % (_DTYPE_NAMES, dt))
        code = _DTYPES[dt]
    if len(shape) != 6:
        raise ValueError("shape is (B, H, Hkv, Nq, Nk, d), not %r" % (tuple(shape),))
    s = _lib.Shape(*(_args.integer("shape's " + n, x)
                     for n, x in zip(("B", "H", "Hkv", "Nq", "Nk", "d"), shape)), code)
    opts = _options(causal, scale, path, kernel, split_kv)
    keep: list = []
    dv = s.head_dim if head_dim_v is None else head_dim_v
    _variant(opts, s, dv, keep, attn_mask, window_size, softcap, alibi_slopes, sinks, score_mod,
             mask_mod)
    _host_lengths(opts, s, kv_lens, q_lens, keep)
    L = lib()
    ctx = context_for(device)
    run = _lib.RunInfo()
    fused = _lib.FusedPlan()
    with ctx.lock:
        rc = L.clattn_attention_plan(ctx.handle, ctypes.byref(s), ctypes.byref(opts),
                                     ctypes.byref(run))
        refusal = ""
        if rc < 0:
            err = ClattnError("clattn_attention_plan", rc,
                              (L.clattn_last_error_detail() or b"").decode("utf-8", "replace"))
            if err.name != "CLATTN_EWOULDOOM":
                raise err
            refusal = err.detail
        frc = L.clattn_plan_fused(ctx.handle, ctypes.byref(s), ctypes.byref(opts),
                                  ctypes.byref(fused))
        fused_name = ctypes.create_string_buffer(160)
        naive_name = ctypes.create_string_buffer(160)
        want_fused = run.path == PATHS["fused"]
        if L.clattn_describe_kernels(ctx.handle, ctypes.byref(s), ctypes.byref(opts),
                                     fused_name if want_fused else None, 160 if want_fused else 0,
                                     None if want_fused else naive_name,
                                     0 if want_fused else 160) < 0:
            fused_name.value = naive_name.value = b""
    text = lambda b: b.decode("utf-8", "replace")  # noqa: E731
    fp = None
    if frc == 0:
        fp = FusedPlan(text(L.clattn_fused_kernel_name(fused.kernel) or b""), fused.block_m,
                       fused.block_n, fused.rows_per_item, fused.work_group_size, fused.splits,
                       fused.split_keys, fused.workspace_bytes, text(fused.note))
    described = (fused_name if want_fused else naive_name).value
    return Plan(path=PATH_NAMES.get(run.path, "?"), kernel=text(run.kernel or described),
                fits=rc >= 0,
                refusal=refusal, predicted_peak_bytes=run.predicted_peak_bytes,
                note=text(run.note), fused=fp)
