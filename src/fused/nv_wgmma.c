/* SPDX-License-Identifier: MIT */
/* The Hopper warpgroup kernel (cl/fused/nv_wgmma.cl): compute capability
 * 9.0, fp16 or bf16, d = 64/128/256, made at build time as PTX program
 * binaries (cl/ptxgen.py), one per head dimension, storage and flavour:
 * plain (causal, windows, lengths, sinks, the split, the LSE) or with the
 * per-score variants (softcap, ALiBi, masks). Its tiles are fixed by the build: 128
 * packed rows (two consumer warpgroups) by BN keys, in work-groups of 384
 * work-items (with the producer warpgroup), one or two per SM. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "context/context.h"
#include "context/program.h"
#include "core/error.h"
#include "device/kernel_source.h"
#include "fused/kernel.h"
#include "fused/nv_mma.h"

#include "../../cl/include/nv_wgmma_geometry.h" /* the build's tiles, shared with the kernel */

extern const struct fused_kernel fused_nv_wgmma;

static void binary_name(size_t d, clattn_dtype dtype, unsigned flags, char *buf, size_t cap)
{
    snprintf(buf, cap, "fused_nv_wgmma_d%zu%s%s.ptx", d,
             (flags & NV_WGMMA_SCORE_BITS) ? "_score" : "", dtype == CLATTN_BF16 ? "_bf16" : "");
}

static const char *cannot_run(const struct device_facts *dev, const struct attention_call *c)
{
    if (dev->nv_cc != 90)
        return "needs an NVIDIA device of compute capability 9.0 (wgmma, sm_90a)";
    const char *why = nv_mma_cannot_run(dev, c);
    if (why)
        return why;
    char name[48];
    const char *text;
    size_t len;
    binary_name(c->shape->head_dim, c->shape->dtype, c->flags, name, sizeof name);
    if (clattn_embedded_binary(name, &text, &len) < 0) {
        clattn_clear_error();
        return "this build has no PTX kernels (no clang + libclc for nvptx at build time)";
    }
    return NULL;
}

/* A tile of 128 packed rows is mostly idle for decoding: nv-decode and
 * nv-mma read the same keys with fewer rows per group. */
static const char *not_preferred(const struct device_facts *dev, const struct attention_call *c)
{
    (void)dev;
    const clattn_shape *s = c->shape;
    if (s->heads / s->kv_heads * s->q_len < NV_WGMMA_BM / 2)
        return "fewer than 64 packed rows per KV head: its 128-row tiles would idle";
    return NULL;
}

static const struct fused_tiles candidates[] = { { 128, 128, 0 }, { 128, 64, 0 } };

static void default_tiles(const struct device_facts *dev, const clattn_shape *s, size_t rows,
                          const struct fused_plan *plan, struct fused_tiles *out)
{
    (void)dev;
    (void)plan;
    (void)rows;
    out->bm = NV_WGMMA_BM;
    out->bn = NV_WGMMA_BN(s->head_dim);
    out->tm = 0;
}

static int configure(const struct device_facts *dev, const clattn_shape *s,
                     struct fused_plan *plan)
{
    (void)dev;
    const size_t d = s->head_dim;
    if (plan->tiles.bm != NV_WGMMA_BM || plan->tiles.bn != NV_WGMMA_BN(d))
        return clattn_fail(CLATTN_EINVAL, "the wgmma kernel is built with %dx%zu tiles for "
                           "d=%zu (asked %zux%zu)", (int)NV_WGMMA_BM, (size_t)NV_WGMMA_BN(d), d,
                           plan->tiles.bm, plan->tiles.bn);
    plan->local = NV_WGMMA_THREADS;
    plan->fixed_blocks = NV_WGMMA_STAGES(d) + 2;
    /* Groups per SM: 384 work-items at .maxnreg 168 take 64,512 of its
     * 65,536 registers (d = 128, 256: Q and the ring 160 and 192 KiB of
     * shared memory); d = 64 is built at .maxnreg 80 with an 80 KiB ring:
     * two. */
    plan->groups_per_cu = NV_WGMMA_GROUPS_PER_SM(d);
    return CLATTN_OK;
}

