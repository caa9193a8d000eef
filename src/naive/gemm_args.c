/* The argument list cl/naive/gemm.cl, gemm_cpu.cl and gemm_nv_mma.cl share, and
 * their launch. */
#include <stdio.h>

#include "device/cl_error.h"
#include "naive/gemm.h"

static cl_int set_standard_args(cl_kernel kern, const struct gemm_desc *g)
{
    cl_uint M = (cl_uint)g->m, N = (cl_uint)g->n, K = (cl_uint)g->k;
    cl_uint lda = (cl_uint)g->lda, ldb = (cl_uint)g->ldb, ldc = (cl_uint)g->ldc;
    cl_ulong zero = 0, as = g->a_stride, bs = g->b_stride, cs = g->c_stride;
    cl_int err = 0;
    cl_uint i = 0;
    err |= clSetKernelArg(kern, i++, sizeof M, &M);
    err |= clSetKernelArg(kern, i++, sizeof N, &N);
    err |= clSetKernelArg(kern, i++, sizeof K, &K);
    err |= clSetKernelArg(kern, i++, sizeof g->alpha, &g->alpha);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &g->a);
    err |= clSetKernelArg(kern, i++, sizeof zero, &zero);
    err |= clSetKernelArg(kern, i++, sizeof lda, &lda);
    err |= clSetKernelArg(kern, i++, sizeof as, &as);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &g->b);
    err |= clSetKernelArg(kern, i++, sizeof zero, &zero);
    err |= clSetKernelArg(kern, i++, sizeof ldb, &ldb);
    err |= clSetKernelArg(kern, i++, sizeof bs, &bs);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &g->c);
    err |= clSetKernelArg(kern, i++, sizeof zero, &zero);
    err |= clSetKernelArg(kern, i++, sizeof ldc, &ldc);
    err |= clSetKernelArg(kern, i++, sizeof cs, &cs);
    return err;
}

int gemm_enqueue_standard(cl_command_queue queue, cl_kernel kern, const struct gemm_desc *g,
                          cl_uint dims, const size_t *global, const size_t *local,
                          const char *label)
{
    const char *call = "clSetKernelArg";
    cl_int err = set_standard_args(kern, g);
    if (err == CL_SUCCESS) {
        call = "clEnqueueNDRangeKernel";
        err = clEnqueueNDRangeKernel(queue, kern, dims, NULL, global, local, 0, NULL, NULL);
    }
    clReleaseKernel(kern);
    if (err == CL_SUCCESS)
        return CLATTN_OK;
    char what[96];
    snprintf(what, sizeof what, "%s(%s)", call, label);
    return clattn_fail_cl(err, what);
}
