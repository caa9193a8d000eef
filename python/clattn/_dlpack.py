# SPDX-License-Identifier: MIT
"""DLPack in: any object with __dlpack__ (a PyTorch or JAX CPU tensor, a
NumPy array, CuPy's host arrays) read in place as a numpy array.

numpy.from_dlpack does the work for the dtypes NumPy knows; bfloat16, which
it does not, is read here from the capsule's DLManagedTensor (DLPack's
dlpack.h, version 0.x, the "dltensor" capsule every producer gives) into an
ml_dtypes.bfloat16 view that keeps the producer's memory alive. Out: the
arrays clattn returns are NumPy arrays, and NumPy arrays have __dlpack__
(torch.from_dlpack(o) takes one without a copy).
"""
import ctypes
import weakref

import numpy as np

KDL_CPU = 1
KDL_CUDA_HOST = 3
KDL_BFLOAT = 4
DEVICE_NAMES = {1: "CPU", 2: "CUDA", 3: "CUDA host", 4: "OpenCL", 7: "Vulkan", 8: "Metal",
                9: "VPI", 10: "ROCm", 11: "ROCm host", 13: "CUDA managed", 14: "oneAPI"}


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _DLDevice), ("ndim", ctypes.c_int),
                ("dtype", _DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


_Deleter = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p),
                ("deleter", _Deleter)]


_capsule_get = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_get.restype = ctypes.c_void_p
_capsule_get.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_valid = ctypes.pythonapi.PyCapsule_IsValid
_capsule_valid.restype = ctypes.c_int
_capsule_valid.argtypes = [ctypes.py_object, ctypes.c_char_p]
_capsule_rename = ctypes.pythonapi.PyCapsule_SetName
_capsule_rename.restype = ctypes.c_int
_capsule_rename.argtypes = [ctypes.py_object, ctypes.c_char_p]


def is_dlpack(x):
    """An object that exports DLPack and is not already a numpy array."""
    return not isinstance(x, np.ndarray) and hasattr(x, "__dlpack__")


def _device_of(x, name):
    dev = getattr(x, "__dlpack_device__", None)
    if dev is None:
        return
    kind, index = dev()
    if int(kind) not in (KDL_CPU, KDL_CUDA_HOST):
        raise TypeError(
            "%s: a DLPack tensor on a %s device (DLPack device type %d, index %d): clattn "
            "reads host memory through DLPack; OpenCL buffers go in as pyopencl arrays"
            % (name, DEVICE_NAMES.get(int(kind), "non-host"), int(kind), int(index)))


def _span(shape, strides, itemsize):
    """The byte range [lo, hi) an array's elements cover, from its first element."""
    if any(n == 0 for n in shape):
        return 0, 0
    lo = sum(min(0, (n - 1) * s) for n, s in zip(shape, strides))
    hi = sum(max(0, (n - 1) * s) for n, s in zip(shape, strides)) + itemsize
    return lo, hi


def _view(address, shape, dtype, strides, keep):
    """A writable numpy array over memory at `address` (its first element),
    holding `keep` (what owns that memory) for as long as it lives."""
    lo, hi = _span(shape, strides, dtype.itemsize)
    raw = (ctypes.c_uint8 * (hi - lo)).from_address(address + lo) if hi > lo else \
        (ctypes.c_uint8 * 0)()
    raw.keep = keep
    return np.ndarray(shape, dtype, buffer=raw, offset=-lo, strides=strides), raw


def _bf16_view(x, name):
    """A bfloat16 DLPack tensor as an ml_dtypes.bfloat16 numpy array over the
    producer's memory, released (the deleter called) with the array."""
    try:
        import ml_dtypes
    except ImportError:
        raise TypeError("%s: a bfloat16 DLPack tensor needs the ml_dtypes package "
                        "(pip install clattn[bf16])" % name) from None
    capsule = x.__dlpack__()
    if not _capsule_valid(capsule, b"dltensor"):
        raise TypeError("%s: __dlpack__ gave no unused 'dltensor' capsule" % name)
    managed = _DLManagedTensor.from_address(_capsule_get(capsule, b"dltensor"))
    t = managed.dl_tensor
    if (t.dtype.code, t.dtype.bits, t.dtype.lanes) != (KDL_BFLOAT, 16, 1):
        raise TypeError("%s: a DLPack tensor of type code %d, %d bits, %d lanes: numpy "
                        "cannot read it and it is not bfloat16"
                        % (name, t.dtype.code, t.dtype.bits, t.dtype.lanes))
    shape = tuple(t.shape[i] for i in range(t.ndim))
    dtype = np.dtype(ml_dtypes.bfloat16)
    if t.strides:
        strides = tuple(t.strides[i] * 2 for i in range(t.ndim))
    else:  # NULL strides: C order
        strides, step = [], 2
        for n in reversed(shape):
            strides.insert(0, step)
            step *= max(n, 1)
        strides = tuple(strides)
    # The capsule is consumed: the view's life decides when the producer's
    # memory goes, through the deleter.
    _capsule_rename(capsule, b"used_dltensor")
    arr, raw = _view((t.data or 0) + t.byte_offset, shape, dtype, strides, x)
    if managed.deleter:
        weakref.finalize(raw, managed.deleter, ctypes.addressof(managed))
    return arr


def host_array(x, name):
    """x as a numpy array: numpy arrays as they are, DLPack producers read in
    place (never copied), anything else through numpy.asarray."""
    if not is_dlpack(x):
        return np.asarray(x)
    _device_of(x, name)
    dt = getattr(x, "dtype", None)
    if dt is not None and "bfloat16" in str(dt):
        return _bf16_view(x, name)
    try:
        return np.from_dlpack(x)
    except (TypeError, BufferError, RuntimeError, ValueError) as e:
        try:
            return _bf16_view(x, name)
        except TypeError:
            raise TypeError("%s: numpy cannot read this DLPack tensor: %s" % (name, e)) from None


def writable_host_array(x, name):
    """An output given as out=: a numpy array (which must be writable), or a
    DLPack producer's memory, written in place. NumPy marks DLPack imports
    read-only although the memory is the producer's own to share (DLPack 0.x
    has no read-only flag); writing into it is what out= asks."""
    a = host_array(x, name)
    if not a.flags.writeable:
        if not is_dlpack(x):
            raise ValueError("%s must be writable" % name)
        a, _ = _view(a.__array_interface__["data"][0], a.shape, a.dtype, a.strides, (x, a))
    return a
