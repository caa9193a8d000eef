#!/bin/sh
# SPDX-License-Identifier: MIT
# The attention variants on the command line, in every command that takes
# them (the one option layer): bad values are usage errors (one line,
# status 2) wherever they are given, a mask or slopes file that does not fit
# the shape says so; `clattn run` with a window, a bool or additive mask,
# softcap, ALiBi, sinks, a snippet, d_v != d and bf16 files against a numpy
# reference; verify's variant cases and a given one; predict's variant
# table and JSON; a small bench and tune with variants.
#
# Usage: test_cli_variants.sh path/to/clattn
# Exit: 0 pass, 1 fail, 77 skip (no python3 with numpy; or no OpenCL device
# for the part that runs, after the usage errors ran).
set -eu

CLATTN=${1:?usage: test_cli_variants.sh path/to/clattn}
TEST_NAME=test_cli_variants
# CLATTN absolute, the default device, python3 or exit 77, a scratch $dir
# (entered), fail and run_clattn.
. "$(dirname "$0")/cli_test_setup.sh"
python3 -c "import numpy" 2>/dev/null || { echo "SKIP: python3 has no numpy"; exit 77; }
run_it() { run_clattn "$@"; }


# ------------------------------------------------------------ the inputs
cat >make.py <<'PY'
import numpy as np
rng = np.random.default_rng(7)
B, H, HKV, NQ, NK, D, DV = 2, 4, 2, 5, 19, 16, 8
q = rng.uniform(-1, 1, (B, H, NQ, D)).astype(np.float32)
k = rng.uniform(-1, 1, (B, HKV, NK, D)).astype(np.float32)
v = rng.uniform(-1, 1, (B, HKV, NK, DV)).astype(np.float32)
for name, x in (("q", q), ("k", k), ("v", v)):
    np.save(name + ".npy", x)
    # bf16 as numpy saves ml_dtypes.bfloat16: '<V2', the top 16 bits
    # rounded to nearest even.
    bits = x.view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    np.save(name + "_bf16.npy", bits.view(np.dtype("V2")))
keep = rng.uniform(0, 1, (B, 1, NQ, NK)) > 0.3
keep[..., 0] = True
np.save("keep.npy", keep)
np.save("add.npy", rng.uniform(-1, 1, (H, NQ, NK)).astype(np.float16))
np.save("slopes.npy", rng.uniform(0, 0.5, (B, H)).astype(np.float32))
np.save("sinks.npy", rng.uniform(-1, 1, H).astype(np.float32))
np.save("badmask.npy", np.ones((3, NQ, NK), bool))
np.save("slopes_bad.npy", np.ones(3, np.float32))
PY
python3 make.py
cat >softcap.cl <<'CL'
float clattn_score_mod(float s, uint b, uint h, uint q, uint k) { return 2.0f * tanh(s / 2.0f); }
CL

# ------------------------------------------------------- usage errors (2)
for cmd in run verify bench tune predict; do
    run_it $cmd --help
    for opt in "--softcap C" "--window L,R" "--alibi " "--alibi-max-bias X" \
               "--alibi-slopes FILE" "--sinks S" "--mask M" "--score-mod FILE" "--mask-mod FILE"; do
        grep -q -- "^  $opt" stdout || fail "$cmd --help does not list $opt"
    done
    [ "$cmd" = run ] || grep -q -- "^  --dv N" stdout || fail "$cmd --help does not list --dv"
    usage_error "$cmd: bad --softcap" "^clattn: error: $cmd: bad --softcap '-1' \(a positive number\)" \
        $cmd --softcap -1
    usage_error "$cmd: --softcap 0" "^clattn: error: $cmd: bad --softcap '0'" $cmd --softcap 0
    usage_error "$cmd: --window one side" "^clattn: error: $cmd: bad --window '3' \(L,R" \
        $cmd --window 3
    usage_error "$cmd: --window below -1" "^clattn: error: $cmd: bad --window '-2,0'" \
        $cmd --window -2,0
    usage_error "$cmd: --window words" "^clattn: error: $cmd: bad --window 'a,b'" $cmd --window a,b
    usage_error "$cmd: --alibi-max-bias 0" "^clattn: error: $cmd: bad --alibi-max-bias '0'" \
        $cmd --alibi-max-bias 0
    usage_error "$cmd: slopes twice" "^clattn: error: $cmd: give the ALiBi slopes once" \
        $cmd --alibi-slopes slopes.npy --alibi-max-bias 4
done
for cmd in verify bench tune predict; do
    usage_error "$cmd: --dv 0" "^clattn: error: $cmd: bad --dv '0' \(V's head dimension, 1\.\.512\)" \
        $cmd --dv 0
    usage_error "$cmd: --dv 513" "^clattn: error: $cmd: bad --dv '513'" $cmd --dv 513
done
usage_error "run: no --dv" "^clattn: error: run: unknown option '--dv'" run --dv 8
usage_error "run: --mask random" "^clattn: error: run: --mask random: run draws no inputs" \
    run --q q.npy --k k.npy --v v.npy --out o.npy --mask random
