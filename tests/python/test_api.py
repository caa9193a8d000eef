# SPDX-License-Identifier: MIT
"""The package's reach into the C API, against a float64 numpy reference or
the command-line tool: out= (host, in place, strided, "bshd"), q_lens,
clattn.merge against the one-shot result, clattn.plan (fits and refusals),
devices with their ceilings, and clattn.predict against `clattn predict
--json` field for field. Every misuse raises, naming the argument.

The tool is $CLATTN_TEST_TOOL (meson passes the one it built), else the
wheel's (`python -m clattn`); without either the comparison is skipped."""
import json
import math
import os
import subprocess
import sys
import unittest

import numpy as np

import clattn
from clattn import _lib
import reference as ref


def tool_command():
    tool = os.environ.get("CLATTN_TEST_TOOL")
    if tool:
        return [tool]
    if _lib.bundled_tool():
        return [sys.executable, "-m", "clattn"]
    return None


class Out(unittest.TestCase):
    def setUp(self):
        self.rng = np.random.default_rng(27)

    def inputs(self, B=2, H=4, Hkv=2, Nq=7, Nk=11, d=16, dtype=np.float32):
        return (ref.random(self.rng, (B, H, Nq, d), dtype), ref.random(self.rng, (B, Hkv, Nk, d),
                dtype), ref.random(self.rng, (B, Hkv, Nk, d), dtype))

    def test_out_in_place(self):
        q, k, v = self.inputs()
        want, want_lse = ref.attention(q, k, v, "bottom-right")
        o = np.full(q.shape, np.nan, np.float32)
        lse = np.full(q.shape[:3], np.nan, np.float32)
        got = clattn.attention(q, k, v, causal="bottom-right", out=o, out_lse=lse)
        self.assertIs(got[0], o)
        self.assertIs(got[1], lse)
        self.assertLess(np.abs(o - want).max(), ref.tolerance(np.float32))
        self.assertLess(np.abs(lse - want_lse).max(), 1e-4)

    def test_out_strided_and_bshd(self):
        q, k, v = self.inputs(dtype=np.float16)
        want, _ = ref.attention(q, k, v)
        # O written into every other row of a bigger buffer, left untouched between.
        big = np.full((2, 4, 14, 16), 7.0, np.float16)
        view = big[:, :, ::2, :]
        clattn.attention(q, k, v, out=view)
        self.assertLess(np.abs(view.astype(np.float64) - want).max(), ref.tolerance(np.float16))
        self.assertTrue(np.all(big[:, :, 1::2, :] == 7.0))
        # FlashAttention's layout: out is [B, Nq, H, d].
        bshd = np.full((2, 7, 4, 16), np.nan, np.float16)
        clattn.attention(q.transpose(0, 2, 1, 3), k.transpose(0, 2, 1, 3),
                         v.transpose(0, 2, 1, 3), layout="bshd", out=bshd)
        self.assertLess(np.abs(bshd.transpose(0, 2, 1, 3).astype(np.float64) - want).max(),
                        ref.tolerance(np.float16))

    def test_out_misuse(self):
        q, k, v = self.inputs()
        with self.assertRaisesRegex(ValueError, "out must have shape"):
            clattn.attention(q, k, v, out=np.empty((2, 4, 7, 15), np.float32))
        with self.assertRaisesRegex(TypeError, "out must be float32"):
            clattn.attention(q, k, v, out=np.empty(q.shape, np.float16))
        ro = np.empty(q.shape, np.float32)
        ro.flags.writeable = False
        with self.assertRaisesRegex(ValueError, "out must be writable"):
            clattn.attention(q, k, v, out=ro)
        with self.assertRaisesRegex(ValueError, "out: its last dimension"):
            clattn.attention(q, k, v, out=np.empty((2, 4, 7, 32), np.float32)[..., ::2])
        with self.assertRaisesRegex(ValueError, "out_lse must be C-contiguous"):
            clattn.attention(q, k, v, out_lse=np.empty((2, 4, 14), np.float32)[..., ::2])
        # An output over an input: the library refuses, q left as it was.
        before = q.copy()
        with self.assertRaises(clattn.ClattnError) as e:
            clattn.attention(q, k, v, out=q)
        self.assertEqual(e.exception.name, "CLATTN_EINVAL")
        self.assertTrue(np.array_equal(q, before))

    def test_q_lens(self):
        q, k, v = self.inputs(B=3, Nq=9, Nk=12)
        q_lens, kv_lens = [9, 4, 0], [12, 5, 3]
        o, lse = clattn.attention(q, k, v, causal="bottom-right", q_lens=q_lens,
                                  kv_lens=kv_lens, return_lse=True)
        for b in range(3):
            nq, nk = q_lens[b], kv_lens[b]
            if nq:
                want, want_lse = ref.attention(q[b:b + 1, :, :nq], k[b:b + 1, :, :nk],
                                               v[b:b + 1, :, :nk], "bottom-right")
                self.assertLess(np.abs(o[b:b + 1, :, :nq] - want).max(), 1e-4, "b=%d" % b)
                self.assertLess(np.abs(lse[b:b + 1, :, :nq] - want_lse).max(), 1e-4)
            self.assertTrue(np.all(o[b, :, nq:] == 0), "rows past q_lens[%d]" % b)
            self.assertTrue(np.all(np.isneginf(lse[b, :, nq:])))
        with self.assertRaisesRegex(ValueError, r"q_lens\[1\] must be an integer from 0 to 9"):
            clattn.attention(q, k, v, q_lens=[1, 10, 2])
        with self.assertRaisesRegex(ValueError, "q_lens needs 3 lengths"):
            clattn.attention(q, k, v, q_lens=[1])


