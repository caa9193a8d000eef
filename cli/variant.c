/* SPDX-License-Identifier: MIT */
/* The command line's attention variants as the library takes them (see
 * variant.h). */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "json.h"
#include "npy.h"
#include "variant.h"

#define SNIPPET_MAX (1 << 20) /* bytes of OpenCL C a --score-mod / --mask-mod file may hold */

int cli_variant_any(const cli_variant *v)
{
    return v->softcap > 0 || v->window_left >= 0 || v->window_right >= 0 || v->alibi ||
           v->sinks || v->mask || v->score_mod || v->mask_mod || v->head_dim_v;
}

void cli_variant_free(cli_variant_data *d)
{
    free(d->slopes);
    free(d->sinks);
    free(d->mask);
    free(d->score_mod);
    free(d->mask_mod);
    memset(d, 0, sizeof *d);
    d->mask_keep = 1.0;
}

/* splitmix64: the variants' random values, reproducible from the seed. */
static uint64_t next_random(uint64_t *x)
{
    uint64_t z = (*x += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static float uniform(uint64_t *x) /* [-1, 1) */
{
    return (float)((double)(next_random(x) >> 11) * (2.0 / 9007199254740992.0) - 1.0);
}

static int load_npy(const char *opt, const char *path, int mask, npy_array *a)
{
    char err[512];
    if ((mask ? npy_read_mask : npy_read)(path, a, err, sizeof err)) {
        cli_error("%s: %s", opt, err);
        return CLI_EXIT_FAILURE;
    }
    return 0;
}

/* A float32 vector of [H] (or [B, H] where `per_seq` is non-NULL) into *out. */
static int load_per_head(const char *cmd, const char *opt, const char *path,
                         const clattn_shape *s, int mismatch, int *per_seq, float **out)
{
    npy_array a;
    int rc = load_npy(opt, path, 0, &a);
    if (rc)
        return rc;
    char shape[128];
    npy_format_shape(&a, shape, sizeof shape);
    const int heads = a.ndim == 1 && a.shape[0] == s->heads;
    const int seq = per_seq && a.ndim == 2 && a.shape[0] == s->batch && a.shape[1] == s->heads;
    if (a.dtype != CLATTN_F32 || !(heads || seq)) {
        if (mismatch == CLI_EXIT_USAGE)
            cli_usage_error(cmd, "%s %s: a float32 array of [H = %zu]%s, not %s %s", opt, path,
                            s->heads, per_seq ? " or [B, H]" : "", cli_dtype_name(a.dtype),
                            shape);
        else
            cli_error("%s: %s %s: a float32 array of [H = %zu]%s, not %s %s", cmd, opt, path,
                      s->heads, per_seq ? " or [B, H]" : "", cli_dtype_name(a.dtype), shape);
        npy_free(&a);
        return mismatch;
    }
    if (per_seq)
        *per_seq = seq;
    *out = a.data; /* taken from the array */
    return 0;
}

static int load_snippet(const char *opt, const char *path, char **out)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        cli_error("%s %s: cannot open: %s", opt, path, strerror(errno));
        return CLI_EXIT_FAILURE;
    }
    char *text = malloc(SNIPPET_MAX + 1);
    size_t n = text ? fread(text, 1, SNIPPET_MAX + 1, f) : 0;
    const int bad = !text || ferror(f) || n == 0 || n > SNIPPET_MAX;
    fclose(f);
    if (bad) {
        cli_error("%s %s: %s", opt, path, !text ? "out of memory" : n == 0 ? "empty or unreadable"
                                                   : "larger than 1 MiB");
        free(text);
        return CLI_EXIT_FAILURE;
    }
    text[n] = '\0';
    *out = text;
    return 0;
}

static void keep_fraction(cli_variant_data *d, const clattn_mask *m, size_t n)
{
    size_t kept = 0;
    for (size_t i = 0; i < n; i++) {
        if (m->kind == CLATTN_MASK_BOOL) {
            kept += ((const uint8_t *)m->host)[i] != 0;
            continue;
        }
        const uint16_t h = ((const uint16_t *)m->host)[i];
        const float x = m->dtype == CLATTN_F32   ? ((const float *)m->host)[i]
                        : m->dtype == CLATTN_F16 ? clattn_f16_to_f32(h)
                                                 : clattn_bf16_to_f32(h);
        kept += x != -INFINITY;
    }
    d->mask_keep = n ? (double)kept / (double)n : 1.0;
}

