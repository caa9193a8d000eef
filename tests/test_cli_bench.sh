#!/bin/sh
# End-to-end test of `clattn bench`: a usage error is refused before any
# device work; a tiny benchmark on the default device exits 0, writes JSON
# that parses and CSV with one line per row, and every row ran and passed its
# check against the CPU reference; a shape far beyond any device is reported
# as predicted out of memory without being run; and, when matplotlib is
# importable, tools/plot_bench.py turns the JSON into PNGs.
#
# Usage: test_cli_bench.sh path/to/clattn [path/to/plot_bench.py]
# Exit: 0 pass, 1 fail, 77 skip (no python3, or no OpenCL device).
set -eu

CLATTN=${1:?usage: test_cli_bench.sh path/to/clattn [plot_bench.py]}
PLOT=${2:-}
case $CLATTN in
/*) ;;
*) CLATTN=$PWD/$CLATTN ;;
esac
unset CLATTN_DEVICE

command -v python3 >/dev/null 2>&1 || { echo "SKIP: no python3"; exit 77; }

dir=$(mktemp -d "${TMPDIR:-/tmp}/test_cli_bench.XXXXXX")
trap 'rm -rf "$dir"' EXIT INT TERM
cd "$dir"

fail() {
    echo "FAIL: $*" >&2
    for f in stdout stderr; do
        [ -s "$f" ] && { echo "--- $f:" >&2; cat "$f" >&2; }
    done
    exit 1
}

bench() {
    set +e
    "$CLATTN" bench "$@" >stdout 2>stderr
    rc=$?
    set -e
}

# ------------------------------------------------------------ usage errors
bench --causal sideways -N 8
[ "$rc" -eq 2 ] || fail "bad --causal: exit status $rc, want 2"
grep -q "causal" stderr || fail "bad --causal: no message"
bench -N 8,,16
[ "$rc" -eq 2 ] || fail "-N with an empty item: exit status $rc, want 2"
bench -N 8 --json nodir/out.json
[ "$rc" -ne 0 ] || fail "--json into a missing directory succeeded"
[ ! -s stdout ] || fail "--json into a missing directory ran the bench"
echo "ok: usage errors"

# Outputs refused before the bench runs: a symbolic link to a regular file
# (neither replaced nor written through) and a directory.
printf 'keep me' >target.json
ln -s target.json link.json
bench -N 8 --json link.json
[ "$rc" -eq 1 ] || fail "--json on a symlink: exit status $rc, want 1"
grep -q "link.json: is a symbolic link to '.*target.json'" stderr ||
    fail "--json on a symlink: no message"
[ ! -s stdout ] || fail "--json on a symlink ran the bench"
[ -L link.json ] && [ "$(cat target.json)" = "keep me" ] || fail "--json on a symlink: changed"
mkdir adir
bench -N 8 --csv adir
[ "$rc" -eq 1 ] && grep -q "adir: is a directory" stderr || fail "--csv on a directory"
echo "ok: refused outputs"

if ! "$CLATTN" devices >/dev/null 2>&1; then
    echo "SKIP: 'clattn devices' fails: no OpenCL device"
    exit 77
fi

# ------------------------------------------------------------ a tiny bench
# N not a multiple of any tile; GQA (H=2 over Hkv=1); both masks and paths.
bench -B 1 -H 2 --kv-heads 1 -d 16 -N 33,70 --reps-seconds 0 --json out.json --csv out.csv
[ "$rc" -eq 0 ] || fail "tiny bench: exit status $rc"
grep -q "^\[8/8\] N=70 causal fused" stderr || fail "no progress counter on stderr"
grep -q "ceilings used by the model" stdout || fail "no ceilings in the header"
python3 - <<'PY' || fail "tiny bench: JSON"
import json, sys
d = json.load(open("out.json"))
rows = d["rows"]
assert len(rows) == 8, "want 8 rows, got %d" % len(rows)
for key in ("name", "driver"):
    assert d["device"][key], "device %s missing" % key
for r in rows:
    what = "N=%d %s %s" % (r["n"], r["causal"], r["path"])
    assert r["status"] == "ok" and r["check_ok"] is True, what + ": " + json.dumps(r)
    assert r["reps"] >= 3, what + ": fewer than 3 repetitions"
    assert 0 < r["time_min_s"] <= r["time_median_s"] <= r["time_max_s"], what + ": times"
    assert r["max_abs"] <= r["tol_max_abs"] and r["rel_l2"] <= r["tol_rel_l2"], what
    assert r["nan_count"] == 0 and r["check"] == "full", what
    assert r["mem_allocated_bytes"] > 0 and r["mem_predicted_bytes"] > 0, what
    assert r["model_flops"] > 0 and r["model_bytes"] > 0, what
    if r["causal"] != "none":
        assert r["speedup_measured"] > 0 and r["speedup_ideal"] >= 1, what
    # Q, K, V, O (+ S and P on the naive path): never more than the plan.
    assert r["mem_allocated_bytes"] <= r["mem_predicted_bytes"], what + ": memory"
print("ok: tiny bench: %d rows verified" % len(rows))
PY
[ "$(wc -l <out.csv)" -eq 9 ] || fail "CSV: want a header and 8 rows"
ls out.json.tmp.* out.csv.tmp.* >/dev/null 2>&1 && fail "temporary files left behind"
echo "ok: CSV"

# ------------------------------------------ outputs that are not regular files
# Written in place, never replaced: JSON into a FIFO, CSV into a device node
# made here (root only), then, once those passed, /dev/null itself; and JSON
# on a pipe through /dev/stdout, which moves the tables to stderr.
tiny="-B 1 -H 1 -d 8 -N 16 --path fused --causal no --reps-seconds 0"
mkfifo out.fifo
cat out.fifo >from_fifo.json &
reader=$!
csv=/dev/null
python3 -c 'import os, stat, sys
os.mknod("my_null", stat.S_IFCHR | 0o666, os.stat("/dev/null").st_rdev)' 2>/dev/null &&
    csv=my_null
[ "$csv" = my_null ] || echo "note: cannot make device nodes here: CSV goes to /dev/null"
bench $tiny --json out.fifo --csv "$csv"
if [ "$rc" -ne 0 ] || [ ! -p out.fifo ]; then
    kill "$reader" 2>/dev/null || true # it waits on a FIFO nobody will open
    fail "JSON into a FIFO: exit status $rc, or out.fifo is no longer a FIFO"
fi
wait "$reader"
python3 -c 'import json; assert len(json.load(open("from_fifo.json"))["rows"]) == 1' ||
    fail "JSON into a FIFO: wrong data"
[ -c "$csv" ] || fail "CSV into $csv: no longer a character device"
[ "$csv" = /dev/null ] || bench $tiny --csv /dev/null
[ "$rc" -eq 0 ] && [ -c /dev/null ] || fail "CSV into /dev/null"
set +e
"$CLATTN" bench $tiny --json /dev/stdout 2>stderr | cat >stdout
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "JSON on /dev/stdout: exit status $rc"
python3 -c 'import json; assert len(json.load(open("stdout"))["rows"]) == 1' ||
    fail "JSON on /dev/stdout: stdout is not the JSON alone"
grep -q "ceilings used by the model" stderr || fail "JSON on /dev/stdout: no tables on stderr"
echo "ok: FIFO, device and pipe outputs"

# ----------------------------------------------- predicted out of memory
# S alone would be 32 TiB: refused by the model, nothing allocated.
bench -B 64 -H 64 -d 16 -N 65536 --path naive --causal no --json oom.json
[ "$rc" -eq 0 ] || fail "OOM row: exit status $rc"
grep -q "OOM (predicted: .*S .*>" stdout || fail "OOM row not shown as predicted OOM"
python3 -c '
import json
r = json.load(open("oom.json"))["rows"][0]
assert r["status"] == "oom" and r["predicted_oom"] and r["reps"] == 0, r
' || fail "OOM row: JSON"
echo "ok: predicted OOM row"

# ----------------------------------------------------------------- charts
if [ -n "$PLOT" ]; then
    py=
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import matplotlib' >/dev/null 2>&1; then py=$p; break; fi
    done
    if [ -n "$py" ]; then
        "$py" "$PLOT" out.json --out-dir figs >stdout 2>stderr || fail "plot_bench.py"
        for f in figs/bench_time.png figs/bench_roofline.png; do
            [ -s "$f" ] || fail "plot_bench.py did not write $f"
        done
        echo "ok: charts"
    else
        echo "note: matplotlib not importable, charts not tested"
    fi
fi
echo "PASS"
