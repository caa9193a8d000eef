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
 * apart; the call's own time is split into its kernels' (their profiling
 * events, launches.h) and the rest: the kernel builds it waited for,
 * first-launch compilation included.
 *
 * Exit status: 0 success, 1 a runtime failure (bad input file, device or
 * library error, write error), 2 a usage error.
 */
#include <float.h>
#include <stddef.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "commands.h"
#include "json.h"
#include "kvcache.h"
#include "launches.h"
#include "npy.h"
#include "options.h"
#include "outfile.h"
#include "ranks.h"
#include "variant.h"

#define CMD "run"

typedef struct run_args {
    const char *q, *k, *v, *out;
    const char *lse_out; /* --lse-out FILE, or NULL */
    const char *spread;  /* --spread SCHEME, or NULL: auto */
    cli_call call;       /* the shared options: device, mask, path, kernel, ... */
    clattn_options opts;
    cli_variant_data variant; /* the variants' tensors and snippets, once loaded */
    int check;           /* --check: O against the CPU reference */
    int cached;          /* a cache form was asked for (--kv-type, --page-size, --packed) */
    cli_cache_data cache; /* its inputs, once made */
    clattn_options ref_opts; /* the reference's options: the plain form of the same data */
} run_args;

typedef struct run_inputs {
    npy_array q, k, v;
} run_inputs;

/* What the summary line and the JSON report; the device name is copied
 * because the context is closed before the outputs are written. */
typedef struct run_result {
    char device[256];
    clattn_run_info info;
    double build, upload, device_s, download, total; /* seconds */
    int checked;          /* --check ran: */
    double max_abs, rel_l2, tol_abs, tol_rel;
    size_t nan_count;
    int check_ok;
} run_result;

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f,
            "usage: clattn run --q Q.npy --k K.npy --v V.npy --out O.npy [options]\n"
            "\n"
            "Computes O = softmax(scale * Q K^T) V on an OpenCL device.\n"
            "Q is [B, H, Nq, d], K [B, Hkv, Nk, d] and V [B, Hkv, Nk, dv] with H a multiple\n"
            "of Hkv (grouped-query attention), d <= 576 and dv <= 512 (dv != d: DeepSeek's\n"
            "MLA); all float32 ('<f4'), all float16 ('<f2') or all bfloat16 ('<V2', as\n"
            "numpy saves ml_dtypes.bfloat16), C order. O is written as [B, H, Nq, dv] in\n"
            "the inputs' dtype. The variants (--softcap, --window, --alibi, --sinks,\n"
            "--mask, --score-mod, --mask-mod) apply in that order to each score; the\n"
            "naive path takes none of them, nor bf16 or dv != d (auto runs fused).\n"
            "A KV cache form (--kv-type, --k-type, --v-type, --page-size, --packed) is\n"
            "made from the files: K and V quantized (fp8 scaled by the tensor's largest\n"
            "magnitude over 448), scattered into pages through a block table of its own,\n"
            "or Q, K, V packed by --q-lens and --kv-lens; O.npy is the plain [B, H, Nq,\n"
            "dv] either way (packed rows past a sequence's queries zero). --check\n"
            "compares O with the CPU reference on the same (quantized) K and V.\n"
            "--device with several selectors separated by commas (0,1) runs the call\n"
            "across those devices (clattn_group_attention): a decoding step split by\n"
            "keys and merged exactly, longer calls split by query rows; what a split\n"
            "would change runs on the first (the summary says why).\n"
            "Under mpirun with several processes (mpirun -np 2 clattn run ...), the\n"
            "call is spread over the ranks (libclattn_mpi), each on its own device (the\n"
            "r-th of --device's list, or the one given): a decoding step sharded by\n"
            "keys, a prefill (Nq = Nk) by tokens, zigzag under a causal mask; every rank\n"
            "reads the inputs, rank 0 writes the outputs and prints the summary.\n"
            "\n"
            "options:\n");
    cli_print_options(cmd, f);
    fprintf(f,
            "\n"
            "Inputs may be pipes or FIFOs (--q /dev/stdin). Outputs are written to\n"
            "temporary files and renamed into place together once all are complete,\n"
            "so a failed or interrupted run leaves every existing file as it was (a\n"
            "replaced file keeps its mode); a character device or FIFO (/dev/null,\n"
            "/dev/stdout on a pipe) is written in place, and \"-\" is stdout; a symbolic\n"
            "link to a regular file is refused (give the file itself), and so are two\n"
            "options naming one file.\n"
            "\n"
            "Prints one summary line: device, path and kernel, shape, dtype, causal\n"
            "mask and the times: total; build, the call's time outside its kernels (the\n"
            "kernel builds it waited for, a driver's compilation at a kernel's first\n"
            "launch included, and the enqueueing); uploads; device, the kernels' own\n"
            "time from their profiling events; downloads (on stderr when an output\n"
            "goes to stdout).\n" CLI_EXIT_HELP);
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

