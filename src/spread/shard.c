/* SPDX-License-Identifier: MIT */
/* The ranks' chunks of the sequence and one call per pair of chunks (see
 * shard.h). */
#include "spread/shard.h"

int shard_chunks(const size_t *local_len, size_t ranks, int zigzag, size_t r,
                 struct rank_chunks *out)
{
    out->n = 0;
    if (!zigzag) {
        size_t begin = 0;
        for (size_t i = 0; i < r; i++)
            begin += local_len[i];
        if (local_len[r])
            out->c[out->n++] = (struct chunk){ begin, local_len[r], 0 };
        return CLATTN_OK;
    }
    for (size_t i = 0; i < ranks; i++)
        if (local_len[i] % 2)
            return CLATTN_EINVAL;
    /* Chunk c of the 2P belongs to rank c (c < P) or 2P-1-c, half its tokens. */
    size_t begin = 0;
    for (size_t c = 0; c < 2 * ranks; c++) {
        const size_t owner = c < ranks ? c : 2 * ranks - 1 - c;
        const size_t len = local_len[owner] / 2;
        if (owner == r && len)
            out->c[out->n++] = (struct chunk){ begin, len, c < ranks ? 0 : len };
        begin += len;
    }
    return CLATTN_OK;
}

static int64_t clamp64(int64_t x, int64_t lo, int64_t hi)
{
    return x < lo ? lo : x > hi ? hi : x;
}

void shard_pair(const clattn_shape *s, const clattn_options *o, const struct chunk *qc,
                const struct chunk *kc, struct pair_call *p)
{
    const int64_t qa = (int64_t)qc->begin, qn = (int64_t)qc->len;
    const int64_t ka = (int64_t)kc->begin, kn = (int64_t)kc->len;
    struct pair_part *br = &p->part[0], *none = &p->part[1];
    br->used = none->used = 0;
    p->rests = 0;
    for (size_t b = 0; b < s->batch; b++) {
        const int64_t nk = o->kv_lens ? o->kv_lens[b] : (int64_t)s->kv_len;
        const int64_t nq = o->q_lens ? o->q_lens[b] : (int64_t)s->q_len;
        const int64_t rows = clamp64(nq - qa, 0, qn); /* this sequence's queries of qc */
        const int64_t cap = clamp64(nk - ka, 0, kn);  /* and its keys of kc */
        br->kv_lens[b] = br->q_lens[b] = none->kv_lens[b] = none->q_lens[b] = 0;
        p->rest_from[b] = p->rest_rows[b] = p->rest_keys[b] = 0;
        if (!rows || !cap)
            continue; /* its rows see nothing here */
        /* Query i' of qc (position qa + i') sees key j' of kc iff
         * j' <= i' + diag, and j' < cap. */
        const int64_t off = o->causal == CLATTN_CAUSAL_BOTTOM_RIGHT ? nk - nq : 0;
        const int64_t diag = qa + off - ka;
        if (o->causal == CLATTN_CAUSAL_NONE || diag >= cap - 1) {
            none->kv_lens[b] = (uint32_t)cap, none->q_lens[b] = (uint32_t)rows;
            none->used = 1;
        } else if (diag + rows <= cap) { /* bottom-right over L = diag + rows keys */
            if (diag + rows <= 0)
                continue; /* above the diagonal: nothing */
            br->kv_lens[b] = (uint32_t)(diag + rows), br->q_lens[b] = (uint32_t)rows;
            br->used = 1;
        } else {
            /* Rows [0, t) see part of kc, rows [t, rows) all of it. */
            const int64_t t = cap - 1 - diag;
            br->kv_lens[b] = (uint32_t)(cap - 1), br->q_lens[b] = (uint32_t)t;
            br->used |= cap > 1;
            p->rest_from[b] = (uint32_t)t, p->rest_rows[b] = (uint32_t)(rows - t);
            p->rest_keys[b] = (uint32_t)cap;
            p->rests++;
        }
    }
}