static void binary(const struct attention_call *c, const struct fused_plan *plan, char *buf,
                   size_t cap)
{
    (void)plan;
    binary_name(c->shape->head_dim, c->shape->dtype, c->flags, buf, cap);
}

/* ------------------------------------------------------------------ probe */

/* The probe's problem: two query heads on one KV head (GQA packing), 60
 * queries (a partial row tile), 200 keys (a partial key block). */
static clattn_shape probe_shape_of(size_t d)
{
    return (clattn_shape){ 1, 2, 1, 60, 200, d, CLATTN_F16 };
}

struct probe_buffers {
    uint16_t *host[4]; /* q, k, v, o */
    double *ref;
    cl_mem dev[4];
};

static void probe_release(struct probe_buffers *b)
{
    for (int i = 0; i < 4; i++) {
        free(b->host[i]);
        if (b->dev[i])
            clReleaseMemObject(b->dev[i]);
    }
    free(b->ref);
}

/* Random inputs on the host and the device, the output poisoned, and the
 * reference. */
static int probe_inputs(clattn_ctx *sib, const clattn_shape *s, const clattn_options *opts,
                        struct probe_buffers *b)
{
    const size_t n[4] = { clattn_shape_q_elems(s), clattn_shape_kv_elems(s),
                          clattn_shape_kv_elems(s), clattn_shape_q_elems(s) };
    for (int i = 0; i < 4; i++) {
        b->host[i] = malloc(n[i] * 2);
        if (!b->host[i])
            return clattn_fail(CLATTN_ENOMEM, "wgmma probe inputs");
        if (i < 3)
            clattn_random_fill(b->host[i], n[i], CLATTN_F16, 0x5eed + (uint64_t)i);
    }
    b->ref = malloc(n[0] * sizeof *b->ref);
    if (!b->ref)
        return clattn_fail(CLATTN_ENOMEM, "wgmma probe reference");
    int rc = clattn_reference(s, opts, b->host[0], b->host[1], b->host[2], b->ref);
    if (rc < 0)
        return rc;
    for (int i = 0; i < 4; i++) {
        cl_int err;
        b->dev[i] = clCreateBuffer(sib->context, i < 3 ? CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR
                                                       : CL_MEM_READ_WRITE,
                                   n[i] * 2, i < 3 ? b->host[i] : NULL, &err);
        if (err != CL_SUCCESS)
            return clattn_fail_cl(err, "clCreateBuffer(wgmma probe)");
    }
    const cl_uchar poison = 0xff; /* NaN in fp16 */
    cl_int err = clEnqueueFillBuffer(sib->queue, b->dev[3], &poison, 1, 0, n[3] * 2, 0, NULL,
                                     NULL);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "poisoning the wgmma probe");
}

/* The probe's call: contiguous tensors, no mask, one row tile, one chunk. */
static void probe_plan(clattn_ctx *sib, const clattn_shape *s, const clattn_options *opts,
                       const struct probe_buffers *b, struct attention_call *c,
                       struct fused_plan *plan, clattn_run_info *info)
{
    const uint64_t d = s->head_dim;
    *c = (struct attention_call){ .shape = s, .opts = opts, .scale = 1.0f / sqrtf((float)d),
                                  .head_dim_v = d,
                                  .q = b->dev[0], .k = b->dev[1], .v = b->dev[2],
                                  .o = b->dev[3], .contiguous = 1, .info = info };
    c->ql = (struct tensor_layout){ 0, s->heads * s->q_len * d, s->q_len * d, d };
    c->kl = (struct tensor_layout){ 0, s->kv_heads * s->kv_len * d, s->kv_len * d, d };
    c->vl = c->kl;
    c->ol = c->ql;
    default_tiles(&sib->dev, s, 0, plan, &plan->tiles);
    configure(&sib->dev, s, plan);
    plan->n_rtiles = 1;
    plan->splits = 1;
    plan->split_keys = (s->kv_len + plan->tiles.bn - 1) / plan->tiles.bn * plan->tiles.bn;
}

