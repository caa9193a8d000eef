/*
 * Split-KV's chunk count (src/model/splits.c) against the splits an H200
 * ran fastest (tests/perf/time_fused with each split forced on the decode
 * rows of tools/compare/decode_vs_torch.sh), and the rules any split must
 * keep.
 */
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <stdarg.h>
#include <cmocka.h>

#include "model/splits.h"

#define H200_SMS 132

/* nv-decode with K/V in registers: 8 groups per SM, 16-key blocks, each
 * group's fixed part stages + 2 = 4 blocks; its groups take chunks. */
static size_t register_kernel(size_t groups, size_t kv_len)
{
    return splits_fitted(8 * H200_SMS, groups, (kv_len + 15) / 16, 4, 1);
}

/* nv-decode through its ring: 4 groups per SM, 32-key blocks, 3 stages. */
static size_t ring_kernel(size_t groups, size_t kv_len)
{
    return splits_fitted(4 * H200_SMS, groups, (kv_len + 31) / 32, 5, 1);
}

static void decode_rows_as_run(void **state)
{
    (void)state;
    /* B = 8 (64 KV-head row tiles), B = 1 (8), B = 64 (512) */
    assert_int_equal(register_kernel(64, 4096), 16);
    assert_int_equal(register_kernel(64, 16384), 16);
    assert_int_equal(register_kernel(64, 65536), 16);
    assert_int_equal(register_kernel(8, 131072), 131);
    assert_int_equal(register_kernel(512, 4096), 2);
    assert_int_equal(ring_kernel(64, 16384), 8);
    assert_int_equal(ring_kernel(8, 131072), 66);
    assert_int_equal(ring_kernel(512, 4096), 1);
}

/* What the cap is for: without it, B = 8 Nk = 65536 took 33 splits, two
 * waves of groups (0.5158 ms against 16 splits' 0.4903). */
static void one_wave_when_chunks_are_taken(void **state)
{
    (void)state;
    const size_t slots = 8 * H200_SMS, blocks = 65536 / 16;
    const size_t free_split = splits_fitted(slots, 64, blocks, 4, 0);
    assert_true(64 * free_split > slots);
    assert_int_equal(splits_fitted(slots, 64, blocks, 4, 1), slots / 64);
    /* Groups already beyond one wave: the cap leaves the split alone. */
    assert_int_equal(splits_fitted(slots, 2 * slots, blocks, 4, 1),
                     splits_fitted(slots, 2 * slots, blocks, 4, 0));
}

static void any_split_keeps_the_rules(void **state)
{
    (void)state;
    static const size_t slots[] = { 1, 7, 528, 1056, 4096 };
    static const size_t groups[] = { 1, 3, 8, 64, 512, 5000 };
    static const size_t blocks[] = { 1, 2, 5, 64, 1000, 8192, 100000 };
    for (size_t a = 0; a < sizeof slots / sizeof slots[0]; a++)
        for (size_t b = 0; b < sizeof groups / sizeof groups[0]; b++)
            for (size_t c = 0; c < sizeof blocks / sizeof blocks[0]; c++)
                for (int takes = 0; takes < 2; takes++) {
                    const size_t s = splits_fitted(slots[a], groups[b], blocks[c], 4, takes);
                    assert_true(s >= 1);
                    assert_true(s <= FUSED_SPLITS_MAX);
                    assert_true(s <= blocks[c]);
                    if (takes && groups[b] < slots[a])
                        assert_true(s * groups[b] <= slots[a]);
                }
    assert_int_equal(splits_fitted(0, 8, 100, 4, 1), 1);
    assert_int_equal(splits_fitted(100, 0, 100, 4, 1), 1);
}

/* The kernels that do not report their groups per compute unit: the
 * splits the H200's decode sweep ran fastest (the rule's own comment,
 * docs/PERFORMANCE.md), and on a CPU the rule's 4 groups per core worked
 * out by hand. */
static void splits_by_fill_as_run(void **state)
{
    (void)state;
    assert_int_equal(splits_by_fill(0, H200_SMS, 64, 64, 4096), 16);
    assert_int_equal(splits_by_fill(0, H200_SMS, 64, 64, 16384), 16);
    assert_int_equal(splits_by_fill(0, H200_SMS, 64, 64, 65536), 32);
    assert_int_equal(splits_by_fill(0, H200_SMS, 8, 64, 131072), 64);
    assert_int_equal(splits_by_fill(0, H200_SMS, 128, 64, 16384), 8);
    /* A GPU its groups fill already: no split. */
    assert_int_equal(splits_by_fill(0, H200_SMS, 4096, 256, 1 << 20), 1);
    /* A CPU: about 4 groups per core. */
    assert_int_equal(splits_by_fill(1, 2, 1, 1, 32768), 8);
    assert_int_equal(splits_by_fill(1, 2, 3, 1, 32768), 3);
    assert_int_equal(splits_by_fill(1, 2, 8, 1, 32768), 1);
    assert_int_equal(splits_by_fill(1, 0, 8, 1, 32768), 1);
    assert_int_equal(splits_by_fill(0, 4, 0, 64, 32768), 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decode_rows_as_run),
        cmocka_unit_test(one_wave_when_chunks_are_taken),
        cmocka_unit_test(any_split_keeps_the_rules),
        cmocka_unit_test(splits_by_fill_as_run),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
