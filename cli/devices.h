/* SPDX-License-Identifier: MIT */
/* clattn devices, in four files: arguments (devices_args.c), the text
 * listing and measurement report (devices_text.c), the same as JSON
 * (devices_json.c), and the command itself (cmd_devices.c). */
#ifndef CLATTN_TOOLS_DEVICES_H
#define CLATTN_TOOLS_DEVICES_H

#include <stdint.h>

#include "cli.h"
#include "json.h"
#include "options.h"

struct devices_args {
    const char *device; /* --device SEL, NULL for all (listing) / default (measure) */
    const char *json;   /* --json[=FILE]: the file, "-" for stdout; NULL: text */
    int measure, quick, sweep;
    uint32_t repetitions;
};

/* Parses the arguments: 0, 1 after --help (exit 0), or 2 on a usage error
 * (printed). */
int devices_parse_args(int argc, char **argv, struct devices_args *a);

/* "GPU", "CPU", "accelerator", "other". */
const char *devices_type_name(cl_device_type t);

/* The shape the kernel rows describe: one head of d = 128 in `dtype`. */
clattn_shape devices_kernel_shape(clattn_dtype dtype);

/* devices_text.c */
void devices_print_text(size_t index, const clattn_device_props *p, const clattn_ceilings *c,
                        cl_device_id dev);
void devices_print_measurement_text(const clattn_measurement *m, const clattn_ceilings *before,
                                    const char *path);

/* devices_json.c: one device as an element of the "devices" array. */
void devices_print_json(struct json *j, size_t index, const clattn_device_props *p,
                        const clattn_ceilings *c, cl_device_id dev);
void devices_print_measurement_json(struct json *j, const clattn_measurement *m,
                                    const clattn_ceilings *before, const char *path);

#endif
