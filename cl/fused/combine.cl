/* SPDX-License-Identifier: MIT */
/*
 * Split-KV's second step: each row's key chunks (written by a fused kernel
 * with -DSPLIT=1: the unnormalised accumulator and (max, sum) per chunk, max
 * in the log2 domain of the scaled scores) combined exactly into O and the
 * LSE, with the semantics of cl/include/fused_finish.clh. One work-group per row,
 * one work-item per output column; rows past a sequence's q_len get zeros.
 *
 * The chunks' (max, sum) pairs are read by all work-items at once and
 * reduced in local memory, then each column's partial outputs are summed
 * with their weights: a row costs a few memory latencies whatever its chunk
 * count (a loop over the chunks in every work-item cost one latency per
 * chunk: a 66-chunk decode on the H200, B=1 Nk=131072, went from 0.163 to
 * 0.153 ms with this, docs/PERFORMANCE.md).
 *
 * With PARTS > 1 the work-items of a column are PARTS apart and each sums
 * every PARTS-th chunk, the parts then added in local memory, so that a
 * row of many chunks waits for fewer loads in turn (the H200's 66-chunk
 * decode, B = 1 Nk = 131072, spent 10.7 us here with one part and 8.8 with
 * 8: src/fused/launch.c takes 8 on a GPU).
 *
 * Build options: -DD=<head dim of O> -DWG=<work-items, a power of two >= D>
 * -DPARTS=<WG / COLS_WG: 1, 2, 4 or 8> -DCHUNKS_MAX=<most chunks a call has>
 * and the call's variant (cl/include/fused_variant.h: -DCAUSAL ... 0|1
 * each), -DDTYPE_F16 or -DDTYPE_BF16 (optional). The window's sides and
 * the sinks come as arguments (a sink joins the merged denominator here,
 * once, not in each chunk).
 */
#ifndef PARTS
#define PARTS 1
#endif
#define COLS_WG (WG / PARTS) /* work-items per part: a power of two >= D */
#include "dtype.clh"
#include "fused_finish.clh"
#include "fused_variant.h"
#include "group_row.clh"


__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attention_combine(__global store_t *o, __global float *lse, __global const float *part_o,
                       __global const float *part_ml, __global const uint *kv_lens,
                       __global const uint *q_lens, const ulong o_off, const ulong o_sb,
                       const ulong o_sh, const ulong o_st, const uint batch, const uint n_q,
                       const uint n_k, const uint heads, const uint splits, const int win_left,
                       const int win_right, __global const float *sinks)
{
    __local float scratch[WG];
    /* 2^(m_s - max), chunk s's weight; -1 for a chunk that saw no key (m_s
     * = -inf), which is left out, as a weight that underflows to 0 is not
     * (its NaNs still count). */
    __local float weight[CHUNKS_MAX];
    const ulong row = get_group_id(0), rows = (ulong)batch * heads * n_q;
    const uint x = get_local_id(0);
    const uint i = (uint)(row % n_q), h = (uint)(row / n_q % heads), b = (uint)(row / n_q / heads);
    const uint2 len = sequence_lens(b, n_q, n_k, kv_lens, q_lens);
    const uint kv_len = len.x, q_len = len.y;
    /* The row's keys [begin, end): fused_grid.clh's rule (the causal mask
     * and the window, aligned top-left or bottom-right). */
    const long align = CAUSAL && !CAUSAL_BR ? 0 : (long)kv_len - (long)q_len;
    long end = kv_len, begin = 0;
#if CAUSAL
    end = min(end, (long)i + align + 1);
#endif
#if WINDOW
    if (win_right >= 0)
        end = min(end, (long)i + align + win_right + 1);
    if (win_left >= 0)
        begin = max(begin, (long)i + align - win_left);
#endif
    const int live = i < q_len;

    float mx = -INFINITY;
    for (uint s = x; s < splits; s += WG)
        mx = fmax(mx, part_ml[2 * (s * rows + row)]);
    mx = group_reduce(mx, 1, scratch, x);
    float l = 0.0f;
    for (uint s = x; s < splits; s += WG) {
        const float m_s = part_ml[2 * (s * rows + row)];
        const int seen = m_s != -INFINITY;
        const float w = seen ? exp2(m_s - mx) : -1.0f;
        weight[s] = w;
        if (seen)
            l += part_ml[2 * (s * rows + row) + 1] * w;
    }
    l = group_reduce(l, 0, scratch, x); /* its barriers publish weight[] too */
    /* Where the variants hide keys one by one, a row sees a key when one of
     * its chunks did. */
    const int sees_key = live && end > begin &&
                         (!(MASK || MASK_BOOL || MASK_MOD) || mx != -INFINITY);

    const uint col = x % COLS_WG, part = x / COLS_WG;
    float acc = 0.0f;
    if (live && col < D) {
#pragma unroll 8
        for (uint s = part; s < splits; s += PARTS) {
            const float w = weight[s];
            if (w >= 0.0f || isnan(w))
                acc += part_o[(s * rows + row) * D + col] * w;
        }
    }
#if PARTS > 1
    scratch[x] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (part == 0)
        for (uint p = 1; p < PARTS; p++)
            acc += scratch[x + p * COLS_WG];
#endif
    const float sink = live && SINKS ? sinks[h] * 1.44269504088896341f : -INFINITY;
    const float scale = live ? fused_row_scale_sink(l, mx, sees_key, sink) : 0.0f;
    /* A packed sequence's rows past its length are the next one's. */
#if PACKED_Q
    const ulong first = q_lens[b];
    const int writes = live;
#else
    const ulong first = 0;
    const int writes = 1;
#endif
    if (part == 0 && col < D && writes)
        STORE(acc * scale, o, o_off + b * o_sb + h * o_sh + (first + i) * o_st + col);
#if LSE_OUT
    if (x == 0)
        lse[row] = live ? fused_row_lse_sink(l, mx, sees_key, scale, sink) : -INFINITY;
#endif
}
