#!/bin/sh
# SPDX-License-Identifier: MIT
# End-to-end test of `clattn run`: bad inputs are refused with one line on
# stderr, the right exit status and no output file; good inputs give a valid
# .npy whose values match softmax attention computed here in plain Python.
#
# Inputs are written with Python's standard library only (struct, and the
# header by hand), so the test does not depend on numpy.
#
# Usage: test_cli_run.sh path/to/clattn
# Exit: 0 pass, 1 fail, 77 skip (no python3, or no OpenCL device for the
# part that runs attention; the argument and input checks run regardless).
set -eu

CLATTN=${1:?usage: test_cli_run.sh path/to/clattn}
TEST_NAME=test_cli_run
# CLATTN absolute, the default device, python3 or exit 77, a scratch $dir
# (entered), fail and run_clattn.
. "$(dirname "$0")/cli_test_setup.sh"

# ----------------------------------------------------------------- helpers
# npyutil.py make DIR      writes the inputs (good and bad) into DIR
# npyutil.py check O Q K V CAUSAL SCALE TOL
#                          checks O's header and shape and compares it with
#                          attention over Q, K, V; prints the max abs error
# npyutil.py clone DEV PATH  makes PATH a node for DEV's device (root only)
# npyutil.py same PATH DEV   checks PATH is still a node for DEV's device
cat >"$dir/npyutil.py" <<'PY'
import ast, math, random, struct, sys

FMT = {'<f4': 'f', '<f2': 'e', '<f8': 'd'}

def header(descr, shape, fortran=False):
    d = "{'descr': '%s', 'fortran_order': %s, 'shape': %s, }" % (
        descr, 'True' if fortran else 'False', repr(tuple(shape)))
    total = 10 + len(d) + 1
    total += 64 - total % 64
    pad = total - 10 - len(d) - 1
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', total - 10) + \
        (d + ' ' * pad + '\n').encode('latin1')

def write(path, descr, shape, values, fortran=False, cut=0):
    data = struct.pack('<%d%s' % (len(values), FMT[descr]), *values)
    with open(path, 'wb') as f:
        f.write(header(descr, shape, fortran) + data[:len(data) - cut])

def read(path):
    with open(path, 'rb') as f:
        raw = f.read()
    if raw[:8] != b'\x93NUMPY\x01\x00':
        sys.exit('%s: bad magic or version %r' % (path, raw[:8]))
    hlen = struct.unpack('<H', raw[8:10])[0]
    if (10 + hlen) % 64:
        sys.exit('%s: header not padded to 64 bytes' % path)
    h = ast.literal_eval(raw[10:10 + hlen].decode('latin1'))
    if h['fortran_order'] or h['descr'] not in ('<f4', '<f2'):
        sys.exit('%s: unexpected header %r' % (path, h))
    n = 1
    for s in h['shape']:
        n *= s
    size = 4 if h['descr'] == '<f4' else 2
    body = raw[10 + hlen:]
    if len(body) != n * size:
        sys.exit('%s: %d data bytes, want %d' % (path, len(body), n * size))
    return h['descr'], tuple(h['shape']), struct.unpack('<%d%s' % (n, FMT[h['descr']]), body)

def rand(rng, n):
    return [rng.uniform(-2.0, 2.0) for _ in range(n)]

def make(d):
    rng = random.Random(1234)
    # GQA (H=2 over Hkv=1), B=2, Nq != Nk, nothing a multiple of a tile.
    B, H, HKV, NQ, NK, D = 2, 2, 1, 5, 7, 8
    q, k, v = rand(rng, B*H*NQ*D), rand(rng, B*HKV*NK*D), rand(rng, B*HKV*NK*D)
    for descr, tag in (('<f4', ''), ('<f2', '16')):
        write('%s/q%s.npy' % (d, tag), descr, (B, H, NQ, D), q)
        write('%s/k%s.npy' % (d, tag), descr, (B, HKV, NK, D), k)
        write('%s/v%s.npy' % (d, tag), descr, (B, HKV, NK, D), v)
    write(d + '/q64.npy', '<f8', (B, H, NQ, D), q)
    write(d + '/q3d.npy', '<f4', (B*H, NQ, D), q)
    write(d + '/qfortran.npy', '<f4', (B, H, NQ, D), q, fortran=True)
    write(d + '/qtrunc.npy', '<f4', (B, H, NQ, D), q, cut=12)
    write(d + '/kd4.npy', '<f4', (B, HKV, NK, 4), k[:B*HKV*NK*4])
    write(d + '/vshort.npy', '<f4', (B, HKV, NK - 1, D), v[:B*HKV*(NK-1)*D])
    write(d + '/k3heads.npy', '<f4', (B, 3, NK, D), rand(rng, B*3*NK*D))
    write(d + '/v3heads.npy', '<f4', (B, 3, NK, D), rand(rng, B*3*NK*D))
    # A header declaring 64 GiB of data, followed by 100 bytes.
    with open(d + '/claims64g.npy', 'wb') as f:
        f.write(header('<f4', (16, 1 << 30)) + bytes(100))

