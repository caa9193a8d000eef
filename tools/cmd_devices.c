/* clattn devices: every OpenCL device with what it reports, the ceilings the
 * model would use, and (--measure) ceilings measured on one device. Each
 * figure names its source: reported, vendor attribute, measured or table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"

#define MAX_DEVICES 64

struct devices_args {
    const char *device; /* --device SEL, NULL for all (listing) / default (measure) */
    int json, measure, quick, sweep;
    uint32_t repetitions;
};

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

static int parse_args(int argc, char **argv, struct devices_args *a)
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

/* ---------------------------------------------------------------- format */

/* Decimal SI: "4.28 TB/s", "52.1 TFLOP/s". */
static void fmt_si(double v, const char *unit, char *buf, size_t cap)
{
    static const char *prefix[] = { "", "k", "M", "G", "T", "P" };
    size_t p = 0;
    while (v >= 1000.0 && p + 1 < sizeof prefix / sizeof prefix[0]) {
        v /= 1000.0;
        p++;
    }
    snprintf(buf, cap, "%.3g %s%s", v, prefix[p], unit);
}

static void fmt_seconds(double s, char *buf, size_t cap)
{
    if (s < 1e-3)
        snprintf(buf, cap, "%.3g us", s * 1e6);
    else if (s < 1.0)
        snprintf(buf, cap, "%.3g ms", s * 1e3);
    else
        snprintf(buf, cap, "%.3g s", s);
}

static void fmt_bytes(double bytes, char *buf, size_t cap)
{
    cli_fmt_bytes((uint64_t)(bytes + 0.5), buf, cap);
}

/* A figure in its unit: kind 'b' bytes, 'r' bytes/s, 'f' FLOP/s, 's' seconds. */
static void fmt_figure(double v, char kind, char *buf, size_t cap)
{
    switch (kind) {
    case 'b': fmt_bytes(v, buf, cap); break;
    case 'r': fmt_si(v, "B/s", buf, cap); break;
    case 'f': fmt_si(v, "FLOP/s", buf, cap); break;
    default: fmt_seconds(v, buf, cap); break;
    }
}

static void row(const char *label, const char *value, const char *source)
{
    printf("    %-22s %-44s %s\n", label, value, source);
}

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void json_figure(const char *key, double value, const char *source)
{
    printf("\"%s\": {\"value\": %.17g, \"source\": \"%s\"}", key, value, source);
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "GPU";
    if (t & CL_DEVICE_TYPE_CPU)
        return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "accelerator";
    return "other";
}

static const char *yes_no(int v)
{
    return v ? "yes" : "no";
}

/* --------------------------------------------------------------- listing */

static void print_props_text(const clattn_device_props *p)
{
    char buf[160], a[48], b[48];
    const char *rep = "reported", *ven = "vendor attribute";
    row("vendor", p->vendor, rep);
    row("driver", p->driver_version, rep);
    row("OpenCL", p->version, rep);
    row("OpenCL C", p->opencl_c_version, rep);
    snprintf(buf, sizeof buf, "%" PRIu32, p->compute_units);
    row("compute units", buf, rep);
    snprintf(buf, sizeof buf, "%" PRIu32 " MHz", p->clock_mhz);
    row("clock", buf, rep);
    fmt_bytes((double)p->global_mem_bytes, buf, sizeof buf);
    row("global memory", buf, rep);
    fmt_bytes((double)p->max_alloc_bytes, buf, sizeof buf);
    row("max allocation", buf, rep);
    fmt_bytes((double)p->local_mem_bytes, buf, sizeof buf);
    row("local memory", buf, rep);
    fmt_bytes((double)p->global_cache_bytes, a, sizeof a);
    snprintf(buf, sizeof buf, "%s, %" PRIu32 " B lines%s", a, p->global_cache_line_bytes,
             p->global_cache_is_l1 ? " (NVIDIA: SMs x L1, not the L2)" : "");
    row("global cache", buf, rep);
    snprintf(buf, sizeof buf, "%zu", p->max_work_group_size);
    row("max work-group", buf, rep);
    row("fp16: cl_khr_fp16", yes_no(p->fp16_advertised), rep);
    row("fp16: half arithmetic",
        p->fp16_builds < 0 ? "not tried" : p->fp16_builds ? "builds" : "does not build",
        "measured (probe build)");
    snprintf(buf, sizeof buf, "cl_khr_subgroups %s, cl_intel_subgroups %s, max %" PRIu32,
             yes_no(p->subgroups_khr), yes_no(p->subgroups_intel), p->max_sub_groups);
    row("sub-groups", buf, rep);
    if (p->nv.present) {
        snprintf(buf, sizeof buf, "%" PRIu32 ".%" PRIu32, p->nv.cc_major, p->nv.cc_minor);
        row("compute capability", buf, ven);
        snprintf(buf, sizeof buf, "%" PRIu32, p->nv.registers_per_block);
        row("registers per block", buf, ven);
        snprintf(buf, sizeof buf, "%" PRIu32, p->nv.warp_size);
        row("warp size", buf, ven);
        if (p->nv.shared_mem_per_sm) {
            fmt_bytes((double)p->nv.shared_mem_per_sm, buf, sizeof buf);
            row("shared memory per SM", buf, ven);
        }
    }
    if (p->amd.present) {
        row("board name", p->amd.board_name[0] ? p->amd.board_name : "(no answer)", ven);
        snprintf(buf, sizeof buf, "%" PRIu32, p->amd.wavefront_width);
        row("wavefront width", buf, ven);
        fmt_bytes((double)p->amd.free_mem_bytes, buf, sizeof buf);
        row("free memory", buf, ven);
    }
    if (p->intel.present) {
        snprintf(a, sizeof a, "%" PRIu32 " x %" PRIu32, p->intel.slices,
                 p->intel.sub_slices_per_slice);
        snprintf(b, sizeof b, "%" PRIu32, p->intel.eus_per_sub_slice);
        snprintf(buf, sizeof buf, "%s sub-slices, %s EUs each, %" PRIu32 " threads per EU", a,
                 b, p->intel.threads_per_eu);
        row("EUs", buf, ven);
    }
}

