/* SPDX-License-Identifier: MIT */
/*
 * Parsers of option values shared by the subcommands (declared in cli.h).
 * They need nothing from the library but its enums, so the fuzz harness
 * (tests/fuzz/fuzz_cli.c) links this file alone.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* s[0..n) as a size: decimal digits only, at most SIZE_MAX. Digit by digit
 * rather than strtoull, which would skip leading space, take a sign and read
 * past n. */
static int parse_digits(const char *s, size_t n, size_t *out)
{
    size_t v = 0;
    if (n == 0)
        return -1;
    for (size_t i = 0; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            return -1;
        size_t digit = (size_t)(s[i] - '0');
        if (v > (SIZE_MAX - digit) / 10)
            return -1;
        v = v * 10 + digit;
    }
    *out = v;
    return 0;
}

int cli_parse_size(const char *s, size_t *out)
{
    return s ? parse_digits(s, strlen(s), out) : -1;
}

/* No option wants an infinity or a NaN (a NaN even slips through checks
 * such as v > 0 being false), and strtod's skipping of leading space would
 * take " 1" while refusing "1 ". */
int cli_parse_double(const char *s, double *out)
{
    char *end;
    if (!s || !*s || isspace((unsigned char)*s))
        return -1;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || !isfinite(v))
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

/* Item by item in place: strtok would merge ",," into one separator and
 * accept "1,,2", ",1" and "1," for what is most likely a typo. */
int cli_parse_size_list(const char *s, size_t *out, size_t cap, size_t *n)
{
    if (!s)
        return -1;
    *n = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s);
        if (*n >= cap || parse_digits(s, len, &out[*n]) < 0)
            return -1;
        (*n)++;
        if (!comma)
            return 0;
        s = comma + 1;
    }
}

size_t cli_list_items(const char *s)
{
    size_t n = 1;
    for (; s && *s; s++)
        n += *s == ',';
    return n;
}

int cli_parse_lens(const char *s, uint32_t *out, size_t cap, size_t *n)
{
    if (!s)
        return -1;
    *n = 0;
    for (;;) {
        const char *comma = strchr(s, ',');
        size_t len = comma ? (size_t)(comma - s) : strlen(s), v;
        if (*n >= cap || parse_digits(s, len, &v) < 0 || v > UINT32_MAX)
            return -1;
        out[(*n)++] = (uint32_t)v;
        if (!comma)
            return 0;
        s = comma + 1;
    }
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
    if (!strcmp(s, "bf16") || !strcmp(s, "bfloat16")) {
        *out = CLATTN_BF16;
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

static int is_param_name_char(char c)
{
    return isalnum((unsigned char)c) || c == '_' || c == '-';
}

static int is_param_value_char(char c)
{
    return c > ' ' && c <= '~' && c != ',' && c != '=';
}

int cli_parse_params(const char *s)
{
    if (!s)
        return -1;
    for (;;) {
        size_t name = 0, value = 0;
        while (is_param_name_char(s[name]))
            name++;
        if (name == 0 || s[name] != '=')
            return -1;
        s += name + 1;
        while (is_param_value_char(s[value]))
            value++;
        if (value == 0)
            return -1;
        s += value;
        if (*s == '\0')
            return 0;
        if (*s++ != ',')
            return -1;
    }
}