/* A mask .npy: trailing dims Nq, Nk; leading, right-aligned as PyTorch
 * broadcasts, H or 1 and B or 1. */
static int load_mask(const char *cmd, const char *path, const clattn_shape *s, int mismatch,
                     cli_variant_data *d, clattn_options *o)
{
    npy_array a;
    int rc = load_npy("--mask", path, 1, &a);
    if (rc)
        return rc;
    size_t mb = 1, mh = 1;
    int ok = a.ndim >= 2 && a.ndim <= 4 && a.shape[a.ndim - 2] == s->q_len &&
             a.shape[a.ndim - 1] == s->kv_len;
    if (ok && a.ndim >= 3) {
        mh = a.shape[a.ndim - 3];
        ok = mh == 1 || mh == s->heads;
    }
    if (ok && a.ndim == 4) {
        mb = a.shape[0];
        ok = mb == 1 || mb == s->batch;
    }
    if (!ok) {
        char shape[128];
        npy_format_shape(&a, shape, sizeof shape);
        const char *fmt = "--mask %s has shape %s, which does not broadcast to [B, H, Nq, Nk] = "
                          "[%zu, %zu, %zu, %zu] (its last two dims Nq and Nk, before them H or "
                          "1, then B or 1)";
        if (mismatch == CLI_EXIT_USAGE)
            cli_usage_error(cmd, fmt, path, shape, s->batch, s->heads, s->q_len, s->kv_len);
        else {
            char msg[400];
            snprintf(msg, sizeof msg, fmt, path, shape, s->batch, s->heads, s->q_len, s->kv_len);
            cli_error("%s: %s", cmd, msg);
        }
        npy_free(&a);
        return mismatch;
    }
    d->mask = a.data;
    d->mask_bytes = a.nbytes;
    o->mask = (clattn_mask){ a.boolean ? CLATTN_MASK_BOOL : CLATTN_MASK_ADD,
                             a.boolean ? CLATTN_F32 : a.dtype, mb, mh, { 0, 0, 0, 0 }, d->mask };
    keep_fraction(d, &o->mask, a.nelems);
    return 0;
}

int cli_variant_random_mask(const clattn_shape *s, clattn_mask_kind kind, clattn_dtype dtype,
                            size_t mb, size_t mh, uint64_t seed, cli_variant_data *d,
                            clattn_options *o)
{
    const size_t e = kind == CLATTN_MASK_BOOL ? 1 : clattn_dtype_size(dtype);
    const size_t rows = mb * mh * s->q_len, n = rows * s->kv_len;
    free(d->mask);
    d->mask = malloc(n * e + 1);
    if (!d->mask)
        return CLATTN_ENOMEM;
    uint64_t x = seed * 0x2545F4914F6CDD1Dull + 0x5851F42D4C957F2Dull;
    size_t kept = 0;
    for (size_t b = 0; b < mb; b++) {
        const size_t half = s->kv_len / 2;
        const size_t len = half + next_random(&x) % (s->kv_len - half + 1);
        for (size_t r = 0; r < mh * s->q_len; r++)
            for (size_t j = 0; j < s->kv_len; j++) {
                const size_t at = (b * mh * s->q_len + r) * s->kv_len + j;
                const int keep = j == 0 || (j < len && next_random(&x) % 8 != 0);
                kept += keep;
                if (kind == CLATTN_MASK_BOOL) {
                    ((uint8_t *)d->mask)[at] = (uint8_t)keep;
                    continue;
                }
                const float v = keep ? uniform(&x) : -INFINITY;
                if (dtype == CLATTN_F32)
                    ((float *)d->mask)[at] = v;
                else
                    ((uint16_t *)d->mask)[at] = dtype == CLATTN_F16 ? clattn_f32_to_f16(v)
                                                                    : clattn_f32_to_bf16(v);
            }
    }
    d->mask_keep = n ? (double)kept / (double)n : 1.0;
    d->mask_bytes = n * e;
    o->mask = (clattn_mask){ kind, kind == CLATTN_MASK_BOOL ? CLATTN_F32 : dtype, mb, mh,
                             { 0, 0, 0, 0 }, d->mask };
    return CLATTN_OK;
}

