/* SPDX-License-Identifier: MIT */
/* Building one kernel file into a program: the source (embedded, or from
 * $CLATTN_KERNEL_DIR), the options every build gets, and the build log in
 * the error detail when it fails. No caching here (context/program.h). */
#ifndef CLATTN_SRC_RUNTIME_BUILD_H
#define CLATTN_SRC_RUNTIME_BUILD_H

#include "clattn/clattn.h"

/* Builds kernel file `file` (e.g. "fused/portable.cl") with `options` for
 * `device` of `context`, the source of `prelude` (NULL: none) put before
 * its own. `label` names the device in messages. On CLATTN_EBUILD the
 * detail holds the build log. */
int program_build(cl_context context, cl_device_id device, const char *label, const char *file,
                  const char *prelude, const char *options, cl_program *out);

/* Builds the embedded PTX program binary `name` (clattn_embedded_binary)
 * for `device` of `context` with clCreateProgramWithBinary. NVIDIA only;
 * CLATTN_EUNSUPPORTED when the build lacks it, CLATTN_EBUILD (the build log
 * in the detail) when the driver refuses it. */
int program_build_ptx(cl_context context, cl_device_id device, const char *label,
                      const char *name, cl_program *out);

#endif
