#!/bin/sh
# End-to-end test of `clattn bench`: usage errors are refused before any
# device work; on a fresh cache the first bench measures the device's
# ceilings and saves them (the next one reuses them); a tiny benchmark on the
# default device exits 0, writes JSON that parses and CSV with one line per
# row, and every row ran and passed its check against the CPU reference;
# decoding rows (one query, per-sequence lengths with an empty sequence,
# split-KV) and bottom-right rows checked by samples pass too, with the
# model's bytes as the decode formula gives them; a shape far beyond any
# device is reported as predicted out of memory without being run; and, when
# matplotlib is importable, cli/plot_bench.py turns the JSON into PNGs.
#
# Usage: test_cli_bench.sh path/to/clattn [path/to/plot_bench.py]
# Exit: 0 pass, 1 fail, 77 skip (no python3, or no OpenCL device).
set -eu

CLATTN=${1:?usage: test_cli_bench.sh path/to/clattn [plot_bench.py]}
PLOT=${2:-}
TEST_NAME=test_cli_bench
. "$(dirname "$0")/cli_test_setup.sh"

bench() { run_clattn bench "$@"; }

# ------------------------------------------------------------ usage errors
bench --causal sideways -N 8
[ "$rc" -eq 2 ] || fail "bad --causal: exit status $rc, want 2"
grep -q "causal" stderr || fail "bad --causal: no message"
bench -N 8,,16
[ "$rc" -eq 2 ] || fail "-N with an empty item: exit status $rc, want 2"
bench -N 8 --json nodir/out.json
[ "$rc" -ne 0 ] || fail "--json into a missing directory succeeded"
[ ! -s stdout ] || fail "--json into a missing directory ran the bench"
# --kv-lens: one length per sequence, none above a row's Nk.
bench -B 2 -N 8 --kv-lens 1
[ "$rc" -eq 2 ] && grep -q "kv-lens gives 1 lengths; a row has B = 2" stderr ||
    fail "--kv-lens with too few lengths: exit status $rc"
bench -B 2 -N 8,16 --kv-lens 3,9
[ "$rc" -eq 2 ] && grep -q "sequence 1 has 9 keys, more than the Nk = 8 of a row" stderr ||
    fail "--kv-lens above Nk: exit status $rc"
bench -B 1 -N 8 --kv-lens 1,x
[ "$rc" -eq 2 ] || fail "--kv-lens that does not parse: exit status $rc"
bench -N 8 --kv-len 16
[ "$rc" -eq 2 ] || fail "-N and --kv-len together: exit status $rc"
bench -N 8 --split-kv -1
[ "$rc" -eq 2 ] || fail "bad --split-kv: exit status $rc"
bench --preset prefill
[ "$rc" -eq 2 ] && grep -q "known: seed, decode" stderr || fail "unknown --preset"
bench -N 8 --check often
[ "$rc" -eq 2 ] || fail "bad --check: exit status $rc"
bench -N 8 --calls-per-sample 0
[ "$rc" -eq 2 ] || fail "bad --calls-per-sample: exit status $rc"
# --json and --csv are two files, at most one of them stdout.
bench -N 8 --json x.json --csv ./x.json
[ "$rc" -eq 2 ] && grep -q "\-\-json 'x.json' and --csv './x.json' name the same file" stderr ||
    fail "--json and --csv one file: exit status $rc"
bench -N 8 --json - --csv -
[ "$rc" -eq 2 ] && grep -q "\-\-json and --csv cannot both go to stdout" stderr ||
    fail "--json and --csv both stdout: exit status $rc"
[ ! -d cache/clattn ] || fail "a usage error measured the device"
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
# The first bench on this (empty) cache measures the ceilings and saves them.
# MALLOC_PERTURB_=255 makes every malloc'd byte 0: a caller-allocated struct
# left without its init (struct_size 0) is then refused, not lucky.
MALLOC_PERTURB_=255 bench -B 1 -H 2 --kv-heads 1 -d 16 -N 33,70 --reps-seconds 0 --json out.json --csv out.csv
[ "$rc" -eq 0 ] || fail "tiny bench: exit status $rc"
grep -q "^\[8/8\] B=1 Nq=70 Nk=70 causal fused" stderr || fail "no progress counter on stderr"
grep -q "ceilings used by the model" stdout || fail "no ceilings in the header"
grep -q "^ceilings: no measured ceilings were saved for this device: measured them" stdout ||
    fail "a fresh cache: the ceilings were not measured"
