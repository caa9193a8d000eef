/* SPDX-License-Identifier: MIT */
/* clattn verify: the naive and fused paths on the device against the CPU
 * reference, over the built-in shapes (cli/cases.h) or given ones. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "cli.h"
#include "commands.h"
#include "json.h"
#include "kvcache.h"
#include "options.h"
#include "outfile.h"
#include "verify.h"

#define CMD "verify"

/* Where the rows go (stderr when --json is stdout), and the JSON report's
 * array of cases, open while the cases run. */
struct verify_out {
    FILE *text;
    struct json *json;
};

static void usage(const cli_command *cmd, FILE *f)
{
    fprintf(f,
            "usage: clattn verify [options]\n"
            "\n"
            "Runs each path on random inputs (output poisoned with NaN first) and\n"
            "compares with the CPU reference in double precision. Without --shape it\n"
            "checks the built-in list of %zu shapes (decoding among them), then %zu cases\n"
            "of the attention variants (softcap, ALiBi, windows, sinks, masks, bf16,\n"
            "d_v != d, the snippets, and their combinations with GQA, bottom-right\n"
            "alignment, per-sequence lengths, split-KV and the LSE, compared too) and %zu\n"
            "of the KV cache's forms (q8_0, q4_0, fp8, pages of 16 and 256 keys, packed\n"
            "batches: the fused path's); --dtype, --causal, --split-kv, --kv-lens,\n"
            "--q-lens, the variant and the cache options describe a --shape. A path or\n"
            "kernel that does not take a case refuses it: the row says so and it counts\n"
            "as refused, neither passed nor failed. Status 1 if any case fails, or if\n"
            "none ran.\n"
            "\n"
            "options:\n", N_TEST_CASES, verify_variant_count() - verify_cache_case_count(),
            verify_cache_case_count());
    cli_print_options(cmd, f);
    fprintf(f, "\n--json writes every case's errors and kernel; on stdout, the rows go to\n"
               "stderr.\n" CLI_EXIT_HELP);
}

static const cli_default verify_defaults[] = {
    { CLI_DTYPE, "fp32" }, { CLI_CAUSAL, "none" }, { CLI_SPLIT_KV, "0" }, { CLI_KERNEL, "auto" },
    { CLI_PATH, "both" },  { CLI_SEED, "1" },      { 0, NULL },
};

static const cli_command verify_command = {
    CMD, CLI_DEVICE | CLI_SHAPE | CLI_DTYPE | CLI_CAUSAL | CLI_KV_LENS | CLI_SPLIT_KV |
             CLI_KERNEL | CLI_PATH | CLI_PATHS | CLI_PARAMS | CLI_SEED | CLI_JSON |
             CLI_VARIANTS | CLI_DV | CLI_RANDOM_INPUTS | CLI_CACHE | CLI_Q_LENS,
    NULL, 0, NULL, usage, verify_defaults,
};

/* The worst rel_l2 per [fused][dtype], and whether any case of each ran. */
struct verify_worst {
    double rel_l2[2][3];
    int ran[2][3];
};

/* One case to check: its shape and the options it runs with (the lengths
 * point into the case list or the call), or a variant case. */
struct verify_case {
    clattn_shape shape;
    clattn_options opts;
    const verify_variant *variant; /* NULL: a plain case, through clattn_check */
};

/* What came of one case on one path. */
enum verify_outcome { V_FAILED = 0, V_PASSED = 1, V_SKIPPED = 2, V_REFUSED = 3, V_LOST = -1 };

/* The tallies of run_cases. */
struct verify_counts {
    size_t run, skipped, refused;
    long failed;
};

