/* SPDX-License-Identifier: MIT */
/* clattn devices: usage and arguments. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"

#define CMD "devices"

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f,
            "usage: clattn devices [--device SEL] [--json[=FILE]]\n"
            "       clattn devices --measure [--device SEL] [--quick] [--no-sweep]\n"
            "                      [--repetitions N] [--json[=FILE]]\n"
            "\n"
            "Lists every OpenCL platform and device: what OpenCL and vendor attributes\n"
            "report, and the ceilings the model uses (cache, bandwidth, FLOP/s), each\n"
            "labelled reported, vendor attribute, measured or table. --device lists one\n"
            "device only (and names the one --measure measures); --json writes the\n"
            "listing or the measurement as JSON instead of text.\n"
            "\n"
            "options:\n");
    cli_print_options(cmd, f);
    fprintf(f,
            "\n"
            "The probe builds run with stderr set aside: what a compiler prints there\n"
            "when one fails (PoCL) is replaced by the build log in the listing.\n"
            CLI_EXIT_HELP);
}

static const cli_option own_options[] = {
    CLI_FLAG("measure", struct devices_args, measure,
             "measure bandwidth, FMA rates, launch latency and\n"
             "the last-level cache on SEL (default: the default\n"
             "device) and save them for the model\n($XDG_CACHE_HOME/clattn)"),
    CLI_FLAG("quick", struct devices_args, quick,
             "small sizes, 3 repetitions: seconds, rough\nfigures, not saved"),
    CLI_UNFLAG("no-sweep", struct devices_args, sweep,
               "skip the working-set sweep (no cache figure)"),
    CLI_VALUE("repetitions", "N", 1, "timed runs per figure (default 7)"),
};

/* --repetitions; 0, or CLI_EXIT_USAGE. */
static int set_option(void *state, const cli_option *option, const char *v)
{
    struct devices_args *a = state;
    size_t n;
    if (cli_parse_size(v, &n) || n < 1 || n > 101)
        return cli_usage_error(CMD, "bad --repetitions '%.40s' (1 .. 101)", v);
    a->repetitions = (uint32_t)n;
    return 0;
}

static const cli_command devices_command = {
    CMD, CLI_DEVICE | CLI_JSON, own_options, CLI_COUNT(own_options), set_option, usage, NULL,
};

int devices_parse_args(int argc, char **argv, struct devices_args *a)
{
    memset(a, 0, sizeof *a);
    a->sweep = 1;
    a->repetitions = 7;
    cli_call call;
    int rc = cli_parse_command(&devices_command, argc, argv, &call, a);
    if (rc)
        return rc;
    a->device = call.device;
    a->json = call.json;
    cli_call_free(&call);
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