class Merge(unittest.TestCase):
    def test_against_one_shot(self):
        rng = np.random.default_rng(5)
        for dtype in (np.float32, np.float16):
            q = ref.random(rng, (2, 4, 6, 32), dtype)
            k = ref.random(rng, (2, 2, 50, 32), dtype)
            v = ref.random(rng, (2, 2, 50, 32), dtype)
            whole, whole_lse = clattn.attention(q, k, v, return_lse=True)
            o1, l1 = clattn.attention(q, k[:, :, :20], v[:, :, :20], return_lse=True)
            o2, l2 = clattn.attention(q, k[:, :, 20:], v[:, :, 20:], return_lse=True)
            o, lse = clattn.merge(o1, l1, o2, l2)
            tol = ref.tolerance(dtype)
            self.assertLess(np.abs(o.astype(np.float64) - whole).max(), 2 * tol)
            self.assertLess(np.abs(lse - whole_lse).max(), 1e-4)
            # In place into the first part.
            clattn.merge(o1, l1, o2, l2, out=o1, out_lse=l1)
            self.assertTrue(np.array_equal(o1, o))
            self.assertTrue(np.array_equal(l1, lse))

    def test_empty_side_and_misuse(self):
        o1 = np.ones((3, 8), np.float32)
        l1 = np.zeros(3, np.float32)
        o2 = np.full((3, 8), 5.0, np.float32)
        l2 = np.full(3, -np.inf, np.float32)
        o, lse = clattn.merge(o1, l1, o2, l2)
        self.assertTrue(np.array_equal(o, o1))
        self.assertTrue(np.array_equal(lse, l1))
        with self.assertRaisesRegex(ValueError, "lse2 must have shape"):
            clattn.merge(o1, l1, o2, np.zeros(4, np.float32))
        with self.assertRaisesRegex(TypeError, "lse1 must be float32"):
            clattn.merge(o1, l1.astype(np.float64), o2, l2)
        with self.assertRaisesRegex(ValueError, "must have one shape"):
            clattn.merge(o1, l1, o2[:2], l2[:2])
        with self.assertRaises(clattn.ClattnError):  # out over o2: refused by the library
            clattn.merge(o1, l1, o2, l2, out=o2)


class Plan(unittest.TestCase):
    def test_plan_and_fit(self):
        p = clattn.plan((1, 8, 2, 128, 128, 64), np.float16, causal="bottom-right")
        self.assertTrue(p.fits)
        self.assertEqual(p.path, "fused")
        self.assertTrue(p.kernel.startswith("fused/"), p.kernel)
        self.assertIsNotNone(p.fused)
        self.assertGreater(p.fused.block_n, 0)
        self.assertGreater(p.predicted_peak_bytes, 0)
        naive = clattn.plan((1, 2, 2, 64, 64, 32), "float32", path="naive")
        self.assertEqual(naive.path, "naive")
        self.assertTrue(naive.kernel.startswith("naive/"), naive.kernel)
        # Far past the device's memory: refused before anything exists.
        huge = clattn.plan((64, 64, 64, 1 << 20, 1 << 20, 128), "float16")
        self.assertFalse(huge.fits)
        self.assertTrue(huge.refusal)
        with self.assertRaisesRegex(ValueError, "shape is"):
            clattn.plan((1, 2, 3), "float16")
        with self.assertRaisesRegex(TypeError, "dtype must be"):
            clattn.plan((1, 1, 1, 1, 1, 8), "int8")
        with self.assertRaisesRegex(ValueError, "shape's Nk must be an integer"):
            clattn.plan((1, 1, 1, 1, 0, 8), "float16")


