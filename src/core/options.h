/* SPDX-License-Identifier: MIT */
/* Options as the modules read them. */
#ifndef CLATTN_SRC_CORE_OPTIONS_H
#define CLATTN_SRC_CORE_OPTIONS_H

#include "clattn/types.h"

/* The caller's options as this library's struct: NULL gives the defaults; a
 * struct from an older header (smaller struct_size) gets the defaults for
 * the fields it does not have. CLATTN_EINVAL when struct_size is 0 or below
 * the first version's (the struct was not set up by clattn_default_options). */
int options_resolve(const clattn_options *in, clattn_options *out);

#endif
