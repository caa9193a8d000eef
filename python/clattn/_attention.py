# SPDX-License-Identifier: MIT
"""clattn.attention: numpy arrays (host call) and pyopencl arrays or buffers
(zero copy, on the caller's queue)."""
import ctypes

import numpy as np

from . import _args, _lib
from ._core import CAUSAL, F16, F32, PATH_NAMES, PATHS, check, context_for, \
    context_for_queue, lib

_DTYPES = {np.dtype(np.float32): F32, np.dtype(np.float16): F16}


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
    """The clattn_shape of Q [B, H, Nq, d], K and V [B, Hkv, Nk, d]."""
    if len(qs) != 4 or len(ks) != 4 or len(vs) != 4:
        raise ValueError("q, k and v must be 4-D: q [B, H, Nq, d], k and v [B, Hkv, Nk, d]")
    if tuple(ks) != tuple(vs):
        raise ValueError("k %r and v %r must have the same shape" % (tuple(ks), tuple(vs)))
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
        raise TypeError("dtype must be float16 or float32, not %s" % dt)
    return dt, _DTYPES[dt]


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


def _lens_array(kv_lens, batch):
    """Host kv_lens as the uint32 array the library reads: B lengths, each
    from 0 to 2**32 - 1 (the library refuses one past Nk)."""
    if np.ndim(kv_lens) != 1:
        raise ValueError("kv_lens must hold one length per sequence (%d), not shape %r"
                         % (batch, np.shape(kv_lens)))
    return np.array(_args.lengths("kv_lens", kv_lens, batch, _args.U32_MAX), dtype=np.uint32)


def _fill_info(info, run):
    if info is not None:
        info.update(path=PATH_NAMES.get(run.path, "?"),
                    kernel=run.kernel.decode("utf-8", "replace"),
                    note=run.note.decode("utf-8", "replace"), splits=run.splits,
                    predicted_peak_bytes=run.predicted_peak_bytes,
                    allocated_bytes=run.allocated_bytes, build_seconds=run.build_seconds)


def attention(q, k, v, *, causal=None, scale=None, path="auto", kernel="auto", device=None,
              kv_lens=None, split_kv=0, return_lse=False, info=None):
    """O = softmax(scale Q K^T) V.

    q is [B, H, Nq, d], k and v [B, Hkv, Nk, d] with H a multiple of Hkv
    (grouped-query attention), all float16 or all float32.

    numpy arrays (any strides: views are read in place when their last
    dimension is contiguous, copied otherwise) give a new C-order numpy
    array, computed on `device` (None: $CLATTN_DEVICE or the default; an
    index or a name from clattn.devices(); a pyopencl.Device).

    pyopencl.array.Array inputs are used where they are, without a copy: the
    work is enqueued on q's queue after the arrays' events, through a clattn
    context that shares that queue and its context, and the new O (and LSE)
    arrays carry the completion event (o.events), so o.get() waits for it.

    causal: None, "top-left" (PyTorch's is_causal) or "bottom-right"
    (FlashAttention's). scale: None for 1/sqrt(d). path: "auto", "naive",
    "fused"; kernel: "auto" or a fused kernel's name. kv_lens: each
    sequence's number of keys (B of them, <= Nk); for device arrays also a
    uint32 pyopencl array. split_kv: key chunks per sequence on the fused
    path (0: the library's choice). return_lse: also return each row's
    log-sum-exp, float32 [B, H, Nq] (-inf for a row that sees no key).
    info: a dict to receive what ran (path, kernel, splits, build_seconds).

    Returns O, or (O, LSE). Raises clattn.ClattnError when the library
    refuses or fails (its message and detail in the exception), ValueError
    or TypeError for arguments it never sees.
    """
    opts = _options(causal, scale, path, kernel, split_kv)
    if any(_is_cl_array(x) for x in (q, k, v)):
        if device is not None:
            raise ValueError("device arrays run on their own queue's device; leave device None")
        return _attention_arrays(q, k, v, opts, kv_lens, return_lse, info)
    q, k, v = np.asarray(q), np.asarray(k), np.asarray(v)
    dt, code = _dtype_code(q, k, v)
    shape = _shape(q.shape, k.shape, v.shape, code)
    q, opts.q_layout = _host_input(q, dt)
    k, opts.k_layout = _host_input(k, dt)
    v, opts.v_layout = _host_input(v, dt)
    lens = None
    if kv_lens is not None:
        lens = _lens_array(kv_lens, shape.batch)
        opts.kv_lens = lens.ctypes.data_as(ctypes.POINTER(_lib.c_u32))
    o = np.empty((shape.batch, shape.heads, shape.q_len, shape.head_dim), dtype=dt)
    lse = np.empty((shape.batch, shape.heads, shape.q_len), np.float32) if return_lse else None
    run = _lib.RunInfo()
    ctx = context_for(device)
    with ctx.lock:
        rc = lib().clattn_attention_ex(
            ctx.handle, ctypes.byref(shape), ctypes.byref(opts), q.ctypes.data, k.ctypes.data,
            v.ctypes.data, o.ctypes.data,
            lse.ctypes.data_as(ctypes.POINTER(ctypes.c_float)) if return_lse else None,
            ctypes.byref(run))
        check("clattn_attention_ex", rc)
    _fill_info(info, run)
    return (o, lse) if return_lse else o


