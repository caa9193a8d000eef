/* SPDX-License-Identifier: MIT */
/* Files the library keeps per device under the user's cache directory
 * ($XDG_CACHE_HOME/clattn, else ~/.cache/clattn): measured ceilings, tuned
 * tiles. Files are keyed by the device identity (device/identity.h).
 *
 * Other users must not be able to steer what a run does: the directory is
 * created 0700 and used only while it is owned by the user and writable by
 * nobody else; files are written 0600 through a fresh temporary (O_EXCL, so
 * a planted symlink is never followed) renamed into place, and read only
 * when they are regular files of bounded size (a link to /dev/zero or a FIFO
 * is refused instead of hanging the caller). */
#ifndef CLATTN_SRC_DEVICE_CACHE_FILE_H
#define CLATTN_SRC_DEVICE_CACHE_FILE_H

#include <stddef.h>

#include "device/identity.h"

/* The largest cache file read; the files written are a few KiB. */
#define CACHE_FILE_MAX_BYTES ((size_t)1 << 20)

/* The cache directory's path (not created, not checked). */
int cache_dir(char *buf, size_t cap);

/* "<dir>/<prefix><device name, sanitised>-<identity hash>.txt". */
int cache_path(const char *prefix, const struct device_identity *id, char *path, size_t cap);

/* Reads a cache file whole into a new NUL-terminated buffer. CLATTN_EIO when
 * it does not exist or cannot be read, CLATTN_EFORMAT when it is not a
 * regular file or exceeds CACHE_FILE_MAX_BYTES, CLATTN_EINVAL when the
 * directory is not safe (see above). The detail names the file. */
int cache_read(const char *path, char **text);

/* cache_read for a file of any bytes up to max_bytes: *data (NUL-terminated
 * past its *len bytes) malloc'd. */
int cache_read_bytes(const char *path, size_t max_bytes, char **data, size_t *len);

/* Writes `text` to `path` whole or not at all, creating the directory; the
 * temporaries of this path that a killed writer left behind (older than a
 * minute) are removed on the way. */
int cache_write(const char *path, const char *text);

/* cache_write of `len` bytes. */
int cache_write_bytes(const char *path, const void *data, size_t len);

/* Rewrites `path` under an exclusive lock (flock on "<path>.lock"), so that
 * two processes updating it at once both keep their changes: `merge` gets
 * the current text (NULL when there is none or it cannot be read) and
 * returns the new text in *out (malloc'd), or a negative code to write
 * nothing. */
typedef int (*cache_merge_fn)(const char *current, void *user, char **out);
int cache_update(const char *path, cache_merge_fn merge, void *user);

#endif
