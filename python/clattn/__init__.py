# SPDX-License-Identifier: MIT
"""clattn: attention on any OpenCL device, from Python.

    import numpy as np, clattn
    o = clattn.attention(q, k, v, causal="bottom-right")

A thin ctypes layer over libclattn.so (found through $CLATTN_LIBRARY or the
dynamic loader's search path): numpy arrays in and out, or pyopencl arrays
and buffers used in place on the caller's own queue; clattn.devices() lists
the devices, clattn.predict() gives the byte model's view of a shape.
Failures raise clattn.ClattnError with the library's message and detail.
"""
from ._attention import alibi_slopes, attention, attention_cl, flash_attn_func, \
    scaled_dot_product_attention
from ._core import ClattnError, close_all, devices, lib
from ._model import predict

__version__ = "0.2.0"
__all__ = ["attention", "attention_cl", "scaled_dot_product_attention", "flash_attn_func",
           "alibi_slopes", "devices", "predict", "ClattnError", "close_all",
           "library_version", "api_version"]


def library_version():
    """The loaded library's version, "MAJOR.MINOR.PATCH"."""
    return lib().clattn_version().decode()


def api_version():
    """The loaded library's API as (major, minor)."""
    v = lib().clattn_api_version()
    return v >> 16, v & 0xFFFF