usage_error "run: --sinks random" "^clattn: error: run: --sinks random: run draws no inputs" \
    run --q q.npy --k k.npy --v v.npy --out o.npy --sinks random
usage_error "verify: variants need --shape" \
    "^clattn: error: verify: .*the variant options go with --shape" verify --softcap 2
usage_error "verify: a mask that does not fit" \
    "^clattn: error: verify: --mask badmask.npy has shape \(3, 5, 19\), which does not broadcast" \
    verify --shape 2,4,2,5,19,16 --mask badmask.npy
usage_error "verify: slopes that do not fit" \
    "^clattn: error: verify: --alibi-slopes slopes_bad.npy: a float32 array of \[H = 4\]" \
    verify --shape 2,4,2,5,19,16 --alibi-slopes slopes_bad.npy
usage_error "tune: a mask file" "^clattn: error: tune: --mask: tune draws its own shapes" \
    tune -d 16 --mask keep.npy
usage_error "predict: a mask that does not fit" \
    "^clattn: error: predict: --mask keep.npy has shape" predict -N 64 --mask keep.npy

# ------------------------------------------------------ on the device
if ! "$CLATTN" devices >/dev/null 2>&1; then
    echo "SKIP: 'clattn devices' fails: no OpenCL device"
    exit 77
fi

