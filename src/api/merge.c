/* SPDX-License-Identifier: MIT */
/* clattn_merge_cl: the exact combination of two results over disjoint keys
 * on the device (cl/api/merge.cl); the host version is reference/compare.c's. */
#include <stdio.h>

#include "api/prepare.h"
#include "context/context.h"
#include "context/program.h"

static int check_size(const clattn_ctx *ctx, cl_mem m, const char *name, uint64_t need)
{
    size_t size = 0;
    cl_context owner = NULL;
    if (!m || clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, NULL) != CL_SUCCESS ||
        clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof owner, &owner, NULL) != CL_SUCCESS)
        return clattn_fail(CLATTN_EINVAL, "%s is not an OpenCL buffer", name);
    if (owner != ctx->context)
        return clattn_fail(CLATTN_EINVAL, "buffer %s belongs to another OpenCL context", name);
    if (size < need)
        return clattn_fail(CLATTN_EINVAL, "buffer %s holds %zu bytes; %llu needed", name, size,
                           (unsigned long long)need);
    return CLATTN_OK;
}

static int merge(clattn_ctx *ctx, size_t rows, size_t d, clattn_dtype dtype, cl_mem o1,
                 cl_mem lse1, cl_mem o2, cl_mem lse2, cl_mem o, cl_mem lse, cl_uint num_wait,
                 const cl_event *wait_list, cl_event *done)
{
    CLATTN_CHECK_ARG(dtype == CLATTN_F32 || dtype == CLATTN_F16);
    CLATTN_CHECK_ARG(d >= 1 && d <= 256 && rows >= 1);
    CLATTN_CHECK_ARG(num_wait == 0 || wait_list);
    size_t wg = 32;
    while (wg < d)
        wg *= 2;
    size_t ob, lb, global;
    if (mul_overflows(rows, d, &ob) || mul_overflows(ob, clattn_dtype_size(dtype), &ob) ||
        mul_overflows(rows, 4, &lb) || mul_overflows(rows, wg, &global))
        return clattn_fail(CLATTN_EOVERFLOW, "merge of %zu rows of d = %zu: the byte count "
                           "overflows", rows, d);
    int rc;
    if ((rc = check_size(ctx, o1, "o1", ob)) < 0 || (rc = check_size(ctx, o2, "o2", ob)) < 0 ||
        (rc = check_size(ctx, o, "o", ob)) < 0 || (rc = check_size(ctx, lse1, "lse1", lb)) < 0 ||
        (rc = check_size(ctx, lse2, "lse2", lb)) < 0 || (rc = check_size(ctx, lse, "lse", lb)) < 0)
        return rc;
    /* o and lse may be o1 and lse1 exactly (each element is read before it is
     * written, by the same work-item); any other sharing of memory by an
     * output is refused. */
    const cl_mem m[6] = { o1, lse1, o2, lse2, o, lse };
    static const char *const names[6] = { "o1", "lse1", "o2", "lse2", "o", "lse" };
    struct extent e[6];
    for (int i = 0; i < 6; i++)
        if ((rc = buffer_extent(m[i], names[i], 0, i % 2 ? lb : ob, i >= 4, &e[i])) < 0)
            return rc;
    if (o == o1)
        e[0].root = NULL; /* in place: o reads and writes its own elements */
    if (lse == lse1)
        e[1].root = NULL;
    if ((rc = extents_disjoint(e, 6)) < 0)
        return rc;
    char options[64];
    snprintf(options, sizeof options, "-DD=%zu -DWG=%zu%s", d, wg,
             dtype == CLATTN_F16 ? " -DDTYPE_F16" : "");
    cl_kernel kern;
    if ((rc = kernel_get(ctx, "api/merge.cl", options, "attention_merge", &kern)) < 0)
        return rc;
    const cl_mem args[6] = { o1, lse1, o2, lse2, o, lse };
    cl_int err = CL_SUCCESS;
    for (cl_uint i = 0; i < 6 && err == CL_SUCCESS; i++)
        err = clSetKernelArg(kern, i, sizeof args[i], &args[i]);
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &wg, num_wait, wait_list,
                                     done);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "attention_merge");
}

int clattn_merge_cl(clattn_ctx *ctx, size_t rows, size_t d, clattn_dtype dtype, cl_mem o1,
                    cl_mem lse1, cl_mem o2, cl_mem lse2, cl_mem o, cl_mem lse, cl_uint num_wait,
                    const cl_event *wait_list, cl_event *done)
{
    clattn_clear_error();
    int rc = ctx_enter(ctx);
    if (rc < 0)
        return rc;
    rc = merge(ctx, rows, d, dtype, o1, lse1, o2, lse2, o, lse, num_wait, wait_list, done);
    return ctx_leave_with(ctx, rc);
}
