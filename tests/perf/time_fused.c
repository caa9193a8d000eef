/* Times one attention call shape through the public API on device buffers,
 * for the side-by-side scripts (tools/cpu/, tools/gpu/), with the library's
 * timing helper (clattn_time_attention_cl): an untimed warm-up call (it
 * builds the kernels; correctness is `clattn verify`'s job), then BATCHES
 * samples of REPS calls enqueued back to back and timed together with
 * clFinish on the host clock (CLATTN_CLOCK_HOST). Back to back, every kernel of a call (a
 * split's combine too) and the gaps between them count, as a CUDA-event
 * timing of a PyTorch call counts them; one figure per batch (seconds per
 * call). Then REPS calls on the device's clock (CLATTN_CLOCK_EVENTS: each
 * from the end of the command before it to its own end, run back to back)
 * for the device's time per call, without the host clock's share of the
 * first launch and the last clFinish.
 *
 * usage: time_fused B,H,Hkv,Nq,Nk,d fp32|fp16 none|top-left|bottom-right
 *                   KERNEL|auto|naive REPS [BATCHES [BMxBN[xTM] [SPLITS]]]
 *    or: time_fused --shape B,H,Hkv,Nq,Nk,d [--dtype T] [--causal MODE]
 *                   [--path naive|fused|auto] [--kernel K] [--split-kv N]
 *                   [--kv-lens L0,...] [--params LIST] [--device SEL]
 *                   [--tiles BMxBN[xTM]] [--reps N] [--batches N] [the variants:
 *                   --softcap, --window, --alibi, --sinks, --mask, --score-mod, ...]
 * The second form takes the options of the clattn commands (cli/options.h;
 * time_fused --help lists them); the first is read as the second (KERNEL
 * is --path fused --kernel KERNEL, naive is --path naive; tiles and splits
 * 0 or absent are the library's choice; BATCHES defaults to 5).
 * A KV cache form (--kv-type, --k-type, --v-type, --page-size, --packed
 * with --q-lens and --kv-lens) is made by cli/kvcache.h from inputs drawn
 * on the host, as clattn bench makes it; plain inputs are drawn on the
 * device. Prints one JSON line: the shape, dtype and mask, the cache form
 * ("cache": "" for the plain one), the kernel the library ran, its splits
 * and tiles, the per-call times of each batch ("times"), the process CPU
 * seconds per call ("cpu_per_call", robust to other jobs on a shared CPU)
 * and the device's time per call ("device_per_call_s").
 * Exit status 1 when a call fails, 2 for a bad command line. */
#define CL_TARGET_OPENCL_VERSION 120
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include <clattn/clattn.h>

#include "cli.h"
#include "kvcache.h"
#include "options.h"
#include "variant.h"

#define CMD "time_fused"

struct args {
    cli_call call;
    clattn_options opts;
    size_t reps, batches;
};

static double cpu_seconds(void)
{
    struct rusage u;
    getrusage(RUSAGE_SELF, &u);
    return (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
           (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
}

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f, "usage: time_fused B,H,Hkv,Nq,Nk,d fp32|fp16 none|top-left|bottom-right\n"
               "                  KERNEL|auto|naive REPS [BATCHES [BMxBN[xTM] [SPLITS]]]\n"
               "   or: time_fused --shape B,H,Hkv,Nq,Nk,d [options]\n\noptions:\n");
    cli_print_options(cmd, f);
    fprintf(f, "\nPrints one JSON line (tests/perf/time_fused.c says what it holds).\n");
}

enum { OPT_REPS = 1, OPT_BATCHES, OPT_TILES };

static const cli_option own_options[] = {
    CLI_VALUE("reps", "N", OPT_REPS, "calls per timed batch (default 20)"),
    CLI_VALUE("batches", "N", OPT_BATCHES, "timed batches (default 5)"),
    CLI_VALUE("tiles", "BMxBN[xTM]", OPT_TILES, "the fused tiles (default: the library's)"),
};

static int set_option(void *state, const cli_option *option, const char *v)
{
    struct args *a = state;
    clattn_options *o = &a->opts;
    if (option->id == OPT_TILES) {
        if (!strcmp(v, "0"))
            return 0;
        if (sscanf(v, "%zux%zux%zu", &o->block_m, &o->block_n, &o->rows_per_item) < 2)
            return cli_usage_error(CMD, "bad --tiles '%s' (BMxBN or BMxBNxTM)", v);
        return 0;
    }
    size_t *n = option->id == OPT_REPS ? &a->reps : &a->batches;
    if (cli_parse_size(v, n) < 0 || *n < 1 || *n > 1000000)
        return cli_usage_error(CMD, "bad --%s '%s' (a count, 1 .. 1000000)", option->name, v);
    return 0;
}

