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
#include "options.h"
#include "outfile.h"

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
            "checks the built-in list of %zu shapes (decoding among them); --dtype,\n"
            "--causal, --split-kv and --kv-lens describe a --shape. Status 1 if any case\n"
            "fails.\n"
            "\n"
            "options:\n", N_TEST_CASES);
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
             CLI_KERNEL | CLI_PATH | CLI_PATHS | CLI_PARAMS | CLI_SEED | CLI_JSON,
    NULL, 0, NULL, usage, verify_defaults,
};

/* The worst rel_l2 per [fused][fp16], and whether any case of each ran. */
struct verify_worst {
    double rel_l2[2][2];
    int ran[2][2];
};

/* One case to check: its shape and the options it runs with (the lengths
 * point into the case list or the call). */
struct verify_case {
    clattn_shape shape;
    clattn_options opts;
};

/* One case as an element of the JSON report's "cases". */
static void json_case(struct json *j, const struct verify_case *c, int rc,
                      const clattn_check_result *r)
{
    json_open(j, NULL, '{');
    json_str(j, "path", cli_path_name(c->opts.path));
    json_str(j, "dtype", cli_dtype_name(c->shape.dtype));
    json_str(j, "causal", cli_causal_name(c->opts.causal));
    json_open(j, "shape", '{');
    json_shape_fields(j, &c->shape);
    json_close(j, '}');
    json_u32_list(j, "kv_lens", c->opts.kv_lens, c->shape.batch);
    json_u64(j, "split_kv", c->opts.split_kv);
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
static int verify_case(clattn_ctx *ctx, const struct verify_case *given, clattn_path path,
                       uint64_t seed, struct verify_worst *worst,
                       const struct verify_out *out)
{
    FILE *f = out->text;
    struct verify_case c = *given;
    const clattn_shape *s = &c.shape;
    c.opts.path = path;
    fprintf(f, "%-5s %-4s %-12s B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu", cli_path_name(path),
            cli_dtype_name(s->dtype), cli_causal_name(c.opts.causal), s->batch, s->heads,
            s->kv_heads, s->q_len, s->kv_len, s->head_dim);
    if (c.opts.kv_lens) {
        fprintf(f, " kv_lens=");
        for (size_t i = 0; i < s->batch; i++)
            fprintf(f, "%s%u", i ? "," : "", c.opts.kv_lens[i]);
    }
    fprintf(f, "  ");
    char why[200];
    if (c.opts.fused_kernel != CLATTN_FUSED_AUTO && path == CLATTN_PATH_FUSED &&
        clattn_fused_kernel_usable(ctx, c.opts.fused_kernel, s, why, sizeof why) == 0) {
        fprintf(f, "skipped: %s\n", why);
        return 2;
    }
    clattn_check_result r;
    int rc = clattn_check(ctx, s, &c.opts, seed, &r);
    if (out->json)
        json_case(out->json, &c, rc, &r);
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
    const int p = path == CLATTN_PATH_FUSED, d = s->dtype == CLATTN_F16;
    if (!worst->ran[p][d] || r.rel_l2 > worst->rel_l2[p][d])
        worst->rel_l2[p][d] = r.rel_l2;
    worst->ran[p][d] = 1;
    return r.passed;
}

/* The given case (--shape and what describes it); 0, or CLI_EXIT_USAGE. */
static int given_case(const cli_call *call, struct verify_case *c)
{
    c->shape = (clattn_shape){ call->batch, call->heads, call->kv_heads, call->q_len,
                               call->lens[0], call->head_dims[0], call->dtype };
    int rc = cli_check_shape(CMD, &c->shape);
    if (rc == 0)
        rc = cli_check_kv_lens(CMD, call, c->shape.batch, c->shape.kv_len, "--shape",
                               CLI_EXIT_USAGE);
    if (rc)
        return rc;
    int any = !call->kv_lens;
    for (size_t i = 0; i < call->n_kv_lens; i++)
        any |= call->kv_lens[i] != 0;
    return any ? 0 : cli_usage_error(CMD, "--kv-lens: every length is 0 (nothing to verify)");
}

/* 0 to go on, -1 after --help, CLI_EXIT_USAGE. */
static int parse_args(int argc, char **argv, cli_call *call, struct verify_case *given)
{
    int rc = cli_parse_command(&verify_command, argc, argv, call, NULL);
    if (rc)
        return rc == 1 ? -1 : rc;
    if (!call->paths)
        call->paths = CLI_PATHS_BOTH;
    if (!(call->given & CLI_SEED))
        call->seed = 1;
    const unsigned describing = CLI_DTYPE | CLI_CAUSAL | CLI_SPLIT_KV | CLI_KV_LENS;
    if ((call->given & describing) && !(call->given & CLI_SHAPE))
        rc = cli_usage_error(CMD, "--dtype, --causal, --split-kv and --kv-lens go with --shape");
    else if (call->given & CLI_SHAPE)
        rc = given_case(call, given);
    if (rc)
        cli_call_free(call);
    return rc;
}

/* Runs the cases; the number that failed, or -1 when the context was lost.
 * Cases a forced kernel cannot run are counted in *skipped, not run. */
static long run_cases(clattn_ctx *ctx, const cli_call *call, const struct verify_case *given,
                      const struct verify_out *out, size_t *run, size_t *skipped,
                      struct verify_worst *worst)
{
    const size_t n = given ? 1 : N_TEST_CASES;
    long failed = 0;
    for (size_t i = 0; i < n; i++) {
        struct verify_case c;
        if (given) {
            c = *given;
        } else {
            c.shape = test_case_shape(&test_cases[i]);
            clattn_default_options(&c.opts);
            cli_call_options(call, &c.opts);
            test_case_options(&test_cases[i], &c.opts);
        }
        for (int p = 0; p < 2; p++) {
            const clattn_path path = p ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE;
            if (!(call->paths & CLI_PATH_BIT(path)))
                continue;
            int ok = verify_case(ctx, &c, path, call->seed + 7 * i, worst, out);
            if (ok == 2) {
                ++*skipped;
                continue;
            }
            ++*run;
            failed += ok != 1;
            if (ok < 0) {
                cli_error("verify: the device faulted and the context is lost; ending after "
                          "%zu of %zu cases", *run, 2 * n);
                return -1;
            }
        }
    }
    return failed;
}

int cmd_verify(int argc, char **argv)
{
    cli_call call;
    struct verify_case given;
    int status = parse_args(argc, argv, &call, &given);
    if (status)
        return status < 0 ? CLI_EXIT_OK : status;
    if (call.given & CLI_SHAPE) {
        clattn_default_options(&given.opts);
        cli_call_options(&call, &given.opts);
    }
    const char *json = call.json;
    status = cli_output_check(json) ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
    struct verify_out out = { json && outfile_is_stdout(json) ? stderr : stdout, NULL };
    clattn_ctx *ctx;
    outfile jf;
    struct json j;
    if (status || cli_open_with_report(call.device, json, "verify", &ctx, &jf, &j)) {
        cli_call_free(&call);
        return CLI_EXIT_FAILURE;
    }
    if (json) {
        out.json = &j;
        json_u64(&j, "seed", call.seed);
        json_open(&j, "cases", '[');
    }
    fprintf(out.text, "device: %s\n", clattn_device_name(ctx));
    size_t run = 0, skipped = 0;
    struct verify_worst worst = { { { 0 } }, { { 0 } } };
    long failed = run_cases(ctx, &call, call.given & CLI_SHAPE ? &given : NULL, &out, &run,
                            &skipped, &worst);
    double ta, tr32, tr16;
    clattn_tolerance(CLATTN_F32, &ta, &tr32);
    clattn_tolerance(CLATTN_F16, &ta, &tr16);
    if (failed >= 0) {
        /* A dtype or path no case ran has no figure. */
        char w[2][2][16];
        for (int p = 0; p < 2; p++)
            for (int d = 0; d < 2; d++)
                if (worst.ran[p][d])
                    snprintf(w[p][d], sizeof w[p][d], "%.2e", worst.rel_l2[p][d]);
                else
                    snprintf(w[p][d], sizeof w[p][d], "not run");
        fprintf(out.text, "worst rel_l2: naive fp32 %s, naive fp16 %s, fused fp32 %s, "
                "fused fp16 %s (tolerance fp32 %.0e, fp16 %.0e)\n", w[0][0], w[0][1], w[1][0],
                w[1][1], tr32, tr16);
        fprintf(out.text, "%zu passed, %ld failed", run - (size_t)failed, failed);
        if (skipped)
            fprintf(out.text, ", %zu skipped (the kernel asked for cannot run them here)", skipped);
        fprintf(out.text, "\n");
    }
    clattn_close(&ctx);
    if (json) {
        json_close(&j, ']');
        json_u64(&j, "run", run);
        json_u64(&j, "skipped", skipped);
        json_bool(&j, "context_lost", failed < 0);
        if (failed >= 0)
            json_u64(&j, "failed", (uint64_t)failed);
        json_end_document(&j);
        if (cli_output_commit(&jf))
            failed = failed ? failed : 1;
    }
    cli_call_free(&call);
    /* Nothing run (every case skipped) proves nothing: a failure too. */
    return failed || run == 0 ? CLI_EXIT_FAILURE : CLI_EXIT_OK;
}
