/* SPDX-License-Identifier: MIT */
/* The saved measurement's text: key=value lines, formatted and parsed with
 * every value checked. No OpenCL, so that tests/fuzz/fuzz_cache.c can drive
 * it alone. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "measure/file_text.h"

static void write_stat(FILE *f, const char *key, const clattn_stat *s)
{
    fprintf(f, "%s=%.17g %.17g %.17g %u\n", key, s->median, s->min, s->max, s->samples);
}

void measurement_format(FILE *f, const clattn_measurement *m)
{
    fprintf(f, "# clattn device measurement (clattn devices --measure)\n"
               "# stats: median min max samples; bandwidth in bytes/s\n"
               "format=1\n");
    fprintf(f, "device_name=%s\ndriver_version=%s\nplatform_version=%s\n", m->device_name,
            m->driver_version, m->platform_version);
    fprintf(f, "unix_time=%lld\nquick=%d\nseconds=%.17g\n", (long long)m->unix_time, m->quick,
            m->seconds);
    fprintf(f, "bandwidth_buffer_bytes=%llu\n", (unsigned long long)m->bandwidth_buffer_bytes);
    write_stat(f, "bandwidth", &m->bandwidth);
    write_stat(f, "flops_f32", &m->flops_f32);
    write_stat(f, "flops_f16", &m->flops_f16);
    write_stat(f, "flops_tensor_f16", &m->flops_tensor_f16);
    write_stat(f, "flops_wgmma_f16", &m->flops_wgmma_f16);
    fprintf(f, "wgmma_status=%d\n", m->wgmma_status);
    write_stat(f, "launch_latency_s", &m->launch_latency_s);
    write_stat(f, "launch_roundtrip_s", &m->launch_roundtrip_s);
    fprintf(f, "sweep_plateau=%.17g\nsweep_floor=%.17g\ncache_bytes=%llu\n", m->sweep_plateau,
            m->sweep_floor, (unsigned long long)m->cache_bytes);
    /* One line per point: footprint, then the read bandwidth's stat. */
    for (uint32_t i = 0; i < m->n_sweep && i < CLATTN_SWEEP_MAX; i++) {
        const clattn_stat *s = &m->sweep[i].bandwidth;
        fprintf(f, "sweep=%llu %.17g %.17g %.17g %u\n",
                (unsigned long long)m->sweep[i].footprint_bytes, s->median, s->min, s->max,
                s->samples);
    }
}

static int parse_stat(const char *v, clattn_stat *s)
{
    unsigned samples;
    char tail;
    if (sscanf(v, "%lf %lf %lf %u %c", &s->median, &s->min, &s->max, &samples, &tail) != 4)
        return -1;
    s->samples = samples;
    return 0;
}

/* Digits only: strtoull would also take white space and a sign, and wrap a
 * negative number around (" -180" read as 2^64 - 180; found by fuzz_cache). */
static int parse_u64(const char *v, uint64_t *out)
{
    char *end;
    if (v[0] < '0' || v[0] > '9')
        return -1;
    errno = 0;
    unsigned long long x = strtoull(v, &end, 10);
    if (errno || *end != '\0')
        return -1;
    *out = x;
    return 0;
}

/* A name as the driver reported it: printable, so that it reads back as it
 * was written (a trailing '\r' is taken as a line end; found by fuzz_cache). */
