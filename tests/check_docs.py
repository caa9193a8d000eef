#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The README's code is code the tests build and run.

A fenced block in README.md preceded by a line `<!-- from PATH -->` (or
`<!-- from PATH#NAME -->`) must equal, up to common indentation, the lines
of PATH between the markers `README: begin` and `README: end` (`README:
begin NAME`, `README: end NAME`), which sit in comments there. The README
must quote examples/attention.c and python/examples/quickstart.py that way.
Also: python/pyproject.toml's version is include/clattn/version.h's.

Usage: check_docs.py SOURCE_ROOT
"""
import os
import re
import sys
import textwrap

REQUIRED = {"examples/attention.c", "python/examples/quickstart.py"}


def region(path, name):
    begin = "README: begin" + (" " + name if name else "")
    end = "README: end" + (" " + name if name else "")
    lines, inside, found = [], False, False
    with open(path) as f:
        for line in f:
            text = line.rstrip("\n")
            if re.search(re.escape(begin) + r"(\s|\*/|$)", text):
                inside, found = True, True
                continue
            if re.search(re.escape(end) + r"(\s|\*/|$)", text) and inside:
                return textwrap.dedent("\n".join(lines)).strip("\n")
            if inside:
                lines.append(text)
    raise SystemExit("%s: no region '%s' .. '%s'%s" % (path, begin, end,
                                                        " (unterminated)" if found else ""))


def readme_blocks(root):
    with open(os.path.join(root, "README.md")) as f:
        lines = f.read().split("\n")
    blocks = []
    for i, line in enumerate(lines):
        m = re.match(r"<!-- from (\S+?)(?:#(\S+))? -->$", line.strip())
        if not m:
            continue
        if i + 1 >= len(lines) or not lines[i + 1].startswith("```"):
            raise SystemExit("README.md:%d: '%s' is not followed by a fenced block"
                             % (i + 1, line.strip()))
        body = []
        for j in range(i + 2, len(lines)):
            if lines[j].startswith("```"):
                break
            body.append(lines[j])
        else:
            raise SystemExit("README.md:%d: unterminated block" % (i + 2))
        blocks.append((i + 1, m.group(1), m.group(2), "\n".join(body).strip("\n")))
    return blocks


def version_h(root):
    with open(os.path.join(root, "include", "clattn", "version.h")) as f:
        text = f.read()
    parts = [re.search(r"#define CLATTN_VERSION_%s (\d+)" % p, text).group(1)
             for p in ("MAJOR", "MINOR", "PATCH")]
    return ".".join(parts)


def main():
    root = sys.argv[1]
    failed = 0
    quoted = set()
    for line, path, name, body in readme_blocks(root):
        want = region(os.path.join(root, path), name)
        quoted.add(path)
        if body != want:
            failed = 1
            print("README.md:%d: the block differs from %s%s; it should read:\n%s\n"
                  % (line, path, "#" + name if name else "", want))
        else:
            print("ok: README.md:%d is %s%s" % (line, path, "#" + name if name else ""))
    for path in sorted(REQUIRED - quoted):
        failed = 1
        print("README.md quotes nothing from %s" % path)
    with open(os.path.join(root, "python", "pyproject.toml")) as f:
        py = re.search(r'^version = "([^"]+)"', f.read(), re.M).group(1)
    if py != version_h(root):
        failed = 1
        print("python/pyproject.toml has version %s, version.h %s" % (py, version_h(root)))
    else:
        print("ok: python/pyproject.toml's version is version.h's (%s)" % py)
    return failed


if __name__ == "__main__":
    sys.exit(main())