def clone_device(dev, path):
    """A node for the same device as dev (root only), so the tests can write
    to their own /dev/null and /dev/full rather than the system's."""
    import os, stat
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.stat(dev).st_rdev)
    except OSError as e:
        sys.exit('cannot make a device node: %s' % e)

def same_device(path, dev):
    import os, stat
    st = os.lstat(path)
    if not stat.S_ISCHR(st.st_mode) or st.st_rdev != os.stat(dev).st_rdev:
        sys.exit('%s is no longer a character device like %s' % (path, dev))

def attention(q, k, v, shape_q, shape_k, causal, scale, lens=None, lse=None):
    """O (and, into lse, each row's log-sum-exp) over each sequence's first
    lens[b] keys; a bottom-right mask aligns to that length."""
    B, H, NQ, D = shape_q
    HKV, NK = shape_k[1], shape_k[2]
    scale = scale or 1.0 / math.sqrt(D)
    o = []
    for b in range(B):
        L = lens[b] if lens else NK
        for h in range(H):
            g = h // (H // HKV)
            base_k = (b * HKV + g) * NK * D
            for i in range(NQ):
                qi = q[((b * H + h) * NQ + i) * D:][:D]
                seen = [j for j in range(L)
                        if causal == 'none' or
                        (causal == 'top-left' and j <= i) or
                        (causal == 'bottom-right' and j <= i + L - NQ)]
                if not seen:
                    o.extend([0.0] * D)
                    if lse is not None:
                        lse.append(-math.inf)
                    continue
                s = [scale * sum(qi[c] * k[base_k + j * D + c] for c in range(D)) for j in seen]
                m = max(s)
                p = [math.exp(x - m) for x in s]
                z = sum(p)
                if lse is not None:
                    lse.append(m + math.log(z))
                o.extend(sum(p[t] * v[base_k + j * D + c] for t, j in enumerate(seen)) / z
                         for c in range(D))
    return o

def check_lse(o_path, lse_path, q_path, k_path, v_path, causal, lens, tol):
    """O and the LSE file against the reference with per-sequence lengths."""
    _, sq, q = read(q_path)
    _, sk, k = read(k_path)
    _, _, v = read(v_path)
    _, _, o = read(o_path)
    dl, sl, lse = read(lse_path)
    if dl != '<f4' or sl != sq[:3]:
        sys.exit('%s: %s %r, want <f4 %r' % (lse_path, dl, sl, sq[:3]))
    lens = [int(x) for x in lens.split(',')]
    ref_lse = []
    ref = attention(q, k, v, sq, sk, causal, 0, lens, ref_lse)
    err = max(abs(a - b) for a, b in zip(o, ref))
    for a, b in zip(lse, ref_lse):
        if math.isinf(b):
            if not (math.isinf(a) and a < 0):
                sys.exit('%s: %r where the row sees no key (want -inf)' % (lse_path, a))
        else:
            err = max(err, abs(a - b))
    print('max abs error %.3g over O and LSE (tolerance %g)' % (err, float(tol)))
    if not err < float(tol):
        sys.exit('O or LSE: max abs error %g above %g' % (err, float(tol)))

def check_json(path, *want):
    """The --json report parses and holds the fields named KEY=VALUE."""
    import json
    with open(path) as f:
        d = json.load(f)
    for kv in want:
        key, value = kv.split('=', 1)
        node = d
        for part in key.split('.'):
            node = node[part]
        if str(node) != value:
            sys.exit('%s: %s is %r, want %r' % (path, key, node, value))
    for part in ('total', 'build', 'upload', 'device', 'download'):
        if not d['seconds'][part] >= 0:
            sys.exit('%s: seconds.%s is %r' % (path, part, d['seconds'][part]))

