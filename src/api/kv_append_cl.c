/* SPDX-License-Identifier: MIT */
/* clattn_kv_append_cl: a step's keys and values into a device KV cache
 * (cl/api/kv_append.cl); core/kv_append.c holds the checks the host
 * version shares. */
#include <stdio.h>
#include <string.h>

#include "api/prepare.h"
#include "context/context.h"
#include "context/kernel_args.h"
#include "context/program.h"
#include "core/abi.h"
#include "core/kv_append.h"
#include "core/kv_type.h"
#include "core/options.h"

/* The device tables of an append: the caller's, else copies of opts'. */
struct append_tables {
    cl_mem lens, table, scale[2];
    cl_mem owned[4];
};

static int tables_of(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                     const clattn_extras *ex, const struct kv_append_plan *p,
                     struct append_tables *t)
{
    memset(t, 0, sizeof *t);
    t->lens = ex->kv_lens;
    t->table = ex->block_table;
    t->scale[0] = ex->k_scale;
    t->scale[1] = ex->v_scale;
    const size_t scales = (o->kv_scale_per_head ? s->kv_heads : 1) * 4;
    int rc = CLATTN_OK;
    if (!t->lens && (rc = prepare_upload(ctx, o->kv_lens, s->batch * 4, "kv_lens", &t->owned[0])) == 0)
        t->lens = t->owned[0];
    if (rc == 0 && o->page_size && !t->table) {
        if (!o->block_table)
            return clattn_fail(CLATTN_EINVAL, "a paged cache without a block table");
        if ((rc = prepare_upload(ctx, o->block_table, s->batch * p->bt_stride * 4, "block_table",
                         &t->owned[1])) == 0)
            t->table = t->owned[1];
    }
    const float *host_scale[2] = { o->k_scale, o->v_scale };
    for (int i = 0; i < 2 && rc == 0; i++)
        if (!t->scale[i] && host_scale[i] &&
            (rc = prepare_upload(ctx, host_scale[i], scales, i ? "v_scale" : "k_scale",
                         &t->owned[2 + i])) == 0)
            t->scale[i] = t->owned[2 + i];
    if (rc < 0)
        return rc;
    const uint64_t table = (uint64_t)s->batch * p->bt_stride * 4;
    if ((rc = prepare_check_buffer(ctx, t->lens, "kv_lens", s->batch * 4)) < 0 ||
        (t->table && (rc = prepare_check_buffer(ctx, t->table, "block_table", table)) < 0) ||
        (t->scale[0] && (rc = prepare_check_buffer(ctx, t->scale[0], "k_scale", scales)) < 0) ||
        (t->scale[1] && (rc = prepare_check_buffer(ctx, t->scale[1], "v_scale", scales)) < 0))
        return rc;
    return CLATTN_OK;
}

static void tables_release(struct append_tables *t)
{
    for (int i = 0; i < 4; i++)
        if (t->owned[i])
            clReleaseMemObject(t->owned[i]);
}

/* One tensor's rows (K: v = 0, V: v = 1) into its cache. */
static int enqueue_rows(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                        const struct kv_append_plan *p, const struct append_tables *t, int v,
                        cl_mem src, cl_mem cache, cl_uint num_wait, const cl_event *wait,
                        cl_event *done)
{
    const clattn_kv_type type = v ? o->v_type : o->k_type;
    const size_t d = v ? p->dv : s->head_dim;
    const clattn_dtype dt = s->dtype;
    char options[256];
    snprintf(options, sizeof options, "-DD=%zu -DTYPE=%d -DPAGED=%d -DPAGE_SIZE=%zu "
             "-DSCALE_HEAD=%d%s%s", d, (int)type, o->page_size != 0, o->page_size,
             o->kv_scale_per_head != 0,
             dt == CLATTN_F16 ? " -DDTYPE_F16" : dt == CLATTN_BF16 ? " -DDTYPE_BF16" : "",
             /* x / 127 must give the host's scale, correctly rounded */
             ctx->dev.fp32_div_rounded ? " -cl-fp32-correctly-rounded-divide-sqrt" : "");
    cl_kernel kern;
    int rc = kernel_get(ctx, "api/kv_append.cl", options, "kv_append", &kern);
    if (rc < 0)
        return rc;
    struct kernel_args a = { kern, 0, CL_SUCCESS };
    arg_mem(&a, src);
    arg_mem(&a, cache);
    arg_mem(&a, t->lens);
    arg_mem(&a, t->table);
    arg_u32(&a, p->bt_stride);
    arg_u32(&a, o->num_pages);
    arg_layout(&a, v ? &p->v_new : &p->k_new);
    arg_layout(&a, v ? &p->v_cache : &p->k_cache);
    arg_u32(&a, s->kv_heads);
    arg_u32(&a, p->new_len);
    arg_u32(&a, s->kv_len);
    arg_mem(&a, t->scale[v]);
    arg_u64(&a, clattn_kv_block_values(type));
    arg_u64(&a, clattn_kv_block_bytes(type, dt));
    size_t global = s->batch * s->kv_heads * p->new_len;
    cl_int err = a.err;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, NULL, num_wait, wait,
                                     done);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "kv_append");
}

