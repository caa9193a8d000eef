# SPDX-License-Identifier: MIT
"""KV caches on numpy arrays: clattn.quantize and clattn.dequantize byte
for byte against independent numpy implementations of ggml's q8_0 and
q4_0 and of OCP fp8 e4m3 (kvref.py); clattn.attention_with_kvcache over
contiguous and paged caches (q8_0, q4_0, fp8 per tensor and per head,
plain; page sizes 16 and 256, scattered block tables, lengths 0, 1 and
not a multiple of a page), appends written in place (across page
boundaries), GQA, causal, the variants; clattn.attention_varlen with empty
sequences; all against float64 attention on the cache's decoded values,
gathered per sequence; and the argument errors."""
import unittest

import numpy as np

import clattn
import kvref
import reference as ref

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None

F16, F32 = np.float16, np.float32


def float_dtypes():
    return (F32, F16) + ((ml_dtypes.bfloat16,) if ml_dtypes is not None else ())


def tolerance(dtype):
    return ref.tolerance(dtype)


class Quantize(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(20261204)

    def sample(self, shape):
        """Random values with the blocks ggml treats apart: all zero, a tie
        of +a and -a for the largest magnitude, constants, a wide range."""
        x = self.rng.normal(0, 1, shape).astype(F32)
        flat = x.reshape(-1, 32)
        flat[0] = 0
        flat[1] = 0.25
        flat[1, 3], flat[1, 9] = -0.5, 0.5   # q4_0: the first of equal magnitudes wins
        flat[2] = np.linspace(-3, 3, 32)
        flat[3] *= 1e4
        flat[4] *= 1e-4
        return x

    def test_q8_0_and_q4_0_are_ggmls(self):
        x = self.sample((3, 5, 2, 64))
        for dtype in float_dtypes():
            xs = x.astype(dtype)
            for kind in ("q8_0", "q4_0"):
                qa = clattn.quantize(xs, kind)
                self.assertEqual(qa.shape, x.shape)
                self.assertEqual(qa.data.dtype, np.uint8)
                self.assertEqual(qa.data.shape, (3, 5, 2, 68 if kind == "q8_0" else 36))
                want = kvref.encode(kind, xs.astype(F32))
                bad = np.count_nonzero(qa.data != want)
                self.assertEqual(bad, 0, "%s from %s: %d bytes differ from ggml's"
                                 % (kind, np.dtype(dtype), bad))
                dq = clattn.dequantize(qa)
                self.assertEqual((dq.dtype, dq.shape), (np.dtype(F32), x.shape))
                np.testing.assert_array_equal(dq, kvref.decode(kind, want, 64).astype(F32))
                np.testing.assert_array_equal(qa.dequantize(), dq)

    def test_fp8_scales(self):
        x = self.sample((4, 6, 3, 32))
        x[:, :, 1] *= 5  # heads of different ranges
        # Per tensor: max |x| / 448.
        qa = clattn.quantize(x, "fp8_e4m3")
        self.assertEqual(qa.scale.shape, (1,))
        self.assertEqual(qa.scale[0], np.float32(np.abs(x).max() / 448))
        np.testing.assert_array_equal(qa.data, kvref.fp8(x, qa.scale))
        # Per head, along axis -2 (FlashAttention's Hkv axis).
        qh = clattn.quantize(x, "fp8_e4m3", per_head=True)
        amax = np.abs(x).max(axis=(0, 1, 3))
        np.testing.assert_array_equal(qh.scale, (amax / 448).astype(F32))
        np.testing.assert_array_equal(qh.data, kvref.fp8(x, qh.scale))
        want = kvref.decode("fp8_e4m3", qh.data, 32, qh.scale)
        np.testing.assert_allclose(qh.dequantize(), want, rtol=1e-6, atol=0)
        # Another head axis, for [B, Hkv, N, d] tensors.
        xt = np.ascontiguousarray(x.transpose(0, 2, 1, 3))
        qt = clattn.quantize(xt, "fp8_e4m3", per_head=True, head_axis=1)
        np.testing.assert_array_equal(qt.scale, qh.scale)
        np.testing.assert_array_equal(qt.data, qh.data.transpose(0, 2, 1, 3))
        # A given scale; fp16 input; saturation; NaN stays NaN.
        y = x.astype(F16)
        qg = clattn.quantize(y, "fp8_e4m3", scale=0.002)
        np.testing.assert_array_equal(qg.data, kvref.fp8(y.astype(F32), 0.002))
        z = np.zeros(32, F32)
        z[:4] = np.inf, -np.inf, np.nan, 1e9
        codes = clattn.quantize(z, "fp8_e4m3", scale=1.0).data
        self.assertEqual(list(codes[[0, 1, 3]]), [0x7e, 0xfe, 0x7e])
        self.assertTrue(np.isnan(kvref.E4M3[codes[2]]))
        # All zero: scale 1.
        self.assertEqual(clattn.quantize(np.zeros((2, 32)), "fp8_e4m3").scale[0], 1.0)

    def test_wrapping_bytes(self):
        x = self.sample((2, 8, 2, 32))
        qa = clattn.quantize(x, "fp8_e4m3", per_head=True)
        again = clattn.QuantizedArray(qa.data.copy(), "fp8_e4m3", x.shape, qa.scale,
                                      per_head=True)
        np.testing.assert_array_equal(again.dequantize(), qa.dequantize())
        z = clattn.QuantizedArray.zeros((2, 8, 2, 64), "q4_0")
        self.assertEqual((z.data.shape, z.nbytes), ((2, 8, 2, 36), 2 * 8 * 2 * 36))
        np.testing.assert_array_equal(z.dequantize(), 0)
        self.assertIn("q4_0", repr(z))

    def test_errors(self):
        x = self.rng.uniform(-1, 1, (2, 3, 64)).astype(F32)
        cases = [
            (ValueError, lambda: clattn.quantize(x, "q5_0")),
            (ValueError, lambda: clattn.quantize(x[..., :48], "q8_0")),  # d not a multiple of 32
            (ValueError, lambda: clattn.quantize(x, "q8_0", scale=1.0)),
            (ValueError, lambda: clattn.quantize(x, "q4_0", per_head=True)),
            (ValueError, lambda: clattn.quantize(x, "fp8_e4m3", scale=0.0)),
            (ValueError, lambda: clattn.quantize(x, "fp8_e4m3", scale=float("nan"))),
            (ValueError, lambda: clattn.quantize(x, "fp8_e4m3", scale=1e-50)),  # 0 as float32
            (ValueError, lambda: clattn.quantize(x, "fp8_e4m3", scale=[1.0, 2.0])),
            (ValueError, lambda: clattn.quantize(x, "fp8_e4m3", scale=[1.0, 2.0],
                                                 per_head=True)),  # 3 heads
            (ValueError, lambda: clattn.quantize(x, "fp8_e4m3", per_head=True, head_axis=-1)),
            (ValueError, lambda: clattn.quantize(np.full(32, np.nan), "fp8_e4m3")),
            (TypeError, lambda: clattn.quantize(np.array(["a"] * 32), "q8_0")),
            (TypeError, lambda: clattn.quantize(x, "fp8_e4m3", scale="1")),
            (TypeError, lambda: clattn.dequantize(x)),
            (ValueError, lambda: clattn.QuantizedArray(np.zeros(5, np.uint8), "q8_0", (1, 32))),
            (TypeError, lambda: clattn.QuantizedArray(np.zeros((1, 34)), "q8_0", (1, 32))),
            (ValueError, lambda: clattn.QuantizedArray(np.zeros((1, 32), np.uint8), "fp8_e4m3",
                                                       (1, 32))),  # no scale
        ]
        for i, (error, call) in enumerate(cases):
            with self.assertRaises(error, msg="case %d" % i):
                call()
        with self.assertRaisesRegex(ValueError, "blocks of 32"):
            clattn.quantize(x[..., :48], "q4_0")


class Cache(unittest.TestCase):
    """Caches of random values, each stored as `kind` (None: plain, of the
    query's dtype; "fp8_head": fp8 with per-head scales) alongside their
    float64 values as the kernels read them (decoded by kvref)."""

    def setUp(self):
        self.rng = np.random.default_rng(20261205)

    def values(self, shape, dtype=F32):
        return self.rng.uniform(-1, 1, shape).astype(dtype)

    def cache(self, kind, shape, dtype):
        x = self.values(shape)
        if kind is None:
            c = x.astype(dtype)
            return c, c.astype(np.float64)
        fp8 = kind.startswith("fp8")
        qa = clattn.quantize(x, "fp8_e4m3" if fp8 else kind, per_head=kind == "fp8_head")
        return qa, kvref.decode(qa.kind, qa.data, shape[-1], qa.scale)

    def check(self, got, want, dtype, what):
        self.assertEqual(got.shape, want.shape, what)
        err = np.abs(got.astype(np.float64) - want).max() if want.size else 0.0
        self.assertLess(err, tolerance(dtype), "%s: max abs error %g" % (what, err))

    def check_lse(self, got, want, what):
        self.assertEqual(got.shape, want.shape, what)
        self.assertTrue(np.array_equal(np.isinf(got), np.isinf(want)), what + ": -inf rows")
        fin = np.isfinite(want)
        if fin.any():
            self.assertLess(np.abs(got[fin] - want[fin]).max(), 1e-3, what + ": LSE")

    def want(self, q, kv, vv, lens, table=None, **kw):
        """The float64 result over each sequence's first lens[b] keys (of a
        plain [B, N, Hkv, d] cache, or gathered through the block table)."""
        B, Nq, H, _ = q.shape
        o = np.zeros((B, Nq, H, vv.shape[-1]))
        lse = np.full((B, H, Nq), -np.inf)
        for b in range(B):
            L = int(lens[b])
            kb = kvref.gather(kv, table, b, L) if table is not None else kv[b, :L]
            vb = kvref.gather(vv, table, b, L) if table is not None else vv[b, :L]
            o[b], lse[b] = kvref.attention(q[b].astype(np.float64), kb, vb, **kw)
        return o, lse

    def scattered_table(self, B, max_pages, num_pages, lens, page_size):
        """Each sequence's pages at scattered places; entries past a
        sequence's pages -1 (never read)."""
        pages = self.rng.permutation(num_pages)[:B * max_pages].reshape(B, max_pages)
        for b in range(B):
            pages[b, -(-int(lens[b]) // page_size):] = -1
        return pages.astype(np.int32)


class KVCache(Cache):
    def test_contiguous_caches(self):
        cases = [  # dtype, K kind, V kind, B, H, Hkv, Nq, Nk_max, d, lens, causal
            (F16, "q8_0", "q4_0", 3, 4, 2, 1, 70, 64, [0, 1, 67], False),
            (F32, "fp8", "fp8_head", 2, 6, 2, 3, 50, 32, [2, 41], True),
            (F16, "q4_0", None, 2, 2, 2, 5, 40, 32, [40, 17], True),
        ]
        if ml_dtypes is not None:
            cases.append((ml_dtypes.bfloat16, "q8_0", "q8_0", 1, 4, 1, 2, 33, 32, [33], True))
        for dt, kk, vk, B, H, Hkv, Nq, N, d, lens, causal in cases:
            what = "%s K %s V %s lens %s causal %s" % (np.dtype(dt), kk, vk, lens, causal)
            q = self.values((B, Nq, H, d), dt)
            kc, kv = self.cache(kk, (B, N, Hkv, d), dt)
            vc, vv = self.cache(vk, (B, N, Hkv, d), dt)
            with self.subTest(what):
                o, lse = clattn.attention_with_kvcache(q, kc, vc, cache_seqlens=np.int32(lens),
                                                       causal=causal, return_lse=True)
                self.assertEqual(o.dtype, np.dtype(dt))
                want, want_lse = self.want(q, kv, vv, lens, causal=causal)
                self.check(o, want, dt, what)
                self.check_lse(lse, want_lse, what)
        # No cache_seqlens: every sequence holds the whole cache.
        o = clattn.attention_with_kvcache(q, kc, vc)
        self.check(o, self.want(q, kv, vv, [N] * B)[0], dt, "cache_seqlens None")

    def test_paged_caches(self):
        cases = [  # dtype, K kind, V kind, page_size, lens, max_pages, H, Hkv, Nq, d, causal
            (F16, "q8_0", "fp8_head", 16, [0, 1, 45], 3, 4, 2, 2, 64, True),
            (F16, "q4_0", "q4_0", 256, [300, 1], 2, 2, 1, 1, 32, False),
            (F32, None, "fp8", 16, [16, 33], 4, 4, 4, 3, 32, True),
            (F16, "fp8_head", "q8_0", 16, [0, 17, 33], 3, 4, 2, 1, 64, False),
        ]
        for dt, kk, vk, P, lens, max_pages, H, Hkv, Nq, d, causal in cases:
            what = "page %d K %s V %s d %d lens %s" % (P, kk, vk, d, lens)
            B = len(lens)
            num_pages = B * max_pages + 2
            table = self.scattered_table(B, max_pages, num_pages, lens, P)
            q = self.values((B, Nq, H, d), dt)
            kc, kv = self.cache(kk, (num_pages, P, Hkv, d), dt)
            vc, vv = self.cache(vk, (num_pages, P, Hkv, d), dt)
            with self.subTest(what):
                o, lse = clattn.attention_with_kvcache(q, kc, vc, cache_seqlens=lens,
                                                       block_table=table, causal=causal,
                                                       return_lse=True)
                want, want_lse = self.want(q, kv, vv, lens, table, causal=causal)
                self.check(o, want, dt, what)
                self.check_lse(lse, want_lse, what)

    def test_variants_on_a_paged_cache(self):
        B, H, Hkv, Nq, d, P = 2, 4, 2, 4, 32, 16
        lens = [37, 20]
        table = self.scattered_table(B, 3, 8, lens, P)
        q = self.values((B, Nq, H, d), F32)
        kc, kv = self.cache("q8_0", (8, P, Hkv, d), F32)
        vc, vv = self.cache("fp8", (8, P, Hkv, d), F32)
        slopes = clattn.alibi_slopes(H)
        kw = dict(causal=True, window_size=(9, 0), softcap=2.0, softmax_scale=0.4)
        o = clattn.attention_with_kvcache(q, kc, vc, cache_seqlens=lens, block_table=table,
                                          alibi_slopes=slopes, **kw)
        want, _ = self.want(q, kv, vv, lens, table, slopes=slopes, causal=True, window=(9, 0),
                            softcap=2.0, scale=0.4)
        self.check(o, want, F32, "window, softcap, ALiBi, scale")

    def test_append_to_a_contiguous_cache(self):
        B, H, Hkv, N, d, new = 2, 4, 2, 20, 32, 3
        q = self.values((B, new, H, d), F16)
        kc, _ = self.cache(None, (B, N, Hkv, d), F16)
        vc, _ = self.cache(None, (B, N, Hkv, d), F16)
        before_k, before_v = kc.copy(), vc.copy()
        k, v = self.values((B, new, Hkv, d), F16), self.values((B, new, Hkv, d), F16)
        lens = np.array([0, 5], np.int32)
        o = clattn.attention_with_kvcache(q, kc, vc, k, v, cache_seqlens=lens, causal=True)
        np.testing.assert_array_equal(lens, [0, 5], "cache_seqlens is left as it is")
        for b in range(B):
            L = lens[b]
            np.testing.assert_array_equal(kc[b, L:L + new], k[b])
            np.testing.assert_array_equal(vc[b, L:L + new], v[b])
            np.testing.assert_array_equal(kc[b, :L], before_k[b, :L])
            np.testing.assert_array_equal(kc[b, L + new:], before_k[b, L + new:])
            np.testing.assert_array_equal(vc[b, L + new:], before_v[b, L + new:])
        want, _ = self.want(q, kc.astype(np.float64), vc.astype(np.float64), lens + new,
                            causal=True)
        self.check(o, want, F16, "after the append")
        # A decoding step with an int cache_seqlens, into out=.
        q1 = self.values((B, 1, H, d), F16)
        k1, v1 = self.values((B, 1, Hkv, d), F16), self.values((B, 1, Hkv, d), F16)
        out = np.full((B, 1, H, d), np.nan, F16)
        got = clattn.attention_with_kvcache(q1, kc, vc, k1, v1, cache_seqlens=8, out=out)
        self.assertIs(got, out)
        np.testing.assert_array_equal(kc[:, 8], k1[:, 0])
        want, _ = self.want(q1, kc.astype(np.float64), vc.astype(np.float64), [9, 9])
        self.check(out, want, F16, "decoding step, int cache_seqlens")

    def test_append_with_a_head_dim_v(self):
        """V's own head dimension (DeepSeek's MLA): d 64, d_v 32."""
        B, H, Hkv, N, d, dv, new = 2, 4, 2, 20, 64, 32, 2
        q = self.values((B, 1, H, d), F32)
        kc, _ = self.cache("q8_0", (B, N, Hkv, d), F32)
        vc, _ = self.cache(None, (B, N, Hkv, dv), F32)
        k, v = self.values((B, new, Hkv, d)), self.values((B, new, Hkv, dv))
        lens = np.array([3, 10], np.int32)
        o = clattn.attention_with_kvcache(q, kc, vc, k, v, cache_seqlens=lens)
        self.assertEqual(o.shape, (B, 1, H, dv))
        for b in range(B):
            np.testing.assert_array_equal(vc[b, lens[b]:lens[b] + new], v[b])
        want, _ = self.want(q, kvref.decode("q8_0", kc.data, d), vc.astype(np.float64),
                            lens + new)
        self.check(o, want, F32, "d_v 32")

    def test_append_to_a_quantized_paged_cache(self):
        """New keys quantized into their pages as kvref encodes them (fp8 with
        the cache's per-head scales), across page boundaries; the other
        bytes untouched."""
        B, H, Hkv, d, P, max_pages, new = 3, 4, 2, 64, 16, 3, 3
        lens = np.array([15, 0, 30], np.int32)  # 15..17 and 30..32 cross a page boundary
        num_pages = B * max_pages + 1
        table = self.scattered_table(B, max_pages, num_pages, lens + new, P)
        q = self.values((B, 2, H, d), F16)
        kc, _ = self.cache("q8_0", (num_pages, P, Hkv, d), F16)
        vc, _ = self.cache("fp8_head", (num_pages, P, Hkv, d), F16)
        before_k, before_v = kc.data.copy(), vc.data.copy()
        k, v = self.values((B, new, Hkv, d), F16), self.values((B, new, Hkv, d), F16)
        o, lse = clattn.attention_with_kvcache(q, kc, vc, k, v, cache_seqlens=lens,
                                               block_table=table, causal=True, return_lse=True)
        written = np.zeros(kc.data.shape[:2], bool)
        for b in range(B):
            for t in range(new):
                j = lens[b] + t
                page, slot = table[b, j // P], j % P
                written[page, slot] = True
                np.testing.assert_array_equal(kc.data[page, slot],
                                              kvref.q8_0(k[b, t].astype(F32)))
                np.testing.assert_array_equal(vc.data[page, slot],
                                              kvref.fp8(v[b, t].astype(F32), vc.scale))
        np.testing.assert_array_equal(kc.data[~written], before_k[~written])
        np.testing.assert_array_equal(vc.data[~written], before_v[~written])
        kv = kvref.decode("q8_0", kc.data, d)
        vv = kvref.decode("fp8_e4m3", vc.data, d, vc.scale)
        want, want_lse = self.want(q, kv, vv, lens + new, table, causal=True)
        self.check(o, want, F16, "after the append")
        self.check_lse(lse, want_lse, "after the append")

    def test_attention_takes_quantized_k_and_v(self):
        B, H, Hkv, Nq, Nk, d = 2, 4, 2, 5, 40, 32
        q = self.values((B, Nq, H, d), F16)
        kx, vx = self.values((B, Nk, Hkv, d)), self.values((B, Nk, Hkv, d))
        # FlashAttention's layout, fp8 scales per head along axis -2.
        kq = clattn.quantize(kx, "q4_0")
        vq = clattn.quantize(vx, "fp8_e4m3", per_head=True)
        kv = kvref.decode("q4_0", kq.data, d)
        vv = kvref.decode("fp8_e4m3", vq.data, d, vq.scale)
        o, lse = clattn.attention(q, kq, vq, layout="bshd", causal="bottom-right",
                                  kv_lens=[40, 7], return_lse=True)
        want, want_lse = self.want(q, kv, vv, [40, 7], causal=True)
        self.check(o, want, F16, "attention, bshd, kv_lens")
        self.check_lse(lse, want_lse, "attention, bshd, kv_lens")
        # [B, heads, N, d], the scales' head axis 1.
        vt = clattn.quantize(np.ascontiguousarray(vx.transpose(0, 2, 1, 3)), "fp8_e4m3",
                             per_head=True, head_axis=1)
        o = clattn.attention(np.ascontiguousarray(q.transpose(0, 2, 1, 3)),
                             np.ascontiguousarray(kq.dequantize().transpose(0, 2, 1, 3)
                                                  ).astype(F16), vt)
        want, _ = self.want(q, kq.dequantize().astype(F16).astype(np.float64), vv, [Nk] * B)
        self.check(o.transpose(0, 2, 1, 3), want, F16, "attention, bhsd, per-head axis 1")
        with self.assertRaisesRegex(ValueError, "head_axis=1"):
            clattn.attention(q.transpose(0, 2, 1, 3), vq, vq)

    def test_errors(self):
        B, H, Hkv, N, d = 2, 4, 2, 16, 32
        q = self.values((B, 1, H, d), F16)
        kc, vc = self.values((B, N, Hkv, d), F16), self.values((B, N, Hkv, d), F16)
        k, v = self.values((B, 2, Hkv, d), F16), self.values((B, 2, Hkv, d), F16)
        pk = self.values((4, 8, Hkv, d), F16)
        table = np.array([[0, 1], [2, 3]], np.int32)
        ro = kc.copy()
        ro.flags.writeable = False
        fa_head1 = clattn.quantize(self.values((B, N, Hkv, d)), "fp8_e4m3", per_head=True,
                                   head_axis=0)
        run = clattn.attention_with_kvcache
        cases = [
            (ValueError, "cache_seqlens", lambda: run(q, kc, vc, cache_seqlens=[3, 17])),
            (ValueError, "cache_seqlens", lambda: run(q, kc, vc, k, v, cache_seqlens=[3, 15])),
            (ValueError, "cache_seqlens", lambda: run(q, kc, vc, cache_seqlens=[1, 2, 3])),
            (TypeError, "cache_seqlens", lambda: run(q, kc, vc, cache_seqlens=[1.5, 2])),
            (ValueError, "cache_seqlens", lambda: run(q, kc, vc, k, v)),
            (TypeError, "k and v", lambda: run(q, kc, vc, k)),
            (TypeError, "q's dtype", lambda: run(q, kc, vc, k.astype(F32), v.astype(F32),
                                                 cache_seqlens=1)),
            (TypeError, "q's dtype", lambda: run(q, kc.astype(F32), vc)),
            (ValueError, "d", lambda: run(q, kc[..., :16], vc, cache_seqlens=1)),
            (ValueError, "multiple", lambda: run(self.values((B, 1, 3, d), F16), kc, vc)),
            (ValueError, "sequences", lambda: run(q, kc[:1], vc[:1])),
            (ValueError, "writable", lambda: run(q, ro, vc, k, v, cache_seqlens=1)),
            (ValueError, "in place", lambda: run(q, kc[..., ::-1], vc, k, v, cache_seqlens=1)),
            (ValueError, "head_axis", lambda: run(q, fa_head1, vc)),
            (ValueError, r"block_table\[1\]\[1\] = 4", lambda: run(
                q, pk, pk, cache_seqlens=[3, 9], block_table=[[0, 1], [2, 4]])),
            (ValueError, r"block_table\[0\]\[0\] = -1", lambda: run(
                q, pk, pk, k, v, cache_seqlens=[0, 0], block_table=[[-1, 1], [2, 3]])),
            (TypeError, "block_table", lambda: run(q, pk, pk, block_table=table * 1.0)),
            (ValueError, "block_table", lambda: run(q, pk, pk, block_table=table[0])),
            (NotImplementedError, "rotary_cos", lambda: run(q, kc, vc, rotary_cos=q)),
            (NotImplementedError, "cache_batch_idx", lambda: run(q, kc, vc,
                                                                 cache_batch_idx=[0, 1])),
            (ValueError, "window_size", lambda: run(q, kc, vc, window_size=(-2, 0))),
        ]
        before = kc.copy()
        for error, text, call in cases:
            with self.assertRaisesRegex(error, text):
                call()
        np.testing.assert_array_equal(kc, before, "a refused call writes nothing")


class Varlen(Cache):
    def packed(self, lens, heads, d, dtype, kind=None):
        """A packed [total, heads, d] tensor (as `kind`), its float64 values
        and cu_seqlens."""
        cu = np.concatenate([[0], np.cumsum(lens)]).astype(np.int32)
        x, vals = self.cache(kind, (int(cu[-1]), heads, d), dtype)
        return x, vals, cu

    def want(self, q, kv, vv, cu_q, cu_k, **kw):
        total, H, _ = q.shape
        o = np.zeros((total, H, vv.shape[-1]))
        lse = np.full((H, total), -np.inf)
        for b in range(len(cu_q) - 1):
            qs, ks = slice(cu_q[b], cu_q[b + 1]), slice(cu_k[b], cu_k[b + 1])
            o[qs], lse[:, qs] = kvref.attention(q[qs], kv[ks], vv[ks], **kw)
        return o, lse

    def test_packed_batches(self):
        cases = [  # dtype, q lens, k lens, H, Hkv, d, K kind, V kind, causal
            (F16, [3, 0, 2, 5, 1], [10, 4, 0, 7, 33], 4, 2, 64, None, None, True),
            (F32, [1, 6], [17, 6], 2, 2, 32, "q8_0", "fp8_head", False),
            (F16, [4, 1, 0], [4, 40, 0], 4, 1, 32, "q4_0", "fp8", True),
        ]
        for dt, ql, kl, H, Hkv, d, kk, vk, causal in cases:
            what = "q %s k %s K %s V %s causal %s" % (ql, kl, kk, vk, causal)
            q, _, cu_q = self.packed(ql, H, d, dt)
            k, kv, cu_k = self.packed(kl, Hkv, d, dt, kk)
            v, vv, _ = self.packed(kl, Hkv, d, dt, vk)
            with self.subTest(what):
                o, lse = clattn.attention_varlen(q, k, v, cu_q, cu_k, max(ql), max(kl),
                                                 causal=causal, return_lse=True)
                want, want_lse = self.want(q, kv, vv, cu_q, cu_k, causal=causal)
                self.check(o, want, dt, what)
                self.check_lse(lse, want_lse, what)
        # out=, max_seqlen past the longest and computed from cu_seqlens.
        out = np.full(q.shape, np.nan, F16)
        got = clattn.attention_varlen(q, k, v, list(cu_q), cu_k, max_seqlen_k=64, out=out,
                                      causal=True)
        self.assertIs(got, out)
        self.check(out, want, F16, "out=, max_seqlen_k 64")

    def test_no_keys_or_no_queries(self):
        q, _, cu_q = self.packed([2, 3], 2, 32, F32)
        k = np.zeros((0, 2, 32), F32)
        o, lse = clattn.attention_varlen(q, k, k, cu_q, [0, 0, 0], return_lse=True)
        np.testing.assert_array_equal(o, 0)
        self.assertTrue(np.all(np.isneginf(lse)))
        k, _, cu_k = self.packed([4, 4], 2, 32, F32)
        o, lse = clattn.attention_varlen(q[:0], k, k, [0, 0, 0], cu_k, return_lse=True)
        self.assertEqual((o.shape, lse.shape), ((0, 2, 32), (2, 0)))

    def test_errors(self):
        q, _, cu_q = self.packed([2, 3], 4, 32, F16)
        k, _, cu_k = self.packed([5, 1], 2, 32, F16)
        run = clattn.attention_varlen
        cases = [
            (ValueError, r"cu_seqlens_q\[2\] = 1 is below", lambda: run(q, k, k, [0, 2, 1], cu_k)),
            (ValueError, "past the 5 tokens of q", lambda: run(q, k, k, [0, 2, 6], cu_k)),
            (ValueError, "negative", lambda: run(q, k, k, [-1, 2, 5], cu_k)),
            (ValueError, "sequences", lambda: run(q, k, k, cu_q, [0, 6])),
            (ValueError, "B >= 1", lambda: run(q, k, k, [0], [0])),
            (TypeError, "integers", lambda: run(q, k, k, cu_q * 1.0, cu_k)),
            (ValueError, "max_seqlen_q = 2 is below", lambda: run(q, k, k, cu_q, cu_k, 2)),
            (ValueError, "max_seqlen_k", lambda: run(q, k, k, cu_q, cu_k, 3, -1)),
            (ValueError, "multiple", lambda: run(q[:, :3], k, k, cu_q, cu_k)),
            (ValueError, "3-D", lambda: run(q[None], k, k, cu_q, cu_k)),
            (TypeError, "q's dtype", lambda: run(q, k.astype(F32), k, cu_q, cu_k)),
            (ValueError, "out must", lambda: run(q, k, k, cu_q, cu_k, out=q[:4])),
            (NotImplementedError, "dropout", lambda: run(q, k, k, cu_q, cu_k, dropout_p=0.1)),
        ]
        for error, text, call in cases:
            with self.assertRaisesRegex(error, text):
                call()


if __name__ == "__main__":
    unittest.main()