def check(o_path, q_path, k_path, v_path, causal, scale, tol):
    dq, sq, q = read(q_path)
    _, sk, k = read(k_path)
    _, _, v = read(v_path)
    do, so, o = read(o_path)
    if do != dq or so != sq:
        sys.exit('%s: %s %r, want %s %r' % (o_path, do, so, dq, sq))
    ref = attention(q, k, v, sq, sk, causal, float(scale))
    err = max(abs(a - b) for a, b in zip(o, ref))
    print('max abs error %.3g (tolerance %g)' % (err, float(tol)))
    if not err < float(tol):
        sys.exit('%s: max abs error %g above %g' % (o_path, err, float(tol)))

if sys.argv[1] == 'make':
    make(sys.argv[2])
elif sys.argv[1] == 'clone':
    clone_device(*sys.argv[2:])
elif sys.argv[1] == 'same':
    same_device(*sys.argv[2:])
elif sys.argv[1] == 'lse':
    check_lse(*sys.argv[2:])
elif sys.argv[1] == 'json':
    check_json(*sys.argv[2:])
else:
    check(*sys.argv[2:])
PY
# Everything below runs inside $dir (the setup entered it) with short
# relative names, so messages are easy to match and paths with spaces
# cannot split arguments.
python3 npyutil.py make .

out=out.npy

# run_run ARGS...: `clattn run ARGS` (the setup's run_clattn) with the
# output file removed first; stdout and stderr in $dir, status in $rc.
run_run() {
    rm -f "$out"
    run_clattn run "$@"
}

# expect_error NAME STATUS PATTERN ARGS...: the run fails with STATUS, one
# line on stderr matching PATTERN (grep -E, case-insensitive), nothing on
# stdout, and neither the output nor a temporary next to it exists.
expect_error() {
    name=$1 status=$2 pattern=$3
    shift 3
    run_run "$@"
    [ "$rc" -eq "$status" ] || fail "$name: exit status $rc, want $status"
    [ "$(wc -l <"$dir/stderr")" -eq 1 ] || fail "$name: stderr is not one line"
    grep -qiE -- "$pattern" "$dir/stderr" || fail "$name: stderr does not match '$pattern'"
    [ ! -s "$dir/stdout" ] || fail "$name: something on stdout"
    [ ! -e "$out" ] || fail "$name: $out exists"
    for tmp in "$out".*; do
        [ ! -e "$tmp" ] || fail "$name: temporary $tmp left behind"
    done
    echo "ok: $name"
}

good="--q q.npy --k k.npy --v v.npy --out $out"

# ------------------------------------------------- usage errors (status 2)
"$CLATTN" run --help >"$dir/stdout" 2>"$dir/stderr" || fail "--help exit status"
grep -q "usage: clattn run" "$dir/stdout" || fail "--help prints no usage"
expect_error "bad --path" 2 "path.*warp" $good --path warp
expect_error "bad --causal" 2 "causal" $good --causal=sideways
expect_error "bad --scale" 2 "scale" $good --scale abc
expect_error "--scale that rounds to 0 in float" 2 "scale" $good --scale 1e-50
expect_error "--scale that is subnormal in float" 2 "scale" $good --scale 1e-40
expect_error "unknown option" 2 "unknown option.*--frobnicate" $good --frobnicate
expect_error "missing --out" 2 "missing --out" --q "q.npy" --k "k.npy" --v "v.npy"
expect_error "option without value" 2 "--device.*value" $good --device
expect_error "empty value" 2 "option --out needs a value" --q q.npy --k k.npy --v v.npy --out=
expect_error "bad --split-kv" 2 "run: bad --split-kv 'two'.*see clattn run --help" $good \
    --split-kv two
expect_error "bad --kv-lens" 2 "run: bad --kv-lens '3,,4'" $good --kv-lens 3,,4
expect_error "operand" 2 "run: unexpected argument 'extra'" $good extra
expect_error "two outputs on stdout" 2 "--out and --json cannot both go to stdout" \
    --q q.npy --k k.npy --v v.npy --out - --json -

# -------------------------------------- outputs naming one file (status 2)
# Two outputs, or an output and an input, that are one file: the same path
# however spelled, or a hard link to it.
expect_error "--out and --lse-out one file" 2 \
    "--out 'out.npy' and --lse-out 'out.npy' name the same file" $good --lse-out out.npy
