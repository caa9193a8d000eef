/*
 * The kernels' efficiencies (clattn_kernel_efficiency): the time to expect
 * from the model's roofline, for bench and predict, and the probes with
 * which clattn tune measures and records them (tune_efficiency.c).
 */
#ifndef CLATTN_TOOLS_EFFICIENCY_H
#define CLATTN_TOOLS_EFFICIENCY_H

#include <stddef.h>
#include <stdio.h>

#include "clattn/clattn.h"
#include "json.h"

/* A run's kernel without its tiles: "fused/cpu 128x128" -> "fused/cpu". */
void efficiency_kernel_name(const char *described, char *out, size_t cap);

/* The model's device from ceilings, priced for `dtype`: fp16 and bf16 at the
 * 16-bit rate, the fp32 rate standing in where only it is known (half
 * storage, float arithmetic), as bench and predict price them. */
void efficiency_model_device(const clattn_ceilings *c, clattn_dtype dtype,
                             clattn_model_device *out);

/* The time to expect for `est`, the model's estimate of a run of `kernel`
 * (a run's name, tiles and all, or without them): its roofline time over
 * the kernel's recorded efficiency where est's roof binds; 0 where none is
 * recorded (or no roofline time is known). *fraction (may be NULL)
 * receives the efficiency, 0 when none. */
double efficiency_expected_time(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                                size_t head_dim, const clattn_path_estimate *est,
                                double *fraction);

/* clattn tune's last step for one head dim: times AUTO's fused kernel and
 * the naive path on a shape one roof binds each way (the tuned shape, and
 * a decoding step over four times its keys), and records each kernel's
 * fraction of the roofline; rows on `text`, objects into `j` (may be NULL,
 * an open array). 0, or -1 when a probe failed or a record could not be
 * saved (said on stderr). */
int efficiency_tune(clattn_ctx *ctx, const clattn_shape *tuned, double budget, FILE *text,
                    struct json *j);

#endif
