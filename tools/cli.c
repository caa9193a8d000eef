/* Parsing, error printing and formatting shared by the subcommands. */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

void cli_error(const char *fmt, ...)
{
    va_list ap;
    fputs("clattn: error: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_lib_error(const char *what, int code)
{
    const char *detail = clattn_last_error_detail();
    if (detail && *detail)
        cli_error("%s: %s (%s)", what, clattn_strerror(code), detail);
    else
        cli_error("%s: %s", what, clattn_strerror(code));
}

int cli_open(const char *selector, clattn_ctx **ctx)
{
    int rc = clattn_open(ctx, selector);
    if (rc < 0)
        cli_lib_error("cannot open an OpenCL device", rc);
    return rc;
}

int cli_parse_size(const char *s, size_t *out)
{
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > SIZE_MAX)
        return -1;
    *out = (size_t)v;
    return 0;
}

int cli_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s)
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

int cli_parse_bytes(const char *s, uint64_t *out)
{
    /* Single letters and the IEC forms are binary; "KB", "MB"... are decimal. */
    static const struct { const char *suffix; double mult; } units[] = {
        { "", 1 }, { "B", 1 },
        { "K", 0x1p10 }, { "k", 0x1p10 }, { "KiB", 0x1p10 }, { "KB", 1e3 }, { "kB", 1e3 },
        { "M", 0x1p20 }, { "m", 0x1p20 }, { "MiB", 0x1p20 }, { "MB", 1e6 },
        { "G", 0x1p30 }, { "g", 0x1p30 }, { "GiB", 0x1p30 }, { "GB", 1e9 },
        { "T", 0x1p40 }, { "t", 0x1p40 }, { "TiB", 0x1p40 }, { "TB", 1e12 },
    };
    char *end;
    if (!s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || v < 0)
        return -1;
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcmp(end, units[i].suffix))
            continue;
        double bytes = v * units[i].mult;
        if (bytes >= 0x1p64)
            return -1;
        *out = (uint64_t)(bytes + 0.5);
        return 0;
    }
    return -1;
}

int cli_parse_size_list(const char *s, size_t *out, size_t cap, size_t *n)
{
    char buf[1024];
    if (!s || strlen(s) >= sizeof buf)
        return -1;
    strcpy(buf, s);
    *n = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        if (*n >= cap || cli_parse_size(tok, &out[*n]) < 0)
            return -1;
        (*n)++;
    }
    return *n ? 0 : -1;
}

int cli_parse_dtype(const char *s, clattn_dtype *out)
{
    if (!s)
        return -1;
    if (!strcmp(s, "fp32") || !strcmp(s, "f32") || !strcmp(s, "float32") || !strcmp(s, "float")) {
        *out = CLATTN_F32;
        return 0;
    }
    if (!strcmp(s, "fp16") || !strcmp(s, "f16") || !strcmp(s, "float16") || !strcmp(s, "half")) {
        *out = CLATTN_F16;
        return 0;
    }
    return -1;
}

int cli_parse_causal(const char *s, clattn_causal *out)
{
    if (!s || !strcmp(s, "top-left") || !strcmp(s, "yes") || !strcmp(s, "tl"))
        *out = CLATTN_CAUSAL_TOP_LEFT;
    else if (!strcmp(s, "bottom-right") || !strcmp(s, "br"))
        *out = CLATTN_CAUSAL_BOTTOM_RIGHT;
    else if (!strcmp(s, "none") || !strcmp(s, "no"))
        *out = CLATTN_CAUSAL_NONE;
    else
        return -1;
    return 0;
}

int cli_parse_path(const char *s, clattn_path *out)
{
    if (!s)
        return -1;
    if (!strcmp(s, "auto"))
        *out = CLATTN_PATH_AUTO;
    else if (!strcmp(s, "naive"))
        *out = CLATTN_PATH_NAIVE;
    else if (!strcmp(s, "fused"))
        *out = CLATTN_PATH_FUSED;
    else
        return -1;
    return 0;
}

int cli_parse_fused_kernel(const char *s, clattn_fused_kernel *out)
{
    return s && clattn_fused_kernel_find(s, out) == 0 ? 0 : -1;
}

void cli_kernel_names(char *buf, size_t cap)
{
    size_t len = (size_t)snprintf(buf, cap, "auto");
    clattn_kernel_info k;
    for (size_t i = 0; len < cap && clattn_fused_kernel_info(i, &k) == 0; i++)
        len += (size_t)snprintf(buf + len, cap - len, ", %s", k.name);
}

const char *cli_dtype_name(clattn_dtype d)
{
    return d == CLATTN_F16 ? "fp16" : "fp32";
}

const char *cli_causal_name(clattn_causal c)
{
    switch (c) {
    case CLATTN_CAUSAL_TOP_LEFT: return "top-left";
    case CLATTN_CAUSAL_BOTTOM_RIGHT: return "bottom-right";
    default: return "none";
    }
}

const char *cli_path_name(clattn_path p)
{
    switch (p) {
    case CLATTN_PATH_NAIVE: return "naive";
    case CLATTN_PATH_FUSED: return "fused";
    default: return "auto";
    }
}

void cli_fmt_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB" };
    double v = (double)bytes;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, cap, "%" PRIu64 " B", bytes);
    else if (v == (double)(uint64_t)v)
        snprintf(buf, cap, "%.0f %s", v, units[u]);
    else
        snprintf(buf, cap, "%.2f %s", v, units[u]);
}

double cli_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
