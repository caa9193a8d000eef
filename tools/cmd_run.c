/* SPDX-License-Identifier: MIT */
/*
 * clattn run: attention on .npy files.
 *
 * Every check that needs no device (options, files, shapes) runs before a
 * device is opened, so a typo costs milliseconds rather than a context and
 * kernel builds, and the output is written atomically only after the
 * attention succeeded: a failed run never leaves a partial or stale-looking
 * O.npy behind (outfile.h; a device or FIFO output is written in place).
 *
 * Exit status: 0 success, 1 a runtime failure (bad input file, device or
 * library error, write error), 2 a usage error.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "commands.h"
#include "npy.h"
#include "outfile.h"

#define EXIT_USAGE 2

typedef struct run_args {
    const char *q, *k, *v, *out;
    const char *device; /* NULL: $CLATTN_DEVICE or the default */
    clattn_options opts;
} run_args;

typedef struct run_inputs {
    npy_array q, k, v;
} run_inputs;

/* What the summary line reports; the device name is copied because the
 * context is closed before the output is written. */
typedef struct run_result {
    char device[256];
    clattn_run_info info;
    double ms;
} run_result;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn run --q Q.npy --k K.npy --v V.npy --out O.npy [options]\n"
            "\n"
            "Computes O = softmax(scale * Q K^T) V on an OpenCL device.\n"
            "Q is [B, H, Nq, d]; K and V are [B, Hkv, Nk, d] with H a multiple of Hkv\n"
            "(grouped-query attention) and d <= 256; all float32 ('<f4') or all float16\n"
            "('<f2'), C order. O is written as [B, H, Nq, d] in the inputs' dtype.\n"
            "\n"
            "options:\n"
            "  --causal[=top-left|bottom-right|none]\n"
            "                  causal mask; --causal alone is top-left (key j visible to\n"
            "                  query i iff j <= i); bottom-right aligns the last query\n"
            "                  with the last key (j <= i + Nk - Nq)\n"
            "  --scale S       score scale (default 1/sqrt(d))\n"
            "  --path P        naive, fused or auto (default auto)\n"
            "  --kernel K      fused kernel: auto or a name `clattn devices` lists (an\n"
            "                  error where the device cannot run it)\n"
            "  --device SEL    device index or name substring (default $CLATTN_DEVICE,\n"
            "                  else the largest GPU, else the CPU)\n"
            "  --allow-oom     run even when the chosen path is predicted not to fit\n"
            "  -h, --help      this text\n"
            "\n"
            "Inputs may be pipes or FIFOs (--q /dev/stdin). O.npy is written to a\n"
            "temporary file and renamed into place once complete, so a failed run\n"
            "leaves an existing file as it was; a character device or FIFO (/dev/null,\n"
            "/dev/stdout on a pipe) is written in place; a symbolic link to a regular\n"
            "file is refused (give the file itself).\n"
            "\n"
            "Prints one summary line: device, path and kernel, shape, dtype, causal\n"
            "mask and wall time (on stderr when O goes to stdout). Exit status: 0 ok,\n"
            "1 runtime failure, 2 usage error.\n");
}

/* Usage errors are one line on stderr, pointing at --help rather than
 * printing all of it, so scripts can log them. */
static int usage_error(const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof msg, fmt, what);
    cli_error("run: %s (see clattn run --help)", msg);
    return EXIT_USAGE;
}

/* Matches argv[*i] against "--name VALUE" and "--name=VALUE". Returns 1 and
 * sets *value on a match (advancing *i past a separate value), 0 if the
 * argument is another option, -1 if the value is missing. */
