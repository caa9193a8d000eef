/* SPDX-License-Identifier: MIT */
/*
 * clattn bench over several devices (--device 0,1: clattn_group_attention)
 * or the ranks of an mpirun launch (libclattn_mpi): each case's fused call
 * run whole on the first device (rank 0's) and spread, both from host
 * arrays and timed on the host clock (the median of calls), both checked
 * against the CPU reference on sampled rows of a poisoned output, beside
 * the speedup the model predicts (clattn_model_predict_spread with the
 * first device's ceilings and, over ranks, the measured bandwidth between
 * ranks 0 and 1).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "ceilings_auto.h"
#include "cli.h"
#include "json.h"
#include "outfile.h"
#include "ranks.h"

/* Where the spread call runs: a group of this process's devices, or the
 * ranks (each with its own context; rank 0's is `ctx`). */
struct target {
    const cli_ranks *ranks;
    cli_ranks_scheme scheme; /* over ranks: --spread */
    clattn_group *group; /* NULL over ranks */
    clattn_ctx *ctx;     /* the first device: the whole call's */
    size_t devices;
    double peer_bw;      /* between ranks, measured; 0 in a group */
};

struct spread_row {
    clattn_shape shape;
    clattn_causal causal;
    char scheme[16];
    double one_s, spread_s;           /* medians per call; 0: did not run */
    double model_one_s, model_spread_s; /* the model's; 0: n/a */
    double one_err, spread_err;       /* rel_l2 against the reference's sampled rows */
    int one_ok, spread_ok;
    char detail[200];                 /* a failure */
};

/* ------------------------------------------------------------------ check */

/* Output rows checked against the reference: the first, middle and last
 * 8 rows of up to 4 (batch, head) pairs. rel_l2 over them, or INFINITY
 * where an element is NaN (a row left poisoned). */
static double sampled_error(const clattn_shape *s, const clattn_options *o, const void *q,
                            const void *k, const void *v, const void *out)
{
    const size_t dv = o->head_dim_v ? o->head_dim_v : s->head_dim;
    const size_t e = clattn_dtype_size(s->dtype), take = s->q_len < 8 ? s->q_len : 8;
    double *ref = malloc(take * dv * sizeof *ref);
    if (!ref)
        return INFINITY;
    double worst = 0;
    const size_t pairs = s->batch * s->heads, step = pairs > 4 ? pairs / 4 : 1;
    for (size_t bh = 0; bh < pairs && worst < INFINITY; bh += step)
        for (int part = 0; part < 3 && worst < INFINITY; part++) {
            const size_t first = part == 0 ? 0 : part == 1 ? (s->q_len - take) / 2
                                                           : s->q_len - take;
            const size_t b = bh / s->heads, h = bh % s->heads;
            if (clattn_reference_rows(s, o, q, k, v, b, h, first, take, ref, NULL) < 0) {
                worst = INFINITY;
                break;
            }
            clattn_shape rows = { 1, 1, 1, take, 1, dv, s->dtype };
            double max_abs, rel;
            size_t nan = 0;
            const char *at = (const char *)out + ((bh * s->q_len + first) * dv) * e;
            if (clattn_compare(&rows, at, ref, &max_abs, &rel, &nan) < 0 || nan)
                rel = INFINITY;
            worst = rel > worst ? rel : worst;
        }
    free(ref);
    return worst;
}

/* ----------------------------------------------------------------- timing */

/* Runs fn until `target` seconds of calls have passed on rank 0 (3 to 50
 * calls; rank 0 decides for all) after one untimed call; the median. */
typedef int (*call_fn)(void *arg, double *seconds);

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int time_calls(const cli_ranks *ranks, call_fn fn, void *arg, double target,
                      double *median)
{
    double t[50], spent = 0, s;
    int rc = fn(arg, &s), n = 0;
    while (rc == CLATTN_OK && cli_ranks_bcast(ranks, n < 3 || (spent < target && n < 50))) {
        if ((rc = fn(arg, &s)) == CLATTN_OK)
            t[n++] = s, spent += s;
    }
    if (rc == CLATTN_OK) {
        qsort(t, (size_t)n, sizeof *t, cmp_double);
        *median = t[n / 2];
    }
    return rc;
}

