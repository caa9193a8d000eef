/* SPDX-License-Identifier: MIT */
/*
 * clattn run: attention on .npy files.
 *
 * Every check that needs no device (options, files, shapes) runs before a
 * device is opened, so a typo costs milliseconds rather than a context and
 * kernel builds; the memory refusal (clattn_attention_plan) runs before any
 * device buffer exists; and the outputs are written atomically only after
 * the attention succeeded: a failed run never leaves a partial or
 * stale-looking O.npy behind (outfile.h; a device or FIFO output is written
 * in place, "-" is stdout).
 *
 * The tool owns the device buffers (clattn_attention_ex_cl on the
 * context's queue), so that uploads, the call and downloads are timed
 * apart; the call's own time is split into the kernel builds it waited for
 * (clattn_run_info.build_seconds) and the rest, the device's.
 *
 * Exit status: 0 success, 1 a runtime failure (bad input file, device or
 * library error, write error), 2 a usage error.
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "json.h"
#include "npy.h"
#include "outfile.h"

#define CMD "run"

typedef struct run_args {
    const char *q, *k, *v, *out;
    const char *json;    /* --json FILE, or NULL */
    const char *lse_out; /* --lse-out FILE, or NULL */
    const char *device;  /* NULL: $CLATTN_DEVICE or the default */
    const char *kv_lens_text;
    clattn_options opts;
} run_args;

typedef struct run_inputs {
    npy_array q, k, v;
    uint32_t *kv_lens; /* --kv-lens, B of them once checked; NULL without */
    size_t n_kv_lens;
} run_inputs;

/* What the summary line and the JSON report; the device name is copied
 * because the context is closed before the outputs are written. */
typedef struct run_result {
    char device[256];
    clattn_run_info info;
    double build, upload, device_s, download, total; /* seconds */
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
            "  --kv-lens L0,L1,...\n"
            "                  each sequence's own number of keys (B of them, each <= Nk);\n"
            "                  keys past it are not read\n"
            "  --split-kv N    split each sequence's keys into N chunks on the fused path\n"
            "                  (flash-decoding); 0: the library's choice (default), 1: none\n"
            "  --lse-out FILE  also write each row's log-sum-exp, float32 [B, H, Nq]\n"
            "  --json FILE     write what ran and its times as JSON\n"
            "  --device SEL    device index or name substring (default $CLATTN_DEVICE,\n"
            "                  else the largest GPU, else the CPU)\n"
            "  --allow-oom     run even when the chosen path is predicted not to fit\n"
            "  -h, --help      this text\n"
            "\n"
            "Inputs may be pipes or FIFOs (--q /dev/stdin). Outputs are written to a\n"
            "temporary file and renamed into place once complete, so a failed run\n"
            "leaves an existing file as it was; a character device or FIFO (/dev/null,\n"
            "/dev/stdout on a pipe) is written in place, and \"-\" is stdout; a symbolic\n"
            "link to a regular file is refused (give the file itself).\n"
            "\n"
            "Prints one summary line: device, path and kernel, shape, dtype, causal\n"
            "mask and the times: total, kernel builds the call waited for, uploads,\n"
            "the device's share of the call, downloads (on stderr when an output goes\n"
            "to stdout).\n" CLI_EXIT_HELP);
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