enum { OPT_SCALE = 1 };

static const cli_option own_options[] = {
    { "q", required_argument, 0, CLI_STORE_TEXT, offsetof(run_args, q), "--q, --k, --v FILE",
      "the inputs: .npy, float32, float16 or bfloat16\n(pipes and FIFOs too)" },
    CLI_TEXT("k", "K.npy", run_args, k, NULL),
    CLI_TEXT("v", "V.npy", run_args, v, NULL),
    CLI_TEXT("out", "O.npy", run_args, out, "where O goes"),
    CLI_TEXT("lse-out", "FILE", run_args, lse_out,
             "also write each row's log-sum-exp, float32\n[B, H, Nq]"),
    CLI_VALUE("scale", "S", OPT_SCALE, "score scale (default 1/sqrt(d))"),
    CLI_TEXT("spread", "SCHEME", run_args, spread, "how a call is spread over several devices:\n"
              "auto, one, keys, queries or ring\n"
              "(clattn_group_set_scheme); under mpirun: auto,\n"
              "keys, allgather or ring"),
    CLI_FLAG("allow-oom", run_args, opts.allow_oom,
             "run even when the chosen path is predicted not\nto fit"),
    CLI_FLAG("check", run_args, check,
             "compare O with the CPU reference (double\n"
             "precision) on the same inputs, the cache's types\n"
             "included; status 1 past the dtype's tolerances"),
};

/* --scale; 0, or CLI_EXIT_USAGE after the message. */
static int set_option(void *state, const cli_option *option, const char *value)
{
    run_args *a = state;
    if (parse_scale(value, &a->opts.scale))
        return cli_usage_error(CMD, "bad --scale '%s' (a positive number a float holds: "
                               "normal, 1.2e-38 to 3.4e38)", value);
    return 0;
}

static const cli_default run_defaults[] = {
    { CLI_CAUSAL, "none" }, { CLI_PATH, "auto" }, { CLI_KERNEL, "auto" }, { CLI_SPLIT_KV, "0" },
    { 0, NULL },
};

static const cli_command run_command = {
    CMD, CLI_DEVICE | CLI_CAUSAL | CLI_PATH | CLI_KERNEL | CLI_KV_LENS | CLI_SPLIT_KV |
             CLI_PARAMS | CLI_JSON | CLI_VARIANTS | CLI_CACHE | CLI_Q_LENS,
    own_options, CLI_COUNT(own_options), set_option, usage, run_defaults,
};

/* The files run reads and writes, by option: the outputs (filled in
 * with their writers by write_outputs) and the inputs. */
static void run_files(const run_args *a, cli_file out[3], cli_file in[3])
{
    out[0] = (cli_file){ "--out", a->out, NULL, NULL };
    out[1] = (cli_file){ "--lse-out", a->lse_out, NULL, NULL };
    out[2] = (cli_file){ "--json", a->call.json, NULL, NULL };
    in[0] = (cli_file){ "--q", a->q, NULL, NULL };
    in[1] = (cli_file){ "--k", a->k, NULL, NULL };
    in[2] = (cli_file){ "--v", a->v, NULL, NULL };
}

