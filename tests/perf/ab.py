#!/usr/bin/env python3
"""A/B of naive-path variants on the same cores: ROUNDS interleaved rounds of
build/tests/perf/time_naive, the order rotating each round; per stage the
median over rounds of each run's median, and each variant's median per-round
ratio to the first variant (< 1: faster than the first).

usage: tests/perf/ab.py ROUNDS CASE 'LABEL[:VAR=VALUE[,VAR=VALUE]]' ...
  CASE: B,H,Hkv,Nq,Nk,d:fp16|fp32[:REPS]  (built-in GEMM, no mask)
  e.g. tests/perf/ab.py 7 1,2,2,1024,1024,128:fp16 \\
         v1:CLATTN_KERNEL_DIR=/tmp/cl_v1 v2:CLATTN_KERNEL_DIR=cl
"""
import json, os, statistics as st, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
TIME = os.path.join(ROOT, 'build', 'tests', 'perf', 'time_naive')
rounds = int(sys.argv[1])
case = sys.argv[2].split(':')
shape, dtype = case[0], case[1]
reps = case[2] if len(case) > 2 else '10'
variants = []
for a in sys.argv[3:]:
    label, _, assigns = a.partition(':')
    env = dict(x.split('=', 1) for x in assigns.split(',') if x)
    variants.append((label, env))
STAGES = ('qk', 'softmax', 'pv', 'total', 'cpu_per_rep')
res = {}
for r in range(rounds):
    order = variants[r % len(variants):] + variants[:r % len(variants)]
    for label, env in order:
        out = subprocess.run(['nice', TIME, shape, dtype, 'none', 'builtin', reps],
                             env=dict(os.environ, **env), capture_output=True, text=True,
                             cwd=ROOT)
        if out.returncode:
            sys.exit(f'{label}: rc {out.returncode}\n{out.stderr[-2000:]}')
        row = json.loads(out.stdout)
        for s in STAGES:
            v = row[s]
            res.setdefault((label, s), []).append(st.median(v) if isinstance(v, list) else v)
    print(f'round {r + 1}/{rounds}', file=sys.stderr, flush=True)
b, h, hkv, nq, nk, d = (int(x) for x in shape.split(','))
f = 2.0 * b * h * nq * nk * d
print(f'{shape} {dtype}, {rounds} rounds of {reps} calls; ms (GFLOP/s) and ratio to '
      f'{variants[0][0]} (median of per-round ratios)')
print('| variant | ' + ' | '.join(STAGES) + ' |')
print('|---' * (len(STAGES) + 1) + '|')
for label, _ in variants:
    cells = []
    for s in STAGES:
        t = res[(label, s)]
        base = res[(variants[0][0], s)]
        ratio = st.median([a / c for a, c in zip(t, base)])
        fl = {'qk': f, 'pv': f, 'total': 2 * f, 'cpu_per_rep': 4 * f}.get(s)
        gf = f' ({fl / st.median(t) / 1e9:.0f})' if fl else ''
        cells.append(f'{st.median(t) * 1e3:.2f}{gf} x{ratio:.3f}')
    print(f'| {label} | ' + ' | '.join(cells) + ' |')
