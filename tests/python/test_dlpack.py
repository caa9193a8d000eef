# SPDX-License-Identifier: MIT
"""DLPack in and out: host tensors of any producer read in place (through
numpy.from_dlpack, and bfloat16 from the capsule itself, the producer's
deleter called once the view is gone), out= into a producer's memory, a
non-host device refused with its type named, results that export DLPack;
PyTorch CPU tensors where torch imports."""
import ctypes
import gc
import unittest

import numpy as np

import clattn
import reference as ref

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


class Producer:
    """Any library's tensor, seen only through the DLPack protocol."""

    def __init__(self, array, device=(1, 0)):
        self.array = array
        self.device = device

    def __dlpack__(self, **kw):  # NumPy 2 asks for max_version and friends
        return self.array.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device


# A DLPack producer written against dlpack.h, for bfloat16, which numpy does
# not export: the DLManagedTensor and its capsule built by hand.
class DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int), ("device_id", ctypes.c_int)]


class DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class DLTensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", DLDevice), ("ndim", ctypes.c_int),
                ("dtype", DLDataType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


DELETER = ctypes.CFUNCTYPE(None, ctypes.c_void_p)


class DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", DELETER)]


_new_capsule = ctypes.pythonapi.PyCapsule_New
_new_capsule.restype = ctypes.py_object
_new_capsule.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]


class Bf16Producer:
    """A bfloat16 tensor exported by hand; counts its deleter's calls."""

    def __init__(self, array):
        self.array = array  # ml_dtypes.bfloat16, any strides
        self.deleted = 0
        self.dtype = "bfloat16"
        n = array.ndim
        self._shape = (ctypes.c_int64 * n)(*array.shape)
        self._strides = (ctypes.c_int64 * n)(*(s // 2 for s in array.strides))
        self._deleter = DELETER(self._delete)
        self._managed = DLManagedTensor(
            DLTensor(array.ctypes.data, DLDevice(1, 0), n, DLDataType(4, 16, 1), self._shape,
                     self._strides, 0), None, self._deleter)

    def _delete(self, _):
        self.deleted += 1

    def __dlpack__(self, stream=None):
        return _new_capsule(ctypes.addressof(self._managed), b"dltensor", None)

    def __dlpack_device__(self):
        return (1, 0)


class DLPack(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(11)
        shape = (2, 4, 9, 32)
        self.q, self.k, self.v = (ref.random(self.rng, shape, np.float16) for _ in range(3))
        self.want, _ = ref.attention(self.q, self.k, self.v, "top-left")

    def test_in_and_out(self):
        o = clattn.attention(Producer(self.q), Producer(self.k), Producer(self.v),
                             causal="top-left")
        self.assertLess(np.abs(o.astype(np.float64) - self.want).max(), ref.tolerance(np.float16))
        # The result exports DLPack itself: a consumer sees the same memory.
        back = np.from_dlpack(o)
        self.assertTrue(np.shares_memory(back, o))

    def test_out_into_a_producer(self):
        target = np.full(self.q.shape, np.nan, np.float16)
        out = Producer(target)
        got = clattn.attention(self.q, self.k, self.v, causal="top-left", out=out)
        self.assertIs(got, out)
        self.assertLess(np.abs(target.astype(np.float64) - self.want).max(),
                        ref.tolerance(np.float16))

    def test_device_tensor_refused(self):
        with self.assertRaisesRegex(TypeError, r"k: a DLPack tensor on a CUDA device "
                                               r"\(DLPack device type 2"):
            clattn.attention(self.q, Producer(self.k, (2, 0)), self.v)

    @unittest.skipIf(ml_dtypes is None, "ml_dtypes is not installed")
    def test_bf16_from_the_capsule(self):
        bf = np.dtype(ml_dtypes.bfloat16)
        q, k, v = (x.astype(bf) for x in (self.q, self.k, self.v))
        want, _ = ref.attention(q, k, v, "top-left")
        # A transposed (non-contiguous) K: strides taken from the capsule.
        kt = np.ascontiguousarray(k.transpose(0, 1, 3, 2)).transpose(0, 1, 3, 2)
        producers = [Bf16Producer(q), Bf16Producer(kt), Bf16Producer(v)]
        o = clattn.attention(*producers, causal="top-left")
        self.assertEqual(o.dtype, bf)
        self.assertLess(np.abs(o.astype(np.float64) - want).max(), ref.tolerance(bf))
        gc.collect()
        self.assertEqual([p.deleted for p in producers], [1, 1, 1])

    def test_torch_cpu_tensors(self):
        try:
            import torch
        except ImportError:
            self.skipTest("torch is not installed")
        q, k, v = (torch.from_numpy(x) for x in (self.q, self.k, self.v))
        o = clattn.attention(q, k, v, causal="top-left")
        self.assertLess(np.abs(o.astype(np.float64) - self.want).max(), ref.tolerance(np.float16))
        out = torch.empty_like(q)
        self.assertIs(clattn.attention(q, k, v, causal="top-left", out=out), out)
        self.assertTrue(np.array_equal(out.numpy(), o))
        qb, kb, vb = (x.to(torch.bfloat16) for x in (q, k, v))
        ob = clattn.attention(qb, kb, vb, causal="top-left")
        self.assertEqual(str(ob.dtype), "bfloat16")


if __name__ == "__main__":
    unittest.main()
