/*
 * The naive path's batched GEMM shaped for CPUs (PoCL):
 *     C[b] = alpha * A[b] * op(B[b]),  A: M x K, op(B): K x N, C: M x N,
 * row-major in the storage type, accumulated in float. The same arguments
 * as cl/naive/gemm.cl's gemm_batched.
 *
 * A GEMM micro-kernel in explicit float16 vectors (one zmm each on
 * AVX-512), no local memory, no barriers: work-group size 1. A work-item
 * owns MB = RM x RB rows and NB = 16 NV x NS columns of one C. K goes in
 * chunks of KC; per chunk the work-item copies
 *   its rows of A into ap (float, row-major, RM-row blocks), and
 *   op(B)'s chunk into bp (float, in strips of NR = 16 NV columns, each strip
 *   KC rows of NR contiguous floats: the micro-kernel reads it in order),
 * converting fp16 once (vload_half16) and transposing B when it is stored
 * N x K (Q K^T). Zeros fill the rows and columns past M and N. Then for
 * every strip and row block, RM x NV accumulator vectors stay in registers
 * over the chunk:
 *   acc[i][v] += A[i][k] (broadcast from ap) * bp[k][v]   (a vector)
 * With more than one chunk the accumulators go to a private float copy of
 * the C tile between chunks; after the last, alpha * acc goes to C (fp16
 * rounded to nearest even, vstore_half16).
 *
 * Build options: -DTRANS_B=0|1 (1: B stored N x K), -DDTYPE_F16,
 *   -DRM=<rows per micro-tile> -DNV=<16-column vectors per micro-tile>
 *   (RM x NV + NV registers: 12 x 2, 6 x 4, 8 x 3, 28 x 1 fit 32 zmm),
 *   -DRB=<row blocks per work-item> -DNS=<strips per work-item>
 *   -DKC=<K chunk, a multiple of 16> -DCHUNKS=0|1 (1: K may exceed KC).
 * Launch: global (ceil(N / NB), ceil(M / MB), batch), local (1, 1, 1).
 */
#define NR (16 * NV)
#define MB (RM * RB)
#define NB (NR * NS)

typedef float16 vec;

#ifdef DTYPE_F16
typedef half store_t;
#define LOAD16(p) vload_half16(0, (p))
#define LOAD1(p) vload_half(0, (p))
#define STORE16(x, p) vstore_half16((x), 0, (p))
#define STORE1(x, p) vstore_half_rte((x), 0, (p))
#else
typedef float store_t;
#define LOAD16(p) vload16(0, (p))
#define LOAD1(p) (*(p))
#define STORE16(x, p) vstore16((x), 0, (p))
#define STORE1(x, p) (*(p) = (x))
#endif

/* n (<= 16) elements from p as a vector, zeros past them. */
static inline vec load_part(__global const store_t *p, int n)
{
    float t[16];
    for (int l = 0; l < 16; l++)
        t[l] = l < n ? LOAD1(p + l) : 0.0f;
    return vload16(0, t);
}

