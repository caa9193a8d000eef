/* SPDX-License-Identifier: MIT */
/* The saved measurement's text: key=value lines, formatted and parsed with
 * every value checked. No OpenCL, so that tests/fuzz/fuzz_cache.c can drive
 * it alone. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "measure/file_text.h"

/* The file's keys in the order they are written, each a field of
 * clattn_measurement of one kind; "format" comes first and the "sweep"
 * points last, a line each. */
enum field_kind {
    FIELD_NAME,   /* a string the driver reported */
    FIELD_TIME,   /* int64_t, a non-negative count of seconds */
    FIELD_FLAG,   /* int, 0 or 1 */
    FIELD_DOUBLE, /* double */
    FIELD_U64,    /* uint64_t */
    FIELD_STAT,   /* clattn_stat: median min max samples */
    FIELD_STATUS, /* int, 0 or a CLATTN_E* code */
};

struct field {
    const char *key;
    enum field_kind kind;
    size_t offset, size;
};

#define FIELD(name, kind) \
    { #name, kind, offsetof(clattn_measurement, name), sizeof(((clattn_measurement *)0)->name) }
static const struct field fields[] = {
    FIELD(device_name, FIELD_NAME),
    FIELD(driver_version, FIELD_NAME),
    FIELD(platform_version, FIELD_NAME),
    FIELD(unix_time, FIELD_TIME),
    FIELD(quick, FIELD_FLAG),
    FIELD(seconds, FIELD_DOUBLE),
    FIELD(bandwidth_buffer_bytes, FIELD_U64),
    FIELD(bandwidth, FIELD_STAT),
    FIELD(flops_f32, FIELD_STAT),
    FIELD(flops_f16, FIELD_STAT),
    FIELD(flops_tensor_f16, FIELD_STAT),
    FIELD(flops_wgmma_f16, FIELD_STAT),
    FIELD(wgmma_status, FIELD_STATUS),
    FIELD(launch_latency_s, FIELD_STAT),
    FIELD(launch_roundtrip_s, FIELD_STAT),
    FIELD(sweep_plateau, FIELD_DOUBLE),
    FIELD(sweep_floor, FIELD_DOUBLE),
    FIELD(cache_bytes, FIELD_U64),
};
#undef FIELD
#define N_FIELDS (sizeof fields / sizeof fields[0])

static void write_stat(FILE *f, const char *key, const clattn_stat *s)
{
    fprintf(f, "%s=%.17g %.17g %.17g %u\n", key, s->median, s->min, s->max, s->samples);
}

static void write_field(FILE *f, const struct field *k, const void *p)
{
    switch (k->kind) {
    case FIELD_NAME: fprintf(f, "%s=%s\n", k->key, (const char *)p); break;
    case FIELD_TIME: fprintf(f, "%s=%lld\n", k->key, (long long)*(const int64_t *)p); break;
    case FIELD_FLAG:
    case FIELD_STATUS: fprintf(f, "%s=%d\n", k->key, *(const int *)p); break;
    case FIELD_DOUBLE: fprintf(f, "%s=%.17g\n", k->key, *(const double *)p); break;
    case FIELD_U64:
        fprintf(f, "%s=%llu\n", k->key, (unsigned long long)*(const uint64_t *)p);
        break;
    case FIELD_STAT: write_stat(f, k->key, p); break;
    }
}

void measurement_format(FILE *f, const clattn_measurement *m)
{
    fprintf(f, "# clattn device measurement (clattn devices --measure)\n"
               "# stats: median min max samples; bandwidth in bytes/s\n"
               "format=1\n");
    for (size_t i = 0; i < N_FIELDS; i++)
        write_field(f, &fields[i], (const char *)m + fields[i].offset);
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

/* A CLATTN_E* code: 0 or a small negative number. */
static int parse_status(const char *v, int *out)
{
    long s;
    char tail;
    if (sscanf(v, "%ld %c", &s, &tail) != 1 || s > 0 || s < -1000)
        return -1;
    *out = (int)s;
    return 0;
}

static int parse_field(const struct field *k, const char *v, void *p)
{
    uint64_t u = 0;
    int bad;
    switch (k->kind) {
    case FIELD_NAME: return parse_name(v, p, k->size);
    case FIELD_TIME:
        bad = parse_u64(v, &u);
        *(int64_t *)p = (int64_t)u;
        return bad;
    case FIELD_FLAG:
        bad = parse_u64(v, &u);
        *(int *)p = u != 0;
        return bad;
    case FIELD_DOUBLE: return parse_double(v, p);
    case FIELD_U64: return parse_u64(v, p);
    case FIELD_STAT: return parse_stat(v, p);
    case FIELD_STATUS: return parse_status(v, p);
    }
    return -1;
}

/* One point of the sweep: footprint, then the bandwidth's stat. */
static int parse_sweep_point(const char *v, clattn_measurement *m)
{
    unsigned long long footprint;
    int used = 0;
    if (m->n_sweep >= CLATTN_SWEEP_MAX || sscanf(v, "%llu %n", &footprint, &used) != 1)
        return -1;
    clattn_sweep_point *p = &m->sweep[m->n_sweep];
    p->footprint_bytes = footprint;
    if (parse_stat(v + used, &p->bandwidth))
        return -1;
    m->n_sweep++;
    return 0;
}

/* One "key=value" line into *m; unknown keys are skipped (newer files). */
static int parse_line(char *key, const char *v, clattn_measurement *m, int *format)
{
    if (!strcmp(key, "format")) {
        uint64_t u = 0;
        int bad = parse_u64(v, &u);
        *format = bad || u > 1000 ? -1 : (int)u;
        return bad;
    }
    if (!strcmp(key, "sweep"))
        return parse_sweep_point(v, m);
    for (size_t i = 0; i < N_FIELDS; i++)
        if (!strcmp(key, fields[i].key))
            return parse_field(&fields[i], v, (char *)m + fields[i].offset);
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
