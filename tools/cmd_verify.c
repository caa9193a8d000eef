/* SPDX-License-Identifier: MIT */
/* clattn verify: the naive and fused paths on the device against the CPU
 * reference, over the built-in shapes (tools/cases.h) or given ones. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cases.h"
#include "cli.h"
#include "commands.h"

static void usage(FILE *f)
{
    fprintf(f,
            "usage: clattn verify [--device SEL] [--path naive|fused|both] [--seed N]\n"
            "                     [--kernel auto|NAME]\n"
            "                     [--shape B,H,Hkv,Nq,Nk,d --dtype fp32|fp16 --causal MODE\n"
            "                      --split-kv N --kv-lens L0,L1,...]\n"
            "Runs each path on random inputs (output poisoned with NaN first) and\n"
            "compares with the CPU reference in double precision. Without --shape it\n"
            "checks the built-in list of %zu shapes (decoding among them). --split-kv\n"
            "splits each sequence's keys into N chunks (0: the library's choice);\n"
            "--kv-lens gives each sequence its own length (B of them, each <= Nk).\n"
            "Exit status 1 if any case fails.\n",
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
    size_t v[TEST_CASE_MAX_BATCH], n;
    if (c->b > TEST_CASE_MAX_BATCH) {
        cli_error("--kv-lens takes at most %d sequences", TEST_CASE_MAX_BATCH);
        return -1;
    }
    if (cli_parse_size_list(s, v, TEST_CASE_MAX_BATCH, &n) < 0 || n != c->b) {
        cli_error("--kv-lens needs %zu lengths (one per sequence), got '%s'", c->b, s);
        return -1;
    }
    int any = 0;
    for (size_t i = 0; i < n; i++) {
        if (v[i] > c->nk) {
            cli_error("--kv-lens: %zu is more than Nk = %zu", v[i], c->nk);
            return -1;
        }
        c->kv_lens[i] = (uint32_t)v[i];
        any |= v[i] != 0;
    }
    if (!any) {
        cli_error("--kv-lens: every length is 0 (nothing to verify)");
        return -1;
    }
    return 0;
}

/* Checks one case on one path; prints a row; returns 1 if it passed, 0 if
 * not, -1 when the device faulted and the context is lost. */
static int verify_case(clattn_ctx *ctx, const struct test_case *c, clattn_path path,
                       clattn_fused_kernel fused_kernel, uint64_t seed, double worst[2][2])
{
    clattn_shape shape = test_case_shape(c);
    clattn_options opts;
    clattn_default_options(&opts);
    test_case_options(c, &opts);
    opts.path = path;
    opts.fused_kernel = fused_kernel;
    clattn_check_result r;
    int rc = clattn_check(ctx, &shape, &opts, seed, &r);
    printf("%-5s %-4s %-12s B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu", cli_path_name(path),
           cli_dtype_name(c->dtype), cli_causal_name(c->causal), c->b, c->h, c->hkv, c->nq,
           c->nk, c->d);
    if (opts.kv_lens) {
        printf(" kv_lens=");
        for (size_t i = 0; i < c->b; i++)
            printf("%s%u", i ? "," : "", c->kv_lens[i]);
    }
    printf("  ");
    if (rc < 0) {
        printf("ERROR %s: %s\n", clattn_error_name(rc), clattn_last_error_detail());
        return rc == CLATTN_EDEVLOST ? -1 : 0;
    }
    printf("max_abs %.2e  rel_l2 %.2e  %s%s  [%s", r.max_abs, r.rel_l2, r.passed ? "ok" : "FAIL",
           r.unwritten ? " (unwritten outputs)" : "", r.info.kernel);
    if (r.info.splits > 1)
        printf(", %u splits", r.info.splits);
    printf("]\n");
    double *w = &worst[path == CLATTN_PATH_FUSED][c->dtype == CLATTN_F16];
    if (r.rel_l2 > *w)
        *w = r.rel_l2;
    return r.passed;
}

