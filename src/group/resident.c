/* SPDX-License-Identifier: MIT */
/* clattn_group_attention_cl: one call over a group's devices on tensors
 * already on them (clattn.h): a decoding step by the keys each device
 * holds, merged through host memory into device 0's output; a longer call
 * by query rows, each device writing its rows of its own output. */
#include <stdlib.h>
#include <string.h>

#include "clattn/clattn.h"
#include "core/error.h"
#include "core/options.h"
#include "device/cl_error.h"
#include "group/group.h"

/* Rows [first, ...) of a contiguous [B, heads, n, width] tensor. */
static clattn_layout rows_from(size_t heads, size_t n, size_t width, size_t first, size_t e)
{
    return (clattn_layout){ heads * n * width, n * width, width, first * width * e };
}

/* Device i's share on its own tensors, waited for. */
static int resident_share(const struct group_plan *p, size_t i, clattn_ctx *ctx,
                          const void *arg)
{
    const clattn_group_tensors *t = (const clattn_group_tensors *)arg + i;
    const struct group_share *sh = &p->share[i];
    const clattn_shape *s = &p->shape;
    clattn_options o = sh->opts;
    if (p->scheme == GROUP_QUERIES) { /* its rows of the whole Q and O */
        const size_t e = clattn_dtype_size(s->dtype);
        o.q_layout = rows_from(s->heads, s->q_len, s->head_dim, sh->begin, e);
        o.o_layout = rows_from(s->heads, s->q_len, p->dv, sh->begin, e);
    }
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = t->lse;
    cl_event done = NULL;
    int rc = clattn_attention_ex_cl(ctx, &sh->shape, &o, t->q, t->k, t->v, t->o, &ex, 0, NULL,
                                    &done, NULL);
    if (rc == CLATTN_OK && done) {
        const cl_int err = clWaitForEvents(1, &done);
        if (err != CL_SUCCESS)
            rc = clattn_fail_cl_wait(err, "clWaitForEvents (a device's share)");
    }
    if (done)
        clReleaseEvent(done);
    return rc;
}

/* The partials of a decoding step merged into device 0's o and lse: each
 * read back (B H rows of d_v values and their LSE), merged exactly. */
