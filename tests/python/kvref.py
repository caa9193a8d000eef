# SPDX-License-Identifier: MIT
"""The KV cache tests' own references, independent of the library: ggml's
q8_0 and q4_0 and OCP fp8 e4m3 in numpy (encode and decode, byte for
byte), paged caches gathered into plain sequences, and attention per
sequence in float64 in FlashAttention's layouts ([N, heads, d])."""
import numpy as np

QK = 32  # values per q8_0 / q4_0 block


def _f16_bytes(d):
    """fp16 scales [rows] as their little-endian bytes [rows, 2]."""
    return d.astype("<f2").view(np.uint8).reshape(-1, 2)


def _f16_of(b):
    return b.copy().view("<f2").astype(np.float32).reshape(-1)


def q8_0(x):
    """ggml's quantize_row_q8_0 on float32 rows [..., d]: per block of 32,
    d = amax / 127, q = round(x * (1 / d)) half away from zero, d stored in
    fp16, in float32 arithmetic as ggml does it. Bytes [..., d / 32 * 34]."""
    x = np.asarray(x, np.float32)
    blocks = x.reshape(-1, QK)
    amax = np.abs(blocks).max(axis=1)
    d = (amax / np.float32(127)).astype(np.float32)
    inv = np.zeros_like(d)
    inv[d != 0] = (np.float32(1) / d[d != 0]).astype(np.float32)
    v = (blocks * inv[:, None]).astype(np.float32).astype(np.float64)
    q = (np.sign(v) * np.floor(np.abs(v) + 0.5)).astype(np.int8)
    out = np.concatenate([_f16_bytes(d), q.view(np.uint8)], axis=1)
    return out.reshape(x.shape[:-1] + (x.shape[-1] // QK * 34,))


def q4_0(x):
    """ggml's quantize_row_q4_0: per block, d = (the value of largest
    magnitude, the first of equals) / -8, q = min(15, (int)(x * (1 / d) +
    8.5)) (truncation), byte j holding value j in its low nibble and value
    j + 16 in its high. Bytes [..., d / 32 * 18]."""
    x = np.asarray(x, np.float32)
    blocks = x.reshape(-1, QK)
    at = np.abs(blocks).argmax(axis=1)  # the first of equal magnitudes, as ggml's strict <
    peak = blocks[np.arange(len(blocks)), at]
    d = (peak / np.float32(-8)).astype(np.float32)
    inv = np.zeros_like(d)
    inv[d != 0] = (np.float32(1) / d[d != 0]).astype(np.float32)
    v = ((blocks * inv[:, None]).astype(np.float32) + np.float32(8.5)).astype(np.float32)
    q = np.minimum(15, np.trunc(v).astype(np.int32)).astype(np.uint8)
    packed = q[:, :16] | (q[:, 16:] << 4)
    out = np.concatenate([_f16_bytes(d), packed], axis=1)
    return out.reshape(x.shape[:-1] + (x.shape[-1] // QK * 18,))


def e4m3_values():
    """The 256 codes' values (NaN for 0x7f and 0xff): sign, 4 exponent bits
    (bias 7), 3 mantissa bits; exponent 0 subnormal (m / 8 * 2^-6)."""
    codes = np.arange(256)
    s, e, m = codes >> 7, (codes >> 3) & 15, codes & 7
    mag = np.where(e == 0, m / 8.0 * 2.0 ** -6, (1 + m / 8.0) * 2.0 ** (e - 7.0))
    mag[(e == 15) & (m == 7)] = np.nan
    return np.where(s == 1, -mag, mag)


E4M3 = e4m3_values()
_POS = E4M3[:127]  # codes 0x00..0x7e, ascending, 0 .. 448


def fp8(x, scale):
    """x / scale (float32 division) rounded to the nearest e4m3 value, ties
    to the even code, saturated to +-448; NaN to 0x7f.
    scale: a number, or one per index of axis -2. Bytes of x's shape."""
    x = np.asarray(x, np.float32)
    s = np.asarray(scale, np.float32)
    s = s.reshape(-1, 1) if s.size > 1 else s.reshape(())
    y = (x / s).astype(np.float32).astype(np.float64)
    a = np.minimum(np.abs(y), 448.0)
    hi = np.clip(np.searchsorted(_POS, a), 0, 126)
    lo = np.maximum(hi - 1, 0)
    dlo, dhi = a - _POS[lo], _POS[hi] - a
    pick = np.where(dlo < dhi, lo, np.where(dhi < dlo, hi, np.where(lo % 2 == 0, lo, hi)))
    code = pick.astype(np.uint8) | np.where(np.signbit(y), 0x80, 0).astype(np.uint8)
    code[np.isnan(y)] = 0x7f
    return code


def decode(kind, data, d, scale=None):
    """float64 values [..., d] of `data` bytes [..., row_bytes]: q8_0 and
    q4_0 each block's fp16 scale times its integers, fp8 the code's value
    times the scale (per index of axis -2 where it holds more than one)."""
    lead = data.shape[:-1]
    if kind == "fp8_e4m3":
        s = np.asarray(scale, np.float64)
        s = s.reshape(-1, 1) if s.size > 1 else s.reshape(())
        return E4M3[data] * s
    per = 34 if kind == "q8_0" else 18
    blocks = data.reshape(-1, per)
    dd = _f16_of(blocks[:, :2]).astype(np.float64)
    if kind == "q8_0":
        q = blocks[:, 2:].copy().view(np.int8).astype(np.float64)
    else:
        qs = blocks[:, 2:]
        q = np.concatenate([qs & 15, qs >> 4], axis=1).astype(np.float64) - 8
    return (dd[:, None] * q).reshape(lead + (d,))


def encode(kind, x, scale=None):
    return fp8(x, scale) if kind == "fp8_e4m3" else (q8_0(x) if kind == "q8_0" else q4_0(x))


def gather(pages, table, b, length):
    """Sequence b's first `length` keys of a paged [num_pages, page_size,
    Hkv, d] tensor, [length, Hkv, d]."""
    P = pages.shape[1]
    j = np.arange(length)
    return pages[table[b, j // P], j % P]


def attention(q, k, v, causal=False, scale=None, window=(-1, -1), softcap=0.0, slopes=None):
    """One sequence: q [Nq, H, d], k [Nk, Hkv, d], v [Nk, Hkv, d_v] ->
    O float64 [Nq, H, d_v] and LSE [H, Nq] (-inf, O zero, for a query that
    sees no key). causal, the window and ALiBi align bottom-right (query i
    is at key position i + Nk - Nq), as FlashAttention's."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    Nq, H, d = q.shape
    Nk, Hkv = k.shape[0], k.shape[1]
    scale = 1 / np.sqrt(d) if scale is None else scale
    i = np.arange(Nq)[:, None] + Nk - Nq
    j = np.arange(Nk)[None, :]
    seen = np.ones((Nq, Nk), bool)
    if causal:
        seen &= j <= i
    if window[0] >= 0:
        seen &= j >= i - window[0]
    if window[1] >= 0:
        seen &= j <= i + window[1]
    o = np.zeros((Nq, H, v.shape[2]))
    lse = np.full((H, Nq), -np.inf)
    rows = seen.any(axis=1)
    for h in range(H):
        g = h // (H // Hkv)
        s = scale * q[:, h] @ k[:, g].T
        if softcap:
            s = softcap * np.tanh(s / softcap)
        if slopes is not None:
            s = s - slopes[h] * np.abs(i - j)
        s = np.where(seen, s, -np.inf)
        m = np.where(rows, s.max(axis=1, initial=-np.inf), 0)
        p = np.where(seen, np.exp(s - m[:, None]), 0)
        z = p.sum(axis=1)
        o[rows, h] = (p[rows] @ v[:, g]) / z[rows, None]
        lse[h, rows] = m[rows] + np.log(z[rows])
    return o, lse
