/* SPDX-License-Identifier: MIT */
/*
 * The start and end of a test binary whose tests share one context on the
 * default device. No OpenCL device is a skip (exit status 77, which meson
 * counts as skipped); a device that is there but fails to open is a failure,
 * never a skip.
 */
#ifndef CLATTN_TESTS_DEVICE_SUITE_H
#define CLATTN_TESTS_DEVICE_SUITE_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "clattn/clattn.h"

/* Opens the default device into *ctx: 0, or the status to exit with. */
static inline int device_suite_open(clattn_ctx **ctx)
{
    const int rc = clattn_open(ctx, NULL);
    if (rc == CLATTN_ENODEV) {
        printf("SKIP: no OpenCL device (%s)\n", clattn_last_error_detail());
        return 77;
    }
    if (rc < 0) {
        fprintf(stderr, "clattn_open: %s: %s\n", clattn_error_name(rc),
                clattn_last_error_detail());
        return 1;
    }
    fprintf(stderr, "device: %s\n", clattn_device_name(*ctx));
    return 0;
}

/* Runs the tests, then closes *ctx; the number that failed. */
static inline int device_suite_run(clattn_ctx **ctx, const char *name,
                                   const struct CMUnitTest *tests, size_t count)
{
    const int failed = _cmocka_run_group_tests(name, tests, count, NULL, NULL);
    clattn_close(ctx);
    return failed;
}
#define DEVICE_SUITE_RUN(ctx, tests) \
    device_suite_run((ctx), #tests, (tests), sizeof(tests) / sizeof((tests)[0]))

/* A test binary's whole main when its tests need nothing more than the
 * context: opens *ctx, runs the tests and closes it; the status to exit
 * with. */
static inline int device_suite_main(clattn_ctx **ctx, const char *name,
                                    const struct CMUnitTest *tests, size_t count)
{
    const int rc = device_suite_open(ctx);
    return rc ? rc : device_suite_run(ctx, name, tests, count);
}
#define DEVICE_SUITE_MAIN(ctx, tests) \
    device_suite_main((ctx), #tests, (tests), sizeof(tests) / sizeof((tests)[0]))

/* --part K/N: the binary runs its tests i with i % N == K - 1 only, so
 * that the default suite can split a long binary into parts that each stay
 * well inside their timeout on two loaded cores (list the tests so that
 * the parts balance). Copies the chosen tests to out (room for count) and
 * returns how many; without --part all of them; 0 for a malformed part. */
static inline size_t device_suite_part(int argc, char **argv, const struct CMUnitTest *tests,
                                       size_t count, struct CMUnitTest *out)
{
    unsigned k = 1, n = 1;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--part") &&
            (sscanf(argv[i + 1], "%u/%u", &k, &n) != 2 || n == 0 || k == 0 || k > n))
            return 0;
    size_t chosen = 0;
    for (size_t i = 0; i < count; i++)
        if (i % n == k - 1)
            out[chosen++] = tests[i];
    return chosen;
}

/* The whole main of a binary that runs in parts (device_suite_part): the
 * chosen tests of `all` on a context opened into *ctx; a malformed --part
 * prints `usage` and exits 2. */
static inline int device_suite_main_parts(clattn_ctx **ctx, const char *name, const char *usage,
                                          const struct CMUnitTest *all, size_t count, int argc,
                                          char **argv)
{
    struct CMUnitTest chosen[64];
    if (count > sizeof chosen / sizeof chosen[0]) {
        fprintf(stderr, "%s: %zu tests, more than device_suite_main_parts takes\n", name, count);
        return 1;
    }
    const size_t n = device_suite_part(argc, argv, all, count, chosen);
    if (n == 0) {
        fprintf(stderr, "usage: %s\n", usage);
        return 2;
    }
    return device_suite_main(ctx, name, chosen, n);
}

/* Whether the binary was asked for its full sweep (the heavy suite's
 * `--full`) rather than the default sample. */
static inline int device_suite_full(int argc, char **argv)
{
    return argc > 1 && !strcmp(argv[1], "--full");
}

#endif
