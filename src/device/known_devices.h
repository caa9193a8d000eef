/* SPDX-License-Identifier: MIT */
/* A small table of known devices: their last-level cache, memory bandwidth
 * and FLOP/s from datasheets, for the model where nothing was measured. */
#ifndef CLATTN_SRC_DEVICE_KNOWN_DEVICES_H
#define CLATTN_SRC_DEVICE_KNOWN_DEVICES_H

#include "clattn/clattn.h"

struct known_device {
    const char *match;  /* substring of the device or AMD board name */
    double cache_bytes; /* last-level cache (L2, or AMD's Infinity Cache) */
    double bandwidth;   /* device memory, bytes/s */
    double flops_f16;   /* dense matrix-unit rate, fp32 accumulation */
    double flops_f32;   /* FMA rate */
};

/* The entry `dev` (named `name`) matches, or NULL. */
const struct known_device *known_device_lookup(cl_device_id dev, const char *name);

#endif