/* One case as an element of the JSON report's "cases". */
static void json_case(struct json *j, const struct verify_case *c, clattn_path path, int rc,
                      const verify_result *r)
{
    const clattn_options *o = c->variant ? &c->variant->opts : &c->opts;
    json_open(j, NULL, '{');
    json_str(j, "path", cli_path_name(path));
    json_str(j, "dtype", cli_dtype_name(c->shape.dtype));
    json_str(j, "causal", cli_causal_name(o->causal));
    json_open(j, "shape", '{');
    json_shape_fields(j, &c->shape);
    json_close(j, '}');
    json_u32_list(j, "kv_lens", o->kv_lens, c->shape.batch);
    json_u64(j, "split_kv", o->split_kv);
    if (c->variant) {
        json_str(j, "case", c->variant->name);
        cli_variant_json(j, &c->shape, o);
        json_u32_list(j, "q_lens", o->q_lens, c->shape.batch);
        if (cli_cache_any(&c->variant->cache))
            cli_cache_json(j, &c->variant->cache, &c->shape, NULL);
    }
    if (rc < 0) {
        json_str(j, "error", clattn_error_name(rc));
        json_str(j, "detail", clattn_last_error_detail());
        json_bool(j, "refused", rc == CLATTN_EUNSUPPORTED);
        json_bool(j, "passed", 0);
    } else {
        json_null(j, "error");
        json_num(j, "max_abs", r->max_abs, 0);
        json_num(j, "rel_l2", r->rel_l2, 0);
        json_num(j, "tol_max_abs", r->tol_max_abs, 0);
        json_num(j, "tol_rel_l2", r->tol_rel_l2, 0);
        json_u64(j, "unwritten", r->unwritten);
        if (c->variant && c->variant->lse)
            json_num(j, "lse_max_err", r->lse_max_err, 0);
        json_bool(j, "passed", r->passed);
        json_str(j, "kernel", r->info.kernel);
        json_u64(j, "splits", r->info.splits);
        json_num(j, "seconds", r->seconds, 0);
    }
    json_close(j, '}');
}

/* The row's description: path, dtype, mask, shape, lengths and variant. */
static void print_case(FILE *f, const struct verify_case *c, clattn_path path)
{
    const clattn_shape *s = &c->shape;
    const clattn_options *o = c->variant ? &c->variant->opts : &c->opts;
    fprintf(f, "%-5s %-4s %-12s B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu", cli_path_name(path),
            cli_dtype_name(s->dtype), cli_causal_name(o->causal), s->batch, s->heads,
            s->kv_heads, s->q_len, s->kv_len, s->head_dim);
    if (o->kv_lens) {
        fprintf(f, " kv_lens=");
        for (size_t i = 0; i < s->batch; i++)
            fprintf(f, "%s%u", i ? "," : "", o->kv_lens[i]);
    }
    if (c->variant) {
        char what[256], cache[128];
        cli_variant_describe(s, o, what, sizeof what);
        cli_cache_describe(&c->variant->cache, s, cache, sizeof cache);
        if (o->q_lens) {
            fprintf(f, " q_lens=");
            for (size_t i = 0; i < s->batch; i++)
                fprintf(f, "%s%u", i ? "," : "", o->q_lens[i]);
        }
        fprintf(f, "%s%s%s%s%s", what[0] ? " " : "", what, cache[0] ? " " : "", cache,
                c->variant->lse ? " +LSE" : "");
        if (o->split_kv)
            fprintf(f, " split=%u", o->split_kv);
        fprintf(f, " (%s)", c->variant->name);
    }
    fprintf(f, "  ");
}

/* clattn_check's result as the variant check's. */
static int check_plain(clattn_ctx *ctx, const struct verify_case *c, clattn_path path,
                       uint64_t seed, verify_result *r)
{
    clattn_options o = c->opts;
    o.path = path;
    clattn_check_result cr;
    memset(r, 0, sizeof *r);
    int rc = clattn_check(ctx, &c->shape, &o, seed, &cr);
    if (rc < 0)
        return rc;
    *r = (verify_result){ .max_abs = cr.max_abs, .rel_l2 = cr.rel_l2,
                          .tol_max_abs = cr.tol_max_abs, .tol_rel_l2 = cr.tol_rel_l2,
                          .unwritten = cr.unwritten, .lse_ok = 1, .passed = cr.passed,
                          .seconds = cr.seconds, .info = cr.info };
    return CLATTN_OK;
}