static int enqueue_lens(clattn_ctx *ctx, const clattn_shape *s, const struct kv_append_plan *p,
                        cl_mem lens, cl_event *done)
{
    cl_kernel kern;
    int rc = kernel_get(ctx, "api/kv_append.cl", "-DD=1 -DTYPE=0 -DPAGED=0 -DPAGE_SIZE=0 "
                        "-DSCALE_HEAD=0", "kv_append_lens", &kern);
    if (rc < 0)
        return rc;
    struct kernel_args a = { kern, 0, CL_SUCCESS };
    arg_mem(&a, lens);
    arg_u32(&a, p->new_len);
    arg_u32(&a, s->kv_len);
    size_t global = s->batch;
    cl_int err = a.err;
    if (err == CL_SUCCESS)
        err = clEnqueueNDRangeKernel(ctx->queue, kern, 1, NULL, &global, NULL, 0, NULL, done);
    clReleaseKernel(kern);
    return err == CL_SUCCESS ? CLATTN_OK : clattn_fail_cl(err, "kv_append_lens");
}

static int append(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                  size_t new_len, const clattn_layout *new_layout, const cl_mem m[4],
                  const clattn_extras *ex, int update_lens, cl_uint num_wait,
                  const cl_event *wait_list, cl_event *done)
{
    struct kv_append_plan p;
    int rc = kv_append_prepare(s, o, new_len, new_layout, 0, ex->kv_lens != NULL, &p);
    if (rc < 0)
        return rc;
    CLATTN_CHECK_ARG(num_wait == 0 || wait_list);
    if (update_lens && !ex->kv_lens)
        return clattn_fail(CLATTN_EINVAL, "update_lens needs the lengths in a device buffer "
                           "(extras->kv_lens)");
    static const char *const names[4] = { "new K", "new V", "K cache", "V cache" };
    struct extent e[5];
    for (int i = 0; i < 4; i++)
        if ((rc = prepare_check_buffer(ctx, m[i], names[i], p.spans[i])) < 0 ||
            (rc = buffer_extent(m[i], names[i], 0, p.spans[i], i >= 2, &e[i])) < 0)
            return rc;
    if ((rc = buffer_extent(ex->kv_lens, "kv_lens", 0, s->batch * 4, update_lens != 0,
                            &e[4])) < 0 ||
        (rc = extents_disjoint(e, 5)) < 0)
        return rc;
    struct append_tables t;
    if ((rc = tables_of(ctx, s, o, ex, &p, &t)) < 0) {
        tables_release(&t);
        return rc;
    }
    cl_event ev[3] = { NULL, NULL, NULL };
    rc = enqueue_rows(ctx, s, o, &p, &t, 0, m[0], m[2], num_wait, wait_list, &ev[0]);
    if (rc >= 0)
        rc = enqueue_rows(ctx, s, o, &p, &t, 1, m[1], m[3], 0, NULL, &ev[1]);
    if (rc >= 0 && update_lens)
        rc = enqueue_lens(ctx, s, &p, t.lens, &ev[2]);
    tables_release(&t);
    cl_event last = ev[2] ? ev[2] : ev[1];
    for (int i = 0; i < 3; i++)
        if (ev[i] && (ev[i] != last || !done || rc < 0))
            clReleaseEvent(ev[i]);
    if (rc >= 0 && done)
        *done = last;
    return rc;
}

int clattn_kv_append_cl(clattn_ctx *ctx, const clattn_shape *shape, const clattn_options *opts,
                        size_t new_len, const clattn_layout *new_layout, cl_mem k_new,
                        cl_mem v_new, cl_mem k_cache, cl_mem v_cache,
                        const clattn_extras *extras, int update_lens, cl_uint num_wait,
                        const cl_event *wait_list, cl_event *done)
{
    clattn_clear_error();
    clattn_options o;
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    int rc = options_resolve(opts, &o);
    if (rc < 0)
        return rc;
    if (extras && (rc = abi_read(extras, &ex, sizeof ex, ABI_SIZE_THROUGH(clattn_extras, lse),
                                 "extras", "CLATTN_EXTRAS_INIT")) < 0)
        return rc;
    if ((rc = ctx_enter(ctx)) < 0)
        return rc;
    const cl_mem m[4] = { k_new, v_new, k_cache, v_cache };
    rc = append(ctx, shape, &o, new_len, new_layout, m, &ex, update_lens, num_wait, wait_list,
                done);
    return ctx_leave_with(ctx, rc);
}
