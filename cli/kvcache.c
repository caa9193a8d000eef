/* SPDX-License-Identifier: MIT */
/* The command line's KV cache forms as the library takes them (see
 * kvcache.h). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "kvcache.h"

int cli_cache_any(const cli_cache *c)
{
    return c->k_type != CLATTN_KV_DTYPE || c->v_type != CLATTN_KV_DTYPE || c->page_size ||
           c->packed;
}

void cli_cache_free(cli_cache_data *d)
{
    free(d->k), free(d->v), free(d->dq), free(d->dk), free(d->dv);
    free(d->block_table), free(d->cu_q), free(d->cu_k), free(d->q_lens);
    memset(d, 0, sizeof *d);
}

/* n random values of dtype into host memory: drawn on the device
 * (clattn_random_fill_cl) and read back, which at a large cache's billion
 * values takes a fraction of a second where the host's draw takes seconds. */
static int draw(clattn_ctx *ctx, void *host, size_t n, clattn_dtype dtype, uint32_t seed)
{
    cl_int err;
    const size_t bytes = n * clattn_dtype_size(dtype);
    cl_mem buf = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE, bytes, NULL, &err);
    if (err != CL_SUCCESS)
        return CLATTN_EOOM;
    int rc = clattn_random_fill_cl(ctx, buf, n, dtype, seed);
    if (rc == CLATTN_OK && clEnqueueReadBuffer(clattn_cl_queue(ctx), buf, CL_TRUE, 0, bytes, host,
                                               0, NULL, NULL) != CL_SUCCESS)
        rc = CLATTN_ECL;
    clReleaseMemObject(buf);
    return rc;
}

int cli_cache_upload(clattn_ctx *ctx, const cli_cache *c, const clattn_shape *s, size_t dv,
                     uint64_t seed, cli_cache_data *d, clattn_options *dev, cl_mem b[4])
{
    const size_t es = clattn_dtype_size(s->dtype);
    const size_t n[3] = { clattn_shape_q_elems(s), clattn_shape_kv_elems(s),
                          clattn_shape_kv_elems(s) / s->head_dim * dv };
    void *host[3] = { malloc(n[0] * es), malloc(n[1] * es), malloc(n[2] * es) };
    clattn_options ref = *dev;
    int rc = host[0] && host[1] && host[2] ? CLATTN_OK : CLATTN_ENOMEM;
    for (int i = 0; i < 3 && rc == CLATTN_OK; i++)
        rc = draw(ctx, host[i], n[i], s->dtype, (uint32_t)(seed + (uint64_t)i));
    if (rc == CLATTN_OK)
        rc = cli_cache_make(c, s, dv, host[0], host[1], host[2], dev->kv_lens, dev->q_lens, d,
                            &ref, dev);
    const void *up[4] = { d->dq ? d->dq : host[0], d->dk ? d->dk : d->k ? d->k : host[1],
                          d->dv ? d->dv : d->v ? d->v : host[2], NULL };
    const size_t bytes[4] = { d->q_bytes, d->kd_bytes, d->vd_bytes, d->o_bytes };
    for (int i = 0; i < 4; i++)
        b[i] = NULL;
    for (int i = 0; i < 4 && rc == CLATTN_OK; i++) {
        cl_int err;
        b[i] = clCreateBuffer(clattn_cl_context(ctx),
                              CL_MEM_READ_WRITE | (up[i] ? CL_MEM_COPY_HOST_PTR : 0), bytes[i],
                              (void *)up[i], &err);
        if (err != CL_SUCCESS) {
            b[i] = NULL;
            rc = CLATTN_EOOM;
        }
    }
    for (int i = 0; i < 3; i++)
        free(host[i]);
    return rc;
}

/* Bytes of one row of `cols` values of `type`. */
static size_t row_bytes(clattn_kv_type type, clattn_dtype dtype, size_t cols)
{
    const size_t per = clattn_kv_block_values(type);
    return per ? cols / per * clattn_kv_block_bytes(type, dtype) : 0;
}

static double value_at(const void *x, size_t i, clattn_dtype dtype)
{
    const uint16_t h = ((const uint16_t *)x)[i];
    return dtype == CLATTN_F32   ? ((const float *)x)[i]
           : dtype == CLATTN_F16 ? clattn_f16_to_f32(h)
                                 : clattn_bf16_to_f32(h);
}

