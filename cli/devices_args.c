/* SPDX-License-Identifier: MIT */
/* clattn devices: usage and arguments. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"

#define CMD "devices"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn devices [--device SEL] [--json[=FILE]]\n"
            "       clattn devices --measure [--device SEL] [--quick] [--no-sweep]\n"
            "                      [--repetitions N] [--json[=FILE]]\n"
            "\n"
            "Lists every OpenCL platform and device: what OpenCL and vendor attributes\n"
            "report, and the ceilings the model uses (cache, bandwidth, FLOP/s), each\n"
            "labelled reported, vendor attribute, measured or table.\n"
            "\n"
            "  --device SEL     only this device (an index or a name substring)\n"
            "  --json[=FILE]    machine-readable output, on stdout or into FILE (written\n"
            "                   whole or not at all)\n"
            "  --measure        measure bandwidth, FMA rates, launch latency and the\n"
            "                   last-level cache on SEL (default: the default device)\n"
            "                   and save them for the model ($XDG_CACHE_HOME/clattn)\n"
            "  --quick          small sizes, 3 repetitions: seconds, rough figures,\n"
            "                   not saved\n"
            "  --no-sweep       skip the working-set sweep (no cache figure)\n"
            "  --repetitions N  timed runs per figure (default 7)\n"
            "\n"
            "The probe builds run with stderr set aside: what a compiler prints there\n"
            "when one fails (PoCL) is replaced by the build log in the listing.\n"
            CLI_EXIT_HELP);
}

int devices_parse_args(int argc, char **argv, struct devices_args *a)
{
    static const struct option long_opts[] = {
        { "device", required_argument, 0, 'D' }, { "json", optional_argument, 0, 'j' },
        { "measure", no_argument, 0, 'm' },      { "quick", no_argument, 0, 'q' },
        { "no-sweep", no_argument, 0, 'S' },     { "repetitions", required_argument, 0, 'r' },
        { "help", no_argument, 0, 'h' },         { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    a->sweep = 1;
    a->repetitions = 7;
    int opt;
    size_t n;
    while ((opt = cli_getopt(CMD, argc, argv, ":h", long_opts)) != -1) {
        switch (opt) {
        case '?': return CLI_EXIT_USAGE;
        case 'h': usage(stdout); return 1;
        case 'D': a->device = optarg; break;
        case 'j': a->json = optarg ? optarg : "-"; break;
        case 'm': a->measure = 1; break;
        case 'q': a->quick = 1; break;
        case 'S': a->sweep = 0; break;
        case 'r':
            if (cli_parse_size(optarg, &n) || n < 1 || n > 101)
                return cli_usage_error(CMD, "--repetitions wants 1..101, not '%s'", optarg);
            a->repetitions = (uint32_t)n;
            break;
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
