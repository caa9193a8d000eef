# SPDX-License-Identifier: MIT
"""KV caches on pyopencl arrays, in place on the caller's queue:
clattn.attention_with_kvcache appending into quantized and plain paged
caches on the device (clattn_kv_append_cl, then the attention on the same
queue) with device and host block tables and lengths, and
clattn.attention_varlen with device cu_seqlens and the packed LSE; against
the float64 reference on the decoded caches (kvref.py)."""
import unittest

import numpy as np
import pyopencl.array as cla

import clattn
import kvref
from test_kvcache import Cache
from test_pyopencl import some_queue

F16, F32 = np.float16, np.float32


class DeviceCache(Cache):
    @classmethod
    def setUpClass(cls):
        cls.queue = some_queue()

    def dev(self, x):
        return cla.to_device(self.queue, x)

    def test_append_to_a_paged_device_cache(self):
        B, H, Hkv, d, P, max_pages, new = 3, 4, 2, 32, 16, 3, 2
        lens = np.array([15, 0, 31], np.int32)   # appends across page boundaries
        num_pages = B * max_pages + 1
        table = self.scattered_table(B, max_pages, num_pages, lens + new, P)
        q = self.values((B, 2, H, d), F16)
        k, v = self.values((B, new, Hkv, d), F16), self.values((B, new, Hkv, d), F16)
        kq, _ = self.cache("q8_0", (num_pages, P, Hkv, d), F16)
        vq, _ = self.cache("fp8_head", (num_pages, P, Hkv, d), F16)
        kc, vc = kq.to_device(self.queue), vq.to_device(self.queue)
        dlens = self.dev(lens)
        o, lse = clattn.attention_with_kvcache(
            self.dev(q), kc, vc, self.dev(k), self.dev(v), cache_seqlens=dlens,
            block_table=self.dev(table), causal=True, return_lse=True)
        self.assertIsInstance(o, cla.Array)
        np.testing.assert_array_equal(dlens.get(), lens, "cache_seqlens is left as it is")
        kb, vb = kc.get().data, vc.get().data
        for b in range(B):
            for t in range(new):
                j = lens[b] + t
                page, slot = table[b, j // P], j % P
                np.testing.assert_array_equal(kb[page, slot], kvref.q8_0(k[b, t].astype(F32)))
                np.testing.assert_array_equal(vb[page, slot],
                                              kvref.fp8(v[b, t].astype(F32), vq.scale))
        kv = kvref.decode("q8_0", kb, d)
        vv = kvref.decode("fp8_e4m3", vb, d, vq.scale)
        want, want_lse = self.want(q, kv, vv, lens + new, table, causal=True)
        self.check(o.get(), want, F16, "device append, device tables")
        self.check_lse(lse.get(), want_lse, "device append, device tables")

    def test_append_with_host_tables(self):
        B, H, Hkv, d, P = 2, 2, 1, 32, 16
        lens = np.array([3, 16], np.int32)
        table = self.scattered_table(B, 2, 5, lens + 1, P)
        kh, _ = self.cache(None, (5, P, Hkv, d), F16)
        vh, _ = self.cache(None, (5, P, Hkv, d), F16)
        kc, vc = self.dev(kh), self.dev(vh)
        q = self.values((B, 1, H, d), F16)
        k, v = self.values((B, 1, Hkv, d), F16), self.values((B, 1, Hkv, d), F16)
        out = cla.empty(self.queue, (B, 1, H, d), F16)
        got = clattn.attention_with_kvcache(self.dev(q), kc, vc, self.dev(k), self.dev(v),
                                            cache_seqlens=lens, block_table=table, out=out)
        self.assertIs(got, out)
        kh2, vh2 = kc.get(), vc.get()
        for b in range(B):
            j = lens[b]
            np.testing.assert_array_equal(kh2[table[b, j // P], j % P], k[b, 0])
        want, _ = self.want(q, kh2.astype(np.float64), vh2.astype(np.float64), lens + 1, table)
        self.check(out.get(), want, F16, "host tables, plain device cache")

    def test_packed_batches_on_the_device(self):
        ql, kl, H, Hkv, d = [2, 0, 5], [7, 3, 30], 4, 2, 32
        cu_q = np.concatenate([[0], np.cumsum(ql)]).astype(np.int32)
        cu_k = np.concatenate([[0], np.cumsum(kl)]).astype(np.int32)
        q = self.values((cu_q[-1], H, d), F32)
        kq, kv = self.cache("q4_0", (cu_k[-1], Hkv, d), F32)
        v, vv = self.cache(None, (cu_k[-1], Hkv, d), F32)
        want = np.zeros((cu_q[-1], H, d))
        want_lse = np.full((H, cu_q[-1]), -np.inf)
        for b in range(3):
            qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
            want[qs], want_lse[:, qs] = kvref.attention(q[qs], kv[ks], vv[ks], causal=True)
        for cu in ("device", "host"):
            cq, ck = (self.dev(cu_q), self.dev(cu_k)) if cu == "device" else (cu_q, cu_k)
            o, lse = clattn.attention_varlen(self.dev(q), kq.to_device(self.queue), self.dev(v),
                                             cq, ck, max(ql), max(kl), causal=True,
                                             return_lse=True)
            self.check(o.get(), want, F32, "cu_seqlens on the " + cu)
            self.check_lse(lse.get(), want_lse, "cu_seqlens on the " + cu)

    def test_attention_takes_device_quantized_k(self):
        B, H, Hkv, Nq, Nk, d = 1, 4, 2, 3, 50, 64
        q = self.values((B, H, Nq, d), F32)
        kq = clattn.quantize(self.values((B, Hkv, Nk, d)), "fp8_e4m3", per_head=True,
                             head_axis=1)
        v = self.values((B, Hkv, Nk, d), F32)
        o = clattn.attention(self.dev(q), kq.to_device(self.queue), self.dev(v),
                             causal="bottom-right")
        kv = kvref.decode("fp8_e4m3", kq.data.transpose(0, 2, 1, 3), d, kq.scale)
        want, _ = self.want(q.transpose(0, 2, 1, 3), kv, v.transpose(0, 2, 1, 3), [Nk],
                            causal=True)
        self.check(o.get(), want.transpose(0, 2, 1, 3), F32, "attention, device fp8 K")

    def test_errors(self):
        q = self.values((2, 1, 2, 32), F16)
        kc = self.values((2, 8, 2, 32), F16)
        with self.assertRaisesRegex(TypeError, "all host arrays or all pyopencl"):
            clattn.attention_with_kvcache(self.dev(q), kc, kc)
        with self.assertRaisesRegex(TypeError, "all host arrays or all pyopencl"):
            clattn.attention_with_kvcache(q, clattn.quantize(kc, "q8_0").to_device(self.queue),
                                          kc)
        qp = self.values((3, 2, 32), F16)
        cu = self.dev(np.array([0, 3], np.int32))
        with self.assertRaisesRegex(ValueError, "max_seqlen_q is needed"):
            clattn.attention_varlen(self.dev(qp), self.dev(qp), self.dev(qp), cu, cu)
        with self.assertRaisesRegex(TypeError, "device array"):
            clattn.attention_varlen(qp, qp, qp, cu, [0, 3])
        with self.assertRaisesRegex(ValueError, "out must have shape"):
            clattn.attention_varlen(self.dev(qp), self.dev(qp), self.dev(qp), cu, cu, 3, 3,
                                    out=cla.empty(self.queue, (2, 2, 32), F16))


if __name__ == "__main__":
    unittest.main()
