/* SPDX-License-Identifier: MIT */
/* The JSON writer (see json.h). */
#include <inttypes.h>
#include <math.h>

#include "json.h"

static void key_of(struct json *j, const char *key)
{
    if (j->need_comma)
        fputc(',', j->f);
    if (key) {
        json_str(&(struct json){ j->f, 0 }, NULL, key);
        fputc(':', j->f);
    }
    j->need_comma = 1;
}

void json_begin_document(struct json *j, FILE *f, const char *command)
{
    j->f = f;
    j->need_comma = 0;
    json_open(j, NULL, '{');
    json_str(j, "tool", "clattn");
    json_str(j, "version", clattn_version());
    json_str(j, "command", command);
}

void json_end_document(struct json *j)
{
    json_close(j, '}');
    fputc('\n', j->f);
}

void json_open(struct json *j, const char *key, char bracket)
{
    key_of(j, key);
    fputc(bracket, j->f);
    j->need_comma = 0;
}

void json_close(struct json *j, char bracket)
{
    fputc(bracket, j->f);
    j->need_comma = 1;
}

void json_u64(struct json *j, const char *key, uint64_t v)
{
    key_of(j, key);
    fprintf(j->f, "%" PRIu64, v);
}

void json_int(struct json *j, const char *key, long long v)
{
    key_of(j, key);
    fprintf(j->f, "%lld", v);
}

void json_bool(struct json *j, const char *key, int v)
{
    key_of(j, key);
    fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *key)
{
    key_of(j, key);
    fputs("null", j->f);
}

void json_num(struct json *j, const char *key, double v, int zero_is_null)
{
    key_of(j, key);
    if (!isfinite(v) || (zero_is_null && v == 0))
        fputs("null", j->f);
    else if (v == floor(v) && fabs(v) < 0x1p63)
        fprintf(j->f, "%.0f", v); /* byte counts and FLOPs, exactly */
    else
        fprintf(j->f, "%.17g", v);
}

void json_str(struct json *j, const char *key, const char *s)
{
    key_of(j, key);
    if (!s) {
        fputs("null", j->f);
        return;
    }
    fputc('"', j->f);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            fprintf(j->f, "\\%c", c);
        else if (c < 0x20)
            fprintf(j->f, "\\u%04x", c);
        else
            fputc(c, j->f);
    }
    fputc('"', j->f);
}

void json_figure(struct json *j, const char *key, clattn_figure f)
{
    json_open(j, key, '{');
    json_num(j, "value", f.source != CLATTN_SRC_NONE ? f.value : 0, 1);
    json_str(j, "source", clattn_source_name(f.source));
    json_close(j, '}');
}

void json_shape_fields(struct json *j, const clattn_shape *s)
{
    static const char *const names[] = { "batch", "heads", "kv_heads", "q_len", "kv_len",
                                          "head_dim" };
    const size_t dims[] = { s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim };
    for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++)
        json_u64(j, names[i], dims[i]);
}

void json_u32_list(struct json *j, const char *key, const uint32_t *v, size_t n)
{
    if (!v) {
        json_null(j, key);
        return;
    }
    json_open(j, key, '[');
    for (size_t i = 0; i < n; i++)
        json_u64(j, NULL, v[i]);
    json_close(j, ']');
}

void json_ceilings_fields(struct json *j, const clattn_ceilings *c)
{
    json_figure(j, "global_mem_bytes", c->global_mem_bytes);
    json_figure(j, "max_alloc_bytes", c->max_alloc_bytes);
    json_figure(j, "cache_bytes", c->cache_bytes);
    json_figure(j, "bandwidth", c->bandwidth);
    json_figure(j, "flops_f32", c->flops_f32);
    json_figure(j, "flops_f16", c->flops_f16);
    json_figure(j, "launch_latency_s", c->launch_latency_s);
}
