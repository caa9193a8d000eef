/* SPDX-License-Identifier: MIT */
/* The caller's OpenCL C (clattn_options' score_mod and mask_mod) as the
 * prelude of the programs built with it: the fused kernels' and the
 * masks' spans' (cl/fused/mask_spans.cl). */
#ifndef CLATTN_SRC_FUSED_SNIPPETS_H
#define CLATTN_SRC_FUSED_SNIPPETS_H

/* The snippets as one prelude (NULL: none) in *out, malloc'd:
 * cl/include/snippet.clh's helpers, then the snippets (either may be
 * NULL). */
int fused_snippets_prelude(const char *score_mod, const char *mask_mod, char **out);

#endif