static int option_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *arg = argv[*i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n) != 0)
        return 0;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        return 1;
    }
    if (arg[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

/* The mask is optional, so, as with getopt's optional arguments, it must be
 * attached with '=': the word after a bare --causal is the next argument. */
static int parse_causal_flag(const char *arg, clattn_causal *out)
{
    if (!strcmp(arg, "--causal"))
        return cli_parse_causal(NULL, out) == 0 ? 1 : -1;
    if (!strncmp(arg, "--causal=", 9))
        return cli_parse_causal(arg + 9, out) == 0 ? 1 : -1;
    return 0;
}

/* A scale must survive the conversion to float: 1e-50 would round to 0,
 * which the library reads as "the default 1/sqrt(d)". */
static int parse_scale(const char *s, float *out)
{
    double v;
    if (cli_parse_double(s, &v) || !isfinite(v) || v <= 0 || v > FLT_MAX)
        return -1;
    float f = (float)v;
    if (!isnormal(f))
        return -1;
    *out = f;
    return 0;
}

/* Stores the value of a recognised option; returns 0 or EXIT_USAGE. */
static int set_option(run_args *a, const char *name, const char *value)
{
    if (!*value)
        return usage_error("option %s needs a value", name);
    if (!strcmp(name, "--q"))
        a->q = value;
    else if (!strcmp(name, "--k"))
        a->k = value;
    else if (!strcmp(name, "--v"))
        a->v = value;
    else if (!strcmp(name, "--out"))
        a->out = value;
    else if (!strcmp(name, "--device"))
        a->device = value;
    else if (!strcmp(name, "--path") && cli_parse_path(value, &a->opts.path))
        return usage_error("bad --path '%s' (naive, fused or auto)", value);
    else if (!strcmp(name, "--scale") && parse_scale(value, &a->opts.scale))
        return usage_error("bad --scale '%s' (a positive number a float holds: normal, "
                           "1.2e-38 to 3.4e38)", value);
    else if (!strcmp(name, "--kernel") && cli_parse_fused_kernel(value, &a->opts.fused_kernel))
        return usage_error("bad --kernel: %s", clattn_last_error_detail());
    return 0;
}

/* One option with a value; returns 1 if argv[*i] was one, 0 if not, or
 * EXIT_USAGE after printing a usage error. */
static int parse_valued(int argc, char **argv, int *i, run_args *a)
{
    static const char *const names[] = { "--q", "--k", "--v", "--out", "--device", "--path",
                                         "--scale", "--kernel" };
    for (size_t n = 0; n < sizeof names / sizeof names[0]; n++) {
        const char *value = NULL;
        int m = option_value(argc, argv, i, names[n], &value);
        if (m < 0)
            return usage_error("option %s needs a value", names[n]);
        if (m > 0)
            return set_option(a, names[n], value) ? EXIT_USAGE : 1;
    }
    return 0;
}

/* Returns 0 to go on, -1 after --help, or EXIT_USAGE. */
static int parse_args(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    clattn_default_options(&a->opts);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            usage(stdout);
            return -1;
        }
        if (!strcmp(arg, "--allow-oom")) {
            a->opts.allow_oom = 1;
            continue;
        }
        int m = parse_causal_flag(arg, &a->opts.causal);
        if (m < 0)
            return usage_error("bad causal mask in '%s' (top-left, bottom-right or none)", arg);
        if (m > 0)
            continue;
        m = parse_valued(argc, argv, &i, a);
        if (m == EXIT_USAGE)
            return m;
        if (m == 0)
            return usage_error(arg[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'",
                               arg);
    }
    const char *missing = !a->q ? "--q" : !a->k ? "--k" : !a->v ? "--v" : !a->out ? "--out" : NULL;
    if (missing)
        return usage_error("missing %s", missing);
    return 0;
}

/* ------------------------------------------------------------------- inputs */

static void format_shape(const npy_array *x, char *buf, size_t cap)
{
    size_t n = (size_t)snprintf(buf, cap, "(");
    for (int i = 0; i < x->ndim && n < cap; i++)
        n += (size_t)snprintf(buf + n, cap - n, i ? ", %zu" : "%zu", x->shape[i]);
    if (n < cap)
        snprintf(buf + n, cap - n, x->ndim == 1 ? ",)" : ")");
}

static const char *dtype_word(clattn_dtype d)
{
    return d == CLATTN_F16 ? "float16" : "float32";
}

static int load_one(const char *path, npy_array *x)
{
    char err[512];
    if (npy_read(path, x, err, sizeof err)) {
        cli_error("%s", err);
        return 1;
    }
    return 0;
}

static int load_inputs(const run_args *a, run_inputs *in)
{
    return load_one(a->q, &in->q) || load_one(a->k, &in->k) || load_one(a->v, &in->v);
}

/* Each array is 4-D with no empty dimension. */
static int check_rank(const char *path, const npy_array *x, const char *layout)
{
    char shape[256];
    format_shape(x, shape, sizeof shape);
    if (x->ndim != 4) {
        cli_error("%s: expected a 4-D array %s, got %d-D %s", path, layout, x->ndim, shape);
        return 1;
    }
    for (int i = 0; i < 4; i++)
        if (x->shape[i] == 0) {
            cli_error("%s: empty dimension in shape %s", path, shape);
            return 1;
        }
    return 0;
}

/* The cross-array rules of include/clattn/clattn.h, each with a message
 * naming both files and the numbers that disagree. */
static int check_agreement(const run_args *a, const run_inputs *in)
{
    const npy_array *q = &in->q, *k = &in->k, *v = &in->v;
    char ks[256], vs[256];
    if (q->dtype != k->dtype || q->dtype != v->dtype) {
        cli_error("dtypes differ: %s is %s, %s is %s, %s is %s (all must be the same)", a->q,
                  dtype_word(q->dtype), a->k, dtype_word(k->dtype), a->v, dtype_word(v->dtype));
        return 1;
    }
    if (memcmp(k->shape, v->shape, 4 * sizeof k->shape[0]) != 0) {
        format_shape(k, ks, sizeof ks);
        format_shape(v, vs, sizeof vs);
        cli_error("%s %s and %s %s must have the same shape", a->k, ks, a->v, vs);
        return 1;
    }
    if (q->shape[0] != k->shape[0]) {
        cli_error("batch sizes differ: %s has B=%zu, %s has B=%zu", a->q, q->shape[0], a->k,
                  k->shape[0]);
        return 1;
    }
    if (q->shape[3] != k->shape[3]) {
        cli_error("head dims differ: %s has d=%zu, %s has d=%zu", a->q, q->shape[3], a->k,
                  k->shape[3]);
        return 1;
    }
    if (q->shape[1] % k->shape[1] != 0) {
        cli_error("%s has H=%zu heads, not a multiple of %s's Hkv=%zu", a->q, q->shape[1], a->k,
                  k->shape[1]);
        return 1;
    }
    if (q->shape[3] > 256) {
        cli_error("head dim d=%zu of %s is above the supported 256", q->shape[3], a->q);
        return 1;
    }
    return 0;
}

static int check_inputs(const run_args *a, const run_inputs *in, clattn_shape *shape)
{
    if (check_rank(a->q, &in->q, "[B, H, Nq, d]") || check_rank(a->k, &in->k, "[B, Hkv, Nk, d]") ||
        check_rank(a->v, &in->v, "[B, Hkv, Nk, d]") || check_agreement(a, in))
        return 1;
    *shape = (clattn_shape){
        .batch = in->q.shape[0],
        .heads = in->q.shape[1],
        .kv_heads = in->k.shape[1],
        .q_len = in->q.shape[2],
        .kv_len = in->k.shape[2],
        .head_dim = in->q.shape[3],
        .dtype = in->q.dtype,
    };
    /* The library's own rules, in case they are stricter than ours. */
    int rc = clattn_shape_check(shape);
    if (rc) {
        cli_lib_error("run: unsupported shape", rc);
        return 1;
    }
    return 0;
}

/* --------------------------------------------------------------------- run */

static void print_summary(FILE *f, const run_result *r, const clattn_shape *s,
                          const clattn_options *o)
{
    fprintf(f, "%s | path %s (%s) | B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu | %s | causal %s | "
            "%.3f ms",
            r->device, cli_path_name(r->info.path), r->info.kernel, s->batch, s->heads,
            s->kv_heads, s->q_len, s->kv_len, s->head_dim, cli_dtype_name(s->dtype),
            cli_causal_name(o->causal), r->ms);
    if (r->info.note[0])
        fprintf(f, " | %s", r->info.note);
    fputc('\n', f);
}

/* Runs attention into a new buffer *o. The time covers clattn_attention()
 * as a caller sees it: transfers, kernel builds on a cold cache, the run. */
static int run_attention(const run_args *a, const run_inputs *in, const clattn_shape *shape,
                         void **o, run_result *r)
{
    size_t nbytes = clattn_shape_q_elems(shape) * clattn_dtype_size(shape->dtype);
    *o = malloc(nbytes);
    if (!*o) {
        cli_error("run: out of memory for %zu bytes of output", nbytes);
        return 1;
    }
    clattn_ctx *ctx = NULL;
    if (cli_open(a->device, &ctx))
        return 1;
    snprintf(r->device, sizeof r->device, "%s", clattn_device_name(ctx));
    double t0 = cli_now();
    int rc = clattn_attention(ctx, shape, &a->opts, in->q.data, in->k.data, in->v.data, *o,
                              &r->info);
    r->ms = 1e3 * (cli_now() - t0);
    if (rc == CLATTN_EWOULDOOM)
        cli_lib_error("run: attention (--allow-oom runs it anyway)", rc);
    else if (rc)
        cli_lib_error("run: attention", rc);
    clattn_close(&ctx);
    return rc ? 1 : 0;
}

/* Catches an output path that cannot be written before the attention runs,
 * which may take long on a slow device; the write still has the last word. */
static int check_output_path(const char *path)
{
    char err[4096 + 256];
    if (outfile_check(path, err, sizeof err)) {
        cli_error("%s", err);
        return 1;
    }
    return 0;
}

static int write_output(const char *path, const clattn_shape *s, const void *o)
{
    size_t shape[4] = { s->batch, s->heads, s->q_len, s->head_dim };
    char err[512];
    if (npy_write_atomic(path, s->dtype, 4, shape, o, err, sizeof err)) {
        cli_error("%s", err);
        return 1;
    }
    return 0;
}

int cmd_run(int argc, char **argv)
{
    run_args args;
    int status = parse_args(argc, argv, &args);
    if (status)
        return status < 0 ? 0 : status;

    run_inputs in;
    memset(&in, 0, sizeof in);
    void *o = NULL;
    clattn_shape shape;
    run_result result;
    memset(&result, 0, sizeof result);
    /* The summary comes last, so a line on stdout means O.npy was written. */
    status = load_inputs(&args, &in) || check_inputs(&args, &in, &shape) ||
             check_output_path(args.out) || run_attention(&args, &in, &shape, &o, &result) ||
             write_output(args.out, &shape, o);
    if (status == 0)
        print_summary(outfile_is_stdout(args.out) ? stderr : stdout, &result, &shape, &args.opts);
    free(o);
    npy_free(&in.v);
    npy_free(&in.k);
    npy_free(&in.q);
    return status;
}
