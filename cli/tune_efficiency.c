/*
 * clattn tune's efficiency probes (tune.h): each kernel that AUTO
 * runs on a shape one roof binds is timed there, and the model's roofline
 * time for that shape over the measured time is recorded as the kernel's
 * efficiency for that roof (clattn_tune_record_efficiency). bench and
 * predict divide the roofline by it to give the time to expect.
 */
#include <stdio.h>
#include <string.h>

#include "ceilings_auto.h"
#include "cli.h"
#include "efficiency.h"
#include "tune.h"

struct probe {
    const char *what;
    clattn_shape shape;
    clattn_path path;
};

/* The model's estimate of the path for the probe's shape, with the fused
 * plan's tiles and split. */
static int probe_estimate(clattn_ctx *ctx, const struct probe *p, const clattn_options *o,
                          const clattn_model_device *dev, clattn_path_estimate *est)
{
    clattn_model_problem problem;
    clattn_model_default_problem(&problem);
    problem.shape = p->shape;
    clattn_fused_plan plan;
    if (clattn_plan_fused(ctx, &p->shape, o, &plan) == CLATTN_OK) {
        cli_model_tiles(&plan, &problem);
        if (p->path != CLATTN_PATH_FUSED)
            problem.splits = 0;
    }
    clattn_prediction pred;
    int rc = clattn_model_predict(&problem, dev, &pred);
    if (rc < 0)
        return rc;
    *est = p->path == CLATTN_PATH_FUSED ? pred.fused : pred.naive;
    return CLATTN_OK;
}

/* Times one probe and records its kernel's efficiency: 0 recorded, 1 not
 * run (it does not fit, or the roofline is unknown: said), -1 failed. */
static int run_probe(clattn_ctx *ctx, const struct probe *p, const clattn_model_device *dev,
                     struct tune_settings *set)
{
    clattn_options o;
    clattn_default_options(&o);
    o.path = p->path;
    const clattn_shape *s = &p->shape;
    clattn_path_estimate est;
    clattn_run_info info;
    int rc = clattn_attention_plan(ctx, s, &o, &info);
    if (rc == CLATTN_EWOULDOOM || rc == CLATTN_EUNSUPPORTED) {
        fprintf(set->text, "efficiency %s: not run (%s)\n", p->what, clattn_last_error_detail());
        return 1;
    }
    if (rc < 0 || (rc = probe_estimate(ctx, p, &o, dev, &est)) < 0) {
        cli_lib_error("tune: efficiency probe", rc);
        return -1;
    }
    if (!(est.time_s > 0) || est.bound == CLATTN_BOUND_UNKNOWN) {
        fprintf(set->text, "efficiency %s: not recorded (the device's bandwidth or FLOP rate is "
                           "unknown: clattn devices --measure)\n", p->what);
        return 1;
    }
    struct tune_buffers buf;
    if (tune_make_buffers(ctx, s, set, &buf) < 0)
        return -1;
    const double measured = tune_time_config(ctx, s, &o, &buf, set->budget, &info);
    tune_free_buffers(&buf);
    if (measured < 0) {
        cli_error("tune: efficiency probe %s: %s", p->what, clattn_last_error_detail());
        return -1;
    }
    char kernel[64];
    efficiency_kernel_name(info.kernel, kernel, sizeof kernel);
    const double fraction = est.time_s / measured;
    fprintf(set->text, "efficiency %s: %s %s %s-bound, %.3g of the roofline (roofline %.4g ms, "
                  "measured %.4g ms)\n",
            p->what, kernel, cli_dtype_name(s->dtype), clattn_bound_name(est.bound), fraction,
            est.time_s * 1e3, measured * 1e3);
    fflush(set->text);
    rc = clattn_tune_record_efficiency(ctx, kernel, s->dtype, s->head_dim, est.bound, fraction);
    struct json *j = set->json;
    if (j) {
        json_open(j, NULL, '{');
        json_str(j, "efficiency_probe", p->what);
        json_u64(j, "head_dim", s->head_dim);
        json_str(j, "kernel", kernel);
        json_str(j, "bound", clattn_bound_name(est.bound));
        json_num(j, "roofline_s", est.time_s, 0);
        json_num(j, "measured_s", measured, 0);
        json_num(j, "fraction", fraction, 0);
        json_bool(j, "saved", rc == CLATTN_OK);
        json_close(j, '}');
    }
    if (rc < 0) {
        cli_lib_error("tune: cannot save the efficiency", rc);
        return -1;
    }
    return 0;
}

int tune_efficiencies(clattn_ctx *ctx, const clattn_shape *tuned, struct tune_settings *set)
{
    clattn_ceilings c;
    char note[1024] = "";
    int rc = ceilings_measure_missing(ctx, &c, note, sizeof note);
    if (note[0])
        fprintf(stderr, "clattn: note: %s\n", note);
    if (rc < 0) {
        cli_lib_error("tune: the device's ceilings", rc);
        return -1;
    }
    clattn_model_device dev;
    clattn_model_device_from_ceilings(&c, tuned->dtype, &dev);
    /* A decoding step over four times the keys, grouped four query heads to
     * a KV head where the heads allow: the memory roof's shape. The naive
     * path's compute shape is the tuned one at N = 1024 at most, where S
     * and P fit. */
    const size_t kv_heads = tuned->heads % 4 == 0 ? tuned->heads / 4 : tuned->heads;
    const size_t n_naive = tuned->kv_len < 1024 ? tuned->kv_len : 1024;
    const clattn_shape decode = { tuned->batch, tuned->heads, kv_heads, 1, 4 * tuned->kv_len,
                                  tuned->head_dim, tuned->dtype };
    const clattn_shape naive = { tuned->batch, tuned->heads, tuned->kv_heads, n_naive, n_naive,
                                 tuned->head_dim, tuned->dtype };
    const struct probe probes[] = {
        { "fused, the tuned shape", *tuned, CLATTN_PATH_FUSED },
        { "fused, a decoding step", decode, CLATTN_PATH_FUSED },
        { "naive, the tuned heads", naive, CLATTN_PATH_NAIVE },
        { "naive, a decoding step", decode, CLATTN_PATH_NAIVE },
    };
    int failed = 0;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        failed |= run_probe(ctx, &probes[i], &dev, set) < 0;
    return failed ? -1 : 0;
}