/* Returns 0 to go on, -1 after --help, or CLI_EXIT_USAGE. */
static int parse_args(int argc, char **argv, run_args *a)
{
    memset(a, 0, sizeof *a);
    clattn_default_options(&a->opts);
    int rc = cli_parse_command(&run_command, argc, argv, &a->call, a);
    if (rc)
        return rc == 1 ? -1 : rc;
    cli_call_options(&a->call, &a->opts);
    a->cached = cli_cache_any(&a->call.cache);
    const char *missing = !a->q ? "--q" : !a->k ? "--k" : !a->v ? "--v" : !a->out ? "--out" : NULL;
    if (missing)
        return cli_usage_error(CMD, "missing %s", missing);
    cli_file out[3], in[3];
    run_files(a, out, in);
    return cli_check_files(CMD, out, 3, in, 3);
}

/* ------------------------------------------------------------------- inputs */

static const char *dtype_word(clattn_dtype d)
{
    return d == CLATTN_F16 ? "float16" : d == CLATTN_BF16 ? "bfloat16" : "float32";
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
    npy_format_shape(x, shape, sizeof shape);
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
    if (memcmp(k->shape, v->shape, 3 * sizeof k->shape[0]) != 0) {
        npy_format_shape(k, ks, sizeof ks);
        npy_format_shape(v, vs, sizeof vs);
        cli_error("%s %s and %s %s must agree on B, Hkv and Nk", a->k, ks, a->v, vs);
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
    if (q->shape[3] > CLATTN_HEAD_DIM_MAX) {
        cli_error("head dim d=%zu of %s is above the supported %d", q->shape[3], a->q,
                  CLATTN_HEAD_DIM_MAX);
        return 1;
    }
    if (v->shape[3] > 512) {
        cli_error("V's head dim dv=%zu of %s is above the supported 512", v->shape[3], a->v);
        return 1;
    }
    return 0;
}

static int check_inputs(run_args *a, const run_inputs *in, clattn_shape *shape)
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
    a->opts.head_dim_v = in->v.shape[3] != shape->head_dim ? in->v.shape[3] : 0;
    return 0;
}

/* The variants' tensors against the shape the files give (a mismatch is an
 * input error, status 1). */
static int load_variant(run_args *a, const clattn_shape *s)
{
    return cli_variant_load(CMD, &a->call, s, 0, CLI_EXIT_FAILURE, &a->variant, &a->opts);
}

/* O's elements: [B, H, Nq, dv]. */
static size_t o_elems(const clattn_shape *s, const clattn_options *o)
{
    return s->batch * s->heads * s->q_len * (o->head_dim_v ? o->head_dim_v : s->head_dim);
}

/* --kv-lens: one length per sequence, each at most Nk (checked against
 * the files, so a mismatch is an input error, status 1). */
static int check_kv_lens(const run_args *a, const clattn_shape *s)
{
    return cli_check_kv_lens(CMD, &a->call, s->batch, s->kv_len, a->q, CLI_EXIT_FAILURE) ||
           cli_check_q_lens(CMD, &a->call, s->batch, s->q_len, a->q, CLI_EXIT_FAILURE);
}

/* The cache's forms of the inputs (kvcache.h): the reference's options
 * from the call's, the device's into a->opts. */
static int make_cache(run_args *a, const run_inputs *in, const clattn_shape *s)
{
    a->ref_opts = a->opts;
    if (!a->cached)
        return 0;
    const size_t dv = a->opts.head_dim_v ? a->opts.head_dim_v : s->head_dim;
    int rc = cli_cache_make(&a->call.cache, s, dv, in->q.data, in->k.data, in->v.data,
                            a->call.kv_lens, a->call.q_lens, &a->cache, &a->ref_opts, &a->opts);
    if (rc < 0) {
        cli_lib_error("run: the KV cache", rc);
        return 1;
    }
    return 0;
}

/* --------------------------------------------------------------------- run */

