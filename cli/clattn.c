/* SPDX-License-Identifier: MIT */
/* clattn: command-line front end of the library. Dispatches to a subcommand. */
#include <stdio.h>
#include <string.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "cli.h"
#include "commands.h"

/* The tool's version is the library's it was built with (version.h). */
#define CLATTN_STR2(x) #x
#define CLATTN_STR(x) CLATTN_STR2(x)
#define CLATTN_TOOL_VERSION                                                             \
    CLATTN_STR(CLATTN_VERSION_MAJOR) "." CLATTN_STR(CLATTN_VERSION_MINOR) "."          \
        CLATTN_STR(CLATTN_VERSION_PATCH)

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
    fprintf(f, "Usage: clattn COMMAND [OPTIONS]\n"
               "  or:  clattn --help | --version\n"
               "\n"
               "Attention, O = softmax(scale Q K^T) V, on any OpenCL device: the naive path\n"
               "(scores in device memory) and the fused one, with the byte model beside\n"
               "them. clattn COMMAND --help lists a command's options.\n"
               "\n"
               "Commands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\n"
               "Options:\n"
               "  -h, --help     this text\n"
               "  -V, --version  the version of the tool, the library and its API\n"
               "\n"
               "Every command takes --device SEL (an index from clattn devices, or a\n"
               "case-insensitive substring of \"platform: device\"); default: the largest\n"
               "GPU, else the CPU. Outputs (--out, --json FILE, --csv FILE) are written\n"
               "whole or not at all; \"-\" is stdout.\n"
               "\n"
               "Environment:\n"
               "  CLATTN_DEVICE         the default device selector\n"
               "  CLATTN_KERNEL_DIR     load the kernels from this folder instead of the\n"
               "                        copies embedded in the library\n"
               "  CLATTN_BUILD_OPTIONS  extra OpenCL build options\n"
               "  CLATTN_BUILD_LOG_DIR  keep every kernel build's options and log there\n"
               "  XDG_CACHE_HOME        where measured ceilings and tuned tiles are kept\n"
               "                        ($XDG_CACHE_HOME/clattn, else ~/.cache/clattn)\n"
               "\n"
               "Exit status:\n"
               "  0  ok\n"
               "  1  failure: a run, a check, a device or a file failed\n"
               "  2  usage error: the command line is wrong (one line on stderr)\n");
}

static void version(void)
{
    const unsigned api = clattn_api_version();
    printf("clattn %s\n"
           "library %s, API %u.%u (built against API %u.%u)\n",
           CLATTN_TOOL_VERSION, clattn_version(), CLATTN_API_MAJOR_OF(api),
           CLATTN_API_MINOR_OF(api), CLATTN_API_VERSION_MAJOR, CLATTN_API_VERSION_MINOR);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        cli_error("no command (see clattn --help)");
        return CLI_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
        usage(stdout);
        return CLI_EXIT_OK;
    }
    if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
        version();
        return CLI_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name))
            return commands[i].fn(argc - 1, argv + 1);
    cli_error("unknown command '%s' (see clattn --help)", argv[1]);
    return CLI_EXIT_USAGE;
}
