/* SPDX-License-Identifier: MIT */
/* FNV-1a, 64 bits: the one hash of the files the library keeps (the device
 * identity's key, a kept program's key and checksum). */
#ifndef CLATTN_SRC_CORE_FNV1A_H
#define CLATTN_SRC_CORE_FNV1A_H

#include <stddef.h>
#include <stdint.h>

#define FNV1A_OFFSET 0xcbf29ce484222325ull

/* h continued over n bytes. */
static inline uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3ull;
    return h;
}

#endif