static void print_summary(FILE *f, const run_args *args_of_summary, const run_result *r,
                          const clattn_shape *s, const clattn_options *o)
{
    char variant[256];
    cli_variant_describe(s, o, variant, sizeof variant);
    fprintf(f, "%s | path %s (%s) | B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu | %s | causal %s | ",
            r->device, cli_path_name(r->info.path), r->info.kernel, s->batch, s->heads,
            s->kv_heads, s->q_len, s->kv_len, s->head_dim, cli_dtype_name(s->dtype),
            cli_causal_name(o->causal));
    if (variant[0])
        fprintf(f, "%s | ", variant);
    char cache[128];
    cli_cache_describe(&args_of_summary->call.cache, s, cache, sizeof cache);
    if (cache[0])
        fprintf(f, "%s | ", cache);
    if (r->info.splits > 1)
        fprintf(f, "%u key splits | ", r->info.splits);
    fprintf(f, "%.3f ms: build %.3f ms, upload %.3f ms, device %.3f ms, download %.3f ms",
            1e3 * r->total, 1e3 * r->build, 1e3 * r->upload, 1e3 * r->device_s,
            1e3 * r->download);
    if (r->info.note[0])
        fprintf(f, " | %s", r->info.note);
    if (r->checked)
        fprintf(f, " | check max_abs %.2e rel_l2 %.2e %s", r->max_abs, r->rel_l2,
                r->check_ok ? "ok" : "FAIL");
    fputc('\n', f);
}

/* The device buffers of one run: Q, K, V, O and (--lse-out) LSE. */
struct run_buffers {
    cl_mem b[5];
};

static int cl_failed(const char *what, cl_int err)
{
    cli_error("run: %s: OpenCL error %d", what, (int)err);
    return 1;
}

/* What goes to the device: the cache's forms where they were made (its
 * quantized, paged or packed arrays), else the files'; and O's bytes. */
static void device_arrays(const run_args *a, const run_inputs *in, const clattn_shape *s,
                          const void *host[3], size_t bytes[4])
{
    const cli_cache_data *d = &a->cache;
    host[0] = in->q.data;
    host[1] = in->k.data;
    host[2] = in->v.data;
    bytes[0] = in->q.nbytes;
    bytes[1] = in->k.nbytes;
    bytes[2] = in->v.nbytes;
    bytes[3] = o_elems(s, &a->opts) * clattn_dtype_size(s->dtype);
    if (!a->cached)
        return;
    host[0] = d->dq ? d->dq : in->q.data;
    host[1] = d->dk ? d->dk : d->k ? d->k : in->k.data;
    host[2] = d->dv ? d->dv : d->v ? d->v : in->v.data;
    bytes[0] = d->q_bytes;
    bytes[1] = d->kd_bytes;
    bytes[2] = d->vd_bytes;
    bytes[3] = d->o_bytes;
}

/* Creates the buffers and uploads Q, K, V; the upload time is the
 * writes' wall time to the end of a clFinish. */
static int upload(clattn_ctx *ctx, const run_args *a, const run_inputs *in,
                  const clattn_shape *s, int want_lse, struct run_buffers *rb, run_result *r)
{
    static const char *const names[5] = { "Q", "K", "V", "O", "LSE" };
    const void *host[3];
    size_t bytes[5];
    device_arrays(a, in, s, host, bytes);
    bytes[4] = s->batch * s->heads * s->q_len * sizeof(float);
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
        if ((err = clEnqueueWriteBuffer(queue, rb->b[i], CL_FALSE, 0, bytes[i], host[i], 0,
                                        NULL, NULL)) != CL_SUCCESS)
            return cl_failed("uploading the inputs", err);
    if ((err = clFinish(queue)) != CL_SUCCESS)
        return cl_failed("uploading the inputs", err);
    r->upload = cli_now() - t0;
    return 0;
}

