/* SPDX-License-Identifier: MIT */
/* clattn devices: every OpenCL device with what it reports, the kernels it
 * runs, the ceilings the model would use, and (--measure) ceilings measured
 * on one device. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "devices.h"
#include "outfile.h"

#define MAX_DEVICES 64

/* Prints one device; returns 0 or a library error code. The probe builds
 * (the fp16 probe, the kernels' probes) run with stderr kept aside: a
 * compiler that rejects one prints its summary there (PoCL), while the
 * listing shows the build log the library captured. */
static int print_device(size_t index, const clattn_device_entry *e, struct json *j)
{
    clattn_device_props p;
    clattn_ceilings c;
    const int quiet = cli_quiet_begin() == 0;
    int rc = clattn_device_query(e->device, &p);
    if (rc == 0)
        rc = clattn_device_ceilings_cl(e->device, &c);
    if (rc == 0 && j)
        devices_print_json(j, index, &p, &c, e->device);
    else if (rc == 0)
        devices_print_text(index, &p, &c, e->device);
    fflush(stdout);
    const long chatter = quiet ? cli_quiet_end() : 0;
    if (rc) {
        cli_lib_error(e->name, rc);
        return rc;
    }
    if (!j && chatter > 0)
        printf("    (the OpenCL compiler wrote %ld bytes on stderr during the probe builds;\n"
               "     kept off the terminal: the build logs above say what failed, and\n"
               "     $CLATTN_BUILD_LOG_DIR keeps every build's log)\n", chatter);
    return 0;
}

/* The device `selector` opens, or NULL with the error printed. */
static cl_device_id selected_device(const char *selector)
{
    clattn_ctx *ctx = NULL;
    if (cli_open(selector, &ctx))
        return NULL;
    cl_device_id dev = clattn_cl_device(ctx);
    clattn_close(&ctx);
    return dev;
}

static int list_devices(const struct devices_args *a)
{
    clattn_device_entry entries[MAX_DEVICES];
    size_t count = 0;
    int rc = clattn_list_devices(entries, MAX_DEVICES, &count);
    if (rc) {
        cli_lib_error("no OpenCL device", rc);
        return 1;
    }
    if (count > MAX_DEVICES)
        count = MAX_DEVICES;
    cl_device_id only = NULL;
    if (a->device && !(only = selected_device(a->device)))
        return 1;
    struct json j;
    outfile jf;
    if (a->json && cli_output_open(a->json, &jf))
        return 1;
    if (a->json) {
        json_begin_document(&j, jf.stream, "devices");
        json_open(&j, "devices", '[');
    }
    cl_platform_id shown = NULL;
    int failed = 0;
    for (size_t i = 0; i < count; i++) {
        if (only && entries[i].device != only)
            continue;
        if (!a->json && entries[i].platform != shown) {
            char name[128] = "", version[256] = "";
            clGetPlatformInfo(entries[i].platform, CL_PLATFORM_NAME, sizeof name, name, NULL);
            clGetPlatformInfo(entries[i].platform, CL_PLATFORM_VERSION, sizeof version, version,
                              NULL);
            printf("%sPlatform: %s (%s)\n", shown ? "\n" : "", name, version);
            shown = entries[i].platform;
        } else if (!a->json) {
            printf("\n");
        }
        failed |= print_device(i, &entries[i], a->json ? &j : NULL) != 0;
    }
    if (a->json) {
        json_close(&j, ']');
        json_end_document(&j);
        failed |= cli_output_commit(&jf);
    }
    return failed;
}

/* ------------------------------------------------------------- measuring */

struct progress_state {
    double start;
    int shown, tty;
};

/* Progress on stderr once measuring has taken more than a second. */
static void on_progress(void *user, const char *stage, double fraction)
{
    struct progress_state *s = user;
    if (cli_now() - s->start < 1.0)
        return;
    if (s->tty)
        fprintf(stderr, "\r\033[Kmeasuring: %3.0f%% %s", 100.0 * fraction, stage);
    else
        fprintf(stderr, "measuring: %3.0f%% %s\n", 100.0 * fraction, stage);
    s->shown = 1;
}

static int measure_device(const struct devices_args *a)
{
    clattn_ctx *ctx = NULL;
    if (cli_open(a->device, &ctx))
        return 1;
    int status = 1;
    clattn_measurement *m = malloc(sizeof *m);
    clattn_ceilings before;
    char path[4096];
    if (!m) {
        cli_error("devices: out of memory");
        goto close;
    }
    clattn_measurement_init(m);
    /* The prediction to compare with: what the model knew before measuring. */
    int rc = clattn_device_ceilings(ctx, &before);
    if (rc == 0)
        rc = clattn_measure_path(clattn_cl_device(ctx), path, sizeof path);
    if (rc) {
        cli_lib_error("devices", rc);
        goto close;
    }
    struct progress_state progress = { cli_now(), 0, isatty(STDERR_FILENO) };
    clattn_measure_options opts;
    clattn_default_measure_options(&opts);
    opts.quick = a->quick;
    opts.sweep = a->sweep;
    opts.repetitions = a->repetitions;
    opts.progress = on_progress;
    opts.progress_user = &progress;
    fprintf(stderr, "measuring %s ...\n", clattn_device_name(ctx));
    rc = clattn_measure(ctx, &opts, m);
    if (progress.shown && progress.tty)
        fprintf(stderr, "\n");
    if (rc) {
        cli_lib_error("measuring failed", rc);
        goto close;
    }
    /* A quick measurement must not replace a full one. */
    if (!m->quick && (rc = clattn_measure_save(m))) {
        cli_lib_error("saving the measurement", rc);
        goto close;
    }
    outfile jf;
    if (a->json) {
        if (cli_output_open(a->json, &jf))
            goto close;
        struct json j;
        json_begin_document(&j, jf.stream, "devices --measure");
        devices_print_measurement_json(&j, m, &before, path);
        json_end_document(&j);
        if (cli_output_commit(&jf))
            goto close;
    } else {
        devices_print_measurement_text(m, &before, path);
    }
    status = 0;
close:
    free(m);
    clattn_close(&ctx);
    return status;
}

int cmd_devices(int argc, char **argv)
{
    struct devices_args a;
    int rc = devices_parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    return a.measure ? measure_device(&a) : list_devices(&a);
}
