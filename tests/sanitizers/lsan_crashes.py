#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The failed tests of a meson test run whose only fault is LeakSanitizer's
own crash at exit ("LeakSanitizer has encountered a fatal error": its
tracer thread dies stopping the process's threads, an intermittent fault
of the tool beside PoCL's worker threads), for .ci/sanitize to run once
more. A test with any report of a real error (ASan, a leak, UBSan) or a
failed test case is not one of them.

usage: lsan_crashes.py TESTLOG.json
Prints the names to run again, one per line; exits 1 when a failure is of
another kind (then nothing is run again), 0 otherwise.
"""
import json
import sys

CRASH = "LeakSanitizer has encountered a fatal error"
REAL = ("ERROR: AddressSanitizer", "ERROR: LeakSanitizer: detected memory leaks",
        "runtime error:", "[  FAILED  ]", "[  ERROR   ]")

again, other = [], []
for line in open(sys.argv[1], encoding="utf-8"):
    t = json.loads(line)
    if t["result"] in ("OK", "SKIP", "EXPECTEDFAIL"):
        continue
    text = (t.get("stdout") or "") + (t.get("stderr") or "")
    name = t["name"].split(" / ")[-1]
    (again if CRASH in text and not any(r in text for r in REAL) else other).append(name)
if other:
    print("not a LeakSanitizer crash: " + " ".join(other), file=sys.stderr)
    sys.exit(1)
print("\n".join(again))
