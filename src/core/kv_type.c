/* SPDX-License-Identifier: MIT */
/* The KV cache's storage types (clattn_kv_type): their sizes, and the one
 * quantization and dequantization the host, the reference and the kernels
 * (cl/include/kv_cache.clh) agree on. No OpenCL. */
#include <math.h>
#include <string.h>

#include "core/error.h"
#include "core/kv_type.h"

size_t clattn_kv_block_values(clattn_kv_type type)
{
    switch (type) {
    case CLATTN_KV_DTYPE:
    case CLATTN_KV_FP8_E4M3:
        return 1;
    case CLATTN_KV_Q8_0:
    case CLATTN_KV_Q4_0:
        return KV_QBLOCK;
    }
    return 0;
}

size_t clattn_kv_block_bytes(clattn_kv_type type, clattn_dtype dtype)
{
    switch (type) {
    case CLATTN_KV_DTYPE:
        return clattn_dtype_size(dtype);
    case CLATTN_KV_Q8_0:
        return 2 + KV_QBLOCK;
    case CLATTN_KV_Q4_0:
        return 2 + KV_QBLOCK / 2;
    case CLATTN_KV_FP8_E4M3:
        return 1;
    }
    return 0;
}

const char *clattn_kv_type_name(clattn_kv_type type, clattn_dtype dtype)
{
    static const char *const dtypes[] = { "f32", "f16", "bf16" };
    switch (type) {
    case CLATTN_KV_DTYPE:
        return (unsigned)dtype < 3 ? dtypes[dtype] : NULL;
    case CLATTN_KV_Q8_0:
        return "q8_0";
    case CLATTN_KV_Q4_0:
        return "q4_0";
    case CLATTN_KV_FP8_E4M3:
        return "fp8_e4m3";
    }
    return NULL;
}

int kv_type_check(clattn_kv_type type, const char *name)
{
    if ((unsigned)type > CLATTN_KV_FP8_E4M3)
        return clattn_fail(CLATTN_EINVAL, "%s: unknown KV type %d", name, (int)type);
    return CLATTN_OK;
}

int kv_bytes(clattn_kv_type type, clattn_dtype dtype, uint64_t values, uint64_t *bytes)
{
    const uint64_t per = clattn_kv_block_values(type), size = clattn_kv_block_bytes(type, dtype);
    if (!per || !size)
        return clattn_fail(CLATTN_EINVAL, "unknown KV type %d", (int)type);
    const uint64_t blocks = values / per + (values % per != 0);
    if (__builtin_mul_overflow(blocks, size, bytes))
        return clattn_fail(CLATTN_EOVERFLOW, "%llu values of %s overflow 64 bits",
                           (unsigned long long)values, clattn_kv_type_name(type, dtype));
    return CLATTN_OK;
}

/* fp8 e4m3 (OCP's "e4m3fn"): 1 sign, 4 exponent bits of bias 7, 3 mantissa
 * bits; exponent 15 with mantissa 7 is NaN, so the largest is 448. */
float kv_fp8_to_float(uint8_t b)
{
    const int e = (b >> 3) & 15, m = b & 7;
    if ((b & 0x7f) == 0x7f)
        return NAN;
    const float mag = e ? ldexpf((float)(8 + m), e - 10) : ldexpf((float)m, -9);
    return (b & 0x80) ? -mag : mag;
}

uint8_t kv_float_to_fp8(float x)
{
    /* On the float's bits, to nearest even: as fast as a cast, where a
     * frexpf/ldexpf round trip made quantizing a large cache take seconds.
     * Equal to that round trip on every one of the 2^32 floats. */
    uint32_t u;
    memcpy(&u, &x, 4);
    const uint8_t sign = (uint8_t)(u >> 24 & 0x80);
    const uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) /* NaN */
        return 0x7f;
    if (a >= 0x43e00000u) /* 448 and up, infinity too: saturated at 448 */
        return sign | 0x7e;
    if (a < 0x3c800000u) { /* below 2^-6: subnormal, in units of 2^-9 (8 of them is 2^-6) */
        float f;
        memcpy(&f, &a, 4);
        return sign | (uint8_t)nearbyintf(f * 512.0f);
    }
    uint32_t code = ((a >> 23) - 127 + 7) << 3 | (a >> 20 & 7);
    const uint32_t rest = a & 0xfffffu;
    if (rest > 0x80000u || (rest == 0x80000u && (code & 1u)))
        code++; /* a carry into the exponent is still the right code */
    return sign | (uint8_t)code;
}

static float src_value(clattn_dtype dtype, const void *src, size_t i)
{
    switch (dtype) {
    case CLATTN_F16:
        return clattn_f16_to_f32(((const uint16_t *)src)[i]);
    case CLATTN_BF16:
        return clattn_bf16_to_f32(((const uint16_t *)src)[i]);
    default:
        return ((const float *)src)[i];
    }
}

