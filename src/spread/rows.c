/* SPDX-License-Identifier: MIT */
/* Partial attention rows merged in fp32 (see rows.h). */
#include <math.h>
#include <string.h>

#include "spread/rows.h"

void rows_clear(float *acc, size_t rows, size_t dv)
{
    for (size_t i = 0; i < rows; i++) {
        memset(acc + i * (dv + 1), 0, dv * sizeof *acc);
        acc[i * (dv + 1) + dv] = -INFINITY;
    }
}

/* One row merged: (o, l) and (o2, l2) into (o, l). */
static void merge_row(float *o, const float *o2, size_t dv)
{
    const float l1 = o[dv], l2 = o2[dv];
    if (l2 == -INFINITY)
        return;
    if (l1 == -INFINITY) {
        memcpy(o, o2, (dv + 1) * sizeof *o);
        return;
    }
    const float m = l1 > l2 ? l1 : l2;
    const double w1 = exp((double)l1 - m), w2 = exp((double)l2 - m), sum = w1 + w2;
    for (size_t x = 0; x < dv; x++)
        o[x] = (float)((w1 * o[x] + w2 * o2[x]) / sum);
    o[dv] = (float)(m + log(sum));
}

void rows_merge(float *acc, const float *src, size_t rows, size_t dv)
{
    for (size_t i = 0; i < rows; i++)
        merge_row(acc + i * (dv + 1), src + i * (dv + 1), dv);
}

static float load(const void *o, size_t i, clattn_dtype dtype)
{
    switch (dtype) {
    case CLATTN_F16: return clattn_f16_to_f32(((const uint16_t *)o)[i]);
    case CLATTN_BF16: return clattn_bf16_to_f32(((const uint16_t *)o)[i]);
    default: return ((const float *)o)[i];
    }
}

void rows_merge_call(float *acc, size_t dv, size_t blocks, size_t stride, size_t at,
                     size_t count, clattn_dtype dtype, const void *o, const float *lse)
{
    float row[512 + 1];
    for (size_t j = 0; j < blocks; j++)
        for (size_t i = 0; i < count; i++) {
            const size_t src = j * count + i;
            for (size_t x = 0; x < dv; x++)
                row[x] = load(o, src * dv + x, dtype);
            row[dv] = lse[src];
            merge_row(acc + (j * stride + at + i) * (dv + 1), row, dv);
        }
}

void rows_fold_sinks(float *acc, size_t dv, size_t batch, size_t heads, size_t count,
                     const size_t *position, const float *sinks, const uint32_t *q_lens,
                     size_t q_len)
{
    for (size_t b = 0; b < batch; b++)
        for (size_t h = 0; h < heads; h++)
            for (size_t i = 0; i < count; i++) {
                if (position[i] >= (q_lens ? q_lens[b] : q_len))
                    continue;
                float sink = sinks[h], *r = acc + ((b * heads + h) * count + i) * (dv + 1);
                if (r[dv] == -INFINITY) { /* the sink is the whole denominator */
                    r[dv] = sink;
                    continue;
                }
                const float m = r[dv] > sink ? r[dv] : sink;
                const double kept = exp((double)r[dv] - m), all = kept + exp((double)sink - m);
                for (size_t x = 0; x < dv; x++)
                    r[x] = (float)(r[x] * kept / all);
                r[dv] = (float)(m + log(all));
            }
}

void rows_store(const float *acc, size_t rows, size_t dv, clattn_dtype dtype, void *o,
                float *lse)
{
    for (size_t i = 0; i < rows; i++) {
        const float *r = acc + i * (dv + 1);
        for (size_t x = 0; x < dv; x++) {
            const size_t at = i * dv + x;
            if (dtype == CLATTN_F16)
                ((uint16_t *)o)[at] = clattn_f32_to_f16(r[x]);
            else if (dtype == CLATTN_BF16)
                ((uint16_t *)o)[at] = clattn_f32_to_bf16(r[x]);
            else
                ((float *)o)[at] = r[x];
        }
        if (lse)
            lse[i] = r[dv];
    }
}