/* fp8's per-tensor scale: the largest magnitude lands on e4m3's 448. */
static float fp8_scale(const void *x, size_t n, clattn_dtype dtype)
{
    double amax = 0;
    for (size_t i = 0; i < n; i++) {
        const double v = fabs(value_at(x, i, dtype));
        if (isfinite(v) && v > amax)
            amax = v;
    }
    const float s = (float)(amax / 448.0);
    return s > 0 && isnormal(s) ? s : 1.0f;
}

/* One tensor of `rows` rows of `cols` values into `type` (a new array in
 * *out, NULL for the dtype), fp8's scale into *scale. */
static int quantize(clattn_kv_type type, clattn_dtype dtype, const void *src, size_t rows,
                    size_t cols, void **out, float *scale)
{
    *out = NULL;
    *scale = 1.0f;
    if (type == CLATTN_KV_DTYPE)
        return CLATTN_OK;
    const size_t per = clattn_kv_block_values(type);
    if (!per || cols % per) {
        uint8_t none[1];
        return clattn_quantize(type, dtype, src, 0, cols, 1.0f, none); /* the library's detail */
    }
    *out = malloc(rows * row_bytes(type, dtype, cols) + 1);
    if (!*out)
        return CLATTN_ENOMEM;
    if (type == CLATTN_KV_FP8_E4M3)
        *scale = fp8_scale(src, rows * cols, dtype);
    return clattn_quantize(type, dtype, src, rows, cols, *scale, *out);
}

static void copy_row(void *dst, size_t at, const void *src, size_t from, size_t bytes)
{
    memcpy((char *)dst + at * bytes, (const char *)src + from * bytes, bytes);
}

static size_t gcd(size_t a, size_t b)
{
    while (b) {
        const size_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* K and V scattered into pages: sequence b's page i is page 1 + (p step)
 * mod n of the pool (p = b per + i, step coprime to n: every page once, in
 * a shuffled order; page 0 stays unused), head-major pages [num_pages,
 * Hkv, page, d]. */
static int make_pages(const cli_cache *c, const clattn_shape *s, size_t kb, size_t vb,
                      const void *k, const void *v, cli_cache_data *d, clattn_options *dev)
{
    const size_t P = c->page_size, per = (s->kv_len + P - 1) / P, n = s->batch * per;
    const size_t hk = s->kv_heads;
    size_t step = n / 2 | 1;
    while (n > 1 && gcd(step, n) != 1)
        step += 2;
    d->num_pages = n + 1;
    d->table_stride = per;
    d->block_table = malloc(n * sizeof *d->block_table);
    d->kd_bytes = d->num_pages * hk * P * kb;
    d->vd_bytes = d->num_pages * hk * P * vb;
    d->dk = calloc(1, d->kd_bytes);
    d->dv = calloc(1, d->vd_bytes);
    if (!d->block_table || !d->dk || !d->dv)
        return CLATTN_ENOMEM;
    for (size_t p = 0; p < n; p++)
        d->block_table[p] = (int32_t)(1 + p * step % n);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t h = 0; h < hk; h++)
            for (size_t j = 0; j < s->kv_len; j++) {
                const size_t page = (size_t)d->block_table[b * per + j / P];
                const size_t at = (page * hk + h) * P + j % P, from = (b * hk + h) * s->kv_len + j;
                copy_row(d->dk, at, k, from, kb);
                copy_row(d->dv, at, v, from, vb);
            }
    dev->page_size = P;
    dev->num_pages = d->num_pages;
    dev->block_table = d->block_table;
    dev->block_table_stride = per;
    return CLATTN_OK;
}

/* Q, K and V packed by cu_seqlens into [1, heads, total, d] (head-major). */
static int make_packed(const clattn_shape *s, size_t dv, size_t kb, size_t vb, const void *q,
                       const void *k, const void *v, const uint32_t *lens, cli_cache_data *d,
                       clattn_options *dev)
{
    const size_t B = s->batch, H = s->heads, hk = s->kv_heads, e = clattn_dtype_size(s->dtype);
    d->cu_q = malloc((B + 1) * sizeof *d->cu_q);
    d->cu_k = malloc((B + 1) * sizeof *d->cu_k);
    if (!d->cu_q || !d->cu_k)
        return CLATTN_ENOMEM;
    d->cu_q[0] = d->cu_k[0] = 0;
    for (size_t b = 0; b < B; b++) {
        d->cu_q[b + 1] = d->cu_q[b] + (int32_t)(d->q_lens ? d->q_lens[b] : s->q_len);
        d->cu_k[b + 1] = d->cu_k[b] + (int32_t)(lens ? lens[b] : s->kv_len);
    }
    d->total_q = (size_t)d->cu_q[B];
    d->total_k = (size_t)d->cu_k[B];
    const size_t tq = d->total_q ? d->total_q : 1, tk = d->total_k ? d->total_k : 1;
    d->q_bytes = tq * H * s->head_dim * e;
    d->o_bytes = tq * H * dv * e;
    d->kd_bytes = tk * hk * kb;
    d->vd_bytes = tk * hk * vb;
    d->dq = calloc(1, d->q_bytes);
    d->dk = calloc(1, d->kd_bytes);
    d->dv = calloc(1, d->vd_bytes);
    if (!d->dq || !d->dk || !d->dv)
        return CLATTN_ENOMEM;
    for (size_t b = 0; b < B; b++) {
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < (size_t)(d->cu_q[b + 1] - d->cu_q[b]); i++)
                copy_row(d->dq, h * tq + (size_t)d->cu_q[b] + i, q, (b * H + h) * s->q_len + i,
                         s->head_dim * e);
        for (size_t h = 0; h < hk; h++)
            for (size_t j = 0; j < (size_t)(d->cu_k[b + 1] - d->cu_k[b]); j++) {
                const size_t at = h * tk + (size_t)d->cu_k[b] + j;
                const size_t from = (b * hk + h) * s->kv_len + j;
                copy_row(d->dk, at, k, from, kb);
                copy_row(d->dv, at, v, from, vb);
            }
    }
    dev->cu_seqlens_q = d->cu_q;
    dev->cu_seqlens_k = d->cu_k;
    dev->kv_lens = NULL;
    dev->q_lens = NULL;
    return CLATTN_OK;
}

