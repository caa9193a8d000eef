/* SPDX-License-Identifier: MIT */
/* Building one kernel file into a program: the source (embedded, or from
 * $CLATTN_KERNEL_DIR), the options every build gets, and the build log in
 * the error detail when it fails. Programs built before on this device
 * come from their kept binaries (binary_cache.h); a context's own reuse of
 * its programs is context/program.h's. */
#ifndef CLATTN_SRC_RUNTIME_BUILD_H
#define CLATTN_SRC_RUNTIME_BUILD_H

#include "clattn/clattn.h"
#include "device/binary_cache.h"

/* Where a program came from: its kept binary, or the source (then, once
 * it has run, program_keep keeps its binary for the next process). */
struct program_origin {
    int keyed;       /* the device identity could be read: key is set */
    int from_source; /* built from source, not from a kept binary */
    int builds;      /* builds from source before this one (binary_cache.h) */
    struct binary_key key;
};

/* Builds kernel file `file` (e.g. "fused/portable.cl") with `options` for
 * `device` of `context`, the source of `prelude` (NULL: none) put before
 * its own, from the binary kept by an earlier build when there is one.
 * `label` names the device in messages. On CLATTN_EBUILD the detail holds
 * the build log. *origin says how it was built. */
int program_build(cl_context context, cl_device_id device, const char *label, const char *file,
                  const char *prelude, const char *options, cl_program *out,
                  struct program_origin *origin);

/* After a program program_build made from source has served: keeps its
 * binary when it has been built often enough, else the mark of this build
 * (binary_cache.h). Best effort. */
void program_keep(cl_program prog, const char *file, const struct program_origin *origin);

/* Builds the embedded PTX program binary `name` (clattn_embedded_binary)
 * for `device` of `context` with clCreateProgramWithBinary. NVIDIA only;
 * CLATTN_EUNSUPPORTED when the build lacks it, CLATTN_EBUILD (the build log
 * in the detail) when the driver refuses it. */
int program_build_ptx(cl_context context, cl_device_id device, const char *label,
                      const char *name, cl_program *out);

#endif
