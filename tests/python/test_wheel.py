# SPDX-License-Identifier: MIT
"""The wheel as a user installs it: `pip wheel` of the source tree (the
root pyproject.toml, meson-python, the library built inside it), installed
into a fresh virtual environment, then used from there with no environment
variable pointing anywhere: the package must load the library it carries.
Prints the build and install times and the wheel's size.

The venv has --system-site-packages for numpy, ml_dtypes, pyopencl and
meson-python (no network: --no-index --no-build-isolation). From the venv
it runs `python -m clattn` (devices, predict --json, verify of a shape), the
`clattn` command the wheel installs, the READMEs' quickstart and KV cache
examples, and the Python test modules (test_numpy, test_variants,
test_dlpack, and test_pyopencl where pyopencl imports) from a folder where
the source is not importable.
Exits 77 when this Python cannot make a venv with pip or lacks
meson-python.

Usage: test_wheel.py SOURCE_ROOT
"""
import json
import os
import subprocess
import sys
import time
import zipfile

from venvs import run, scratch_venv

HERE = os.path.dirname(os.path.abspath(__file__))
MODULES = ["test_numpy", "test_variants", "test_dlpack", "test_api"]


def clean_env():
    """The user's environment: no CLATTN_LIBRARY, no PYTHONPATH into the tree."""
    return {k: v for k, v in os.environ.items()
            if k not in ("PYTHONPATH", "CLATTN_LIBRARY", "CLATTN_TEST_PYTHON")}


def build(py, root, dist, env):
    t0 = time.monotonic()
    run([py, "-m", "pip", "wheel", "--no-build-isolation", "--no-index", "--no-deps",
         "--quiet", "-w", dist, root], env=env)
    built = time.monotonic() - t0
    wheels = [f for f in os.listdir(dist) if f.endswith(".whl")]
    if len(wheels) != 1:
        raise SystemExit("FAIL: pip wheel made %r" % wheels)
    path = os.path.join(dist, wheels[0])
    names = zipfile.ZipFile(path).namelist()
    for want in ("clattn/libclattn.so", "clattn/bin/clattn", "clattn/py.typed",
                 "clattn/__main__.py", "clattn/plot_bench.py", "clattn/_kvcache.py",
                 "clattn/_quant.py"):
        if want not in names:
            raise SystemExit("FAIL: %s lacks %s (it holds %s)" % (wheels[0], want, names))
    print("wheel: %s, %d bytes, built in %.1f s" % (wheels[0], os.path.getsize(path), built))
    return path


def main():
    root = os.path.abspath(sys.argv[1])
    with scratch_venv("clattn-wheel-") as (tmp, venv, py):
        if py is None:
            return 77
        env = clean_env()
        wheel = build(py, root, os.path.join(tmp, "dist"), env)
        t0 = time.monotonic()
        run([py, "-m", "pip", "install", "--no-index", "--no-deps", "--quiet", wheel], env=env)
        print("installed in %.1f s" % (time.monotonic() - t0))
        where = run([py, "-c", "import clattn, clattn._core as c; "
                     "print(clattn.__file__); print(c.lib().clattn_path)"],
                    env=env, cwd=tmp, capture_output=True, text=True).stdout.split()
        print("imported from %s, library %s" % tuple(where))
        if not all(w.startswith(venv) for w in where):
            print("FAIL: the package or its library came from outside the venv")
            return 1
        run([py, "-m", "clattn", "devices"], env=env, cwd=tmp)
        shown = run([py, "-m", "clattn", "predict", "-B", "1", "-H", "4", "-N", "256,1024",
                     "--json"], env=env, cwd=tmp, capture_output=True, text=True).stdout
        if len(json.loads(shown)["rows"]) != 2:
            print("FAIL: predict --json from the wheel:\n" + shown)
            return 1
        run([py, "-m", "clattn", "verify", "--shape", "2,4,2,33,70,64", "--causal=br",
             "--dtype", "fp16"], env=env, cwd=tmp)
        run([os.path.join(venv, "bin", "clattn"), "--version"], env=env, cwd=tmp)
        for example in ("quickstart.py", "kvcache.py"):
            run([py, os.path.join(root, "python", "examples", example)], env=env, cwd=tmp)
        tests_env = dict(env, PYTHONPATH=HERE)  # reference.py and the test modules only
        modules = list(MODULES)
        if subprocess.run([py, "-c", "import pyopencl"], capture_output=True).returncode == 0:
            modules.append("test_pyopencl")
        else:
            print("note: pyopencl does not import here; test_pyopencl not run")
        run([py, "-m", "unittest"] + modules, env=tests_env, cwd=tmp)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
