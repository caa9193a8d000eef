# SPDX-License-Identifier: MIT
"""clattn.attention on numpy arrays against a float64 numpy reference, on
random inputs: dtypes, grouped heads, Nq != Nk, both masks, both paths,
strided views (read in place or copied), per-sequence lengths, split keys,
the LSE; the errors; clattn.devices() and clattn.predict()."""
import unittest

import numpy as np

import clattn
from clattn import _attention
import reference as ref


class Attention(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(20261201)

    def check(self, o, want, dtype, what):
        self.assertEqual(o.dtype, np.dtype(dtype), what)
        self.assertEqual(o.shape, want.shape, what)
        err = np.abs(o.astype(np.float64) - want).max()
        self.assertLess(err, ref.tolerance(dtype), "%s: max abs error %g" % (what, err))

    def test_device_group(self):
        """device=[0, 0] (two contexts on the default device, split as two
        devices would be): a decoding step by keys, a prefill by query rows,
        strided views made contiguous, and what stays on one device."""
        first = 0
        for (B, H, Hkv, Nq, Nk, d), causal, scheme in (
                ((2, 4, 2, 1, 300, 32), "bottom-right", "keys"),
                ((1, 4, 2, 70, 90, 32), "bottom-right", "queries"),
                ((1, 2, 2, 40, 40, 16), "top-left", "queries")):
            q = ref.random(self.rng, (B, H, Nq, d), np.float32)
            k = ref.random(self.rng, (B, Hkv, Nk, 2 * d), np.float32)[..., ::2]  # a view
            v = ref.random(self.rng, (B, Hkv, Nk, d), np.float32)
            want, want_lse = ref.attention(q, k, v, causal)
            info = {}
            o, lse = clattn.attention(q, k, v, causal=causal, return_lse=True,
                                      device=[first, first], info=info)
            self.check(o, want, np.float32, "group %s" % scheme)
            self.assertLess(np.abs(lse - want_lse).max(), 1e-4)
            self.assertEqual(info["group"]["scheme"], scheme)
            self.assertEqual(info["group"]["devices"], 2)
            self.assertEqual(sum(n for _, n in info["group"]["shares"]),
                             Nk if scheme == "keys" else Nq)
        # A mask tensor runs on the first device alone, and says why.
        q = ref.random(self.rng, (1, 2, 8, 16), np.float32)
        k = ref.random(self.rng, (1, 2, 8, 16), np.float32)
        info = {}
        clattn.attention(q, k, k, attn_mask=np.zeros((8, 8), np.float32), device="%d,%d" % (
            first, first), info=info)
        self.assertEqual(info["group"]["scheme"], "one")
        self.assertIn("mask", info["group"]["note"])
        with self.assertRaises(ValueError):
            clattn.attention(q, k, k, device=[])
        # spread=: the ring asked for (each device's rows against the key
        # blocks in turn), a scheme that cannot split the call refused, an
        # unknown one refused, and spread= without a group.
        q = ref.random(self.rng, (2, 4, 50, 16), np.float32)
        k = ref.random(self.rng, (2, 2, 70, 16), np.float32)
        v = ref.random(self.rng, (2, 2, 70, 16), np.float32)
        want, _ = ref.attention(q, k, v, "bottom-right")
        info = {}
        o = clattn.attention(q, k, v, causal="bottom-right", device=[first, first, first],
                             spread="ring", info=info)
        self.check(o, want, np.float32, "group ring")
        self.assertEqual(info["group"]["scheme"], "ring")
        with self.assertRaises(clattn.ClattnError):
            clattn.attention(q[:, :, :1], k, v, device=[first, first], spread="queries")
        with self.assertRaises(clattn.ClattnError):
            clattn.attention(q, k, v, device=[first, first], spread="sideways")
        with self.assertRaises(ValueError):
            clattn.attention(q, k, v, spread="ring")
        o = clattn.attention(q, k, v, causal="bottom-right", device=[first, first], info=info)
        self.assertEqual(info["group"]["scheme"], "queries")  # auto again

    def test_shapes_masks_paths(self):
        cases = [  # B, H, Hkv, Nq, Nk, d
            (1, 1, 1, 1, 1, 1), (2, 4, 2, 5, 9, 16), (1, 6, 3, 33, 17, 40),
            (2, 2, 1, 17, 40, 7), (1, 8, 1, 3, 130, 64)]
        # Each (dtype, shape, mask) on one path, the paths by turns: every
        # combination of two of them still meets both paths (the kernels
        # themselves are the C tests' to sweep).
        for t, dtype in enumerate((np.float32, np.float16)):
            for c, (B, H, Hkv, Nq, Nk, d) in enumerate(cases):
                q = ref.random(self.rng, (B, H, Nq, d), dtype)
                k = ref.random(self.rng, (B, Hkv, Nk, d), dtype)
                v = ref.random(self.rng, (B, Hkv, Nk, d), dtype)
                for m, causal in enumerate((None, "top-left", "bottom-right")):
                    want, _ = ref.attention(q, k, v, causal)
                    for path in [("naive", "fused")[(t + c + m) % 2]]:
                        info = {}
                        o = clattn.attention(q, k, v, causal=causal, path=path, info=info)
                        self.assertEqual(info["path"], path)
                        self.check(o, want, dtype, "%s %s %s %s" % (
                            np.dtype(dtype), (B, H, Hkv, Nq, Nk, d), causal, path))

    def test_scale(self):
        q, k, v = (ref.random(self.rng, (1, 2, 7, 8), np.float32) for _ in range(3))
        want, _ = ref.attention(q, k, v, scale=0.7)
        self.check(clattn.attention(q, k, v, scale=0.7), want, np.float32, "scale 0.7")

    def test_strided_views(self):
        B, H, Hkv, Nq, Nk, Nmax, d = 2, 4, 2, 6, 11, 20, 16
        # Q stored [B, Nq, H, d] (tokens outer), viewed as [B, H, Nq, d]: mapped in place.
        q_bnhd = ref.random(self.rng, (B, Nq, H, d), np.float32)
        q = q_bnhd.transpose(0, 2, 1, 3)
        self.assertIsNotNone(_attention._layout(q.shape, q.strides, 4))
        # K and V: the first Nk tokens of a cache of Nmax, in place.
        kc = ref.random(self.rng, (B, Hkv, Nmax, d), np.float32)
        vc = ref.random(self.rng, (B, Hkv, Nmax, d), np.float32)
        k, v = kc[:, :, :Nk], vc[:, :, :Nk]
        self.assertIsNotNone(_attention._layout(k.shape, k.strides, 4))
        want, _ = ref.attention(q, k, v, "bottom-right")
        self.check(clattn.attention(q, k, v, causal="bottom-right"), want, np.float32,
                   "transposed Q, cache-view K and V")
        # Views clattn cannot read in place are copied: every other element
        # of d, reversed tokens, a broadcast batch.
        wide = ref.random(self.rng, (B, H, Nq, 2 * d), np.float32)
        q2 = wide[..., ::2]
        self.assertIsNone(_attention._layout(q2.shape, q2.strides, 4))
        k2 = kc[:, :, Nk - 1::-1]
        self.assertIsNone(_attention._layout(k2.shape, k2.strides, 4))
        v2 = np.broadcast_to(vc[:1, :, :Nk], (B, Hkv, Nk, d))
        self.assertIsNone(_attention._layout(v2.shape, v2.strides, 4))
        want, _ = ref.attention(q2, k2, v2, "top-left")
        self.check(clattn.attention(q2, k2, v2, causal="top-left"), want, np.float32,
                   "strided d, reversed tokens, broadcast batch")
        # fp16 views too.
        qh, kh, vh = (x.astype(np.float16) for x in (q_bnhd, kc, vc))
        qv, kv, vv = qh.transpose(0, 2, 1, 3), kh[:, :, 3:3 + Nk], vh[:, :, 3:3 + Nk]
        want, _ = ref.attention(qv, kv, vv)
        self.check(clattn.attention(qv, kv, vv), want, np.float16, "fp16 views")

    def test_lengths_split_lse(self):
        B, H, Hkv, Nq, Nk, d = 3, 4, 1, 2, 300, 32
        q = ref.random(self.rng, (B, H, Nq, d), np.float32)
        k = ref.random(self.rng, (B, Hkv, Nk, d), np.float32)
        v = ref.random(self.rng, (B, Hkv, Nk, d), np.float32)
        lens = [1, 300, 77]
        for split in (0, 1, 3):
            for causal in (None, "bottom-right"):
                info = {}
                o, lse = clattn.attention(q, k, v, causal=causal, kv_lens=lens, split_kv=split,
                                          return_lse=True, path="fused", info=info)
                want, want_lse = ref.attention(q, k, v, causal, kv_lens=lens)
                what = "kv_lens %s split %d %s" % (lens, split, causal)
                self.check(o, want, np.float32, what)
                self.assertEqual(lse.dtype, np.float32)
                self.assertEqual(lse.shape, (B, H, Nq))
                seen = np.isfinite(want_lse)
                np.testing.assert_array_equal(np.isfinite(lse), seen, what)
                self.assertLess(np.abs(lse[seen] - want_lse[seen]).max(), 1e-4, what)
                if split == 3:
                    self.assertGreaterEqual(info["splits"], 1)

    def test_errors(self):
        q = ref.random(self.rng, (1, 3, 4, 8), np.float32)
        k = ref.random(self.rng, (1, 2, 5, 8), np.float32)
        with self.assertRaises(clattn.ClattnError) as e:  # H = 3 is no multiple of Hkv = 2
            clattn.attention(q, k, k)
        self.assertEqual(e.exception.name, "CLATTN_EINVAL")
        self.assertIn("invalid argument", str(e.exception))
        self.assertTrue(e.exception.detail)
        k1 = k[:, :1]
        with self.assertRaisesRegex(ValueError, r"kv_lens\[0\] must be an integer from 0 to 5"):
            clattn.attention(q, k1, k1, kv_lens=[6])
        with self.assertRaises(clattn.ClattnError):
            clattn.attention(q, k1, k1, kernel="no-such-kernel")
        with self.assertRaises(TypeError):
            clattn.attention(q.astype(np.float64), k1, k1)
        with self.assertRaises(TypeError):
            clattn.attention(q, k1.astype(np.float16), k1)
        with self.assertRaises(ValueError):
            clattn.attention(q, k1, k1[:, :, :4])
        with self.assertRaises(ValueError):
            clattn.attention(q, k1, k1, causal="sideways")
        with self.assertRaises(ValueError):
            clattn.attention(q, k1, k1, scale=-1)
        with self.assertRaises(ValueError):
            clattn.attention(q[0], k1, k1)
        with self.assertRaises(ValueError):
            clattn.attention(q, k1, k1, kv_lens=[1, 2])


class Devices(unittest.TestCase):
    def test_listing_and_selection(self):
        devs = clattn.devices()
        self.assertGreater(len(devs), 0)
        for i, d in enumerate(devs):
            self.assertEqual(d.index, i)
            self.assertIn(": ", d.name)
            self.assertIn(d.type, ("GPU", "CPU", "accelerator", "other"))
        rng = np.random.default_rng(3)
        q, k, v = (ref.random(rng, (1, 1, 3, 4), np.float32) for _ in range(3))
        want, _ = ref.attention(q, k, v)
        for sel in (0, devs[0].name.split(": ")[1][:6]):
            o = clattn.attention(q, k, v, device=sel)
            self.assertLess(np.abs(o - want).max(), 1e-4)
        with self.assertRaises(clattn.ClattnError) as e:
            clattn.attention(q, k, v, device="no such device anywhere")
        self.assertEqual(e.exception.name, "CLATTN_ENODEV")

    def test_versions(self):
        self.assertEqual(clattn.api_version()[0], 1)
        self.assertRegex(clattn.library_version(), r"^\d+\.\d+\.\d+$")


class Predict(unittest.TestCase):
    SEED = dict(capacity_bytes=192 * 2 ** 30, cache_bytes=256 * 2 ** 20, bandwidth=5e12,
                peak_flops=1e15)

    def test_seed(self):
        # The seed's shape on its device figures: traffic ratio 1 + N/d, and
        # the naive path's S and P no longer fit at N = 16384.
        for n, fits in ((4096, "fits"), (16384, "exceeds capacity")):
            p = clattn.predict(8, 32, n, head_dim=128, device=False, figures=self.SEED)
            r = p.rows[0]
            self.assertAlmostEqual(r.per_head.ratio, 1 + n / 128)
            t = r.all_heads
            self.assertEqual(t.score_bytes, 2 * 8 * 32 * n * n)
            self.assertEqual(t.naive_bytes, t.endpoint_bytes + 4 * t.score_bytes)
            self.assertEqual(r.naive.fit, fits)
            self.assertEqual(r.fused.fit, "fits")
            self.assertAlmostEqual(p.device.ridge_flop_per_byte, 200)
            self.assertGreater(r.naive.time_s, r.fused.time_s)
            self.assertEqual(p.device.bandwidth_bytes_per_s.source, "given")

    def test_decode(self):
        # K and V once per KV head at each sequence's length, Q and O, and
        # the split's fp32 workspace written and read (docs/MODEL.md).
        B, H, Hkv, Nk, d = 2, 32, 8, 65536, 128
        p = clattn.predict(B, H, 1, Nk, d, kv_heads=Hkv, device=False, figures=self.SEED,
                           kv_lens=[Nk, 1000], splits=4)
        kv = 2 * Hkv * (Nk + 1000) * d * 2
        qo = 2 * B * H * 1 * d * 2
        ws = B * H * 1 * 4 * (d + 2) * 4
        r = p.rows[0]
        self.assertEqual(r.decode.split_workspace_bytes, ws)
        self.assertEqual(r.fused.bytes, kv + qo + 2 * ws)
        self.assertAlmostEqual(r.fused.time_s, r.fused.bytes / 5e12, delta=1e-5)
        with self.assertRaises(ValueError):
            clattn.predict(B, H, 1, Nk, d, kv_heads=Hkv, device=False, kv_lens=[1])

    def test_on_the_device(self):
        p = clattn.predict(1, 2, 1000, 900, 64, kv_heads=1, causal="bottom-right")
        self.assertNotEqual(p.device.name, "none")
        self.assertNotEqual(p.device.capacity_bytes.source, "unknown")
        self.assertGreater(p.device.capacity_bytes.value, 0)
        self.assertLess(p.rows[0].causal.visited_fraction, 1)
        with self.assertRaises(ValueError):
            clattn.predict(1, 1, 8, figures={"speed": 1})


class Arguments(unittest.TestCase):
    """Every numeric argument is range-checked before the ctypes call, and
    the error names it: a ctypes field would store an out-of-range value
    modulo its width, and a float32 rounds a tiny scale to 0 (which the
    library reads as 1/sqrt(d))."""

    def setUp(self):
        rng = np.random.default_rng(7)
        self.q, self.k, self.v = (ref.random(rng, (1, 2, 5, 8), np.float32) for _ in range(3))

    def raises(self, exc, name, fn, *args, **kw):
        with self.assertRaises(exc) as e:
            fn(*args, **kw)
        self.assertIn(name, str(e.exception))

    def test_scale(self):
        # What `clattn run --scale` refuses: not a normal float32, not positive.
        for bad in (1e-50, 5e-46, 1e-40, 0, 0.0, -1.0, float("inf"), float("nan"), 1e39):
            self.raises(ValueError, "scale", clattn.attention, self.q, self.k, self.v, scale=bad)
        for bad in ("0.5", True):
            self.raises(TypeError, "scale", clattn.attention, self.q, self.k, self.v, scale=bad)
        # A scale a float32 holds is used as given, not replaced by 1/sqrt(d).
        want, _ = ref.attention(self.q, self.k, self.v, scale=2e-38)
        o = clattn.attention(self.q, self.k, self.v, scale=2e-38)
        self.assertLess(np.abs(o - want).max(), 1e-4)
        o = clattn.attention(self.q, self.k, self.v, scale=np.float32(0.7))
        want, _ = ref.attention(self.q, self.k, self.v, scale=0.7)
        self.assertLess(np.abs(o - want).max(), 1e-4)

    def test_attention_counts(self):
        for bad in (-1, 2 ** 32):
            self.raises(ValueError, "split_kv", clattn.attention, self.q, self.k, self.v,
                        split_kv=bad)
        self.raises(TypeError, "split_kv", clattn.attention, self.q, self.k, self.v, split_kv=1.5)
        for bad in ([2 ** 33], [-1], [2 ** 70]):
            self.raises(ValueError, "kv_lens", clattn.attention, self.q, self.k, self.v,
                        kv_lens=bad)
        self.raises(TypeError, "kv_lens", clattn.attention, self.q, self.k, self.v,
                    kv_lens=[2.5])
        empty = np.zeros((1, 2, 0, 8), np.float32)
        self.raises(ValueError, "Nq", clattn.attention, empty, self.k, self.v)

    def test_attention_cl_numbers(self):
        # Checked before the queue or the buffers are used.
        for shape, name in (((1, 1, 1, 0, 4, 8), "Nq"), ((1, -1, 1, 2, 4, 8), "H"),
                            ((2 ** 64, 1, 1, 2, 4, 8), "B")):
            self.raises(ValueError, name, clattn.attention_cl, None, None, None, None, None,
                        shape=shape, dtype=np.float32)
        self.raises(TypeError, "d", clattn.attention_cl, None, None, None, None, None,
                    shape=(1, 1, 1, 2, 4, 8.0), dtype=np.float32)
        self.raises(ValueError, "token_stride", clattn.attention_cl, None, None, None, None,
                    None, shape=(1, 1, 1, 2, 4, 8), dtype=np.float32,
                    layouts={"q": (16, 16, -8, 0)})

    def test_predict_numbers(self):
        seed = Predict.SEED
        # kv_lens past 32 bits are refused, not modelled as their low 32 bits.
        self.raises(ValueError, "kv_lens", clattn.predict, 2, 32, 1, 2 ** 34, 128,
                    device=False, figures=seed, kv_lens=[1, 2 ** 33])
        self.raises(ValueError, "kv_lens", clattn.predict, 2, 32, 1, 4096, 128,
                    device=False, kv_lens=[1, -1])
        # Each at most kv_len, as `clattn predict --kv-lens` requires.
        self.raises(ValueError, "kv_lens", clattn.predict, 2, 32, 1, 4096, 128,
                    device=False, kv_lens=[1, 4097])
        for name, kw in (("batch", dict(batch=0)), ("heads", dict(heads=-1)),
                         ("q_len", dict(q_len=0)), ("kv_len", dict(kv_len=0)),
                         ("head_dim", dict(head_dim=0)), ("kv_heads", dict(kv_heads=0)),
                         ("batch", dict(batch=2 ** 64)), ("splits", dict(splits=-1)),
                         ("splits", dict(splits=2 ** 32)), ("block_m", dict(block_m=-64))):
            args = dict(batch=1, heads=2, q_len=16, kv_len=16, head_dim=64)
            args.update(kw)
            self.raises(ValueError, name, clattn.predict, device=False, **args)
        self.raises(TypeError, "q_len", clattn.predict, 1, 2, 16.5, device=False)
        self.raises(TypeError, "batch", clattn.predict, True, 2, 16, device=False)
        for key, bad in (("capacity_bytes", -1), ("capacity_bytes", 2 ** 64),
                         ("bandwidth", float("inf")), ("peak_flops", float("nan")),
                         ("launch_latency_s", -1e-6)):
            self.raises(ValueError, key, clattn.predict, 1, 2, 16, device=False,
                        figures={key: bad})

    def test_predict_fp16_rate(self):
        from clattn import _lib, _model
        F16, F32 = 1, 0
        c = _lib.Ceilings()
        c.flops_f32.value, c.flops_f32.source = 1e11, 1
        # No fp16 figure: the fp32 rate stands in, as the command-line tool does.
        fig, is_fp32 = _model.peak_figure(c, F16)
        self.assertEqual((fig.value, is_fp32), (1e11, True))
        self.assertEqual(_model.peak_figure(c, F32)[0].value, 1e11)
        c.flops_f16.value, c.flops_f16.source = 5e11, 1
        fig, is_fp32 = _model.peak_figure(c, F16)
        self.assertEqual((fig.value, is_fp32), (5e11, False))
        # On the device: fp16 is priced whenever fp32 is.
        p32 = clattn.predict(1, 2, 512, head_dim=64, dtype="float32")
        p16 = clattn.predict(1, 2, 512, head_dim=64, dtype="float16")
        if p32.device.peak_flops.source != "unknown":
            self.assertNotEqual(p16.device.peak_flops.source, "unknown")
            self.assertNotEqual(p16.rows[0].fused.bound, "unknown")
            self.assertGreater(p16.rows[0].fused.time_s, 0)


if __name__ == "__main__":
    unittest.main()
