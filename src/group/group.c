/* SPDX-License-Identifier: MIT */
/* One attention call over several devices (clattn_group_*): the split, the
 * per-device calls in threads of their own, and the exact merge. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "core/error.h"
#include "core/extent.h"
#include "core/options.h"
#include "group/group.h"

int clattn_group_open(clattn_group **out, const char *selectors)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(out);
    *out = NULL;
    CLATTN_CHECK_ARG(selectors && selectors[0]);
    clattn_group *g = calloc(1, sizeof *g);
    if (!g)
        return clattn_fail(CLATTN_ENOMEM, "a device group");
    const char *p = selectors;
    int rc = CLATTN_OK;
    while (rc == CLATTN_OK && *p) {
        const size_t len = strcspn(p, ",");
        char sel[128];
        if (len == 0 || len >= sizeof sel)
            rc = clattn_fail(CLATTN_EINVAL, "device group \"%s\": an empty or overlong selector",
                             selectors);
        else if (g->n == CLATTN_GROUP_MAX)
            rc = clattn_fail(CLATTN_EINVAL, "device group \"%s\": more than %d devices",
                             selectors, CLATTN_GROUP_MAX);
        if (rc < 0)
            break;
        memcpy(sel, p, len);
        sel[len] = '\0';
        rc = clattn_open(&g->ctx[g->n], sel);
        if (rc == CLATTN_OK)
            g->n++;
        p += len + (p[len] == ',');
    }
    if (rc < 0) {
        clattn_group_close(&g);
        return rc;
    }
    *out = g;
    return CLATTN_OK;
}

void clattn_group_close(clattn_group **g)
{
    if (!g || !*g)
        return;
    for (size_t i = 0; i < (*g)->n; i++)
        clattn_close(&(*g)->ctx[i]);
    free(*g);
    *g = NULL;
}

size_t clattn_group_size(const clattn_group *g)
{
    return g ? g->n : 0;
}

clattn_ctx *clattn_group_context(const clattn_group *g, size_t i)
{
    return g && i < g->n ? g->ctx[i] : NULL;
}

int clattn_group_set_weights(clattn_group *g, const double *weights)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(g);
    for (size_t i = 0; weights && i < g->n; i++)
        if (!(weights[i] > 0 && weights[i] < 1e300))
            return clattn_fail(CLATTN_EINVAL, "weight %zu of the group is %g: each must be "
                               "finite and above 0", i, weights[i]);
    for (size_t i = 0; i < g->n; i++)
        g->weight[i] = weights ? weights[i] : 0;
    return CLATTN_OK;
}

int clattn_group_set_scheme(clattn_group *g, const char *scheme)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(g);
    static const enum group_scheme all[] = { GROUP_AUTO, GROUP_ONE, GROUP_KEYS, GROUP_QUERIES,
                                             GROUP_RING };
    for (size_t i = 0; i < sizeof all / sizeof *all; i++)
        if (!scheme || !strcmp(scheme, group_scheme_name(all[i]))) {
            g->scheme = scheme ? all[i] : GROUP_AUTO;
            return CLATTN_OK;
        }
    return clattn_fail(CLATTN_EINVAL, "group scheme \"%.40s\": auto, one, keys, queries or "
                       "ring", scheme);
}

/* Each device's memory (0 where unknown). */
static void capacities_of(const clattn_group *g, uint64_t *cap)
{
    for (size_t i = 0; i < g->n; i++) {
        clattn_ceilings c;
        cap[i] = clattn_device_ceilings(g->ctx[i], &c) == CLATTN_OK
                     ? (uint64_t)c.global_mem_bytes.value : 0;
    }
    clattn_clear_error();
}

/* The shares' weights for `s`: the caller's, else each device's rate for
 * what bounds the call (read bandwidth for a decoding step, the dtype's
 * FLOP rate otherwise), else equal. */
static void weights_of(const clattn_group *g, const clattn_shape *s, double *w)
{
    int known = 1;
    for (size_t i = 0; i < g->n; i++) {
        if (g->weight[i] > 0) {
            w[i] = g->weight[i];
            continue;
        }
        clattn_ceilings c;
        const clattn_figure *f = s->q_len == 1 ? &c.bandwidth
                                 : s->dtype == CLATTN_F32 ? &c.flops_f32 : &c.flops_f16;
        known = known && clattn_device_ceilings(g->ctx[i], &c) == CLATTN_OK &&
                f->source != CLATTN_SRC_NONE && f->value > 0;
        w[i] = known ? f->value : 1;
    }
    for (size_t i = 0; !known && i < g->n; i++)
        w[i] = 1;
    clattn_clear_error();
}

