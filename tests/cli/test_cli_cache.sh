#!/bin/sh
# SPDX-License-Identifier: MIT
# The KV cache's forms on the command line (--kv-type, --k-type, --v-type,
# --page-size, --packed, --q-lens) in every command that takes them: usage
# errors (one line, status 2); predict's cache bytes (Q7) and serving answer
# (Q8: tokens that fit, time per token) against the arithmetic written out
# here, and no new JSON field without a cache option; then, where an OpenCL
# device exists, `clattn run --check` on quantized, paged and packed inputs
# (the plain forms also against a numpy reference, the quantized ones shown
# to differ from it), a bench whose every row is checked, and verify with a
# given cache case.
#
# Usage: test_cli_cache.sh path/to/clattn
# Exit: 0 pass, 1 fail, 77 skip (no python3 with numpy; or no OpenCL device
# for the part that runs, after the device-free part ran).
set -eu

CLATTN=${1:?usage: test_cli_cache.sh path/to/clattn}
TEST_NAME=test_cli_cache
# CLATTN absolute, the default device, python3 or exit 77, a scratch $dir
# (entered), fail and run_clattn.
. "$(dirname "$0")/cli_test_setup.sh"
python3 -c "import numpy" 2>/dev/null || { echo "SKIP: python3 has no numpy"; exit 77; }


# ------------------------------------------------------------ usage errors
# Every figure given: predict opens no device.
figs="--capacity 10G --max-alloc 10G --cache 1M --bandwidth 1T --peak 100T"
usage_error "predict --kv-type bogus" "bad --kv-type 'q9'" predict --kv-type q9 $figs
usage_error "run --k-type bogus" "bad --k-type" run --q q.npy --k k.npy --v v.npy --out o.npy \
    --k-type f17
usage_error "bench --page-size 0" "bad --page-size '0'" bench --page-size 0
usage_error "verify --packed with pages" "take no pages" verify --shape 1,1,1,1,8,32 --packed \
    --page-size 4
usage_error "verify cache options without --shape" "go with --shape" verify --kv-type q8_0
usage_error "predict --q-lens count" "--q-lens gives 1 lengths; the shape has B = 2" \
    predict -B 2 -N 64 --q-lens 3 $figs
usage_error "predict --q-lens above Nq" "sequence 1 has 9 queries, more than the Nq = 8" \
    predict -B 2 -N 64 --q-len 8 --q-lens 3,9 $figs
usage_error "predict q8_0 with d = 48" "bad shape: .*blocks of 32" \
    predict -B 1 -d 48 -N 64 --kv-type q8_0 $figs
usage_error "predict --layers 0" "bad --layers '0'" predict --layers 0 $figs

# ------------------------------------------------------------ predict
# B = 2 sequences of Nk = 1000 keys, H = 8, Hkv = 2, d = 128, one query
# (Q and O 4096 bytes each); tests/test_model.c has the same by hand.
shape="-B 2 -H 8 --kv-heads 2 -d 128 --q-len 1 -N 1000 $figs"
run_clattn predict $shape --json
[ "$rc" -eq 0 ] || fail "predict plain: status $rc"
cp stdout plain.json
run_clattn predict $shape --kv-type q8_0 --json
[ "$rc" -eq 0 ] || fail "predict q8_0: status $rc"
cp stdout q8.json
run_clattn predict $shape --k-type q4_0 --v-type fp8_e4m3 --json
[ "$rc" -eq 0 ] || fail "predict q4_0 + fp8: status $rc"
cp stdout mixed.json
run_clattn predict $shape --kv-type q8_0 --page-size 256 --json
[ "$rc" -eq 0 ] || fail "predict paged: status $rc"
cp stdout paged.json
run_clattn predict -B 2 -H 8 --kv-heads 2 -d 128 --q-len 4 -N 1000 --kv-lens 1000,300 \
    --q-lens 4,1 --packed --causal br $figs --json
[ "$rc" -eq 0 ] || fail "predict packed: status $rc"
cp stdout packed.json
python3 - <<'PY' || fail "predict: the cache's bytes"
import json
plain, q8, mixed, paged, packed = (json.load(open(n + ".json"))
                                   for n in ("plain", "q8", "mixed", "paged", "packed"))
