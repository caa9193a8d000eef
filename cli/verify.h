/* SPDX-License-Identifier: MIT */
/*
 * clattn verify's checks of the attention variants (verify_variants.c):
 * the built-in variant cases, and one case run against the CPU reference
 * with its O (of d_v columns) and, where asked, its LSE compared. clattn_check
 * covers the plain cases; a variant needs its tensors, V of another head
 * dimension, the LSE and, for a snippet, a reference that computes the
 * built-in variant the snippet reproduces.
 */
#ifndef CLATTN_CLI_VERIFY_H
#define CLATTN_CLI_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "kvcache.h"
#include "variant.h"

/* One variant case: the shape and options it runs with, the tensors they
 * point at, and what the reference computes instead where a snippet
 * stands for a built-in variant. */
typedef struct verify_variant {
    const char *name;         /* what it checks, for the row */
    clattn_shape shape;
    clattn_options opts;
    clattn_options ref;       /* the reference's options (opts but for a snippet) */
    int lse;                  /* the LSE is compared too */
    uint32_t kv_lens[4];
    uint32_t q_lens[4];
    cli_cache cache;          /* the KV cache's form (kvcache.h): its types, pages or
                               * packing, made from the drawn inputs by the run */
    cli_variant_data data;
} verify_variant;

/* What one check found. */
typedef struct verify_result {
    double max_abs, rel_l2, tol_max_abs, tol_rel_l2;
    double lse_max_err;       /* |LSE - reference| / (1 + |reference|), worst row */
    size_t unwritten;         /* O elements left NaN where the reference is not */
    int lse_ok;
    int passed;
    double seconds;
    clattn_run_info info;
} verify_result;

/* How many built-in variant cases there are (the KV cache's forms among
 * them, last). */
size_t verify_variant_count(void);
/* How many of them are the KV cache's forms. */
size_t verify_cache_case_count(void);

/* Sets up built-in case i (its tensors drawn from `seed`) over `base`'s
 * kernel and parameters. 0, or CLATTN_ENOMEM. verify_variant_free after. */
int verify_variant_make(size_t i, const clattn_options *base, uint64_t seed, verify_variant *c);
void verify_variant_free(verify_variant *c);

/* Runs case `c` on `path` on random inputs drawn from `seed` (outputs
 * poisoned with NaN first) and compares it with the reference. 0 with *r
 * filled, or the library's code (CLATTN_EUNSUPPORTED: the path or kernel
 * does not take the case; CLATTN_EDEVLOST: the context is lost). */
int verify_variant_run(clattn_ctx *ctx, const verify_variant *c, clattn_path path, uint64_t seed,
                       verify_result *r);

#endif
