# SPDX-License-Identifier: MIT
"""clattn.attention's variants on numpy arrays against a float64 numpy
reference (reference.attention_variants): softcap, ALiBi, windows, sinks,
bool and additive masks broadcast as PyTorch's, d_v != d, the snippets,
bf16 through ml_dtypes; PyTorch SDPA's and FlashAttention's spellings
(is_causal, enable_gqa, softmax_scale, flash_attn_func's layout and its
bottom-right causal mask); and the argument errors."""
import unittest

import numpy as np

import clattn
import reference as ref

try:
    import ml_dtypes
except ImportError:
    ml_dtypes = None


class Variants(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(20261203)

    def inputs(self, B, H, Hkv, Nq, Nk, d, dv=None, dtype=np.float32):
        dv = d if dv is None else dv
        return (ref.random(self.rng, (B, H, Nq, d), dtype),
                ref.random(self.rng, (B, Hkv, Nk, d), dtype),
                ref.random(self.rng, (B, Hkv, Nk, dv), dtype))

    def check(self, o, want, tol, what):
        self.assertEqual(o.shape, want.shape, what)
        err = np.abs(o.astype(np.float64) - want).max()
        self.assertLess(err, tol, "%s: max abs error %g" % (what, err))

    def test_each_variant(self):
        q, k, v = self.inputs(2, 4, 2, 9, 70, 32)
        slopes = clattn.alibi_slopes(4)
        sinks = self.rng.uniform(-1, 1, 4).astype(np.float32)
        cases = [
            ("softcap", dict(softcap=0.5), dict(softcap=0.5)),
            ("ALiBi", dict(alibi_slopes=slopes, causal="bottom-right"),
             dict(alibi=slopes, causal="bottom-right")),
            ("ALiBi per sequence", dict(alibi_slopes=np.stack([slopes, slopes / 2])),
             dict(alibi=np.stack([slopes, slopes / 2]))),
            ("window", dict(window_size=(17, 0), causal="bottom-right"),
             dict(window=(17, 0), causal="bottom-right")),
            ("window both sides", dict(window_size=(5, 3)), dict(window=(5, 3))),
            ("window, top-left", dict(window_size=(4, -1), causal="top-left"),
             dict(window=(4, -1), causal="top-left")),
            ("sinks", dict(sinks=sinks), dict(sinks=sinks)),
            ("all", dict(window_size=(20, 0), causal="bottom-right", softcap=2.0,
                         alibi_slopes=slopes, sinks=sinks),
             dict(window=(20, 0), causal="bottom-right", softcap=2.0, alibi=slopes,
                  sinks=sinks)),
        ]
        for what, kw, want_kw in cases:
            o, lse = clattn.attention(q, k, v, return_lse=True, **kw)
            want, want_lse = ref.attention_variants(q, k, v, **want_kw)
            self.check(o, want, 1e-4, what)
            finite = np.isfinite(want_lse)
            np.testing.assert_array_equal(np.isfinite(lse), finite, what)
            np.testing.assert_allclose(lse[finite], want_lse[finite], rtol=1e-4, atol=1e-4,
                                       err_msg=what)

    def test_masks(self):
        q, k, v = self.inputs(2, 4, 2, 8, 40, 16)
        keep = self.rng.uniform(0, 1, (2, 1, 8, 40)) > 0.3
        keep[..., 0] = True
        add = self.rng.uniform(-1, 1, (4, 8, 40)).astype(np.float32)  # [H, Nq, Nk]
        add[:, 3] = -np.inf  # row 3 sees nothing: zeros
        row = np.where(self.rng.uniform(0, 1, 40) > 0.5, 0.0, -np.inf).astype(np.float16)
        for what, mask in (("bool [B, 1, Nq, Nk]", keep), ("float32 [H, Nq, Nk]", add),
                           ("float16 [Nk], broadcast over the rows", row[None, :]),
                           ("float64, taken as float32", add.astype(np.float64))):
            o = clattn.attention(q, k, v, attn_mask=mask)
            want, _ = ref.attention_variants(q, k, v, mask=mask)
            self.check(o, want, 1e-4, what)

    def test_head_dim_v_and_layouts(self):
        q, k, v = self.inputs(1, 4, 1, 7, 50, 48, dv=24)
        o = clattn.attention(q, k, v, causal="top-left")
        want, _ = ref.attention_variants(q, k, v, causal="top-left")
        self.check(o, want, 1e-4, "d_v < d")
        # FlashAttention's layout: [B, N, heads, d] in, O the same way out.
        qs, ks, vs = (np.ascontiguousarray(x.transpose(0, 2, 1, 3)) for x in (q, k, v))
        o2 = clattn.attention(qs, ks, vs, causal="top-left", layout="bshd")
        self.assertEqual(o2.shape, (1, 7, 4, 24))
        self.check(o2.transpose(0, 2, 1, 3), want, 1e-4, "layout bshd")

    def test_snippets(self):
        q, k, v = self.inputs(1, 4, 2, 10, 90, 32)
        o = clattn.attention(q, k, v, scale=0.3, score_mod=(
            "float clattn_score_mod(float s, uint b, uint h, uint q, uint k)\n"
            "{ return 1.5f * tanh(s / 1.5f); }"))
        want, _ = ref.attention_variants(q, k, v, scale=0.3, softcap=1.5)
        self.check(o, want, 1e-4, "softcap as score_mod")
        o = clattn.attention(q, k, v, mask_mod=(
            "bool clattn_mask_mod(uint b, uint h, uint q, uint k)\n"
            "{ const int at = (int)q + 80; return (int)k >= at - 7 && (int)k <= at + 2; }"))
        want, _ = ref.attention_variants(q, k, v, window=(7, 2))
        self.check(o, want, 1e-4, "window as mask_mod")
        with self.assertRaises(clattn.ClattnError) as e:
            clattn.attention(q, k, v, score_mod="float clattn_score_mod(float s) { return s +; }")
        self.assertEqual(e.exception.name, "CLATTN_EBUILD")

    @unittest.skipIf(ml_dtypes is None, "ml_dtypes is not installed: bf16 needs its "
                     "numpy dtype (pip install ml-dtypes; .ci/install-deps installs it)")
    def test_bf16(self):
        bf = ml_dtypes.bfloat16
        q, k, v = self.inputs(2, 4, 2, 9, 100, 64, dtype=bf)
        mask = (self.rng.uniform(-1, 1, (2, 4, 9, 100))).astype(bf)
        o = clattn.attention(q, k, v, causal="bottom-right", window_size=(30, 0), attn_mask=mask)
        self.assertEqual(o.dtype, np.dtype(bf))
        want, _ = ref.attention_variants(q.astype(np.float32), k.astype(np.float32),
                                         v.astype(np.float32), causal="bottom-right",
                                         window=(30, 0), mask=mask.astype(np.float32))
        self.check(o, want, 3e-2, "bf16")

    def test_torch_and_flash_spellings(self):
        q, k, v = self.inputs(2, 4, 2, 6, 11, 16)
        want, _ = ref.attention_variants(q, k, v, causal="top-left", scale=0.5)
        self.check(clattn.attention(q, k, v, is_causal=True, softmax_scale=0.5), want, 1e-4,
                   "is_causal, softmax_scale")
        keep = np.tril(np.ones((6, 11), bool))  # PyTorch: True takes part
        self.check(clattn.scaled_dot_product_attention(q, k, v, attn_mask=keep, scale=0.5,
                                                       enable_gqa=True),
                   want, 1e-4, "SDPA, a bool mask True = keep")
        with self.assertRaises(ValueError):  # PyTorch's enable_gqa=False: H = Hkv
            clattn.scaled_dot_product_attention(q, k, v)
        # flash_attn_func: (B, N, heads, d), causal aligned bottom-right.
        fa = clattn.flash_attn_func(*(x.transpose(0, 2, 1, 3) for x in (q, k, v)), causal=True,
                                    window_size=(3, -1), softcap=1.0)
        want, _ = ref.attention_variants(q, k, v, causal="bottom-right", window=(3, -1),
                                         softcap=1.0)
        self.check(fa.transpose(0, 2, 1, 3), want, 1e-4, "flash_attn_func")
        with self.assertRaises(NotImplementedError):
            clattn.flash_attn_func(q, k, v, dropout_p=0.1)

    def test_errors(self):
        q, k, v = self.inputs(1, 2, 1, 4, 6, 8)
        bad = [dict(window_size=(-2, 0)), dict(window_size=3), dict(softcap=-1.0),
               dict(softcap=float("nan")), dict(alibi_slopes=np.ones(3, np.float32)),
               dict(sinks=np.ones((1, 2), np.float32)), dict(attn_mask=np.ones((3, 4, 6), bool)),
               dict(attn_mask=np.ones((4, 6), np.int32)), dict(layout="bsdh"),
               dict(causal=True, is_causal=True), dict(scale=1.0, softmax_scale=1.0),
               dict(score_mod=3)]
        for kw in bad:
            with self.assertRaises((ValueError, TypeError), msg=repr(kw)):
                clattn.attention(q, k, v, **kw)
        with self.assertRaises(clattn.ClattnError):  # the naive path takes no variant
            clattn.attention(q, k, v, softcap=1.0, path="naive")

    def test_predict_variants(self):
        kw = dict(device=False, block_m=64, block_n=64, causal="bottom-right")
        plain = clattn.predict(1, 8, 4096, head_dim=128, **kw)
        window = clattn.predict(1, 8, 4096, head_dim=128, window_size=(511, 0), **kw)
        plain, window = plain.rows[0], window.rows[0]
        self.assertLess(window.decode.computed_pairs, plain.decode.computed_pairs)
        self.assertLess(window.fused.flops, plain.fused.flops)
        masked = clattn.predict(1, 8, 4096, head_dim=128, mask="bool", **kw).rows[0]
        self.assertEqual(masked.fused.bytes - plain.fused.bytes, 8 * plain.decode.computed_pairs)
        self.assertEqual(masked.variant.mask_bytes, 8 * plain.decode.computed_pairs)
        mla = clattn.predict(1, 8, 4096, head_dim=192, head_dim_v=128, **kw).rows[0]
        self.assertEqual(mla.all_heads.endpoint_bytes, 2 * 8 * 4096 * (192 + 128) * 2)


if __name__ == "__main__":
    unittest.main()
