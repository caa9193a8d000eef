/* SPDX-License-Identifier: MIT */
/* The library's side of the struct_size rule (include/clattn/types.h,
 * "Structs that grow"): a caller's struct is read or written up to the size
 * its own header gave it, never past it. */
#ifndef CLATTN_SRC_CORE_ABI_H
#define CLATTN_SRC_CORE_ABI_H

#include <stddef.h>

/* Sets up a struct of the rule, as every clattn_default_* and *_init
 * function does first: zeroes its `size` bytes and sets its struct_size to
 * `size`. Those functions take NULL: 0 then (nothing to set up), else 1. */
int abi_init(void *s, size_t size);

/* The caller's struct_size (the first member of every struct of the rule),
 * checked: CLATTN_EINVAL when it is below `first_size`, the struct's size
 * in the first version of the API that had the field (the struct was not
 * set up by `init`, the function or initializer that sets struct_size). */
int abi_struct_size(const void *caller, size_t first_size, const char *what, const char *init,
                    size_t *size);

/* A struct the caller filled, as this library's `out` (which holds its
 * defaults on entry): the bytes the caller's header knows replace the
 * defaults, the rest stay; out's struct_size is set to `out_size`. */
int abi_read(const void *caller, void *out, size_t out_size, size_t first_size,
             const char *what, const char *init);

/* A struct the library filled (`src`, `src_size` bytes) written to the
 * caller's `dst` up to dst's struct_size, which is left as it was. Call it
 * after abi_struct_size accepted dst. */
void abi_write(void *dst, size_t dst_size, const void *src, size_t src_size);

/* The size of a struct up to and including `member`. */
#define ABI_SIZE_THROUGH(type, member) (offsetof(type, member) + sizeof(((type *)0)->member))

#endif