/* One call's arrays. */
struct call {
    const struct target *tg;
    const clattn_shape *s;
    const clattn_options *o;
    const void *q, *k, *v;
    void *out;
    cli_ranks_share *share; /* over ranks */
    char *scheme;
};

static int call_one(void *arg, double *seconds)
{
    struct call *c = arg;
    const double t0 = cli_now();
    const int rc = clattn_attention_ex(c->tg->ctx, c->s, c->o, c->q, c->k, c->v, c->out, NULL,
                                       NULL);
    *seconds = cli_now() - t0;
    return rc;
}

static int call_spread(void *arg, double *seconds)
{
    struct call *c = arg;
    if (c->tg->group) {
        clattn_group_info gi;
        const double t0 = cli_now();
        const int rc = clattn_group_attention(c->tg->group, c->s, c->o, c->q, c->k, c->v, c->out,
                                              NULL, &gi);
        *seconds = cli_now() - t0;
        snprintf(c->scheme, 16, "%s", gi.scheme);
        return rc;
    }
    return cli_ranks_share_run(c->tg->ranks, c->tg->ctx, c->share, c->scheme, 16, seconds);
}

/* ------------------------------------------------------------------ model */

static clattn_spread spread_of(const char *scheme)
{
    return !strcmp(scheme, "keys") ? CLATTN_SPREAD_KEYS
           : !strcmp(scheme, "queries") || !strcmp(scheme, "allgather") ? CLATTN_SPREAD_QUERIES
           : !strcmp(scheme, "ring") ? CLATTN_SPREAD_RING : CLATTN_SPREAD_ONE;
}

static void predict(const struct target *tg, const clattn_model_device *dev,
                    const clattn_options *o, struct spread_row *r)
{
    clattn_model_problem p;
    clattn_model_default_problem(&p);
    p.shape = r->shape;
    p.causal = r->causal;
    p.kv_lens = o->kv_lens;
    const clattn_model_link link = { 0, tg->peer_bw, 0 };
    clattn_spread_prediction sp;
    if (clattn_model_predict_spread(&p, dev, tg->devices, &link, &sp) < 0) {
        clattn_set_error(CLATTN_OK, NULL);
        return;
    }
    const clattn_spread used = spread_of(r->scheme);
    r->model_one_s = sp.spread[CLATTN_SPREAD_ONE].time_s;
    r->model_spread_s = sp.spread[used].time_s;
    if (used == CLATTN_SPREAD_QUERIES && !tg->group && tg->peer_bw > 0) {
        /* The all-gather's transfer comes before any compute. */
        const double kv = 2.0 * (double)(r->shape.batch * r->shape.kv_heads * r->shape.kv_len *
                                         r->shape.head_dim * clattn_dtype_size(r->shape.dtype));
        r->model_spread_s += kv * (double)(tg->devices - 1) / (double)tg->devices / tg->peer_bw;
    }
}

/* -------------------------------------------------------------------- row */

static void poison(void *out, size_t bytes)
{
    memset(out, 0xff, bytes); /* NaN in fp32, fp16 and bf16 */
}

/* One case under one mask: the whole call on the first device, then
 * spread; checked, timed, predicted. Collective over ranks. */