class Devices(unittest.TestCase):
    def test_ceilings(self):
        devs = clattn.devices(ceilings=True)
        self.assertGreater(len(devs), 0)
        for d in devs:
            self.assertIsInstance(d, clattn.Device)
            c = d.ceilings
            self.assertGreater(c.global_mem_bytes.value, 0)
            self.assertNotEqual(c.global_mem_bytes.source, "unknown")
            for f in (c.bandwidth, c.flops_f32, c.flops_f16, c.launch_latency_s):
                self.assertEqual(f.value is None, f.source == "unknown")
        self.assertIsNone(clattn.devices()[0].ceilings)
        # The same figures as the tool's `devices --json` reads them.
        cmd = tool_command()
        if cmd is None:
            return
        env = {k: v for k, v in os.environ.items() if k != "CLATTN_LIBRARY"} \
            if cmd[0] == sys.executable else os.environ
        listed = json.loads(subprocess.run(cmd + ["devices", "--json"], capture_output=True,
                                           text=True, env=env, check=True).stdout)["devices"]
        self.assertEqual(len(listed), len(devs))
        for d, want in zip(devs, listed):
            self.assertEqual(d.index, want["index"])
            for name, fig in want["ceilings"].items():
                got = getattr(d.ceilings, name)
                self.assertEqual(got.source, fig["source"], name)
                if fig["value"] is None:
                    self.assertIsNone(got.value, name)
                else:
                    self.assertTrue(math.isclose(got.value, fig["value"], rel_tol=1e-12), name)


def close(a, b, path="$"):
    """Equal JSON values, numbers to 1e-12 relative (both sides print %.17g)."""
    if isinstance(a, dict) and isinstance(b, dict):
        if set(a) != set(b):
            return "%s: keys %s vs %s" % (path, sorted(a), sorted(b))
        for key in a:
            why = close(a[key], b[key], path + "." + key)
            if why:
                return why
        return None
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return "%s: %d vs %d items" % (path, len(a), len(b))
        for i, (x, y) in enumerate(zip(a, b)):
            why = close(x, y, "%s[%d]" % (path, i))
            if why:
                return why
        return None
    if isinstance(a, bool) or isinstance(b, bool) or a is None or b is None or \
            isinstance(a, str) or isinstance(b, str):
        return None if a == b else "%s: %r vs %r" % (path, a, b)
    if math.isclose(a, b, rel_tol=1e-12, abs_tol=0):
        return None
    return "%s: %r vs %r" % (path, a, b)


