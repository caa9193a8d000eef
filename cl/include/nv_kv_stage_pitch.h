/* SPDX-License-Identifier: MIT */
/*
 * The pitch of a KV row staged in local memory by cl/fused/nv_decode.cl's
 * staged register path (cl/include/nv_kv_stage.clh), from the row's bytes
 * as stored: the kernel lays its stages out by it and the host
 * (src/fused/nv_decode.c) sizes them by it, so that they cannot differ.
 * 16-byte aligned for the copies, and off a multiple of 128 bytes so that
 * the eight keys a warp's fragment loads read lie in different banks
 * (fp8's 128-byte rows would all share them). Plain preprocessor
 * arithmetic.
 */
#ifndef CLATTN_NV_KV_STAGE_PITCH_H
#define CLATTN_NV_KV_STAGE_PITCH_H

#define NV_KV_ROUND16(b) (((b) + 15) / 16 * 16)
#define NV_KV_STAGE_PITCH(row_bytes)                                                        \
    (NV_KV_ROUND16(row_bytes) + (NV_KV_ROUND16(row_bytes) % 128 == 0 ? 32 : 0))

#endif
