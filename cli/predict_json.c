/*
 * clattn predict --json: the figures of the tables as one JSON object, with
 * exact byte counts and null where a figure is unknown.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "cli.h"
#include "json.h"
#include "kvcache.h"
#include "predict.h"
#include "variant.h"

static void json_device(struct json *j, const struct predict_args *a, clattn_ctx *ctx,
                        const struct predict_figures *f, const clattn_prediction *p0)
{
    json_open(j, "device", '{');
    json_str(j, "name", ctx ? clattn_device_name(ctx) : a->preset ? "preset seed" : "none");
    json_figure(j, "capacity_bytes", f->capacity);
    json_figure(j, "max_alloc_bytes", f->max_alloc);
    json_figure(j, "cache_bytes", f->cache);
    json_figure(j, "bandwidth_bytes_per_s", f->bandwidth);
    json_figure(j, "peak_flops", f->peak);
    json_bool(j, "peak_flops_is_fp32", f->peak_is_f32);
    json_figure(j, "launch_latency_s", f->latency);
    json_num(j, "ridge_flop_per_byte", p0->ridge, 1);
    json_close(j, '}');
}

static void json_limits(struct json *j, const struct predict_limits *l, const clattn_prediction *p0)
{
    static const char *names[] = { "head_s_in_cache", "shared_s_in_cache", "scores_in_memory",
                                   "naive_fits", "fused_fits" };
    json_open(j, "limits", '{');
    for (int k = 0; k < 5; k++) {
        if (!l->known[k]) {
            json_null(j, names[k]);
            continue;
        }
        json_open(j, names[k], '{');
        json_u64(j, "n", l->n[k]);
        json_num(j, "root", l->root[k], 0);
        json_close(j, '}');
    }
    json_num(j, "naive_intensity_limit", p0->naive_intensity_limit, 0);
    json_num(j, "naive_compute_bound_from", (double)p0->naive_compute_len, 1);
    json_num(j, "fused_compute_bound_from", (double)p0->fused_compute_len, 1);
    json_close(j, '}');
}

static void json_path(struct json *j, const char *key, const clattn_path_estimate *e,
                      const struct predict_row *r, int k)
{
    json_open(j, key, '{');
    json_u64(j, "bytes", e->bytes);
    json_num(j, "flops", e->flops, 0);
    json_num(j, "intensity", e->intensity, 0);
    json_u64(j, "launches", e->launches);
    json_num(j, "memory_time_s", e->memory_time_s, 1);
    json_num(j, "compute_time_s", e->compute_time_s, 1);
    json_num(j, "time_s", e->time_s, 1);
    json_str(j, "bound", clattn_bound_name(e->bound));
    json_u64(j, "peak_bytes", e->memory.peak_bytes);
    json_str(j, "largest_buffer", e->memory.largest_name);
    json_u64(j, "largest_bytes", e->memory.largest_bytes);
    json_u64(j, "workspace_bytes", e->memory.workspace_bytes);
    json_str(j, "fit", clattn_fit_name(e->fit));
    json_str(j, "kernel", r->kernel[k][0] ? r->kernel[k] : NULL);
    json_num(j, "efficiency", r->efficiency[k], 1);
    json_num(j, "expected_time_s", r->expected_s[k], 1);
    json_close(j, '}');
}

static void json_traffic(struct json *j, const clattn_traffic *t)
{
    json_open(j, "per_head", '{');
    json_u64(j, "score_bytes", t->head_score_bytes);
    json_u64(j, "endpoint_bytes", t->head_endpoint_bytes);
    json_u64(j, "naive_bytes", t->head_naive_bytes);
    json_u64(j, "fused_bytes", t->head_fused_bytes);
    json_num(j, "ratio", t->head_ratio, 0);
    json_num(j, "closed_form", t->closed_form, 0);
    json_close(j, '}');
    json_open(j, "all_heads", '{');
    json_u64(j, "score_bytes", t->score_bytes);
    json_u64(j, "endpoint_bytes", t->endpoint_bytes);
    json_u64(j, "naive_bytes", t->naive_bytes);
    json_u64(j, "fused_bytes", t->fused_bytes);
    json_num(j, "ratio", t->ratio, 0);
    json_close(j, '}');
}

static void json_blocks(struct json *j, const struct predict_args *a, const struct predict_row *r)
{
    const clattn_causal_blocks *b = &r->causal.blocks;
    json_open(j, "causal", '{');
    json_str(j, "mode", cli_causal_name(r->problem.causal == CLATTN_CAUSAL_NONE
                                            ? CLATTN_CAUSAL_TOP_LEFT
                                            : r->problem.causal));
    json_bool(j, "what_if", a->causal == CLATTN_CAUSAL_NONE);
    json_u64(j, "q_blocks", b->q_blocks);
    json_u64(j, "k_blocks", b->k_blocks);
    json_u64(j, "total_blocks", b->total_blocks);
    json_u64(j, "visited_blocks", b->visited_blocks);
    json_num(j, "visited_fraction", b->visited_fraction, 0);
    json_num(j, "closed_form", b->closed_form, 1);
    json_u64(j, "empty_q_blocks", b->empty_q_blocks);
    json_u64(j, "empty_rows", b->empty_rows);
    json_u64(j, "total_pairs", b->total_pairs);
    json_u64(j, "computed_pairs", b->computed_pairs);
    json_u64(j, "visible_pairs", b->visible_pairs);
    json_u64(j, "kv_rows_read", b->kv_rows_read);
    json_u64(j, "kv_rows_streamed", b->kv_rows_streamed);
    json_num(j, "speedup", b->speedup, 0);
    json_num(j, "roofline_speedup", r->causal.causal_speedup, 1);
    json_close(j, '}');
}

/* The batch at its own lengths and the split: what the fused estimate counts. */
static void json_decode(struct json *j, const struct predict_row *r)
{
    const clattn_batch_blocks *b = &r->pred.batch;
    json_open(j, "decode", '{');
    json_u64(j, "splits", r->problem.splits ? r->problem.splits : 1);
    json_str(j, "splits_source", r->splits_source);
    json_u64(j, "split_workspace_bytes", b->split_workspace_bytes);
    json_u64(j, "empty_sequences", b->empty_sequences);
    json_u64(j, "kv_rows_total", b->kv_rows_total);
    json_u64(j, "kv_rows_read", b->kv_rows_read);
    json_u64(j, "total_blocks", b->total_blocks);
    json_u64(j, "visited_blocks", b->visited_blocks);
    json_u64(j, "total_pairs", b->total_pairs);
    json_u64(j, "computed_pairs", b->computed_pairs);
    json_u64(j, "visible_pairs", b->visible_pairs);
    json_close(j, '}');
}

