# SPDX-License-Identifier: MIT
"""What the CPU comparison scripts share: where the binaries are, running a
command under nice, the FMA peak measured by `clattn devices --measure`, and
the peers (tools/compare/cpu_peers.py) run with the OpenBLAS settings that
slow numpy removed.

  CLATTN      the clattn tool (default build/cli/clattn, else build/tools/clattn)
  TIME_FUSED  the back-to-back timing harness (build/tests/perf/time_fused)
  TIME_NAIVE  the naive path's stage timer (build/tests/perf/time_naive)
  PEERS_PY    a Python with numpy, JAX and threadpoolctl (default python3)
"""
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))


def binary(var, default, fallback=None):
    path = os.environ.get(var) or os.path.join(ROOT, default)
    if fallback and not os.access(path, os.X_OK):
        path = os.path.join(ROOT, fallback)
    return path


CLATTN = binary("CLATTN", "build/cli/clattn", "build/tools/clattn")
TIME_FUSED = binary("TIME_FUSED", "build/tests/perf/time_fused")
TIME_NAIVE = binary("TIME_NAIVE", "build/tests/perf/time_naive")
PEERS_PY = os.environ.get("PEERS_PY", "python3")

PEER_ENV = dict(os.environ)
PEER_ENV.pop("OPENBLAS_CORETYPE", None)
PEER_ENV.pop("OPENBLAS_L2_SIZE", None)


def run(cmd, env=None):
    """stdout of cmd run under nice from the repository root; exits with
    the command's status and stderr if it fails."""
    out = subprocess.run(["nice"] + cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit("%s: exit %d\n%s" % (" ".join(cmd), out.returncode, out.stderr[-2000:]))
    return out.stdout


def med(xs):
    return statistics.median(xs)


def peak():
    """The fp32 FMA rate, FLOP/s, from `clattn devices --measure --no-sweep`
    into a private cache folder: a figure taken on a busy machine must not
    replace the device's saved one, which predict and bench read."""
    with tempfile.TemporaryDirectory(prefix="clattn-peak-") as d:
        out = run([CLATTN, "devices", "--measure", "--no-sweep"],
                  env=dict(os.environ, XDG_CACHE_HOME=d))
    m = re.search(r"fp32 FMA\s+([\d.]+) (G|T)FLOP/s", out)
    if not m:
        sys.exit("no fp32 FMA figure in clattn devices --measure:\n" + out[-2000:])
    return float(m.group(1)) * (1e12 if m.group(2) == "T" else 1e9)


def peer(args):
    """One tools/compare/cpu_peers.py run: its JSON line."""
    out = run([PEERS_PY, os.path.join(HERE, "cpu_peers.py")] + args, env=PEER_ENV)
    return json.loads(out.strip().splitlines()[-1])


def time_fused(shape, dtype, mask, kernel="auto", reps="5", batches="3", kv_type=None):
    """tests/perf/time_fused: median per-call seconds over the batches,
    CPU seconds per call, and the kernel the library ran; kv_type: K and V
    stored quantized (q8_0, q4_0, fp8_e4m3)."""
    cmd = [TIME_FUSED, shape, dtype, mask, kernel, str(reps), str(batches)]
    if kv_type:  # the options form: the positional one takes no cache (nor the naive path)
        cmd = [TIME_FUSED, "--shape", shape, "--dtype", dtype, "--causal", mask, "--path",
               "fused", "--kernel", kernel, "--reps", str(reps), "--batches", str(batches),
               "--kv-type", kv_type]
    out = json.loads(run(cmd))
    return med(out["times"]), out["cpu_per_call"], out["kernel"]


def verify(shape, dtype, mask, path="fused", kv_type=None):
    """`clattn verify --shape` of one case against the CPU reference (double
    precision; a quantized K and V as stored, kv_type); exits with its
    status if it fails."""
    run([CLATTN, "verify", "--shape", shape, "--dtype", dtype, "--causal", mask, "--path", path] +
        (["--kv-type", kv_type] if kv_type else []))