qo = 2 * 8 * 128 * 2 * 2
# Without a cache option the JSON has no new field (clattn.predict's view).
assert "cache" not in plain and "cache" not in plain["rows"][0], plain.keys()
assert plain["rows"][0]["fused"]["bytes"] == 2 * 2 * 2 * 1000 * 128 * 2 + qo
r = q8["rows"][0]
assert q8["cache"] == {"k_type": "q8_0", "v_type": "q8_0", "page_size": 0, "packed": False,
                       "q_lens": None, "layers": 0}, q8["cache"]
assert (r["cache"]["k_row_bytes"], r["cache"]["k_bytes"]) == (136, 2 * 2 * 1000 * 136), r["cache"]
assert r["cache"]["dtype_kv_bytes"] == 2048000
assert r["fused"]["bytes"] == 2 * 544000 + qo, r["fused"]["bytes"]
assert r["fused"]["peak_bytes"] == 2 * 544000 + qo
assert r["naive"]["bytes"] == plain["rows"][0]["naive"]["bytes"], "the naive path's own bytes"
r = mixed["rows"][0]
assert (r["cache"]["k_bytes"], r["cache"]["v_bytes"], r["cache"]["scale_bytes"]) == \
    (288000, 512000, 4), r["cache"]
assert r["fused"]["bytes"] == 288000 + 512000 + 4 + qo
r = paged["rows"][0]
assert r["cache"]["table_bytes"] == 2 * 4 * 4, r["cache"]
assert r["fused"]["bytes"] == 2 * 544000 + qo + 32
assert r["cache"]["k_buffer_bytes"] == 8 * 2 * 256 * 136
assert r["fused"]["peak_bytes"] == 2 * 557056 + qo + 32
r = packed["rows"][0]
assert (r["cache"]["q_rows"], r["cache"]["kv_rows"], r["cache"]["seqlens_bytes"]) == \
    (5, 1300, 24), r["cache"]
assert r["fused"]["bytes"] == 10 * 8 * 128 * 2 + 1300 * 2 * 2 * 128 * 2 + 24, r["fused"]["bytes"]
assert r["decode"]["computed_pairs"] == 4300, r["decode"]
print("ok: predict's cache bytes")
PY

# Serving: 32 layers of Hkv = 8, d = 128, q8_0 in pages of 16 in 10 GiB; a
# decoding step of B = 8 sequences at 4096 and 32768 keys, at 1 TB/s.
run_clattn predict -B 8 -H 32 --kv-heads 8 -d 128 -N 4096,32768 --kv-type q8_0 --page-size 16 \
    --layers 32 --free 10G --causal br $figs --json