/* Checks one case on one path and prints its row. */
static enum verify_outcome verify_case(clattn_ctx *ctx, const struct verify_case *c,
                                       clattn_path path, uint64_t seed,
                                       struct verify_worst *worst, const struct verify_out *out)
{
    FILE *f = out->text;
    const clattn_shape *s = &c->shape;
    const clattn_options *o = c->variant ? &c->variant->opts : &c->opts;
    print_case(f, c, path);
    char why[200];
    if (o->fused_kernel != CLATTN_FUSED_AUTO && path == CLATTN_PATH_FUSED &&
        clattn_fused_kernel_usable(ctx, o->fused_kernel, s, why, sizeof why) == 0) {
        fprintf(f, "skipped: %s\n", why);
        return V_SKIPPED;
    }
    verify_result r;
    int rc = c->variant ? verify_variant_run(ctx, c->variant, path, seed, &r)
                        : check_plain(ctx, c, path, seed, &r);
    if (out->json)
        json_case(out->json, c, path, rc, &r);
    if (rc == CLATTN_EUNSUPPORTED) {
        fprintf(f, "refused: %s\n", clattn_last_error_detail());
        return V_REFUSED;
    }
    if (rc < 0) {
        fprintf(f, "ERROR %s: %s\n", clattn_error_name(rc), clattn_last_error_detail());
        return rc == CLATTN_EDEVLOST ? V_LOST : V_FAILED;
    }
    fprintf(f, "max_abs %.2e  rel_l2 %.2e", r.max_abs, r.rel_l2);
    if (c->variant && c->variant->lse)
        fprintf(f, "  lse %.1e", r.lse_max_err);
    fprintf(f, "  %s%s  [%s", r.passed ? "ok" : "FAIL", r.unwritten ? " (unwritten outputs)" : "",
            r.info.kernel);
    if (r.info.splits > 1)
        fprintf(f, ", %u splits", r.info.splits);
    fprintf(f, "]\n");
    fflush(f);
    const int p = path == CLATTN_PATH_FUSED, d = s->dtype == CLATTN_BF16 ? 2 : s->dtype == CLATTN_F16;
    if (!worst->ran[p][d] || r.rel_l2 > worst->rel_l2[p][d])
        worst->rel_l2[p][d] = r.rel_l2;
    worst->ran[p][d] = 1;
    return r.passed ? V_PASSED : V_FAILED;
}

/* The given case (--shape and what describes it); 0, or a status after
 * the message. A variant makes it a variant case, its tensors loaded. */
static int given_case(const cli_call *call, struct verify_case *c, verify_variant *v)
{
    c->shape = (clattn_shape){ call->batch, call->heads, call->kv_heads, call->q_len,
                               call->lens[0], call->head_dims[0], call->dtype };
    c->variant = NULL;
    int rc = cli_check_shape(CMD, &c->shape);
    if (rc == 0)
        rc = cli_check_kv_lens(CMD, call, c->shape.batch, c->shape.kv_len, "--shape",
                               CLI_EXIT_USAGE);
    if (rc)
        return rc;
    int any = !call->kv_lens;
    for (size_t i = 0; i < call->n_kv_lens; i++)
        any |= call->kv_lens[i] != 0;
    if (rc == 0)
        rc = cli_check_q_lens(CMD, call, c->shape.batch, c->shape.q_len, "--shape",
                              CLI_EXIT_USAGE);
    if (rc)
        return rc;
    if (!any)
        return cli_usage_error(CMD, "--kv-lens: every length is 0 (nothing to verify)");
    clattn_default_options(&c->opts);
    cli_call_options(call, &c->opts);
    if (!cli_variant_any(&call->variant) && !cli_cache_any(&call->cache) && !call->q_lens)
        return 0;
    memset(v, 0, sizeof *v);
    v->name = "given";
    v->shape = c->shape;
    v->opts = c->opts;
    v->lse = 1;
    rc = cli_variant_load(CMD, call, &c->shape, call->seed, CLI_EXIT_USAGE, &v->data, &v->opts);
    v->ref = v->opts;
    v->cache = call->cache;
    c->variant = v;
    return rc;
}

