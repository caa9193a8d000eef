/* SPDX-License-Identifier: MIT */
/* Kernel parameters (see params.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/params.h"

void params_reset(const struct param_group *groups, size_t n_groups)
{
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].n; i++)
            groups[g].values[i] = PARAM_AUTO;
}

static int name_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
}

/* The def called name[0..len) and where its value goes, or NULL. */
static const struct param_def *find(const struct param_group *groups, size_t n_groups,
                                    const char *name, size_t len, int **slot)
{
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].n; i++)
            if (strlen(groups[g].defs[i].name) == len &&
                !strncmp(groups[g].defs[i].name, name, len)) {
                *slot = &groups[g].values[i];
                return &groups[g].defs[i];
            }
    return NULL;
}

/* Every name the groups take, "a, b, c", into buf. */
static void names(const struct param_group *groups, size_t n_groups, char *buf, size_t cap)
{
    size_t len = 0;
    buf[0] = '\0';
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].n && len < cap; i++)
            len += (size_t)snprintf(buf + len, cap - len, "%s%s", len ? ", " : "",
                                    groups[g].defs[i].name);
    if (!buf[0])
        snprintf(buf, cap, "none");
}

/* The value text[0..len) of def: a decimal or one of its value names. */
static int parse_value(const struct param_def *def, const char *text, size_t len, int *out)
{
    char v[32];
    if (len == 0 || len >= sizeof v)
        return -1;
    memcpy(v, text, len);
    v[len] = '\0';
    for (int i = 0; def->values && i <= def->max - def->min; i++)
        if (!strcmp(def->values[i], v)) {
            *out = def->min + i;
            return 0;
        }
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || v[0] < '0' || v[0] > '9' || x < def->min || x > def->max)
        return -1;
    *out = (int)x;
    return 0;
}

static int range_error(const struct param_def *def, const char *value, size_t len,
                       const char *owner)
{
    char allowed[160];
    if (def->values) {
        size_t n = 0;
        allowed[0] = '\0';
        for (int i = 0; i <= def->max - def->min && n < sizeof allowed; i++)
            n += (size_t)snprintf(allowed + n, sizeof allowed - n, "%s%s", i ? ", " : "",
                                  def->values[i]);
    } else {
        snprintf(allowed, sizeof allowed, "%d to %d", def->min, def->max);
    }
    return clattn_fail(CLATTN_EINVAL, "%s parameter %s=%.*s: it takes %s", owner, def->name,
                       (int)(len < 40 ? len : 40), value, allowed);
}

int params_apply(const char *text, const struct param_group *groups, size_t n_groups,
                 const char *owner)
{
    for (const char *p = text; p && *p;) {
        const char *end = strchr(p, ',');
        if (!end)
            end = p + strlen(p);
        const char *eq = memchr(p, '=', (size_t)(end - p));
        if (!eq || eq == p)
            return clattn_fail(CLATTN_EINVAL, "kernel_params: \"%.*s\" is not name=value",
                               (int)(end - p < 40 ? end - p : 40), p);
        int *slot;
        const struct param_def *def = find(groups, n_groups, p, (size_t)(eq - p), &slot);
        if (!def) {
            char known[256];
            names(groups, n_groups, known, sizeof known);
            return clattn_fail(CLATTN_EINVAL, "%s has no parameter \"%.*s\" (it takes: %s)",
                               owner, (int)(eq - p < 40 ? eq - p : 40), p, known);
        }
        if (parse_value(def, eq + 1, (size_t)(end - eq - 1), slot) < 0)
            return range_error(def, eq + 1, (size_t)(end - eq - 1), owner);
        p = *end ? end + 1 : end;
        if (*end && !*p)
            return clattn_fail(CLATTN_EINVAL, "kernel_params ends with a comma");
    }
    return CLATTN_OK;
}

void params_value_text(const struct param_def *def, int value, char *buf, size_t cap)
{
    if (def->values && value >= def->min && value <= def->max)
        snprintf(buf, cap, "%s", def->values[value - def->min]);
    else
        snprintf(buf, cap, "%d", value);
}

int params_format(const struct param_group *groups, size_t n_groups, char *buf, size_t cap)
{
    size_t len = 0;
    if (cap)
        buf[0] = '\0';
    for (size_t g = 0; g < n_groups; g++)
        for (size_t i = 0; i < groups[g].n; i++) {
            if (groups[g].values[i] == PARAM_AUTO)
                continue;
            char v[32];
            params_value_text(&groups[g].defs[i], groups[g].values[i], v, sizeof v);
            int n = snprintf(buf + len, cap > len ? cap - len : 0, "%s%s=%s", len ? "," : "",
                             groups[g].defs[i].name, v);
            if (n < 0 || len + (size_t)n >= cap)
                return -1;
            len += (size_t)n;
        }
    return 0;
}

int params_well_formed(const char *text)
{
    const char *p = text;
    while (*p) {
        const char *start = p;
        while (name_char(*p))
            p++;
        if (p == start || *p != '=')
            return 0;
        start = ++p;
        while (*p && *p != ',' && *p != '=' && *p != ' ' && *p != '\t' && *p != '\n')
            p++;
        if (p == start || (*p && *p != ','))
            return 0;
        if (*p == ',' && !*++p)
            return 0;
    }
    return 1;
}

void params_describe(const struct param_def *def, clattn_param_info *out)
{
    memset(out, 0, sizeof *out);
    out->name = def->name;
    out->min = def->min;
    out->max = def->max;
    out->summary = def->summary;
    for (int i = 0; def->values && i <= def->max - def->min && i < CLATTN_PARAM_VALUES_MAX; i++)
        out->values[i] = def->values[i];
}
