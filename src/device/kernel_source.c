/* SPDX-License-Identifier: MIT */
/* Kernel sources: the copies embedded at build time, or, while developing,
 * the files of the folder $CLATTN_KERNEL_DIR points at (cl/ of the source
 * tree: fused/, naive/, measure/, api/, include/). Either way a shared
 * header a kernel includes (`#include "name.clh"` or "name.h", one the host
 * reads too, on a line of its own, found in include/) is inlined here, so that every program handed to the driver is one
 * standalone source, and what a test loads from disk is byte for byte what
 * the embedded copy gives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "device/kernel_source.h"

/* Headers include at most this deep (a cycle would otherwise never end). */
#define INCLUDE_DEPTH_MAX 4

static int read_file(const char *path, char **out, size_t *len_out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return clattn_fail(CLATTN_EIO, "cannot open kernel source %s", path);
    int rc = CLATTN_EIO;
    char *buf = NULL;
    long len;
    if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET))
        goto fail;
    buf = malloc((size_t)len + 1);
    if (!buf) {
        rc = CLATTN_ENOMEM;
        goto fail;
    }
    if (fread(buf, 1, (size_t)len, f) != (size_t)len)
        goto fail;
    buf[len] = '\0';
    fclose(f);
    *out = buf;
    *len_out = (size_t)len;
    return CLATTN_OK;
fail:
    free(buf);
    fclose(f);
    return clattn_fail(rc, "cannot read kernel source %s", path);
}

/* The raw text of `name`, not yet inlined. */
static int raw_source(const char *name, char **out, size_t *len)
{
    const char *dir = getenv("CLATTN_KERNEL_DIR");
    if (dir && *dir) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
            return clattn_fail(CLATTN_EINVAL, "CLATTN_KERNEL_DIR path too long");
        return read_file(path, out, len);
    }
    for (size_t i = 0; i < clattn_embedded_kernel_count; i++) {
        const struct clattn_embedded_kernel *k = &clattn_embedded_kernels[i];
        if (strcmp(k->name, name))
            continue;
        char *buf = malloc(k->length + 1);
        if (!buf)
            return clattn_fail(CLATTN_ENOMEM, "kernel source %s", name);
        memcpy(buf, k->source, k->length);
        buf[k->length] = '\0';
        *out = buf;
        *len = k->length;
        return CLATTN_OK;
    }
    return clattn_fail(CLATTN_EINVAL, "no embedded kernel source named %s", name);
}

/* A growing output buffer. */
struct text {
    char *data;
    size_t len, cap;
};

static int append(struct text *t, const char *s, size_t n)
{
    if (t->len + n + 1 > t->cap) {
        size_t cap = (t->len + n + 1) * 2;
        char *p = realloc(t->data, cap);
        if (!p)
            return clattn_fail(CLATTN_ENOMEM, "kernel source");
        t->data = p;
        t->cap = cap;
    }
    memcpy(t->data + t->len, s, n);
    t->len += n;
    t->data[t->len] = '\0';
    return CLATTN_OK;
}

/* The header a line includes ("x.clh" or "x.h" between quotes), as its
 * path under cl/ ("include/x.clh"), into name[0..cap); or 0. */
static int included_header(const char *line, size_t len, char *name, size_t cap)
{
    const char *p = line, *end = line + len;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    if ((size_t)(end - p) < 10 || strncmp(p, "#include", 8))
        return 0;
    p += 8;
    while (p < end && (*p == ' ' || *p == '\t'))
        p++;
    const char *close = p < end && *p == '"' ? memchr(p + 1, '"', (size_t)(end - p - 1)) : NULL;
    size_t n = close ? (size_t)(close - p - 1) : 0;
    static const char dir[] = "include/";
    if (n < 3 || n + sizeof dir - 1 >= cap ||
        (strncmp(close - 4, ".clh", 4) && strncmp(close - 2, ".h", 2)))
        return 0;
    memcpy(name, dir, sizeof dir - 1);
    memcpy(name + sizeof dir - 1, p + 1, n);
    name[sizeof dir - 1 + n] = '\0';
    return 1;
}

static int expand(const char *name, struct text *out, int depth)
{
    if (depth > INCLUDE_DEPTH_MAX)
        return clattn_fail(CLATTN_EINVAL, "kernel headers include each other deeper than %d "
                           "levels (at %s)", INCLUDE_DEPTH_MAX, name);
    char *src = NULL, header[80];
    size_t len = 0;
    int rc = raw_source(name, &src, &len);
    for (size_t pos = 0; rc == CLATTN_OK && pos < len;) {
        const char *nl = memchr(src + pos, '\n', len - pos);
        size_t line = nl ? (size_t)(nl - (src + pos)) + 1 : len - pos;
        if (included_header(src + pos, line, header, sizeof header))
            rc = expand(header, out, depth + 1); /* "include/x.clh" */
        else
            rc = append(out, src + pos, line);
        pos += line;
    }
    free(src);
    return rc;
}

int clattn_kernel_source(const char *name, char **out)
{
    struct text t = { NULL, 0, 0 };
    int rc = expand(name, &t, 0);
    if (rc == CLATTN_OK && !t.data)
        rc = append(&t, "", 0); /* an empty file is an empty program */
    if (rc < 0) {
        free(t.data);
        return rc;
    }
    *out = t.data;
    return CLATTN_OK;
}

int clattn_embedded_binary(const char *name, const char **data, size_t *len)
{
    for (size_t i = 0; i < clattn_embedded_kernel_count; i++) {
        const struct clattn_embedded_kernel *k = &clattn_embedded_kernels[i];
        if (!strcmp(k->name, name)) {
            *data = k->source;
            *len = k->length;
            return CLATTN_OK;
        }
    }
    return clattn_fail(CLATTN_EUNSUPPORTED, "%s is not in this build (it needs clang + libclc "
                       "at build time: meson option ptx)", name);
}
