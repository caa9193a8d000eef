/* Shapes and dtypes: validation, element counts, IEEE half conversion. */
#include <math.h>
#include <string.h>

#include "internal.h"

size_t clattn_dtype_size(clattn_dtype dtype)
{
    switch (dtype) {
    case CLATTN_F32: return 4;
    case CLATTN_F16: return 2;
    }
    return 0;
}

int clattn_shape_check(const clattn_shape *s)
{
    size_t n, e;
    if (!s)
        return clattn_fail(CLATTN_EINVAL, "shape is NULL");
    if (!s->batch || !s->heads || !s->kv_heads || !s->q_len || !s->kv_len || !s->head_dim)
        return clattn_fail(CLATTN_EINVAL,
                           "every size must be >= 1 (B=%zu H=%zu Hkv=%zu Nq=%zu Nk=%zu d=%zu)",
                           s->batch, s->heads, s->kv_heads, s->q_len, s->kv_len, s->head_dim);
    if (s->heads % s->kv_heads)
        return clattn_fail(CLATTN_EINVAL, "H=%zu is not a multiple of Hkv=%zu", s->heads,
                           s->kv_heads);
    if (s->head_dim > 256)
        return clattn_fail(CLATTN_EUNSUPPORTED, "head dim d=%zu > 256", s->head_dim);
    e = clattn_dtype_size(s->dtype);
    if (!e)
        return clattn_fail(CLATTN_EINVAL, "unknown dtype %d", (int)s->dtype);
    /* Every byte count the library forms is at most B*H*max(Nq,Nk)*max(Nk,d)*4;
     * check the pieces so that none of them wraps. */
    size_t len = s->q_len > s->kv_len ? s->q_len : s->kv_len;
    size_t inner = s->kv_len > s->head_dim ? s->kv_len : s->head_dim;
    if (mul_overflows(s->batch, s->heads, &n) || mul_overflows(n, len, &n) ||
        mul_overflows(n, inner, &n) || mul_overflows(n, 4, &n) || n > (SIZE_MAX >> 2))
        return clattn_fail(CLATTN_EOVERFLOW,
                           "shape B=%zu H=%zu Nq=%zu Nk=%zu d=%zu overflows size_t", s->batch,
                           s->heads, s->q_len, s->kv_len, s->head_dim);
    return CLATTN_OK;
}

size_t clattn_shape_q_elems(const clattn_shape *s)
{
    return s->batch * s->heads * s->q_len * s->head_dim;
}

size_t clattn_shape_kv_elems(const clattn_shape *s)
{
    return s->batch * s->kv_heads * s->kv_len * s->head_dim;
}

void clattn_default_options(clattn_options *opts)
{
    if (!opts)
        return;
    memset(opts, 0, sizeof *opts);
    opts->causal = CLATTN_CAUSAL_NONE;
    opts->scale = 0.0f;
    opts->path = CLATTN_PATH_AUTO;
    opts->fused_kernel = CLATTN_FUSED_AUTO;
    opts->use_clblast = 1;
}

const clattn_options *clattn_options_or_default(const clattn_options *opts,
                                                clattn_options *storage)
{
    if (opts)
        return opts;
    clattn_default_options(storage);
    return storage;
}

const char *clattn_version(void)
{
#define STR2(x) #x
#define STR(x) STR2(x)
    return STR(CLATTN_VERSION_MAJOR) "." STR(CLATTN_VERSION_MINOR) "." STR(CLATTN_VERSION_PATCH);
}

/* Round-to-nearest-even conversions, written out so the host and the
 * reference never depend on the compiler's _Float16 support. */
uint16_t clattn_f32_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t absu = u & 0x7fffffffu;
    if (absu >= 0x7f800000u) /* inf or nan */
        return (uint16_t)(sign | 0x7c00u | (absu > 0x7f800000u ? 0x200u : 0));
    if (absu >= 0x477ff000u) /* rounds to >= 65520: overflow to inf */
        return (uint16_t)(sign | 0x7c00u);
    if (absu < 0x38800000u) { /* subnormal half or zero */
        float f;
        memcpy(&f, &absu, 4);
        /* Scale so the half subnormal unit (2^-24) becomes 1, round to even. */
        float scaled = f * 16777216.0f;
        uint32_t m = (uint32_t)nearbyintf(scaled);
        return (uint16_t)(sign | m);
    }
    uint32_t mant = absu & 0x7fffffu;
    uint32_t exp = (absu >> 23) - 127 + 15;
    uint32_t h = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu;
    if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
        h++; /* may carry into the exponent, which is still correct */
    return (uint16_t)(sign | h);
}

float clattn_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t exp = (h >> 10) & 0x1fu;
    uint32_t mant = h & 0x3ffu;
    uint32_t u;
    if (exp == 0) {
        float f = ldexpf((float)mant, -24);
        memcpy(&u, &f, 4);
        u |= sign;
    } else if (exp == 31) {
        u = sign | 0x7f800000u | (mant << 13);
    } else {
        u = sign | ((exp - 15 + 127) << 23) | (mant << 13);
    }
    float out;
    memcpy(&out, &u, 4);
    return out;
}
