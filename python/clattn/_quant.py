# SPDX-License-Identifier: MIT
"""Quantized K and V: clattn.quantize, clattn.dequantize and the
QuantizedArray they make, the storage the attention functions read as K
and V (clattn_options.k_type, v_type; clattn_quantize, clattn_dequantize).

Each row of d values (the last axis) is stored as the library's types
store it: q8_0 (ggml's: blocks of 32 values, an fp16 scale then 32 int8,
34 bytes), q4_0 (ggml's: blocks of 32, an fp16 scale then 16 bytes of
nibbles, 18 bytes), fp8_e4m3 (one OCP e4m3 byte per value, times an fp32
scale per tensor or per key/value head)."""
import ctypes
import numbers
from typing import Any, Optional, Tuple

import numpy as np

from . import _args
from ._core import BF16, F16, F32, check, lib

KV_DTYPE, KV_Q8_0, KV_Q4_0, KV_FP8_E4M3 = 0, 1, 2, 3
KINDS = {"q8_0": KV_Q8_0, "q4_0": KV_Q4_0, "fp8_e4m3": KV_FP8_E4M3}
KIND_NAMES = {v: k for k, v in KINDS.items()}
FP8_MAX = 448.0  # e4m3's largest finite value


def _source_dtypes():
    """The dtypes clattn_quantize reads, numpy dtype -> clattn_dtype."""
    out = {np.dtype(np.float32): F32, np.dtype(np.float16): F16}
    try:
        import ml_dtypes
    except ImportError:
        return out
    out[np.dtype(ml_dtypes.bfloat16)] = BF16
    return out


_SOURCE = _source_dtypes()


def _is_cl_array(x: Any) -> bool:
    return type(x).__module__.startswith("pyopencl") and hasattr(x, "base_data")


def kind_code(kind: Any) -> int:
    """The clattn_kv_type of a kind's name ("q8_0", "q4_0", "fp8_e4m3")."""
    if not isinstance(kind, str) or kind not in KINDS:
        raise ValueError("kind must be one of %s, not %r" % (", ".join(map(repr, KINDS)), kind))
    return KINDS[kind]


def row_bytes(kind: str, d: int) -> int:
    """Bytes of one row of d values of `kind` (d a multiple of its block)."""
    code = kind_code(kind)
    L = lib()
    return d // L.clattn_kv_block_values(code) * L.clattn_kv_block_bytes(code, F32)


def block_values(kind: str) -> int:
    """Values per block of `kind`: 32 for q8_0 and q4_0, 1 for fp8_e4m3."""
    return int(lib().clattn_kv_block_values(kind_code(kind)))


def _check_d(kind: str, d: int, name: str) -> None:
    per = block_values(kind)
    if d < 1 or d % per:
        raise ValueError("%s: %s stores rows in blocks of %d values; the last axis (d = %d) "
                         "must be a positive multiple" % (name, kind, per, d))


def _head_axis(ndim: int, head_axis: Any) -> int:
    """head_axis as a non-negative index, an axis other than the last."""
    axis = _args.integer("head_axis", head_axis, -ndim, ndim - 1)
    axis = axis + ndim if axis < 0 else axis
    if axis == ndim - 1:
        raise ValueError("head_axis must be an axis before the last (d), not %d" % head_axis)
    return axis


def _positive_scale(name: str, values: np.ndarray) -> np.ndarray:
    """Scales as the float32 the library reads, each finite and > 0."""
    f = values.astype(np.float32)
    if not (np.all(np.isfinite(f)) and np.all(f > 0)):
        raise ValueError("%s must be finite and > 0 as float32, not %r" % (name, values.tolist()))
    return f


def given_scale(scale: Any, heads: Optional[int]) -> np.ndarray:
    """fp8 scales given by the caller as the float32 array kept: one value
    for the tensor (heads None: a number or a 1-element array), or `heads`
    values, one per head."""
    if isinstance(scale, bool) or not (isinstance(scale, numbers.Real) or np.ndim(scale) == 1):
        raise TypeError("scale must be a number or a 1-D array, not %r" % (scale,))
    s = np.asarray(scale, dtype=np.float64).reshape(-1)
    want = 1 if heads is None else heads
    if s.size != want:
        raise ValueError("scale needs %d value%s (%s), not %d" % (
            want, "s" if want > 1 else "", "one per head" if heads is not None
            else "one for the tensor", s.size))
    return _positive_scale("scale", s)


def default_scale(x: np.ndarray, head_axis: Optional[int]) -> np.ndarray:
    """fp8's default scales, max |x| / 448 (1 where x is all zero): over the
    tensor (float32 (1,)) or per index of head_axis (float32 (heads,))."""
    xf = x.astype(np.float32)
    if not np.all(np.isfinite(xf)):
        raise ValueError("x has NaN or infinite values: give fp8_e4m3's scale")
    if head_axis is None:
        amax = np.array([np.abs(xf).max() if xf.size else 0.0])
    elif xf.size:
        amax = np.abs(xf).max(axis=tuple(i for i in range(x.ndim) if i != head_axis))
    else:
        amax = np.zeros(x.shape[head_axis])
    s = np.where(amax > 0, amax.astype(np.float64) / FP8_MAX, 1.0)
    return _positive_scale("scale (max |x| / 448)", s)


