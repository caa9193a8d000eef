#!/bin/sh
# End-to-end test of `clattn predict`: the seed's numbers from --preset seed
# (no device opened); a decoding step's figures (K and V read once, the split
# workspace written and read, per-sequence lengths with an empty sequence)
# as MODEL.md's worked example gives them, in JSON and in the Q5 table;
# usage errors for lengths given two ways and --kv-lens of the wrong count
# or above Nk; and, where an OpenCL device exists, a device with no saved
# measurement measured first (and not again).
#
# Usage: test_cli_predict.sh path/to/clattn
# Exit: 0 pass, 1 fail, 77 skip (no python3).
set -eu

CLATTN=${1:?usage: test_cli_predict.sh path/to/clattn}
TEST_NAME=test_cli_predict
. "$(dirname "$0")/cli_test_setup.sh"

predict() { run_clattn predict "$@"; }

# ------------------------------------------------------------------ seed
predict --preset seed --json
[ "$rc" -eq 0 ] || fail "--preset seed: exit status $rc"
python3 - <<'PY' || fail "--preset seed: JSON"
import json
d = json.load(open("stdout"))
assert (d["tool"], d["command"]) == ("clattn", "predict"), d
assert d["limits"]["scores_in_memory"]["n"] == 14188, d["limits"]
assert d["limits"]["fused_fits"]["n"] == 786432, d["limits"]
rows = d["rows"]
assert [r["kv_len"] for r in rows] == [1024, 4096, 16384]
assert rows[1]["per_head"]["naive_bytes"] == 132 << 20
assert rows[2]["all_heads"]["fused_bytes"] == 4 << 30
for r in rows:
    assert r["decode"]["splits"] == 1 and r["decode"]["splits_source"] == "none", r["decode"]
    assert r["fused"]["bytes"] == r["all_heads"]["fused_bytes"], "no split, no lengths"
print("ok: the seed")
PY
predict --preset seed
[ "$rc" -eq 0 ] || fail "--preset seed (text): exit status $rc"
grep -q "Q5" stdout && fail "--preset seed prints the decoding table"
echo "ok: seed tables"

# -------------------------------------------------------------- decoding
# MODEL.md: B=8 H=32 Hkv=8 Nq=1 Nk=65536 d=128 fp16 at 4.6 TB/s: 0.467 ms;
# 32 chunks add 2 x 4,259,840 bytes and a launch.
shape="-B 8 -H 32 --kv-heads 8 -d 128 --q-len 1 --kv-len 65536 --preset seed --bandwidth 4.6T --peak 989T"
predict $shape --json
[ "$rc" -eq 0 ] || fail "decoding: exit status $rc"
cp stdout one.json
predict $shape --split-kv 32 --json
[ "$rc" -eq 0 ] || fail "decoding with --split-kv: exit status $rc"
cp stdout split.json
predict $shape --kv-lens 65536,65536,65536,65536,16384,16384,16384,0 --json
[ "$rc" -eq 0 ] || fail "decoding with --kv-lens: exit status $rc"
cp stdout lens.json
python3 - <<'PY' || fail "decoding: JSON"
import json
one = json.load(open("one.json"))["rows"][0]
assert (one["q_len"], one["kv_len"]) == (1, 65536), one
assert one["fused"]["bytes"] == 2147614720, one["fused"]["bytes"]
assert abs(one["fused"]["time_s"] - 2147614720 / 4.6e12) < 1e-12, one["fused"]["time_s"]
assert one["fused"]["launches"] == 1 and one["fused"]["bound"] == "memory"

split = json.load(open("split.json"))["rows"][0]
dec = split["decode"]
assert dec["splits"] == 32 and dec["splits_source"] == "given", dec
assert dec["split_workspace_bytes"] == 4259840, dec
assert split["fused"]["bytes"] == 2147614720 + 2 * 4259840, split["fused"]
assert split["fused"]["launches"] == 2
assert split["fused"]["workspace_bytes"] == 4259840
assert split["fused"]["peak_bytes"] == one["fused"]["peak_bytes"] + 4259840

lens = json.load(open("lens.json"))
assert lens["shape"]["kv_lens"][-1] == 0, lens["shape"]
r = lens["rows"][0]
assert r["decode"]["empty_sequences"] == 1 and r["decode"]["kv_rows_read"] == 4 * 65536 + 3 * 16384
rows = 4 * 65536 + 3 * 16384
# K and V of each sequence's own keys, Q of the seven with keys, O of all eight.
assert r["fused"]["bytes"] == 2 * rows * 8 * 128 * 2 + 7 * 8192 + 8 * 8192, r["fused"]["bytes"]
print("ok: decoding figures")
PY
predict $shape --split-kv 32 --kv-lens 65536,65536,65536,65536,16384,16384,16384,0
[ "$rc" -eq 0 ] || fail "decoding (text): exit status $rc"
grep -q "^Q5  decoding" stdout || fail "decoding: no Q5 table"
grep -q "per-sequence keys: 65536,65536,65536,65536,16384,16384,16384,0 (1 empty" stdout ||
    fail "decoding: the lengths are not shown"
grep -q "^ *1/65536 *32 (given)" stdout || fail "decoding: the split is not shown"
echo "ok: decoding tables"

# ---------------------------------------------------------- usage errors
predict --preset seed -B 2 --kv-lens 1
[ "$rc" -eq 2 ] && grep -q "gives 1 lengths; the shape has B = 2" stderr ||
    fail "--kv-lens count: status $rc"
predict --preset seed -B 2 -N 100,50 --kv-lens 10,60
[ "$rc" -eq 2 ] && grep -q "sequence 1 has 60 keys, more than the Nk = 50" stderr ||
    fail "--kv-lens above Nk: status $rc"
predict --preset seed --q-len 1 --nq 1 --nk 8
[ "$rc" -eq 2 ] || fail "--q-len with --nq: status $rc"
predict --preset seed -N 8 --kv-len 16
[ "$rc" -eq 2 ] || fail "-N with --kv-len: status $rc"
predict --preset seed --split-kv x
[ "$rc" -eq 2 ] || fail "bad --split-kv: status $rc"
echo "ok: usage errors"

# ------------------------------------------- a device with nothing saved
if ! "$CLATTN" devices >/dev/null 2>&1; then
    echo "note: no OpenCL device: measuring on first use not tested"
    echo "PASS"
    exit 0
fi
predict --device 0 -B 1 -H 4 --kv-heads 1 -d 64 --q-len 1 --kv-len 4096 --json
[ "$rc" -eq 0 ] || fail "--device: exit status $rc"
grep -q "note: no measured ceilings were saved for this device: measured them" stderr ||
    fail "--device: the ceilings were not measured"
ls cache/clattn/*.txt >/dev/null 2>&1 || fail "--device: the measurement was not saved"
python3 - <<'PY' || fail "--device: JSON"
import json
d = json.load(open("stdout"))
assert d["device"]["bandwidth_bytes_per_s"]["source"] == "measured", d["device"]
assert d["rows"][0]["fused"]["time_s"], "no time with measured ceilings"
assert d["rows"][0]["decode"]["splits_source"] == "device", d["rows"][0]["decode"]
PY
predict --device 0 -B 1 -H 4 --kv-heads 1 -d 64 --q-len 1 --kv-len 4096
[ "$rc" -eq 0 ] || fail "--device again: exit status $rc"
grep -q "measured them" stderr && fail "--device again: measured a second time"
grep -q "^Q5  decoding" stdout || fail "--device: no Q5 table for a decoding row"
echo "ok: measured on first use"
echo "PASS"