static void print_ceilings_text(const clattn_ceilings *c, cl_device_id dev)
{
    const struct {
        const char *label;
        const clattn_figure *f;
        char kind;
    } rows[] = {
        { "last-level cache", &c->cache_bytes, 'b' },
        { "bandwidth", &c->bandwidth, 'r' },
        { "fp32 FLOP/s", &c->flops_f32, 'f' },
        { "fp16 FLOP/s", &c->flops_f16, 'f' },
        { "launch latency", &c->launch_latency_s, 's' },
    };
    char buf[160];
    printf("  ceilings for the model:\n");
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        if (rows[i].f->source == CLATTN_SRC_NONE)
            snprintf(buf, sizeof buf, "unknown");
        else
            fmt_figure(rows[i].f->value, rows[i].kind, buf, sizeof buf);
        row(rows[i].label, buf, clattn_source_name(rows[i].f->source));
    }
    char path[4096];
    clattn_measurement *m = malloc(sizeof *m);
    if (m && clattn_measure_path(dev, path, sizeof path) == 0) {
        if (clattn_measure_load(dev, m) == 0)
            printf("    measured %s%s: %s\n", m->quick ? "(quick) " : "", "and saved in", path);
        else
            printf("    no saved measurement (clattn devices --measure writes %s)\n", path);
    }
    free(m);
}