def _quantize_rows(code: int, src_code: int, src: np.ndarray, d: int, scale: float,
                   out: np.ndarray) -> None:
    """clattn_quantize of the C-contiguous rows of src into out."""
    rows = src.size // d
    if rows:
        check("clattn_quantize", lib().clattn_quantize(code, src_code, src.ctypes.data, rows, d,
                                                       scale, out.ctypes.data))


def _dequantize_rows(code: int, src: np.ndarray, d: int, scale: float,
                     out: np.ndarray) -> None:
    rows = out.size // d
    if rows:
        check("clattn_dequantize", lib().clattn_dequantize(
            code, src.ctypes.data, rows, d, scale,
            out.ctypes.data_as(ctypes.POINTER(ctypes.c_float))))


class QuantizedArray:
    """K or V stored quantized: `data` holds the bytes (uint8, shape
    shape[:-1] + (row_bytes,), C-contiguous; a numpy array, or a pyopencl
    array on a device), `kind` the type ("q8_0", "q4_0", "fp8_e4m3"),
    `shape` the logical shape (its last axis d), and for fp8_e4m3 `scale`,
    the float32 scales the values are multiplied by: (1,) for the tensor,
    or one per index of `head_axis` (per_head). The attention functions
    take a QuantizedArray wherever they take K or V."""

    def __init__(self, data: Any, kind: str, shape: Tuple[int, ...], scale: Any = None,
                 per_head: bool = False, head_axis: int = -2) -> None:
        self.kind = kind
        self._code = kind_code(kind)
        shape = tuple(_args.integer("shape[%d]" % i, n, 0) for i, n in enumerate(shape))
        if not shape:
            raise ValueError("shape must have at least one axis (d)")
        _check_d(kind, shape[-1], "shape")
        self.shape = shape
        self.row_bytes = row_bytes(kind, shape[-1])
        self.data = self._checked_data(data)
        self.per_head = bool(per_head)
        self.head_axis = _head_axis(len(shape), head_axis) if per_head else None
        if self._code == KV_FP8_E4M3:
            if scale is None:
                raise ValueError("fp8_e4m3 needs its scale (a number, or one per head)")
            heads = None if self.head_axis is None else shape[self.head_axis]
            self.scale: Optional[np.ndarray] = given_scale(scale, heads)
        else:
            if scale is not None or per_head:
                raise ValueError("scale and per_head are fp8_e4m3's; %s keeps a scale in each "
                                 "block" % kind)
            self.scale = None

    def _checked_data(self, data: Any) -> Any:
        want = self.shape[:-1] + (self.row_bytes,)
        if not _is_cl_array(data):
            data = np.asarray(data)
        if np.dtype(data.dtype) != np.uint8:
            raise TypeError("data must be uint8, not %s" % data.dtype)
        if tuple(data.shape) != want:
            raise ValueError("data must have shape %r (shape[:-1] + %d bytes a row of %s), not %r"
                             % (want, self.row_bytes, self.kind, tuple(data.shape)))
        if not data.flags.c_contiguous:
            raise ValueError("data must be C-contiguous")
        return data

    @classmethod
    def zeros(cls, shape: Tuple[int, ...], kind: str, scale: Any = None, per_head: bool = False,
              head_axis: int = -2, queue: Any = None) -> "QuantizedArray":
        """An all-zero cache of `shape` (every value 0), to append keys into:
        on the host, or on `queue`'s device. fp8_e4m3 needs the scale the
        appends will quantize with."""
        d = _args.integer("shape[-1]", tuple(shape)[-1] if len(shape) else 0)
        _check_d(kind, d, "shape")
        nbytes = tuple(shape)[:-1] + (row_bytes(kind, d),)
        if queue is None:
            data: Any = np.zeros(nbytes, np.uint8)
        else:
            import pyopencl.array as cla
            data = cla.zeros(queue, nbytes, np.uint8)
        return cls(data, kind, tuple(shape), scale, per_head, head_axis)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nbytes(self) -> int:
        return int(np.prod(self.shape[:-1], dtype=np.int64)) * self.row_bytes

    @property
    def on_device(self) -> bool:
        return _is_cl_array(self.data)

    def _like(self, data: Any) -> "QuantizedArray":
        return QuantizedArray(data, self.kind, self.shape, self.scale, self.per_head,
                              self.head_axis if self.head_axis is not None else -2)

    def to_device(self, queue: Any) -> "QuantizedArray":
        """The same array with its bytes copied to `queue`'s device."""
        import pyopencl.array as cla
        return self._like(cla.to_device(queue, self.host_data()))

    def get(self) -> "QuantizedArray":
        """The same array with its bytes on the host (itself when they are)."""
        return self._like(self.host_data()) if self.on_device else self

    def host_data(self) -> np.ndarray:
        """The bytes as a numpy array (copied from the device where they are)."""
        return self.data.get() if self.on_device else self.data

    def dequantize(self) -> np.ndarray:
        """The values the kernels read, float32 of `shape`."""
        return dequantize(self)

    def __repr__(self) -> str:
        where = "device" if self.on_device else "host"
        extra = "" if self.scale is None else ", scale=%s" % np.array2string(self.scale)
        return "QuantizedArray(%s, shape=%r, %s%s)" % (self.kind, self.shape, where, extra)