/* Stores one option's value; 0, or CLI_EXIT_USAGE after the message. */
static int set_option(run_args *a, int opt, const char *value)
{
    size_t n;
    switch (opt) {
    case 'q': a->q = value; break;
    case 'k': a->k = value; break;
    case 'v': a->v = value; break;
    case 'o': a->out = value; break;
    case 'j': a->json = value; break;
    case 'l': a->lse_out = value; break;
    case 'D': a->device = value; break;
    case 'L': a->kv_lens_text = value; break;
    case 'A': a->opts.allow_oom = 1; break;
    case 'c':
        if (cli_parse_causal(value, &a->opts.causal))
            return cli_usage_error(CMD, "bad causal mask '%s' (top-left, bottom-right or none)",
                                   value);
        break;
    case 'p':
        if (cli_parse_path(value, &a->opts.path))
            return cli_usage_error(CMD, "bad --path '%s' (naive, fused or auto)", value);
        break;
    case 's':
        if (parse_scale(value, &a->opts.scale))
            return cli_usage_error(CMD, "bad --scale '%s' (a positive number a float holds: "
                                   "normal, 1.2e-38 to 3.4e38)", value);
        break;
    case 'K':
        if (cli_parse_fused_kernel(value, &a->opts.fused_kernel))
            return cli_usage_error(CMD, "bad --kernel: %s", clattn_last_error_detail());
        break;
    case 'S':
        if (cli_parse_size(value, &n) || n > UINT32_MAX)
            return cli_usage_error(CMD, "bad --split-kv '%s' (0 .. 4294967295)", value);
        a->opts.split_kv = (uint32_t)n;
        break;
    default: return CLI_EXIT_USAGE;
    }
    return 0;
}

/* At most one output may be stdout. */
static int check_stdout_outputs(const run_args *a)
{
    const char *outs[3] = { a->out, a->json, a->lse_out };
    int n = 0;
    for (int i = 0; i < 3; i++)
        n += outs[i] && outfile_is_stdout(outs[i]);
    return n > 1 ? cli_usage_error(CMD, "--out, --json and --lse-out cannot all go to stdout")
                 : 0;
}

/* Whether `s` is "L0,L1,..." (how many is for the files to say). */
static int valid_lens(const char *s)
{
    const size_t cap = cli_list_items(s);
    size_t n;
    uint32_t *v = malloc(cap * sizeof *v);
    int ok = v && cli_parse_lens(s, v, cap, &n) == 0;
    free(v);
    return ok;
}