ls cache/clattn/*.txt >/dev/null 2>&1 || fail "the measured ceilings were not saved"
grep -q "bandwidth .*(measured)" stdout || fail "the bandwidth is not the measured one"
python3 - <<'PY' || fail "tiny bench: JSON"
import json, sys
d = json.load(open("out.json"))
assert (d["tool"], d["command"]) == ("clattn", "bench"), d["tool"]
assert d["ceilings"]["bandwidth"]["source"] == "measured", d["ceilings"]
assert "measured them" in d["ceilings_note"], d["ceilings_note"]
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
    assert r["n"] == r["kv_len"] == r["q_len"] and r["kv_lens"] is None, what
    assert r["predicted_s"] > 0 and r["bandwidth_fraction"] > 0, what + ": no prediction"
print("ok: tiny bench: %d rows verified" % len(rows))
PY
[ "$(wc -l <out.csv)" -eq 9 ] || fail "CSV: want a header and 8 rows"
ls out.json.tmp.* out.csv.tmp.* >/dev/null 2>&1 && fail "temporary files left behind"
echo "ok: CSV"

# --------------------------------------------------------------- decoding
# One query over 40 and 100 keys, three sequences of 0, 33 and 40 keys, two
# split-KV chunks: the saved ceilings are reused, every row is checked in
# full (the empty sequence's rows must be zeros), and the model's bytes are
# Q of the sequences with keys, O of all, K and V of each sequence's own
# length, and the split workspace written and read.
bench -B 3 -H 4 --kv-heads 2 -d 16 --q-len 1 --kv-len 40,100 --kv-lens 0,33,40 \
    --split-kv 2 --path fused --causal no --reps-seconds 0 --calls-per-sample 4 \
    --json dec.json --csv dec.csv
[ "$rc" -eq 0 ] || fail "decoding bench: exit status $rc"
grep -q "measured them" stdout && fail "the saved ceilings were measured again"
grep -q "per-sequence keys (--kv-lens): 0,33,40" stdout || fail "decoding: no kv_lens in the header"
python3 - <<'PY' || fail "decoding bench: JSON"
import json
d = json.load(open("dec.json"))
assert d["config"]["calls_per_sample"] == 4, d["config"]
rows = d["rows"]
assert [r["kv_len"] for r in rows] == [40, 100], rows
for r in rows:
    assert r["calls_per_sample"] == 4 and r["reps"] >= 3, r
    assert 0 < r["time_min_s"] <= r["time_median_s"] <= r["time_max_s"], r
for r in rows:
    what = "Nk=%d" % r["kv_len"]
    assert r["status"] == "ok" and r["check_ok"] is True and r["check"] == "full", what
    assert r["stray_outputs"] == 0 and r["nan_count"] == 0, what
    assert r["n"] == r["kv_len"] and r["q_len"] == 1 and r["kv_lens"] == [0, 33, 40], what
    assert r["split_kv"] == 2 and r["splits"] == 2 == r["planned_splits"], what + ": splits"
    e, h, hkv, d, b = 2, 4, 2, 16, 3
    ws = b * h * 1 * r["splits"] * (d + 2) * 4
    assert r["split_workspace_bytes"] == ws, what + ": workspace"
    want = 2 * h * d * e + 3 * h * d * e + 2 * (33 + 40) * hkv * d * e + 2 * ws
    assert r["model_bytes"] == want, "%s: model bytes %d, want %d" % (what, r["model_bytes"], want)
    assert r["useful_flops"] == 4 * d * h * (33 + 40), what + ": useful FLOPs"
    assert r["predicted_s"] > 0 and 0 < r["bandwidth_fraction"], what + ": prediction"
    assert abs(r["gbps"] * 1e9 * r["time_median_s"] - r["model_bytes"]) < 1e-3 * want, what
print("ok: decoding bench: %d rows verified" % len(rows))
PY
head -1 dec.csv | grep -q ",q_len,kv_len,splits,bandwidth_fraction,kv_lens," ||
    fail "decoding CSV: no decode columns"
[ "$(grep -c ',0;33;40,' dec.csv)" -eq 2 ] || fail "decoding CSV: kv_lens cells"

# Five queries, bottom-right aligned to each sequence's length (3 keys: two
# rows see nothing), checked on sampled rows only; and top-left beside it.
bench -B 2 -H 2 --kv-heads 1 -d 8 --q-len 5 -N 24 --kv-lens 3,24 --causal bottom-right \
    --check sampled --reps-seconds 0 --json br.json
[ "$rc" -eq 0 ] || fail "bottom-right sampled bench: exit status $rc"
bench -B 2 -H 2 --kv-heads 1 -d 8 --q-len 5 -N 24 --kv-lens 3,24 --causal yes \
    --check sampled --reps-seconds 0 --json tl.json
[ "$rc" -eq 0 ] || fail "top-left sampled bench: exit status $rc"
python3 - <<'PY' || fail "sampled benches: JSON"
import json
for name, mask in (("br.json", "bottom-right"), ("tl.json", "top-left")):
    rows = json.load(open(name))["rows"]
    assert len(rows) == 2, name
    for r in rows:
        assert r["causal"] == mask and r["status"] == "ok" and r["check_ok"], r
        assert r["check"] == "4 samples x 5 rows", r["check"]
print("ok: sampled checks under both alignments")
PY
echo "ok: decoding"

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
    # Without matplotlib: exit 1 and what to install, no traceback.
    rc=0
    python3 -c 'import runpy, sys; sys.modules["matplotlib"] = None; sys.argv = sys.argv[1:]
runpy.run_path(sys.argv[0], run_name="__main__")' "$PLOT" out.json --out-dir nofigs \
        >stdout 2>stderr || rc=$?
    [ "$rc" = 1 ] || fail "plot_bench.py without matplotlib: exit $rc, not 1"
    grep -q "pip install 'clattn\[plot\]'" stderr || fail "plot_bench.py without matplotlib: $(cat stderr)"
    if grep -q Traceback stderr; then fail "plot_bench.py without matplotlib: a traceback"; fi
    echo "ok: charts without matplotlib say what to install"
fi
echo "PASS"
