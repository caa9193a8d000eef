/* Kernel sources: the copies embedded at build time, or, while developing,
 * the files of the folder $CLATTN_KERNEL_DIR points at. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "kernel_source.h"

static int read_file(const char *path, char **out)
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
    return CLATTN_OK;
fail:
    free(buf);
    fclose(f);
    return clattn_fail(rc, "cannot read kernel source %s", path);
}

int clattn_kernel_source(const char *name, char **out)
{
    const char *dir = getenv("CLATTN_KERNEL_DIR");
    if (dir && *dir) {
        char path[4096];
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path)
            return clattn_fail(CLATTN_EINVAL, "CLATTN_KERNEL_DIR path too long");
        return read_file(path, out);
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
        return CLATTN_OK;
    }
    return clattn_fail(CLATTN_EINVAL, "no embedded kernel source named %s", name);
}
