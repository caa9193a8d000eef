/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the option-value parsers (cli/cli_parse.c): the grammar
 * cli.h documents, its limits, and the inputs fuzzing showed were accepted
 * though they should not be (empty list items, infinities and NaNs, leading
 * space; tests/fuzz/corpus/cli/regress_*).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "cli.h"

/* Each string of `bad` refused by `parse`, which leaves its output alone. */
#define EXPECT_REFUSED(parse, type, bad)                                                   \
    do {                                                                                   \
        for (size_t i_ = 0; i_ < sizeof(bad) / sizeof((bad)[0]); i_++) {                   \
            type v_ = 7;                                                                   \
            if (parse((bad)[i_], &v_) != -1 || v_ != 7)                                     \
                fail_msg("%s: '%s' accepted or output changed", #parse, (bad)[i_]);         \
        }                                                                                  \
    } while (0)

/* Each { text, value } parsed by `parse` into exactly that value. */
#define EXPECT_PARSED(parse, type, ...)                                                    \
    do {                                                                                   \
        static const struct {                                                              \
            const char *text;                                                              \
            type value;                                                                    \
        } good_[] = { __VA_ARGS__ };                                                       \
        for (size_t i_ = 0; i_ < sizeof good_ / sizeof good_[0]; i_++) {                   \
            type v_ = (type)-1;                                                            \
            if (parse(good_[i_].text, &v_) != 0 || v_ != good_[i_].value)                  \
                fail_msg("%s: '%s' refused or misread", #parse, good_[i_].text);           \
        }                                                                                  \
    } while (0)

static void sizes(void **state)
{
    (void)state;
    EXPECT_PARSED(cli_parse_size, size_t, { "0", 0 }, { "007", 7 });
    size_t v;
    if (SIZE_MAX == UINT64_MAX) {
        assert_int_equal(cli_parse_size("18446744073709551615", &v), 0);
        assert_true(v == SIZE_MAX);
        assert_int_equal(cli_parse_size("18446744073709551616", &v), -1);
    }
    static const char *const bad[] = { "", "-1", "+1", " 1", "1 ", "0x10", "1.0", "1e3" };
    EXPECT_REFUSED(cli_parse_size, size_t, bad);
    assert_int_equal(cli_parse_size(NULL, &v), -1);
}

static void length_lists(void **state)
{
    (void)state;
    uint32_t out[4];
    size_t n;
    assert_int_equal(cli_parse_lens("0,7,4294967295", out, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 0);
    assert_int_equal(out[1], 7);
    assert_int_equal(out[2], 4294967295u);
    assert_int_equal(cli_parse_lens("4294967296", out, 4, &n), -1);
    assert_int_equal(cli_parse_lens("1,,2", out, 4, &n), -1);
    assert_int_equal(cli_parse_lens("1,2,3,4,5", out, 4, &n), -1);
    assert_int_equal(cli_parse_lens(NULL, out, 4, &n), -1);
    assert_int_equal(cli_list_items("1,2,3"), 3);
    assert_int_equal(cli_list_items("9"), 1);
}

static void size_lists(void **state)
{
    (void)state;
    size_t out[4], n;
    assert_int_equal(cli_parse_size_list("1024,4096,16384", out, 4, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(out[0], 1024);
    assert_int_equal(out[2], 16384);
    assert_int_equal(cli_parse_size_list("1,2,3,4", out, 4, &n), 0);
    assert_int_equal(cli_parse_size_list("1,2,3,4,5", out, 4, &n), -1);
    /* strtok merged separators: these were read as lists. */
    static const char *const bad[] = { "1,,2", ",1", "1,", ",", "", "1, 2", "1;2" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cli_parse_size_list(bad[i], out, 4, &n) != -1)
            fail_msg("'%s' accepted as a list of %zu", bad[i], n);
}

/* The list used to be copied into a 1024-byte buffer first, so a valid
 * list longer than that was refused. */
static void long_size_list(void **state)
{
    (void)state;
    char s[1200];
    memset(s, '0', sizeof s);
    memcpy(s + sizeof s - 5, "1,22", 5);
    size_t out[2], n;
    assert_int_equal(cli_parse_size_list(s, out, 2, &n), 0);
    assert_int_equal(n, 2);
    assert_int_equal(out[0], 1);
    assert_int_equal(out[1], 22);
}

static void doubles(void **state)
{
    (void)state;
    EXPECT_PARSED(cli_parse_double, double, { "0.3", 0.3 }, { "-2.5", -2.5 }, { "1e-3", 1e-3 });
    static const char *const bad[] = { "", "inf", "-inf", "nan", "infinity", " 1", "\t1",
                                       "1 ", "1e400", "0.3s", "abc" };
    EXPECT_REFUSED(cli_parse_double, double, bad);
}

static void byte_counts(void **state)
{
    (void)state;
    EXPECT_PARSED(cli_parse_bytes, uint64_t, { "512", 512 }, { "64K", 65536 },
                  { "2GiB", 2147483648u }, { "1.5MB", 1500000 },
                  { "16777215TiB", 16777215ull << 40 });
    uint64_t v;
    assert_int_equal(cli_parse_bytes("16777216TiB", &v), -1); /* 2^64 */
    static const char *const bad[] = { "", "K", "-1", " 1", "4Kb", "4 KiB", "1.5.5" };
    EXPECT_REFUSED(cli_parse_bytes, uint64_t, bad);
}

static void names(void **state)
{
    (void)state;
    clattn_dtype d = CLATTN_F16;
    assert_int_equal(cli_parse_dtype("float", &d), 0);
    assert_int_equal(d, CLATTN_F32);
    assert_int_equal(cli_parse_dtype("half", &d), 0);
    assert_int_equal(d, CLATTN_F16);
    assert_int_equal(cli_parse_dtype("FP16", &d), -1);
    clattn_causal c = CLATTN_CAUSAL_NONE;
    assert_int_equal(cli_parse_causal(NULL, &c), 0);
    assert_int_equal(c, CLATTN_CAUSAL_TOP_LEFT);
    assert_int_equal(cli_parse_causal("br", &c), 0);
    assert_int_equal(c, CLATTN_CAUSAL_BOTTOM_RIGHT);
    assert_int_equal(cli_parse_causal("sideways", &c), -1);
}

static void kernel_params(void **state)
{
    (void)state;
    static const char *const good[] = { "stages=3", "stages=3,direct=0", "gemm=builtin",
                                        "a_b-c=1x2" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        if (cli_parse_params(good[i]) != 0)
            fail_msg("'%s' refused", good[i]);
    static const char *const bad[] = { "", "stages", "stages=", "=3", "a=1,", ",a=1",
                                       "a=1,,b=2", "a= 1", "a=b=c", "a b=1" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (cli_parse_params(bad[i]) != -1)
            fail_msg("'%s' accepted", bad[i]);
    assert_int_equal(cli_parse_params(NULL), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sizes),      cmocka_unit_test(size_lists),
        cmocka_unit_test(length_lists), cmocka_unit_test(long_size_list),
        cmocka_unit_test(doubles),    cmocka_unit_test(byte_counts), cmocka_unit_test(names),
        cmocka_unit_test(kernel_params),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
