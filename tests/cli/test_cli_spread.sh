#!/bin/sh
# `clattn bench` and `clattn run` over several devices and over mpirun's
# ranks: a bench over two contexts of the default device (--device 0,0)
# whose every row ran, passed its check and was split, and over three by
# the ring (--spread ring); --csv and an unknown --spread refused. `run`
# by the ring equals one device's run. With MPI (MPIRUN, tests/mpi/mpirun.sh, given): `clattn run` on 2
# ranks (a causal prefill sharded by tokens) and 3 ranks (a decoding step
# sharded by keys, per-sequence lengths) writes the O of one process's run
# (numpy compares them) and one summary line; a KV cache form under
# mpirun fails on every rank and writes nothing; `clattn bench` on 2
# ranks writes JSON whose rows all ran and passed.
#
# Usage: test_cli_spread.sh path/to/clattn path/to/mpirun.sh|none
# Exit: 0 pass, 1 fail, 77 skip (no python3, or no OpenCL device).
set -eu

CLATTN=${1:?usage: test_cli_spread.sh path/to/clattn path/to/mpirun.sh|none}
MPIRUN=${2:-none}
case $MPIRUN in none | /*) ;; *) MPIRUN=$PWD/$MPIRUN ;; esac
TEST_NAME=test_cli_spread
. "$(dirname "$0")/cli_test_setup.sh"

run_clattn devices
grep -q "^ *\[0\]" stdout || { echo "SKIP: no OpenCL device"; exit 77; }

rows_ok() { # FILE OVER SCHEME...: every row ok, over OVER, each scheme one of SCHEME
    python3 - "$@" <<'PY' || fail "bench JSON $1"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["over"] == sys.argv[2], d["over"]
assert d["devices"] >= 2 and d["rows"], d
for r in d["rows"]:
    assert r["ok"] and r["error"] == "", r
    assert r["scheme"] in sys.argv[3:], r
    assert r["one_s"] > 0 and r["spread_s"] > 0, r
PY
}

small="-B 1 -H 4 --kv-heads 2 -d 32 -N 64,96 --dtype fp32 --reps-seconds 0.02"

# ------------------------------------------------- several devices, one process
run_clattn bench --device 0,0 $small --json group.json
[ "$rc" -eq 0 ] || fail "bench --device 0,0: exit status $rc"
grep -q "bench over 2 devices" stdout || fail "bench --device 0,0: no header"
rows_ok group.json devices queries
run_clattn bench --device 0,0 $small --csv x.csv
[ "$rc" -eq 2 ] && [ ! -e x.csv ] || fail "bench --device 0,0 --csv: exit status $rc"
run_clattn bench --device 0,0 $small --spread sideways
[ "$rc" -eq 2 ] && grep -q "bad --spread 'sideways'" stderr || fail "bad --spread: exit status $rc"
run_clattn bench --device 0,0,0 $small --spread ring --json ring.json
[ "$rc" -eq 0 ] || fail "bench --device 0,0,0 --spread ring: exit status $rc"
rows_ok ring.json devices ring
echo "ok: bench over two and three devices"

if [ "$MPIRUN" = none ]; then
    echo "ok (built without MPI: the mpirun part is not run)"
    exit 0
fi
mpi() { # NP ARGS...: clattn under mpirun
    np=$1
    shift
    set +e
    "$MPIRUN" "$np" "$CLATTN" "$@" >stdout 2>stderr
    rc=$?
    set -e
    [ "$rc" -ne 77 ] || { echo "SKIP: no mpirun"; exit 77; }
}

# ------------------------------------------------------------------- run
if python3 -c "import numpy" 2>/dev/null; then
    python3 - <<'PY'
import numpy as np
r = np.random.default_rng(5)
for name, shape in (("q", (2, 4, 130, 32)), ("k", (2, 2, 130, 32)), ("v", (2, 2, 130, 32)),
                    ("qd", (3, 4, 1, 32)), ("kd", (3, 2, 301, 32)), ("vd", (3, 2, 301, 32))):
    np.save(name + ".npy", r.uniform(-1, 1, shape).astype(np.float32))
PY
    close() { # A B: the two outputs agree
        python3 -c "
import numpy as np, sys
a, b = np.load('$1'), np.load('$2')
assert a.shape == b.shape and np.isfinite(b).all() and abs(a - b).max() < 2e-5, abs(a - b).max()
" || fail "$1 and $2 differ"
    }
    run_clattn run --q q.npy --k k.npy --v v.npy --out one.npy --causal bottom-right
    [ "$rc" -eq 0 ] || fail "run in one process: exit status $rc"
    mpi 2 run --q q.npy --k k.npy --v v.npy --out two.npy --lse-out lse.npy \
        --causal bottom-right --check
    [ "$rc" -eq 0 ] || fail "run on 2 ranks: exit status $rc"
    [ "$(grep -c "mpi by" stdout)" -eq 1 ] && grep -q "2 ranks" stdout && grep -q "ok$" stdout ||
        fail "run on 2 ranks: not one checked summary line"
    close one.npy two.npy
    run_clattn run --q q.npy --k k.npy --v v.npy --out ring.npy --causal bottom-right \
        --device 0,0,0 --spread ring --check
    [ "$rc" -eq 0 ] && grep -q "group by ring over 3 devices" stdout ||
        fail "run --spread ring: exit status $rc"
    close one.npy ring.npy
    mpi 2 run --q q.npy --k k.npy --v v.npy --out ag.npy --causal bottom-right --spread allgather
    [ "$rc" -eq 0 ] && grep -q "mpi by allgather" stdout || fail "run --spread allgather: $rc"
    close one.npy ag.npy
    run_clattn run --q qd.npy --k kd.npy --v vd.npy --out oned.npy --kv-lens 301,0,77
    [ "$rc" -eq 0 ] || fail "decode in one process: exit status $rc"
    mpi 3 run --q qd.npy --k kd.npy --v vd.npy --out threed.npy --kv-lens 301,0,77 --check
    [ "$rc" -eq 0 ] && grep -q "mpi by keys over 3 ranks" stdout ||
        fail "decode on 3 ranks: exit status $rc"
    close oned.npy threed.npy
    mpi 2 run --q q.npy --k k.npy --v v.npy --out cached.npy --kv-type q8_0
    [ "$rc" -eq 1 ] && [ ! -e cached.npy ] && grep -q "runs on one device" stderr ||
        fail "a KV cache form under mpirun: exit status $rc"
    echo "ok: run over ranks"
else
    echo "(no numpy: run over ranks not checked)"
fi

# ------------------------------------------------------------------ bench
mpi 2 bench $small --json ranks.json
[ "$rc" -eq 0 ] || fail "bench on 2 ranks: exit status $rc"
[ "$(grep -c "bench over 2 ranks" stdout)" -eq 1 ] || fail "bench on 2 ranks: not one header"
rows_ok ranks.json ranks ring allgather
echo "ok: bench over ranks"
