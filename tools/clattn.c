/* SPDX-License-Identifier: MIT */
/* clattn: command-line front end of the library. Dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "commands.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
    const char *summary;
} commands[] = {
    { "devices", cmd_devices, "list OpenCL devices (--measure: bandwidth, FLOP/s, cache)" },
    { "predict", cmd_predict, "the byte model: traffic, fit limits, intensity, causal blocks" },
    { "run", cmd_run, "attention on .npy files" },
    { "verify", cmd_verify, "naive and fused paths against the CPU reference" },
    { "bench", cmd_bench, "naive vs fused, predicted vs measured" },
    { "tune", cmd_tune, "time the fused kernel's tiles and keep the fastest per device" },
};

static void usage(FILE *f)
{
    fprintf(f, "usage: clattn <command> [options]   (clattn <command> --help)\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\nThe device is chosen by --device SEL or $CLATTN_DEVICE "
               "(an index or a name substring); default: the largest GPU, else the CPU.\n");
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("clattn %s\n", clattn_version());
        return 0;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    fprintf(stderr, "clattn: error: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
