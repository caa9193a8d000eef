/* SPDX-License-Identifier: MIT */
/*
 * Threads: contexts opened from several threads at once in a cold process
 * (two cold clattn_open calls once crashed inside the ICD start-up about
 * half the time) each run attention concurrently and match the reference;
 * one context used from two threads at once refuses the second. Built for
 * ThreadSanitizer in CI. Exits 77 without an OpenCL device.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clattn/clattn.h"

#define THREADS 4

struct worker {
    int index;
    int open_rc;
    int failed;
    char why[256];
};

static pthread_barrier_t start;

static void *own_context(void *arg)
{
    struct worker *w = arg;
    clattn_ctx *ctx = NULL;
    pthread_barrier_wait(&start); /* every thread opens at the same moment */
    int rc = w->open_rc = clattn_open(&ctx, NULL);
    for (int round = 0; rc == CLATTN_OK && round < 3; round++) {
        clattn_shape s = { 1, 2, 1, 33 + (size_t)w->index, 41, 16,
                           w->index % 2 ? CLATTN_F16 : CLATTN_F32 };
        clattn_options o;
        clattn_default_options(&o);
        o.path = round == 1 ? CLATTN_PATH_NAIVE : CLATTN_PATH_FUSED;
        o.causal = round == 2 ? CLATTN_CAUSAL_BOTTOM_RIGHT : CLATTN_CAUSAL_NONE;
        clattn_check_result r;
        rc = clattn_check(ctx, &s, &o, 10 + (uint64_t)w->index, &r);
        if (rc == CLATTN_OK && !r.passed) {
            snprintf(w->why, sizeof w->why, "round %d: rel_l2 %.3e", round, r.rel_l2);
            w->failed = 1;
        }
    }
    if (rc < 0) {
        snprintf(w->why, sizeof w->why, "%s: %s", clattn_error_name(rc),
                 clattn_last_error_detail());
        w->failed = 1;
    }
    clattn_close(&ctx);
    return NULL;
}

/* 1 if a thread failed, 0 if all passed, 77 if there is no device. */
static int contexts_per_thread(void)
{
    pthread_t t[THREADS];
    struct worker w[THREADS];
    pthread_barrier_init(&start, NULL, THREADS);
    for (int i = 0; i < THREADS; i++) {
        w[i] = (struct worker){ .index = i };
        pthread_create(&t[i], NULL, own_context, &w[i]);
    }
    int failed = 0, no_device = 1;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(t[i], NULL);
        no_device &= w[i].open_rc == CLATTN_ENODEV;
        if (w[i].failed && w[i].open_rc != CLATTN_ENODEV)
            printf("FAIL: thread %d: %s\n", i, w[i].why);
        failed |= w[i].failed;
    }
    pthread_barrier_destroy(&start);
    return no_device ? 77 : failed;
}

/* Thread A runs one long call on a shared context; thread B, started while
 * A is inside it, must be refused rather than share the program cache. */
struct shared {
    clattn_ctx *ctx;
    atomic_int inside; /* A has entered its call */
    int a_rc, b_rc;
    char b_detail[256];
};

static void *long_call(void *arg)
{
    struct shared *sh = arg;
    clattn_shape s = { 1, 8, 8, 1024, 1024, 64, CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.path = CLATTN_PATH_FUSED;
    clattn_check_result r;
    atomic_store(&sh->inside, 1);
    /* The reference in double for 8 heads of 1024 x 1024 takes a while. */
    sh->a_rc = clattn_check(sh->ctx, &s, &o, 1, &r);
    return NULL;
}

static int shared_context_refused(clattn_ctx *ctx)
{
    struct shared sh = { .ctx = ctx };
    pthread_t a;
    pthread_create(&a, NULL, long_call, &sh);
    while (!atomic_load(&sh.inside))
        ;
    nanosleep(&(struct timespec){ 0, 50 * 1000 * 1000 }, NULL);
    size_t bm, bn;
    clattn_shape s = { 1, 1, 1, 8, 8, 8, CLATTN_F32 };
    sh.b_rc = clattn_fused_tiles(ctx, &s, NULL, &bm, &bn, NULL);
    snprintf(sh.b_detail, sizeof sh.b_detail, "%s", clattn_last_error_detail());
    pthread_join(a, NULL);
    int failed = 0;
    if (sh.a_rc != CLATTN_OK) {
        printf("FAIL: the first thread's call failed: %s\n", clattn_error_name(sh.a_rc));
        failed = 1;
    }
    if (sh.b_rc != CLATTN_EINVAL || !strstr(sh.b_detail, "another thread")) {
        printf("FAIL: a second thread on a busy context got %s (%s)\n",
               clattn_error_name(sh.b_rc), sh.b_detail);
        failed = 1;
    }
    /* Free again once the first thread is done. */
    if (clattn_fused_tiles(ctx, &s, NULL, &bm, &bn, NULL) != CLATTN_OK) {
        printf("FAIL: the context stays taken after the call\n");
        failed = 1;
    }
    return failed;
}

int main(void)
{
    /* No clattn call before the threads start: the process is cold. */
    int failed = contexts_per_thread();
    if (failed == 77) {
        printf("SKIP: no OpenCL device\n");
        return 77;
    }
    clattn_ctx *ctx = NULL;
    if (clattn_open(&ctx, NULL) != CLATTN_OK)
        return 1;
    failed |= shared_context_refused(ctx);
    clattn_close(&ctx);
    printf("%s\n", failed ? "FAILED" : "all passed");
    return failed;
}