/* 0 to go on, -1 after --help, else a status after the message. */
static int parse_args(int argc, char **argv, cli_call *call, struct verify_case *given,
                      verify_variant *v)
{
    int rc = cli_parse_command(&verify_command, argc, argv, call, NULL);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (!call->paths)
        call->paths = CLI_PATHS_BOTH;
    if (!(call->given & CLI_SEED))
        call->seed = 1;
    const unsigned describing = CLI_DTYPE | CLI_CAUSAL | CLI_SPLIT_KV | CLI_KV_LENS | CLI_DV |
                                CLI_CACHE | CLI_Q_LENS;
    if (((call->given & describing) || cli_variant_any(&call->variant)) &&
        !(call->given & CLI_SHAPE))
        rc = cli_usage_error(CMD, "--dtype, --causal, --split-kv, --kv-lens, --q-lens, the "
                             "cache and the variant options go with --shape");
    else if (call->given & CLI_SHAPE)
        rc = given_case(call, given, v);
    if (rc) {
        verify_variant_free(v);
        cli_call_free(call);
    }
    return rc;
}

/* Checks one case on every path the call asks; 0, or -1 when the context
 * was lost. */
static int run_paths(clattn_ctx *ctx, const cli_call *call, const struct verify_case *c,
                     uint64_t seed, const struct verify_out *out, struct verify_counts *n,
                     struct verify_worst *worst, size_t total)
{
    for (int p = 0; p < 2; p++) {
        const clattn_path path = p ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE;
        if (!(call->paths & CLI_PATH_BIT(path)))
            continue;
        const enum verify_outcome ok = verify_case(ctx, c, path, seed, worst, out);
        if (ok == V_SKIPPED || ok == V_REFUSED) {
            ++*(ok == V_SKIPPED ? &n->skipped : &n->refused);
            continue;
        }
        n->run++;
        n->failed += ok != V_PASSED;
        if (ok == V_LOST) {
            cli_error("verify: the device faulted and the context is lost; ending after "
                      "%zu of %zu cases", n->run, total);
            return -1;
        }
    }
    return 0;
}

/* Runs the cases: the given one, or the built-in plain then variant ones.
 * 0, or -1 when the context was lost. */
