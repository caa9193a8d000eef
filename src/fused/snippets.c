/* SPDX-License-Identifier: MIT */
/* The caller's snippets as a program prelude (snippets.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clattn/clattn.h"
#include "core/error.h"
#include "device/kernel_source.h"
#include "fused/snippets.h"

int fused_snippets_prelude(const char *score_mod, const char *mask_mod, char **out)
{
    *out = NULL;
    if (!score_mod && !mask_mod)
        return CLATTN_OK;
    char *env;
    int rc = clattn_kernel_source("include/snippet.clh", &env);
    if (rc < 0)
        return rc;
    const char *a = score_mod ? score_mod : "", *b = mask_mod ? mask_mod : "";
    const size_t n = strlen(env) + strlen(a) + strlen(b) + 8;
    if ((*out = malloc(n)))
        snprintf(*out, n, "%s\n%s\n%s\n", env, a, b);
    free(env);
    return *out ? CLATTN_OK : clattn_fail(CLATTN_ENOMEM, "score_mod / mask_mod prelude");
}
