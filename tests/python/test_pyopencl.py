# SPDX-License-Identifier: MIT
"""Zero-copy pyopencl interop: pyopencl arrays and raw buffers used in place
on the caller's own context and queue, events in and out, strided device
views, lengths in a device buffer, the LSE, out= into the caller's arrays,
clattn.merge on the device; against the numpy reference."""
import ctypes
import unittest

import numpy as np
import pyopencl as cl
import pyopencl.array as cla

import clattn
from clattn import _core
import reference as ref


def some_queue():
    """An in-order queue on the first device of the first platform that has
    one (PoCL on CI)."""
    for platform in cl.get_platforms():
        devices = platform.get_devices()
        if devices:
            context = cl.Context(devices[:1])
            return cl.CommandQueue(context)
    raise unittest.SkipTest("no OpenCL device")


class Interop(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.queue = some_queue()

    def setUp(self):
        self.rng = np.random.default_rng(777)

    def inputs(self, B, H, Hkv, Nq, Nk, d, dtype=np.float32):
        return (ref.random(self.rng, (B, H, Nq, d), dtype),
                ref.random(self.rng, (B, Hkv, Nk, d), dtype),
                ref.random(self.rng, (B, Hkv, Nk, d), dtype))

    def test_arrays_in_place_on_the_callers_queue(self):
        for dtype in (np.float32, np.float16):
            q, k, v = self.inputs(2, 4, 2, 7, 12, 16, dtype)
            dq, dk, dv = (cla.to_device(self.queue, x) for x in (q, k, v))
            o = clattn.attention(dq, dk, dv, causal="top-left")
            self.assertIsInstance(o, cla.Array)
            self.assertIs(o.queue, self.queue)
            self.assertTrue(o.events, "O carries the completion event")
            want, _ = ref.attention(q, k, v, "top-left")
            err = np.abs(o.get().astype(np.float64) - want).max()
            self.assertLess(err, ref.tolerance(dtype))
        # The clattn context shares the caller's context and queue.
        ctx = _core.context_for_queue(self.queue)
        L = _core.lib()
        self.assertEqual(L.clattn_cl_queue(ctx.handle), self.queue.int_ptr)
        self.assertEqual(L.clattn_cl_context(ctx.handle), self.queue.context.int_ptr)

    def test_strided_device_views(self):
        B, H, Hkv, Nq, Nk, Nmax, d = 1, 4, 2, 5, 9, 16, 8
        q_bnhd = ref.random(self.rng, (B, Nq, H, d), np.float32)
        kc = ref.random(self.rng, (B, Hkv, Nmax, d), np.float32)
        vc = ref.random(self.rng, (B, Hkv, Nmax, d), np.float32)
        dq = cla.to_device(self.queue, q_bnhd).transpose((0, 2, 1, 3))
        dkc, dvc = cla.to_device(self.queue, kc), cla.to_device(self.queue, vc)
        dk, dv = dkc[:, :, 2:2 + Nk], dvc[:, :, 2:2 + Nk]  # views at an offset
        self.assertGreater(dk.offset, 0)
        o, lse = clattn.attention(dq, dk, dv, causal="bottom-right", return_lse=True)
        want, want_lse = ref.attention(q_bnhd.transpose(0, 2, 1, 3), kc[:, :, 2:2 + Nk],
                                       vc[:, :, 2:2 + Nk], "bottom-right")
        self.assertLess(np.abs(o.get() - want).max(), 1e-4)
        self.assertLess(np.abs(lse.get() - want_lse).max(), 1e-4)
        with self.assertRaises(ValueError):  # d not contiguous: no layout for it
            clattn.attention(cla.to_device(self.queue, q_bnhd)[..., ::2].transpose((0, 2, 1, 3)),
                             dk[..., ::2], dv[..., ::2])

    def test_device_lengths(self):
        q, k, v = self.inputs(3, 2, 1, 1, 200, 32)
        lens = np.array([5, 200, 64], np.uint32)
        dq, dk, dv = (cla.to_device(self.queue, x) for x in (q, k, v))
        dlens = cla.to_device(self.queue, lens)
        o, lse = clattn.attention(dq, dk, dv, kv_lens=dlens, split_kv=2, return_lse=True)
        want, want_lse = ref.attention(q, k, v, kv_lens=lens)
        self.assertLess(np.abs(o.get() - want).max(), 1e-4)
        self.assertLess(np.abs(lse.get() - want_lse).max(), 1e-4)

    def test_buffers_and_events(self):
        """attention_cl on raw Buffers: it waits for the caller's event and
        returns its own; layouts place Q as [B, N, H, d]."""
        B, H, Hkv, Nq, Nk, d = 2, 2, 2, 6, 10, 8
        q_bnhd = ref.random(self.rng, (B, Nq, H, d), np.float32)
        k = ref.random(self.rng, (B, Hkv, Nk, d), np.float32)
        v = ref.random(self.rng, (B, Hkv, Nk, d), np.float32)
        ctx, mf = self.queue.context, cl.mem_flags
        bq = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=q_bnhd)
        bk = cl.Buffer(ctx, mf.READ_ONLY, k.nbytes)
        bv = cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=v)
        bo = cl.Buffer(ctx, mf.WRITE_ONLY, B * H * Nq * d * 4)
        gate = cl.UserEvent(ctx)
        up = cl.enqueue_copy(self.queue, bk, k, is_blocking=False, wait_for=[gate])
        done = clattn.attention_cl(self.queue, bq, bk, bv, bo, shape=(B, H, Hkv, Nq, Nk, d),
                                   dtype=np.float32, causal="top-left",
                                   layouts={"q": (Nq * H * d, d, H * d, 0)}, wait_for=[up])
        self.assertIsInstance(done, cl.Event)
        self.assertNotEqual(done.command_execution_status, cl.command_execution_status.COMPLETE,
                            "attention ran before the event it waits for")
        gate.set_status(cl.command_execution_status.COMPLETE)
        o = np.empty((B, H, Nq, d), np.float32)
        cl.enqueue_copy(self.queue, o, bo, wait_for=[done])
        want, _ = ref.attention(q_bnhd.transpose(0, 2, 1, 3), k, v, "top-left")
        self.assertLess(np.abs(o - want).max(), 1e-4)
        # A buffer too small for the shape is refused by the library.
        small = cl.Buffer(ctx, mf.WRITE_ONLY, 16)
        with self.assertRaises(clattn.ClattnError) as e:
            clattn.attention_cl(self.queue, bq, bk, bv, small, shape=(B, H, Hkv, Nq, Nk, d),
                                dtype=np.float32)
        self.assertIn("holds 16 bytes", e.exception.detail)

    def test_buffers_with_variants(self):
        """attention_cl with a window, softcap, ALiBi, sinks, an additive
        mask and d_v != d on raw Buffers, against the numpy reference."""
        B, H, Hkv, Nq, Nk, d, dv = 2, 4, 2, 5, 40, 16, 8
        q = ref.random(self.rng, (B, H, Nq, d), np.float32)
        k = ref.random(self.rng, (B, Hkv, Nk, d), np.float32)
        v = ref.random(self.rng, (B, Hkv, Nk, dv), np.float32)
        mask = ref.random(self.rng, (1, H, Nq, Nk), np.float32)
        slopes = np.linspace(0.05, 0.4, H).astype(np.float32)
        sinks = np.linspace(-1, 1, H).astype(np.float32)
        ctx, mf = self.queue.context, cl.mem_flags
        bq, bk, bv = (cl.Buffer(ctx, mf.READ_ONLY | mf.COPY_HOST_PTR, hostbuf=x)
                      for x in (q, k, v))
        bo = cl.Buffer(ctx, mf.WRITE_ONLY, B * H * Nq * dv * 4)
        done = clattn.attention_cl(self.queue, bq, bk, bv, bo, shape=(B, H, Hkv, Nq, Nk, d),
                                   dtype=np.float32, causal="bottom-right", head_dim_v=dv,
                                   attn_mask=mask, window_size=(9, 0), softcap=2.0,
                                   alibi_slopes=slopes, sinks=sinks)
        o = np.full((B, H, Nq, dv), np.nan, np.float32)
        cl.enqueue_copy(self.queue, o, bo, wait_for=[done])
        want, _ = ref.attention_variants(q, k, v, "bottom-right", window=(9, 0), softcap=2.0,
                                         alibi=slopes, sinks=sinks, mask=mask)
        self.assertLess(np.abs(o - want).max(), 1e-4)

    def test_out_and_device_q_lens(self):
        q, k, v = self.inputs(3, 4, 2, 6, 10, 16)
        dq, dk, dv = (cla.to_device(self.queue, x) for x in (q, k, v))
        # O into every other row of a bigger device array; its LSE beside.
        big = cla.to_device(self.queue, np.full((3, 4, 12, 16), 9.0, np.float32))
        view = big[:, :, ::2, :]
        lse = cla.to_device(self.queue, np.full((3, 4, 6), np.nan, np.float32))
        q_lens = cla.to_device(self.queue, np.array([6, 2, 0], np.uint32))
        o, l = clattn.attention(dq, dk, dv, causal="bottom-right", out=view, out_lse=lse,
                                q_lens=q_lens)
        self.assertIs(o, view)
        self.assertIs(l, lse)
        host, host_lse = big.get(), lse.get()
        self.assertTrue(np.all(host[:, :, 1::2] == 9.0), "rows between left as they were")
        for b, nq in enumerate((6, 2, 0)):
            got = host[b:b + 1, :, ::2][:, :, :nq]
            if nq:
                want, want_lse = ref.attention(q[b:b + 1, :, :nq], k[b:b + 1], v[b:b + 1],
                                               "bottom-right")
                self.assertLess(np.abs(got - want).max(), 1e-4)
                self.assertLess(np.abs(host_lse[b, :, :nq] - want_lse[0]).max(), 1e-4)
            self.assertTrue(np.all(host[b, :, ::2][:, nq:] == 0))
            self.assertTrue(np.all(np.isneginf(host_lse[b, :, nq:])))
        with self.assertRaisesRegex(ValueError, "out must have shape"):
            clattn.attention(dq, dk, dv, out=cla.empty(self.queue, (3, 4, 6, 8), np.float32))
        with self.assertRaisesRegex(TypeError, "out must be a pyopencl array"):
            clattn.attention(dq, dk, dv, out=np.empty(q.shape, np.float32))

    def test_merge_on_the_device(self):
        q, k, v = self.inputs(1, 2, 2, 5, 40, 32, np.float16)
        whole, whole_lse = ref.attention(q, k, v)
        parts = []
        for lo, hi in ((0, 13), (13, 40)):
            dq, dk, dv = (cla.to_device(self.queue, np.ascontiguousarray(x))
                          for x in (q, k[:, :, lo:hi], v[:, :, lo:hi]))
            parts += list(clattn.attention(dq, dk, dv, return_lse=True))
        o, lse = clattn.merge(*parts)
        self.assertIsInstance(o, cla.Array)
        self.assertLess(np.abs(o.get().astype(np.float64) - whole).max(), 2 * 4e-3)
        self.assertLess(np.abs(lse.get() - whole_lse).max(), 1e-3)
        o1, l1 = parts[0], parts[1]
        clattn.merge(*parts, out=o1, out_lse=l1)  # in place
        self.assertTrue(np.array_equal(o1.get(), o.get()))
        with self.assertRaisesRegex(ValueError, "contiguous at offset 0"):
            clattn.merge(parts[0][:, :, 1:], parts[1][:, :, 1:], parts[2][:, :, 1:],
                         parts[3][:, :, 1:])

    def test_mixed_contexts(self):
        q, k, v = self.inputs(1, 1, 1, 3, 3, 4)
        other = cl.CommandQueue(cl.Context(self.queue.context.devices))
        with self.assertRaises(ValueError):
            clattn.attention(cla.to_device(self.queue, q), cla.to_device(other, k),
                             cla.to_device(self.queue, v))
        with self.assertRaises(TypeError):
            clattn.attention(cla.to_device(self.queue, q), k, v)


if __name__ == "__main__":
    unittest.main()
