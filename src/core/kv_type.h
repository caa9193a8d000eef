/* SPDX-License-Identifier: MIT */
/* The KV cache's storage types inside the library (kv_type.c). */
#ifndef CLATTN_SRC_CORE_KV_TYPE_H
#define CLATTN_SRC_CORE_KV_TYPE_H

#include <stdint.h>

#include "clattn/types.h"

#define KV_QBLOCK 32 /* values per q8_0 / q4_0 block */

/* CLATTN_EINVAL, naming `name`, for a type outside the enum. */
int kv_type_check(clattn_kv_type type, const char *name);

/* The bytes of `values` consecutive values of `type` (a partial block
 * counts whole); CLATTN_EOVERFLOW past 64 bits. */
int kv_bytes(clattn_kv_type type, clattn_dtype dtype, uint64_t values, uint64_t *bytes);

/* Value i of an array of `type` (elements of `dtype` for CLATTN_KV_DTYPE),
 * fp8 times `scale`: what the kernels read. */
float kv_value(clattn_kv_type type, clattn_dtype dtype, const void *src, uint64_t i, float scale);

/* fp8 e4m3 <-> float (to nearest even, saturating at 448; NaN 0x7f). */
float kv_fp8_to_float(uint8_t b);
uint8_t kv_float_to_fp8(float x);

#endif
