/* SPDX-License-Identifier: MIT */
/*
 * The pieces that spread one call over devices or ranks, without a
 * device: spread/shard.h's calls for a pair of chunks against the whole
 * call's mask, brute force (every query and key of random chunks, shapes,
 * masks and per-sequence lengths covered once where visible and never
 * where not), and group/split.h's plan choosing the ring where a device
 * cannot hold its rows beside all of K and V but can beside a block.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/model.h"
#include "group/split.h"
#include "spread/shard.h"

static uint64_t rng = 88172645463325252ull;

static size_t below(size_t n) /* xorshift: 0 .. n - 1 */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return n ? (size_t)(rng % n) : 0;
}

/* Whether the whole call's query `i` of sequence b sees key `j`. */
static int visible(const clattn_shape *s, const clattn_options *o, size_t b, size_t i, size_t j)
{
    const int64_t nk = o->kv_lens ? o->kv_lens[b] : (int64_t)s->kv_len;
    const int64_t nq = o->q_lens ? o->q_lens[b] : (int64_t)s->q_len;
    if ((int64_t)i >= nq || (int64_t)j >= nk)
        return 0;
    const int64_t off = o->causal == CLATTN_CAUSAL_BOTTOM_RIGHT ? nk - nq : 0;
    return o->causal == CLATTN_CAUSAL_NONE || (int64_t)j <= (int64_t)i + off;
}

static void pairs_against_brute_force(void **state)
{
    (void)state;
    uint32_t kv_lens[3], q_lens[3], lens[7 * 3];
    for (int trial = 0; trial < 3000; trial++) {
        clattn_shape s = { 1 + below(3), 1, 1, 1 + below(40), 1 + below(40), 8, CLATTN_F32 };
        clattn_options o;
        clattn_default_options(&o);
        o.causal = (clattn_causal)below(3);
        for (size_t b = 0; b < s.batch; b++) {
            kv_lens[b] = (uint32_t)below(s.kv_len + 1);
            q_lens[b] = (uint32_t)below(s.q_len + 1);
        }
        o.kv_lens = below(2) ? kv_lens : NULL;
        o.q_lens = below(2) ? q_lens : NULL;
        const size_t qa = below(s.q_len), ka = below(s.kv_len);
        const struct chunk qc = { qa, 1 + below(s.q_len - qa), 0 };
        const struct chunk kc = { ka, 1 + below(s.kv_len - ka), 0 };
        const size_t B = s.batch;
        struct pair_call pc = { { { 0, lens, lens + B }, { 0, lens + 2 * B, lens + 3 * B } },
                                lens + 4 * B, lens + 5 * B, lens + 6 * B, 0 };
        shard_pair(&s, &o, &qc, &kc, &pc);
        for (size_t b = 0; b < B; b++)
            for (size_t i = 0; i < qc.len; i++)
                for (size_t j = 0; j < kc.len; j++) {
                    int covered = 0;
                    const struct pair_part *br = &pc.part[0], *all = &pc.part[1];
                    if (br->used && i < br->q_lens[b] && j < br->kv_lens[b] &&
                        (int64_t)j <= (int64_t)i + br->kv_lens[b] - br->q_lens[b])
                        covered++;
                    if (all->used && i < all->q_lens[b] && j < all->kv_lens[b])
                        covered++;
                    if (i >= pc.rest_from[b] && i < pc.rest_from[b] + pc.rest_rows[b] &&
                        j < pc.rest_keys[b])
                        covered++;
                    const int want = visible(&s, &o, b, qa + i, ka + j);
                    if (covered != want)
                        fail_msg("trial %d: B %zu Nq %zu Nk %zu causal %d lens %d/%d, rows "
                                 "[%zu, +%zu) keys [%zu, +%zu): sequence %zu query %zu key "
                                 "%zu covered %d times, visible %d", trial, s.batch, s.q_len,
                                 s.kv_len, (int)o.causal, o.kv_lens != NULL,
                                 o.q_lens != NULL, qc.begin, qc.len, kc.begin, kc.len, b,
                                 qa + i, ka + j, covered, want);
                }
    }
}

static uint64_t fused_bytes(const clattn_shape *s, size_t rows, size_t keys)
{
    clattn_shape part = *s;
    part.q_len = rows, part.kv_len = keys;
    clattn_memory_plan plan;
    assert_int_equal(clattn_model_memory(&part, CLATTN_PATH_FUSED, 0, &plan), CLATTN_OK);
    return plan.peak_bytes;
}

/* The scheme the plan takes. */
static enum group_scheme planned(const clattn_shape *s, const clattn_options *o,
                                 const struct group_devices *dev, const float *q)
{
    static float kv[1];
    struct group_plan p;
    assert_int_equal(group_plan_make(s, o, dev, q, kv, kv, &p), CLATTN_OK);
    const enum group_scheme scheme = p.scheme;
    group_plan_free(&p);
    return scheme;
}

static void plan_takes_the_ring_where_kv_does_not_fit(void **state)
{
    (void)state;
    const clattn_shape s = { 1, 4, 4, 4096, 4096, 64, CLATTN_F32 };
    clattn_options o;
    clattn_default_options(&o);
    o.causal = CLATTN_CAUSAL_BOTTOM_RIGHT;
    static float k[1], v[1]; /* read by no plan: the ring's calls would */
    const size_t nq = clattn_shape_q_elems(&s);
    float *qq = calloc(nq, sizeof *qq); /* the plan copies its rows of Q */
    assert_non_null(qq);
    const double w[2] = { 1, 1 };
    struct group_devices dev = { 2, w, NULL, GROUP_AUTO, NULL };
    struct group_plan p;
    assert_int_equal(group_plan_make(&s, &o, &dev, qq, k, v, &p), CLATTN_OK);
    assert_int_equal(p.scheme, GROUP_QUERIES); /* capacity unknown */
    uint64_t ring = 0, whole = UINT64_MAX;
    for (size_t i = 0; i < 2; i++) {
        const uint64_t r = fused_bytes(&s, p.share[i].count, s.kv_len / 2);
        const uint64_t a = fused_bytes(&s, p.share[i].count, s.kv_len);
        ring = r > ring ? r : ring;
        whole = a < whole ? a : whole;
    }
    group_plan_free(&p);
    assert_true(ring < whole);
    const uint64_t between[2] = { (ring + whole) / 2, (ring + whole) / 2 };
    const uint64_t roomy[2] = { 4 * whole, 4 * whole }, tiny[2] = { 1, 1 };
    dev.capacity = between;
    assert_int_equal(planned(&s, &o, &dev, qq), GROUP_RING);
    dev.capacity = roomy;
    assert_int_equal(planned(&s, &o, &dev, qq), GROUP_QUERIES);
    dev.capacity = tiny; /* neither fits: the rows, and the call's own refusal */
    assert_int_equal(planned(&s, &o, &dev, qq), GROUP_QUERIES);
    /* The ring keeps no window: AUTO then splits by rows, the ring asked for refuses. */
    o.window_left = 100;
    dev.capacity = between;
    assert_int_equal(planned(&s, &o, &dev, qq), GROUP_QUERIES);
    dev.want = GROUP_RING;
    assert_int_equal(group_plan_make(&s, &o, &dev, qq, k, v, &p), CLATTN_EUNSUPPORTED);
    group_plan_free(&p);
    free(qq);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(pairs_against_brute_force),
        cmocka_unit_test(plan_takes_the_ring_where_kv_does_not_fit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
