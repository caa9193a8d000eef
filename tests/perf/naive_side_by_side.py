#!/usr/bin/env python3
"""The naive path's stages (Q K^T, softmax, P V) on the default device beside
numpy's matmul-softmax-matmul, in one script: ROUNDS interleaved rounds, the
order of the runs rotating each round; each round measures the FMA peak
(`clattn devices --measure`, a private cache folder) first. Every figure is a
median over rounds of per-round medians; every ratio (and % of peak) a median
of per-round ratios (the machine is shared: never compare single times); %
of peak is of the best peak the rounds measured.

usage: tests/perf/naive_side_by_side.py [ROUNDS] [--quick] [--no-peak]
         [--clblast] [--json OUT.jsonl] [--variant LABEL:VAR=VALUE[,VAR=VALUE]]...
       tests/perf/naive_side_by_side.py --render OUT.jsonl   (the table again)
  --quick     N = 1024 only
  --clblast   also the fp32 path with CLBlast's GEMMs (use_clblast = 1)
  --variant   also run the built-in GEMM with these environment variables
              (e.g. 'kc128:CLATTN_BUILTIN_GEMM=cpu:12x2:10x4:128'), beside the
              default; repeated for several
Shapes: B = 1, H = 2, d = 128, N = 1024 and 4096, fp16 and fp32, no mask, the
built-in GEMM (use_clblast = 0). numpy is fp32 (its fp16 matmul is not BLAS).
needs: build/tests/perf/time_naive, build/tools/clattn, a Python with numpy
(PEERS_PY, default /work/peers-venv/bin/python). numpy runs with
OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed (that command alone).
"""
import json, os, re, statistics as st, subprocess, sys, tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
HERE = os.path.dirname(os.path.abspath(__file__))
PY = os.environ.get('PEERS_PY', '/work/peers-venv/bin/python')
TIME = os.path.join(ROOT, 'build', 'tests', 'perf', 'time_naive')
CLATTN = os.path.join(ROOT, 'build', 'tools', 'clattn')
args = sys.argv[1:]
rounds = int(args[0]) if args and args[0].isdigit() else 3
quick, no_peak, clblast = '--quick' in args, '--no-peak' in args, '--clblast' in args
jsonl = args[args.index('--json') + 1] if '--json' in args else None
render = args[args.index('--render') + 1] if '--render' in args else None
variants = [('builtin', {})]
for i, a in enumerate(args):
    if a == '--variant':
        label, _, assigns = args[i + 1].partition(':')
        env = dict(x.split('=', 1) for x in assigns.split(',') if x)
        variants.append((label, env))

peer_env = dict(os.environ)
peer_env.pop('OPENBLAS_CORETYPE', None)
peer_env.pop('OPENBLAS_L2_SIZE', None)
cache = tempfile.mkdtemp(prefix='clattn-peak-')
B, H, D = 1, 2, 128
Ns = [1024] if quick else [1024, 4096]
STAGES = ('qk', 'softmax', 'pv', 'total')


