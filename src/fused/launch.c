/* The launch shared by the fused kernels that take the standard arguments. */
#include "context/context.h"
#include "fused/kernel.h"

int fused_launch_standard(clattn_ctx *ctx, const struct attention_call *c,
                          const struct fused_plan *plan, cl_kernel kern)
{
    const clattn_shape *s = c->shape;
    const size_t n_qblocks = (s->q_len + plan->tiles.bm - 1) / plan->tiles.bm;
    cl_uint nq = (cl_uint)s->q_len, nk = (cl_uint)s->kv_len, heads = (cl_uint)s->heads;
    cl_uint group = (cl_uint)(s->heads / s->kv_heads), nqb = (cl_uint)n_qblocks;
    cl_float scale_log2 = c->scale * 1.44269504088896341f; /* exp(x) = exp2(x log2 e) */
    cl_int off = c->causal_off;
    cl_int err = 0;
    cl_uint i = 0;
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->q);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->k);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->v);
    err |= clSetKernelArg(kern, i++, sizeof(cl_mem), &c->o);
    err |= clSetKernelArg(kern, i++, sizeof nq, &nq);
    err |= clSetKernelArg(kern, i++, sizeof nk, &nk);
    err |= clSetKernelArg(kern, i++, sizeof heads, &heads);
    err |= clSetKernelArg(kern, i++, sizeof group, &group);
    err |= clSetKernelArg(kern, i++, sizeof nqb, &nqb);
    err |= clSetKernelArg(kern, i++, sizeof scale_log2, &scale_log2);
    err |= clSetKernelArg(kern, i++, sizeof off, &off);
    if (err != CL_SUCCESS)
        return clattn_fail(CLATTN_ECL, "clSetKernelArg(%s) failed", plan->kernel->name);
    size_t local = plan->local, global = n_qblocks * s->batch * s->heads * local;
    err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, &local, c->num_wait,
                                 c->wait_list, c->done);
    if (err != CL_SUCCESS)
        return clattn_fail_cl(err, "clEnqueueNDRangeKernel(" FUSED_ENTRY ")");
    return CLATTN_OK;
}
