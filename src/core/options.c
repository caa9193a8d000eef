/* SPDX-License-Identifier: MIT */
/* Default options. */
#include <stddef.h>
#include <string.h>

#include "core/abi.h"
#include "core/error.h"
#include "core/options.h"

void clattn_default_options(clattn_options *opts)
{
    if (!abi_init(opts, sizeof *opts))
        return;
    opts->causal = CLATTN_CAUSAL_NONE;
    opts->scale = 0.0f;
    opts->path = CLATTN_PATH_AUTO;
    opts->fused_kernel = CLATTN_FUSED_AUTO;
    opts->use_clblast = 1;
    opts->window_left = -1;
    opts->window_right = -1;
}

int options_resolve(const clattn_options *in, clattn_options *out)
{
    clattn_default_options(out);
    if (!in)
        return CLATTN_OK;
    /* The first version with struct_size ended before split_kv. */
    return abi_read(in, out, sizeof *out, offsetof(clattn_options, split_kv), "options",
                    "clattn_default_options");
}
