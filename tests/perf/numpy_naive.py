#!/usr/bin/env python3
"""numpy's naive attention (OpenBLAS sgemm, fp32), stage by stage, for
docs/GEMM.md: S = scale Q K^T, P = softmax(S), O = P V, each timed on its own.
usage: numpy_naive.py B,H,N,d reps  -> one JSON line: per repetition the wall
seconds of qk, softmax, pv and the whole (total), and its CPU seconds.
Run with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset (they slow numpy here)."""
import json, sys, time
import numpy as np

B, H, N, d = (int(x) for x in sys.argv[1].split(','))
reps = int(sys.argv[2])
rng = np.random.default_rng(1)
q = rng.uniform(-1, 1, (B * H, N, d)).astype(np.float32)
k = rng.uniform(-1, 1, (B * H, N, d)).astype(np.float32)
v = rng.uniform(-1, 1, (B * H, N, d)).astype(np.float32)
scale = np.float32(1 / np.sqrt(d))
kt = k.transpose(0, 2, 1)
s = np.empty((B * H, N, N), np.float32)
o = np.empty((B * H, N, d), np.float32)


def qk():
    np.matmul(q, kt, out=s)
    np.multiply(s, scale, out=s)


def softmax():
    np.subtract(s, s.max(-1, keepdims=True), out=s)
    np.exp(s, out=s)
    np.divide(s, s.sum(-1, keepdims=True), out=s)


def pv():
    np.matmul(s, v, out=o)


out = {'shape': sys.argv[1], 'qk': [], 'softmax': [], 'pv': [], 'total': [], 'cpu': []}
for r in range(-1, reps):
    c0 = time.process_time()
    t = [time.perf_counter()]
    for f in (qk, softmax, pv):
        f()
        t.append(time.perf_counter())
    c1 = time.process_time()
    if r < 0:
        continue
    for i, name in enumerate(('qk', 'softmax', 'pv')):
        out[name].append(t[i + 1] - t[i])
    out['total'].append(t[3] - t[0])
    out['cpu'].append(c1 - c0)
print(json.dumps(out))