static void print_props_json(const clattn_device_props *p)
{
    const char *rep = "reported", *ven = "vendor attribute";
    printf("\"name\": ");
    json_string(p->name);
    printf(", \"type\": \"%s\", \"vendor\": ", type_name(p->type));
    json_string(p->vendor);
    printf(", \"driver_version\": ");
    json_string(p->driver_version);
    printf(", \"version\": ");
    json_string(p->version);
    printf(", \"opencl_c_version\": ");
    json_string(p->opencl_c_version);
    printf(", \"platform\": ");
    json_string(p->platform_name);
    printf(", \"platform_version\": ");
    json_string(p->platform_version);
    printf(",\n     ");
    json_figure("compute_units", p->compute_units, rep);
    printf(", ");
    json_figure("clock_mhz", p->clock_mhz, rep);
    printf(", ");
    json_figure("global_mem_bytes", (double)p->global_mem_bytes, rep);
    printf(",\n     ");
    json_figure("max_alloc_bytes", (double)p->max_alloc_bytes, rep);
    printf(", ");
    json_figure("local_mem_bytes", (double)p->local_mem_bytes, rep);
    printf(",\n     ");
    json_figure("global_cache_bytes", (double)p->global_cache_bytes, rep);
    printf(", \"global_cache_is_l1\": %s, ", p->global_cache_is_l1 ? "true" : "false");
    json_figure("global_cache_line_bytes", p->global_cache_line_bytes, rep);
    printf(",\n     ");
    json_figure("max_work_group_size", (double)p->max_work_group_size, rep);
    printf(",\n     \"fp16\": {\"cl_khr_fp16\": %s, \"half_arithmetic_builds\": %s}",
           p->fp16_advertised ? "true" : "false",
           p->fp16_builds < 0 ? "null" : p->fp16_builds ? "true" : "false");
    printf(",\n     \"sub_groups\": {\"cl_khr_subgroups\": %s, \"cl_intel_subgroups\": %s, ",
           p->subgroups_khr ? "true" : "false", p->subgroups_intel ? "true" : "false");
    json_figure("max_num_sub_groups", p->max_sub_groups, rep);
    printf("}");
    if (p->nv.present) {
        printf(",\n     \"nv\": {");
        json_figure("compute_capability_major", p->nv.cc_major, ven);
        printf(", ");
        json_figure("compute_capability_minor", p->nv.cc_minor, ven);
        printf(", ");
        json_figure("registers_per_block", p->nv.registers_per_block, ven);
        printf(", ");
        json_figure("warp_size", p->nv.warp_size, ven);
        if (p->nv.shared_mem_per_sm) {
            printf(", ");
            json_figure("shared_mem_per_sm", (double)p->nv.shared_mem_per_sm, ven);
        }
        printf("}");
    }
    if (p->amd.present) {
        printf(",\n     \"amd\": {\"board_name\": ");
        json_string(p->amd.board_name);
        printf(", ");
        json_figure("wavefront_width", p->amd.wavefront_width, ven);
        printf(", ");
        json_figure("free_mem_bytes", (double)p->amd.free_mem_bytes, ven);
        printf("}");
    }
    if (p->intel.present) {
        printf(",\n     \"intel\": {");
        json_figure("slices", p->intel.slices, ven);
        printf(", ");
        json_figure("sub_slices_per_slice", p->intel.sub_slices_per_slice, ven);
        printf(", ");
        json_figure("eus_per_sub_slice", p->intel.eus_per_sub_slice, ven);
        printf(", ");
        json_figure("threads_per_eu", p->intel.threads_per_eu, ven);
        printf("}");
    }
}

static void print_ceilings_json(const clattn_ceilings *c)
{
    printf(",\n     \"ceilings\": {");
    const struct {
        const char *key;
        const clattn_figure *f;
    } rows[] = {
        { "global_mem_bytes", &c->global_mem_bytes }, { "max_alloc_bytes", &c->max_alloc_bytes },
        { "cache_bytes", &c->cache_bytes },           { "bandwidth", &c->bandwidth },
        { "flops_f32", &c->flops_f32 },               { "flops_f16", &c->flops_f16 },
        { "launch_latency_s", &c->launch_latency_s },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        printf("%s", i ? ", " : "");
        if (rows[i].f->source == CLATTN_SRC_NONE)
            printf("\"%s\": {\"value\": null, \"source\": \"unknown\"}", rows[i].key);
        else
            json_figure(rows[i].key, rows[i].f->value, clattn_source_name(rows[i].f->source));
    }
    printf("}");
}

/* Prints one device; returns 0 or a library error code. */
/* Which kernels each path would run here (building the probes they need):
 * the tensor-core kernels appear only where the device takes them. */
static void print_kernels_text(size_t index)
{
    char sel[32], fused[64], naive[64];
    clattn_ctx *ctx = NULL;
    snprintf(sel, sizeof sel, "%zu", index);
    if (clattn_open(&ctx, sel) < 0)
        return;
    static const clattn_dtype dtypes[] = { CLATTN_F16, CLATTN_F32 };
    for (size_t i = 0; i < 2; i++) {
        clattn_shape s = { 1, 1, 1, 4096, 4096, 128, dtypes[i] };
        char label[48];
        snprintf(label, sizeof label, "kernels, %s d=128", dtypes[i] == CLATTN_F16 ? "fp16" : "fp32");
        if (clattn_describe_kernels(ctx, &s, NULL, fused, sizeof fused, naive, sizeof naive) == 0) {
            char both[140];
            snprintf(both, sizeof both, "%s, %s", fused, naive);
            row(label, both, "probed");
        }
    }
    clattn_close(&ctx);
}