expect_error "--out and --json one file" 2 \
    "--out 'out.npy' and --json 'out.npy' name the same file" $good --json out.npy
expect_error "one file spelled two ways" 2 \
    "--out 'out.npy' and --lse-out './out.npy' name the same file" $good --lse-out ./out.npy
cp q.npy q.keep
expect_error "--out is the input --q" 2 "--out 'q.npy' names the input --q 'q.npy'" \
    --q q.npy --k k.npy --v v.npy --out q.npy
cmp -s q.npy q.keep || fail "--out is the input --q: q.npy changed"
ln k.npy k.link
expect_error "--lse-out is a hard link to --k" 2 \
    "--lse-out 'k.link' names the input --k 'k.npy'" $good --lse-out k.link
printf 'one' >o1.npy
ln o1.npy o2.npy
expect_error "two outputs hard-linked" 2 "--out 'o1.npy' and --json 'o2.npy' name the same file" \
    --q q.npy --k k.npy --v v.npy --out o1.npy --json o2.npy
[ "$(cat o1.npy)" = one ] || fail "two outputs hard-linked: o1.npy changed"
rm -f q.keep k.link o1.npy o2.npy

# ---------------------------------------------- bad input files (status 1)
# NAME; PATTERN; Q K V OUT: each refused with status 1.
while IFS=';' read -r name pattern files; do
    set -- $files
    expect_error "$name" 1 "$pattern" --q "$1" --k "$2" --v "$3" --out "$4"
done <<EOF
missing file;nothere\.npy.*(no such file|cannot open);nothere.npy k.npy v.npy $out
float64;q64\.npy.*'<f8'.*not supported;q64.npy k.npy v.npy $out
3-D array;q3d\.npy.*4-D.*3-D;q3d.npy k.npy v.npy $out
fortran order;qfortran\.npy.*fortran;qfortran.npy k.npy v.npy $out
truncated data;qtrunc\.npy.*truncated;qtrunc.npy k.npy v.npy $out
head dims disagree;head dim.*d=8.*d=4;q.npy kd4.npy kd4.npy $out
K and V disagree;vshort\.npy.*must agree on B, Hkv and Nk;q.npy k.npy vshort.npy $out
H not a multiple of Hkv;H=2.*Hkv=3;q.npy k3heads.npy v3heads.npy $out
mixed dtypes;dtypes differ;q.npy k16.npy v16.npy $out
output directory missing;nodir.*no such file;q.npy k.npy v.npy nodir/$out
EOF
expect_error "--kv-lens count" 1 "kv-lens gives 3 lengths; q\.npy has B = 2" $good --kv-lens 1,2,3
expect_error "--kv-lens above Nk" 1 "kv-lens: sequence 1 has 8 keys, more than the Nk = 7 of q\.npy" \
    $good --kv-lens 1,8
expect_error "--json directory missing" 1 "nodir.*no such file" $good --json nodir/r.json

# ----------------------------------------------- refused outputs (status 1)
# expect_refused NAME PATTERN OUT: a run with good inputs and --out OUT fails
# with status 1 and one line matching PATTERN before any device work, and
# leaves no temporary beside OUT (what OUT was is checked by the caller).
expect_refused() {
    name=$1 pattern=$2 target=$3
    set +e
    "$CLATTN" run --q q.npy --k k.npy --v v.npy --out "$target" >"$dir/stdout" 2>"$dir/stderr"
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "$name: exit status $rc, want 1"
    [ "$(wc -l <"$dir/stderr")" -eq 1 ] || fail "$name: stderr is not one line"
    grep -qiE -- "$pattern" "$dir/stderr" || fail "$name: stderr does not match '$pattern'"
    [ ! -s "$dir/stdout" ] || fail "$name: something on stdout"
    for tmp in "$target".tmp.*; do
        [ ! -e "$tmp" ] || fail "$name: temporary $tmp left behind"
    done
    echo "ok: $name"
}

# A symbolic link to a regular file is neither replaced nor written through.
printf 'keep me' >target.npy
ln -s target.npy link.npy
expect_refused "symlink output" "link\.npy: is a symbolic link to '.*target\.npy'" link.npy
[ -L link.npy ] && [ "$(cat target.npy)" = "keep me" ] || fail "symlink output: changed"
ln -s absent.npy dangling.npy
expect_refused "dangling symlink output" "dangling\.npy.*absent\.npy.*does not exist" \
    dangling.npy
