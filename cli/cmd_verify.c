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
#include "outfile.h"

#define CMD "verify"

/* Where the rows go (stderr when --json is stdout), and the JSON report's
 * array of cases, open while the cases run. */
struct verify_out {
    FILE *text;
    struct json *json;
};

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn verify [--device SEL] [--path naive|fused|both] [--seed N]\n"
            "                     [--kernel auto|NAME] [--json FILE]\n"
            "                     [--shape B,H,Hkv,Nq,Nk,d --dtype fp32|fp16 --causal MODE\n"
            "                      --split-kv N --kv-lens L0,L1,...]\n"
            "Runs each path on random inputs (output poisoned with NaN first) and\n"
            "compares with the CPU reference in double precision. Without --shape it\n"
            "checks the built-in list of %zu shapes (decoding among them). --split-kv\n"
            "splits each sequence's keys into N chunks (0: the library's choice);\n"
            "--kv-lens gives each sequence its own length (B of them, each <= Nk).\n"
            "--json FILE writes every case's errors and kernel (\"-\": stdout, the rows\n"
            "then go to stderr). Status 1 if any case fails.\n" CLI_EXIT_HELP,
            N_TEST_CASES);
}

static int parse_shape(const char *s, struct test_case *c)
{
    size_t v[6], n;
    if (cli_parse_size_list(s, v, 6, &n) < 0 || n != 6)
        return -1;
    c->b = v[0], c->h = v[1], c->hkv = v[2], c->nq = v[3], c->nk = v[4], c->d = v[5];
    return 0;
}

/* "L0,L1,..": one length per sequence, each at most Nk. */
static int parse_kv_lens(const char *s, struct test_case *c)
{
    uint32_t v[TEST_CASE_MAX_BATCH];
    size_t n;
    if (c->b > TEST_CASE_MAX_BATCH) {
        cli_usage_error(CMD, "--kv-lens takes at most %d sequences", TEST_CASE_MAX_BATCH);
        return -1;
    }
    if (cli_parse_lens(s, v, TEST_CASE_MAX_BATCH, &n) < 0 || n != c->b) {
        cli_usage_error(CMD, "--kv-lens needs %zu lengths (one per sequence), got '%s'", c->b, s);
        return -1;
    }
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] > c->nk) {
            cli_usage_error(CMD, "--kv-lens: %u is more than Nk = %zu", v[i], c->nk);
            return -1;
        }
        c->kv_lens[i] = v[i];
        any |= v[i] != 0;
    }
    if (!any) {
        cli_usage_error(CMD, "--kv-lens: every length is 0 (nothing to verify)");
        return -1;
    }
    return 0;
}

/* One case as an element of the JSON report's "cases". */
static void json_case(struct json *j, const struct test_case *c, const clattn_options *opts,
                      int rc, const clattn_check_result *r)
{
    json_open(j, NULL, '{');
    json_str(j, "path", cli_path_name(opts->path));
    json_str(j, "dtype", cli_dtype_name(c->dtype));
    json_str(j, "causal", cli_causal_name(c->causal));
    json_open(j, "shape", '{');
    const clattn_shape shape = test_case_shape(c);
    json_shape_fields(j, &shape);
    json_close(j, '}');
    if (opts->kv_lens) {
        json_open(j, "kv_lens", '[');
        for (size_t i = 0; i < c->b; i++)
            json_u64(j, NULL, c->kv_lens[i]);
        json_close(j, ']');
    } else {
        json_null(j, "kv_lens");
    }
    json_u64(j, "split_kv", c->split_kv);
    if (rc < 0) {
        json_str(j, "error", clattn_error_name(rc));
        json_str(j, "detail", clattn_last_error_detail());
        json_bool(j, "passed", 0);
    } else {
        json_null(j, "error");
        json_num(j, "max_abs", r->max_abs, 0);
        json_num(j, "rel_l2", r->rel_l2, 0);
        json_num(j, "tol_max_abs", r->tol_max_abs, 0);
        json_num(j, "tol_rel_l2", r->tol_rel_l2, 0);
        json_u64(j, "unwritten", r->unwritten);
        json_bool(j, "passed", r->passed);
        json_str(j, "kernel", r->info.kernel);
        json_u64(j, "splits", r->info.splits);
        json_num(j, "seconds", r->seconds, 0);
    }
    json_close(j, '}');
}

/* Checks one case on one path; prints a row; returns 1 if it passed, 0 if
 * not, 2 if the kernel asked for cannot run it (skipped), -1 when the device
 * faulted and the context is lost. */
