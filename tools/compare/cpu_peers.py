#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What a user on a CPU would run instead of clattn, timed on the same cores:
numpy's naive attention (OpenBLAS GEMMs and a softmax over the scores), JAX's
jitted jax.nn.dot_product_attention, numpy's decode step, and numpy's naive
attention stage by stage. Each mode times one warm-up call (JAX compiles
there), then REPS calls one after another, each on the wall clock
(perf_counter) and in process CPU seconds (process_time); one JSON line.

usage:
  cpu_peers.py numpy|jax DTYPE d B H N causal REPS
      DTYPE fp32 (numpy, jax) or fp16c (jax: fp16 storage, fp32 arithmetic
      inside the jit, clattn's semantics; JAX on a CPU refuses fp16 dot_general);
      causal no|yes (top-left)
  cpu_peers.py decode B,H,Hkv,Nk,d REPS      numpy, one query token per head, GQA
  cpu_peers.py stages B,H,N,d REPS           numpy's naive attention: Q·Kᵀ,
      softmax and P·V timed one by one (wall), and the whole (wall, CPU)
Run it with OPENBLAS_CORETYPE and OPENBLAS_L2_SIZE unset: set, they slow a
current numpy on these machines (the compare scripts remove them).
"""
import json
import sys
import time

import numpy as np


def timeit(fn, reps):
    fn()
    wall, cpu = [], []
    for _ in range(reps):
        w0, c0 = time.perf_counter(), time.process_time()
        fn()
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
    return wall, cpu


def uniform(rng, shape):
    return rng.uniform(-1, 1, shape).astype(np.float32)


def numpy_attention(d, B, H, N, causal, reps):
    rng = np.random.default_rng(1)
    q, k, v = (uniform(rng, (B * H, N, d)) for _ in range(3))
    scale = np.float32(1 / np.sqrt(d))
    bias = np.triu(np.full((N, N), -np.inf, np.float32), 1)

    def run():
        s = np.matmul(q, k.transpose(0, 2, 1))
        s *= scale
        if causal:
            s += bias
        s -= s.max(-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(-1, keepdims=True)
        return np.matmul(s, v)
    return timeit(run, reps)


def jax_attention(dtype, d, B, H, N, causal, reps):
    import jax
    import jax.numpy as jnp
    rng = np.random.default_rng(1)
    jdt = jnp.float32 if dtype == "fp32" else jnp.float16
    q, k, v = (jnp.asarray(rng.uniform(-1, 1, (B, N, H, d)), dtype=jdt) for _ in range(3))
    if dtype == "fp16c":
        f = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(
            q.astype(jnp.float32), k.astype(jnp.float32), v.astype(jnp.float32),
            is_causal=causal).astype(jnp.float16))
    else:
        f = jax.jit(lambda q, k, v: jax.nn.dot_product_attention(q, k, v, is_causal=causal))
    return timeit(lambda: f(q, k, v).block_until_ready(), reps)


def numpy_decode(B, H, Hk, Nk, d, reps):
    rng = np.random.default_rng(1)
    q = uniform(rng, (B, Hk, H // Hk, d))
    k, v = uniform(rng, (B, Hk, Nk, d)), uniform(rng, (B, Hk, Nk, d))

    def run():
        s = np.matmul(q, k.transpose(0, 1, 3, 2)) * np.float32(d ** -0.5)
        s -= s.max(-1, keepdims=True)
        np.exp(s, out=s)
        s /= s.sum(-1, keepdims=True)
        return np.matmul(s, v)
    return timeit(run, reps)


def numpy_stages(B, H, N, d, reps):
    rng = np.random.default_rng(1)
    q, k, v = (uniform(rng, (B * H, N, d)) for _ in range(3))
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
    out = {"qk": [], "softmax": [], "pv": [], "total": [], "cpu": []}
    for r in range(-1, reps):
        c0 = time.process_time()
        t = [time.perf_counter()]
        for f in (qk, softmax, pv):
            f()
            t.append(time.perf_counter())
        c1 = time.process_time()
        if r < 0:
            continue
        for i, name in enumerate(("qk", "softmax", "pv")):
            out[name].append(t[i + 1] - t[i])
        out["total"].append(t[3] - t[0])
        out["cpu"].append(c1 - c0)
    return out


def main():
    a = sys.argv[1:]
    if not a:
        sys.exit(__doc__)
    if a[0] in ("numpy", "jax"):
        dtype, d, B, H, N = a[1], int(a[2]), int(a[3]), int(a[4]), int(a[5])
        causal, reps = a[6] == "yes", int(a[7])
        if a[0] == "numpy":
            w, c = numpy_attention(d, B, H, N, causal, reps)
        else:
            w, c = jax_attention(dtype, d, B, H, N, causal, reps)
        print(json.dumps({"peer": a[0], "dtype": dtype, "wall": w, "cpu": c}))
    elif a[0] == "decode":
        B, H, Hk, Nk, d = (int(x) for x in a[1].split(","))
        w, c = numpy_decode(B, H, Hk, Nk, d, int(a[2]))
        print(json.dumps({"peer": "numpy-decode", "wall": w, "cpu": c}))
    elif a[0] == "stages":
        B, H, N, d = (int(x) for x in a[1].split(","))
        print(json.dumps({"peer": "numpy-stages", **numpy_stages(B, H, N, d, int(a[2]))}))
    else:
        sys.exit(__doc__)


if __name__ == "__main__":
    main()
