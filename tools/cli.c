/* SPDX-License-Identifier: MIT */
/* Error printing, device opening and formatting shared by the subcommands
 * (the option-value parsers are in cli_parse.c). */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
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

/* The library's kernel table names the kernels: these need the library,
 * the parsers of cli_parse.c do not. */
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
