# SPDX-License-Identifier: MIT
"""libclattn.so through ctypes: finding it, the structs, the prototypes.

The struct mirrors follow include/clattn/*.h field for field;
tests/python/test_layout.py compares every size and offset with the C
compiler's. The library is found in this order: the copy inside the package
(the wheel that `pip install .` builds carries one), $CLATTN_LIBRARY (a
path), the dynamic loader's search path (libclattn.so.<API major>:
LD_LIBRARY_PATH, the cache of ldconfig, the system directories).
"""
import ctypes
import ctypes.util
import os

API_MAJOR = 1  # the soname's number: this package speaks API 1.x

c_size = ctypes.c_size_t
c_u32 = ctypes.c_uint32
c_u64 = ctypes.c_uint64
c_enum = ctypes.c_int
c_ptr = ctypes.c_void_p  # cl_mem, cl_event, cl_context, ...


class Shape(ctypes.Structure):
    _fields_ = [("batch", c_size), ("heads", c_size), ("kv_heads", c_size),
                ("q_len", c_size), ("kv_len", c_size), ("head_dim", c_size),
                ("dtype", c_enum)]


class Layout(ctypes.Structure):
    _fields_ = [("batch_stride", c_size), ("head_stride", c_size),
                ("token_stride", c_size), ("byte_offset", c_size)]


class Mask(ctypes.Structure):
    _fields_ = [("kind", c_enum), ("dtype", c_enum), ("batch", c_size), ("heads", c_size),
                ("layout", Layout), ("host", c_ptr)]


class Options(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("causal", c_enum), ("scale", ctypes.c_float),
                ("path", c_enum), ("fused_kernel", c_enum), ("allow_oom", ctypes.c_int),
                ("use_clblast", ctypes.c_int), ("block_m", c_size), ("block_n", c_size),
                ("rows_per_item", c_size), ("split_kv", c_u32),
                ("kv_lens", ctypes.POINTER(c_u32)), ("q_lens", ctypes.POINTER(c_u32)),
                ("q_layout", Layout), ("k_layout", Layout), ("v_layout", Layout),
                ("o_layout", Layout), ("kernel_params", ctypes.c_char_p),
                ("softcap", ctypes.c_float), ("alibi_slopes", ctypes.POINTER(ctypes.c_float)),
                ("alibi_per_sequence", ctypes.c_int), ("window_left", ctypes.c_int32),
                ("window_right", ctypes.c_int32), ("sinks", ctypes.POINTER(ctypes.c_float)),
                ("mask", Mask), ("score_mod", ctypes.c_char_p), ("mask_mod", ctypes.c_char_p),
                ("head_dim_v", c_size),
                # KV caches (API 1.3): storage types, fp8 scales, pages, packed batches.
                ("k_type", c_enum), ("v_type", c_enum),
                ("k_scale", ctypes.POINTER(ctypes.c_float)),
                ("v_scale", ctypes.POINTER(ctypes.c_float)), ("kv_scale_per_head", ctypes.c_int),
                ("page_size", c_size), ("num_pages", c_size),
                ("block_table", ctypes.POINTER(ctypes.c_int32)), ("block_table_stride", c_size),
                ("cu_seqlens_q", ctypes.POINTER(ctypes.c_int32)),
                ("cu_seqlens_k", ctypes.POINTER(ctypes.c_int32)),
                ("total_q", c_size), ("total_k", c_size)]


GROUP_MAX = 16  # CLATTN_GROUP_MAX


class GroupInfo(ctypes.Structure):
    _fields_ = [("devices", c_size), ("scheme", ctypes.c_char * 16), ("note", ctypes.c_char * 160),
                ("begin", c_size * GROUP_MAX), ("share", c_size * GROUP_MAX),
                ("weight", ctypes.c_double * GROUP_MAX), ("reserved", ctypes.c_uint8 * 64)]


class RunInfo(ctypes.Structure):
    _fields_ = [("path", c_enum), ("kernel", ctypes.c_char * 64),
                ("predicted_peak_bytes", c_u64), ("allocated_bytes", c_u64),
                ("note", ctypes.c_char * 160), ("splits", c_u32),
                ("build_seconds", ctypes.c_double), ("reserved", ctypes.c_uint8 * 120)]


class Extras(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("lse", c_ptr), ("kv_lens", c_ptr), ("q_lens", c_ptr),
                ("alibi_slopes", c_ptr), ("sinks", c_ptr), ("mask", c_ptr),
                ("block_table", c_ptr), ("cu_seqlens_q", c_ptr), ("cu_seqlens_k", c_ptr),
                ("k_scale", c_ptr), ("v_scale", c_ptr)]


class DeviceEntry(ctypes.Structure):
    _fields_ = [("platform", c_ptr), ("device", c_ptr), ("type", c_u64),
                ("name", ctypes.c_char * 256)]


