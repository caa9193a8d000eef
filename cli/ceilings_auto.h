/*
 * The ceilings `clattn bench` and `clattn predict` use, measured first when
 * the device has none saved: on a fresh machine the table of known devices
 * rarely knows the device (a CPU, a new GPU), and without a bandwidth and a
 * FLOP rate every prediction would be "n/a".
 */
#ifndef CLATTN_TOOLS_CEILINGS_AUTO_H
#define CLATTN_TOOLS_CEILINGS_AUTO_H

#include <stddef.h>

#include "clattn/clattn.h"
#include "clattn/device.h"

/* Fills *out with clattn_device_ceilings for the context's device, after
 * measuring and saving the device's ceilings when no full measurement is
 * saved (none, or only a quick one, which clattn_device_ceilings ignores).
 * The measurement is a real one (full-size buffers, so the bandwidth is
 * device memory, not a cache) without the working-set sweep: seconds, not
 * the sweep's tens of seconds; `clattn devices --measure` adds the cache.
 * `note` receives one line saying what was done ("" when a measurement was
 * already saved): measured and saved where, measured but not saved (the
 * figures then serve this run only), or measuring failed and the figures
 * come from the table and the device. Returns 0, or the negative code of
 * clattn_device_ceilings. */
int ceilings_measure_missing(clattn_ctx *ctx, clattn_ceilings *out, char *note, size_t cap);

/* The FLOP rate the model prices `dtype` at, the one rule of bench, predict
 * and tune: fp32 at the fp32 rate; fp16 and bf16 at the 16-bit
 * (tensor-core) rate, or, where only the fp32 rate is known, at that (half
 * storage with float arithmetic: *f32_stands_in = 1; may be NULL). */
clattn_figure ceilings_peak(const clattn_ceilings *c, clattn_dtype dtype, int *f32_stands_in);

#endif