static int probe_one(clattn_ctx *sib, size_t d)
{
    const clattn_shape s = probe_shape_of(d);
    clattn_options opts;
    clattn_default_options(&opts);
    struct probe_buffers b = { { NULL }, NULL, { NULL } };
    struct attention_call c;
    struct fused_plan plan;
    fused_plan_init(&plan, &fused_nv_wgmma);
    clattn_run_info info;
    char name[48];
    memset(&info, 0, sizeof info);
    cl_kernel kern = NULL;
    const cl_mem no_part[FUSED_PARTS] = { NULL, NULL, NULL }; /* the probe shape has no split */
    int rc = probe_inputs(sib, &s, &opts, &b);
    if (rc < 0)
        goto out;
    probe_plan(sib, &s, &opts, &b, &c, &plan, &info);
    binary_name(d, CLATTN_F16, 0, name, sizeof name);
    if ((rc = kernel_get(sib, name, "", FUSED_ENTRY, &kern)) < 0)
        goto out;
    if ((rc = fused_launch(sib, &c, &plan, kern, no_part, NULL)) < 0)
        goto out;
    if ((rc = ctx_finish(sib, "the wgmma probe")) < 0)
        goto out;
    cl_int err = clEnqueueReadBuffer(sib->queue, b.dev[3], CL_TRUE, 0,
                                     clattn_shape_q_elems(&s) * 2, b.host[3], 0, NULL, NULL);
    if (err != CL_SUCCESS) {
        rc = ctx_fail_wait(sib, err, "reading the wgmma probe");
        goto out;
    }
    double max_abs, rel_l2, tol_abs, tol_rel;
    size_t unwritten;
    if ((rc = clattn_compare(&s, b.host[3], b.ref, &max_abs, &rel_l2, &unwritten)) < 0)
        goto out;
    clattn_tolerance(CLATTN_F16, &tol_abs, &tol_rel);
    if (unwritten || max_abs > tol_abs || rel_l2 > tol_rel)
        rc = clattn_fail(CLATTN_EUNSUPPORTED, "%s ran in its probe but disagrees with the "
                         "reference (max error %.3g, %zu outputs unwritten)", name, max_abs,
                         unwritten);
out:
    if (kern)
        clReleaseKernel(kern);
    probe_release(&b);
    return rc;
}

/* Each head dimension's binary, built and run in a context of its own. */
static int probe_launch(const clattn_ctx *ctx)
{
    clattn_ctx *sib = NULL;
    int rc = ctx_open_sibling(ctx, &sib);
    for (size_t d = 64; rc == CLATTN_OK && d <= 256; d *= 2)
        rc = probe_one(sib, d);
    if (rc < 0 && sib && sib->lost)
        rc = clattn_fail(CLATTN_EUNSUPPORTED, "the wgmma kernel faulted in its probe, in a "
                         "context of its own (the caller's is unharmed): %.140s",
                         clattn_last_error_detail());
    ctx_close_sibling(&sib);
    return rc;
}

static const clattn_shape probe_shape = { 1, 2, 1, 64, 128, 128, CLATTN_F16 };

const struct fused_kernel fused_nv_wgmma = {
    .name = "nv-wgmma",
    .id = CLATTN_FUSED_NV_WGMMA,
    .file = "fused/nv_wgmma.cl",
    .summary = "NVIDIA Hopper (sm_90a) warpgroup MMA: wgmma, a producer warpgroup and mbarrier "
               "ring, setmaxnreg; PTX binaries made at build time; fp16 and bf16, d = "
               "64/128/256",
    /* Not the caller's snippets (a binary cannot take source) nor the
     * cache forms (paged, packed, quantized: nv-decode and nv-mma's). */
    .variants = FUSED_F_WINDOW | FUSED_F_SINKS | NV_WGMMA_SCORE_BITS | FUSED_F_ALIBI_SEQ,
    .dtypes = FUSED_DTYPE(CLATTN_F16) | FUSED_DTYPE(CLATTN_BF16),
    .cannot_run = cannot_run,
    .not_preferred = not_preferred,
    .probe_shape = &probe_shape,
    FUSED_CANDIDATES(candidates),
    .default_tiles = default_tiles,
    .configure = configure,
    .binary = binary,
    .probe_launch = probe_launch,
};