static int load_sinks(const char *cmd, const char *v, const clattn_shape *s, uint64_t seed,
                      int mismatch, cli_variant_data *d)
{
    double constant;
    const int random = !strcmp(v, "random");
    if (!random && cli_parse_double(v, &constant) < 0)
        return load_per_head(cmd, "--sinks", v, s, mismatch, NULL, &d->sinks);
    d->sinks = malloc(s->heads * sizeof *d->sinks);
    if (!d->sinks) {
        cli_error("%s: out of memory for the sinks", cmd);
        return CLI_EXIT_FAILURE;
    }
    uint64_t x = seed + 0x51;
    for (size_t h = 0; h < s->heads; h++)
        d->sinks[h] = random ? uniform(&x) : (float)constant;
    return 0;
}

static int load_alibi(const char *cmd, const cli_variant *v, const clattn_shape *s,
                      int mismatch, cli_variant_data *d, clattn_options *o)
{
    if (v->alibi_slopes)
        return load_per_head(cmd, "--alibi-slopes", v->alibi_slopes, s, mismatch,
                             &o->alibi_per_sequence, &d->slopes);
    d->slopes = malloc(s->heads * sizeof *d->slopes);
    if (!d->slopes || clattn_alibi_slopes(v->alibi_max_bias, s->heads, d->slopes) < 0) {
        cli_error("%s: ALiBi slopes: %s", cmd, d->slopes ? clattn_last_error_detail()
                                                         : "out of memory");
        return CLI_EXIT_FAILURE;
    }
    o->alibi_per_sequence = 0;
    return 0;
}

int cli_variant_load(const char *cmd, const cli_call *c, const clattn_shape *s, uint64_t seed,
                     int mismatch, cli_variant_data *d, clattn_options *o)
{
    const cli_variant *v = &c->variant;
    memset(d, 0, sizeof *d);
    d->mask_keep = 1.0;
    o->softcap = v->softcap;
    o->window_left = v->window_left;
    o->window_right = v->window_right;
    if (v->head_dim_v)
        o->head_dim_v = v->head_dim_v;
    int rc = 0;
    if (v->alibi && (rc = load_alibi(cmd, v, s, mismatch, d, o)) == 0)
        o->alibi_slopes = d->slopes;
    if (rc == 0 && v->sinks && (rc = load_sinks(cmd, v->sinks, s, seed, mismatch, d)) == 0)
        o->sinks = d->sinks;
    if (rc == 0 && v->mask) {
        const int add = !strcmp(v->mask, "random-add");
        if (add || !strcmp(v->mask, "random")) {
            if (cli_variant_random_mask(s, add ? CLATTN_MASK_ADD : CLATTN_MASK_BOOL, CLATTN_F32,
                                        s->batch, 1, seed + 0x3a, d, o) < 0) {
                cli_error("%s: out of memory for the random mask", cmd);
                rc = CLI_EXIT_FAILURE;
            }
        } else {
            rc = load_mask(cmd, v->mask, s, mismatch, d, o);
        }
    }
    if (rc == 0 && v->score_mod && (rc = load_snippet("--score-mod", v->score_mod,
                                                      &d->score_mod)) == 0)
        o->score_mod = d->score_mod;
    if (rc == 0 && v->mask_mod && (rc = load_snippet("--mask-mod", v->mask_mod,
                                                     &d->mask_mod)) == 0)
        o->mask_mod = d->mask_mod;
    return rc;
}

static const char *mask_word(const clattn_mask *m)
{
    if (m->kind == CLATTN_MASK_BOOL)
        return "bool";
    return m->dtype == CLATTN_F16 ? "f16" : m->dtype == CLATTN_BF16 ? "bf16" : "f32";
}