static const cli_command command = {
    CMD, CLI_DEVICE | CLI_SHAPE | CLI_DTYPE | CLI_CAUSAL | CLI_PATH | CLI_KERNEL | CLI_SPLIT_KV |
             CLI_KV_LENS | CLI_PARAMS | CLI_CACHE | CLI_Q_LENS | CLI_VARIANTS,
    own_options, CLI_COUNT(own_options), set_option, usage, NULL,
};

/* The positional form as the options it stands for, into words[]. */
static int positional(int argc, char **argv, char **words, int cap)
{
    if (argc < 6 || argc > 9) {
        usage(&command, stderr);
        return -1;
    }
    int n = 0;
    char *fixed[] = { argv[0], "--shape", argv[1], "--dtype", argv[2], "--causal", argv[3] };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        words[n++] = fixed[i];
    words[n++] = "--path";
    words[n++] = strcmp(argv[4], "naive") ? "fused" : "naive";
    if (strcmp(argv[4], "naive")) {
        words[n++] = "--kernel";
        words[n++] = argv[4];
    }
    static char *const names[] = { "--reps", "--batches", "--tiles", "--split-kv" };
    for (int i = 5; i < argc && n + 2 <= cap; i++) {
        words[n++] = names[i - 5];
        words[n++] = argv[i];
    }
    return n;
}

static int parse(int argc, char **argv, struct args *a)
{
    char *words[24];
    if (argc > 1 && argv[1][0] != '-') {
        argc = positional(argc, argv, words, 24);
        if (argc < 0)
            return 2;
        argv = words;
    }
    memset(a, 0, sizeof *a);
    clattn_default_options(&a->opts);
    a->reps = 20;
    a->batches = 5;
    int rc = cli_parse_command(&command, argc, argv, &a->call, a);
    if (rc)
        return rc == 1 ? 0 : rc;
    if (!(a->call.given & CLI_SHAPE)) {
        cli_call_free(&a->call);
        return cli_usage_error(CMD, "missing --shape");
    }
    const size_t block_m = a->opts.block_m, block_n = a->opts.block_n, rows = a->opts.rows_per_item;
    cli_call_options(&a->call, &a->opts);
    a->opts.block_m = block_m;
    a->opts.block_n = block_n;
    a->opts.rows_per_item = rows;
    return -1;
}

static int fail(const char *what, int rc)
{
    fprintf(stderr, "time_fused: %s: %s: %s\n", what, clattn_strerror(rc),
            clattn_last_error_detail());
    return 1;
}

/* One timing of `calls` calls per sample, `samples` samples, on `clock`. */
static int time_calls(clattn_ctx *ctx, const clattn_shape *s, const clattn_options *o,
                      cl_mem *b, clattn_clock clock, size_t calls, size_t samples,
                      uint32_t warmup, clattn_timing *out, clattn_run_info *info)
{
    clattn_timing_options t;
    clattn_default_timing_options(&t);
    t.clock = clock;
    t.calls_per_sample = (uint32_t)calls;
    t.min_samples = t.max_samples = (uint32_t)samples;
    t.target_seconds = 0;
    t.warmup_calls = warmup;
    return clattn_time_attention_cl(ctx, s, o, b[0], b[1], b[2], b[3], NULL, &t, out, info);
}