int cli_cache_make(const cli_cache *c, const clattn_shape *s, size_t dv, const void *q,
                   const void *k, const void *v, const uint32_t *lens, const uint32_t *q_lens,
                   cli_cache_data *d, clattn_options *ref, clattn_options *dev)
{
    memset(d, 0, sizeof *d);
    const size_t e = clattn_dtype_size(s->dtype), rows = s->batch * s->kv_heads * s->kv_len;
    int rc = quantize(c->k_type, s->dtype, k, rows, s->head_dim, &d->k, &d->k_scale);
    if (rc == 0)
        rc = quantize(c->v_type, s->dtype, v, rows, dv, &d->v, &d->v_scale);
    if (rc < 0)
        return rc;
    const size_t kb = row_bytes(c->k_type, s->dtype, s->head_dim);
    const size_t vb = row_bytes(c->v_type, s->dtype, dv);
    const void *kp = d->k ? d->k : k, *vp = d->v ? d->v : v;
    d->k_bytes = rows * kb;
    d->v_bytes = rows * vb;
    clattn_options *both[2] = { ref, dev };
    for (int i = 0; i < 2; i++) {
        both[i]->k_type = c->k_type;
        both[i]->v_type = c->v_type;
        both[i]->k_scale = c->k_type == CLATTN_KV_FP8_E4M3 ? &d->k_scale : NULL;
        both[i]->v_scale = c->v_type == CLATTN_KV_FP8_E4M3 ? &d->v_scale : NULL;
        both[i]->kv_scale_per_head = 0;
        both[i]->kv_lens = lens;
        both[i]->q_lens = q_lens;
    }
    if (q_lens) {
        d->q_lens = malloc(s->batch * sizeof *d->q_lens);
        if (!d->q_lens)
            return CLATTN_ENOMEM;
        memcpy(d->q_lens, q_lens, s->batch * sizeof *d->q_lens);
    }
    d->q_bytes = s->batch * s->heads * s->q_len * s->head_dim * e;
    d->o_bytes = s->batch * s->heads * s->q_len * dv * e;
    d->kd_bytes = d->k_bytes;
    d->vd_bytes = d->v_bytes;
    if (c->page_size)
        return make_pages(c, s, kb, vb, kp, vp, d, dev);
    if (c->packed)
        return make_packed(s, dv, kb, vb, q, kp, vp, lens, d, dev);
    return CLATTN_OK;
}