[ "$rc" -eq 0 ] || fail "predict --layers: status $rc"
cp stdout serving.json
python3 - <<'PY' || fail "predict --layers: JSON"
import json
d = json.load(open("serving.json"))
assert d["cache"]["layers"] == 32
for r, n in zip(d["rows"], (4096, 32768)):
    s = r["serving"]
    token = 32 * 8 * (136 + 136)
    assert (s["token_bytes"], s["page_bytes"]) == (token, token * 16), s
    pages = (10 << 30) // (token * 16)
    assert (s["pages"], s["tokens"]) == (pages, pages * 16), s
    assert s["sequences"] == pages // (n // 16), s
    assert (s["q_len"], s["kv_len"]) == (1, n), s
    assert s["free_bytes"] == {"value": 10 << 30, "source": "given"}, s["free_bytes"]
    layer = 2 * 8 * 8 * n * 136 + 2 * 8 * 32 * 128 * 2 + 8 * (n // 16) * 4
    assert s["step_bytes"] == 32 * layer, (s["step_bytes"], 32 * layer)
    assert abs(s["step_time_s"] - 32 * layer / 1e12) < 1e-9 * s["step_time_s"], s
    assert abs(s["tokens_per_s"] - 8 / s["step_time_s"]) < 1e-6 * s["tokens_per_s"]
    assert s["fit"] == ("fits" if 8 * n // 16 <= pages else "exceeds capacity"), s
print("ok: predict --layers:", d["rows"][0]["serving"]["tokens"], "tokens fit")
PY
run_clattn predict -B 8 -H 32 --kv-heads 8 -d 128 -N 4096 --kv-type fp8 --layers 32 --free 10G \
    $figs
[ "$rc" -eq 0 ] || fail "predict --layers (tables): status $rc"
grep -q "^Q7  the KV cache: kv=fp8_e4m3" stdout || fail "predict: no Q7 table"
grep -q "^Q8  serving: 32 layers" stdout || fail "predict: no Q8 table"
grep -q "163,839" stdout || fail "predict: 10 GiB of fp8 tokens (less the scales) is 163,839"
echo "ok: predict's Q7 and Q8 tables"

# ------------------------------------------------------- on a device
if ! "$CLATTN" devices >/dev/null 2>&1; then
    echo "SKIP: 'clattn devices' fails: no OpenCL device"
    exit 77
fi

cat >make.py <<'PY'
import numpy as np
rng = np.random.default_rng(3)
B, H, HKV, NQ, NK, D = 2, 4, 2, 5, 70, 32
for name, shape in (("q", (B, H, NQ, D)), ("k", (B, HKV, NK, D)), ("v", (B, HKV, NK, D))):
    np.save(name + ".npy", rng.uniform(-1, 1, shape).astype(np.float32))
PY
python3 make.py
cat >ref.py <<'PY'
# ref.py O.npy KV_LENS Q_LENS CAUSAL TOL [differs]: O against attention in
# float64 over each sequence's own keys and queries (rows past q zero);
# with "differs", its error must exceed TOL (the cache was quantized).
import sys
import numpy as np
o, kv_lens, q_lens, causal, tol = sys.argv[1:6]
q, k, v = (np.load(n + ".npy").astype(np.float64) for n in "qkv")
B, H, NQ, D = q.shape
kv_lens = [int(x) for x in kv_lens.split(",")] if kv_lens != "-" else [k.shape[2]] * B
q_lens = [int(x) for x in q_lens.split(",")] if q_lens != "-" else [NQ] * B
want = np.zeros((B, H, NQ, D))
for b in range(B):
    L, n = kv_lens[b], q_lens[b]
    for h in range(H):
        kk, vv = k[b, h // (H // k.shape[1]), :L], v[b, h // (H // k.shape[1]), :L]
        s = q[b, h, :n] @ kk.T / np.sqrt(D)
        if causal == "br":
            s = np.where(np.arange(L)[None, :] <= np.arange(n)[:, None] + L - n, s, -np.inf)
        seen = np.isfinite(s).any(axis=1)  # a row that sees no key is zeros
        if L == 0 or not seen.any():
            continue
        p = np.exp(s[seen] - s[seen].max(axis=1, keepdims=True))
        want[b, h, :n][seen] = (p / p.sum(axis=1, keepdims=True)) @ vv
got = np.load(o).astype(np.float64)
err = np.abs(got - want).max()
if len(sys.argv) > 6:
    assert err > float(tol), "O equals the unquantized reference (%g): not quantized?" % err
else:
    assert err <= float(tol), "max error %g > %s" % (err, tol)
print("max error %.2e" % err)
PY

# run_check NAME ARGS...: clattn run --check succeeds, and its JSON says so.
run_check() {
    name=$1
    shift
    run_clattn run --q q.npy --k k.npy --v v.npy --out o.npy --check --json run.json "$@"
    [ "$rc" -eq 0 ] || fail "run $name: status $rc"
    grep -q "check max_abs .* ok$" stdout || fail "run $name: the summary's check"
    python3 -c "
import json; d = json.load(open('run.json'))
assert d['check']['ok'] is True, d['check']
assert d['kernel'].startswith('fused/'), d['kernel']
print('    ' + d['kernel'], 'max_abs %.1e' % d['check']['max_abs'])" || fail "run $name: JSON"
    echo "ok: run $name"
}

for t in q8_0 q4_0 fp8_e4m3; do
    run_check "--kv-type $t" --kv-type "$t" --kv-lens 70,29
    python3 -c "
import json; d = json.load(open('run.json')); c = d['cache']
assert (c['k_type'], c['v_type']) == ('$t', '$t'), c
assert (c['k_scale'] is not None) == ('$t' == 'fp8_e4m3'), c"
    python3 ref.py o.npy 70,29 - none 1e-4 differs >/dev/null || fail "run $t: not quantized"
done
run_check "K q8_0, V q4_0" --k-type q8_0 --v-type q4_0
run_check "pages of 16" --page-size 16 --kv-lens 70,1 --causal br
python3 ref.py o.npy 70,1 - br 1e-5 >/dev/null || fail "run pages of 16: against numpy"
python3 -c "
import json; c = json.load(open('run.json'))['cache']
assert (c['page_size'], c['num_pages']) == (16, 2 * 5 + 1), c"
run_check "pages of 256, q8_0" --page-size 256 --kv-type q8_0
run_check "packed" --packed --q-lens 5,2 --kv-lens 70,33 --causal br --lse-out lse.npy
python3 ref.py o.npy 70,33 5,2 br 1e-5 >/dev/null || fail "run packed: against numpy"
python3 -c "
import json, numpy as np
c = json.load(open('run.json'))['cache']
assert (c['packed'], c['total_q'], c['total_k']) == (True, 7, 103), c
lse = np.load('lse.npy')
assert lse.shape == (2, 4, 5) and np.isneginf(lse[1, :, 2:]).all(), lse[1]" \
    || fail "run packed: JSON, LSE"
run_check "packed q4_0" --packed --kv-type q4_0 --q-lens 0,5

# ------------------------------------------------------------- bench
run_clattn bench -B 2 -H 4 --kv-heads 2 -d 32 -N 130 --q-len 3 --kv-type q8_0 --page-size 16 \
    --causal br --reps-seconds 0 --json bench.json
[ "$rc" -eq 0 ] || fail "bench q8_0 pages: status $rc"
run_clattn bench -B 3 -H 4 --kv-heads 2 -d 32 -N 90 --q-len 9 --q-lens 9,0,4 --kv-lens 90,0,31 \
    --packed --kv-type q4_0 --causal none --reps-seconds 0 --json packed_bench.json
[ "$rc" -eq 0 ] || fail "bench packed q4_0: status $rc"
python3 - <<'PY' || fail "bench: JSON"
import json
for name, want in (("bench.json", ("q8_0", 16, False)), ("packed_bench.json", ("q4_0", 0, True))):
    d = json.load(open(name))
    c = d["config"]["cache"]
    assert (c["k_type"], c["page_size"], c["packed"]) == want, c
    assert d["rows"] and all(r["check_ok"] is True and r["path"] == "fused" for r in d["rows"])
# q8_0: K and V of 2 x 2 x 130 rows of 34 x 32 / 32 bytes, Q and O 2 x 4 x 3 x 32 x 2
r = json.load(open("bench.json"))["rows"][0]
assert r["model_bytes"] == 2 * 2 * 2 * 130 * 34 + 2 * 2 * 4 * 3 * 32 * 2 + 2 * 9 * 4 \
    + 2 * r["split_workspace_bytes"], r["model_bytes"]
print("ok: bench with a cache")
PY

# ------------------------------------------------------------ tune
# Candidates timed and checked on a q4_0 cache in pages; nothing recorded.
run_clattn tune -B 1 -H 2 -d 32 -N 100 --q-len 1 --kv-type q4_0 --page-size 16 \
    --seconds 0.01 --causal none --kernel portable --json tune.json
[ "$rc" -eq 0 ] || fail "tune with a cache: status $rc"
python3 - <<'PY' || fail "tune with a cache: JSON"
import json
d = json.load(open("tune.json"))
assert d["cache"]["k_type"] == "q4_0" and d["cache"]["page_size"] == 16, d["cache"]
assert d["save"] is False, d["save"]
cands = d["results"][0]["candidates"]
assert cands and all(c["status"] == "ok" and c["checked"] for c in cands), cands
print("ok: tune with a cache")
PY

# ------------------------------------------------------------ verify
run_clattn verify --shape 2,4,2,3,100,64 --dtype fp16 --kv-type q4_0 --page-size 32 \
    --kv-lens 100,7 --causal br --json verify.json
[ "$rc" -eq 0 ] || fail "verify a given cache case: status $rc"
python3 -c "
import json; d = json.load(open('verify.json'))
fused = [c for c in d['cases'] if c['path'] == 'fused']
assert len(fused) == 1 and fused[0]['passed'] and fused[0]['cache']['page_size'] == 32, fused
naive = [c for c in d['cases'] if c['path'] == 'naive']
assert len(naive) == 1 and naive[0]['passed'], naive" || fail "verify: JSON"
# The naive path gathers pages and quantized K and V; it refuses a packed batch.
run_clattn verify --shape 2,4,2,3,100,64 --dtype fp16 --packed --q-lens 3,1 --kv-lens 50,100 \
    --path naive --json verify.json
python3 -c "
import json; d = json.load(open('verify.json'))
assert [c['refused'] for c in d['cases']] == [True], d['cases']" || fail "verify: naive packed"
echo "ok: verify a given cache case"