def _source(x: Any) -> Tuple[np.ndarray, int]:
    """x as a numpy array of a dtype clattn_quantize reads (other floating
    dtypes converted to float32) and its clattn_dtype."""
    from ._dlpack import host_array
    a = host_array(x, "x")
    dt = np.dtype(a.dtype)
    if dt in _SOURCE:
        return a, _SOURCE[dt]
    if dt.kind in "fiu":
        return a.astype(np.float32), F32
    raise TypeError("x must be float32, float16 or ml_dtypes.bfloat16 (other numbers are "
                    "converted to float32), not %s" % dt)


def quantize(x: Any, kind: str, scale: Any = None, per_head: bool = False,
             head_axis: int = -2) -> QuantizedArray:
    """x (a numpy array or host DLPack tensor, float32, float16 or
    ml_dtypes.bfloat16; other real dtypes as float32) quantized along its
    last axis, d, by clattn_quantize: kind "q8_0" or "q4_0" (ggml's, d a
    multiple of 32) or "fp8_e4m3". fp8's scale (the factor each stored value
    is multiplied by): given as a number (or one per head with per_head),
    else max |x| / 448, over the whole tensor, or with per_head over each
    index of head_axis: by default axis -2, the key/value-head axis of
    FlashAttention's layouts ([B, N, Hkv, d] caches and new keys,
    [num_pages, page_size, Hkv, d] pages, [total, Hkv, d] packed keys).
    Returns a QuantizedArray on the host."""
    code = kind_code(kind)
    a, src_code = _source(x)
    if a.ndim < 1:
        raise ValueError("x must have at least one axis (d)")
    d = a.shape[-1]
    _check_d(kind, d, "x")
    axis = _head_axis(a.ndim, head_axis) if per_head else None
    if code != KV_FP8_E4M3:
        if scale is not None or per_head:
            raise ValueError("scale and per_head are fp8_e4m3's; %s keeps a scale in each "
                             "block" % kind)
        scales = np.ones(1, np.float32)
    else:
        scales = default_scale(a, axis) if scale is None else \
            given_scale(scale, None if axis is None else a.shape[axis])
    out = np.empty(a.shape[:-1] + (row_bytes(kind, d),), np.uint8)
    if axis is None:
        _quantize_rows(code, src_code, np.ascontiguousarray(a), d, float(scales[0]), out)
    else:
        heads_in, heads_out = np.moveaxis(a, axis, 0), np.moveaxis(out, axis, 0)
        for h in range(a.shape[axis]):
            part = np.empty(heads_out.shape[1:], np.uint8)
            _quantize_rows(code, src_code, np.ascontiguousarray(heads_in[h]), d,
                           float(scales[h]), part)
            heads_out[h] = part
    return QuantizedArray(out, kind, a.shape, scales if code == KV_FP8_E4M3 else None,
                          per_head, head_axis)


def dequantize(qa: QuantizedArray) -> np.ndarray:
    """The values a QuantizedArray holds as the kernels read them
    (clattn_dequantize: a block's fp16 scale times its integer, fp8 times
    its scale), float32 of qa.shape."""
    if not isinstance(qa, QuantizedArray):
        raise TypeError("dequantize takes a QuantizedArray (from clattn.quantize), not %s"
                        % type(qa).__name__)
    data = qa.host_data()
    d = qa.shape[-1]
    out = np.empty(qa.shape, np.float32)
    scales = qa.scale if qa.scale is not None else np.ones(1, np.float32)
    if qa.head_axis is None:
        _dequantize_rows(qa._code, data, d, float(scales[0]), out)
        return out
    heads_in, heads_out = np.moveaxis(data, qa.head_axis, 0), np.moveaxis(out, qa.head_axis, 0)
    for h in range(qa.shape[qa.head_axis]):
        part = np.empty(heads_out.shape[1:], np.float32)
        _dequantize_rows(qa._code, np.ascontiguousarray(heads_in[h]), d, float(scales[h]), part)
        heads_out[h] = part
    return out

