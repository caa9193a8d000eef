# SPDX-License-Identifier: MIT
"""`python -m clattn ARGS` (and the `clattn` command a wheel installs): the
clattn command-line tool the package carries (devices, predict, run,
verify, bench, tune), started with the package's own library."""
import os
import sys

from . import _lib


def main(argv=None):
    """Replaces this process with the bundled tool; returns 2 when the
    package carries none (an install of python/ alone, beside a system
    libclattn: the system's `clattn` tool is then the one to run)."""
    args = sys.argv[1:] if argv is None else list(argv)
    tool = _lib.bundled_tool()
    if tool is None:
        sys.stderr.write("clattn: this install of the Python package carries no command-line "
                         "tool (the wheel that `pip install .` builds from a clone does); run "
                         "the clattn tool installed with the library instead\n")
        return 2
    env = dict(os.environ)
    # The tool finds the package's library through the loader path: the
    # wheel builder rewrites its RPATH to one relative to the build tree.
    env["LD_LIBRARY_PATH"] = os.pathsep.join(
        [_lib.PACKAGE_DIR] + ([env["LD_LIBRARY_PATH"]] if env.get("LD_LIBRARY_PATH") else []))
    sys.stdout.flush()
    sys.stderr.flush()
    os.execve(tool, ["clattn"] + args, env)
    return 1  # not reached: execve returns only by raising


if __name__ == "__main__":
    sys.exit(main())
