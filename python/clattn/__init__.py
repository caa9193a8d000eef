# SPDX-License-Identifier: MIT
"""clattn: attention on any OpenCL device, from Python.

    import numpy as np, clattn
    o = clattn.attention(q, k, v, causal="bottom-right")

A thin ctypes layer over libclattn (the copy the wheel carries, else
$CLATTN_LIBRARY, else the dynamic loader's search path): numpy arrays and
host DLPack tensors in, numpy arrays out (or into out=); pyopencl arrays and
buffers used in place on the caller's own queue. clattn.merge puts results
over disjoint keys together, clattn.plan says what a call would run and
whether it fits, clattn.devices() lists the devices with their ceilings,
clattn.predict() gives the byte model's view of shapes. KV caches as
engines keep them: clattn.quantize (q8_0, q4_0, fp8_e4m3) makes the
QuantizedArray K and V the attention functions read,
clattn.attention_with_kvcache appends to a contiguous or paged cache and
attends over it (FlashAttention's flash_attn_with_kvcache), and
clattn.attention_varlen takes packed batches (flash_attn_varlen_func).
Failures raise clattn.ClattnError with the library's message and detail;
bad arguments ValueError or TypeError naming them.
"""
from ._attention import FusedPlan, Plan, alibi_slopes, attention, attention_cl, \
    flash_attn_func, merge, plan, scaled_dot_product_attention
from ._kvcache import attention_varlen, attention_with_kvcache
from ._quant import QuantizedArray, dequantize, quantize
from ._core import Ceilings, ClattnError, Device, Figure, close_all, devices, lib
from ._model import Prediction, kernel_efficiency, predict

__version__ = "0.2.0"
__all__ = ["attention", "attention_cl", "scaled_dot_product_attention", "flash_attn_func",
           "merge", "plan", "Plan", "FusedPlan", "alibi_slopes", "devices", "Device", "Ceilings",
           "Figure", "predict", "Prediction", "kernel_efficiency", "ClattnError", "close_all", "library_version",
           "api_version", "library_path", "attention_with_kvcache", "attention_varlen",
           "quantize", "dequantize", "QuantizedArray"]


def library_path() -> str:
    """The file the package loaded libclattn from."""
    return lib().clattn_path


def library_version() -> str:
    """The loaded library's version, "MAJOR.MINOR.PATCH"."""
    return lib().clattn_version().decode()


def api_version() -> "tuple[int, int]":
    """The loaded library's API as (major, minor)."""
    v = lib().clattn_api_version()
    return v >> 16, v & 0xFFFF
