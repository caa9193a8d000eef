/* SPDX-License-Identifier: MIT */
/* Sizes and field offsets of the structs python/clattn/_lib.py mirrors, as
 * the C compiler lays them out, in JSON: test_layout.py compares them with
 * ctypes'. The list is the mirror's; a field added to a header shows up as a
 * size that differs. */
#include <stddef.h>
#include <stdio.h>

#include "clattn/clattn.h"
#include "clattn/device.h"
#include "clattn/model.h"

#define FIELD(type, name)                                                             \
    printf("%s\"%s\": %zu", first ? "" : ", ", #name, offsetof(type, name)), first = 0
#define BEGIN(type)                                                                   \
    printf("%s\"%s\": {\"size\": %zu, \"fields\": {", any ? ", " : "", #type,         \
           sizeof(type)),                                                             \
        first = 1, any = 1
#define END() printf("}}")

int main(void)
{
    int first = 1, any = 0;
    printf("{");
    BEGIN(clattn_shape);
    FIELD(clattn_shape, batch);
    FIELD(clattn_shape, heads);
    FIELD(clattn_shape, kv_heads);
    FIELD(clattn_shape, q_len);
    FIELD(clattn_shape, kv_len);
    FIELD(clattn_shape, head_dim);
    FIELD(clattn_shape, dtype);
    END();
    BEGIN(clattn_layout);
    FIELD(clattn_layout, batch_stride);
    FIELD(clattn_layout, head_stride);
    FIELD(clattn_layout, token_stride);
    FIELD(clattn_layout, byte_offset);
    END();
    BEGIN(clattn_options);
    FIELD(clattn_options, struct_size);
    FIELD(clattn_options, causal);
    FIELD(clattn_options, scale);
    FIELD(clattn_options, path);
    FIELD(clattn_options, fused_kernel);
    FIELD(clattn_options, allow_oom);
    FIELD(clattn_options, use_clblast);
    FIELD(clattn_options, block_m);
    FIELD(clattn_options, block_n);
    FIELD(clattn_options, rows_per_item);
    FIELD(clattn_options, split_kv);
    FIELD(clattn_options, kv_lens);
    FIELD(clattn_options, q_lens);
    FIELD(clattn_options, q_layout);
    FIELD(clattn_options, k_layout);
    FIELD(clattn_options, v_layout);
    FIELD(clattn_options, o_layout);
    FIELD(clattn_options, kernel_params);
    FIELD(clattn_options, softcap);
    FIELD(clattn_options, alibi_slopes);
    FIELD(clattn_options, alibi_per_sequence);
    FIELD(clattn_options, window_left);
    FIELD(clattn_options, window_right);
    FIELD(clattn_options, sinks);
    FIELD(clattn_options, mask);
    FIELD(clattn_options, score_mod);
    FIELD(clattn_options, mask_mod);
    FIELD(clattn_options, head_dim_v);
    END();
    BEGIN(clattn_mask);
    FIELD(clattn_mask, kind);
    FIELD(clattn_mask, dtype);
    FIELD(clattn_mask, batch);
    FIELD(clattn_mask, heads);
    FIELD(clattn_mask, layout);
    FIELD(clattn_mask, host);
    END();
    BEGIN(clattn_run_info);
    FIELD(clattn_run_info, path);
    FIELD(clattn_run_info, kernel);
    FIELD(clattn_run_info, predicted_peak_bytes);
    FIELD(clattn_run_info, allocated_bytes);
    FIELD(clattn_run_info, note);
    FIELD(clattn_run_info, splits);
    FIELD(clattn_run_info, build_seconds);
    FIELD(clattn_run_info, reserved);
    END();
    BEGIN(clattn_extras);
    FIELD(clattn_extras, struct_size);
    FIELD(clattn_extras, lse);
    FIELD(clattn_extras, kv_lens);
    FIELD(clattn_extras, q_lens);
    FIELD(clattn_extras, alibi_slopes);
    FIELD(clattn_extras, sinks);
    FIELD(clattn_extras, mask);
    END();
    BEGIN(clattn_device_entry);
    FIELD(clattn_device_entry, platform);
    FIELD(clattn_device_entry, device);
    FIELD(clattn_device_entry, type);
    FIELD(clattn_device_entry, name);
    END();
    BEGIN(clattn_figure);
    FIELD(clattn_figure, value);
    FIELD(clattn_figure, source);
    END();
    BEGIN(clattn_ceilings);
    FIELD(clattn_ceilings, global_mem_bytes);
    FIELD(clattn_ceilings, max_alloc_bytes);
    FIELD(clattn_ceilings, cache_bytes);
    FIELD(clattn_ceilings, bandwidth);
    FIELD(clattn_ceilings, flops_f32);
    FIELD(clattn_ceilings, flops_f16);
    FIELD(clattn_ceilings, launch_latency_s);
    END();
    BEGIN(clattn_traffic);
    FIELD(clattn_traffic, head_score_bytes);
    FIELD(clattn_traffic, head_endpoint_bytes);
    FIELD(clattn_traffic, head_naive_bytes);
    FIELD(clattn_traffic, head_fused_bytes);
    FIELD(clattn_traffic, head_ratio);
    FIELD(clattn_traffic, closed_form);
    FIELD(clattn_traffic, score_bytes);
    FIELD(clattn_traffic, endpoint_bytes);
    FIELD(clattn_traffic, naive_bytes);
    FIELD(clattn_traffic, fused_bytes);
    FIELD(clattn_traffic, ratio);
    END();
    BEGIN(clattn_model_device);
    FIELD(clattn_model_device, capacity_bytes);
    FIELD(clattn_model_device, max_alloc_bytes);
    FIELD(clattn_model_device, cache_bytes);
    FIELD(clattn_model_device, bandwidth);
    FIELD(clattn_model_device, peak_flops);
    FIELD(clattn_model_device, launch_latency_s);
    END();
    BEGIN(clattn_memory_plan);
    FIELD(clattn_memory_plan, peak_bytes);
    FIELD(clattn_memory_plan, largest_bytes);
    FIELD(clattn_memory_plan, largest_name);
    FIELD(clattn_memory_plan, workspace_bytes);
    END();
    BEGIN(clattn_causal_blocks);
    FIELD(clattn_causal_blocks, q_blocks);
    FIELD(clattn_causal_blocks, k_blocks);
    FIELD(clattn_causal_blocks, total_blocks);
    FIELD(clattn_causal_blocks, visited_blocks);
    FIELD(clattn_causal_blocks, visited_fraction);
    FIELD(clattn_causal_blocks, closed_form);
    FIELD(clattn_causal_blocks, empty_q_blocks);
    FIELD(clattn_causal_blocks, empty_rows);
    FIELD(clattn_causal_blocks, total_pairs);
    FIELD(clattn_causal_blocks, computed_pairs);
    FIELD(clattn_causal_blocks, visible_pairs);
    FIELD(clattn_causal_blocks, kv_rows_read);
    FIELD(clattn_causal_blocks, kv_rows_streamed);
    FIELD(clattn_causal_blocks, speedup);
    END();
    BEGIN(clattn_model_problem);
    FIELD(clattn_model_problem, shape);
    FIELD(clattn_model_problem, causal);
    FIELD(clattn_model_problem, block_m);
    FIELD(clattn_model_problem, block_n);
    FIELD(clattn_model_problem, naive_workspace_bytes);
    FIELD(clattn_model_problem, fused_workspace_bytes);
    FIELD(clattn_model_problem, splits);
    FIELD(clattn_model_problem, kv_lens);
    END();
    BEGIN(clattn_model_variant);
    FIELD(clattn_model_variant, struct_size);
    FIELD(clattn_model_variant, head_dim_v);
    FIELD(clattn_model_variant, window_left);
    FIELD(clattn_model_variant, window_right);
    FIELD(clattn_model_variant, mask_kind);
    FIELD(clattn_model_variant, mask_dtype);
    FIELD(clattn_model_variant, mask_batch);
    FIELD(clattn_model_variant, mask_heads);
    END();
    BEGIN(clattn_batch_blocks);
    FIELD(clattn_batch_blocks, empty_sequences);
    FIELD(clattn_batch_blocks, total_blocks);
    FIELD(clattn_batch_blocks, visited_blocks);
    FIELD(clattn_batch_blocks, total_pairs);
    FIELD(clattn_batch_blocks, computed_pairs);
    FIELD(clattn_batch_blocks, visible_pairs);
    FIELD(clattn_batch_blocks, kv_rows_total);
    FIELD(clattn_batch_blocks, kv_rows_read);
    FIELD(clattn_batch_blocks, split_workspace_bytes);
    END();
    BEGIN(clattn_path_estimate);
    FIELD(clattn_path_estimate, bytes);
    FIELD(clattn_path_estimate, flops);
    FIELD(clattn_path_estimate, intensity);
    FIELD(clattn_path_estimate, launches);
    FIELD(clattn_path_estimate, memory_time_s);
    FIELD(clattn_path_estimate, compute_time_s);
    FIELD(clattn_path_estimate, time_s);
    FIELD(clattn_path_estimate, bound);
    FIELD(clattn_path_estimate, memory);
    FIELD(clattn_path_estimate, fit);
    END();
    BEGIN(clattn_prediction);
    FIELD(clattn_prediction, traffic);
    FIELD(clattn_prediction, blocks);
    FIELD(clattn_prediction, naive);
    FIELD(clattn_prediction, fused);
    FIELD(clattn_prediction, ridge);
    FIELD(clattn_prediction, naive_intensity_limit);
    FIELD(clattn_prediction, naive_compute_len);
    FIELD(clattn_prediction, fused_compute_len);
    FIELD(clattn_prediction, causal_speedup);
    FIELD(clattn_prediction, batch);
    END();
    BEGIN(clattn_fused_plan);
    FIELD(clattn_fused_plan, kernel);
    FIELD(clattn_fused_plan, block_m);
    FIELD(clattn_fused_plan, block_n);
    FIELD(clattn_fused_plan, rows_per_item);
    FIELD(clattn_fused_plan, work_group_size);
    FIELD(clattn_fused_plan, splits);
    FIELD(clattn_fused_plan, split_keys);
    FIELD(clattn_fused_plan, workspace_bytes);
    FIELD(clattn_fused_plan, note);
    END();
    printf("}\n");
    return 0;
}
