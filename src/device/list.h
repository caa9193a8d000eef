/* SPDX-License-Identifier: MIT */
/* Choosing a device by selector (see clattn_open). */
#ifndef CLATTN_SRC_DEVICE_LIST_H
#define CLATTN_SRC_DEVICE_LIST_H

#include "clattn/clattn.h"

/* The device `selector` names: an index, a case-insensitive substring of
 * "platform: device", a type ("gpu", "cpu") or a vendor; NULL or "" for the
 * most capable GPU, else the first device. CLATTN_ENODEV if none matches. */
int device_select(const char *selector, clattn_device_entry *chosen);

#endif
