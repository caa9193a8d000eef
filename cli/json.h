/* SPDX-License-Identifier: MIT */
/* The one JSON writer of the clattn tool: objects and arrays nested to any
 * depth, commas placed by the writer, strings escaped per RFC 8259, and null
 * for unknown or non-finite numbers. Every command's top-level object starts
 * with json_begin_document's "tool" and "version" fields. */
#ifndef CLATTN_TOOLS_JSON_H
#define CLATTN_TOOLS_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "clattn/device.h"

struct json {
    FILE *f;
    int need_comma;
};

/* Opens the top-level object on `f` with "tool": "clattn", "version" and
 * "command": `command`. */
void json_begin_document(struct json *j, FILE *f, const char *command);
/* Closes the top-level object and ends the line. */
void json_end_document(struct json *j);

/* `key` is NULL inside arrays. */
void json_open(struct json *j, const char *key, char bracket); /* '{' or '[' */
void json_close(struct json *j, char bracket);                 /* '}' or ']' */
void json_u64(struct json *j, const char *key, uint64_t v);
void json_int(struct json *j, const char *key, long long v);
void json_bool(struct json *j, const char *key, int v);
void json_null(struct json *j, const char *key);
/* Non-finite values, and 0 when zero_is_null, are written as null. */
void json_num(struct json *j, const char *key, double v, int zero_is_null);
/* NULL is written as null. */
void json_str(struct json *j, const char *key, const char *s);
/* {"value": v or null, "source": "reported" | ...}. */
void json_figure(struct json *j, const char *key, clattn_figure f);
/* A device's ceilings as fields of the open object: global_mem_bytes,
 * max_alloc_bytes, cache_bytes, bandwidth, flops_f32, flops_f16,
 * launch_latency_s, each a figure. */
void json_ceilings_fields(struct json *j, const clattn_ceilings *c);
/* An array of n values; null when v is NULL. */
void json_u32_list(struct json *j, const char *key, const uint32_t *v, size_t n);
/* A shape's fields into the open object: batch, heads, kv_heads, q_len,
 * kv_len, head_dim. */
void json_shape_fields(struct json *j, const clattn_shape *s);

#endif