/* The cache's figures in the row's fused estimate. */
static void json_cache_row(struct json *j, const struct predict_row *r)
{
    const clattn_cache_estimate *c = &r->cache_est;
    json_open(j, "cache", '{');
    json_u64(j, "k_row_bytes", c->k_row_bytes);
    json_u64(j, "v_row_bytes", c->v_row_bytes);
    json_u64(j, "k_bytes", c->k_bytes);
    json_u64(j, "v_bytes", c->v_bytes);
    json_u64(j, "dtype_kv_bytes", c->dtype_kv_bytes);
    json_u64(j, "table_bytes", c->table_bytes);
    json_u64(j, "scale_bytes", c->scale_bytes);
    json_u64(j, "seqlens_bytes", c->seqlens_bytes);
    json_u64(j, "q_rows", c->q_rows);
    json_u64(j, "kv_rows", c->kv_rows);
    json_u64(j, "k_buffer_bytes", c->k_buffer_bytes);
    json_u64(j, "v_buffer_bytes", c->v_buffer_bytes);
    json_u64(j, "table_buffer_bytes", c->table_buffer_bytes);
    json_close(j, '}');
}

/* --layers: the decoding step and what fits. */
static void json_serving(struct json *j, const struct predict_args *a,
                         const struct predict_row *r)
{
    const clattn_kv_capacity *k = &r->capacity;
    json_open(j, "serving", '{');
    json_u64(j, "layers", a->layers);
    json_u64(j, "q_len", r->step.shape.q_len);
    json_u64(j, "kv_len", r->step.shape.kv_len);
    json_u64(j, "block_m", r->step.block_m);
    json_u64(j, "block_n", r->step.block_n);
    json_str(j, "tiles_source", r->step_tiles_source);
    json_u64(j, "splits", r->step.splits ? r->step.splits : 1);
    json_figure(j, "free_bytes", r->free);
    json_u64(j, "token_bytes", k->token_bytes);
    json_u64(j, "page_bytes", k->page_bytes);
    json_u64(j, "scale_bytes", k->scale_bytes);
    if (k->free_bytes) {
        json_u64(j, "pages", k->pages);
        json_u64(j, "tokens", k->tokens);
        json_u64(j, "sequences", k->sequences);
    } else {
        json_null(j, "pages");
        json_null(j, "tokens");
        json_null(j, "sequences");
    }
    json_u64(j, "sequence_pages", k->sequence_pages);
    json_u64(j, "batch_pages", k->batch_pages);
    json_u64(j, "batch_bytes", k->batch_bytes);
    json_str(j, "fit", clattn_fit_name(k->fit));
    json_bool(j, "alloc_limited", k->alloc_limited);
    json_u64(j, "step_bytes", k->step_bytes);
    json_num(j, "step_flops", k->step_flops, 0);
    json_num(j, "layer_time_s", k->layer_time_s, 1);
    json_num(j, "step_time_s", k->step_time_s, 1);
    json_num(j, "tokens_per_s", k->tokens_per_s, 1);
    json_str(j, "bound", clattn_bound_name(k->bound));
    json_str(j, "kernel", r->step_kernel[0] ? r->step_kernel : NULL);
    json_num(j, "efficiency", r->step_efficiency, 1);
    json_num(j, "expected_step_time_s", r->step_expected_s, 1);
    json_close(j, '}');
}