static int run_cases(clattn_ctx *ctx, const cli_call *call, const struct verify_case *given,
                     const struct verify_out *out, struct verify_counts *n,
                     struct verify_worst *worst)
{
    if (given)
        return run_paths(ctx, call, given, call->seed, out, n, worst, 2);
    const size_t total = 2 * (N_TEST_CASES + verify_variant_count());
    for (size_t i = 0; i < N_TEST_CASES; i++) {
        struct verify_case c = { test_case_shape(&test_cases[i]), { 0 }, NULL };
        clattn_default_options(&c.opts);
        cli_call_options(call, &c.opts);
        test_case_options(&test_cases[i], &c.opts);
        if (run_paths(ctx, call, &c, call->seed + 7 * i, out, n, worst, total) < 0)
            return -1;
    }
    clattn_options base;
    clattn_default_options(&base);
    cli_call_options(call, &base);
    for (size_t i = 0; i < verify_variant_count(); i++) {
        verify_variant v;
        const uint64_t seed = call->seed + 7 * (N_TEST_CASES + i);
        int rc = verify_variant_make(i, &base, seed, &v);
        struct verify_case c = { v.shape, v.opts, &v };
        if (rc < 0) {
            cli_error("verify: %s: out of memory", v.name);
            verify_variant_free(&v);
            return -1;
        }
        rc = run_paths(ctx, call, &c, seed, out, n, worst, total);
        verify_variant_free(&v);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The closing lines: the worst errors (a path or dtype no case ran has no
 * figure) and the counts. */
static void print_summary(FILE *f, const struct verify_worst *worst,
                          const struct verify_counts *n)
{
    static const char *const dtypes[3] = { "fp32", "fp16", "bf16" };
    double tol[3], ta;
    for (int d = 0; d < 3; d++)
        clattn_tolerance(d == 0 ? CLATTN_F32 : d == 1 ? CLATTN_F16 : CLATTN_BF16, &ta, &tol[d]);
    fprintf(f, "worst rel_l2:");
    for (int p = 0; p < 2; p++)
        for (int d = 0; d < 3; d++) {
            if (p == 0 && d == 2)
                continue; /* the naive path takes no bf16 */
            fprintf(f, "%s %s %s ", p || d ? "," : "", p ? "fused" : "naive", dtypes[d]);
            if (worst->ran[p][d])
                fprintf(f, "%.2e", worst->rel_l2[p][d]);
            else
                fprintf(f, "not run");
        }
    fprintf(f, " (tolerance fp32 %.0e, fp16 %.0e, bf16 %.1e)\n", tol[0], tol[1], tol[2]);
    fprintf(f, "%zu passed, %ld failed", n->run - (size_t)n->failed, n->failed);
    if (n->skipped)
        fprintf(f, ", %zu skipped (the kernel asked for cannot run them here)", n->skipped);
    if (n->refused)
        fprintf(f, ", %zu refused (the path or kernel does not take the case)", n->refused);
    fprintf(f, "\n");
}

int cmd_verify(int argc, char **argv)
{
    cli_call call;
    struct verify_case given;
    verify_variant given_variant;
    memset(&given_variant, 0, sizeof given_variant);
    int status = parse_args(argc, argv, &call, &given, &given_variant);
    if (status)
        return status < 0 ? CLI_EXIT_OK : status;
    const char *json = call.json;
    status = cli_output_check(json) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    struct verify_out out = { json && outfile_is_stdout(json) ? stderr : stdout, NULL };
    clattn_ctx *ctx;
    outfile jf;
    struct json j;
    if (status || cli_open_with_report(call.device, json, "verify", &ctx, &jf, &j)) {
        verify_variant_free(&given_variant);
        cli_call_free(&call);
        return CLI_EXIT_FAILURE;
    }
    if (json) {
        out.json = &j;
        json_u64(&j, "seed", call.seed);
        json_open(&j, "cases", '[');
    }
    fprintf(out.text, "device: %s\n", clattn_device_name(ctx));
    struct verify_counts n = { 0, 0, 0, 0 };
    struct verify_worst worst;
    memset(&worst, 0, sizeof worst);
    const int lost = run_cases(ctx, &call, call.given & CLI_SHAPE ? &given : NULL, &out, &n,
                               &worst) < 0;
    if (!lost)
        print_summary(out.text, &worst, &n);
    clattn_close(&ctx);
    long failed = lost ? -1 : n.failed;
    if (json) {
        json_close(&j, ']');
        json_u64(&j, "run", n.run);
        json_u64(&j, "skipped", n.skipped);
        json_u64(&j, "refused", n.refused);
        json_bool(&j, "context_lost", lost);
        if (!lost)
            json_u64(&j, "failed", (uint64_t)n.failed);
        json_end_document(&j);
        if (cli_output_commit(&jf))
            failed = failed ? failed : 1;
    }
    verify_variant_free(&given_variant);
    cli_call_free(&call);
    /* Nothing run (every case skipped or refused) proves nothing: a failure too. */
    return failed || n.run == 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
