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
    dt = np.dtype(dtype)
    if dt == np.float16:
        return 4e-3
    return 3e-2 if dt.name == "bfloat16" else 1e-4


def random(rng, shape, dtype):
    return rng.uniform(-1, 1, size=shape).astype(dtype)


def attention_variants(q, k, v, causal=None, scale=None, window=(-1, -1), softcap=0.0,
                       alibi=None, sinks=None, mask=None):
    """O (float64, [B, H, Nq, d_v]) and LSE of the variants, from their
    definitions: the score scale q.k, capped (softcap tanh(s / softcap)),
    less slope |i + off - j| (alibi [H] or [B, H]), plus an additive mask or
    hidden where a bool mask is False (mask broadcast to [B, H, Nq, Nk]);
    keys outside the causal mask and the window (i + off - left <= j <= i +
    off + right, -1 unbounded; off 0 top-left, Nk - Nq otherwise) hidden;
    each head's sink logit in the denominator."""
    q, k, v = (np.asarray(x, dtype=np.float64) for x in (q, k, v))
    B, H, Nq, d = q.shape
    Hkv, Nk, dv = k.shape[1], k.shape[2], v.shape[3]
    scale = 1.0 / np.sqrt(d) if scale is None else scale
    off = 0 if causal == "top-left" else Nk - Nq
    i = np.arange(Nq)[:, None]
    j = np.arange(Nk)[None, :]
    seen = np.ones((Nq, Nk), bool)
    if causal is not None:
        seen &= j <= i + off
    if window[0] >= 0:
        seen &= j >= i + off - window[0]
    if window[1] >= 0:
        seen &= j <= i + off + window[1]
    if mask is not None:
        mask = np.broadcast_to(np.asarray(mask), (B, H, Nq, Nk))
    o = np.zeros((B, H, Nq, dv))
    lse = np.full((B, H, Nq), -np.inf)
    for b in range(B):
        for h in range(H):
            g = h // (H // Hkv)
            s = scale * q[b, h] @ k[b, g].T
            if softcap:
                s = softcap * np.tanh(s / softcap)
            if alibi is not None:
                a = np.asarray(alibi, dtype=np.float64)
                slope = a[b, h] if a.ndim == 2 else a[h]
                s = s - slope * np.abs(i + off - j)
            vis = seen.copy()
            if mask is not None:
                mk = mask[b, h]
                if mk.dtype == np.bool_:
                    vis &= mk
                else:
                    s = s + mk.astype(np.float64)
                    vis &= s != -np.inf
            sink = -np.inf if sinks is None else float(sinks[h])
            s = np.where(vis, s, -np.inf)
            m = np.maximum(s.max(axis=1, initial=-np.inf), sink)
            rows = vis.any(axis=1)
            m = np.where(np.isfinite(m), m, 0)
            p = np.where(vis, np.exp(s - m[:, None]), 0)
            z = p.sum(axis=1) + (np.exp(sink - m) if sinks is not None else 0)
            o[b, h, rows] = (p[rows] @ v[b, g]) / z[rows, None]
            lse[b, h] = np.where(rows | (sinks is not None), m + np.log(np.maximum(z, 1e-300)),
                                 -np.inf)
    return o, lse
