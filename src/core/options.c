/* Default options. */
#include <stddef.h>
#include <string.h>

#include "core/error.h"

#include "core/options.h"

void clattn_default_options(clattn_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->struct_size = sizeof *opts;
    opts->causal = CLATTN_CAUSAL_NONE;
    opts->scale = 0.0f;
    opts->path = CLATTN_PATH_AUTO;
    opts->fused_kernel = CLATTN_FUSED_AUTO;
    opts->use_clblast = 1;
}

int options_resolve(const clattn_options *in, clattn_options *out)
{
    clattn_default_options(out);
    if (!in)
        return CLATTN_OK;
    /* struct_size is the first field, present since the struct had one. */
    const size_t first = offsetof(clattn_options, split_kv);
    if (in->struct_size < first)
        return clattn_fail(CLATTN_EINVAL, "options: struct_size %zu; set them up with "
                           "clattn_default_options", in->struct_size);
    memcpy(out, in, in->struct_size < sizeof *out ? in->struct_size : sizeof *out);
    out->struct_size = sizeof *out;
    return CLATTN_OK;
}
