#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The library's exported symbols are its public API and nothing else.

Every dynamic symbol libclattn.so defines is a clattn_ function of the
version node clattn.map names (CLATTN_<API major>), and every function a
public header of the library declares with CLATTN_API is among them (the
headers named, e.g. mpi.h for libclattn_mpi; by default every one but
mpi.h, which is libclattn_mpi's). Exits 77 without nm.

Usage: test_symbols.py LIBRARY.so INCLUDE_DIR API_MAJOR [HEADER,...]
"""
import os
import re
import shutil
import subprocess
import sys


def main():
    lib, include, major = sys.argv[1:4]
    only = sys.argv[4].split(",") if len(sys.argv) > 4 else None
    nm = shutil.which("nm")
    if not nm:
        print("SKIP: no nm")
        return 77
    out = subprocess.run([nm, "-D", "--defined-only", lib], check=True,
                         capture_output=True, text=True).stdout
    exported = {}
    for line in out.splitlines():
        parts = line.split()
        if len(parts) != 3:
            continue
        kind, name = parts[1], parts[2]
        if kind == "A":  # the version node itself
            continue
        base, _, version = name.partition("@")
        exported[base] = version.lstrip("@")
    bad = [n for n in exported if not n.startswith("clattn_")]
    if bad:
        print("exported but not clattn_*: " + ", ".join(sorted(bad)))
        return 1
    want_node = "CLATTN_" + major
    unversioned = [n for n, v in exported.items() if v != want_node]
    if unversioned:
        print("not in version node %s: %s" % (want_node, ", ".join(sorted(unversioned))))
        return 1
    declared = set()
    for header in sorted(os.listdir(include)):
        if header.endswith(".h") and (header in only if only else header != "mpi.h"):
            with open(os.path.join(include, header)) as f:
                text = f.read()
            declared |= set(re.findall(r"CLATTN_API\s[^;(]*?\b(clattn_\w+)\s*\(", text))
    missing = sorted(declared - set(exported))
    if missing:
        print("declared CLATTN_API but not exported: " + ", ".join(missing))
        return 1
    print("%d symbols exported, all clattn_* in %s; all %d declared ones among them"
          % (len(exported), want_node, len(declared)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