/* Returns 0 to go on, -1 after --help, or CLI_EXIT_USAGE. */
static int parse_args(int argc, char **argv, run_args *a)
{
    static const struct option long_opts[] = {
        { "q", required_argument, 0, 'q' },        { "k", required_argument, 0, 'k' },
        { "v", required_argument, 0, 'v' },        { "out", required_argument, 0, 'o' },
        { "json", required_argument, 0, 'j' },     { "lse-out", required_argument, 0, 'l' },
        { "device", required_argument, 0, 'D' },   { "path", required_argument, 0, 'p' },
        { "scale", required_argument, 0, 's' },    { "kernel", required_argument, 0, 'K' },
        { "causal", optional_argument, 0, 'c' },   { "allow-oom", no_argument, 0, 'A' },
        { "kv-lens", required_argument, 0, 'L' },  { "split-kv", required_argument, 0, 'S' },
        { "help", no_argument, 0, 'h' },           { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    clattn_default_options(&a->opts);
    int opt;
    while ((opt = cli_getopt(CMD, argc, argv, ":h", long_opts)) != -1) {
        if (opt == '?')
            return CLI_EXIT_USAGE;
        if (opt == 'h') {
            usage(stdout);
            return -1;
        }
        if (set_option(a, opt, optarg))
            return CLI_EXIT_USAGE;
    }
    const char *missing = !a->q ? "--q" : !a->k ? "--k" : !a->v ? "--v" : !a->out ? "--out" : NULL;
    if (missing)
        return cli_usage_error(CMD, "missing %s", missing);
    if (a->kv_lens_text && !valid_lens(a->kv_lens_text))
        return cli_usage_error(CMD, "bad --kv-lens '%.80s' (lengths separated by commas)",
                               a->kv_lens_text);
    return check_stdout_outputs(a);
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

/* --kv-lens: one length per sequence, each at most Nk (checked against
 * the files, so a mismatch is an input error, status 1). */
static int check_kv_lens(const run_args *a, const clattn_shape *s, run_inputs *in)
{
    if (!a->kv_lens_text)
        return 0;
    const size_t cap = cli_list_items(a->kv_lens_text);
    in->kv_lens = malloc(cap * sizeof *in->kv_lens);
    if (!in->kv_lens) {
        cli_error("run: out of memory for --kv-lens");
        return 1;
    }
    size_t n = 0;
    /* Its grammar was checked with the options. */
    cli_parse_lens(a->kv_lens_text, in->kv_lens, cap, &n);
    if (n != s->batch) {
        cli_error("run: --kv-lens gives %zu lengths; %s has B=%zu sequences", n, a->q, s->batch);
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (in->kv_lens[i] > s->kv_len) {
            cli_error("run: --kv-lens: %u (sequence %zu) is more than Nk = %zu of %s",
                      in->kv_lens[i], i, s->kv_len, a->k);
            return 1;
        }
    in->n_kv_lens = n;
    return 0;
}

/* --------------------------------------------------------------------- run */

static void print_summary(FILE *f, const run_result *r, const clattn_shape *s,
                          const clattn_options *o)
{
    fprintf(f, "%s | path %s (%s) | B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu | %s | causal %s | ",
            r->device, cli_path_name(r->info.path), r->info.kernel, s->batch, s->heads,
            s->kv_heads, s->q_len, s->kv_len, s->head_dim, cli_dtype_name(s->dtype),
            cli_causal_name(o->causal));
    if (r->info.splits > 1)
        fprintf(f, "%u key splits | ", r->info.splits);
    fprintf(f, "%.3f ms: build %.3f ms, upload %.3f ms, device %.3f ms, download %.3f ms",
            1e3 * r->total, 1e3 * r->build, 1e3 * r->upload, 1e3 * r->device_s,
            1e3 * r->download);
    if (r->info.note[0])
        fprintf(f, " | %s", r->info.note);
    fputc('\n', f);
}

/* The device buffers of one run: Q, K, V, O and (--lse-out) LSE. */
struct run_buffers {
    cl_mem b[5];
};

static void release_run_buffers(struct run_buffers *rb)
{
    for (int i = 0; i < 5; i++)
        if (rb->b[i])
            clReleaseMemObject(rb->b[i]);
}

static int cl_failed(const char *what, cl_int err)
{
    cli_error("run: %s: OpenCL error %d", what, (int)err);
    return 1;
}

/* Creates the buffers and uploads Q, K, V; the upload time is the
 * writes' wall time to the end of a clFinish. */
static int upload(clattn_ctx *ctx, const run_inputs *in, const clattn_shape *s, int want_lse,
                  struct run_buffers *rb, run_result *r)
{
    static const char *const names[5] = { "Q", "K", "V", "O", "LSE" };
    const npy_array *host[3] = { &in->q, &in->k, &in->v };
    const size_t bytes[5] = { in->q.nbytes, in->k.nbytes, in->v.nbytes,
                              clattn_shape_q_elems(s) * clattn_dtype_size(s->dtype),
                              s->batch * s->heads * s->q_len * sizeof(float) };
    cl_context cl = clattn_cl_context(ctx);
    cl_command_queue queue = clattn_cl_queue(ctx);
    cl_int err;
    for (int i = 0; i < (want_lse ? 5 : 4); i++) {
        rb->b[i] = clCreateBuffer(cl, i < 3 ? CL_MEM_READ_ONLY : CL_MEM_WRITE_ONLY, bytes[i],
                                  NULL, &err);
        if (err != CL_SUCCESS) {
            char what[64];
            snprintf(what, sizeof what, "creating the %s buffer (%zu bytes)", names[i], bytes[i]);
            return cl_failed(what, err);
        }
    }
    const double t0 = cli_now();
    for (int i = 0; i < 3; i++)
        if ((err = clEnqueueWriteBuffer(queue, rb->b[i], CL_FALSE, 0, bytes[i], host[i]->data, 0,
                                        NULL, NULL)) != CL_SUCCESS)
            return cl_failed("uploading the inputs", err);
    if ((err = clFinish(queue)) != CL_SUCCESS)
        return cl_failed("uploading the inputs", err);
    r->upload = cli_now() - t0;
    return 0;
}

/* Reads O (and LSE) back into host arrays. */
static int download(clattn_ctx *ctx, const clattn_shape *s, const struct run_buffers *rb,
                    void *o, float *lse, run_result *r)
{
    cl_command_queue queue = clattn_cl_queue(ctx);
    const size_t obytes = clattn_shape_q_elems(s) * clattn_dtype_size(s->dtype);
    const double t0 = cli_now();
    cl_int err = clEnqueueReadBuffer(queue, rb->b[3], CL_TRUE, 0, obytes, o, 0, NULL, NULL);
    if (err == CL_SUCCESS && lse)
        err = clEnqueueReadBuffer(queue, rb->b[4], CL_TRUE, 0,
                                  s->batch * s->heads * s->q_len * sizeof(float), lse, 0, NULL,
                                  NULL);
    if (err != CL_SUCCESS)
        return cl_failed("downloading the outputs", err);
    r->download = cli_now() - t0;
    return 0;
}

/* The call itself: enqueued on the tool's buffers, waited for; its wall
 * time less the builds it waited for is the device's share. */
static int call(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                const struct run_buffers *rb, run_result *r)
{
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = rb->b[4];
    const double t0 = cli_now();
    int rc = clattn_attention_ex_cl(ctx, s, opts, rb->b[0], rb->b[1], rb->b[2], rb->b[3], &ex, 0,
                                    NULL, NULL, &r->info);
    cl_int err = rc == 0 ? clFinish(clattn_cl_queue(ctx)) : CL_SUCCESS;
    const double t1 = cli_now();
    if (rc) {
        cli_lib_error("run: attention", rc);
        return 1;
    }
    if (err != CL_SUCCESS)
        return cl_failed("running attention", err);
    r->build = r->info.build_seconds;
    r->device_s = t1 - t0 - r->build;
    if (r->device_s < 0)
        r->device_s = 0;
    return 0;
}

/* Runs attention into the new host arrays *o (and *lse with --lse-out). The
 * model's memory check comes first, before any device buffer exists. */
static int run_attention(const run_args *a, const run_inputs *in, const clattn_shape *shape,
                         void **o, float **lse, run_result *r)
{
    size_t nbytes = clattn_shape_q_elems(shape) * clattn_dtype_size(shape->dtype);
    *o = malloc(nbytes);
    *lse = a->lse_out ? malloc(shape->batch * shape->heads * shape->q_len * sizeof(float)) : NULL;
    if (!*o || (a->lse_out && !*lse)) {
        cli_error("run: out of memory for %zu bytes of output", nbytes);
        return 1;
    }
    clattn_options opts = a->opts;
    opts.kv_lens = in->kv_lens;
    clattn_ctx *ctx = NULL;
    if (cli_open(a->device, &ctx))
        return 1;
    snprintf(r->device, sizeof r->device, "%s", clattn_device_name(ctx));
    const double t0 = cli_now();
    struct run_buffers rb = { { NULL, NULL, NULL, NULL, NULL } };
    int status = 1;
    int rc = clattn_attention_plan(ctx, shape, &opts, &r->info);
    const double plan_build = r->info.build_seconds; /* probe builds the choice needed */
    if (rc == CLATTN_EWOULDOOM)
        cli_lib_error("run: attention (--allow-oom runs it anyway)", rc);
    else if (rc)
        cli_lib_error("run: attention", rc);
    else if (upload(ctx, in, shape, a->lse_out != NULL, &rb, r) == 0 &&
             call(ctx, shape, &opts, &rb, r) == 0 && download(ctx, shape, &rb, *o, *lse, r) == 0)
        status = 0;
    r->build += plan_build;
    r->total = cli_now() - t0;
    release_run_buffers(&rb);
    clattn_close(&ctx);
    return status;
}

/* Catches an output path that cannot be written before the attention runs,
 * which may take long on a slow device; the write still has the last word. */
static int check_output_paths(const run_args *a)
{
    return cli_output_check(a->out) || cli_output_check(a->lse_out) ||
           cli_output_check(a->json);
}

static int write_npy(const char *path, clattn_dtype dtype, int ndim, const size_t *shape,
                     const void *data)
{
    char err[512];
    if (npy_write_atomic(path, dtype, ndim, shape, data, err, sizeof err)) {
        cli_error("%s", err);
        return 1;
    }
    return 0;
}

static int write_outputs(const run_args *a, const clattn_shape *s, const void *o,
                         const float *lse)
{
    size_t oshape[4] = { s->batch, s->heads, s->q_len, s->head_dim };
    if (write_npy(a->out, s->dtype, 4, oshape, o))
        return 1;
    return a->lse_out && write_npy(a->lse_out, CLATTN_F32, 3, oshape, lse);
}

/* --json: what ran, on what, and how long each part took. */
static void json_report(FILE *f, const run_args *a, const run_inputs *in,
                        const clattn_shape *s, const run_result *r)
{
    struct json js, *j = &js;
    json_begin_document(j, f, "run");
    json_str(j, "device", r->device);
    json_open(j, "inputs", '{');
    json_str(j, "q", a->q);
    json_str(j, "k", a->k);
    json_str(j, "v", a->v);
    json_close(j, '}');
    json_open(j, "shape", '{');
    json_shape_fields(j, s);
    json_close(j, '}');
    json_str(j, "dtype", cli_dtype_name(s->dtype));
    json_str(j, "causal", cli_causal_name(a->opts.causal));
    json_num(j, "scale", a->opts.scale > 0 ? a->opts.scale : 1.0 / sqrt((double)s->head_dim), 0);
    if (in->kv_lens) {
        json_open(j, "kv_lens", '[');
        for (size_t i = 0; i < in->n_kv_lens; i++)
            json_u64(j, NULL, in->kv_lens[i]);
        json_close(j, ']');
    } else {
        json_null(j, "kv_lens");
    }
    json_u64(j, "split_kv", a->opts.split_kv);
    json_str(j, "path", cli_path_name(r->info.path));
    json_str(j, "kernel", r->info.kernel);
    json_u64(j, "splits", r->info.splits);
    json_str(j, "note", r->info.note);
    json_u64(j, "predicted_peak_bytes", r->info.predicted_peak_bytes);
    json_u64(j, "allocated_bytes", r->info.allocated_bytes);
    json_open(j, "seconds", '{');
    json_num(j, "total", r->total, 0);
    json_num(j, "build", r->build, 0);
    json_num(j, "upload", r->upload, 0);
    json_num(j, "device", r->device_s, 0);
    json_num(j, "download", r->download, 0);
    json_close(j, '}');
    json_open(j, "outputs", '{');
    json_str(j, "o", a->out);
    json_str(j, "lse", a->lse_out);
    json_close(j, '}');
    json_end_document(j);
}

static int write_json(const run_args *a, const run_inputs *in, const clattn_shape *s,
                      const run_result *r)
{
    if (!a->json)
        return 0;
    outfile f;
    if (cli_output_open(a->json, &f))
        return 1;
    json_report(f.stream, a, in, s, r);
    return cli_output_commit(&f);
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
    float *lse = NULL;
    clattn_shape shape;
    run_result result;
    memset(&result, 0, sizeof result);
    /* The summary comes last, so a line on stdout means the outputs were
     * written. */
    status = load_inputs(&args, &in) || check_inputs(&args, &in, &shape) ||
             check_kv_lens(&args, &shape, &in) || check_output_paths(&args) ||
             run_attention(&args, &in, &shape, &o, &lse, &result) ||
             write_outputs(&args, &shape, o, lse) || write_json(&args, &in, &shape, &result);
    const int to_stderr = outfile_is_stdout(args.out) || (args.json && outfile_is_stdout(args.json))
                          || (args.lse_out && outfile_is_stdout(args.lse_out));
    if (status == 0)
        print_summary(to_stderr ? stderr : stdout, &result, &shape, &args.opts);
    free(o);
    free(lse);
    free(in.kv_lens);
    npy_free(&in.v);
    npy_free(&in.k);
    npy_free(&in.q);
    return status;
}
