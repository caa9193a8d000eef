/* SPDX-License-Identifier: MIT */
/* Ceilings without a saved measurement. */
#ifndef CLATTN_SRC_DEVICE_CEILINGS_H
#define CLATTN_SRC_DEVICE_CEILINGS_H

#include "clattn/device.h"

/* The ceilings known without a saved measurement: reported capacities, and
 * cache, bandwidth and FLOP/s from the built-in table or the reported cache. */
int device_ceilings_unmeasured(cl_device_id dev, clattn_ceilings *out);

#endif
