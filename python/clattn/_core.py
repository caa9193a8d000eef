# SPDX-License-Identifier: MIT
"""Errors, the library handle and the clattn contexts the package keeps."""
import atexit
import ctypes
import threading

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
    """One clattn_ctx. A context serves one thread at a time, hence the lock."""

    def __init__(self, handle, keep=None):
        self.handle = handle
        self.lock = threading.Lock()
        self._keep = keep  # the pyopencl queue a shared context wraps

    @property
    def name(self):
        return _text(lib().clattn_device_name(self.handle))

    def close(self):
        if self.handle:
            h = _lib.c_ptr(self.handle)
            lib().clattn_close(ctypes.byref(h))
            self.handle = None


_contexts = {}
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
        if entry["_device"] == ptr:
            return str(entry["index"])
    raise ValueError("clattn: %r is not among the OpenCL devices clattn lists" % (device,))


def context_for(device):
    """The package's context on `device` (opened on first use, kept)."""
    sel = _selector(device)
    key = ("open", sel)
    with _contexts_lock:
        ctx = _contexts.get(key)
        if ctx is None:
            h = _lib.c_ptr()
            check("clattn_open", lib().clattn_open(ctypes.byref(h),
                                                   sel.encode() if sel is not None else None))
            ctx = _contexts[key] = Context(h.value)
        return ctx


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


def devices():
    """Every OpenCL device clattn sees, in its order: dicts with "index", "name"
    ("platform: device") and "type" ("GPU", "CPU", "accelerator", "other")."""
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
        out.append({"index": i, "name": _text(e.name), "type": kind, "_device": e.device})
    return out
