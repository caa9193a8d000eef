# SPDX-License-Identifier: MIT
"""Attention in float64 numpy, the reference the Python tests compare with:
grouped heads, both causal alignments, per-sequence key counts, the LSE."""
import numpy as np


def attention(q, k, v, causal=None, scale=None, kv_lens=None):
    """O (float64, [B, H, Nq, d]) and LSE ([B, H, Nq], -inf for a row that
    sees no key) of q [B, H, Nq, d] over k, v [B, Hkv, Nk, d]."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, H, Nq, d = q.shape
    Hkv, Nk = k.shape[1], k.shape[2]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    o = np.zeros((B, H, Nq, d))
    lse = np.full((B, H, Nq), -np.inf)
    for b in range(B):
        L = Nk if kv_lens is None else int(kv_lens[b])
        i = np.arange(Nq)[:, None]
        j = np.arange(L)[None, :]
        if causal == "top-left":
            seen = j <= i
        elif causal == "bottom-right":
            seen = j <= i + L - Nq
        else:
            seen = np.ones((Nq, L), bool)
        for h in range(H):
            g = h // (H // Hkv)
            s = scale * q[b, h] @ k[b, g, :L].T
            s = np.where(seen, s, -np.inf)
            rows = seen.any(axis=1)
            m = np.where(rows, s.max(axis=1, initial=-np.inf), 0)
            p = np.where(seen, np.exp(s - m[:, None]), 0)
            z = p.sum(axis=1)
            o[b, h, rows] = (p[rows] @ v[b, g, :L]) / z[rows, None]
            lse[b, h, rows] = m[rows] + np.log(z[rows])
    return o, lse


def tolerance(dtype):
    """clattn_tolerance's max-abs bound for the storage dtype."""
    return 4e-3 if np.dtype(dtype) == np.float16 else 1e-4


def random(rng, shape, dtype):
    return rng.uniform(-1, 1, size=shape).astype(dtype)
