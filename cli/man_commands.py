#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Writes a help2man include file with every subcommand's --help.

help2man builds clattn.1 from `clattn --help` and `clattn --version`; this
adds a COMMANDS section with the text of `clattn COMMAND --help` for each
command the top-level help lists, so the man page says what the tool says.

Usage: man_commands.py PATH/TO/clattn OUTPUT.h2m
"""
import re
import subprocess
import sys


def roff(text):
    """Plain text as roff lines: backslashes escaped, no line read as a request."""
    out = []
    for line in text.rstrip("\n").split("\n"):
        line = line.replace("\\", "\\e")
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def main():
    exe, output = sys.argv[1:3]
    top = subprocess.run([exe, "--help"], check=True, capture_output=True, text=True).stdout
    section = top.split("Commands:\n", 1)[1].split("\n\n", 1)[0]
    commands = re.findall(r"^  (\S+)\s", section, re.M)
    if not commands:
        sys.exit("man_commands.py: no commands in clattn --help")
    parts = ["[COMMANDS]"]
    for name in commands:
        text = subprocess.run([exe, name, "--help"], check=True, capture_output=True,
                              text=True).stdout
        parts.append('.SS "clattn %s"\n.nf\n%s\n.fi' % (name, roff(text)))
    with open(output, "w") as f:
        f.write("\n".join(parts) + "\n")


if __name__ == "__main__":
    main()
