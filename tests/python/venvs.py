# SPDX-License-Identifier: MIT
"""What the install tests (test_venv.py, test_wheel.py) share: a command
echoed and run, and a fresh venv over this interpreter's packages."""
import contextlib
import os
import subprocess
import sys
import tempfile


def run(cmd, **kw):
    print("+ " + " ".join(cmd), flush=True)
    return subprocess.run(cmd, check=True, **kw)


def make_venv(where):
    """A venv at `where` with --system-site-packages (numpy and the rest
    from this interpreter, no network); its python, or None after the
    reason when this Python cannot make one with pip."""
    made = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", where])
    py = os.path.join(where, "bin", "python")
    if made.returncode or subprocess.run([py, "-m", "pip", "--version"],
                                         capture_output=True).returncode:
        print("SKIP: %s cannot make a venv with pip (Debian: python3-venv)" % sys.executable)
        return None
    return py


@contextlib.contextmanager
def scratch_venv(prefix):
    """A scratch folder, removed after, holding a fresh venv (make_venv):
    (folder, venv, its python or None)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as tmp:
        venv = os.path.join(tmp, "venv")
        yield tmp, venv, make_venv(venv)