static void run_row(const struct target *tg, const bench_config *cfg,
                    const clattn_model_device *dev, const void *q, const void *k, const void *v,
                    struct spread_row *r)
{
    const int lead = tg->ranks->rank == 0;
    clattn_options o = cfg->opts;
    o.causal = r->causal;
    o.path = CLATTN_PATH_FUSED;
    const clattn_shape *s = &r->shape;
    const size_t dv = o.head_dim_v ? o.head_dim_v : s->head_dim;
    const size_t out_bytes = s->batch * s->heads * s->q_len * dv * clattn_dtype_size(s->dtype);
    void *out = malloc(out_bytes + 1);
    cli_ranks_share share;
    memset(&share, 0, sizeof share);
    struct call c = { tg, s, &o, q, k, v, out, &share, r->scheme };
    int rc = out ? CLATTN_OK : clattn_set_error(CLATTN_ENOMEM, "the row's output");
    if (rc == CLATTN_OK && !tg->group)
        rc = cli_ranks_share_make(tg->ranks, s, &o, tg->scheme, q, k, v, &share);
    if (cli_ranks_status(tg->ranks, rc < 0)) {
        snprintf(r->detail, sizeof r->detail, "%s", rc < 0 ? clattn_last_error_detail()
                                                          : "another rank failed");
        goto done;
    }
    /* The whole call on the first device (rank 0's; the others wait). */
    if (lead) {
        poison(out, out_bytes);
        double unused;
        rc = call_one(&c, &unused);
        if (rc == CLATTN_OK) {
            r->one_err = sampled_error(s, &o, q, k, v, out);
            rc = time_calls(&(cli_ranks){ 0, 1, 0 }, call_one, &c, cfg->target_seconds,
                            &r->one_s);
        }
        if (rc < 0)
            snprintf(r->detail, sizeof r->detail, "one device: %s", clattn_last_error_detail());
    }
    if (cli_ranks_status(tg->ranks, rc < 0))
        goto done;
    poison(out, out_bytes);
    double unused;
    rc = call_spread(&c, &unused);
    if (rc == CLATTN_OK && !tg->group)
        rc = cli_ranks_share_gather(tg->ranks, &share, out, NULL);
    if (rc == CLATTN_OK && lead)
        r->spread_err = sampled_error(s, &o, q, k, v, out);
    if (rc == CLATTN_OK)
        rc = time_calls(tg->ranks, call_spread, &c, cfg->target_seconds, &r->spread_s);
    if (rc < 0)
        snprintf(r->detail, sizeof r->detail, "spread: %s", clattn_last_error_detail());
    double tol_abs, tol_rel;
    clattn_tolerance(s->dtype, &tol_abs, &tol_rel);
    r->one_ok = r->one_s > 0 && r->one_err <= tol_rel;
    r->spread_ok = r->spread_s > 0 && r->spread_err <= tol_rel;
    predict(tg, dev, &o, r);
done:
    cli_ranks_share_free(&share);
    free(out);
}

/* ----------------------------------------------------------------- report */

static int row_failed(const struct spread_row *r)
{
    return r->detail[0] || !r->one_ok || !r->spread_ok;
}

static void fmt_ms(double s, char *buf, size_t cap)
{
    if (s > 0)
        snprintf(buf, cap, "%.4g", 1e3 * s);
    else
        snprintf(buf, cap, "-");
}

static void print_table(FILE *f, const struct spread_row *rows, size_t n)
{
    fprintf(f, "\n| B | Nq | Nk | mask | spread | one ms | spread ms | speedup | model | "
               "check (rel_l2 one / spread) |\n|---|---|---|---|---|---|---|---|---|---|\n");
    for (size_t i = 0; i < n; i++) {
        const struct spread_row *r = &rows[i];
        char one[32], spread[32], speed[32] = "-", model[32] = "n/a";
        fmt_ms(r->one_s, one, sizeof one);
        fmt_ms(r->spread_s, spread, sizeof spread);
        if (r->one_s > 0 && r->spread_s > 0)
            snprintf(speed, sizeof speed, "%.2f", r->one_s / r->spread_s);
        if (r->model_one_s > 0 && r->model_spread_s > 0)
            snprintf(model, sizeof model, "%.2f", r->model_one_s / r->model_spread_s);
        fprintf(f, "| %zu | %zu | %zu | %s | %s | %s | %s | %s | %s | ", r->shape.batch,
                r->shape.q_len, r->shape.kv_len, cli_causal_name(r->causal),
                r->scheme[0] ? r->scheme : "-", one, spread, speed, model);
        if (r->detail[0])
            fprintf(f, "ERROR %s |\n", r->detail);
        else
            fprintf(f, "%.1e / %.1e %s |\n", r->one_err, r->spread_err,
                    r->one_ok && r->spread_ok ? "ok" : "FAIL");
    }
}

