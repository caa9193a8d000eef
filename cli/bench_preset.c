/*
 * clattn bench's presets: the shapes of an experiment, as a GPU runs them
 * and scaled down for a device that is not one (where the full shapes are
 * shown as model-only rows instead).
 */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "bench.h"

#define NONE CLI_MASK(CLATTN_CAUSAL_NONE)
#define TOP_LEFT CLI_MASK(CLATTN_CAUSAL_TOP_LEFT)
#define BOTTOM_RIGHT CLI_MASK(CLATTN_CAUSAL_BOTTOM_RIGHT)
#define BOTH_PATHS CLI_PATHS_BOTH
#define FUSED CLI_PATH_BIT(CLATTN_PATH_FUSED)
#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The seed's experiment (docs/MODEL.md): B=8, H=32, d=128, fp16, Nq = Nk,
 * with and without the causal mask, both paths. */
static const bench_preset_case seed_cases[] = {
    { 8, 1024, 1024, NONE | TOP_LEFT },
    { 8, 4096, 4096, NONE | TOP_LEFT },
    { 8, 16384, 16384, NONE | TOP_LEFT },
};

/* On a CPU device the seed shape would take hours (a call at N = 16384 alone
 * is 35 TFLOP), so one batch element of two heads at the lengths below
 * (about two minutes on PoCL with two cores). */
static const bench_preset_case seed_cpu_cases[] = {
    { 1, 1024, 1024, NONE | TOP_LEFT },
    { 1, 4096, 4096, NONE | TOP_LEFT },
};

/* Serving: decoding steps of one query over KV caches of 4K to
 * 128K keys, a large batch of short ones, and a chunked prefill of 512
 * queries over 16K keys under the bottom-right mask. H=32 over Hkv=8, d=128,
 * fp16; the fused path, whose bytes are K and V read once. */
static const bench_preset_case decode_cases[] = {
    { 8, 1, 4096, NONE },   { 8, 1, 16384, NONE }, { 8, 1, 65536, NONE },
    { 1, 1, 131072, NONE }, { 64, 1, 4096, NONE }, { 1, 512, 16384, BOTTOM_RIGHT },
};

/* The same kinds of rows at a CPU's scale: one sequence of H=8 over Hkv=2
 * (the same GQA group of 4), caches of 4K to 32K keys, and a chunk of 128
 * queries over 4K keys (seconds each on PoCL with two cores, reference
 * included). */
static const bench_preset_case decode_cpu_cases[] = {
    { 1, 1, 4096, NONE },
    { 1, 1, 16384, NONE },
    { 1, 1, 32768, NONE },
    { 1, 128, 4096, BOTTOM_RIGHT },
};

static const bench_preset presets[][2] = {
    {
        { "seed", 32, 32, 128, seed_cases, COUNT(seed_cases), BOTH_PATHS, NONE | TOP_LEFT },
        { "seed", 2, 2, 128, seed_cpu_cases, COUNT(seed_cpu_cases), BOTH_PATHS, NONE | TOP_LEFT },
    },
    {
        { "decode", 32, 8, 128, decode_cases, COUNT(decode_cases), FUSED, NONE },
        { "decode", 8, 2, 128, decode_cpu_cases, COUNT(decode_cpu_cases), FUSED, NONE },
    },
};

const bench_preset *bench_preset_find(const char *name, int scaled)
{
    for (size_t i = 0; name && i < COUNT(presets); i++)
        if (!strcmp(presets[i][0].name, name))
            return &presets[i][scaled ? 1 : 0];
    return NULL;
}

const char *bench_preset_names(void)
{
    static char names[64];
    if (!names[0])
        for (size_t i = 0, used = 0; i < COUNT(presets) && used < sizeof names; i++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%s%s", i ? ", " : "",
                                     presets[i][0].name);
    return names;
}