static int print_device(size_t index, const clattn_device_entry *e, int json, int first)
{
    clattn_device_props p;
    clattn_ceilings c;
    int rc = clattn_device_query(e->device, &p);
    if (rc == 0)
        rc = clattn_device_ceilings_cl(e->device, &c);
    if (rc) {
        cli_lib_error(e->name, rc);
        return rc;
    }
    if (json) {
        printf("%s    {\"index\": %zu, ", first ? "" : ",\n", index);
        print_props_json(&p);
        print_ceilings_json(&c);
        char path[4096];
        if (clattn_measure_path(e->device, path, sizeof path) == 0) {
            printf(",\n     \"measurement_file\": ");
            json_string(path);
        }
        printf("}");
        return 0;
    }
    printf("[%zu] %s (%s)\n", index, p.name, type_name(p.type));
    print_props_text(&p);
    print_kernels_text(index);
    print_ceilings_text(&c, e->device);
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
    if (a->json)
        printf("{\"devices\": [\n");
    cl_platform_id shown = NULL;
    int failed = 0, first = 1;
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
        failed |= print_device(i, &entries[i], a->json, first) != 0;
        first = 0;
    }
    if (a->json)
        printf("\n]}\n");
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

/* "median (min-max, N runs)" in the figure's unit. */
static void fmt_stat(const clattn_stat *s, char kind, char *buf, size_t cap)
{
    char med[32], lo[32], hi[32];
    fmt_figure(s->median, kind, med, sizeof med);
    fmt_figure(s->min, kind, lo, sizeof lo);
    fmt_figure(s->max, kind, hi, sizeof hi);
    snprintf(buf, cap, "%s (%s - %s, %" PRIu32 " runs)", med, lo, hi, s->samples);
}

/* How a figure known before measuring is named beside the new one. */
static const char *before_name(clattn_source src)
{
    return src == CLATTN_SRC_MEASURED ? "previously measured" : clattn_source_name(src);
}

/* Measured figure beside the prediction (table or reported) and their ratio. */
static void measured_row(const char *label, const clattn_stat *s, char kind,
                         const clattn_figure *predicted, const char *note)
{
    char buf[160], pred[64];
    if (!s->samples) {
        printf("  %-20s %-52s %s\n", label, "n/a", note ? note : "");
        return;
    }
    fmt_stat(s, kind, buf, sizeof buf);
    printf("  %-20s %-52s measured", label, buf);
    if (predicted && predicted->source != CLATTN_SRC_NONE && predicted->value > 0) {
        fmt_figure(predicted->value, kind, pred, sizeof pred);
        printf("; %s %s, ratio %.2f", before_name(predicted->source), pred,
               s->median / predicted->value);
    }
    printf("%s%s\n", note ? "; " : "", note ? note : "");
}

static void print_measurement_text(const clattn_measurement *m, const clattn_ceilings *before,
                                   const char *path)
{
    char buf[160], a[32], b[32];
    printf("Measured %s (driver %s)%s\n", m->device_name, m->driver_version,
           m->quick ? ", quick: rough figures" : "");
    fmt_bytes((double)m->bandwidth_buffer_bytes, a, sizeof a);
    snprintf(buf, sizeof buf, "bandwidth (%s)", a);
    measured_row(buf, &m->bandwidth, 'r', &before->bandwidth, "float4 copy, read + write");
    measured_row("fp32 FMA", &m->flops_f32, 'f', &before->flops_f32, NULL);
    measured_row("fp16 FMA (half2)", &m->flops_f16, 'f',
                 before->flops_f16.source == CLATTN_SRC_TABLE ? NULL : &before->flops_f16,
                 m->flops_f16.samples ? (before->flops_f16.source == CLATTN_SRC_TABLE
                                             ? "vector units; the table's figure is matrix units"
                                             : NULL)
                                      : "half arithmetic does not build");
    if (m->flops_tensor_f16.samples)
        measured_row("fp16 tensor (mma.sync)", &m->flops_tensor_f16, 'f', &before->flops_f16,
                     "m16n8k16, fp32 accumulate: the tensor-core kernels' roof");
    measured_row("launch, queued", &m->launch_latency_s, 's', NULL, "per empty kernel");
    measured_row("launch, round trip", &m->launch_roundtrip_s, 's', NULL,
                 "one empty kernel + clFinish");
    if (m->n_sweep) {
        printf("  working-set sweep (read bandwidth vs footprint, measured):\n");
        for (uint32_t i = 0; i < m->n_sweep; i++) {
            fmt_bytes((double)m->sweep[i].footprint_bytes, a, sizeof a);
            fmt_stat(&m->sweep[i].bandwidth, 'r', buf, sizeof buf);
            printf("    %12s  %s\n", a, buf);
        }
        fmt_si(m->sweep_plateau, "B/s", a, sizeof a);
        fmt_si(m->sweep_floor, "B/s", b, sizeof b);
        if (m->cache_bytes) {
            fmt_bytes((double)m->cache_bytes, buf, sizeof buf);
            printf("  %-20s %-52s measured", "last-level cache", buf);
            if (before->cache_bytes.source != CLATTN_SRC_NONE) {
                char pred[32];
                fmt_bytes(before->cache_bytes.value, pred, sizeof pred);
                printf("; %s %s, ratio %.2f", before_name(before->cache_bytes.source),
                       pred, (double)m->cache_bytes / before->cache_bytes.value);
            }
            printf("\n  %-20s halfway (geometric) between plateau %s and floor %s\n", "", a, b);
        } else {
            printf("  %-20s not located (no fall to a floor within the sweep)\n",
                   "last-level cache");
        }
    }
    if (m->quick)
        printf("  took %.1f s; not saved (--quick)\n", m->seconds);
    else
        printf("  took %.1f s; saved to %s\n", m->seconds, path);
}

