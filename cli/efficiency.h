/*
 * The kernels' efficiencies (clattn_kernel_efficiency): the time to expect
 * from the model's roofline, for bench and predict; clattn tune measures
 * and records them (tune_efficiency.c).
 */
#ifndef CLATTN_TOOLS_EFFICIENCY_H
#define CLATTN_TOOLS_EFFICIENCY_H

#include <stddef.h>

#include "clattn/clattn.h"

/* A run's kernel without its tiles: "fused/cpu 128x128" -> "fused/cpu". */
void efficiency_kernel_name(const char *described, char *out, size_t cap);

/* The time to expect for `est`, the model's estimate of a run of `kernel`
 * (a run's name, tiles and all, or without them): its roofline time over
 * the kernel's recorded efficiency where est's roof binds; 0 where none is
 * recorded (or no roofline time is known). *fraction (may be NULL)
 * receives the efficiency, 0 when none. */
double efficiency_expected_time(clattn_ctx *ctx, const char *kernel, clattn_dtype dtype,
                                size_t head_dim, const clattn_path_estimate *est,
                                double *fraction);

#endif
