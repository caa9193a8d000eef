/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer harness for the option-value parsers (cli/cli_parse.c).
 *
 * Each input, cut at its first NUL as a command-line argument would be, goes
 * to every parser, and each answer is checked against the grammar cli.h
 * documents, written out again here in the plainest way (digit by digit,
 * word by word); a disagreement aborts:
 *   size        one or more decimal digits, at most SIZE_MAX;
 *   size list   sizes separated by single commas, 1..cap of them;
 *   double      a finite number as strtod reads it, with no leading space;
 *   bytes       accepted only when it starts with a digit and ends in a
 *               listed suffix; for digits + suffix below 2^53, the exact
 *               product;
 *   names       exactly the listed spellings, each to its value; a refused
 *               name leaves the output alone;
 *   params      name=value items separated by single commas, a name of
 *               letters, digits, '_' and '-', a value of printable
 *               characters other than space, ',' and '='.
 * Crashes, overreads (the string is a malloc'd copy of exactly its length)
 * and undefined behaviour such as an out-of-range float-to-integer
 * conversion are found by the sanitizers.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Small, so inputs reach the limit; cli_parse_size_list takes any cap. */
#define LIST_CAP 4

static void broken(const char *parser, const char *s, const char *promise)
{
    fprintf(stderr, "fuzz_cli: %s(\"%s\"): broken promise: %s\n", parser, s, promise);
    abort();
}

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The size grammar over s[0..n): 0 and *v on success, -1 otherwise. Not
 * the parser's digit loop again: digits only, their value at most SIZE_MAX
 * by comparing the digits (leading zeros dropped) with SIZE_MAX's as
 * strings, and the value then read by strtoull. */
static int spec_size(const char *s, size_t n, size_t *v)
{
    char max[32], digits[32];
    snprintf(max, sizeof max, "%zu", (size_t)SIZE_MAX);
    if (n == 0 || strspn(s, "0123456789") < n)
        return -1;
    size_t lead = 0;
    while (lead + 1 < n && s[lead] == '0')
        lead++;
    const size_t len = n - lead, max_len = strlen(max);
    if (len > max_len || (len == max_len && memcmp(s + lead, max, len) > 0))
        return -1;
    memcpy(digits, s + lead, len);
    digits[len] = '\0';
    *v = (size_t)strtoull(digits, NULL, 10);
    return 0;
}

static void check_size(const char *s)
{
    size_t want = 0, got = 7;
    int rc_want = spec_size(s, strlen(s), &want);
    int rc = cli_parse_size(s, &got);
    if (rc != rc_want)
        broken("cli_parse_size", s, rc ? "a valid size is accepted" : "an invalid size is refused");
    if (rc == 0 && got != want)
        broken("cli_parse_size", s, "the value is the digits' value");
    if (rc != 0 && got != 7)
        broken("cli_parse_size", s, "a refusal leaves the output alone");
}

static void check_size_list(const char *s)
{
    size_t want[LIST_CAP], got[LIST_CAP], n_want = 0, n_got = 0;
    int rc_want = 0;
    for (const char *item = s;; item++) {
        const char *comma = strchr(item, ',');
        size_t len = comma ? (size_t)(comma - item) : strlen(item);
        if (n_want == LIST_CAP || spec_size(item, len, &want[n_want]) != 0) {
            rc_want = -1;
            break;
        }
        n_want++;
        if (!comma)
            break;
        item = comma;
    }
    int rc = cli_parse_size_list(s, got, LIST_CAP, &n_got);
    if (rc != rc_want)
        broken("cli_parse_size_list", s,
               rc ? "a valid list is accepted" : "an invalid list is refused");
    if (rc == 0 && (n_got != n_want || memcmp(got, want, n_want * sizeof *want) != 0))
        broken("cli_parse_size_list", s, "the values are the items' values");
    /* cli_parse_lens: the same list, each value at most UINT32_MAX. */
    uint32_t lens[LIST_CAP];
    size_t n_lens = 0;
    int lens_want = rc_want;
    for (size_t i = 0; lens_want == 0 && i < n_want; i++)
        lens_want = want[i] > UINT32_MAX ? -1 : 0;
    rc = cli_parse_lens(s, lens, LIST_CAP, &n_lens);
    if (rc != lens_want)
        broken("cli_parse_lens", s, rc ? "a valid list is accepted" : "an invalid list is refused");
    for (size_t i = 0; rc == 0 && i < n_want; i++)
        if (n_lens != n_want || lens[i] != want[i])
            broken("cli_parse_lens", s, "the values are the items' values");
    if (cli_list_items(s) < n_want)
        broken("cli_list_items", s, "at least as many items as the list has");
}

static void check_double(const char *s)
{
    double got = 7;
    if (cli_parse_double(s, &got) != 0) {
        if (got != 7)
            broken("cli_parse_double", s, "a refusal leaves the output alone");
        return;
    }
    if (!isfinite(got))
        broken("cli_parse_double", s, "the value is finite");
    if (s[0] == ' ' || (s[0] >= '\t' && s[0] <= '\r'))
        broken("cli_parse_double", s, "no leading space");
    char *end;
    double v = strtod(s, &end);
    if (*end || v != got)
        broken("cli_parse_double", s, "the value is what strtod reads from the whole string");
}

static const struct {
    const char *suffix;
    uint64_t mult;
} byte_units[] = {
    { "", 1 },           { "B", 1 },
    { "K", 1ull << 10 }, { "k", 1ull << 10 }, { "KiB", 1ull << 10 }, { "KB", 1000 },
    { "kB", 1000 },      { "M", 1ull << 20 }, { "m", 1ull << 20 },   { "MiB", 1ull << 20 },
    { "MB", 1000000 },   { "G", 1ull << 30 }, { "g", 1ull << 30 },   { "GiB", 1ull << 30 },
    { "GB", 1000000000 }, { "T", 1ull << 40 }, { "t", 1ull << 40 },  { "TiB", 1ull << 40 },
    { "TB", 1000000000000ull },
};

/* The multiplier of `suffix`, or 0 when it is none of the listed ones. */
static uint64_t byte_unit(const char *suffix)
{
    for (size_t i = 0; i < sizeof byte_units / sizeof byte_units[0]; i++)
        if (!strcmp(suffix, byte_units[i].suffix))
            return byte_units[i].mult;
    return 0;
}

static void check_bytes(const char *s)
{
    uint64_t got = 7;
    int rc = cli_parse_bytes(s, &got);
    if (rc != 0 && got != 7)
        broken("cli_parse_bytes", s, "a refusal leaves the output alone");
    if (rc == 0 && !is_digit(s[0]))
        broken("cli_parse_bytes", s, "an accepted count starts with a digit");
    /* Digits and a suffix: exact while the product is below 2^53. */
    size_t n = 0;
    while (is_digit(s[n]))
        n++;
    uint64_t mult = byte_unit(s + n), v = 0;
    if (n == 0 || n > 15 || mult == 0)
        return;
    for (size_t i = 0; i < n; i++)
        v = v * 10 + (uint64_t)(s[i] - '0');
    if (v > (1ull << 53) / mult)
        return;
    if (rc != 0 || got != v * mult)
        broken("cli_parse_bytes", s, "digits and a suffix give their exact product");
}

/* A name parser's spellings and values, as cli.h lists them. */
typedef struct spelling {
    const char *name;
    int value;
} spelling;

/* The enums differ in type; each parser is called through a wrapper that
 * stores its result in an int. */
typedef int (*name_parser)(const char *s, int *out);

static int parse_dtype(const char *s, int *out)
{
    clattn_dtype v = (clattn_dtype)*out;
    int rc = cli_parse_dtype(s, &v);
    *out = (int)v;
    return rc;
}

static int parse_causal(const char *s, int *out)
{
    clattn_causal v = (clattn_causal)*out;
    int rc = cli_parse_causal(s, &v);
    *out = (int)v;
    return rc;
}

static int parse_path(const char *s, int *out)
{
    clattn_path v = (clattn_path)*out;
    int rc = cli_parse_path(s, &v);
    *out = (int)v;
    return rc;
}

static void check_names(const char *what, name_parser parse, const spelling *list, size_t n,
                        const char *s)
{
    /* No parser's value (they are 0..2), but one any enum type can hold. */
    const int untouched = 99;
    int got = untouched;
    int rc = parse(s, &got);
    for (size_t i = 0; i < n; i++)
        if (!strcmp(s, list[i].name)) {
            if (rc != 0 || got != list[i].value)
                broken(what, s, "a listed spelling gives its value");
            return;
        }
    if (rc == 0 || got != untouched)
        broken(what, s, "anything else is refused and leaves the output alone");
}

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void check_all_names(const char *s)
{
    static const spelling dtypes[] = {
        { "fp32", CLATTN_F32 },    { "f32", CLATTN_F32 },     { "float32", CLATTN_F32 },
        { "float", CLATTN_F32 },   { "fp16", CLATTN_F16 },    { "f16", CLATTN_F16 },
        { "float16", CLATTN_F16 }, { "half", CLATTN_F16 },
    };
    static const spelling causals[] = {
        { "none", CLATTN_CAUSAL_NONE },          { "no", CLATTN_CAUSAL_NONE },
        { "top-left", CLATTN_CAUSAL_TOP_LEFT },  { "tl", CLATTN_CAUSAL_TOP_LEFT },
        { "yes", CLATTN_CAUSAL_TOP_LEFT },       { "bottom-right", CLATTN_CAUSAL_BOTTOM_RIGHT },
        { "br", CLATTN_CAUSAL_BOTTOM_RIGHT },
    };
    static const spelling paths[] = {
        { "auto", CLATTN_PATH_AUTO }, { "naive", CLATTN_PATH_NAIVE },
        { "fused", CLATTN_PATH_FUSED },
    };
    check_names("cli_parse_dtype", parse_dtype, dtypes, COUNT(dtypes), s);
    check_names("cli_parse_causal", parse_causal, causals, COUNT(causals), s);
    check_names("cli_parse_path", parse_path, paths, COUNT(paths), s);
}

/* The --params grammar, item by item. */
static int spec_params(const char *s)
{
    for (;;) {
        size_t name = 0, value = 0;
        while ((s[name] >= 'a' && s[name] <= 'z') || (s[name] >= 'A' && s[name] <= 'Z') ||
               is_digit(s[name]) || s[name] == '_' || s[name] == '-')
            name++;
        if (!name || s[name] != '=')
            return -1;
        s += name + 1;
        while (s[value] > ' ' && s[value] <= '~' && s[value] != ',' && s[value] != '=')
            value++;
        if (!value)
            return -1;
        s += value;
        if (!*s)
            return 0;
        if (*s++ != ',')
            return -1;
    }
}

static void check_params(const char *s)
{
    if (cli_parse_params(s) != spec_params(s))
        broken("cli_parse_params", s, "exactly the name=value lists are accepted");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *nul = memchr(data, 0, size);
    size_t len = nul ? (size_t)(nul - data) : size;
    char *s = malloc(len + 1);
    if (!s)
        return 0;
    memcpy(s, data, len);
    s[len] = '\0';
    check_size(s);
    check_size_list(s);
    check_double(s);
    check_bytes(s);
    check_all_names(s);
    check_params(s);
    free(s);
    return 0;
}
