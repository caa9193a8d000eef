/* SPDX-License-Identifier: MIT */
/* clattn devices: the text listing and the measurement report. Each figure
 * names its source: reported, vendor attribute, measured or table. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "devices.h"

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

static const char *yes_no(int v)
{
    return v ? "yes" : "no";
}

/* The fp16 probe's failure: its first lines, indented under the row. */
static void print_probe_log(const char *log)
{
    enum { MAX_LINES = 8 };
    printf("    fp16 probe build:\n");
    int lines = 0;
    for (const char *s = log; *s && lines < MAX_LINES; lines++) {
        const char *nl = strchr(s, '\n');
        int len = nl ? (int)(nl - s) : (int)strlen(s);
        if (len > 0)
            printf("      %.*s\n", len > 160 ? 160 : len, s);
        else
            lines--;
        s = nl ? nl + 1 : s + len;
    }
}

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
        p->fp16_builds < 0 ? "not tried (no cl_khr_fp16)" : p->fp16_builds ? "builds"
                                                                           : "does not build",
        "measured (probe build)");
    if (p->fp16_builds == 0 && p->fp16_probe_log[0])
        print_probe_log(p->fp16_probe_log);
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
    clattn_measurement_init(m);
    if (m && clattn_measure_path(dev, path, sizeof path) == 0) {
        if (clattn_measure_load(dev, m) == 0)
            printf("    measured %s%s: %s\n", m->quick ? "(quick) " : "", "and saved in", path);
        else
            printf("    no saved measurement (clattn devices --measure writes %s)\n", path);
    }
    free(m);
}

/* Every kernel of the table, for fp16 and fp32 at d = 128: the one each
 * path would run, and why each other kernel does not (building the probes
 * this needs). */
static void print_kernels_text(size_t index)
{
    char sel[32], fused[64], naive[64], why[160], buf[256];
    clattn_ctx *ctx = NULL;
    snprintf(sel, sizeof sel, "%zu", index);
    if (clattn_open(&ctx, sel) < 0)
        return;
    static const clattn_dtype dtypes[] = { CLATTN_F16, CLATTN_F32 };
    printf("  kernels (d=128; probe builds where a kernel needs one):\n");
    for (size_t i = 0; i < 2; i++) {
        clattn_shape s = devices_kernel_shape(dtypes[i]);
        char label[48];
        snprintf(label, sizeof label, "%s runs", cli_dtype_name(dtypes[i]));
        if (clattn_describe_kernels(ctx, &s, NULL, fused, sizeof fused, naive, sizeof naive) == 0) {
            snprintf(buf, sizeof buf, "%s, %s", fused, naive);
            row(label, buf, "probed");
        }
    }
    clattn_kernel_info k;
    for (size_t i = 0; clattn_fused_kernel_info(i, &k) == 0; i++) {
        char why32[160] = "";
        clattn_shape s16 = devices_kernel_shape(CLATTN_F16), s32 = devices_kernel_shape(CLATTN_F32);
        int ok16 = clattn_fused_kernel_usable(ctx, k.id, &s16, why, sizeof why);
        int ok32 = clattn_fused_kernel_usable(ctx, k.id, &s32, why32, sizeof why32);
        if (ok16 == 1 && ok32 == 1)
            snprintf(buf, sizeof buf, "usable (fp16, fp32)");
        else if (ok16 != 1 && ok32 != 1 && !strcmp(why, why32))
            snprintf(buf, sizeof buf, "no: %.200s", why);
        else if (ok16 == 1)
            snprintf(buf, sizeof buf, "fp16 only (fp32: %.160s)", why32);
        else if (ok32 == 1)
            snprintf(buf, sizeof buf, "fp32 only (fp16: %.160s)", why);
        else
            snprintf(buf, sizeof buf, "no: fp16 %.100s; fp32 %.100s", why, why32);
        char label[48];
        snprintf(label, sizeof label, "fused/%s", k.name);
        row(label, buf, "table");
    }
    clattn_close(&ctx);
}

void devices_print_text(size_t index, const clattn_device_props *p, const clattn_ceilings *c,
                        cl_device_id dev)
{
    printf("[%zu] %s (%s)\n", index, p->name, devices_type_name(p->type));
    print_props_text(p);
    print_kernels_text(index);
    print_ceilings_text(c, dev);
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

void devices_print_measurement_text(const clattn_measurement *m, const clattn_ceilings *before,
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
    if (m->flops_wgmma_f16.samples)
        measured_row("fp16 tensor (wgmma)", &m->flops_wgmma_f16, 'f', NULL,
                     "m64n128k16 from shared memory, PTX binary: the Hopper roof");
    else if (m->wgmma_status)
        printf("  %-20s failed: %s (%s)\n", "fp16 tensor (wgmma)",
               clattn_error_name(m->wgmma_status), m->wgmma_error);
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

