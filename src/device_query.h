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

/* Nonzero when `name` appears as a whole word in the space-separated list. */
int extension_listed(const char *extensions, const char *name);

#endif
