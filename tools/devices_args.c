/* SPDX-License-Identifier: MIT */
/* clattn devices: usage and arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn devices [--device SEL] [--json]\n"
            "       clattn devices --measure [--device SEL] [--quick] [--no-sweep]\n"
            "                      [--repetitions N] [--json]\n"
            "\n"
            "Lists every OpenCL platform and device: what OpenCL and vendor attributes\n"
            "report, and the ceilings the model uses (cache, bandwidth, FLOP/s), each\n"
            "labelled reported, vendor attribute, measured or table.\n"
            "\n"
            "  --device SEL     only this device (an index or a name substring)\n"
            "  --json           machine-readable output\n"
            "  --measure        measure bandwidth, FMA rates, launch latency and the\n"
            "                   last-level cache on SEL (default: the default device)\n"
            "                   and save them for the model ($XDG_CACHE_HOME/clattn)\n"
            "  --quick          small sizes, 3 repetitions: seconds, rough figures,\n"
            "                   not saved\n"
            "  --no-sweep       skip the working-set sweep (no cache figure)\n"
            "  --repetitions N  timed runs per figure (default 7)\n");
}

int devices_parse_args(int argc, char **argv, struct devices_args *a)
{
    memset(a, 0, sizeof *a);
    a->sweep = 1;
    a->repetitions = 7;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        size_t n;
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return 1;
        } else if (!strcmp(arg, "--json")) {
            a->json = 1;
        } else if (!strcmp(arg, "--measure")) {
            a->measure = 1;
        } else if (!strcmp(arg, "--quick")) {
            a->quick = 1;
        } else if (!strcmp(arg, "--no-sweep")) {
            a->sweep = 0;
        } else if (!strcmp(arg, "--device") && i + 1 < argc) {
            a->device = argv[++i];
        } else if (!strncmp(arg, "--device=", 9)) {
            a->device = arg + 9;
        } else if (!strcmp(arg, "--repetitions") && i + 1 < argc) {
            if (cli_parse_size(argv[++i], &n) || n < 1 || n > 101) {
                cli_error("devices: --repetitions wants 1..101, not '%s'", argv[i]);
                return 2;
            }
            a->repetitions = (uint32_t)n;
        } else {
            cli_error("devices: unknown or incomplete option '%s'", arg);
            usage(stderr);
            return 2;
        }
    }
    return 0;
}

const char *devices_type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "GPU";
    if (t & CL_DEVICE_TYPE_CPU)
        return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

clattn_shape devices_kernel_shape(clattn_dtype dtype)
{
    clattn_shape s = { 1, 1, 1, 4096, 4096, 128, dtype };
    return s;
}