static int parse_name(const char *v, char *out, size_t size)
{
    for (const unsigned char *c = (const unsigned char *)v; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return -1;
    snprintf(out, size, "%s", v);
    return 0;
}

static int parse_double(const char *v, double *out)
{
    char *end;
    *out = strtod(v, &end);
    return end == v || *end != '\0' ? -1 : 0;
}

/* One "key=value" line into *m; unknown keys are skipped (newer files). */
static int parse_line(char *key, const char *v, clattn_measurement *m, int *format)
{
    uint64_t u = 0;
    if (!strcmp(key, "format")) {
        int bad = parse_u64(v, &u);
        *format = bad || u > 1000 ? -1 : (int)u;
        return bad;
    }
    if (!strcmp(key, "device_name"))
        return parse_name(v, m->device_name, sizeof m->device_name);
    if (!strcmp(key, "driver_version"))
        return parse_name(v, m->driver_version, sizeof m->driver_version);
    if (!strcmp(key, "platform_version"))
        return parse_name(v, m->platform_version, sizeof m->platform_version);
    if (!strcmp(key, "unix_time")) {
        int bad = parse_u64(v, &u);
        m->unix_time = (int64_t)u;
        return bad;
    }
    if (!strcmp(key, "quick")) {
        int bad = parse_u64(v, &u);
        m->quick = u != 0;
        return bad;
    }
    if (!strcmp(key, "seconds"))
        return parse_double(v, &m->seconds);
    if (!strcmp(key, "bandwidth_buffer_bytes"))
        return parse_u64(v, &m->bandwidth_buffer_bytes);
    if (!strcmp(key, "bandwidth"))
        return parse_stat(v, &m->bandwidth);
    if (!strcmp(key, "flops_f32"))
        return parse_stat(v, &m->flops_f32);
    if (!strcmp(key, "flops_f16"))
        return parse_stat(v, &m->flops_f16);
    if (!strcmp(key, "flops_tensor_f16"))
        return parse_stat(v, &m->flops_tensor_f16);
    if (!strcmp(key, "flops_wgmma_f16"))
        return parse_stat(v, &m->flops_wgmma_f16);
    if (!strcmp(key, "wgmma_status")) {
        /* A CLATTN_E* code: 0 or a small negative number. */
        long s;
        char tail;
        if (sscanf(v, "%ld %c", &s, &tail) != 1 || s > 0 || s < -1000)
            return -1;
        m->wgmma_status = (int)s;
        return 0;
    }
    if (!strcmp(key, "launch_latency_s"))
        return parse_stat(v, &m->launch_latency_s);
    if (!strcmp(key, "launch_roundtrip_s"))
        return parse_stat(v, &m->launch_roundtrip_s);
    if (!strcmp(key, "sweep_plateau"))
        return parse_double(v, &m->sweep_plateau);
    if (!strcmp(key, "sweep_floor"))
        return parse_double(v, &m->sweep_floor);
    if (!strcmp(key, "cache_bytes"))
        return parse_u64(v, &m->cache_bytes);
    if (!strcmp(key, "sweep")) {
        unsigned long long footprint;
        int used = 0;
        if (m->n_sweep >= CLATTN_SWEEP_MAX || sscanf(v, "%llu %n", &footprint, &used) != 1)
            return -1;
        clattn_sweep_point *p = &m->sweep[m->n_sweep];
        p->footprint_bytes = footprint;
        if (parse_stat(v + used, &p->bandwidth))
            return -1;
        m->n_sweep++;
    }
    return 0;
}

/* Parses the text of a saved measurement, line by line. */
static int parse_lines(char *text, const char *path, clattn_measurement *m)
{
    int format = 0, lineno = 0;
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line;
         line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        size_t len = strlen(line);
        if (len && line[len - 1] == '\r')
            line[--len] = '\0';
        if (line[0] == '#' || line[0] == '\0')
            continue;
        char *eq = strchr(line, '=');
        if (!eq)
            return clattn_fail(CLATTN_EFORMAT, "%s:%d: expected key=value", path, lineno);
        *eq = '\0';
        if (parse_line(line, eq + 1, m, &format))
            return clattn_fail(CLATTN_EFORMAT, "%s:%d: bad value for %s", path, lineno, line);
    }
    if (format != 1)
        return clattn_fail(CLATTN_EFORMAT, "%s: unknown format %d", path, format);
    return 0;
}

/* A rate or time that is measured must be a positive finite number within
 * what any device could give (a stat with no samples was not measured). */
static int stat_plausible(const clattn_stat *s, double low, double high)
{
    if (!s->samples)
        return 1;
    return isfinite(s->median) && s->median > low && s->median < high && s->min <= s->median &&
           s->median <= s->max;
}

/* Rejects what no device measures: NaN, zero, negative or absurd figures
 * (a hand-edited or corrupt file would otherwise become the model's ceiling). */
static int check_values(const clattn_measurement *m, const char *path)
{
    const struct {
        const char *key;
        const clattn_stat *s;
        double low, high;
    } checks[] = {
        { "bandwidth", &m->bandwidth, 1e6, 1e15 },          /* 1 MB/s .. 1 PB/s */
        { "flops_f32", &m->flops_f32, 1e6, 1e17 },
        { "flops_f16", &m->flops_f16, 1e6, 1e17 },
        { "flops_tensor_f16", &m->flops_tensor_f16, 1e6, 1e17 },
        { "flops_wgmma_f16", &m->flops_wgmma_f16, 1e6, 1e17 },
        { "launch_latency_s", &m->launch_latency_s, 0, 1 },
        { "launch_roundtrip_s", &m->launch_roundtrip_s, 0, 10 },
    };
    for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++)
        if (!stat_plausible(checks[i].s, checks[i].low, checks[i].high))
            return clattn_fail(CLATTN_EFORMAT, "%s: %s = %g is not a plausible measurement",
                               path, checks[i].key, checks[i].s->median);
    if (m->cache_bytes > ((uint64_t)1 << 44))
        return clattn_fail(CLATTN_EFORMAT, "%s: cache_bytes = %llu is not plausible", path,
                           (unsigned long long)m->cache_bytes);
    return 0;
}

int measurement_parse(char *text, const char *path, clattn_measurement *m)
{
    memset(m, 0, sizeof *m);
    int rc = parse_lines(text, path, m);
    return rc ? rc : check_values(m, path);
}