/* Reads O (and LSE) back into host arrays; a packed O into its plain form. */
static int download(clattn_ctx *ctx, const run_args *a, const run_inputs *in,
                    const clattn_shape *s, const struct run_buffers *rb, void *o, float *lse,
                    run_result *r)
{
    cl_command_queue queue = clattn_cl_queue(ctx);
    const void *host[3];
    size_t bytes[4];
    device_arrays(a, in, s, host, bytes);
    const int packed = a->cached && a->cache.cu_q;
    void *dest = packed ? malloc(bytes[3]) : o;
    if (!dest) {
        cli_error("run: out of memory for %zu bytes of output", bytes[3]);
        return 1;
    }
    const double t0 = cli_now();
    cl_int err = clEnqueueReadBuffer(queue, rb->b[3], CL_TRUE, 0, bytes[3], dest, 0, NULL, NULL);
    if (err == CL_SUCCESS && lse)
        err = clEnqueueReadBuffer(queue, rb->b[4], CL_TRUE, 0,
                                  s->batch * s->heads * s->q_len * sizeof(float), lse, 0, NULL,
                                  NULL);
    if (packed) {
        cli_cache_unpack_o(&a->cache, s, a->opts.head_dim_v ? a->opts.head_dim_v : s->head_dim,
                           dest, o);
        free(dest);
    }
    if (err != CL_SUCCESS)
        return cl_failed("downloading the outputs", err);
    r->download = cli_now() - t0;
    return 0;
}

/* --check: O against the CPU reference on the same inputs in their plain
 * form (the cache's quantized K and V where it has types). */
static int check_output(const run_args *a, const run_inputs *in, const clattn_shape *s,
                        const void *o, run_result *r)
{
    if (!a->check)
        return 0;
    const size_t dv = a->opts.head_dim_v ? a->opts.head_dim_v : s->head_dim;
    const size_t n = s->batch * s->heads * s->q_len * dv;
    double *ref = malloc(n * sizeof *ref);
    if (!ref) {
        cli_error("run: --check: out of memory for the reference");
        return 1;
    }
    const void *k = a->cache.k ? a->cache.k : in->k.data;
    const void *v = a->cache.v ? a->cache.v : in->v.data;
    int rc = clattn_reference_ex(s, &a->ref_opts, in->q.data, k, v, ref, NULL);
    clattn_shape os = *s;
    os.head_dim = dv;
    if (rc == 0)
        rc = clattn_compare(&os, o, ref, &r->max_abs, &r->rel_l2, &r->nan_count);
    free(ref);
    if (rc < 0) {
        cli_lib_error("run: --check", rc);
        return 1;
    }
    clattn_tolerance(s->dtype, &r->tol_abs, &r->tol_rel);
    r->checked = 1;
    r->check_ok = r->nan_count == 0 && r->max_abs <= r->tol_abs && r->rel_l2 <= r->tol_rel;
    return 0;
}

/* The call itself: enqueued on the tool's buffers, waited for. The device
 * time is its kernels' own, from their profiling events (launches.h: PoCL
 * compiles a kernel at its first launch, which a host clock, or the call's
 * last event alone, would count as the device's); the rest of the call's
 * wall time is the builds it waited for, first-launch compilation
 * included, and the enqueueing. Without those events, the wall time less
 * the builds the library reports. */
static int call(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *opts,
                const struct run_buffers *rb, run_result *r)
{
    clattn_extras ex = CLATTN_EXTRAS_INIT;
    ex.lse = rb->b[4];
    launches_take(NULL, 0);
    launches_record(1);
    const double t0 = cli_now();
    int rc = clattn_attention_ex_cl(ctx, s, opts, rb->b[0], rb->b[1], rb->b[2], rb->b[3], &ex, 0,
                                    NULL, NULL, &r->info);
    cl_int err = rc == 0 ? clFinish(clattn_cl_queue(ctx)) : CL_SUCCESS;
    const double wall = cli_now() - t0;
    launches_record(0);
    size_t n;
    const double kernels = launches_device_seconds(&n);
    if (rc) {
        cli_lib_error("run: attention", rc);
        return 1;
    }
    if (err != CL_SUCCESS)
        return cl_failed("running attention", err);
    const int timed = n > 0 && kernels >= 0 && kernels <= wall;
    r->device_s = timed ? kernels : wall - r->info.build_seconds;
    if (r->device_s < 0)
        r->device_s = 0;
    r->build = wall - r->device_s;
    return 0;
}