static void json_stat(const char *key, const clattn_stat *s)
{
    if (!s->samples) {
        printf("\"%s\": null", key);
        return;
    }
    printf("\"%s\": {\"median\": %.6g, \"min\": %.6g, \"max\": %.6g, \"samples\": %" PRIu32
           ", \"source\": \"measured\"}",
           key, s->median, s->min, s->max, s->samples);
}

static void print_measurement_json(const clattn_measurement *m, const clattn_ceilings *before,
                                   const char *path)
{
    printf("{\"device\": ");
    json_string(m->device_name);
    printf(", \"driver_version\": ");
    json_string(m->driver_version);
    printf(", \"platform_version\": ");
    json_string(m->platform_version);
    printf(", \"quick\": %s, \"seconds\": %.3f,\n \"bandwidth_buffer_bytes\": %" PRIu64 ",\n ",
           m->quick ? "true" : "false", m->seconds, m->bandwidth_buffer_bytes);
    json_stat("bandwidth", &m->bandwidth);
    printf(",\n ");
    json_stat("flops_f32", &m->flops_f32);
    printf(",\n ");
    json_stat("flops_f16", &m->flops_f16);
    printf(",\n ");
    json_stat("flops_tensor_f16", &m->flops_tensor_f16);
    printf(",\n ");
    json_stat("launch_latency_s", &m->launch_latency_s);
    printf(",\n ");
    json_stat("launch_roundtrip_s", &m->launch_roundtrip_s);
    printf(",\n \"sweep\": [");
    for (uint32_t i = 0; i < m->n_sweep; i++) {
        printf("%s\n  {\"footprint_bytes\": %" PRIu64 ", ", i ? "," : "",
               m->sweep[i].footprint_bytes);
        json_stat("bandwidth", &m->sweep[i].bandwidth);
        printf("}");
    }
    printf("],\n \"sweep_plateau\": %.6g, \"sweep_floor\": %.6g, ", m->sweep_plateau,
           m->sweep_floor);
    if (m->cache_bytes)
        json_figure("cache_bytes", (double)m->cache_bytes, "measured");
    else
        printf("\"cache_bytes\": null");
    printf(",\n \"predicted\": {");
    const struct {
        const char *key;
        const clattn_figure *f;
    } rows[] = {
        { "cache_bytes", &before->cache_bytes },     { "bandwidth", &before->bandwidth },
        { "flops_f32", &before->flops_f32 },         { "flops_f16", &before->flops_f16 },
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        printf("%s", i ? ", " : "");
        if (rows[i].f->source == CLATTN_SRC_NONE)
            printf("\"%s\": null", rows[i].key);
        else
            json_figure(rows[i].key, rows[i].f->value, clattn_source_name(rows[i].f->source));
    }
    printf("},\n \"saved_to\": ");
    if (m->quick)
        printf("null");
    else
        json_string(path);
    printf("}\n");
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
    if (a->json)
        print_measurement_json(m, &before, path);
    else
        print_measurement_text(m, &before, path);
    status = 0;
close:
    free(m);
    clattn_close(&ctx);
    return status;
}

int cmd_devices(int argc, char **argv)
{
    struct devices_args a;
    int rc = parse_args(argc, argv, &a);
    if (rc)
        return rc == 1 ? 0 : rc;
    return a.measure ? measure_device(&a) : list_devices(&a);
}
