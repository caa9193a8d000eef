/* SPDX-License-Identifier: MIT */
/* Outputs that share memory (see extent.h). */
#include "core/error.h"
#include "core/extent.h"

const char extent_host_memory = 0;

struct extent extent_host(const char *name, const void *p, uint64_t lo, uint64_t hi,
                          int output)
{
    const uintptr_t at = (uintptr_t)p;
    return (struct extent){ name, p ? EXTENT_HOST : NULL, at + lo, at + hi, output };
}

int extents_disjoint(const struct extent *e, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++)
            if ((e[i].output || e[j].output) && e[i].root && e[i].root == e[j].root &&
                e[i].lo < e[j].hi && e[j].lo < e[i].hi)
                return clattn_fail(CLATTN_EINVAL, "%s and %s overlap in memory: an output must "
                                   "not share a byte with an input or another output",
                                   e[i].name, e[j].name);
    return CLATTN_OK;
}
