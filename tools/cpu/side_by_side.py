#!/usr/bin/env python3
"""clattn's CPU fused kernel beside JAX and numpy on the same cores, in one
script: ROUNDS interleaved rounds (the order rotates each round); every
figure is a median over rounds of per-round medians, every ratio a median of
per-round ratios (the machine is shared: never compare single times).

usage: tools/cpu/side_by_side.py [ROUNDS] [--json OUT.jsonl] [--quick | --decode]
--quick: only the target shape (B=1 H=2 d=128 N=1024, fp32 and fp16).
--decode: only the decode row (B=1 H=8 Hkv=2 Nk=32768 d=128, fp32 and fp16).
needs: build/tests/perf/time_fused (built with the project), the peers venv
       (PEERS_PY, default /work/peers-venv/bin/python) and ../shared/cpu.
Peers run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE removed (that command
alone), everything under nice.
"""
import json, os, re, statistics as st, subprocess, sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
PEERS = os.path.abspath(os.path.join(ROOT, '..', 'shared', 'cpu'))
PY = os.environ.get('PEERS_PY', '/work/peers-venv/bin/python')
TIME = os.path.join(ROOT, 'build', 'tests', 'perf', 'time_fused')
rounds = int(sys.argv[1]) if len(sys.argv) > 1 and sys.argv[1].isdigit() else 3
jsonl = sys.argv[sys.argv.index('--json') + 1] if '--json' in sys.argv else None

peer_env = dict(os.environ)
peer_env.pop('OPENBLAS_CORETYPE', None)
peer_env.pop('OPENBLAS_L2_SIZE', None)


def run(cmd, env=None):
    out = subprocess.run(['nice'] + cmd, env=env, capture_output=True, text=True, cwd=ROOT)
    if out.returncode:
        sys.exit(f'{cmd}: rc {out.returncode}\n{out.stderr[-2000:]}')
    return out.stdout


def med(x):
    return st.median(x)


# (name, clattn args, flops, peers: list of (label, argv for the peer))
def attn(B, H, Hkv, Nq, Nk, d, causal):
    f = 4.0 * B * H * Nq * Nk * d
    return f / 2 if causal else f


CASES = [
    ('d128 N1024 fp32', '1,2,2,1024,1024,128 fp32 none', attn(1, 2, 2, 1024, 1024, 128, 0),
     [('jax', ['cpu_peers.py', 'jax', 'fp32', '128', '1', '2', '1024', 'no']),
      ('numpy', ['cpu_peers.py', 'numpy', 'fp32', '128', '1', '2', '1024', 'no'])]),
    ('d128 N1024 fp16', '1,2,2,1024,1024,128 fp16 none', attn(1, 2, 2, 1024, 1024, 128, 0),
     [('jax-fp16c', ['cpu_peers.py', 'jax', 'fp16c', '128', '1', '2', '1024', 'no'])]),
    ('d64 N4096 causal fp32', '1,2,2,4096,4096,64 fp32 top-left',
     attn(1, 2, 2, 4096, 4096, 64, 1),
     [('jax', ['cpu_peers.py', 'jax', 'fp32', '64', '1', '2', '4096', 'yes']),
      ('numpy', ['cpu_peers.py', 'numpy', 'fp32', '64', '1', '2', '4096', 'yes'])]),
    ('d64 N4096 causal fp16', '1,2,2,4096,4096,64 fp16 top-left',
     attn(1, 2, 2, 4096, 4096, 64, 1), []),
    ('decode fp32', '1,8,2,1,32768,128 fp32 none', attn(1, 8, 2, 1, 32768, 128, 0),
     [('numpy', ['numpy_decode.py', '1,8,2,32768,128'])]),
    ('decode fp16', '1,8,2,1,32768,128 fp16 none', attn(1, 8, 2, 1, 32768, 128, 0), []),
]


CPU_OF = {}  # argv -> CPU seconds per call of the last run (cpu_peers.py only)


def peer_time(argv):
    """Median wall seconds of the peer's timed repetitions (and its CPU seconds
    per repetition in CPU_OF)."""
    out = run([PY, os.path.join(PEERS, argv[0])] + argv[1:], env=peer_env)
    if argv[0] == 'numpy_decode.py':
        return float(out.split()[-1])
    rows = [json.loads(l) for l in out.splitlines() if l.startswith('{')]
    rows = [r for r in rows if 'wall' in r]
    if not rows:
        sys.exit(f'{argv}: no timing row\n{out}')
    CPU_OF[tuple(argv)] = med(rows[-1]['cpu'])
    return med(rows[-1]['wall'])


def clattn_time(args, env=None, kernel='auto', reps='5', batches='3'):
    """Median per-call wall seconds over the batches, CPU seconds per call,
    and the kernel the library ran (tests/perf/time_fused.c)."""
    a = args.split()
    out = json.loads(run([TIME, a[0], a[1], a[2], kernel, reps, batches], env=env))
    return med(out['times']), out['cpu_per_call'], out['kernel']