/* --devices: each scheme's estimate. */
static void json_spread(struct json *j, const struct predict_args *a,
                        const struct predict_row *r)
{
    const clattn_spread_prediction *sp = &r->spread;
    json_open(j, "spread", '{');
    json_u64(j, "devices", sp->devices);
    json_num(j, "link_bytes_per_s", a->link_bw, 1);
    json_num(j, "peer_bytes_per_s", a->peer_bw, 1);
    json_str(j, "best", clattn_spread_name(sp->best));
    for (int k = 0; k < CLATTN_SPREADS; k++) {
        const clattn_spread_estimate *e = &sp->spread[k];
        json_open(j, clattn_spread_name((clattn_spread)k), '{');
        json_bool(j, "possible", e->possible);
        json_num(j, "compute_s", e->compute_s, 1);
        json_num(j, "transfer_s", e->transfer_s, 0);
        json_num(j, "time_s", e->time_s, 1);
        json_u64(j, "host_bytes", e->host_bytes);
        json_u64(j, "peer_bytes", e->peer_bytes);
        json_u64(j, "device_bytes", e->device_bytes);
        if (e->max_len)
            json_u64(j, "max_len", e->max_len);
        else
            json_null(j, "max_len");
        json_close(j, '}');
    }
    json_close(j, '}');
}

static void json_row(struct json *j, const struct predict_args *a, const struct predict_row *r)
{
    json_open(j, NULL, '{');
    json_u64(j, "q_len", r->problem.shape.q_len);
    json_u64(j, "kv_len", r->problem.shape.kv_len);
    json_u64(j, "block_m", r->problem.block_m);
    json_u64(j, "block_n", r->problem.block_n);
    json_str(j, "tiles_source", r->tiles_source);
    json_decode(j, r);
    json_traffic(j, &r->pred.traffic);
    json_path(j, "naive", &r->pred.naive, r, 0);
    json_path(j, "fused", &r->pred.fused, r, 1);
    json_blocks(j, a, r);
    if (a->has_variant) {
        const clattn_batch_blocks *bb = &r->pred.batch;
        json_open(j, "variant", '{');
        cli_variant_json(j, &r->problem.shape, &r->vopts);
        json_u64(j, "visible_pairs", bb->visible_pairs);
        json_u64(j, "computed_pairs", bb->computed_pairs);
        json_u64(j, "visited_blocks", bb->visited_blocks);
        json_u64(j, "total_blocks", bb->total_blocks);
        json_u64(j, "kv_rows_read", bb->kv_rows_read);
        json_u64(j, "mask_bytes", r->mask_bytes);
        json_close(j, '}');
    }
    if (a->has_cache)
        json_cache_row(j, r);
    if (a->layers)
        json_serving(j, a, r);
    if (a->devices)
        json_spread(j, a, r);
    json_close(j, '}');
}

void predict_print_json(FILE *out, const struct predict_args *a, clattn_ctx *ctx,
                        const struct predict_figures *f, const struct predict_limits *l,
                        const struct predict_row *rows, size_t n)
{
    struct json j;
    const clattn_shape *s = &a->shape;
    json_begin_document(&j, out, "predict");
    json_open(&j, "shape", '{');
    json_u64(&j, "batch", s->batch);
    json_u64(&j, "heads", s->heads);
    json_u64(&j, "kv_heads", s->kv_heads);
    json_u64(&j, "head_dim", s->head_dim);
    json_str(&j, "dtype", cli_dtype_name(s->dtype));
    json_u64(&j, "element_bytes", clattn_dtype_size(s->dtype));
    json_str(&j, "causal", cli_causal_name(a->causal));
    json_u32_list(&j, "kv_lens", a->kv_lens, a->n_kv_lens);
    json_close(&j, '}');
    if (a->has_cache || a->layers) {
        /* The cache as given: present only where asked for (the fields
         * above are clattn.predict's, field for field). */
        const cli_cache *c = &a->call.cache;
        json_open(&j, "cache", '{');
        json_str(&j, "k_type", cli_kv_type_name(c->k_type, s->dtype));
        json_str(&j, "v_type", cli_kv_type_name(c->v_type, s->dtype));
        json_u64(&j, "page_size", c->page_size);
        json_bool(&j, "packed", c->packed);
        json_u32_list(&j, "q_lens", a->call.q_lens, a->call.n_q_lens);
        json_u64(&j, "layers", a->layers);
        json_close(&j, '}');
    }
    json_device(&j, a, ctx, f, &rows[0].pred);
    json_limits(&j, l, &rows[0].pred);
    json_open(&j, "rows", '[');
    for (size_t i = 0; i < n; i++)
        json_row(&j, a, &rows[i]);
    json_close(&j, ']');
    json_end_document(&j);
}
