/* SPDX-License-Identifier: MIT */
/* A fused kernel's tiles: what the caller, clattn tune and the defaults
 * choose, and what the tune files record (no OpenCL here: the tune file's
 * text is parsed without it). */
#ifndef CLATTN_SRC_FUSED_TILES_H
#define CLATTN_SRC_FUSED_TILES_H

#include <stddef.h>

struct fused_tiles {
    size_t bm, bn; /* packed rows per work-group, keys per block */
    size_t tm;     /* register-tiled kernels: rows per work-item (0: the
                    * kernel's choice; other kernels ignore it) */
};

#endif