int cmd_verify(int argc, char **argv)
{
    static const struct option long_opts[] = {
        { "device", required_argument, 0, 'D' }, { "path", required_argument, 0, 'p' },
        { "seed", required_argument, 0, 's' },   { "shape", required_argument, 0, 'S' },
        { "dtype", required_argument, 0, 't' },  { "causal", required_argument, 0, 'c' },
        { "help", no_argument, 0, 'h' },         { "kernel", required_argument, 0, 'k' },
        { "split-kv", required_argument, 0, 'x' }, { "kv-lens", required_argument, 0, 'L' },
        { 0, 0, 0, 0 },
    };
    const char *device = NULL;
    int paths = 3; /* bit 0: naive, bit 1: fused */
    size_t seed = 1;
    struct test_case given = { .dtype = CLATTN_F32, .causal = CLATTN_CAUSAL_NONE };
    int have_shape = 0, opt;
    const char *kv_lens = NULL;
    size_t split = 0;
    clattn_fused_kernel fused_kernel = CLATTN_FUSED_AUTO;
    while ((opt = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
        switch (opt) {
        case 'D': device = optarg; break;
        case 'p':
            if (!strcmp(optarg, "naive")) paths = 1;
            else if (!strcmp(optarg, "fused")) paths = 2;
            else if (!strcmp(optarg, "both")) paths = 3;
            else { cli_error("--path must be naive, fused or both"); return 2; }
            break;
        case 's':
            if (cli_parse_size(optarg, &seed) < 0) { cli_error("bad --seed '%s'", optarg); return 2; }
            break;
        case 'S':
            if (parse_shape(optarg, &given) < 0) {
                cli_error("--shape needs B,H,Hkv,Nq,Nk,d, got '%s'", optarg);
                return 2;
            }
            have_shape = 1;
            break;
        case 't':
            if (cli_parse_dtype(optarg, &given.dtype) < 0) { cli_error("bad --dtype '%s'", optarg); return 2; }
            break;
        case 'c':
            if (cli_parse_causal(optarg, &given.causal) < 0) { cli_error("bad --causal '%s'", optarg); return 2; }
            break;
        case 'k':
            if (cli_parse_fused_kernel(optarg, &fused_kernel) < 0) {
                cli_error("bad --kernel: %s", clattn_last_error_detail());
                return 2;
            }
            break;
        case 'x':
            if (cli_parse_size(optarg, &split) < 0 || split > UINT32_MAX) {
                cli_error("bad --split-kv '%s'", optarg);
                return 2;
            }
            given.split_kv = (uint32_t)split;
            break;
        case 'L': kv_lens = optarg; break;
        case 'h': usage(stdout); return 0;
        default: usage(stderr); return 2;
        }
    }
    if (optind < argc) {
        cli_error("unexpected argument '%s'", argv[optind]);
        return 2;
    }
    if ((kv_lens || given.split_kv) && !have_shape) {
        cli_error("--split-kv and --kv-lens go with --shape");
        return 2;
    }
    if (kv_lens && parse_kv_lens(kv_lens, &given) < 0)
        return 2;
    clattn_ctx *ctx;
    if (cli_open(device, &ctx) < 0)
        return 1;
    printf("device: %s\n", clattn_device_name(ctx));
    const struct test_case *cases = have_shape ? &given : test_cases;
    size_t n = have_shape ? 1 : N_TEST_CASES, failed = 0, run = 0;
    double worst[2][2] = { { 0 } }; /* [fused][fp16]: worst rel_l2 */
    for (size_t i = 0; i < n; i++) {
        for (int p = 0; p < 2; p++) {
            if (!(paths & (1 << p)))
                continue;
            run++;
            int ok = verify_case(ctx, &cases[i], p ? CLATTN_PATH_FUSED : CLATTN_PATH_NAIVE,
                                 fused_kernel, seed + 7 * i, worst);
            failed += ok != 1;
            if (ok < 0) {
                cli_error("verify: the device faulted and the context is lost; stopping after "
                          "%zu of %zu cases", run, 2 * n);
                clattn_close(&ctx);
                return 1;
            }
        }
    }
    double ta, tr32, tr16;
    clattn_tolerance(CLATTN_F32, &ta, &tr32);
    clattn_tolerance(CLATTN_F16, &ta, &tr16);
    printf("worst rel_l2: naive fp32 %.2e, naive fp16 %.2e, fused fp32 %.2e, fused fp16 %.2e "
           "(tolerance fp32 %.0e, fp16 %.0e)\n", worst[0][0], worst[0][1], worst[1][0],
           worst[1][1], tr32, tr16);
    printf("%zu passed, %zu failed\n", run - failed, failed);
    clattn_close(&ctx);
    return failed ? 1 : 0;
}
