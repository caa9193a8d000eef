/* The argument list cl/naive/gemm.cl and cl/naive/gemm_nv_mma.cl share. */
#include "naive/gemm.h"

cl_int gemm_set_standard_args(cl_kernel kern, const struct gemm_desc *g)
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
