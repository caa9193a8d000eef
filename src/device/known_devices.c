/* SPDX-License-Identifier: MIT */
/* Published figures of devices whose reported cache size is not the
 * last-level cache, and the lookup of a device among them. */
#include "device/cl_info.h"
#include "device/known_devices.h"

#define MiB (1024.0 * 1024.0)

/* Published figures of devices whose reported cache size is not the
 * last-level cache. Matched in order (case-insensitive substring of the
 * device name or AMD board name), so specific names come first. FLOP/s: fp16
 * is the dense matrix-unit rate with fp32 accumulation, fp32 the FMA rate. */
static const struct known_device known_devices[] = {
    { "H200", 60 * MiB, 4.8e12, 989e12, 67e12 },
    { "H100 PCIe", 50 * MiB, 2.0e12, 756e12, 51e12 },
    { "H100 NVL", 50 * MiB, 3.9e12, 835e12, 60e12 },
    { "H100", 50 * MiB, 3.35e12, 989e12, 67e12 },
    { "A100-SXM4-80GB", 40 * MiB, 2.039e12, 312e12, 19.5e12 },
    { "A100 80GB PCIe", 40 * MiB, 1.935e12, 312e12, 19.5e12 },
    { "A100", 40 * MiB, 1.555e12, 312e12, 19.5e12 },
    { "RTX 4090", 72 * MiB, 1.008e12, 165.2e12, 82.6e12 },
    { "MI300X", 256 * MiB, 5.3e12, 1307.4e12, 81.7e12 },
};

const struct known_device *known_device_lookup(cl_device_id dev, const char *name)
{
    char board[128] = "";
    size_t size = 0;
    if (clGetDeviceInfo(dev, AMD_BOARD_NAME, 0, NULL, &size) == CL_SUCCESS
        && size <= sizeof board
        && clGetDeviceInfo(dev, AMD_BOARD_NAME, size, board, NULL) == CL_SUCCESS)
        board[sizeof board - 1] = '\0';
    else
        board[0] = '\0';
    for (size_t i = 0; i < sizeof known_devices / sizeof known_devices[0]; i++)
        if (contains_nocase(name, known_devices[i].match)
            || (board[0] && contains_nocase(board, known_devices[i].match)))
            return &known_devices[i];
    return NULL;
}

