#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Where a decode call's time goes, from cl/fused/nv_decode.cl built with
-DTRACE=1 (CLATTN_BUILD_OPTIONS): every work-group prints one line

    T group sm chunks last t_start t_first t_walked t_stored t_arrived t_merged

(global timer, ns). This reads the output of one tests/perf/time_fused run
(plain or .gz), takes its last launch whole and prints '##' summaries: how
the groups' starts, first blocks, walk ends, stores, arrivals and merges
are spread, how many chunks each walked, the per-group streaming rate on
SMs holding different numbers of groups, and, given the call's splits, how
far apart the groups of one row tile and the row tiles themselves end.
(printf slows the traced calls: read the medians, not their event times.)

usage: tools/gpu/decode_timeline.py TIME_FUSED_OUTPUT [LABEL [SPLITS [ROW_TILES]]]
(SPLITS: by default the run's own, from its JSON line); the input, on an
NVIDIA GPU, for example:
  CLATTN_BUILD_OPTIONS=-DTRACE=1 build/tests/perf/time_fused \
      8,32,8,1,4096,128 fp16 none auto 3 1 >trace.txt
"""
import gzip
import re
import statistics
import sys


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(p * (len(xs) - 1) + 0.5))]


def spread(name, xs):
    us = [x / 1e3 for x in xs]
    return "%s %.2f/%.2f/%.2f/%.2f" % (name, min(us), pct(us, 0.5), pct(us, 0.95), max(us))


def launches_of(text):
    """The records, one list per launch. Kernel printf shares stdout with
    time_fused's JSON line, and a launch's lines need not come out together:
    split them by time (a launch starts after the previous one has ended)."""
    recs = [[int(x) for x in m.group(0).split()[1:]] for m in re.finditer(r"T( \d+){10}", text)]
    launches, cur, cur_end = [], [], 0
    for r in sorted(recs, key=lambda r: r[4]):
        if cur and r[4] > cur_end:
            launches.append(cur)
            cur = []
        cur.append(r)
        cur_end = max(cur_end, r[7], r[8], r[9])
    if cur:
        launches.append(cur)
    return launches


def main():
    if len(sys.argv) < 2:
        print(__doc__.strip().splitlines()[-1], file=sys.stderr)
        return 2
    path = sys.argv[1]
    label = sys.argv[2] if len(sys.argv) > 2 else path
    splits = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    rtiles = int(sys.argv[4]) if len(sys.argv) > 4 else 1
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", errors="replace") as f:
        text = f.read()
    launches = launches_of(text)
    if not splits:  # the run's own JSON line says it
        m = re.search(r'"splits": (\d+)', text)
        splits = int(m.group(1)) if m else 0
    if not launches:
        print("## trace %s: no trace lines" % label)
        return 1
    g = launches[-1]
    t0 = min(r[4] for r in g)
    start = [r[4] - t0 for r in g]
    first = [r[5] - r[4] for r in g if r[5]]
    walked = [r[6] - t0 for r in g]
    store = [r[7] - r[6] for r in g]
    arrive = [r[8] - r[7] for r in g if r[8]]
    merge = [r[9] - r[8] for r in g if r[3] and r[9]]
    end = max(max(r[9], r[8], r[7]) for r in g) - t0
    chunks = [r[2] for r in g]
    on_sm = {}
    for r in g:
        on_sm[r[1]] = on_sm.get(r[1], 0) + 1
    print("## trace %s: %d launches, %d groups on %d SMs (%d-%d each); span %.2f us" %
          (label, len(launches), len(g), len(on_sm), min(on_sm.values()), max(on_sm.values()),
           end / 1e3))
    print("##   us min/median/p95/max: %s; %s; %s; %s; %s; %s" %
          (spread("start", start), spread("first block", first), spread("walk end", walked),
           spread("store", store), spread("arrival", arrive) if arrive else "arrival -",
           spread("merge", merge) if merge else "merge -"))
    print("##   chunks walked min/median/max %d/%d/%d; last walk end %.2f us, last end %.2f us, "
          "streaming from first block to median walk end %.2f us" %
          (min(chunks), pct(chunks, 0.5), max(chunks), max(walked) / 1e3, end / 1e3,
           (pct(walked, 0.5) - pct([r[5] - t0 for r in g if r[5]], 0.5)) / 1e3))
    # A group's rate: the chunks it walked over its time from first block to walk end.
    for n in sorted(set(on_sm.values())):
        rates = [r[2] / ((r[6] - r[5]) / 1e3) for r in g if on_sm[r[1]] == n and r[6] > r[5] > 0]
        if rates:
            print("##   groups on SMs holding %d: %d, %.3f chunks/us each (cv %.3f)" %
                  (n, len(rates), statistics.mean(rates),
                   statistics.pstdev(rates) / statistics.mean(rates)))
    if splits > 0:
        # cl/include/fused_grid.clh's order: row tiles fastest, then chunks, then (b, hk).
        tiles = {}
        for r in g:
            tile = (r[0] // rtiles // splits, r[0] % rtiles)
            tiles.setdefault(tile, []).append((r[6] - t0) / 1e3)
        within = [max(w) - min(w) for w in tiles.values()]
        ends = [max(w) for w in tiles.values()]
        print("##   %d row tiles: their groups' walk ends apart by %.2f (median) / %.2f (max) us; "
              "the tiles' last walk ends %.2f to %.2f us (median %.2f)" %
              (len(tiles), statistics.median(within), max(within), min(ends), max(ends),
               statistics.median(ends)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