/* --device with several selectors: clattn_group_attention on the host
 * arrays, the whole call's time as its device time. */
static int run_group(const run_args *a, const run_inputs *in, const clattn_shape *shape, void *o,
                     float *lse, run_result *r)
{
    if (a->cached) {
        cli_error("run: a KV cache form runs on one device (--device with several takes "
                  "plain K and V)");
        return 1;
    }
    clattn_group *g = NULL;
    int rc = clattn_group_open(&g, a->call.device);
    if (rc < 0) {
        cli_lib_error("run: --device", rc);
        return 1;
    }
    if ((rc = clattn_group_set_scheme(g, a->spread)) < 0) {
        clattn_group_close(&g);
        cli_lib_error("run: --spread", rc);
        return 1;
    }
    const double t0 = cli_now();
    clattn_group_info gi;
    rc = clattn_group_attention(g, shape, &a->opts, in->q.data, in->k.data, in->v.data, o, lse,
                                &gi);
    r->total = r->device_s = cli_now() - t0;
    int n = snprintf(r->device, sizeof r->device, "%zu devices:", clattn_group_size(g));
    for (size_t i = 0; i < clattn_group_size(g) && n > 0 && (size_t)n < sizeof r->device; i++)
        n += snprintf(r->device + n, sizeof r->device - (size_t)n, "%s %s", i ? "," : "",
                      clattn_device_name(clattn_group_context(g, i)));
    clattn_group_close(&g);
    if (rc < 0) {
        cli_lib_error("run: attention over the group", rc);
        return 1;
    }
    r->info.path = a->opts.path == CLATTN_PATH_NAIVE ? CLATTN_PATH_NAIVE : CLATTN_PATH_FUSED;
    if (!strcmp(gi.scheme, "one")) {
        snprintf(r->info.kernel, sizeof r->info.kernel, "group, on the first device");
        snprintf(r->info.note, sizeof r->info.note, "not split: %.120s", gi.note);
    } else {
        snprintf(r->info.kernel, sizeof r->info.kernel, "group by %s over %zu devices",
                 gi.scheme, gi.devices);
    }
    return 0;
}

/* Under mpirun with several ranks: one clattn_mpi_attention call over
 * them, each rank on its own device (--device's r-th selector), sharded by
 * keys for one query row (or Nq != Nk) and by tokens otherwise; the whole
 * O on rank 0, the call's time the slowest rank's. Collective: every rank
 * returns the same status. */
static int run_ranks(const cli_ranks *ranks, const run_args *a, const run_inputs *in,
                     const clattn_shape *shape, void *o, float *lse, run_result *r)
{
    int rc = CLATTN_OK;
    cli_ranks_scheme asked = CLI_RANKS_AUTO;
    if (a->cached)
        rc = clattn_set_error(CLATTN_EUNSUPPORTED, "a KV cache form runs on one device "
                              "(under mpirun the ranks take plain K and V)");
    else if (cli_ranks_scheme_of(a->spread, &asked))
        rc = clattn_set_error(CLATTN_EINVAL, "--spread under mpirun: auto, keys, allgather "
                              "or ring");
    char sel[128];
    clattn_ctx *ctx = NULL;
    if (rc == CLATTN_OK)
        rc = clattn_open(&ctx, cli_ranks_selector(ranks, a->call.device, sel, sizeof sel));
    cli_ranks_share sh;
    memset(&sh, 0, sizeof sh);
    if (rc == CLATTN_OK)
        rc = cli_ranks_share_make(ranks, shape, &a->opts, asked, in->q.data,
                                  in->k.data, in->v.data, &sh);
    if (rc < 0)
        cli_lib_error(ranks->ranks > 1 && ctx ? "run: this rank's share" : "run: this rank", rc);
    /* No rank enters the call unless every rank can. */
    int status = cli_ranks_status(ranks, rc < 0);
    char scheme[16] = "";
    if (status == 0) {
        rc = cli_ranks_share_run(ranks, ctx, &sh, scheme, sizeof scheme, &r->device_s);
        if (rc == CLATTN_OK)
            rc = cli_ranks_share_gather(ranks, &sh, o, lse);
        if (rc < 0 && ranks->rank == 0)
            cli_lib_error("run: attention over the ranks", rc);
        status = rc < 0;
    }
    r->total = r->device_s;
    snprintf(r->device, sizeof r->device, "%d ranks (rank 0: %s)", ranks->ranks,
             ctx ? clattn_device_name(ctx) : "?");
    r->info.path = CLATTN_PATH_FUSED;
    snprintf(r->info.kernel, sizeof r->info.kernel, "mpi by %s over %d ranks",
             sh.tokens ? scheme : "keys", ranks->ranks);
    cli_ranks_share_free(&sh);
    clattn_close(&ctx);
    return cli_ranks_status(ranks, status);
}

