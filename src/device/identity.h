/* SPDX-License-Identifier: MIT */
/* Which device a saved file belongs to: its name, driver version and
 * platform version. A driver update gives a new identity, so measurements
 * and tuned tiles start afresh. Computed here only. */
#ifndef CLATTN_SRC_DEVICE_IDENTITY_H
#define CLATTN_SRC_DEVICE_IDENTITY_H

#include <stdint.h>

#include "clattn/clattn.h"

struct device_identity {
    char device_name[256];      /* CL_DEVICE_NAME */
    char driver_version[128];   /* CL_DRIVER_VERSION */
    char platform_version[256]; /* CL_PLATFORM_VERSION */
};

/* Reads the three strings, one line each (newlines become spaces). */
int device_identity_read(cl_device_id dev, struct device_identity *out);

/* FNV-1a over the three strings, each ended by a newline: the file key. */
uint64_t device_identity_hash(const struct device_identity *id);

#endif
