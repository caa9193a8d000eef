#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a decode call's time goes, from cl/fused_nv_decode.cl built with
-DTRACE=1 (CLATTN_BUILD_OPTIONS): every work-group prints one line

    T group sm chunks last t_start t_first t_walked t_stored t_arrived t_merged

(global timer, ns). This reads the output of one tests/perf/time_fused run
takes the last launch whole
and prints one '##' summary: the span of the launch inside the kernel
against its event time, how the groups' starts, first blocks, walk ends,
stores, arrivals and merges are spread, and how many chunks each walked.

usage: trace_decode.py TIME_FUSED_OUTPUT [LABEL]
"""
import re
import sys


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


def spread(name, xs):
    us = [x / 1e3 for x in xs]
    return "%s %.2f/%.2f/%.2f/%.2f" % (name, min(us), pct(us, 0.5), pct(us, 0.95), max(us))


def main():
    path = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else path
    # Kernel printf shares stdout with time_fused's JSON line, and a
    # launch's lines need not come out together: split the records by time
    # instead (a launch starts after the previous one has ended).
    recs, info = [], None
    text = open(path, errors="replace").read()
    for m in re.finditer(r"T( \d+){10}", text):
        recs.append([int(x) for x in m.group(0).split()[1:]])
    j = re.search(r'"last_kernel_s": ([0-9.e-]+)', text)
    if j:
        info = {"last_kernel_s": float(j.group(1))}
    launches, cur, cur_end = [], [], 0
    for r in sorted(recs, key=lambda r: r[4]):
        if cur and r[4] > cur_end:
            launches.append(cur)
            cur = []
        cur.append(r)
        cur_end = max(cur_end, r[7], r[8], r[9])
    if cur:
        launches.append(cur)
    g = launches[-1]
    t0 = min(r[4] for r in g)
    start = [r[4] - t0 for r in g]
    first = [r[5] - r[4] for r in g if r[5]]
    walked = [r[6] - t0 for r in g]
    store = [r[7] - r[6] for r in g]
    arrive = [r[8] - r[7] for r in g if r[8]]
    last = [r for r in g if r[3]]
    merge = [r[9] - r[8] for r in last if r[9]]
    end = max(max(r[9], r[8], r[7]) for r in g) - t0
    chunks = [r[2] for r in g]
    sms = {}
    for r in g:
        sms[r[1]] = sms.get(r[1], 0) + 1
    print("## trace %s: %d launches, %d groups on %d SMs (%d-%d each); span %.2f us "
          "(printf slows the traced calls: their event times are not the kernel's)" %
          (label, len(launches), len(g), len(sms), min(sms.values()), max(sms.values()),
           end / 1e3))
    print("##   us min/median/p95/max: %s; %s; %s; %s; %s; %s" %
          (spread("start", start), spread("first block", first), spread("walk end", walked),
           spread("store", store), spread("arrival", arrive) if arrive else "arrival -",
           spread("merge", merge) if merge else "merge -"))
    print("##   chunks walked min/median/max %d/%d/%d; last walk end %.2f us, last end %.2f us, "
          "streaming from first block to median walk end %.2f us" %
          (min(chunks), pct(chunks, 0.5), max(chunks), max(walked) / 1e3, end / 1e3,
           (pct(walked, 0.5) - pct([s + f for s, f in zip(start, first)], 0.5)) / 1e3))
    return 0


if __name__ == "__main__":
    sys.exit(main())
