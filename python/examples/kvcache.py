# SPDX-License-Identifier: MIT
# KV caches from Python in FlashAttention's terms: a decoding step on a paged
# cache stored in ggml's q8_0 (K) and fp8 e4m3 (V), and a packed batch,
# checked against numpy. (tests/python runs this file; python/README.md
# shows the part between the markers.)
# README: begin
import numpy as np
import clattn

rng = np.random.default_rng(0)
B, H, Hkv, d, page = 2, 8, 2, 64, 16
# A paged cache, [num_pages, page_size, Hkv, d]: K in q8_0, V in fp8 e4m3
# with a scale per KV head; sequence b's pages are block_table[b].
k_pages = clattn.quantize(rng.uniform(-1, 1, (8, page, Hkv, d)), "q8_0")
v_pages = clattn.quantize(rng.uniform(-1, 1, (8, page, Hkv, d)), "fp8_e4m3", per_head=True)
block_table = np.array([[3, 7, 0], [1, 4, 6]], np.int32)   # [B, max_pages]
lens = np.array([5, 40], np.int32)                          # keys each sequence holds

# One decoding step: the new token's K and V are quantized into the pages in
# place at position lens[b], then q attends to the lens[b] + 1 keys.
q = rng.uniform(-1, 1, (B, 1, H, d)).astype(np.float32)     # [B, Nq, H, d]
k_new = rng.uniform(-1, 1, (B, 1, Hkv, d)).astype(np.float32)
v_new = rng.uniform(-1, 1, (B, 1, Hkv, d)).astype(np.float32)
o = clattn.attention_with_kvcache(q, k_pages, v_pages, k_new, v_new, cache_seqlens=lens,
                                  block_table=block_table, causal=True)
lens += 1  # the caller keeps the lengths, as with FlashAttention

# A packed batch (flash_attn_varlen_func): sequences of 3 and 5 tokens.
cu = np.array([0, 3, 8], np.int32)
qp = rng.uniform(-1, 1, (8, H, d)).astype(np.float16)      # [total, H, d]
kp = rng.uniform(-1, 1, (8, Hkv, d)).astype(np.float16)    # [total, Hkv, d]
vp = rng.uniform(-1, 1, (8, Hkv, d)).astype(np.float16)
op, lse = clattn.attention_varlen(qp, kp, vp, cu, cu, causal=True, return_lse=True)
# README: end


def softmax_attention(q, k, v, causal):
    """q [Nq, H, d], k and v [Nk, Hkv, d] in float64: O [Nq, H, d]."""
    q, k, v = (np.asarray(x, np.float64) for x in (q, k, v))
    g = q.shape[1] // k.shape[1]
    k, v = np.repeat(k, g, axis=1), np.repeat(v, g, axis=1)
    s = np.einsum("qhd,khd->hqk", q, k) / np.sqrt(q.shape[2])
    if causal:
        nq, nk = q.shape[0], k.shape[0]
        s[:, np.arange(nk)[None, :] > np.arange(nq)[:, None] + nk - nq] = -np.inf
    p = np.exp(s - s.max(-1, keepdims=True))
    return np.einsum("hqk,khd->qhd", p / p.sum(-1, keepdims=True), v)


# The step against numpy: each sequence's keys gathered from its pages.
kd, vd = clattn.dequantize(k_pages), clattn.dequantize(v_pages)
errors = []
for b in range(B):
    j = np.arange(lens[b])
    pages, slots = block_table[b, j // page], j % page
    errors.append(np.abs(o[b] - softmax_attention(q[b], kd[pages, slots], vd[pages, slots],
                                                  True)).max())
assert max(errors) < 1e-4, errors
# The new token went into its page, quantized.
np.testing.assert_array_equal(k_pages.data[block_table[1, 40 // page], 40 % page],
                              clattn.quantize(k_new[1, 0], "q8_0").data)
for b in range(2):
    s = slice(cu[b], cu[b + 1])
    assert np.abs(op[s] - softmax_attention(qp[s], kp[s], vp[s], True)).max() < 4e-3
assert lse.shape == (H, 8)
print("max abs error of the paged decoding step", max(errors))
