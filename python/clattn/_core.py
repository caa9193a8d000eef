# SPDX-License-Identifier: MIT
"""Errors, the library handle, the clattn contexts the package keeps, and
the device listing."""
import atexit
import ctypes
import threading
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from . import _lib

F32, F16, BF16 = 0, 1, 2
MASK_NONE, MASK_ADD, MASK_BOOL = 0, 1, 2
CAUSAL = {None: 0, False: 0, "none": 0, True: 1, "top-left": 1, "bottom-right": 2}
PATHS = {"auto": 0, "naive": 1, "fused": 2}
PATH_NAMES = {v: k for k, v in PATHS.items()}

_lock = threading.Lock()
_handle = None


def lib():
    """The loaded libclattn (loaded on first use)."""
    global _handle
    with _lock:
        if _handle is None:
            _handle = _lib.load()
        return _handle


def _text(b):
    return b.decode("utf-8", "replace") if b else ""


class ClattnError(RuntimeError):
    """A clattn function failed: `code` is its negative CLATTN_E* status, `name`
    its name ("CLATTN_EINVAL"), `detail` what clattn_last_error_detail() said."""

    def __init__(self, call, code, detail):
        L = lib()
        self.call, self.code, self.detail = call, code, detail
        self.name = _text(L.clattn_error_name(code))
        message = "%s: %s" % (call, _text(L.clattn_strerror(code)))
        if detail:
            message += " (%s)" % detail
        super().__init__(message)


def check(call, rc):
    """Raises ClattnError for a negative status; returns it otherwise."""
    if rc < 0:
        raise ClattnError(call, rc, _text(lib().clattn_last_error_detail()))
    return rc


class Context:
    """One clattn_ctx (or clattn_group, closed by `close`). It serves one
    thread at a time, hence the lock."""

    def __init__(self, handle, keep=None, close="clattn_close"):
        self.handle = handle
        self.lock = threading.Lock()
        self._keep = keep  # the pyopencl queue a shared context wraps
        self._close = close

    @property
    def name(self):
        return _text(lib().clattn_device_name(self.handle))

    def close(self):
        if self.handle:
            h = _lib.c_ptr(self.handle)
            getattr(lib(), self._close)(ctypes.byref(h))
            self.handle = None


_contexts: Dict[Tuple[str, Any], Context] = {}
_contexts_lock = threading.Lock()


def _selector(device):
    """clattn_open's selector for `device`: None, an index, a name, or a
    pyopencl.Device (found in clattn_list_devices' order)."""
    if device is None:
        return None
    if isinstance(device, bool):
        raise TypeError("device must be None, an index, a name or a pyopencl.Device")
    if isinstance(device, int):
        return str(device)
    if isinstance(device, str):
        return device
    ptr = getattr(device, "int_ptr", None)
    if ptr is None:
        raise TypeError("device must be None, an index, a name or a pyopencl.Device, not %r"
                        % (device,))
    for entry in devices():
        if entry.cl_device == ptr:
            return str(entry.index)
    raise ValueError("clattn: %r is not among the OpenCL devices clattn lists" % (device,))


def _kept(key, opener, selectors, close="clattn_close"):
    """The package's handle under `key`: opened on first use by the library
    function `opener` on `selectors` (None: the default), then kept."""
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            h = _lib.c_ptr()
            check(opener, getattr(lib(), opener)(
                ctypes.byref(h), selectors.encode() if selectors is not None else None))
            ctx = _contexts[key] = Context(h.value, close=close)
        return ctx


def context_for(device):
    """The package's context on `device` (opened on first use, kept)."""
    sel = _selector(device)
    return _kept(("open", sel), "clattn_open", sel)


