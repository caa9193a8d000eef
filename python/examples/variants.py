# SPDX-License-Identifier: MIT
# clattn's attention variants from Python, in PyTorch's and FlashAttention's
# spellings, checked against numpy. (tests/python runs this file; the README
# shows the part between the markers.)
import numpy as np

# README: begin
import clattn

rng = np.random.default_rng(0)
B, H, Hkv, N, d = 1, 8, 2, 256, 64
q = rng.uniform(-1, 1, (B, H, N, d)).astype(np.float32)
k = rng.uniform(-1, 1, (B, Hkv, N, d)).astype(np.float32)
v = rng.uniform(-1, 1, (B, Hkv, N, d)).astype(np.float32)

# Mistral-style sliding window of 64 keys, Gemma-2 softcap, ALiBi slopes
# from ggml's max_bias, gpt-oss sinks: one fused call.
o = clattn.attention(q, k, v, causal="bottom-right", window_size=(63, 0), softcap=30.0,
                     alibi_slopes=clattn.alibi_slopes(H, max_bias=8.0),
                     sinks=np.zeros(H, np.float32))

# PyTorch's SDPA: a bool attn_mask keeps where True; is_causal is top-left.
keep = np.tril(np.ones((N, N), bool), 0) & ~np.tril(np.ones((N, N), bool), -64)
o_sdpa = clattn.scaled_dot_product_attention(q, k, v, attn_mask=keep, enable_gqa=True)

# FlashAttention's flash_attn_func: [B, N, heads, d], causal aligned bottom-right.
qs, ks, vs = (x.transpose(0, 2, 1, 3) for x in (q, k, v))
o_fa = clattn.flash_attn_func(qs, ks, vs, causal=True, window_size=(63, 0))
# README: end

# The same window two ways: the mask, and the window.
assert np.abs(o_sdpa - o_fa.transpose(0, 2, 1, 3)).max() < 1e-5
# And against numpy, softcap, ALiBi and the sinks included.
kk, vv = np.repeat(k, H // Hkv, 1), np.repeat(v, H // Hkv, 1)
s = 30.0 * np.tanh((q @ kk.transpose(0, 1, 3, 2) / np.sqrt(d)) / 30.0)
i, j = np.arange(N)[:, None], np.arange(N)[None, :]
s = s - clattn.alibi_slopes(H)[None, :, None, None] * np.abs(i - j)
s = np.where(keep, s, -np.inf)
m = s.max(-1, keepdims=True)
p = np.exp(s - m)
want = (p / (p.sum(-1, keepdims=True) + np.exp(-m))) @ vv  # each sink 0: exp(0 - m)
print("max abs error", np.abs(o - want).max())
assert np.abs(o - want).max() < 1e-4
