/* Default options. */
#include <string.h>

#include "core/options.h"

void clattn_default_options(clattn_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->causal = CLATTN_CAUSAL_NONE;
    opts->scale = 0.0f;
    opts->path = CLATTN_PATH_AUTO;
    opts->fused_kernel = CLATTN_FUSED_AUTO;
    opts->use_clblast = 1;
}

const clattn_options *clattn_options_or_default(const clattn_options *opts,
                                                clattn_options *storage)
{
    if (opts)
        return opts;
    clattn_default_options(storage);
    return storage;
}