class Figure(ctypes.Structure):
    _fields_ = [("value", ctypes.c_double), ("source", c_enum)]


class Ceilings(ctypes.Structure):
    _fields_ = [(name, Figure) for name in (
        "global_mem_bytes", "max_alloc_bytes", "cache_bytes", "bandwidth", "flops_f32",
        "flops_f16", "launch_latency_s")]


# ------------------------------------------------------------ the byte model

class Traffic(ctypes.Structure):
    _fields_ = [("head_score_bytes", c_u64), ("head_endpoint_bytes", c_u64),
                ("head_naive_bytes", c_u64), ("head_fused_bytes", c_u64),
                ("head_ratio", ctypes.c_double), ("closed_form", ctypes.c_double),
                ("score_bytes", c_u64), ("endpoint_bytes", c_u64), ("naive_bytes", c_u64),
                ("fused_bytes", c_u64), ("ratio", ctypes.c_double)]


class ModelDevice(ctypes.Structure):
    _fields_ = [("capacity_bytes", c_u64), ("max_alloc_bytes", c_u64), ("cache_bytes", c_u64),
                ("bandwidth", ctypes.c_double), ("peak_flops", ctypes.c_double),
                ("launch_latency_s", ctypes.c_double)]


class MemoryPlan(ctypes.Structure):
    _fields_ = [("peak_bytes", c_u64), ("largest_bytes", c_u64),
                ("largest_name", ctypes.c_char_p), ("workspace_bytes", c_u64)]


class CausalBlocks(ctypes.Structure):
    _fields_ = [("q_blocks", c_u64), ("k_blocks", c_u64), ("total_blocks", c_u64),
                ("visited_blocks", c_u64), ("visited_fraction", ctypes.c_double),
                ("closed_form", ctypes.c_double), ("empty_q_blocks", c_u64),
                ("empty_rows", c_u64), ("total_pairs", c_u64), ("computed_pairs", c_u64),
                ("visible_pairs", c_u64), ("kv_rows_read", c_u64),
                ("kv_rows_streamed", c_u64), ("speedup", ctypes.c_double)]


class ModelProblem(ctypes.Structure):
    _fields_ = [("shape", Shape), ("causal", c_enum), ("block_m", c_size), ("block_n", c_size),
                ("naive_workspace_bytes", c_u64), ("fused_workspace_bytes", c_u64),
                ("splits", ctypes.c_uint32), ("kv_lens", c_ptr)]


class ModelVariant(ctypes.Structure):
    _fields_ = [("struct_size", c_size), ("head_dim_v", c_size), ("window_left", ctypes.c_int32),
                ("window_right", ctypes.c_int32), ("mask_kind", c_enum), ("mask_dtype", c_enum),
                ("mask_batch", c_size), ("mask_heads", c_size)]


class BatchBlocks(ctypes.Structure):
    _fields_ = [(name, c_u64) for name in (
        "empty_sequences", "total_blocks", "visited_blocks", "total_pairs", "computed_pairs",
        "visible_pairs", "kv_rows_total", "kv_rows_read", "split_workspace_bytes")]


class PathEstimate(ctypes.Structure):
    _fields_ = [("bytes", c_u64), ("flops", ctypes.c_double), ("intensity", ctypes.c_double),
                ("launches", ctypes.c_uint), ("memory_time_s", ctypes.c_double),
                ("compute_time_s", ctypes.c_double), ("time_s", ctypes.c_double),
                ("bound", c_enum), ("memory", MemoryPlan), ("fit", c_enum)]


class Prediction(ctypes.Structure):
    _fields_ = [("traffic", Traffic), ("blocks", CausalBlocks), ("naive", PathEstimate),
                ("fused", PathEstimate), ("ridge", ctypes.c_double),
                ("naive_intensity_limit", ctypes.c_double), ("naive_compute_len", c_u64),
                ("fused_compute_len", c_u64), ("causal_speedup", ctypes.c_double),
                ("batch", BatchBlocks)]


class FusedPlan(ctypes.Structure):
    _fields_ = [("kernel", c_enum), ("block_m", c_size), ("block_n", c_size),
                ("rows_per_item", c_size), ("work_group_size", c_size), ("splits", c_u32),
                ("split_keys", c_size), ("workspace_bytes", c_u64), ("note", ctypes.c_char * 160)]


