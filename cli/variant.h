/* SPDX-License-Identifier: MIT */
/*
 * The attention variants of the command line (options.h's cli_variant) as
 * the library takes them: ALiBi slopes from ggml's max_bias or a .npy,
 * sinks from a .npy, a number or random, a mask from a .npy (bool keeps,
 * floats add, broadcast over batch and heads as PyTorch's attn_mask) or
 * drawn at random, score_mod / mask_mod from OpenCL C files. Every command
 * loads them here, against the shape it runs, so a mask that does not fit
 * the shape is refused with one message wherever it is given.
 */
#ifndef CLATTN_CLI_VARIANT_H
#define CLATTN_CLI_VARIANT_H

#include <stddef.h>
#include <stdint.h>

#include "clattn/clattn.h"
#include "options.h"

struct json;

/* What a loaded variant owns (the options point into it). */
typedef struct cli_variant_data {
    float *slopes, *sinks;
    void *mask;
    char *score_mod, *mask_mod;
    double mask_keep;    /* fraction of the mask's elements that keep their key
                          * (1 without a mask) */
    uint64_t mask_bytes; /* the mask's bytes */
} cli_variant_data;

/* Whether the options ask for any variant beyond a causal mask and lengths
 * (bf16 storage aside, which is the shape's). */
int cli_variant_any(const cli_variant *v);

/* Loads the tensors and snippets `c`'s variant options name for shape `s`
 * (random ones drawn from `seed`) into *d and points `o`'s variant fields at
 * them (softcap, window and d_v too). A value that does not fit the shape
 * returns `mismatch` after its message (CLI_EXIT_USAGE where the shape came
 * from the command line, CLI_EXIT_FAILURE where it came from files); a file
 * that cannot be read, CLI_EXIT_FAILURE. 0 on success; *d needs
 * cli_variant_free either way. */
int cli_variant_load(const char *cmd, const cli_call *c, const clattn_shape *s, uint64_t seed,
                     int mismatch, cli_variant_data *d, clattn_options *o);
void cli_variant_free(cli_variant_data *d);

/* Draws a mask of `kind` (CLATTN_MASK_BOOL, or CLATTN_MASK_ADD of `dtype`)
 * and broadcast dims [mb, mh, Nq, Nk] for `s`: each sequence's keys past a
 * random length of at least half of Nk hidden, one key in eight hidden at
 * random beside (key 0 never), additive values uniform in [-1, 1) and -inf
 * where hidden. Into d->mask, and o->mask. 0, or CLATTN_ENOMEM. */
int cli_variant_random_mask(const clattn_shape *s, clattn_mask_kind kind, clattn_dtype dtype,
                            size_t mb, size_t mh, uint64_t seed, cli_variant_data *d,
                            clattn_options *o);

/* What the model counts of `c`'s variant for shape `s` (d_v, the window,
 * the mask's kind, dtype and broadcast: a mask file is read for them, and
 * must fit the shape: else CLI_EXIT_USAGE after the message), and `o`'s
 * variant fields as a plan needs them (the tensors' pointers stand-ins
 * that are never read). 0, or a status after the message. */
int cli_variant_model(const char *cmd, const cli_call *c, const clattn_shape *s,
                      clattn_model_variant *mv, clattn_options *o);

/* The variant `o` asks for, in words for a row: "softcap=2 window=64,0
 * alibi sinks mask=bool[2,1] dv=24", "" for none. */
void cli_variant_describe(const clattn_shape *s, const clattn_options *o, char *buf, size_t cap);

/* The variant's fields of a JSON report: "variant" (the description) and
 * each field that is set. */
void cli_variant_json(struct json *j, const clattn_shape *s, const clattn_options *o);

#endif
