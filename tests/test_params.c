/* SPDX-License-Identifier: MIT */
/*
 * Kernel parameters (src/core/params.c): the "name=value,..." parser of
 * clattn_options.kernel_params and the tune files against a table, value
 * names, ranges, the messages, formatting back, and what a tune file may
 * record. Linked with the core library only.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <setjmp.h>
#include <cmocka.h>

#include "clattn/types.h"
#include "core/params.h"

static const char *const modes[] = { "ring", "direct", NULL };
static const struct param_def kernel_defs[] = {
    { "stages", 2, 8, NULL, "ring depth" },
    { "mode", 0, 1, modes, "how K and V are read" },
};
static const struct param_def common_defs[] = {
    { "parts", 1, 8, NULL, "combine parts" },
};

struct values {
    int kernel[2], common[1];
    struct param_group groups[2];
};

static void setup(struct values *v)
{
    v->groups[0] = (struct param_group){ kernel_defs, 2, v->kernel };
    v->groups[1] = (struct param_group){ common_defs, 1, v->common };
    params_reset(v->groups, 2);
}

static int apply(struct values *v, const char *text)
{
    setup(v);
    return params_apply(text, v->groups, 2, "k");
}

static void test_accepts(void **state)
{
    (void)state;
    struct values v;
    assert_int_equal(apply(&v, NULL), CLATTN_OK);
    assert_int_equal(v.kernel[0], PARAM_AUTO);
    assert_int_equal(apply(&v, ""), CLATTN_OK);
    assert_int_equal(v.common[0], PARAM_AUTO);
    assert_int_equal(apply(&v, "stages=3"), CLATTN_OK);
    assert_int_equal(v.kernel[0], 3);
    assert_int_equal(v.kernel[1], PARAM_AUTO);
    assert_int_equal(apply(&v, "mode=direct,parts=8,stages=2"), CLATTN_OK);
    assert_int_equal(v.kernel[0], 2);
    assert_int_equal(v.kernel[1], 1);
    assert_int_equal(v.common[0], 8);
    assert_int_equal(apply(&v, "mode=0"), CLATTN_OK); /* a value name's number too */
    assert_int_equal(v.kernel[1], 0);
    assert_int_equal(apply(&v, "stages=4,stages=5"), CLATTN_OK); /* the last wins */
    assert_int_equal(v.kernel[0], 5);
}

static void test_refuses(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "stages",       "stages=",     "=3",        "stages=1",   "stages=9",  "stages=-1",
        "stages=3x",    "stages= 3",   "Stages=3",  "mode=Ring",  "mode=2",    "depth=3",
        "stages=3,",    ",stages=3",   "stages=3,,parts=1", "stages=99999999999999999999",
        "parts=0",      "stages==3",
    };
    struct values v;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (apply(&v, bad[i]) != CLATTN_EINVAL)
            fail_msg("\"%s\" accepted", bad[i]);
        assert_true(strlen(clattn_last_error_detail()) > 0);
    }
    /* An unknown name lists what the kernel takes; a bad value its range. */
    assert_int_equal(apply(&v, "depth=3"), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "stages, mode, parts"));
    assert_int_equal(apply(&v, "stages=9"), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "2 to 8"));
    assert_int_equal(apply(&v, "mode=fast"), CLATTN_EINVAL);
    assert_non_null(strstr(clattn_last_error_detail(), "ring, direct"));
}

static void test_format_round_trip(void **state)
{
    (void)state;
    struct values v;
    char buf[64];
    assert_int_equal(apply(&v, "parts=4,mode=1"), CLATTN_OK);
    assert_int_equal(params_format(v.groups, 2, buf, sizeof buf), 0);
    assert_string_equal(buf, "mode=direct,parts=4");
    assert_true(params_well_formed(buf));
    struct values w;
    assert_int_equal(apply(&w, buf), CLATTN_OK);
    assert_memory_equal(&v.kernel, &w.kernel, sizeof v.kernel);
    assert_memory_equal(&v.common, &w.common, sizeof v.common);
    assert_int_equal(params_format(v.groups, 2, buf, 8), -1); /* too short: refused */
    assert_int_equal(buf[7], '\0');
    setup(&v);
    assert_int_equal(params_format(v.groups, 2, buf, sizeof buf), 0);
    assert_string_equal(buf, "");
}

static void test_well_formed(void **state)
{
    (void)state;
    static const char *const good[] = { "", "a=1", "stages=3,mode=direct", "x_1=y-2" };
    static const char *const bad[] = { "a", "a=", "=1", "a=1,", "a=1,,b=2", "a b=1",
                                       "a=1 b=2", "a==1", "A=1", "a=1=2", "#=1" };
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(params_well_formed(good[i]));
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (params_well_formed(bad[i]))
            fail_msg("\"%s\" taken as well formed", bad[i]);
}

static void test_describe(void **state)
{
    (void)state;
    clattn_param_info info;
    params_describe(&kernel_defs[1], &info);
    assert_string_equal(info.name, "mode");
    assert_int_equal(info.min, 0);
    assert_int_equal(info.max, 1);
    assert_string_equal(info.values[0], "ring");
    assert_string_equal(info.values[1], "direct");
    assert_null(info.values[2]);
    params_describe(&kernel_defs[0], &info);
    assert_null(info.values[0]);
    char text[16];
    params_value_text(&kernel_defs[1], 1, text, sizeof text);
    assert_string_equal(text, "direct");
    params_value_text(&kernel_defs[0], 7, text, sizeof text);
    assert_string_equal(text, "7");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accepts),
        cmocka_unit_test(test_refuses),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_well_formed),
        cmocka_unit_test(test_describe),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
