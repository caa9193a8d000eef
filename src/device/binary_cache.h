/* SPDX-License-Identifier: MIT */
/* Built programs kept on disk, so that a process builds a kernel variant
 * only when no earlier process on this device has: a source build costs
 * the OpenCL C compiler (a second or more per variant on PoCL), loading
 * its binary a few milliseconds.
 *
 * Files live in the cache directory's programs/ folder (cache_file.h: owned
 * by the user, written whole through a temporary), named by the kernel file
 * and a 128-bit key over everything the binary depends on: the library's
 * version, the device identity (name, driver and platform versions: a
 * driver update starts afresh), the source with its headers inlined, the
 * prelude and the build options. A file holds a header line that repeats
 * the key and gives the binary's length and checksum, then the binary; one that does not
 * match, or that the driver refuses, is rebuilt from source and replaced.
 *
 * A binary is kept at a variant's BINARY_CACHE_KEEP_AT-th build from
 * source; the builds before it leave a mark that counts them. Where the
 * driver makes a binary by compiling once more (PoCL: as long as the build
 * itself), keeping one costs a build, which a variant that a few processes
 * build once each (a test suite's) never earns back; one built again and
 * again is kept.
 * The folder keeps the BINARY_CACHE_MAX_FILES most recently used. */
#ifndef CLATTN_SRC_DEVICE_BINARY_CACHE_H
#define CLATTN_SRC_DEVICE_BINARY_CACHE_H

#include <stdint.h>

#include "clattn/clattn.h"
#include "device/identity.h"

#define BINARY_CACHE_MAX_FILES 1024
#define BINARY_CACHE_KEEP_AT 3
/* The largest binary kept or read: PoCL's are ~100 KiB, NVIDIA's PTX text
 * up to a few MiB. */
#define BINARY_CACHE_MAX_BYTES ((size_t)64 << 20)

struct binary_key {
    uint64_t h[2];
};

/* The key of one build: `parts` (the source, prelude and options) after
 * the library version and the identity. */
void binary_key_make(const struct device_identity *id, const char *const *parts, size_t n,
                     struct binary_key *key);

/* The program of `key` built from its cached binary with `options` (which
 * NVIDIA applies when it compiles PTX to the device's code): 0 and *out;
 * else how many builds from source came before (a mark's count;
 * BINARY_CACHE_KEEP_AT - 1 for a file not usable), or -1 when there is
 * nothing. No error is left set. */
int binary_cache_load(cl_context context, cl_device_id device, const char *file,
                      const struct binary_key *key, const char *options, cl_program *out);

/* After a build from source under `key`, the `builds`-th before it (what
 * load said, 0 for nothing): its binary at the BINARY_CACHE_KEEP_AT-th,
 * else the mark. Best effort: a cache that cannot be written is left alone
 * and no error is left set. */
void binary_cache_store(cl_program prog, const char *file, const struct binary_key *key,
                        int builds);

#endif
