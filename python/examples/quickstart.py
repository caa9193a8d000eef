# SPDX-License-Identifier: MIT
# clattn from Python: grouped-query attention with a bottom-right causal mask
# on numpy arrays, checked against numpy. (tests/python runs this file; the
# README shows the part between the markers.)
# README: begin
import numpy as np
import clattn

rng = np.random.default_rng(0)
q = rng.uniform(-1, 1, (2, 8, 64, 64)).astype(np.float32)  # [B, H, Nq, d]
k = rng.uniform(-1, 1, (2, 2, 96, 64)).astype(np.float32)  # [B, Hkv, Nk, d]: 4 query heads per KV head
v = rng.uniform(-1, 1, (2, 2, 96, 64)).astype(np.float32)

o, lse = clattn.attention(q, k, v, causal="bottom-right", return_lse=True)

# The same in numpy: query head h reads KV head h // 4; query i sees keys j <= i + Nk - Nq.
kk, vv = np.repeat(k, 4, axis=1), np.repeat(v, 4, axis=1)
s = q @ kk.transpose(0, 1, 3, 2) / np.sqrt(64)
s[..., np.arange(96)[None, :] > np.arange(64)[:, None] + 96 - 64] = -np.inf
p = np.exp(s - s.max(-1, keepdims=True))
want = (p / p.sum(-1, keepdims=True)) @ vv
print(clattn.devices()[0].name, "max abs error", np.abs(o - want).max())
assert np.abs(o - want).max() < 1e-4
# README: end