/* Appends one word of the description, a space before it. */
static void add_word(char *buf, size_t cap, size_t *n, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add_word(char *buf, size_t cap, size_t *n, const char *fmt, ...)
{
    if (*n && *n + 1 < cap)
        buf[(*n)++] = ' ', buf[*n] = '\0';
    if (*n >= cap)
        return;
    va_list ap;
    va_start(ap, fmt);
    const int w = vsnprintf(buf + *n, cap - *n, fmt, ap);
    va_end(ap);
    *n += w > 0 ? (size_t)w : 0;
}

void cli_variant_describe(const clattn_shape *s, const clattn_options *o, char *buf, size_t cap)
{
    size_t n = 0;
    buf[0] = '\0';
    if (o->softcap > 0)
        add_word(buf, cap, &n, "softcap=%g", o->softcap);
    if (o->window_left >= 0 || o->window_right >= 0)
        add_word(buf, cap, &n, "window=%d,%d", (int)o->window_left, (int)o->window_right);
    if (o->alibi_slopes)
        add_word(buf, cap, &n, "%s", o->alibi_per_sequence ? "alibi/seq" : "alibi");
    if (o->sinks)
        add_word(buf, cap, &n, "sinks");
    if (o->mask.kind != CLATTN_MASK_NONE)
        add_word(buf, cap, &n, "mask=%s[%zu,%zu]", mask_word(&o->mask),
                 o->mask.batch ? o->mask.batch : 1, o->mask.heads ? o->mask.heads : 1);
    if (o->score_mod)
        add_word(buf, cap, &n, "score_mod");
    if (o->mask_mod)
        add_word(buf, cap, &n, "mask_mod");
    if (o->head_dim_v && o->head_dim_v != s->head_dim)
        add_word(buf, cap, &n, "dv=%zu", o->head_dim_v);
}

void cli_variant_json(struct json *j, const clattn_shape *s, const clattn_options *o)
{
    char what[256];
    cli_variant_describe(s, o, what, sizeof what);
    json_str(j, "variant", what);
    json_num(j, "softcap", o->softcap, 1);
    json_int(j, "window_left", o->window_left);
    json_int(j, "window_right", o->window_right);
    json_bool(j, "alibi", o->alibi_slopes != NULL);
    json_bool(j, "sinks", o->sinks != NULL);
    json_str(j, "mask", o->mask.kind == CLATTN_MASK_NONE ? NULL : mask_word(&o->mask));
    json_bool(j, "score_mod", o->score_mod != NULL);
    json_bool(j, "mask_mod", o->mask_mod != NULL);
    json_u64(j, "head_dim_v", o->head_dim_v ? o->head_dim_v : s->head_dim);
}

/* Stand-ins for the tensors a plan only needs to know are there. */
static const float plan_placeholder[1];
static const char plan_snippet[] = "/* the caller's snippet */";

int cli_variant_model(const char *cmd, const cli_call *c, const clattn_shape *s,
                      clattn_model_variant *mv, clattn_options *o)
{
    const cli_variant *v = &c->variant;
    clattn_model_default_variant(mv);
    mv->head_dim_v = v->head_dim_v;
    mv->window_left = v->window_left;
    mv->window_right = v->window_right;
    o->softcap = v->softcap;
    o->window_left = v->window_left;
    o->window_right = v->window_right;
    o->head_dim_v = v->head_dim_v;
    o->alibi_slopes = v->alibi ? plan_placeholder : NULL;
    o->alibi_per_sequence = 0;
    o->sinks = v->sinks ? plan_placeholder : NULL;
    o->score_mod = v->score_mod ? plan_snippet : NULL;
    o->mask_mod = v->mask_mod ? plan_snippet : NULL;
    o->mask = (clattn_mask){ CLATTN_MASK_NONE, CLATTN_F32, 0, 0, { 0, 0, 0, 0 }, NULL };
    if (!v->mask)
        return 0;
    const int add = !strcmp(v->mask, "random-add");
    if (add || !strcmp(v->mask, "random")) {
        o->mask = (clattn_mask){ add ? CLATTN_MASK_ADD : CLATTN_MASK_BOOL, CLATTN_F32, s->batch,
                                 1, { 0, 0, 0, 0 }, NULL };
    } else {
        cli_variant_data d;
        memset(&d, 0, sizeof d);
        int rc = load_mask(cmd, v->mask, s, CLI_EXIT_USAGE, &d, o);
        cli_variant_free(&d);
        o->mask.host = NULL;
        if (rc)
            return rc;
    }
    mv->mask_kind = o->mask.kind;
    mv->mask_dtype = o->mask.dtype;
    mv->mask_batch = o->mask.batch;
    mv->mask_heads = o->mask.heads;
    return 0;
}