static int measure(const struct args *a, const clattn_shape *s, clattn_ctx *ctx, cl_mem *b)
{
    const clattn_options *o = &a->opts;
    clattn_run_info info;
    clattn_timing t;
    double *times = calloc(a->batches, sizeof *times);
    if (!times)
        return fail("timed calls", CLATTN_ENOMEM);
    /* The warm-up call apart, so that the CPU seconds are the timed calls'. */
    int rc = clattn_attention_cl(ctx, s, o, b[0], b[1], b[2], b[3], 0, NULL, NULL, &info);
    if (rc >= 0 && clFinish(clattn_cl_queue(ctx)) != CL_SUCCESS)
        rc = CLATTN_EDEVLOST;
    const double cpu0 = cpu_seconds();
    for (size_t i = 0; i < a->batches && rc >= 0; i++) {
        rc = time_calls(ctx, s, o, b, CLATTN_CLOCK_HOST, a->reps, 1, 0, &t, &info);
        times[i] = t.median_s;
    }
    const double cpu = (cpu_seconds() - cpu0) / ((double)a->reps * (double)a->batches);
    clattn_timing device;
    if (rc >= 0)
        rc = time_calls(ctx, s, o, b, CLATTN_CLOCK_EVENTS, 1, a->reps, 0, &device, NULL);
    clattn_fused_plan plan;
    memset(&plan, 0, sizeof plan);
    if (rc >= 0 && info.path == CLATTN_PATH_FUSED)
        rc = clattn_plan_fused(ctx, s, o, &plan);
    if (rc < 0) {
        free(times);
        return fail("timed calls", rc);
    }
    char cache[64];
    cli_cache_describe(&a->call.cache, s, cache, sizeof cache);
    printf("{\"shape\": \"%zu,%zu,%zu,%zu,%zu,%zu\", \"dtype\": \"%s\", \"causal\": \"%s\", "
           "\"cache\": \"%s\", \"kernel\": \"%s\", \"splits\": %u, \"block_m\": %zu, "
           "\"block_n\": %zu, \"rows_per_item\": %zu, \"times\": [", s->batch, s->heads,
           s->kv_heads, s->q_len, s->kv_len, s->head_dim, cli_dtype_name(s->dtype),
           cli_causal_name(o->causal), cache, info.kernel, info.splits, plan.block_m,
           plan.block_n, plan.rows_per_item);
    for (size_t i = 0; i < a->batches; i++)
        printf("%s%.6g", i ? ", " : "", times[i]);
    printf("], \"cpu_per_call\": %.6g, \"device_per_call_s\": %.6g}\n", cpu, device.median_s);
    free(times);
    return 0;
}

int main(int argc, char **argv)
{
    cli_set_program(CMD);
    struct args a;
    int status = parse(argc, argv, &a);
    if (status >= 0)
        return status;
    const cli_call *c = &a.call;
    const clattn_shape s = { c->batch, c->heads, c->kv_heads, c->q_len, c->lens[0],
                             c->head_dims[0], c->given & CLI_DTYPE ? c->dtype : CLATTN_F32 };
    clattn_ctx *ctx = NULL;
    cl_mem b[4] = { NULL, NULL, NULL, NULL };
    status = cli_check_shape(CMD, &s) ? 2
             : cli_check_kv_lens(CMD, c, s.batch, s.kv_len, "--shape", 2) ? 2
             : cli_open(c->device, &ctx) ? 1 : 0;
    const size_t es = clattn_dtype_size(s.dtype), elems[4] = {
        clattn_shape_q_elems(&s), clattn_shape_kv_elems(&s), clattn_shape_kv_elems(&s),
        clattn_shape_q_elems(&s) };
    cli_cache_data cache;
    memset(&cache, 0, sizeof cache);
    cli_variant_data variant;
    memset(&variant, 0, sizeof variant);
    if (status == 0)
        status = cli_variant_load(CMD, c, &s, 1, 2, &variant, &a.opts);
    const int cached = cli_cache_any(&c->cache);
    if (status == 0 && cached) {
        const int rc = cli_cache_upload(ctx, &c->cache, &s, s.head_dim, 1, &cache, &a.opts, b);
        status = rc < 0 ? fail("the KV cache's inputs", rc) : 0;
    }
    for (int i = 0; i < 4 && status == 0 && !cached; i++) {
        cl_int err;
        b[i] = clCreateBuffer(clattn_cl_context(ctx), CL_MEM_READ_WRITE, elems[i] * es, NULL, &err);
        /* Random inputs: a softmax over zeros is not the work being timed. */
        int rc = err != CL_SUCCESS ? CLATTN_EOOM
                 : i < 3 ? clattn_random_fill_cl(ctx, b[i], elems[i], s.dtype, 1 + (uint32_t)i)
                         : 0;
        if (rc < 0)
            status = fail("inputs", rc);
    }
    if (status == 0)
        status = measure(&a, &s, ctx, b);
    cli_release_buffers(b, 4);
    cli_cache_free(&cache);
    cli_variant_free(&variant);
    clattn_close(&ctx);
    cli_call_free(&a.call);
    return status;
}
