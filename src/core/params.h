/* SPDX-License-Identifier: MIT */
/* A kernel's parameters beyond its tiles (clattn_options.kernel_params, the
 * tune files): tables of named integer parameters, each with its range and,
 * for a choice among names, the names of its values; and the parser of a
 * "name=value,name=value" list against them. No OpenCL. */
#ifndef CLATTN_SRC_CORE_PARAMS_H
#define CLATTN_SRC_CORE_PARAMS_H

#include <stddef.h>

#include "clattn/types.h"

/* A parameter left to its kernel's own choice. */
#define PARAM_AUTO (-1)

struct param_def {
    const char *name;           /* lower case, digits, '_' */
    int min, max;               /* the values it takes, min >= 0 */
    const char *const *values;  /* NULL, or the names of min..max in order */
    const char *summary;        /* what it sets and its default (clattn devices) */
};

/* One table and where its values go (values[i] for defs[i]). */
struct param_group {
    const struct param_def *defs;
    size_t n;
    int *values;
};

/* Sets every value of the groups to PARAM_AUTO. */
void params_reset(const struct param_group *groups, size_t n_groups);

/* Applies `text` ("" or NULL: nothing) to the groups: each name=value is
 * looked up in the groups in order, its value (decimal, or one of the
 * def's value names) checked against the range. A name given twice takes
 * the last value. CLATTN_EINVAL naming the parameter (and, for an unknown
 * one, those `owner` takes) on anything else; the values are then
 * unspecified. */
int params_apply(const char *text, const struct param_group *groups, size_t n_groups,
                 const char *owner);

/* The value `value` of `def` as text: its name or decimal, into buf. */
void params_value_text(const struct param_def *def, int value, char *buf, size_t cap);

/* The groups' values that are not PARAM_AUTO as "name=value,..." into
 * buf[0..cap) ("" when none); truncated (still NUL-terminated) when cap is
 * short, which returns -1, else 0. */
int params_format(const struct param_group *groups, size_t n_groups, char *buf, size_t cap);

/* Whether `text` is a well-formed "name=value,..." list (names of the
 * letters, digits and '_' a def's name has, values without ',' or '='):
 * what a tune file may record, whatever kernel it names. */
int params_well_formed(const char *text);

/* The public description of def (clattn_kernel_param_info). */
void params_describe(const struct param_def *def, clattn_param_info *out);

#endif