[ -L dangling.npy ] && [ ! -e absent.npy ] || fail "dangling symlink output: changed"
mkdir adir.npy
expect_refused "directory output" "adir\.npy: is a directory" adir.npy
python3 -c 'import socket; socket.socket(socket.AF_UNIX).bind("out.sock")'
expect_refused "socket output" "out\.sock: is a socket" out.sock
[ -S out.sock ] || fail "socket output: the socket was replaced"

# ---------------------------------------------- inputs from pipes (status 1)
# A pipe declaring 64 GiB and holding 100 bytes is refused as truncated:
# memory follows the data that arrives. The address space is capped at 2 GB
# where ulimit -v works, so allocating the declared size would fail as out
# of memory instead.
set +e
cat claims64g.npy | (
    ulimit -v 2000000 2>/dev/null
    "$CLATTN" run --q /dev/stdin --k k.npy --v v.npy --out "$out"
) >"$dir/stdout" 2>"$dir/stderr"
rc=$?
set -e
[ "$rc" -eq 1 ] || fail "64 GiB claim on a pipe: exit status $rc, want 1"
grep -q "/dev/stdin: truncated: header says 68719476736 bytes of data, the stream ended after 100" \
    "$dir/stderr" || fail "64 GiB claim on a pipe: wrong message"
echo "ok: 64 GiB claim on a pipe"
expect_error "64 GiB claim in a file" 1 "claims64g\.npy: truncated.*68719476736.*file has 100" \
    --q claims64g.npy --k k.npy --v v.npy --out "$out"

# A failed run must not clobber an existing output either.
printf 'keep me' >"$out.keep"
cp "$out.keep" "$out"
set +e
"$CLATTN" run --q "qtrunc.npy" --k "k.npy" --v "v.npy" --out "$out" 2>/dev/null
rc=$?
set -e
[ "$rc" -ne 0 ] && cmp -s "$out" "$out.keep" || fail "a failed run changed an existing output"
rm -f "$out" "$out.keep"
echo "ok: existing output kept on failure"

# ----------------------------------------------------- runs on a device
if ! "$CLATTN" devices >/dev/null 2>&1; then
    echo "SKIP: 'clattn devices' fails: no OpenCL device"
    exit 77
fi

# expect_run NAME TOL CAUSAL SCALE Q K V ARGS...: a successful run whose
# output matches the Python reference within TOL.
expect_run() {
    name=$1 tol=$2 causal=$3 scale=$4 q=$5 k=$6 v=$7
    shift 7
    run_run --q "$q" --k "$k" --v "$v" --out "$out" "$@"
    if [ "$rc" -ne 0 ] && grep -qiE "no matching OpenCL device|ENODEV" "$dir/stderr"; then
        echo "SKIP: no OpenCL device"
        exit 77
    fi
    [ "$rc" -eq 0 ] || fail "$name: exit status $rc"
    [ "$(wc -l <"$dir/stdout")" -eq 1 ] || fail "$name: summary is not one line"
    grep -qE "causal $causal .*[0-9] ms" "$dir/stdout" || fail "$name: summary lacks causal/time"
    python3 npyutil.py check "$out" "$q" "$k" "$v" "$causal" "$scale" "$tol" \
        >"$dir/check" 2>&1 || { cat "$dir/check" >&2; fail "$name: wrong output"; }
    echo "ok: $name: $(cat "$dir/check")"
    echo "    $(cat "$dir/stdout")"
}

# The time split on cold caches (the library's and PoCL's kernel cache,
# both of this run's own): the kernels are microseconds, while building
# them (and PoCL's compiling each at its first launch) takes seconds; that
# is build, not device time.
mkdir pocl_cold cache_cold
XDG_CACHE_HOME=$PWD/cache_cold POCL_CACHE_DIR=$PWD/pocl_cold \
    run_run --q q16.npy --k k16.npy --v v16.npy --out "$out" --path naive --json split.json
rm -rf pocl_cold cache_cold
[ "$rc" -eq 0 ] || fail "cold naive fp16: exit status $rc"
python3 - <<'PY' || fail "cold naive fp16: the time split"
import json
t = json.load(open("split.json"))["seconds"]
print("cold naive fp16: %.3f ms: build %.3f ms, device %.3f ms" % (1e3 * t["total"],
      1e3 * t["build"], 1e3 * t["device"]))