__kernel __attribute__((reqd_work_group_size(1, 1, 1)))
void gemm_batched(const uint M, const uint N, const uint K, const float alpha,
                  __global const store_t *A, const ulong a_off, const uint lda, const ulong a_stride,
                  __global const store_t *B, const ulong b_off, const uint ldb, const ulong b_stride,
                  __global store_t *C, const ulong c_off, const uint ldc, const ulong c_stride)
{
    float ap[MB * KC] __attribute__((aligned(64)));
    float bp[NB * KC] __attribute__((aligned(64)));
#if CHUNKS
    vec cacc[RB * RM * NS * NV];
#endif
    const uint n0 = get_global_id(0) * NB, m0 = get_global_id(1) * MB;
    const size_t batch = get_global_id(2);
    A += a_off + batch * a_stride + (size_t)m0 * lda;
    B += b_off + batch * b_stride;
    C += c_off + batch * c_stride + (size_t)m0 * ldc + n0;
    /* Rows and columns of this work-item, and the blocks that cover them. */
    const int rows = (int)min((uint)MB, M - m0), cols = (int)min((uint)NB, N - n0);
    const int rb = (rows + RM - 1) / RM, ns = (cols + NR - 1) / NR;

    for (uint k0 = 0; k0 < K; k0 += KC) {
        const int kc = (int)min((uint)KC, K - k0);
        /* A's rows, k0 .. k0 + kc, as floats; zero rows past M. */
        for (int i = 0; i < rb * RM; i++) {
            float *dst = ap + i * KC;
            __global const store_t *src = A + (size_t)i * lda + k0;
            int k = 0;
            if (i < rows) {
                for (; k + 16 <= kc; k += 16)
                    vstore16(LOAD16(src + k), 0, dst + k);
                for (; k < kc; k++)
                    dst[k] = LOAD1(src + k);
            } else {
                for (; k < kc; k++)
                    dst[k] = 0.0f;
            }
        }
        /* op(B)'s chunk in strips of NR columns; zero columns past N. */
#if TRANS_B
        for (int c = 0; c < ns * NR; c++) {
            float *dst = bp + (c / NR) * (KC * NR) + c % NR;
            __global const store_t *src = B + (size_t)(n0 + c) * ldb + k0;
            int k = 0;
            if (c < cols) {
                for (; k + 16 <= kc; k += 16) {
                    float t[16];
                    vstore16(LOAD16(src + k), 0, t);
#pragma unroll
                    for (int l = 0; l < 16; l++)
                        dst[(k + l) * NR] = t[l];
                }
                for (; k < kc; k++)
                    dst[k * NR] = LOAD1(src + k);
            } else {
                for (; k < kc; k++)
                    dst[k * NR] = 0.0f;
            }
        }
#else
        for (int k = 0; k < kc; k++) {
            __global const store_t *src = B + (size_t)(k0 + k) * ldb + n0;
            for (int j = 0; j < ns * NV; j++) {
                float *dst = bp + (j / NV) * (KC * NR) + k * NR + (j % NV) * 16;
                const int left = cols - 16 * j;
                vstore16(left >= 16 ? LOAD16(src + 16 * j) : load_part(src + 16 * j, max(left, 0)),
                         0, dst);
            }
        }
#endif
        const int first = k0 == 0, last = k0 + KC >= K;
        for (int s = 0; s < ns; s++) {
            const float *b = bp + s * (KC * NR);
            for (int r = 0; r < rb; r++) {
                const float *a = ap + r * RM * KC;
                vec acc[RM][NV];
#if CHUNKS
                vec *keep = cacc + ((r * NS + s) * RM) * NV;
                if (!first) {
#pragma unroll
                    for (int i = 0; i < RM; i++)
#pragma unroll
                        for (int v = 0; v < NV; v++)
                            acc[i][v] = keep[i * NV + v];
                } else
#endif
                {
#pragma unroll
                    for (int i = 0; i < RM; i++)
#pragma unroll
                        for (int v = 0; v < NV; v++)
                            acc[i][v] = (vec)(0.0f);
                }
                for (int k = 0; k < kc; k++) {
                    vec bv[NV];
#pragma unroll
                    for (int v = 0; v < NV; v++)
                        bv[v] = vload16(0, b + k * NR + v * 16);
#pragma unroll
                    for (int i = 0; i < RM; i++) {
                        const vec ai = (vec)(a[i * KC + k]);
#pragma unroll
                        for (int v = 0; v < NV; v++)
                            acc[i][v] = fma(ai, bv[v], acc[i][v]);
                    }
                }
#if CHUNKS
                if (!last) {
#pragma unroll
                    for (int i = 0; i < RM; i++)
#pragma unroll
                        for (int v = 0; v < NV; v++)
                            keep[i * NV + v] = acc[i][v];
                    continue;
                }
#endif
#pragma unroll
                for (int i = 0; i < RM; i++) {
                    const int row = r * RM + i;
                    __global store_t *dst = C + (size_t)row * ldc;
#pragma unroll
                    for (int v = 0; v < NV; v++) {
                        if (row >= rows)
                            continue;
                        const int col = s * NR + v * 16;
                        const vec x = acc[i][v] * alpha;
                        if (col + 16 <= cols) {
                            STORE16(x, dst + col);
                        } else if (col < cols) {
                            float t[16];
                            vstore16(x, 0, t);
                            for (int l = 0; l < cols - col; l++)
                                STORE1(t[l], dst + col + l);
                        }
                    }
                }
            }
        }
        (void)first;
        (void)last;
    }
}