/* ggml's quantize_row_q8_0_ref and quantize_row_q4_0_ref, one block. */
static void quantize_block(clattn_kv_type type, const float x[KV_QBLOCK], uint8_t *out)
{
    float amax = 0.0f, max = 0.0f;
    for (int j = 0; j < KV_QBLOCK; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    const float d = type == CLATTN_KV_Q8_0 ? amax / 127.0f : max / -8.0f;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    const uint16_t h = clattn_f32_to_f16(d);
    memcpy(out, &h, 2);
    if (type == CLATTN_KV_Q8_0) {
        for (int j = 0; j < KV_QBLOCK; j++)
            out[2 + j] = (uint8_t)(int8_t)roundf(x[j] * id);
        return;
    }
    for (int j = 0; j < KV_QBLOCK / 2; j++) {
        const int8_t lo = (int8_t)(x[j] * id + 8.5f), hi = (int8_t)(x[j + 16] * id + 8.5f);
        out[2 + j] = (uint8_t)((lo < 15 ? lo : 15) | (hi < 15 ? hi : 15) << 4);
    }
}

static int check_rows(clattn_kv_type type, clattn_dtype dtype, const void *src, size_t rows,
                      size_t d, float scale, const void *dst, uint64_t *values)
{
    CLATTN_CHECK_ARG(src && dst);
    int rc = kv_type_check(type, "clattn_quantize");
    if (rc < 0)
        return rc;
    if ((unsigned)dtype > CLATTN_BF16)
        return clattn_fail(CLATTN_EINVAL, "unknown dtype %d", (int)dtype);
    const size_t per = clattn_kv_block_values(type);
    if (d == 0 || d % per)
        return clattn_fail(CLATTN_EINVAL, "d = %zu is not a positive multiple of %s's %zu "
                           "values per block", d, clattn_kv_type_name(type, dtype), per);
    if (type == CLATTN_KV_FP8_E4M3 && !(isfinite(scale) && scale >= 0.0f))
        return clattn_fail(CLATTN_EINVAL, "fp8 scale %g is not finite and >= 0 (0: 1)",
                           (double)scale);
    if (__builtin_mul_overflow((uint64_t)rows, (uint64_t)d, values) || *values > SIZE_MAX)
        return clattn_fail(CLATTN_EOVERFLOW, "rows %zu x d %zu overflows", rows, d);
    uint64_t bytes;
    return kv_bytes(type, dtype, *values, &bytes);
}

int clattn_quantize(clattn_kv_type type, clattn_dtype src_dtype, const void *src, size_t rows,
                    size_t d, float scale, void *dst)
{
    uint64_t n;
    int rc = check_rows(type, src_dtype, src, rows, d, scale, dst, &n);
    if (rc < 0)
        return rc;
    uint8_t *out = dst;
    if (type == CLATTN_KV_DTYPE) {
        memcpy(dst, src, (size_t)n * clattn_dtype_size(src_dtype));
        return CLATTN_OK;
    }
    if (type == CLATTN_KV_FP8_E4M3) {
        const float inv = scale > 0.0f ? 1.0f / scale : 1.0f;
        for (size_t i = 0; i < n; i++)
            out[i] = kv_float_to_fp8(src_value(src_dtype, src, i) * inv);
        return CLATTN_OK;
    }
    const size_t size = clattn_kv_block_bytes(type, src_dtype);
    for (size_t blk = 0; blk < n / KV_QBLOCK; blk++) {
        float x[KV_QBLOCK];
        for (int j = 0; j < KV_QBLOCK; j++)
            x[j] = src_value(src_dtype, src, blk * KV_QBLOCK + j);
        quantize_block(type, x, out + blk * size);
    }
    return CLATTN_OK;
}

float kv_value(clattn_kv_type type, clattn_dtype dtype, const void *src, uint64_t i, float scale)
{
    const uint8_t *p = src;
    switch (type) {
    case CLATTN_KV_DTYPE:
        return src_value(dtype, src, (size_t)i);
    case CLATTN_KV_FP8_E4M3:
        return kv_fp8_to_float(p[i]) * scale;
    case CLATTN_KV_Q8_0:
    case CLATTN_KV_Q4_0: {
        const size_t size = clattn_kv_block_bytes(type, dtype);
        const uint8_t *blk = p + (size_t)(i / KV_QBLOCK) * size;
        const unsigned j = (unsigned)(i % KV_QBLOCK);
        uint16_t h;
        memcpy(&h, blk, 2);
        const float d = clattn_f16_to_f32(h);
        if (type == CLATTN_KV_Q8_0)
            return (float)(int8_t)blk[2 + j] * d;
        const int q = j < 16 ? blk[2 + j] & 15 : blk[2 + j - 16] >> 4;
        return (float)(q - 8) * d;
    }
    }
    return NAN;
}

int clattn_dequantize(clattn_kv_type type, const void *src, size_t rows, size_t d, float scale,
                      float *dst)
{
    uint64_t n;
    int rc = check_rows(type, CLATTN_F32, src, rows, d, scale, dst, &n);
    if (rc < 0)
        return rc;
    const float s = scale > 0.0f ? scale : 1.0f;
    for (size_t i = 0; i < n; i++)
        dst[i] = kv_value(type, CLATTN_F32, src, i, s);
    return CLATTN_OK;
}