/* Runs attention into the new host arrays *o (and *lse with --lse-out). The
 * model's memory check comes first, before any device buffer exists. */
static int run_attention(const cli_ranks *ranks, const run_args *a, const run_inputs *in,
                         const clattn_shape *shape, void **o, float **lse, run_result *r)
{
    size_t nbytes = o_elems(shape, &a->opts) * clattn_dtype_size(shape->dtype);
    *o = malloc(nbytes);
    *lse = a->lse_out ? malloc(shape->batch * shape->heads * shape->q_len * sizeof(float)) : NULL;
    if (!*o || (a->lse_out && !*lse)) {
        cli_error("run: out of memory for %zu bytes of output", nbytes);
        return cli_ranks_status(ranks, 1);
    }
    if (ranks->ranks > 1)
        return run_ranks(ranks, a, in, shape, *o, *lse, r);
    if (a->call.device && strchr(a->call.device, ','))
        return run_group(a, in, shape, *o, *lse, r);
    const clattn_options opts = a->opts;
    clattn_ctx *ctx = NULL;
    if (cli_open(a->call.device, &ctx))
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
    else if (upload(ctx, a, in, shape, a->lse_out != NULL, &rb, r) == 0 &&
             call(ctx, shape, &opts, &rb, r) == 0 &&
             download(ctx, a, in, shape, &rb, *o, *lse, r) == 0)
        status = 0;
    r->build += plan_build;
    r->total = cli_now() - t0;
    cli_release_buffers(rb.b, 5);
    clattn_close(&ctx);
    return status;
}

/* Catches an output path that cannot be written before the attention runs,
 * which may take long on a slow device; the write still has the last word. */
static int check_output_paths(const run_args *a)
{
    cli_file out[3], in[3];
    run_files(a, out, in);
    return cli_check_outputs(out, 3);
}

/* What the outputs are written from. */
struct run_outputs {
    const run_args *args;
    const clattn_shape *shape;
    const void *o;
    const float *lse;
    const run_result *result;
};

static int write_o(FILE *f, const char *path, const void *user, char *err, size_t cap)
{
    const struct run_outputs *r = user;
    const clattn_shape *s = r->shape;
    const clattn_options *o = &r->args->opts;
    const size_t shape[4] = { s->batch, s->heads, s->q_len,
                              o->head_dim_v ? o->head_dim_v : s->head_dim };
    return npy_write_stream(f, path, s->dtype, 4, shape, r->o, err, cap) ? -1 : 0;
}

static int write_lse(FILE *f, const char *path, const void *user, char *err, size_t cap)
{
    const struct run_outputs *r = user;
    const clattn_shape *s = r->shape;
    const size_t shape[3] = { s->batch, s->heads, s->q_len };
    return npy_write_stream(f, path, CLATTN_F32, 3, shape, r->lse, err, cap) ? -1 : 0;
}

static void json_report(FILE *f, const run_args *a, const clattn_shape *s, const run_result *r);

static int write_report(FILE *f, const char *path, const void *user, char *err, size_t cap)
{
    const struct run_outputs *r = user;
    json_report(f, r->args, r->shape, r->result);
    return 0;
}