assert t["device"] < 0.25, "device %.3f s for kernels of microseconds" % t["device"]
assert t["build"] > t["device"], "build %.3f s, device %.3f s" % (t["build"], t["device"])
parts = t["build"] + t["upload"] + t["device"] + t["download"]
assert parts <= t["total"] * 1.001, "the parts add up to more than the total"
PY
echo "ok: first-launch compilation counted as build"

expect_run "fp32" 1e-4 none 0 "q.npy" "k.npy" "v.npy"
set +e # not run_run: the last command of a pipeline may run in a subshell
cat q.npy | "$CLATTN" run --q /dev/stdin --k k.npy --v v.npy --out "$out" >"$dir/stdout" \
    2>"$dir/stderr"
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "Q from a pipe: exit status $rc"
python3 npyutil.py check "$out" q.npy k.npy v.npy none 0 1e-4 >/dev/null || fail "Q from a pipe"
echo "ok: Q from a pipe"

# ------------------------------------------ outputs that are not regular files
# Written in place, never replaced. The order matters: a FIFO and device
# nodes made here come first, so a writer that replaced its target is caught
# in this directory before /dev/null and /dev/stdout are tried.
mkfifo out.fifo
cat out.fifo >from_fifo.npy &
reader=$!
run_run --q q.npy --k k.npy --v v.npy --out out.fifo
if [ "$rc" -ne 0 ] || [ ! -p out.fifo ]; then
    kill "$reader" 2>/dev/null || true # it waits on a FIFO nobody will open
    fail "FIFO output: exit status $rc, or out.fifo is no longer a FIFO"
fi
wait "$reader"
python3 npyutil.py check from_fifo.npy q.npy k.npy v.npy none 0 1e-4 >/dev/null ||
    fail "FIFO output: wrong data"
echo "ok: FIFO output"

if python3 npyutil.py clone /dev/null my_null 2>/dev/null &&
    python3 npyutil.py clone /dev/full my_full 2>/dev/null; then
    run_run --q q.npy --k k.npy --v v.npy --out my_null
    [ "$rc" -eq 0 ] || fail "device output: exit status $rc"
    python3 npyutil.py same my_null /dev/null || fail "device output: my_null replaced"
    run_run --q q.npy --k k.npy --v v.npy --out my_full
    [ "$rc" -eq 1 ] || fail "full device output: exit status $rc, want 1"
    grep -q "my_full: write failed" "$dir/stderr" || fail "full device output: no message"
    python3 npyutil.py same my_full /dev/full || fail "full device output: my_full replaced"
    echo "ok: device outputs"

    run_run --q q.npy --k k.npy --v v.npy --out /dev/null
    [ "$rc" -eq 0 ] || fail "/dev/null output: exit status $rc"
    [ -c /dev/null ] || fail "/dev/null is no longer a character device"
    echo "ok: /dev/null output"
else
    echo "note: cannot make device nodes here (not root?): device outputs not tested"
fi

# On a pipe the array goes down the pipe and the summary to stderr.
set +e
"$CLATTN" run --q q.npy --k k.npy --v v.npy --out /dev/stdout 2>"$dir/stderr" | cat >piped.npy
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "/dev/stdout output: exit status $rc"
python3 npyutil.py check piped.npy q.npy k.npy v.npy none 0 1e-4 >/dev/null ||
    fail "/dev/stdout output: wrong data"
grep -q "causal none .*ms" "$dir/stderr" || fail "/dev/stdout output: no summary on stderr"
echo "ok: /dev/stdout output on a pipe"

expect_run "fp32 causal top-left naive" 1e-4 top-left 0 "q.npy" "k.npy" "v.npy" \
    --causal --path naive
expect_run "fp32 causal bottom-right fused scale" 1e-4 bottom-right 0.3 \
    "q.npy" "k.npy" "v.npy" --causal=bottom-right --path=fused --scale 0.3
# fp16 inputs hold the fp32 values rounded to half, and the reference reads
# them back as such; the error left is O's own rounding to half.
expect_run "fp16" 1e-2 none 0 "q16.npy" "k16.npy" "v16.npy"
grep -q "fp16" "$dir/stdout" || fail "fp16: summary does not say fp16"

