/* SPDX-License-Identifier: MIT */
/* What a device result is judged by: tolerances per dtype, the comparison
 * with the reference, and the random inputs checks draw. No OpenCL. */
#include <math.h>

#include "core/error.h"
#include "core/extent.h"

void clattn_tolerance(clattn_dtype dtype, double *max_abs, double *rel_l2)
{
    /* fp32: float accumulation over at most a few thousand terms.
     * fp16: the output is rounded to half (2^-11 relative), and the naive
     * path also rounds S (absolute error |S| 2^-11 in the logits) and P.
     * bf16: the same with 8 bits of mantissa (2^-9 relative): O's rounding,
     * and P rounded for the tensor cores' P V. */
    double a = dtype == CLATTN_F16 ? 4e-3 : dtype == CLATTN_BF16 ? 3e-2 : 1e-4;
    double r = dtype == CLATTN_F16 ? 2e-3 : dtype == CLATTN_BF16 ? 1.6e-2 : 1e-5;
    if (max_abs)
        *max_abs = a;
    if (rel_l2)
        *rel_l2 = r;
}

int clattn_compare(const clattn_shape *s, const void *out, const double *ref, double *max_abs,
                   double *rel_l2, size_t *nan_count)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(s && out && ref && max_abs && rel_l2);
    int rc = clattn_shape_check(s);
    if (rc < 0)
        return rc;
    const size_t n = clattn_shape_q_elems(s);
    double worst = 0.0, diff2 = 0.0, ref2 = 0.0;
    size_t nans = 0;
    for (size_t i = 0; i < n; i++) {
        double x = s->dtype == CLATTN_F16    ? clattn_f16_to_f32(((const uint16_t *)out)[i])
                   : s->dtype == CLATTN_BF16 ? clattn_bf16_to_f32(((const uint16_t *)out)[i])
                                             : ((const float *)out)[i];
        if (isnan(x)) {
            nans++;
            continue;
        }
        double e = fabs(x - ref[i]);
        if (e > worst || isinf(e))
            worst = e;
        diff2 += e * e;
        ref2 += ref[i] * ref[i];
    }
    *max_abs = nans ? INFINITY : worst;
    *rel_l2 = nans ? INFINITY : (ref2 > 0 ? sqrt(diff2 / ref2) : sqrt(diff2));
    if (nan_count)
        *nan_count = nans;
    return CLATTN_OK;
}

int clattn_random_fill(void *data, size_t n, clattn_dtype dtype, uint64_t seed)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(data || n == 0);
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16 || dtype == CLATTN_BF16);
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    for (size_t i = 0; i < n; i++) {
        /* xorshift64*: cheap, and plenty for test data. */
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        uint64_t r = x * 0x2545F4914F6CDD1Dull;
        /* Odd multiples of 2^-24 in [-1, 1): never exactly zero. */
        float f = ((float)(r >> 40) + 0.5f) * (2.0f / 16777216.0f) - 1.0f;
        if (dtype == CLATTN_F16)
            ((uint16_t *)data)[i] = clattn_f32_to_f16(f);
        else if (dtype == CLATTN_BF16)
            ((uint16_t *)data)[i] = clattn_f32_to_bf16(f);
        else
            ((float *)data)[i] = f;
    }
    return CLATTN_OK;
}


/* Element i of a `dtype` array as a float. */
static float element(const void *a, size_t i, clattn_dtype dtype)
{
    return dtype == CLATTN_F16    ? clattn_f16_to_f32(((const uint16_t *)a)[i])
           : dtype == CLATTN_BF16 ? clattn_bf16_to_f32(((const uint16_t *)a)[i])
                                  : ((const float *)a)[i];
}

int clattn_merge(size_t rows, size_t d, clattn_dtype dtype, const void *o1, const float *lse1,
                 const void *o2, const float *lse2, void *o, float *lse)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG((o1 && lse1 && o2 && lse2 && o && lse) || rows == 0);
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16 || dtype == CLATTN_BF16);
    CLATTN_CHECK_ARG(d >= 1);
    size_t ob, lb;
    if (mul_overflows(rows, d, &ob) || mul_overflows(ob, clattn_dtype_size(dtype), &ob) ||
        mul_overflows(rows, sizeof(float), &lb))
        return clattn_fail(CLATTN_EOVERFLOW, "merge of %zu rows of d = %zu: the byte count "
                           "overflows", rows, d);
    /* o and lse may be o1 and lse1 exactly (each row is read before it is
     * written); any other sharing of memory by an output is refused. */
    const struct extent e[6] = {
        extent_host("o1", o == o1 ? NULL : o1, 0, ob, 0),
        extent_host("lse1", lse == lse1 ? NULL : lse1, 0, lb, 0),
        extent_host("o2", o2, 0, ob, 0),
        extent_host("lse2", lse2, 0, lb, 0),
        extent_host("o", o, 0, ob, 1),
        extent_host("lse", lse, 0, lb, 1),
    };
    int rc = extents_disjoint(e, 6);
    if (rc < 0)
        return rc;
    for (size_t r = 0; r < rows; r++) {
        const double a = lse1[r], b = lse2[r];
        const double mx = a > b ? a : b;
        /* A side that saw no key (-inf) weighs nothing; NaN stays NaN. */
        const double wa = a == -INFINITY ? 0.0 : exp(a - (isnan(mx) ? a : mx));
        const double wb = b == -INFINITY ? 0.0 : exp(b - (isnan(mx) ? b : mx));
        const double sum = wa + wb;
        for (size_t x = 0; x < d; x++) {
            const size_t i = r * d + x;
            const double out = sum == 0.0 ? 0.0
                                          : (wa * element(o1, i, dtype) +
                                             wb * element(o2, i, dtype)) / sum;
            if (dtype == CLATTN_F16)
                ((uint16_t *)o)[i] = clattn_f32_to_f16((float)out);
            else if (dtype == CLATTN_BF16)
                ((uint16_t *)o)[i] = clattn_f32_to_bf16((float)out);
            else
                ((float *)o)[i] = (float)out;
        }
        lse[r] = sum == 0.0 ? -INFINITY : (float)(mx + log(sum));
    }
    return CLATTN_OK;
}