void group_devices_of(const clattn_group *g, const clattn_shape *s, double *w, uint64_t *cap,
                      struct group_devices *out)
{
    weights_of(g, s, w);
    capacities_of(g, cap);
    *out = (struct group_devices){ g->n, w, cap, g->scheme, NULL };
}

/* One device's share, run in a thread of its own. */
struct share_run {
    clattn_ctx *ctx;
    const struct group_plan *plan;
    size_t index;
    group_share_fn fn;
    const void *arg;
    int rc;
    char detail[256];
};

static void *run_share(void *arg)
{
    struct share_run *r = arg;
    r->rc = r->fn(r->plan, r->index, r->ctx, r->arg);
    if (r->rc < 0) /* errors are per thread: keep this one's for the caller */
        snprintf(r->detail, sizeof r->detail, "%s", clattn_last_error_detail());
    return NULL;
}

int group_run_shares(const clattn_group *g, const struct group_plan *p, group_share_fn fn,
                     const void *arg)
{
    struct share_run runs[CLATTN_GROUP_MAX];
    pthread_t threads[CLATTN_GROUP_MAX];
    int started[CLATTN_GROUP_MAX] = { 0 };
    for (size_t i = 0; i < p->n; i++) {
        runs[i] = (struct share_run){ g->ctx[i], p, i, fn, arg, CLATTN_OK, "" };
        if (p->share[i].empty)
            continue;
        started[i] = pthread_create(&threads[i], NULL, run_share, &runs[i]) == 0;
        if (!started[i])
            run_share(&runs[i]); /* no thread: in this one, in turn */
    }
    for (size_t i = 0; i < p->n; i++)
        if (started[i])
            pthread_join(threads[i], NULL);
    for (size_t i = 0; i < p->n; i++)
        if (runs[i].rc < 0)
            return clattn_fail(runs[i].rc, "device %zu of the group (%s): %s", i,
                               clattn_device_name(g->ctx[i]), runs[i].detail);
    return CLATTN_OK;
}

/* A host-array share: its one call, or the ring's. */
static int host_share(const struct group_plan *p, size_t i, clattn_ctx *ctx, const void *arg)
{
    (void)arg;
    return group_share_run(p, i, ctx);
}

/* The output and LSE must not share memory with the inputs or each other. */
static int outputs_apart(const clattn_shape *s, size_t dv, const void *q, const void *k,
                         const void *v, const void *o, const float *lse)
{
    const size_t e = clattn_dtype_size(s->dtype);
    const uint64_t kv = clattn_shape_kv_elems(s);
    const struct extent x[5] = {
        extent_host("q", q, 0, clattn_shape_q_elems(s) * e, 0),
        extent_host("k", k, 0, kv * e, 0),
        extent_host("v", v, 0, kv / s->head_dim * dv * e, 0),
        extent_host("o", o, 0, clattn_shape_q_elems(s) / s->head_dim * dv * e, 1),
        extent_host("lse", lse, 0, (uint64_t)s->batch * s->heads * s->q_len * 4, 1),
    };
    return extents_disjoint(x, 5);
}

int clattn_group_attention(clattn_group *g, const clattn_shape *shape,
                           const clattn_options *opts, const void *q, const void *k,
                           const void *v, void *o, float *lse, clattn_group_info *info)
{
    clattn_clear_error();
    CLATTN_CHECK_ARG(g && g->n > 0 && shape && opts && q && k && v && o);
    clattn_options ro;
    int rc = options_resolve(opts, &ro);
    if (rc < 0 || (rc = clattn_shape_check(shape)) < 0)
        return rc;
    const size_t dv = ro.head_dim_v ? ro.head_dim_v : shape->head_dim;
    if ((rc = outputs_apart(shape, dv, q, k, v, o, lse)) < 0)
        return rc;
    struct group_plan plan;
    double w[CLATTN_GROUP_MAX];
    uint64_t cap[CLATTN_GROUP_MAX];
    struct group_devices devices;
    group_devices_of(g, shape, w, cap, &devices);
    rc = group_plan_make(shape, &ro, &devices, q, k, v, &plan);
    if (rc < 0)
        return rc;
    if (plan.scheme == GROUP_ONE) /* the caller's call itself, on the first device */
        rc = clattn_attention_ex(g->ctx[0], shape, opts, q, k, v, o, lse, NULL);
    else if ((rc = group_run_shares(g, &plan, host_share, NULL)) == CLATTN_OK)
        rc = group_plan_gather(&plan, o, lse);
    if (info)
        group_plan_info(&plan, info);
    group_plan_free(&plan);
    return rc;
}