# The summary splits the time: builds, uploads, the device, downloads.
grep -qE "[0-9.]+ ms: build [0-9.]+ ms, upload [0-9.]+ ms, device [0-9.]+ ms, download [0-9.]+ ms" \
    "$dir/stdout" || fail "summary does not split the time"
echo "ok: time split in the summary"

# Per-sequence lengths, split keys and the LSE, against the reference with
# the same lengths; the JSON report says what ran.
run_run $good --kv-lens 3,7 --split-kv 2 --causal=bottom-right --lse-out lse.npy \
    --json run.json
[ "$rc" -eq 0 ] || fail "--kv-lens/--lse-out: exit status $rc"
python3 npyutil.py lse "$out" lse.npy q.npy k.npy v.npy bottom-right 3,7 1e-4 >"$dir/check" 2>&1 ||
    { cat "$dir/check" >&2; fail "--kv-lens/--lse-out: wrong output"; }
echo "ok: --kv-lens, --split-kv, --lse-out: $(cat "$dir/check")"
python3 npyutil.py json run.json command=run causal=bottom-right split_kv=2 \
    shape.batch=2 shape.kv_len=7 outputs.lse=lse.npy "kv_lens=[3, 7]" ||
    fail "--json: wrong report"
echo "ok: --json report"

# "-" is stdout for every output: O down a pipe, the summary on stderr; the
# JSON report on stdout.
set +e
"$CLATTN" run $good --out - 2>"$dir/stderr" | cat >dash.npy
rc=$?
set -e
[ "$rc" -eq 0 ] || fail "--out -: exit status $rc"
python3 npyutil.py check dash.npy q.npy k.npy v.npy none 0 1e-4 >/dev/null || fail "--out -: data"
grep -q "causal none" "$dir/stderr" || fail "--out -: no summary on stderr"
run_run $good --json -
[ "$rc" -eq 0 ] || fail "--json -: exit status $rc"
cp "$dir/stdout" dash.json
python3 npyutil.py json dash.json command=run || fail "--json -: stdout is not the report"
grep -q "causal none" "$dir/stderr" || fail "--json -: no summary on stderr"
echo "ok: - is stdout"

# One character device for two outputs is not one file: written in turn.
run_run $good --out /dev/null --lse-out /dev/null
[ "$rc" -eq 0 ] || fail "/dev/null for two outputs: exit status $rc"
echo "ok: /dev/null for two outputs"

# ------------------------------------------- outputs committed together
# The LSE cannot be written (a full device; a full file system where one
# can be mounted here): O's existing file stays byte for byte, and no
# temporary is left anywhere.
printf 'keep me' >kept.npy
cp kept.npy kept.ref
if [ -w /dev/full ]; then
    run_clattn run --q q.npy --k k.npy --v v.npy --out kept.npy --lse-out /dev/full
    [ "$rc" -eq 1 ] || fail "--lse-out on a full device: exit status $rc, want 1"
    grep -q "/dev/full: write failed" stderr || fail "--lse-out on a full device: no message"
    cmp -s kept.npy kept.ref || fail "--lse-out on a full device: --out's file was replaced"
    ls kept.npy.tmp.* >/dev/null 2>&1 && fail "--lse-out on a full device: temporary left"
    echo "ok: outputs together: a full device for one replaces none"
fi
mkdir small
if unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs small' 2>/dev/null; then
    set +e
    unshare -m sh -c 'mount -t tmpfs -o size=8k tmpfs small &&
        { head -c 1048576 /dev/zero >small/fill 2>/dev/null; true; } &&
        "$1" run --q q.npy --k k.npy --v v.npy --out kept.npy --lse-out small/lse.npy;
        rc=$?; ls small; exit $rc' sh "$CLATTN" >stdout 2>stderr
    rc=$?
    set -e
    [ "$rc" -eq 1 ] || fail "--lse-out on a full file system: exit status $rc, want 1"
    grep -q "small/lse.npy: write failed: No space left on device" stderr ||
        fail "--lse-out on a full file system: no message"
    cmp -s kept.npy kept.ref || fail "--lse-out on a full file system: --out's file replaced"
    [ "$(cat stdout)" = fill ] || fail "--lse-out on a full file system: temporary left"
    ls kept.npy.tmp.* >/dev/null 2>&1 && fail "--lse-out on a full file system: temporary left"
    echo "ok: outputs together: a full file system for one replaces none"
else
    echo "note: cannot mount a small file system here: the full-disk case not tested"
fi

