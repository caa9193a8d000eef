/* Device facts shared by device_query.c and measure.c. */
#ifndef CLATTN_SRC_DEVICE_QUERY_H
#define CLATTN_SRC_DEVICE_QUERY_H

#include <stddef.h>

#include "clattn/clattn.h"

/* The strings a saved measurement is keyed by. Each buffer is NUL-terminated
 * (truncated if needed). Returns 0 or a recorded CLATTN_ECL. */
int device_identity(cl_device_id dev, char *name, size_t name_cap, char *driver,
                    size_t driver_cap, char *platform_version, size_t platform_cap);

/* The ceilings known without a saved measurement: reported capacities, and
 * cache, bandwidth and FLOP/s from the built-in table or the reported cache. */
int device_ceilings_unmeasured(cl_device_id dev, clattn_ceilings *out);

/* The device's vendor, from its PCI vendor id or its vendor string. */
clattn_vendor device_vendor(cl_device_id dev);

/* The memory a run may really use and the largest buffer the driver really
 * allocates: the reported figures, except where a driver is known to differ
 * (NVIDIA: a context reserve, and no limit below the memory on one buffer),
 * then labelled CLATTN_SRC_TABLE. Used by the model's ceilings and by the
 * runtime's refusal alike, so that both predict the same boundary. */
int device_memory_limits(cl_device_id dev, clattn_figure *capacity, clattn_figure *max_alloc);

/* Nonzero when `name` appears as a whole word in the space-separated list. */
int extension_listed(const char *extensions, const char *name);

#endif
