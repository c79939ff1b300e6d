/* gpu_recovery.c: one verdict on a GPU's memory repair and recovery (row remaps, page retirement, NVML field 230). */
#include "nvidia/gpu_recovery.h"

#include <stdio.h>

#include "basic/util.h"
#include "nvml/nvml_facts.h"
#include "nvml/nvml_lib.h"

struct gpu_recovery gpu_recovery_of(const struct nvml_gpu_facts *g) {
        return (struct gpu_recovery){
                .remapped_rows_rc = g->remapped_rows_rc,
                .remapped_uncorrectable = g->remapped_uncorrectable,
                .remapped_pending = g->remapped_pending,
                .remapped_failure = g->remapped_failure,
                .retired_pending_rc = g->health.retired_pending.rc,
                .retired_pending = g->health.retired_pending.value != 0,
                .action_rc = g->recovery_action.rc,
                .action = g->recovery_action.value,
        };
}

enum check_status gpu_remap_judge(const struct gpu_recovery *r) {
        if (r->remapped_rows_rc != NVML_SUCCESS) return CHECK_SKIP;
        return r->remapped_failure ? CHECK_FAIL : r->remapped_pending ? CHECK_WARN : CHECK_PASS;
}

enum check_status gpu_retired_pages_judge(const struct gpu_recovery *r) {
        if (r->retired_pending_rc != NVML_SUCCESS) return CHECK_SKIP;
        return r->retired_pending ? CHECK_FAIL : CHECK_PASS;
}

enum check_status gpu_recovery_action_judge(const struct gpu_recovery *r) {
        if (r->action_rc != NVML_SUCCESS) return CHECK_SKIP;
        return r->action != NVML_GPU_RECOVERY_ACTION_NONE ? CHECK_FAIL : CHECK_PASS;
}

const char *gpu_recovery_action_text(uint64_t v) {
        switch (v) {
        case NVML_GPU_RECOVERY_ACTION_NONE: return "none";
        case NVML_GPU_RECOVERY_ACTION_GPU_RESET: return "GPU reset";
        case NVML_GPU_RECOVERY_ACTION_NODE_REBOOT: return "node reboot";
        case NVML_GPU_RECOVERY_ACTION_DRAIN_P2P: return "drain peer-to-peer traffic";
        case NVML_GPU_RECOVERY_ACTION_DRAIN_AND_RESET: return "drain and reset";
        }
        return "unknown action";
}

bool gpu_recovery_verdict(const struct gpu_recovery *r, char *why, size_t size) {
        if (size) why[0] = 0;
        if (gpu_remap_judge(r) == CHECK_FAIL) {
                snprintf(why, size,
                         "row remapping failed (%u uncorrectable rows remapped): the GPU needs a reset and likely RMA",
                         r->remapped_uncorrectable);
                return true;
        }
        if (gpu_retired_pages_judge(r) == CHECK_FAIL) {
                snprintf(why, size, "a page retirement is pending: the GPU needs a reset");
                return true;
        }
        if (gpu_recovery_action_judge(r) == CHECK_FAIL) {
                snprintf(why, size, "NVML's recovery action asks for: %s (field 230 = %llu)",
                         gpu_recovery_action_text(r->action), (unsigned long long)r->action);
                return true;
        }
        return false;
}