struct report {
    const struct target *tg;
    const bench_config *cfg;
    const struct spread_row *rows;
    size_t n;
};

static int write_json(FILE *f, const char *path, const void *user, char *err, size_t cap)
{
    (void)path, (void)err, (void)cap;
    const struct report *rep = user;
    struct json js, *j = &js;
    json_begin_document(j, f, "bench");
    json_str(j, "device", clattn_device_name(rep->tg->ctx));
    json_str(j, "over", rep->tg->group ? "devices" : "ranks");
    json_u64(j, "devices", rep->tg->devices);
    json_num(j, "peer_bytes_per_s", rep->tg->peer_bw, 1);
    json_num(j, "reps_seconds", rep->cfg->target_seconds, 0);
    json_open(j, "rows", '[');
    for (size_t i = 0; i < rep->n; i++) {
        const struct spread_row *r = &rep->rows[i];
        json_open(j, NULL, '{');
        json_shape_fields(j, &r->shape);
        json_str(j, "dtype", cli_dtype_name(r->shape.dtype));
        json_str(j, "causal", cli_causal_name(r->causal));
        json_str(j, "scheme", r->scheme);
        json_num(j, "one_s", r->one_s, 1);
        json_num(j, "spread_s", r->spread_s, 1);
        json_num(j, "model_one_s", r->model_one_s, 1);
        json_num(j, "model_spread_s", r->model_spread_s, 1);
        json_num(j, "one_rel_l2", r->one_err, 0);
        json_num(j, "spread_rel_l2", r->spread_err, 0);
        json_bool(j, "ok", !row_failed(r));
        json_str(j, "error", r->detail);
        json_close(j, '}');
    }
    json_close(j, ']');
    json_end_document(j);
    return 0;
}

/* ------------------------------------------------------------------ entry */

static const clattn_causal masks[] = { CLATTN_CAUSAL_NONE, CLATTN_CAUSAL_TOP_LEFT,
                                       CLATTN_CAUSAL_BOTTOM_RIGHT };

static int open_target(const bench_args *a, const cli_ranks *ranks, struct target *tg)
{
    memset(tg, 0, sizeof *tg);
    tg->ranks = ranks;
    int rc;
    if (ranks->ranks > 1) {
        char sel[128];
        rc = cli_ranks_scheme_of(a->spread, &tg->scheme)
                 ? clattn_set_error(CLATTN_EINVAL, "--spread under mpirun: auto, keys, "
                                    "allgather or ring")
                 : clattn_open(&tg->ctx, cli_ranks_selector(ranks, a->call.device, sel,
                                                            sizeof sel));
        tg->devices = (size_t)ranks->ranks;
    } else {
        rc = clattn_group_open(&tg->group, a->call.device);
        tg->ctx = rc == CLATTN_OK ? clattn_group_context(tg->group, 0) : NULL;
        tg->devices = clattn_group_size(tg->group);
        if (rc == CLATTN_OK)
            rc = clattn_group_set_scheme(tg->group, a->spread);
    }
    if (rc < 0)
        cli_lib_error("bench: cannot open the devices", rc);
    if (cli_ranks_status(ranks, rc < 0))
        return 1;
    tg->peer_bw = cli_ranks_peer_bandwidth(ranks);
    return 0;
}

static void close_target(struct target *tg)
{
    if (tg->group)
        clattn_group_close(&tg->group);
    else
        clattn_close(&tg->ctx);
}

