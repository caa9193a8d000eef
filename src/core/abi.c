/* SPDX-License-Identifier: MIT */
/* The struct_size rule, library side (see abi.h). */
#include <string.h>

#include "core/abi.h"
#include "core/error.h"

/* The fixed-size structs keep their size for the life of the API major:
 * fields added later take reserved bytes. */
_Static_assert(sizeof(clattn_run_info) == 384, "clattn_run_info must stay 384 bytes");

int abi_init(void *s, size_t size)
{
    if (!s)
        return 0;
    memset(s, 0, size);
    memcpy(s, &size, sizeof size); /* struct_size is every such struct's first member */
    return 1;
}

int abi_struct_size(const void *caller, size_t first_size, const char *what, const char *init,
                    size_t *size)
{
    size_t n;
    memcpy(&n, caller, sizeof n); /* struct_size is every such struct's first member */
    if (n < first_size)
        return clattn_fail(CLATTN_EINVAL, "%s: struct_size %zu is below the first version's %zu; "
                           "set the struct up with %s", what, n, first_size, init);
    *size = n;
    return CLATTN_OK;
}

int abi_read(const void *caller, void *out, size_t out_size, size_t first_size,
             const char *what, const char *init)
{
    size_t n = 0;
    int rc = abi_struct_size(caller, first_size, what, init, &n);
    if (rc < 0)
        return rc;
    memcpy(out, caller, n < out_size ? n : out_size);
    memcpy(out, &out_size, sizeof out_size);
    return CLATTN_OK;
}

void abi_write(void *dst, size_t dst_size, const void *src, size_t src_size)
{
    const size_t n = dst_size < src_size ? dst_size : src_size;
    if (n > sizeof(size_t))
        memcpy((char *)dst + sizeof(size_t), (const char *)src + sizeof(size_t),
               n - sizeof(size_t));
}
