# SPDX-License-Identifier: MIT
# shellcheck shell=bash
# What the tools/compare/*.sh scripts share, sourced by each: where the
# binaries are, and one function per kind of command, each appending one
# JSON record (tools/compare/table.py record) to the script's raw file $RAW
# with the command's exit status, read first thing after it ran.
#
#   CLATTN      the clattn tool (default build/cli/clattn, else build/tools/clattn)
#   TIME_FUSED  the back-to-back timing harness (build/tests/perf/time_fused)
#   PYTHON      python3 with PyTorch, for the peers (default python3)
#   TORCH=0     skip PyTorch (its cells then read "not run")
#   QUICK=1     small shapes, for a dry run on any device (PoCL)
# Run from the repository root.

CLATTN=${CLATTN:-build/cli/clattn}
[ -x "$CLATTN" ] || CLATTN=build/tools/clattn
TIME_FUSED=${TIME_FUSED:-build/tests/perf/time_fused}
PYTHON=${PYTHON:-python3}
COMPARE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TABLE=("$PYTHON" "$COMPARE/table.py")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/clattn-compare.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

# The raw file of a script: its first argument, else $OUT/NAME.jsonl
# (OUT defaults to a folder under /tmp), emptied first.
raw_file() {
    local name=$1 given=${2:-}
    RAW=${given:-${OUT:-${TMPDIR:-/tmp}/clattn-compare}/$name.jsonl}
    case $RAW in
    *.jsonl) ;;
    *) echo "the raw file must be a .jsonl file, not $RAW" >&2; exit 2 ;;
    esac
    mkdir -p "$(dirname "$RAW")"
    : >"$RAW"
}

note() { echo "== $*" >&2; }

# record_run KIND LABEL WHAT SECONDS OUT CMD...: runs CMD under a timeout of
# SECONDS with its output in OUT, records OUT as KIND under LABEL with the
# exit status and WHAT (the command as the table shows it), and notes a
# failure with the output's tail. Returns the exit status.
record_run() {
    local kind=$1 label=$2 what=$3 seconds=$4 out=$5
    shift 5
    timeout "$seconds" "$@" >"$out" 2>&1
    local rc=$?
    "${TABLE[@]}" record "$kind" "$label" "$rc" "$what" "$out" >>"$RAW"
    [ "$rc" -eq 0 ] || note "$what exit $rc: $(tail -c 300 "$out")"
    return "$rc"
}

# tf LABEL SHAPE DTYPE MASK KERNEL REPS BATCHES [TILES [SPLITS]]: one
# time_fused run (the calls back to back, clFinish, host clock per batch).
tf() {
    local label=$1
    shift
    record_run time_fused "$label" "$*" 120 "$TMP/tf" "$TIME_FUSED" "$@" || true
}

# bench LABEL ARGS...: clattn bench, every row checked against the CPU reference.
bench() {
    local label=$1
    shift
    timeout 300 "$CLATTN" bench "$@" --json "$TMP/bench.json" >"$TMP/bench.txt" 2>&1
    local rc=$?
    [ -s "$TMP/bench.json" ] || echo "{}" >"$TMP/bench.json"
    "${TABLE[@]}" record bench "$label" "$rc" "bench $*" "$TMP/bench.json" >>"$RAW"
    "${TABLE[@]}" record text "$label-log" "$rc" "bench $*" "$TMP/bench.txt" >>"$RAW"
    rm -f "$TMP/bench.json"
    [ "$rc" -eq 0 ] || note "clattn bench $* exit $rc: $(tail -c 300 "$TMP/bench.txt")"
}

# torch LABEL ARGS...: tools/compare/torch_attention.py ARGS.
torch() {
    local label=$1
    shift
    if [ "${TORCH:-1}" = 0 ]; then
        return
    fi
    record_run torch "$label" "torch_attention.py $*" 300 "$TMP/torch" \
        env PYTHONUNBUFFERED=1 "$PYTHON" "$COMPARE/torch_attention.py" "$@" || true
}

# verify LABEL ARGS...: clattn verify (exit 1 if a case fails).
verify() {
    local label=$1
    shift
    record_run text "$label" "clattn verify $*" 300 "$TMP/verify" "$CLATTN" verify "$@"
}

# Board power and SM clock every 100 ms while a phase runs (nvidia-smi,
# where there is one): power_start, then phase LABEL CMD..., then power_stop.
power_start() {
    command -v nvidia-smi >/dev/null || return 0
    nvidia-smi --query-gpu=timestamp,power.draw,clocks.sm --format=csv,noheader,nounits -lms 100 \
        >"$TMP/power.csv" 2>/dev/null &
    POWER_PID=$!
}
power_stop() {
    [ -n "${POWER_PID:-}" ] || return 0
    kill "$POWER_PID" 2>/dev/null
    wait "$POWER_PID" 2>/dev/null
    POWER_PID=
    # nvidia-smi's timestamps are local time: seconds since the epoch.
    "$PYTHON" - "$TMP/power.csv" >"$TMP/power.epoch" <<'EOF'
import datetime, sys
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    try:
        t = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()
        print("%.3f, %s, %s" % (t, f[1], f[2]))
    except (ValueError, IndexError):
        pass
EOF
    "${TABLE[@]}" record power power 0 "nvidia-smi -lms 100" "$TMP/power.epoch" >>"$RAW"
}
phase() {
    local label=$1 t0 t1
    shift
    t0=$(date +%s.%N)
    "$@"
    t1=$(date +%s.%N)
    "${TABLE[@]}" record phase "$label" 0 "$t0 $t1" >>"$RAW"
}
