/* SPDX-License-Identifier: MIT */
/*
 * clattn_merge_cl: two results over disjoint keys, (o1, lse1) and (o2, lse2),
 * into the exact result over their union (natural-log LSEs, fp32). One
 * work-group per row, one work-item per column; o and lse may alias o1 and
 * lse1 (each element is read before it is written, by the same work-item,
 * and the LSE last, after a barrier).
 *
 * Build options: -DD -DWG (>= D), -DDTYPE_F16 (optional).
 */
#include "dtype.clh"

__kernel __attribute__((reqd_work_group_size(WG, 1, 1)))
void attention_merge(__global const store_t *o1, __global const float *lse1,
                     __global const store_t *o2, __global const float *lse2,
                     __global store_t *o, __global float *lse)
{
    const ulong row = get_group_id(0);
    const uint x = get_local_id(0);
    const float a = lse1[row], b = lse2[row];
    const float mx = fmax(a, b);
    /* A side that saw no key (-inf) weighs nothing; both: zeros and -inf. */
    const float wa = a == -INFINITY ? 0.0f : exp(a - mx);
    const float wb = b == -INFINITY ? 0.0f : exp(b - mx);
    const float sum = wa + wb;
    if (x < D) {
        const float va = LOAD(o1, row * D + x), vb = LOAD(o2, row * D + x);
        const float out = sum == 0.0f ? 0.0f : (wa * va + wb * vb) / sum;
        STORE(out, o, row * D + x);
    }
    barrier(CLK_GLOBAL_MEM_FENCE); /* every work-item has read lse1 */
    if (x == 0)
        lse[row] = sum == 0.0f ? -INFINITY : mx + log(sum);
}