static int verify_case(clattn_ctx *ctx, const struct test_case *c, clattn_path path,
                       clattn_fused_kernel fused_kernel, uint64_t seed, double worst[2][2],
                       const struct verify_out *out)
{
    FILE *f = out->text;
    clattn_shape shape = test_case_shape(c);
    clattn_options opts;
    clattn_default_options(&opts);
    test_case_options(c, &opts);
    opts.path = path;
    opts.fused_kernel = fused_kernel;
    fprintf(f, "%-5s %-4s %-12s B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu", cli_path_name(path),
            cli_dtype_name(c->dtype), cli_causal_name(c->causal), c->b, c->h, c->hkv, c->nq,
            c->nk, c->d);
    if (opts.kv_lens) {
        fprintf(f, " kv_lens=");
        for (size_t i = 0; i < c->b; i++)
            fprintf(f, "%s%u", i ? "," : "", c->kv_lens[i]);
    }
    fprintf(f, "  ");
    char why[200];
    if (fused_kernel != CLATTN_FUSED_AUTO && path == CLATTN_PATH_FUSED &&
        clattn_fused_kernel_usable(ctx, fused_kernel, &shape, why, sizeof why) == 0) {
        fprintf(f, "skipped: %s\n", why);
        return 2;
    }
    clattn_check_result r;
    int rc = clattn_check(ctx, &shape, &opts, seed, &r);
    if (out->json)
        json_case(out->json, c, &opts, rc, &r);
    if (rc < 0) {
        fprintf(f, "ERROR %s: %s\n", clattn_error_name(rc), clattn_last_error_detail());
        return rc == CLATTN_EDEVLOST ? -1 : 0;
    }
    fprintf(f, "max_abs %.2e  rel_l2 %.2e  %s%s  [%s", r.max_abs, r.rel_l2,
            r.passed ? "ok" : "FAIL", r.unwritten ? " (unwritten outputs)" : "", r.info.kernel);
    if (r.info.splits > 1)
        fprintf(f, ", %u splits", r.info.splits);
    fprintf(f, "]\n");
    fflush(f);
    double *w = &worst[path == CLATTN_PATH_FUSED][c->dtype == CLATTN_F16];
    if (r.rel_l2 > *w)
        *w = r.rel_l2;
    return r.passed;
}

struct verify_args {
    const char *device, *json, *kv_lens;
    int paths; /* bit 0: naive, bit 1: fused */
    size_t seed;
    struct test_case given;
    int have_shape;
    clattn_fused_kernel fused_kernel;
};

/* One option's value into *a: 0, or CLI_EXIT_USAGE after the message. */
static int set_option(struct verify_args *a, int opt, const char *value)
{
    size_t split;
    switch (opt) {
    case 'D': a->device = value; break;
    case 'j': a->json = value; break;
    case 'L': a->kv_lens = value; break;
    case 'p':
        if (!strcmp(value, "naive")) a->paths = 1;
        else if (!strcmp(value, "fused")) a->paths = 2;
        else if (!strcmp(value, "both")) a->paths = 3;
        else return cli_usage_error(CMD, "--path must be naive, fused or both, not '%s'", value);
        break;
    case 's':
        if (cli_parse_size(value, &a->seed) < 0)
            return cli_usage_error(CMD, "bad --seed '%s'", value);
        break;
    case 'S':
        if (parse_shape(value, &a->given) < 0)
            return cli_usage_error(CMD, "--shape needs B,H,Hkv,Nq,Nk,d, got '%s'", value);
        a->have_shape = 1;
        break;
    case 't':
        if (cli_parse_dtype(value, &a->given.dtype) < 0)
            return cli_usage_error(CMD, "bad --dtype '%s' (fp32 or fp16)", value);
        break;
    case 'c':
        if (cli_parse_causal(value, &a->given.causal) < 0)
            return cli_usage_error(CMD, "bad --causal '%s' (none, top-left or bottom-right)",
                                   value);
        break;
    case 'k':
        if (cli_parse_fused_kernel(value, &a->fused_kernel) < 0)
            return cli_usage_error(CMD, "bad --kernel: %s", clattn_last_error_detail());
        break;
    case 'x':
        if (cli_parse_size(value, &split) < 0 || split > UINT32_MAX)
            return cli_usage_error(CMD, "bad --split-kv '%s'", value);
        a->given.split_kv = (uint32_t)split;
        break;
    default: return CLI_EXIT_USAGE;
    }
    return 0;
}