# ------------------------------------------------- modes of the outputs
# A replaced file keeps its mode (and owner, where this process may set it);
# a new one gets 0666 less the umask.
printf 'old' >mode.npy
chmod 600 mode.npy
run_run $good --out mode.npy
[ "$rc" -eq 0 ] && [ "$(stat -c %a mode.npy)" = 600 ] ||
    fail "a 0600 output became $(stat -c %a mode.npy) (status $rc)"
rm -f new.npy
(umask 027 && "$CLATTN" run $good --out new.npy >/dev/null) || fail "umask 027 run"
[ "$(stat -c %a new.npy)" = 640 ] || fail "a new output under umask 027 is $(stat -c %a new.npy)"
if [ "$(id -u)" = 0 ]; then
    printf 'old' >owned.npy
    chown 65534:65534 owned.npy
    run_run $good --out owned.npy
    [ "$rc" -eq 0 ] && [ "$(stat -c %u:%g owned.npy)" = 65534:65534 ] ||
        fail "a replaced output's owner became $(stat -c %u:%g owned.npy)"
fi
echo "ok: modes kept, new files by the umask"

# --------------------------------------------------------------- signals
# A signal mid-write removes the temporaries and ends the run by itself.
# The LSE goes to a FIFO nobody reads, so the run waits in its open with
# O's temporary written; then a large O, signalled as soon as its
# temporary appears.
python3 - "$CLATTN" <<'PY' || fail "signals"
import glob, os, signal, struct, subprocess, sys, time
clattn = sys.argv[1]

def defaults():
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)

def launch(args):
    # Started with the signals at their defaults (a background job of a
    # shell inherits SIGINT ignored, a run under nohup SIGHUP, and the tool
    # keeps an ignored signal ignored).
    return subprocess.Popen([clattn, 'run'] + args, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, preexec_fn=defaults)

def wait_for(pattern, p, seconds):
    end = time.time() + seconds
    while not glob.glob(pattern):
        if p.poll() is not None or time.time() > end:
            return False
        time.sleep(0.002)
    return True

os.mkfifo('sig.fifo')
for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    p = launch(['--q', 'q.npy', '--k', 'k.npy', '--v', 'v.npy', '--out', 'sig.npy',
                '--lse-out', 'sig.fifo'])
    if not wait_for('sig.npy.tmp.*', p, 120):
        p.kill()
        sys.exit('%s: no temporary while the run waits (status %r)' % (sig.name, p.poll()))
    time.sleep(0.2)
    p.send_signal(sig)
    rc = p.wait(60)
    if rc != -sig:
        sys.exit('%s: the run ended with %r, not by the signal' % (sig.name, rc))
    left = glob.glob('sig.npy*')
    if left:
        sys.exit('%s: left %s' % (sig.name, left))
    print('ok: %s while the outputs are written: ended by it, no temporary left' % sig.name)

# 64 MiB of O: Q is a sparse file of zeros, one key.
nq, d = 1 << 18, 64
def npy(path, shape, nbytes):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %r, }" % (shape,)
    total = 10 + len(h) + 1
    total += -total % 64
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', total - 10) +
                (h + ' ' * (total - 10 - len(h) - 1) + '\n').encode())
        f.truncate(total + nbytes)
npy('bigq.npy', (1, 1, nq, d), 4 * nq * d)
npy('bigk.npy', (1, 1, 1, d), 4 * d)
p = launch(['--q', 'bigq.npy', '--k', 'bigk.npy', '--v', 'bigk.npy', '--out', 'big.npy'])
if wait_for('big.npy.tmp.*', p, 120):
    p.send_signal(signal.SIGTERM)
    rc = p.wait(60)
    if rc == 0:
        print('note: the large run finished before the signal reached it')
    elif rc != -signal.SIGTERM:
        sys.exit('SIGTERM: the large run ended with %r, not by the signal' % rc)
    else:
        print('ok: SIGTERM mid-write of a 64 MiB output: ended by it, no temporary left')
else:
    print('note: the large run ended (%r) before its temporary was seen' % p.wait())
if glob.glob('big.npy.tmp.*'):
    sys.exit('SIGTERM: left %s' % glob.glob('big.npy.tmp.*'))
for f in ('bigq.npy', 'bigk.npy', 'big.npy', 'sig.fifo'):
    if os.path.exists(f):
        os.unlink(f)
PY
echo "PASS"