def _cl_layout(x, name):
    lay = _layout(x.shape, x.strides, x.dtype.itemsize, x.offset)
    if lay is None:
        raise ValueError("%s: a device array's last dimension must be contiguous and its other "
                         "strides positive multiples of the element size (strides %r); make a "
                         "contiguous copy" % (name, x.strides))
    return lay


def _attention_arrays(q, k, v, opts, kv_lens, return_lse, info):
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
    opts.q_layout, opts.k_layout, opts.v_layout = (_cl_layout(q, "q"), _cl_layout(k, "k"),
                                                   _cl_layout(v, "v"))
    o = cla.empty(queue, (shape.batch, shape.heads, shape.q_len, shape.head_dim), dt)
    lse = cla.empty(queue, (shape.batch, shape.heads, shape.q_len), np.float32) \
        if return_lse else None
    wait = list(q.events) + list(k.events) + list(v.events)
    lens = None
    extras_lens = None
    if kv_lens is not None and _is_cl_array(kv_lens):
        if kv_lens.dtype != np.uint32 or kv_lens.shape != (shape.batch,) or kv_lens.offset:
            raise ValueError("device kv_lens must be a uint32 array of B = %d at offset 0"
                             % shape.batch)
        extras_lens = kv_lens.base_data
        wait += list(kv_lens.events)
    elif kv_lens is not None:
        lens = _lens_array(kv_lens, shape.batch)
        opts.kv_lens = lens.ctypes.data_as(ctypes.POINTER(_lib.c_u32))
    event = _enqueue(queue, shape, opts, q.base_data, k.base_data, v.base_data, o.base_data,
                     lse.base_data if return_lse else None, extras_lens, wait, info)
    o.add_event(event)
    if return_lse:
        lse.add_event(event)
    return (o, lse) if return_lse else o


def _enqueue(queue, shape, opts, q, k, v, o, lse, kv_lens, wait_for, info):
    """clattn_attention_ex_cl on pyopencl buffers; the completion event."""
    import pyopencl as cl
    ctx = context_for_queue(queue)
    extras = _lib.Extras()
    lib().clattn_default_extras(ctypes.byref(extras))
    extras.lse = lse.int_ptr if lse is not None else None
    extras.kv_lens = kv_lens.int_ptr if kv_lens is not None else None
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


def attention_cl(queue, q, k, v, o, *, shape, dtype, causal=None, scale=None, path="auto",
                 kernel="auto", layouts=None, lse=None, kv_lens=None, split_kv=0,
                 wait_for=None, info=None):
    """clattn_attention_ex_cl on raw pyopencl.Buffers: enqueues attention on
    `queue` (in order; a clattn context shares it and its context) reading q,
    k, v and writing o (and lse, float32 [B, H, Nq], when given), after
    `wait_for` (pyopencl events). Returns the completion pyopencl.Event.

    shape is (B, H, Hkv, Nq, Nk, d) and dtype numpy.float16 or float32.
    layouts maps "q", "k", "v", "o" to element strides (batch, head, token)
    and a byte offset, as clattn_layout; absent ones are contiguous [B,
    heads, N, d]. kv_lens: a uint32 pyopencl.Buffer of B lengths, or host
    lengths. The other arguments are attention()'s.
    """
    dt = np.dtype(dtype)
    if dt not in _DTYPES:
        raise TypeError("dtype must be float16 or float32, not %s" % dt)
    if len(shape) != 6:
        raise ValueError("shape is (B, H, Hkv, Nq, Nk, d)")
    s = _lib.Shape(*(_args.integer("shape's " + n, x)
                     for n, x in zip(("B", "H", "Hkv", "Nq", "Nk", "d"), shape)), _DTYPES[dt])
    opts = _options(causal, scale, path, kernel, split_kv)
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
    lens_buf = None
    if kv_lens is not None and hasattr(kv_lens, "int_ptr"):
        lens_buf = kv_lens
    elif kv_lens is not None:
        lens = _lens_array(kv_lens, s.batch)
        opts.kv_lens = lens.ctypes.data_as(ctypes.POINTER(_lib.c_u32))
    return _enqueue(queue, s, opts, q, k, v, o, lse, lens_buf, list(wait_for or []), info)