void cli_cache_unpack_o(const cli_cache_data *d, const clattn_shape *s, size_t dv,
                        const void *o, void *out)
{
    const size_t e = clattn_dtype_size(s->dtype), row = dv * e, H = s->heads;
    if (!d->cu_q) {
        memcpy(out, o, s->batch * H * s->q_len * row);
        return;
    }
    const size_t tq = d->total_q ? d->total_q : 1;
    memset(out, 0, s->batch * H * s->q_len * row);
    for (size_t b = 0; b < s->batch; b++)
        for (size_t h = 0; h < H; h++)
            for (size_t i = 0; i < (size_t)(d->cu_q[b + 1] - d->cu_q[b]); i++)
                copy_row(out, (b * H + h) * s->q_len + i, o, h * tq + (size_t)d->cu_q[b] + i,
                         row);
}

void cli_cache_plan_options(const cli_cache *c, const clattn_shape *s, const uint32_t *lens,
                            const uint32_t *q_lens, clattn_options *o)
{
    o->k_type = c->k_type;
    o->v_type = c->v_type;
    if (c->page_size) {
        o->page_size = c->page_size;
        o->num_pages = s->batch * ((s->kv_len + c->page_size - 1) / c->page_size) + 1;
        o->block_table = NULL;
        o->block_table_stride = 0;
    }
    if (c->packed) {
        size_t tq = 0, tk = 0;
        for (size_t b = 0; b < s->batch; b++) {
            tq += q_lens ? q_lens[b] : s->q_len;
            tk += lens ? lens[b] : s->kv_len;
        }
        o->total_q = tq ? tq : 1;
        o->total_k = tk ? tk : 1;
        o->kv_lens = NULL;
        o->q_lens = NULL;
    }
}

void cli_cache_model(const cli_cache *c, const clattn_shape *s, const uint32_t *q_lens,
                     clattn_model_cache *mc)
{
    (void)s;
    clattn_model_default_cache(mc);
    mc->k_type = c->k_type;
    mc->v_type = c->v_type;
    mc->page_size = c->page_size;
    mc->packed = c->packed;
    mc->q_lens = q_lens;
}

void cli_cache_describe(const cli_cache *c, const clattn_shape *s, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (c->k_type != CLATTN_KV_DTYPE || c->v_type != CLATTN_KV_DTYPE) {
        if (c->k_type == c->v_type)
            n += (size_t)snprintf(buf + n, cap - n, "kv=%s", cli_kv_type_name(c->k_type,
                                                                               s->dtype));
        else
            n += (size_t)snprintf(buf + n, cap - n, "k=%s v=%s",
                                  cli_kv_type_name(c->k_type, s->dtype),
                                  cli_kv_type_name(c->v_type, s->dtype));
    }
    if (c->page_size && n < cap)
        n += (size_t)snprintf(buf + n, cap - n, "%spages=%zu", n ? " " : "", c->page_size);
    if (c->packed && n < cap)
        snprintf(buf + n, cap - n, "%spacked", n ? " " : "");
}

void cli_cache_json(struct json *j, const cli_cache *c, const clattn_shape *s,
                    const cli_cache_data *d)
{
    json_open(j, "cache", '{');
    json_str(j, "k_type", cli_kv_type_name(c->k_type, s->dtype));
    json_str(j, "v_type", cli_kv_type_name(c->v_type, s->dtype));
    json_u64(j, "page_size", c->page_size);
    json_bool(j, "packed", c->packed);
    if (d) {
        json_u64(j, "num_pages", d->num_pages);
        json_num(j, "k_scale", c->k_type == CLATTN_KV_FP8_E4M3 ? d->k_scale : 0, 1);
        json_num(j, "v_scale", c->v_type == CLATTN_KV_FP8_E4M3 ? d->v_scale : 0, 1);
        json_u64(j, "k_bytes", d->kd_bytes);
        json_u64(j, "v_bytes", d->vd_bytes);
        if (c->packed) {
            json_u64(j, "total_q", d->total_q);
            json_u64(j, "total_k", d->total_k);
        }
    }
    json_close(j, '}');
}