/* O, the LSE and the report, committed together: a failure of one replaces
 * none of the others. */
static int write_outputs(const run_args *a, const clattn_shape *s, const void *o,
                         const float *lse, const run_result *result)
{
    const struct run_outputs r = { a, s, o, lse, result };
    cli_file out[3], in[3];
    run_files(a, out, in);
    out[0].write = write_o;
    out[1].write = write_lse;
    out[2].write = write_report;
    for (int i = 0; i < 3; i++)
        out[i].user = &r;
    return cli_write_outputs(out, 3);
}

/* --json: what ran, on what, and how long each part took. */
static void json_report(FILE *f, const run_args *a, const clattn_shape *s, const run_result *r)
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
    json_u32_list(j, "kv_lens", a->call.kv_lens, a->call.n_kv_lens);
    json_u64(j, "split_kv", a->opts.split_kv);
    cli_variant_json(j, s, &a->opts);
    json_u32_list(j, "q_lens", a->call.q_lens, a->call.n_q_lens);
    if (a->cached)
        cli_cache_json(j, &a->call.cache, s, &a->cache);
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
    if (r->checked) {
        json_open(j, "check", '{');
        json_num(j, "max_abs", r->max_abs, 0);
        json_num(j, "rel_l2", r->rel_l2, 0);
        json_num(j, "tol_max_abs", r->tol_abs, 0);
        json_num(j, "tol_rel_l2", r->tol_rel, 0);
        json_u64(j, "nan_count", r->nan_count);
        json_bool(j, "ok", r->check_ok);
        json_close(j, '}');
    }
    json_open(j, "outputs", '{');
    json_str(j, "o", a->out);
    json_str(j, "lse", a->lse_out);
    json_close(j, '}');
    json_end_document(j);
}

int cmd_run(int argc, char **argv)
{
    cli_ranks ranks;
    if (cli_ranks_begin(&argc, &argv, &ranks))
        return 1;
    run_args args;
    int status = parse_args(argc, argv, &args);
    if (status == 0 && !cli_spread_known(args.spread))
        status = cli_usage_error(CMD, "bad --spread '%.40s' (auto, one, keys, queries, "
                                 "allgather or ring)", args.spread);
    if (status) {
        cli_ranks_end(&ranks);
        return status < 0 ? 0 : status;
    }

    run_inputs in;
    memset(&in, 0, sizeof in);
    void *o = NULL;
    float *lse = NULL;
    clattn_shape shape;
    run_result result;
    memset(&result, 0, sizeof result);
    /* The summary comes last, so a line on stdout means the outputs were
     * written. */
    const int lead = ranks.rank == 0; /* under mpirun, rank 0 checks, writes and prints */
    status = load_inputs(&args, &in) || check_inputs(&args, &in, &shape) ||
             check_kv_lens(&args, &shape) || load_variant(&args, &shape) ||
             make_cache(&args, &in, &shape) || (lead && check_output_paths(&args));
    status = cli_ranks_status(&ranks, status) ||
             run_attention(&ranks, &args, &in, &shape, &o, &lse, &result) ||
             (lead && (check_output(&args, &in, &shape, o, &result) ||
                       write_outputs(&args, &shape, o, lse, &result)));
    const int to_stderr = outfile_is_stdout(args.out) ||
                          (args.call.json && outfile_is_stdout(args.call.json))
                          || (args.lse_out && outfile_is_stdout(args.lse_out));
    if (status == 0 && lead)
        print_summary(to_stderr ? stderr : stdout, &args, &result, &shape, &args.opts);
    if (status == 0 && result.checked && !result.check_ok)
        status = 1; /* the outputs are written: what failed can be looked at */
    status = cli_ranks_status(&ranks, status);
    cli_ranks_end(&ranks);
    free(o);
    free(lse);
    cli_cache_free(&args.cache);
    cli_variant_free(&args.variant);
    cli_call_free(&args.call);
    npy_free(&in.v);
    npy_free(&in.k);
    npy_free(&in.q);
    return status;
}
