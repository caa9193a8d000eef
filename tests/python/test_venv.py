# SPDX-License-Identifier: MIT
"""`pip install ./python` into a fresh virtual environment, then the package
used from there: a venv with --system-site-packages (numpy, setuptools from
the system, no network: --no-index --no-build-isolation), the install from a
copy of python/ (pip builds in the tree it is given), and the quickstart
example run by the venv's interpreter from a directory where the source is
not importable. Exits 77 when this Python cannot make a venv with pip.

Usage: test_venv.py PYTHON_SRC_DIR (with $CLATTN_LIBRARY set)
"""
import os
import shutil
import sys

from venvs import run, scratch_venv


def main():
    src = os.path.abspath(sys.argv[1])
    with scratch_venv("clattn-venv-") as (tmp, venv, py):
        if py is None:
            return 77
        copy = os.path.join(tmp, "src")
        shutil.copytree(src, copy, ignore=shutil.ignore_patterns(
            "build", "*.egg-info", "__pycache__"))
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        run([py, "-m", "pip", "install", "--no-index", "--no-build-isolation", "--quiet", copy],
            env=env)
        where = run([py, "-c", "import clattn; print(clattn.__file__)"], env=env, cwd=tmp,
                    capture_output=True, text=True).stdout.strip()
        print("imported from " + where)
        if not where.startswith(venv):
            print("FAIL: clattn came from %s, not the venv" % where)
            return 1
        shown = run([py, "-m", "pip", "show", "clattn"], env=env, capture_output=True,
                    text=True).stdout
        if "Version: 0.2.0" not in shown:
            print("FAIL: pip show clattn:\n" + shown)
            return 1
        run([py, os.path.join(copy, "examples", "quickstart.py")], env=env, cwd=tmp)
    print("PASS")
    return 0


if __name__ == "__main__":
    sys.exit(main())
