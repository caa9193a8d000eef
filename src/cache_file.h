/* Files the library keeps per device under the user's cache directory
 * ($XDG_CACHE_HOME/clattn or ~/.cache/clattn): measured ceilings, tuned
 * tiles. A device is identified by its name, driver and platform versions,
 * so a driver update starts afresh. */
#ifndef CLATTN_SRC_CACHE_FILE_H
#define CLATTN_SRC_CACHE_FILE_H

#include <stddef.h>

#include "clattn/clattn.h"

/* The cache directory's path (not created). */
int clattn_cache_dir(char *buf, size_t cap);

/* "<dir>/<prefix><device name, sanitised>-<hash of identity>.txt", the
 * identity being the device name, driver version and platform version. */
int clattn_cache_path_for(const char *prefix, const char *name, const char *driver,
                          const char *platform_version, char *path, size_t cap);
/* The same for an OpenCL device. */
int clattn_cache_path(cl_device_id dev, const char *prefix, char *path, size_t cap);

/* Writes `text` to `path` whole or not at all (temporary file, then rename),
 * creating the cache directory if needed. */
int clattn_cache_write(const char *path, const char *text);

#endif