def run(cmd, env=None):
    out = subprocess.run(['nice'] + cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit(f'{cmd}: rc {out.returncode}\n{out.stderr[-2000:]}')
    return out.stdout


def peak():
    out = run([CLATTN, 'devices', '--measure'], env=dict(os.environ, XDG_CACHE_HOME=cache))
    m = re.search(r'fp32 FMA\s+([\d.]+) (G|T)FLOP/s', out)
    if not m:
        sys.exit('no fp32 FMA figure in clattn devices --measure:\n' + out[-2000:])
    return float(m.group(1)) * (1e12 if m.group(2) == 'T' else 1e9)


def flops(stage, N):
    f = 2.0 * B * H * N * N * D
    return {'qk': f, 'pv': f, 'softmax': 0.0, 'total': 2 * f}[stage]


def reps(N):
    return 10 if N <= 1024 else 3


# The runs of one round: (key, argv, env); keys index the results.
runs = []
for N in Ns:
    runs.append((('numpy', N, 'fp32'), [PY, os.path.join(HERE, 'numpy_naive.py'),
                                        f'{B},{H},{N},{D}', str(reps(N))], peer_env))
    for dt in ('fp16', 'fp32'):
        for label, env in variants:
            runs.append(((label, N, dt), [TIME, f'{B},{H},{H},{N},{N},{D}', dt, 'none',
                                          'builtin', str(reps(N))], dict(os.environ, **env)))
        if clblast and dt == 'fp32':
            runs.append((('clblast', N, dt), [TIME, f'{B},{H},{H},{N},{N},{D}', dt, 'none',
                                              'clblast', str(reps(N))], None))

records = []
if render:
    records = [json.loads(l) for l in open(render) if l.strip()]
else:
    log = open(jsonl, 'a') if jsonl else None
    for r in range(rounds):
        pk = None if no_peak else peak()
        order = runs[r % len(runs):] + runs[:r % len(runs)]
        for key, argv, env in order:
            rec = {'round': r, 'key': list(key), 'peak': pk, **json.loads(run(argv, env))}
            records.append(rec)
            if log:
                log.write(json.dumps(rec) + '\n')
                log.flush()
        print(f'round {r + 1}/{rounds} done', file=sys.stderr, flush=True)


def med(x):
    return st.median(x)


# Per key and stage, the per-round medians in round order.
res, kernels, round_peak = {}, {}, {}
for rec in sorted(records, key=lambda x: x['round']):
    key = tuple(rec['key'])
    if rec.get('peak'):
        round_peak[rec['round']] = rec['peak']
    if 'kernel' in rec:
        kernels[key] = rec['kernel']
    for s in STAGES:
        res.setdefault(key + (s,), []).append(med(rec[s]))
    cpu = rec['cpu_per_rep'] if 'cpu_per_rep' in rec else med(rec['cpu'])
    res.setdefault(key + ('cpu',), []).append(cpu)
peaks = [round_peak[r] for r in sorted(round_peak)]
n_rounds = len({rec['round'] for rec in records})
Ns = sorted({rec['key'][1] for rec in records})
labels = []
for rec in records:
    if rec['key'][0] != 'numpy' and rec['key'][0] not in labels:
        labels.append(rec['key'][0])
best = max(peaks) if peaks else None
if peaks:
    print(f'fp32 FMA peak (clattn devices --measure, every round): best {best / 1e9:.0f} GFLOP/s, '
          f'median {med(peaks) / 1e9:.0f} (rounds: {", ".join(f"{p / 1e9:.0f}" for p in peaks)}); '
          f'{n_rounds} rounds\n')
print('B = 1, H = 2, d = 128, no mask. ms: median over rounds of each run\'s median; GFLOP/s '
      'from it; % peak: of the best peak of the rounds (a round\'s own peak measurement can '
      'lose a core to other jobs at another moment than its runs); numpy / clattn: median of '
      'per-round ratios. The CPU-s row: the whole path\'s FLOPs per CPU-second of the process '
      'x 2 cores, and CPU ms per call.\n')
print('| N | dtype | GEMM | stage | ms | GFLOP/s | % peak | numpy fp32 ms | numpy / clattn |')
print('|---|---|---|---|---|---|---|---|---|')
for N in Ns:
    for dt in ('fp16', 'fp32'):
        for label in labels:
            key = (label, N, dt)
            if key + ('qk',) not in res:
                continue
            for s in STAGES:
                t = res[key + (s,)]
                npy = res[('numpy', N, 'fp32', s)]
                f = flops(s, N)
                pk = f'{f / med(t) / best:.0%}' if best and f else '—'
                gf = f'{f / med(t) / 1e9:.0f}' if f else '—'
                print(f'| {N} | {dt} | {label} ({kernels.get(key, "?")}) | {s} | '
                      f'{med(t) * 1e3:.2f} | {gf} | {pk} | {med(npy) * 1e3:.2f} | '
                      f'{med([b / a for a, b in zip(t, npy)]):.2f} |')
            c = res[key + ('cpu',)]
            nc = res[('numpy', N, 'fp32', 'cpu')]
            cg = 2 * flops('total', N) / med(c)
            pk = f'{cg / best:.0%}' if best else '—'
            print(f'| {N} | {dt} | {label} | whole path, CPU s | {med(c) * 1e3:.2f} CPU ms | '
                  f'{cg / 1e9:.0f} | {pk} | {med(nc) * 1e3:.2f} CPU ms | '
                  f'{med([b / a for a, b in zip(c, nc)]):.2f} |')