# The structs tests/python/test_layout.py checks against the C headers.
MIRRORED = {
    "clattn_shape": Shape, "clattn_layout": Layout, "clattn_mask": Mask,
    "clattn_options": Options,
    "clattn_run_info": RunInfo, "clattn_extras": Extras, "clattn_device_entry": DeviceEntry,
    "clattn_figure": Figure, "clattn_ceilings": Ceilings, "clattn_traffic": Traffic,
    "clattn_model_device": ModelDevice, "clattn_memory_plan": MemoryPlan,
    "clattn_causal_blocks": CausalBlocks, "clattn_model_problem": ModelProblem,
    "clattn_model_variant": ModelVariant,
    "clattn_batch_blocks": BatchBlocks,
    "clattn_path_estimate": PathEstimate, "clattn_prediction": Prediction,
    "clattn_fused_plan": FusedPlan, "clattn_group_info": GroupInfo,
}

P = ctypes.POINTER
_PROTOTYPES = {
    "clattn_strerror": (ctypes.c_char_p, [ctypes.c_int]),
    "clattn_error_name": (ctypes.c_char_p, [ctypes.c_int]),
    "clattn_last_error_detail": (ctypes.c_char_p, []),
    "clattn_version": (ctypes.c_char_p, []),
    "clattn_api_version": (ctypes.c_uint, []),
    "clattn_default_options": (None, [P(Options)]),
    "clattn_default_extras": (None, [P(Extras)]),
    "clattn_open": (ctypes.c_int, [P(c_ptr), ctypes.c_char_p]),
    "clattn_open_cl": (ctypes.c_int, [P(c_ptr), c_ptr, c_ptr]),
    "clattn_close": (None, [P(c_ptr)]),
    "clattn_device_name": (ctypes.c_char_p, [c_ptr]),
    "clattn_cl_context": (c_ptr, [c_ptr]),
    "clattn_cl_queue": (c_ptr, [c_ptr]),
    "clattn_list_devices": (ctypes.c_int, [P(DeviceEntry), c_size, P(c_size)]),
    "clattn_fused_kernel_find": (ctypes.c_int, [ctypes.c_char_p, P(c_enum)]),
    "clattn_attention_ex": (ctypes.c_int, [c_ptr, P(Shape), P(Options), c_ptr, c_ptr, c_ptr,
                                           c_ptr, P(ctypes.c_float), P(RunInfo)]),
    "clattn_attention_ex_cl": (ctypes.c_int, [c_ptr, P(Shape), P(Options), c_ptr, c_ptr, c_ptr,
                                              c_ptr, P(Extras), ctypes.c_uint, P(c_ptr),
                                              P(c_ptr), P(RunInfo)]),
    "clattn_device_ceilings": (ctypes.c_int, [c_ptr, P(Ceilings)]),
    "clattn_fused_tiles": (ctypes.c_int, [c_ptr, P(Shape), P(Options), P(c_size), P(c_size),
                                          P(c_enum)]),
    "clattn_plan_fused": (ctypes.c_int, [c_ptr, P(Shape), P(Options), P(FusedPlan)]),
    "clattn_attention_plan": (ctypes.c_int, [c_ptr, P(Shape), P(Options), P(RunInfo)]),
    "clattn_fused_kernel_name": (ctypes.c_char_p, [c_enum]),
    "clattn_describe_kernels": (ctypes.c_int, [c_ptr, P(Shape), P(Options), ctypes.c_char_p,
                                               c_size, ctypes.c_char_p, c_size]),
    "clattn_model_max_len": (ctypes.c_int, [P(Shape), c_enum, c_u64, P(ModelDevice), P(c_size),
                                            P(ctypes.c_double)]),
    # Several devices (API 1.4).
    "clattn_group_open": (ctypes.c_int, [P(c_ptr), ctypes.c_char_p]),
    "clattn_group_close": (None, [P(c_ptr)]),
    "clattn_group_attention": (ctypes.c_int, [c_ptr, P(Shape), P(Options), c_ptr, c_ptr, c_ptr,
                                              c_ptr, P(ctypes.c_float), P(GroupInfo)]),
    # API 1.6: a library of 1.4 or 1.5 loads without it (spread= then refuses).
    "clattn_group_set_scheme": (ctypes.c_int, [c_ptr, ctypes.c_char_p]),
    "clattn_merge": (ctypes.c_int, [c_size, c_size, c_enum, c_ptr, P(ctypes.c_float), c_ptr,
                                    P(ctypes.c_float), c_ptr, P(ctypes.c_float)]),
    "clattn_merge_cl": (ctypes.c_int, [c_ptr, c_size, c_size, c_enum, c_ptr, c_ptr, c_ptr, c_ptr,
                                       c_ptr, c_ptr, ctypes.c_uint, P(c_ptr), P(c_ptr)]),
    "clattn_dtype_size": (c_size, [c_enum]),
    "clattn_kv_block_values": (c_size, [c_enum]),
    "clattn_kv_block_bytes": (c_size, [c_enum, c_enum]),
    "clattn_kv_type_name": (ctypes.c_char_p, [c_enum, c_enum]),
    "clattn_quantize": (ctypes.c_int, [c_enum, c_enum, c_ptr, c_size, c_size, ctypes.c_float,
                                       c_ptr]),
    "clattn_dequantize": (ctypes.c_int, [c_enum, c_ptr, c_size, c_size, ctypes.c_float,
                                         P(ctypes.c_float)]),
    "clattn_kv_append": (ctypes.c_int, [P(Shape), P(Options), c_size, P(Layout), c_ptr, c_ptr,
                                        c_ptr, c_ptr]),
    "clattn_kv_append_cl": (ctypes.c_int, [c_ptr, P(Shape), P(Options), c_size, P(Layout), c_ptr,
                                           c_ptr, c_ptr, c_ptr, P(Extras), ctypes.c_int,
                                           ctypes.c_uint, P(c_ptr), P(c_ptr)]),
    "clattn_kernel_efficiency": (ctypes.c_int, [c_ptr, ctypes.c_char_p, c_enum, c_size, c_enum,
                                                P(ctypes.c_double)]),
    "clattn_tune_record_efficiency": (ctypes.c_int, [c_ptr, ctypes.c_char_p, c_enum, c_size,
                                                     c_enum, ctypes.c_double]),
    "clattn_model_default_device": (None, [P(ModelDevice)]),
    "clattn_model_default_problem": (None, [P(ModelProblem)]),
    "clattn_model_predict": (ctypes.c_int, [P(ModelProblem), P(ModelDevice), P(Prediction)]),
    "clattn_model_default_variant": (None, [P(ModelVariant)]),
    "clattn_model_predict_variant": (ctypes.c_int, [P(ModelProblem), P(ModelVariant),
                                                    P(ModelDevice), P(Prediction)]),
    "clattn_alibi_slopes": (ctypes.c_int, [ctypes.c_float, c_size, P(ctypes.c_float)]),
    "clattn_fit_name": (ctypes.c_char_p, [c_enum]),
    "clattn_bound_name": (ctypes.c_char_p, [c_enum]),
    "clattn_source_name": (ctypes.c_char_p, [c_enum]),
}


PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
# The library's file name inside the package, per platform.
BUNDLED_NAMES = ("libclattn.so", "libclattn.dylib", "clattn.dll")


def bundled_library():
    """The path of the library the package carries, or None."""
    for name in BUNDLED_NAMES:
        path = os.path.join(PACKAGE_DIR, name)
        if os.path.isfile(path):
            return path
    return None


def bundled_tool():
    """The path of the clattn command-line tool the package carries, or None."""
    for name in ("clattn", "clattn.exe"):
        path = os.path.join(PACKAGE_DIR, "bin", name)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return None


def _candidates():
    own = bundled_library()
    path = os.environ.get("CLATTN_LIBRARY")
    found = ctypes.util.find_library("clattn")
    return ([own] if own else []) + ([path] if path else []) + \
        ["libclattn.so.%d" % API_MAJOR] + ([found] if found else [])


def _loader_hint(errors):
    """What to install when the library was found but its OpenCL loader was not."""
    if any("libOpenCL" in e for e in errors):
        return (" (the OpenCL ICD loader libOpenCL.so.1 is missing: Debian/Ubuntu "
                "ocl-icd-libopencl1, Fedora ocl-icd, plus a driver such as pocl-opencl-icd)")
    return ""


# Functions of a later API minor than the package's first: absent from an
# older library, which still loads.
_LATER = {"clattn_group_set_scheme"}


def load():
    """The library, with its prototypes set; OSError when it cannot be found
    or speaks another API major."""
    errors = []
    for name in _candidates():
        try:
            lib = ctypes.CDLL(name)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise OSError("clattn: libclattn.so not found%s (pip install clattn brings one; else "
                      "set CLATTN_LIBRARY to its path, or install it where the dynamic loader "
                      "looks): %s" % (_loader_hint(errors), "; ".join(errors)))
    lib.clattn_path = name
    for fn, (restype, argtypes) in _PROTOTYPES.items():
        if fn in _LATER and not hasattr(lib, fn):
            continue
        f = getattr(lib, fn)
        f.restype = restype
        f.argtypes = argtypes
    api = lib.clattn_api_version()
    if api >> 16 != API_MAJOR:
        raise OSError("clattn: %s implements API %d.%d; this package needs %d.x"
                      % (name, api >> 16, api & 0xffff, API_MAJOR))
    probe = Options()
    lib.clattn_default_options(ctypes.byref(probe))
    if probe.struct_size != ctypes.sizeof(Options):
        raise OSError("clattn: the library's clattn_options is %d bytes, this package's %d"
                      % (probe.struct_size, ctypes.sizeof(Options)))
    return lib