/* 0 to go on, -1 after --help, CLI_EXIT_USAGE. */
static int parse_args(int argc, char **argv, struct verify_args *a)
{
    static const struct option long_opts[] = {
        { "device", required_argument, 0, 'D' }, { "path", required_argument, 0, 'p' },
        { "seed", required_argument, 0, 's' },   { "shape", required_argument, 0, 'S' },
        { "dtype", required_argument, 0, 't' },  { "causal", required_argument, 0, 'c' },
        { "help", no_argument, 0, 'h' },         { "kernel", required_argument, 0, 'k' },
        { "split-kv", required_argument, 0, 'x' }, { "kv-lens", required_argument, 0, 'L' },
        { "json", required_argument, 0, 'j' },   { 0, 0, 0, 0 },
    };
    memset(a, 0, sizeof *a);
    a->paths = 3;
    a->seed = 1;
    a->given.dtype = CLATTN_F32;
    a->given.causal = CLATTN_CAUSAL_NONE;
    a->fused_kernel = CLATTN_FUSED_AUTO;
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
    if ((a->kv_lens || a->given.split_kv) && !a->have_shape)
        return cli_usage_error(CMD, "--split-kv and --kv-lens go with --shape");
    if (a->kv_lens && parse_kv_lens(a->kv_lens, &a->given) < 0)
        return CLI_EXIT_USAGE;
    return 0;
}

/* Runs the cases; the number that failed, or -1 when the context was lost.
 * Cases a forced kernel cannot run are counted in *skipped, not run. */
static long run_cases(clattn_ctx *ctx, const struct verify_args *a, const struct verify_out *out,
                      size_t *run, size_t *skipped, double worst[2][2])
{
    const struct test_case *cases = a->have_shape ? &a->given : test_cases;
    const size_t n = a->have_shape ? 1 : N_TEST_CASES;
    long failed = 0;
    for (size_t i = 0; i < n; i++) {
        for (int p = 0; p < 2; p++) {
            if (!(a->paths & (1 << p)))
                continue;
            int ok = verify_case(ctx, &cases[i], p ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE,
                                 a->fused_kernel, a->seed + 7 * i, worst, out);
            if (ok == 2) {
                ++*skipped;
                continue;
            }
            ++*run;
            failed += ok != 1;
            if (ok < 0) {
                cli_error("verify: the device faulted and the context is lost; stopping after "
                          "%zu of %zu cases", *run, 2 * n);
                return -1;
            }
        }
    }
    return failed;
}

int cmd_verify(int argc, char **argv)
{
    struct verify_args a;
    int status = parse_args(argc, argv, &a);
    if (status)
        return status < 0 ? CLI_EXIT_OK : status;
    if (cli_output_check(a.json))
        return CLI_EXIT_FAILURE;
    struct verify_out out = { a.json && outfile_is_stdout(a.json) ? stderr : stdout, NULL };
    clattn_ctx *ctx;
    outfile jf;
    struct json j;
    if (cli_open_with_report(a.device, a.json, "verify", &ctx, &jf, &j))
        return CLI_EXIT_FAILURE;
    if (a.json) {
        out.json = &j;
        json_u64(&j, "seed", a.seed);
        json_open(&j, "cases", '[');
    }
    fprintf(out.text, "device: %s\n", clattn_device_name(ctx));
    size_t run = 0, skipped = 0;
    double worst[2][2] = { { 0 } }; /* [fused][fp16]: worst rel_l2 */
    long failed = run_cases(ctx, &a, &out, &run, &skipped, worst);
    double ta, tr32, tr16;
    clattn_tolerance(CLATTN_F32, &ta, &tr32);
    clattn_tolerance(CLATTN_F16, &ta, &tr16);
    if (failed >= 0) {
        fprintf(out.text, "worst rel_l2: naive fp32 %.2e, naive fp16 %.2e, fused fp32 %.2e, "
                "fused fp16 %.2e (tolerance fp32 %.0e, fp16 %.0e)\n", worst[0][0], worst[0][1],
                worst[1][0], worst[1][1], tr32, tr16);
        fprintf(out.text, "%zu passed, %ld failed", run - (size_t)failed, failed);
        if (skipped)
            fprintf(out.text, ", %zu skipped (the kernel asked for cannot run them here)", skipped);
        fprintf(out.text, "\n");
    }
    clattn_close(&ctx);
    if (a.json) {
        json_close(&j, ']');
        json_u64(&j, "run", run);
        json_u64(&j, "skipped", skipped);
        json_bool(&j, "context_lost", failed < 0);
        if (failed >= 0)
            json_u64(&j, "failed", (uint64_t)failed);
        json_end_document(&j);
        if (cli_output_commit(&jf))
            return CLI_EXIT_FAILURE;
    }
    /* Nothing run (every case skipped) proves nothing: a failure too. */
    return failed || run == 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