def group_selectors(device):
    """The comma-separated selectors of a device group, or None when
    `device` names one device: a list or tuple of devices (indices, names,
    pyopencl.Devices) or a string with commas ("0,1")."""
    if isinstance(device, (list, tuple)):
        if len(device) < 1:
            raise ValueError("device: an empty list of devices")
        sels = [_selector(d) for d in device]
        if any(s is None or "," in s for s in sels):
            raise ValueError("device: each device of a group is an index, a name or a "
                             "pyopencl.Device")
        return ",".join(sels)
    if isinstance(device, str) and "," in device:
        return device
    return None


def group_for(selectors):
    """The package's device group on `selectors` (opened on first use, kept)."""
    return _kept(("group", selectors), "clattn_group_open", selectors, "clattn_group_close")


def context_for_queue(queue):
    """A context sharing a pyopencl queue (and its context): clattn_open_cl
    retains them; the work goes on that queue."""
    key = ("queue", queue.int_ptr)
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            h = _lib.c_ptr()
            check("clattn_open_cl", lib().clattn_open_cl(ctypes.byref(h), queue.context.int_ptr,
                                                         queue.int_ptr))
            ctx = _contexts[key] = Context(h.value, keep=queue)
        return ctx


@atexit.register
def close_all():
    """Closes every context the package opened (also run at exit)."""
    with _contexts_lock:
        for ctx in _contexts.values():
            ctx.close()
        _contexts.clear()


@dataclass(frozen=True)
class Figure:
    """A figure and where it came from: source "measured" (clattn devices
    --measure, saved), "table" (the datasheet table of known devices),
    "reported" (the OpenCL driver), "given", "preset" or "unknown" (value
    None)."""
    value: Optional[float]
    source: str


@dataclass(frozen=True)
class Ceilings:
    """The ceilings the model prices a device with (clattn_device_ceilings,
    the "ceilings" of `clattn devices --json`)."""
    global_mem_bytes: Figure
    max_alloc_bytes: Figure
    cache_bytes: Figure
    bandwidth: Figure        # bytes/s
    flops_f32: Figure        # FLOP/s
    flops_f16: Figure        # FLOP/s, the 16-bit (tensor-core) rate
    launch_latency_s: Figure


@dataclass(frozen=True)
class Device:
    """An OpenCL device as clattn lists it: `index` and `name` select it
    (device=), `type` is "GPU", "CPU", "accelerator" or "other", and
    `ceilings` its model figures when devices(ceilings=True) asked."""
    index: int
    name: str                # "platform: device"
    type: str
    ceilings: Optional[Ceilings] = None
    cl_device: int = 0       # the cl_device_id, as pyopencl's int_ptr


def ceilings_of(ctx):
    """The Ceilings of an open context."""
    L = lib()
    c = _lib.Ceilings()
    with ctx.lock:
        check("clattn_device_ceilings", L.clattn_device_ceilings(ctx.handle, ctypes.byref(c)))
    figs = {}
    for name, _ in _lib.Ceilings._fields_:
        f = getattr(c, name)
        figs[name] = Figure(f.value if f.source else None,
                            _text(L.clattn_source_name(f.source)))
    return Ceilings(**figs)


def devices(ceilings: bool = False) -> List[Device]:
    """Every OpenCL device clattn sees, in its order (the indices device=
    takes). ceilings=True opens each device (kept for later calls) and adds
    the figures the model uses: a saved measurement where `clattn devices
    --measure` made one, else the table of known devices and what the
    driver reports."""
    L = lib()
    count = _lib.c_size()
    check("clattn_list_devices", L.clattn_list_devices(None, 0, ctypes.byref(count)))
    entries = (_lib.DeviceEntry * max(count.value, 1))()
    check("clattn_list_devices", L.clattn_list_devices(entries, count.value, ctypes.byref(count)))
    out = []
    for i in range(min(count.value, len(entries))):
        e = entries[i]
        t = e.type
        kind = "GPU" if t & 4 else "CPU" if t & 2 else "accelerator" if t & 8 else "other"
        ceil = ceilings_of(context_for(i)) if ceilings else None
        out.append(Device(i, _text(e.name), kind, ceil, e.device or 0))
    return out
