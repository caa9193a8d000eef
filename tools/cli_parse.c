/*
 * Parsers of option values shared by the subcommands (declared in cli.h).
 * They need nothing from the library but its enums, so the fuzz harness
 * (tests/fuzz/fuzz_cli.c) links this file alone.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

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
    if (s && !strcmp(s, "auto"))
        *out = CLATTN_FUSED_AUTO;
    else if (s && !strcmp(s, "portable"))
        *out = CLATTN_FUSED_PORTABLE;
    else if (s && !strcmp(s, "nv-mma"))
        *out = CLATTN_FUSED_NV_MMA;
    else
        return -1;
    return 0;
}