int bench_spread(const bench_args *a, const cli_ranks *ranks)
{
    if (a->call.csv) {
        cli_error("bench: --csv is one device's table: over several devices or ranks, --json");
        return CLI_EXIT_USAGE;
    }
    const int lead = ranks->rank == 0;
    struct target tg;
    if (open_target(a, ranks, &tg))
        return 1;
    bench_config *cfg = malloc(sizeof *cfg);
    clattn_ceilings ceil;
    char note[1024] = "";
    cl_device_type type = 0;
    clGetDeviceInfo(clattn_cl_device(tg.ctx), CL_DEVICE_TYPE, sizeof type, &type, NULL);
    int status = !cfg || ceilings_measure_missing(tg.ctx, &ceil, note, sizeof note) < 0 ||
                 bench_resolve_config(a, (type & CL_DEVICE_TYPE_GPU) != 0, cfg);
    status = cli_ranks_status(ranks, status);
    struct spread_row *rows = status ? NULL : calloc(3 * cfg->n_cases + 1, sizeof *rows);
    size_t n = 0;
    if (!status && rows) {
        clattn_model_device dev;
        clattn_model_device_from_ceilings(&ceil, cfg->dtype, &dev);
        if (lead) {
            printf("clattn bench over %zu %s (the first: %s)\n", tg.devices,
                   tg.group ? "devices" : "ranks", clattn_device_name(tg.ctx));
            if (note[0])
                printf("%s\n", note);
            if (tg.peer_bw > 0)
                printf("between ranks 0 and 1: %.2f GB/s measured (16 MiB each way)\n",
                       tg.peer_bw / 1e9);
            printf("each call from host arrays, host clock, median of %.2f s of calls; the "
                   "model counts no host transfers\n", cfg->target_seconds);
            fflush(stdout);
        }
        for (size_t i = 0; i < cfg->n_cases; i++) {
            const clattn_shape *s = &cfg->cases[i].shape;
            const size_t dv = cfg->opts.head_dim_v ? cfg->opts.head_dim_v : s->head_dim;
            const size_t nq = clattn_shape_q_elems(s), nk = clattn_shape_kv_elems(s);
            const size_t e = clattn_dtype_size(s->dtype);
            void *q = malloc(nq * e), *k = malloc(nk * e), *v = malloc(nk / s->head_dim * dv * e);
            int rc = q && k && v ? CLATTN_OK : clattn_set_error(CLATTN_ENOMEM, "a case's inputs");
            if (rc == CLATTN_OK) {
                clattn_random_fill(q, nq, s->dtype, 11 + i);
                clattn_random_fill(k, nk, s->dtype, 23 + i);
                clattn_random_fill(v, nk / s->head_dim * dv, s->dtype, 37 + i);
            }
            for (int m = 0; m < 3; m++) {
                if (!(cfg->cases[i].masks & CLI_MASK(masks[m])))
                    continue;
                struct spread_row *r = &rows[n++];
                r->shape = *s;
                r->causal = masks[m];
                if (lead)
                    fprintf(stderr, "[%zu] B=%zu Nq=%zu Nk=%zu %s\n", n, s->batch, s->q_len,
                            s->kv_len, cli_causal_name(masks[m]));
                if (cli_ranks_status(ranks, rc < 0))
                    snprintf(r->detail, sizeof r->detail, "inputs: out of memory");
                else
                    run_row(&tg, cfg, &dev, q, k, v, r);
            }
            free(q), free(k), free(v);
        }
        size_t bad = 0;
        for (size_t i = 0; lead && i < n; i++) /* rank 0 holds the checks */
            bad += row_failed(&rows[i]);
        if (lead) {
            print_table(stdout, rows, n);
            const struct report rep = { &tg, cfg, rows, n };
            cli_file out[1] = { { "--json", a->call.json, write_json, &rep } };
            status = a->call.json && cli_write_outputs(out, 1);
            if (bad)
                printf("\n%zu of %zu rows failed or could not run\n", bad, n);
        }
        status = cli_ranks_status(ranks, status || bad);
    }
    free(rows);
    free(cfg);
    close_target(&tg);
    return status ? 1 : 0;
}
