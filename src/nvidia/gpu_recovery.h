/* gpu_recovery.h: one verdict on a GPU's memory repair and recovery (row remaps, page retirement, NVML field 230),
 * for the layer-1 checks and the device plugin's health alike. */
#pragma once

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "engine/check.h"

/* One GPU's memory repair and recovery as NVML reports them: what the layer-1 checks (driver.memory-errors,
 * driver.recovery-action, gpu.retired-pages) and the device plugin's health loop judge with one verdict. An rc
 * other than NVML_SUCCESS means not read (not supported, an error, not queried). */
struct gpu_recovery {
        int remapped_rows_rc; /* nvmlDeviceGetRemappedRows */
        unsigned remapped_uncorrectable;
        bool remapped_pending, remapped_failure;
        int retired_pending_rc; /* nvmlDeviceGetRetiredPagesPendingStatus (before Ampere) */
        bool retired_pending;
        int action_rc;   /* field 230 (NVML_FI_DEV_GET_GPU_RECOVERY_ACTION), its per-value nvmlReturn */
        uint64_t action; /* NVML_GPU_RECOVERY_ACTION_* */
};

struct nvml_gpu_facts;
/* Returns the recovery facts of a probed GPU. Never fails. */
struct gpu_recovery gpu_recovery_of(const struct nvml_gpu_facts *g);

/* Judges row remapping: CHECK_FAIL remapping failed (the memory cannot be repaired: RMA), CHECK_WARN a remap is
 * pending (it takes effect at the next GPU reset; the GPU still works), CHECK_PASS neither, CHECK_SKIP not read. */
enum check_status gpu_remap_judge(const struct gpu_recovery *r);

/* Judges page retirement (GPUs before Ampere): CHECK_FAIL a retirement is pending (the GPU needs a reset),
 * CHECK_PASS none, CHECK_SKIP not read. */
enum check_status gpu_retired_pages_judge(const struct gpu_recovery *r);

/* Judges field 230: CHECK_FAIL the driver asks for any action (a reset, a reboot, a drain: NVIDIA adds values, so
 * an unknown one too), CHECK_PASS none, CHECK_SKIP not read. */
enum check_status gpu_recovery_action_judge(const struct gpu_recovery *r);

/* Returns the words for a field 230 value ("GPU reset", "node reboot", ...; "unknown action"). Never fails. */
const char *gpu_recovery_action_text(uint64_t v);

/* The verdict: returns true when the GPU must get no work until it is recovered (any of the three judges above
 * says CHECK_FAIL), with the first reason (remap failure, page retirement, recovery action) as one sentence in why
 * (size bytes; "" when false). Never fails. */
bool gpu_recovery_verdict(const struct gpu_recovery *r, char *why, size_t size);