static int merge_keys(const clattn_group *g, const struct group_plan *p,
                      const clattn_group_tensors *t)
{
    const clattn_shape *s = &p->shape;
    const size_t rows = s->batch * s->heads * s->q_len, e = clattn_dtype_size(s->dtype);
    const size_t ob = rows * p->dv * e, lb = rows * sizeof(float);
    char *acc_o = malloc(ob), *o = malloc(ob);
    float *acc_l = malloc(lb), *l = malloc(lb);
    int rc = acc_o && o && acc_l && l ? CLATTN_OK : clattn_fail(CLATTN_ENOMEM, "the partials");
    int have = 0;
    for (size_t i = 0; i < p->n && rc == CLATTN_OK; i++) {
        if (p->share[i].empty)
            continue;
        cl_command_queue queue = clattn_cl_queue(g->ctx[i]);
        cl_int err = clEnqueueReadBuffer(queue, t[i].o, CL_TRUE, 0, ob, have ? o : acc_o, 0,
                                         NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueReadBuffer(queue, t[i].lse, CL_TRUE, 0, lb, have ? l : acc_l, 0,
                                      NULL, NULL);
        if (err != CL_SUCCESS)
            rc = clattn_fail_cl_wait(err, "reading a device's partial O and LSE");
        else if (have)
            rc = clattn_merge(rows, p->dv, s->dtype, acc_o, acc_l, o, l, acc_o, acc_l);
        have = 1;
    }
    if (rc == CLATTN_OK) {
        cl_command_queue queue = clattn_cl_queue(g->ctx[0]);
        cl_int err = clEnqueueWriteBuffer(queue, t[0].o, CL_TRUE, 0, ob, acc_o, 0, NULL, NULL);
        if (err == CL_SUCCESS)
            err = clEnqueueWriteBuffer(queue, t[0].lse, CL_TRUE, 0, lb, acc_l, 0, NULL, NULL);
        if (err != CL_SUCCESS)
            rc = clattn_fail_cl_wait(err, "writing the merged O and LSE to device 0");
    }
    free(acc_o), free(o), free(acc_l), free(l);
    return rc;
}

static int layouts_given(const clattn_options *o)
{
    const clattn_layout *l[4] = { &o->q_layout, &o->k_layout, &o->v_layout, &o->o_layout };
    for (int i = 0; i < 4; i++)
        if (l[i]->batch_stride || l[i]->head_stride || l[i]->token_stride || l[i]->byte_offset)
            return 1;
    return 0;
}

/* The buffers each device must give. */
static int check_tensors(const clattn_group *g, const clattn_shape *s,
                         const clattn_group_tensors *t, size_t *keys)
{
    size_t sum = 0;
    for (size_t i = 0; i < g->n; i++) {
        const int by_keys = s->q_len == 1, holds = !by_keys || t[i].keys > 0;
        if (!t[i].q || !t[i].o || (holds && (!t[i].k || !t[i].v)) || (by_keys && !t[i].lse))
            return clattn_fail(CLATTN_EINVAL, "clattn_group_attention_cl: device %zu's q, o%s "
                               "are required", i, by_keys ? ", lse (and k, v where it holds "
                               "keys)" : ", k, v");
        keys[i] = t[i].keys;
        sum += t[i].keys;
    }
    if (s->q_len == 1 && sum != s->kv_len)
        return clattn_fail(CLATTN_EINVAL, "clattn_group_attention_cl: the devices hold %zu "
                           "keys in all, the shape %zu", sum, s->kv_len);
    return CLATTN_OK;
}

int clattn_group_attention_cl(clattn_group *g, const clattn_shape *shape,
                              const clattn_options *opts, const clattn_group_tensors *tensors,
                              clattn_group_info *info)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(g && g->n > 0 && shape && opts && tensors);
    clattn_options ro;
    int rc = options_resolve(opts, &ro);
    if (rc < 0 || (rc = clattn_shape_check(shape)) < 0)
        return rc;
    if (layouts_given(&ro))
        return clattn_fail(CLATTN_EINVAL, "clattn_group_attention_cl: the devices' tensors "
                           "are contiguous (the options give a layout)");
    size_t keys[CLATTN_GROUP_MAX];
    if ((rc = check_tensors(g, shape, tensors, keys)) < 0)
        return rc;
    double w[CLATTN_GROUP_MAX];
    uint64_t cap[CLATTN_GROUP_MAX];
    struct group_devices devices;
    group_devices_of(g, shape, w, cap, &devices);
    if (shape->q_len == 1)
        devices.keys = keys;
    struct group_plan plan;
    if ((rc = group_plan_make(shape, &ro, &devices, NULL, NULL, NULL, &plan)) < 0)
        return rc;
    if (plan.scheme == GROUP_RING) {
        rc = clattn_fail(CLATTN_EUNSUPPORTED, "clattn_group_attention_cl: the devices' "
                         "tensors are split by keys (a decoding step) or query rows, not by "
                         "the ring");
    } else if (plan.scheme == GROUP_ONE && shape->q_len == 1 && keys[0] != shape->kv_len) {
        rc = clattn_fail(CLATTN_EUNSUPPORTED, "clattn_group_attention_cl: the call is not "
                         "split (%s), and no one device holds all its keys", plan.why);
    } else if (plan.scheme == GROUP_ONE) {
        /* Device 0's tensors are the call's whole ones. */
        clattn_extras ex = CLATTN_EXTRAS_INIT;
        ex.lse = tensors[0].lse;
        cl_event done = NULL;
        rc = clattn_attention_ex_cl(g->ctx[0], shape, opts, tensors[0].q, tensors[0].k,
                                    tensors[0].v, tensors[0].o, &ex, 0, NULL, &done, NULL);
        if (rc == CLATTN_OK && done) {
            const cl_int err = clWaitForEvents(1, &done);
            if (err != CL_SUCCESS)
                rc = clattn_fail_cl_wait(err, "clWaitForEvents (device 0's call)");
        }
        if (done)
            clReleaseEvent(done);
    } else if ((rc = group_run_shares(g, &plan, resident_share, tensors)) == CLATTN_OK &&
               plan.scheme == GROUP_KEYS) {
        rc = merge_keys(g, &plan, tensors);
    }
    if (info)
        group_plan_info(&plan, info);
    group_plan_free(&plan);
    return rc;
}
