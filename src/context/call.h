/* One attention call as the entry points hand it to a path: the checked
 * shape and options and the caller's buffers. Paths only enqueue. */
#ifndef CLATTN_SRC_RUNTIME_CALL_H
#define CLATTN_SRC_RUNTIME_CALL_H

#include "clattn/clattn.h"

struct attention_call {
    const clattn_shape *shape;
    const clattn_options *opts;
    float scale;            /* resolved: never 0 */
    int causal;             /* a mask of either alignment */
    int causal_off;         /* 0 (top-left) or Nk - Nq (bottom-right) */
    cl_mem q, k, v, o;
    cl_uint num_wait;
    const cl_event *wait_list;
    cl_event *done;         /* may be NULL */
    clattn_run_info *info;  /* never NULL here */
};

#endif