def peak():
    # A private cache folder: a measurement taken on a busy machine must not
    # replace the device's saved one (~/.cache/clattn), which predict and
    # bench read.
    import tempfile
    with tempfile.TemporaryDirectory(prefix='clattn-peak-') as d:
        out = run([os.path.join(ROOT, 'build', 'tools', 'clattn'), 'devices', '--measure'],
                  env=dict(os.environ, XDG_CACHE_HOME=d))
    m = re.search(r'fp32 FMA\s+([\d.]+) GFLOP/s', out)
    return float(m.group(1)) * 1e9 if m else None


def sgemm():
    code = ('import numpy as np, time\n'
            'a=np.random.rand(2048,2048).astype(np.float32); b=a.copy(); a@b; t=[]\n'
            'for _ in range(5):\n t0=time.perf_counter(); a@b; t.append(time.perf_counter()-t0)\n'
            'print(sorted(t)[2])')
    return 2 * 2048 ** 3 / float(run([PY, '-c', code], env=peer_env).split()[-1])


if '--quick' in sys.argv:  # the target shape only (a quiet window is short)
    CASES = CASES[:2]
    FP16_PAIRS = (('d128 N1024 fp16', 'd128 N1024 fp32'),)
elif '--decode' in sys.argv:  # issue 10's decode row only
    CASES = [c for c in CASES if c[0].startswith('decode')]
    FP16_PAIRS = (('decode fp16', 'decode fp32'),)
else:
    FP16_PAIRS = (('d128 N1024 fp16', 'd128 N1024 fp32'),
                  ('d64 N4096 causal fp16', 'd64 N4096 causal fp32'),
                  ('decode fp16', 'decode fp32'))

log = open(jsonl, 'w') if jsonl else None
res = {}  # (case, who) -> list per round
kernels = {}
peaks, gemm = [], []
for r in range(rounds):
    order = CASES[r % len(CASES):] + CASES[:r % len(CASES)]
    peaks.append(peak())
    gemm.append(sgemm())
    for name, args, flops, peers in order:
        t, cpu, kern = clattn_time(args)
        kernels[name] = kern
        res.setdefault((name, 'clattn'), []).append(t)
        res.setdefault((name, 'clattn-cpu'), []).append(cpu)
        for label, argv in peers:
            res.setdefault((name, label), []).append(peer_time(argv))
            if tuple(argv) in CPU_OF:
                res.setdefault((name, label, 'cpu'), []).append(CPU_OF[tuple(argv)])
        if log:
            log.write(json.dumps({'round': r, 'case': name, 'clattn': t, 'clattn_cpu': cpu,
                                  **{l: res[(name, l)][-1] for l, _ in peers}}) + '\n')
            log.flush()
    print(f'round {r + 1}/{rounds} done', file=sys.stderr, flush=True)

pk = med(peaks)
print(f'fp32 FMA peak (clattn devices --measure, every round): median {pk / 1e9:.0f} GFLOP/s '
      f'(rounds: {", ".join(f"{p / 1e9:.0f}" for p in peaks)}); numpy sgemm 2048^3: '
      f'{med(gemm) / 1e9:.0f} GFLOP/s ({med([g / p for g, p in zip(gemm, peaks)]):.0%} of the '
      f'round\'s peak); {rounds} rounds\n')
print('% peak: median over rounds of GFLOP/s / that round\'s peak. CPU-s GFLOP/s: FLOPs per '
      'CPU-second of the process x 2 cores (what the kernel does while it holds the cores).\n')
print('| case | kernel | clattn ms | clattn GFLOP/s | % peak | CPU-s GFLOP/s | peer | peer ms '
      '| peer GFLOP/s | peer / clattn (median of ratios) | same, CPU s |')
print('|---|---|---|---|---|---|---|---|---|---|---|')
for name, args, flops, peers in CASES:
    t = res[(name, 'clattn')]
    c = res[(name, 'clattn-cpu')]
    pct = med([flops / x / p for x, p in zip(t, peaks)])
    line = (f'| {name} | {kernels[name]} | {med(t) * 1e3:.2f} | {flops / med(t) / 1e9:.0f} | '
            f'{pct:.0%} | {2 * flops / med(c) / 1e9:.0f} |')
    if not peers:
        print(line + ' — | — | — | — | — |')
    for label, _ in peers:
        p = res[(name, label)]
        ratio = med([a / b for a, b in zip(p, t)])
        pc = res.get((name, label, 'cpu'))
        rc = f'{med([a / b for a, b in zip(pc, c)]):.2f}' if pc else '—'
        print(line + f' {label} | {med(p) * 1e3:.2f} | {flops / med(p) / 1e9:.0f} | '
              f'{ratio:.2f} | {rc} |')
for a, b in FP16_PAIRS:
    for key in ('clattn', 'clattn-cpu'):
        ratio = med([x / y for x, y in zip(res[(a, key)], res[(b, key)])])
        print(f'{a} / fp32 ({"wall" if key == "clattn" else "CPU seconds"}): {ratio:.3f}')