class PredictAgainstTool(unittest.TestCase):
    FIGS = ["--bandwidth", "2e11", "--peak", "3e12"]
    PYFIGS = {"bandwidth": 2e11, "peak_flops": 3e12}

    def tool_json(self, args):
        cmd = tool_command()
        if cmd is None:
            self.skipTest("no clattn tool (neither $CLATTN_TEST_TOOL nor the wheel's)")
        env = {k: v for k, v in os.environ.items() if k != "CLATTN_LIBRARY"} \
            if cmd[0] == sys.executable else os.environ
        r = subprocess.run(cmd + ["predict"] + args + ["--json"], capture_output=True,
                           text=True, env=env)
        self.assertEqual(r.returncode, 0, r.stderr)
        d = json.loads(r.stdout)
        for key in ("tool", "version", "command"):
            d.pop(key)
        return d

    def compare(self, args, **kw):
        want = self.tool_json(args)
        got = clattn.predict(**kw).as_dict()
        # The tool's variant description is prose for its table; the
        # fields beside it carry the same facts.
        for r in want["rows"]:
            if "variant" in r:
                r["variant"].pop("variant")
        why = close(got, want)
        self.assertIsNone(why, "predict %s: %s" % (" ".join(args), why))

    def test_lists_on_the_device(self):
        self.compare(["-B", "8", "-H", "32", "-N", "1024,4096,16384"] + self.FIGS,
                     batch=8, heads=32, q_len=[1024, 4096, 16384], figures=self.PYFIGS)

    def test_decode_gqa_kv_lens(self):
        self.compare(["-B", "3", "-H", "16", "--kv-heads", "4", "-d", "64", "-N",
                      "4096,65536", "--q-len", "1", "--kv-lens", "4096,100,0", "--causal=br",
                      "--split-kv", "4"] + self.FIGS,
                     batch=3, heads=16, kv_heads=4, head_dim=64, q_len=1,
                     kv_len=[4096, 65536], kv_lens=[4096, 100, 0], causal="bottom-right",
                     splits=4, figures=self.PYFIGS)

    def test_preset_without_device(self):
        self.compare(["--preset", "seed", "--dtype", "fp32", "--nq", "1000", "--nk", "3000",
                      "--block-m", "32", "--workspace", "1M"],
                     batch=8, heads=32, q_len=1000, kv_len=3000, dtype="float32",
                     preset="seed", device=False, block_m=32, naive_workspace_bytes=1 << 20)

    def test_variants(self):
        self.compare(["-B", "2", "-H", "8", "-d", "192", "--dv", "128", "-N", "2048",
                      "--window", "255,0", "--causal=tl", "--softcap", "30", "--alibi",
                      "--mask", "random"] + self.FIGS,
                     batch=2, heads=8, head_dim=192, head_dim_v=128, q_len=2048,
                     window_size=(255, 0), causal="top-left", softcap=30.0, alibi=True,
                     mask="bool", mask_batch=2, mask_heads=1, figures=self.PYFIGS)

    def test_with_recorded_efficiencies(self):
        # Efficiencies recorded into a cache of its own (another process,
        # so that this one's contexts keep theirs): both sides then give
        # the kernel, its efficiency and the time to expect.
        import tempfile
        with tempfile.TemporaryDirectory(prefix="clattn-eff-") as cache:
            env = dict(os.environ, XDG_CACHE_HOME=cache)
            record = (
                "import clattn\n"
                "L, ctx = clattn.lib(), clattn._core.context_for(None)\n"
                "for path, frac in (('fused', 0.5), ('naive', 0.25)):\n"
                "    k = clattn.plan((2, 8, 8, 512, 512, 64), 'float16', path=path).kernel\n"
                "    for bound in (1, 2):\n"
                "        rc = L.clattn_tune_record_efficiency(ctx.handle, k.split(' ')[0].encode(),"
                " 1, 64, bound, frac / bound)\n"
                "        assert rc == 0, rc\n"
                "        got = clattn.kernel_efficiency(k, 'fp16', 64, ('memory', 'compute')"
                "[bound - 1])\n"
                "        assert got == frac / bound, (k, bound, got)\n"
                "assert clattn.kernel_efficiency('fused/none', 'fp16', 64) is None\n")
            subprocess.run([sys.executable, "-c", record], env=env, check=True)
            cmd = tool_command()
            if cmd is None:
                self.skipTest("no clattn tool")
            args = ["predict", "-B", "2", "-H", "8", "-d", "64", "-N", "512,2048", "--json"] + \
                self.FIGS
            want = json.loads(subprocess.run(cmd + args, env=env, capture_output=True, text=True,
                                             check=True).stdout)
            for key in ("tool", "version", "command"):
                want.pop(key)
            got = json.loads(subprocess.run(
                [sys.executable, "-c", "import clattn, json; print(json.dumps(clattn.predict("
                 "2, 8, [512, 2048], head_dim=64, figures=%r).as_dict()))" % self.PYFIGS],
                env=env, capture_output=True, text=True, check=True).stdout)
        why = close(got, want)
        self.assertIsNone(why, why)
        fused = want["rows"][0]["fused"]
        self.assertTrue(fused["kernel"].startswith("fused/"))
        self.assertEqual(fused["efficiency"], 0.5 / {"memory": 1, "compute": 2}[fused["bound"]])
        self.assertAlmostEqual(fused["expected_time_s"], fused["time_s"] / fused["efficiency"])

    def test_bf16(self):
        self.compare(["-B", "1", "-H", "4", "-N", "512", "--dtype", "bf16"] + self.FIGS,
                     batch=1, heads=4, q_len=512, dtype="bfloat16", figures=self.PYFIGS)


class PredictArguments(unittest.TestCase):
    def test_named_results_and_misuse(self):
        p = clattn.predict(8, 32, [1024, 4096, 16384], device=False, preset="seed")
        self.assertIsInstance(p, clattn.Prediction)
        self.assertEqual([r.q_len for r in p.rows], [1024, 4096, 16384])
        self.assertEqual(p.rows[2].naive.fit, "exceeds capacity")
        self.assertEqual(p.limits.scores_in_memory.n, 14188)
        self.assertEqual(p.device.bandwidth_bytes_per_s.source, "preset")
        with self.assertRaisesRegex(ValueError, "q_len and kv_len lists"):
            clattn.predict(1, 1, [1, 2], [3], device=False)
        with self.assertRaisesRegex(ValueError, r"q_len\[1\] must be an integer"):
            clattn.predict(1, 1, [1, 0], device=False)
        with self.assertRaisesRegex(ValueError, "q_len must not be empty"):
            clattn.predict(1, 1, [], device=False)
        with self.assertRaisesRegex(ValueError, "preset must be"):
            clattn.predict(1, 1, 8, device=False, preset="h200")
        with self.assertRaisesRegex(ValueError, "bound must be"):
            clattn.kernel_efficiency("fused/cpu", bound="both")
        with self.assertRaises(clattn.ClattnError):  # not a kernel's name
            clattn.kernel_efficiency("cpu")


if __name__ == "__main__":
    unittest.main()
