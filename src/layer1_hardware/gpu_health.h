/* gpu_health.h: how the gpu.* and nvlink.* checks judge NVML's health values: clock event reasons,
 * temperatures against the GPU's thresholds, the NVLinks a product should have up, and the one recovery
 * verdict (row remaps, page retirement, field 230) the driver checks and the device plugin share. Pure functions. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "engine/check.h"
#include "nvidia/gpu_recovery.h"

/* Clock event (formerly throttle) reasons that mean the hardware itself slowed the clocks: HW
 * slowdown (0x8), HW thermal slowdown (0x40), HW power brake slowdown (0x80). */
#define GPU_REASONS_HW          0xC8ULL
#define GPU_REASON_IDLE         0x1ULL
#define GPU_REASON_SW_POWER_CAP 0x4ULL
#define GPU_REASON_SW_THERMAL   0x20ULL

/* Writes the names of the reasons set in mask, comma separated ("HW slowdown, SW power cap"), into
 * buf ("none" for 0; unknown bits as "0x..."). Returns buf; never fails (truncates to size). */
char *gpu_clock_reasons_text(uint64_t mask, char *buf, size_t size);

/*
 * Judges two readings of a GPU's clock event reasons (again_known false: one reading only): a hardware
 * slowdown set in both readings is CHECK_FAIL (sustained), in one of them CHECK_WARN (it came or went
 * meanwhile; it may also show during a clock change); a software thermal slowdown CHECK_WARN; a power
 * cap, idle, application or sync-boost clocks CHECK_PASS (the GPU works as configured). Returns the status.
 */
enum check_status gpu_slowdown_judge(uint64_t first, bool again_known, uint64_t again);

/* How close (degrees C) a temperature may come to a slowdown threshold before it is a warning. */
#define GPU_TEMP_MARGIN 5

/*
 * Judges a GPU's temperature t against its thresholds (0: unknown): at or above shutdown or slowdown
 * (hardware slowdown) CHECK_FAIL; at or above gpu_max (clocks may drop below base) or within
 * GPU_TEMP_MARGIN of slowdown CHECK_WARN; else CHECK_PASS (also with no threshold known).
 */
enum check_status gpu_temperature_judge(unsigned t, unsigned shutdown, unsigned slowdown, unsigned gpu_max);

/* Judges a memory temperature t against mem_max (0: unknown; software slowdown starts there): within
 * GPU_TEMP_MARGIN or above CHECK_WARN, else CHECK_PASS. */
enum check_status gpu_memory_temperature_judge(unsigned t, unsigned mem_max);

/*
 * Returns how many NVLinks a GPU of this product (NVML's name) has up on an NVSwitch board: 18 for
 * H100/H200/H20/GH200 SXM and Blackwell (B100, B200, B300, GB200, GB300), 8 for H800, 12 for A100 SXM,
 * 8 for A800 SXM, 6 for V100 SXM2/SXM3; 0 for a product gpunode does not know or a PCIe card (its
 * links, if any, are bridges, not judged).
 */
unsigned nvlink_expected_links(const char *name);

/* Adds "<label>: <what> unknown: <NVML's error> (<name>)" to f when rc is an NVML error: nothing for
 * success, "not supported" (recorded as such, said by the check's summary) or "not queried". Returns
 * true when it added a line. */
bool gpu_fact_error_evidence(struct finding *f, const char *label, const char *what, int rc);