cat >check.py <<'PY'
"""check.py O WHAT [key=value...]: O against attention over q, k, v here."""
import sys
import numpy as np
o_path, what = sys.argv[1], sys.argv[2]
kw = dict(a.split("=", 1) for a in sys.argv[3:])
def load(name):
    x = np.load(name)
    if x.dtype.kind == "V":  # bf16 bits
        x = (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
    return x.astype(np.float64)
q, k, v = load("q.npy"), load("k.npy"), load("v.npy")
if kw.get("bf16"):
    q, k, v = load("q_bf16.npy"), load("k_bf16.npy"), load("v_bf16.npy")
B, H, NQ, D = q.shape
HKV, NK = k.shape[1], k.shape[2]
causal = kw.get("causal")
off = 0 if causal == "top-left" else NK - NQ
i, j = np.arange(NQ)[:, None], np.arange(NK)[None, :]
vis = np.ones((NQ, NK), bool)
if causal:
    vis &= j <= i + off
if "window" in kw:
    left, right = map(int, kw["window"].split(","))
    if left >= 0: vis &= j >= i + off - left
    if right >= 0: vis &= j <= i + off + right
kk, vv = np.repeat(k, H // HKV, 1), np.repeat(v, H // HKV, 1)
s = q @ kk.transpose(0, 1, 3, 2) / np.sqrt(D)
if "softcap" in kw:
    c = float(kw["softcap"]); s = c * np.tanh(s / c)
if "slopes" in kw:
    sl = np.load(kw["slopes"]).astype(np.float64)
    sl = sl[:, :, None, None] if sl.ndim == 2 else sl[None, :, None, None]
    s = s - sl * np.abs(i + off - j)
vis = np.broadcast_to(vis, s.shape).copy()
if "mask" in kw:
    m = np.load(kw["mask"])
    if m.dtype == bool:
        vis &= np.broadcast_to(m, s.shape)
    else:
        s = s + np.broadcast_to(m.astype(np.float64), s.shape)
s = np.where(vis, s, -np.inf)
sink = np.load(kw["sinks"]).astype(np.float64)[None, :, None] if "sinks" in kw else None
mx = s.max(-1)
if sink is not None:
    mx = np.maximum(mx, sink)
mx = np.where(np.isfinite(mx), mx, 0)
p = np.exp(s - mx[..., None])
z = p.sum(-1) + (np.exp(sink - mx) if sink is not None else 0)
want = (p @ vv) / np.where(z > 0, z, 1)[..., None]
o = load(o_path)
tol = 3e-2 if kw.get("bf16") else 1e-4
err = np.abs(o - want).max()
if o.shape != want.shape or not err < tol:
    sys.exit("%s: shape %s (want %s), max abs error %g" % (what, o.shape, want.shape, err))
print("ok: run %s (max abs error %.2g)" % (what, err))
PY

run_ok() { # WHAT CHECK-ARGS -- RUN-ARGS: run, then check O
    what=$1 checks=$2
    shift 2
    run_it run --q q.npy --k k.npy --v v.npy --out o.npy "$@"
    [ "$rc" -eq 0 ] || fail "run $what: status $rc"
    python3 check.py o.npy "$what" $checks || fail "run $what: wrong output"
}
run_ok "window, bottom-right" "causal=bottom-right window=4,0" --causal br --window 4,0
grep -q "| window=4,0 dv=8 |" stdout || fail "run: the summary does not name the variant"
run_ok "bool mask, softcap" "mask=keep.npy softcap=1.5" --mask keep.npy --softcap 1.5
run_ok "fp16 additive mask [H, Nq, Nk], top-left" "mask=add.npy causal=top-left" \
    --mask add.npy --causal tl
run_ok "ALiBi slopes [B, H], sinks" "slopes=slopes.npy sinks=sinks.npy" \
    --alibi-slopes slopes.npy --sinks sinks.npy
run_ok "constant sinks, window both sides" "window=3,2" --window 3,2 --sinks -1000
run_ok "score_mod" "softcap=2" --score-mod softcap.cl
run_it run --q q_bf16.npy --k k_bf16.npy --v v_bf16.npy --out o.npy --window 6,-1 --json r.json
[ "$rc" -eq 0 ] || fail "run bf16: status $rc"
python3 check.py o.npy "bf16, window" bf16=1 window=6,-1 || fail "run bf16: wrong output"
python3 - <<'PY' || fail "run --json: the variant's fields"
import json
r = json.load(open("r.json"))
assert r["dtype"] == "bf16" and r["window_left"] == 6 and r["window_right"] == -1, r
assert r["head_dim_v"] == 8 and r["variant"] == "window=6,-1 dv=8", r
PY
run_it run --q q.npy --k k.npy --v v.npy --out o.npy --mask badmask.npy
[ "$rc" -eq 1 ] && grep -q "does not broadcast" stderr && [ ! -e o.npy.tmp ] ||
    fail "run: a mask that does not fit the files: status $rc"
run_it run --q q.npy --k k.npy --v v.npy --out o.npy --path naive --softcap 2
[ "$rc" -eq 1 ] && grep -q "the naive path takes no softcap" stderr ||
    fail "run --path naive --softcap: status $rc, want the naive path's refusal"
echo "ok: run's refusals"

# verify: a given variant case, its JSON, and a kernel that does not take it.
run_it verify --shape 2,4,2,7,50,16 --window 5,0 --causal br --mask random --sinks random \
    --dv 8 --dtype bf16 --kv-lens 50,20 --json v.json
[ "$rc" -eq 0 ] && grep -q "^1 passed, 0 failed, 1 refused" stdout ||
    fail "verify a given variant: status $rc"
grep -q "^naive bf16.*refused: the naive path takes no" stdout || fail "verify: naive not refused"
python3 - <<'PY' || fail "verify --json: the variant case"
import json
r = json.load(open("v.json"))
assert r["run"] == 1 and r["refused"] == 1 and r["failed"] == 0, r
fused = [c for c in r["cases"] if c["path"] == "fused"][0]
assert fused["passed"] and fused["variant"] == "window=5,0 sinks mask=bool[2,1] dv=8", fused
assert fused["lse_max_err"] < 2e-3, fused
naive = [c for c in r["cases"] if c["path"] == "naive"][0]
assert naive["refused"] and not naive["passed"], naive
PY
echo "ok: verify, a given variant"

# predict: the variant's table and JSON, no device needed for the figures.
run_it predict -B 1 -H 8 -d 128 -N 4096 --causal --window 1023,0 --mask random --dv 64 \
    --peak 100T --bandwidth 1T --capacity 80G --cache 40M --json p.json
[ "$rc" -eq 0 ] && grep -q "^Q6  the variant: window=1023,0 mask=bool\[1,1\] dv=64" stdout ||
    fail "predict: no variant table"
python3 - <<'PY' || fail "predict --json: the variant"
import json
row = json.load(open("p.json"))["rows"][0]
w = row["variant"]
# Window 1023 under the causal mask: query i sees min(i + 1, 1024) keys.
assert w["visible_pairs"] == 1024 * 1025 // 2 + (4096 - 1024) * 1024, w
assert w["mask_bytes"] == 8 * w["computed_pairs"], w  # bool: one byte per pair and head
assert w["head_dim_v"] == 64 and w["window_left"] == 1023, w
PY
echo "ok: predict's variant"

# bench: a small case with variants, rows checked (fused only by default).
run_it bench -B 2 -H 4 --kv-heads 2 -d 32 -N 100 --window 31,0 --mask random --alibi \
    --sinks random --softcap 5 --dv 16 --reps-seconds 0.01 --json b.json
[ "$rc" -eq 0 ] || fail "bench with variants: status $rc"
python3 - <<'PY' || fail "bench --json with variants"
import json
r = json.load(open("b.json"))
assert r["config"]["variant"]["mask"] == "random", r["config"]["variant"]
rows = r["rows"]
assert rows and all(x["path"] == "fused" and x["status"] == "ok" for x in rows), rows
PY
run_it bench -B 1 -H 2 -d 16 -N 64 --q-len 20 --causal br --window 9,0 --mask random-add \
    --check sampled --reps-seconds 0.01 --dtype bf16
[ "$rc" -eq 0 ] && grep -q "ok max_abs .*(4 samples x 16 rows)" stdout ||
    fail "bench --check sampled with a variant: status $rc"
echo "ok: bench with variants"

# tune: timed and checked with the variant, nothing recorded.
run_it tune -d 16 -B 1 -H 2 -N 40 --causal no --seconds 0.001 --tiles 16x16 --window 8,0 \
    --mask random --kernel portable
[ "$rc" -eq 0 ] && grep -q "(check rel_l2" stdout || fail "tune with a variant: status $rc"
[ ! -d cache/clattn ] || ! grep -rq "16x16" cache/clattn || fail "tune recorded a variant's tiles"
echo "ok: tune with a variant"
