#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Runs a Python test of the clattn package with an interpreter that has what
it needs.

meson's python3 may be one without numpy (a pyenv shim, say) while the
system's has numpy and pyopencl (Debian's python3-numpy, python3-pyopencl):
this takes the first of $CLATTN_TEST_PYTHON, the running interpreter,
python3 on PATH and /usr/bin/python3 that imports every module --need
names, points it at the package's source (--src) and the built library
(--lib, as $CLATTN_LIBRARY), and runs the rest of the command line with it.

Exit status: the test's; 77 (skipped) when no interpreter has the modules,
or when --device is given and the library finds no OpenCL device.

--tool names the clattn command-line tool for tests that compare with it
($CLATTN_TEST_TOOL).

Usage: run.py --lib LIB --src PYTHON_DIR [--tool CLATTN] [--need MOD,...] [--device] -- ARGS...
"""
import argparse
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

DEVICE_CHECK = """
import sys, clattn
try:
    clattn.devices()
except clattn.ClattnError as e:
    print("SKIP: %s" % e)
    sys.exit(77 if e.name == "CLATTN_ENODEV" else 1)
"""


def interpreter(need):
    seen = []
    for cand in (os.environ.get("CLATTN_TEST_PYTHON"), sys.executable, shutil.which("python3"),
                 "/usr/bin/python3"):
        if not cand or cand in seen or not os.path.exists(cand):
            continue
        seen.append(cand)
        code = "import " + ", ".join(need) if need else "pass"
        if subprocess.run([cand, "-c", code], capture_output=True).returncode == 0:
            return cand, seen
    return None, seen


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", required=True)
    ap.add_argument("--src", required=True)
    ap.add_argument("--tool")
    ap.add_argument("--need", default="")
    ap.add_argument("--device", action="store_true")
    ap.add_argument("args", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    args = a.args[1:] if a.args[:1] == ["--"] else a.args
    need = [m for m in a.need.split(",") if m]
    python, tried = interpreter(need)
    if not python:
        print("SKIP: no Python among %s imports %s" % (", ".join(tried), ", ".join(need)))
        return 77
    env = dict(os.environ)
    env["CLATTN_LIBRARY"] = os.path.abspath(a.lib)
    env["PYTHONPATH"] = os.pathsep.join([os.path.abspath(a.src), HERE] +
                                        ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
    env["CLATTN_TEST_PYTHON"] = python
    if a.tool:
        env["CLATTN_TEST_TOOL"] = os.path.abspath(a.tool)
    print("python: %s" % python, flush=True)
    if a.device:
        rc = subprocess.run([python, "-c", DEVICE_CHECK], env=env).returncode
        if rc:
            return rc
    return subprocess.run([python] + args, env=env, cwd=HERE).returncode


if __name__ == "__main__":
    sys.exit(main())
