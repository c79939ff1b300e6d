/* check_fabric_manager.c: layer 1, fabric-manager: the NVSwitch fabric state NVML reports for each GPU. */
#include "engine/check.h"
#include "layer1_hardware/nvml_evidence.h"

/* Returns the words for an NVML fabric state (0 not supported .. 3 completed). */
static const char *fabric_state_text(unsigned s) {
        switch (s) {
        case 0: return "not supported";
        case 1: return "not started";
        case 2: return "in progress";
        case 3: return "completed";
        }
        return "unknown";
}

/* Judges fabric-manager.fabric-state (on NVSwitch systems every GPU is registered with the NVLink
 * fabric) from the facts into f; never fails: what it cannot read, it says. */
static void run_fabric_state(const struct node_facts *facts, struct finding *f) {
        if (facts->pci.n_nvswitches == 0) {
                finding_skip(f, "no NVSwitch on the PCI bus: fabric manager is not needed");
                return;
        }
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        finding_evidence(f, "%zu NVSwitch function(s); nv-fabricmanager %s", facts->pci.n_nvswitches,
                         facts->processes.fabricmanager_running ? "running" : "not running");
        unsigned done = 0, waiting = 0, failed = 0, unknown = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (g->fabric_rc == NVML_ERROR_GPU_IS_LOST || g->handle_rc == NVML_ERROR_GPU_IS_LOST) {
                        finding_evidence(f, "%s: lost, fabric state not asked (see driver.gpu-fallen-off-bus)", label);
                        continue;
                }
                if (g->fabric_rc != NVML_SUCCESS) {
                        unknown++;
                        finding_evidence(f, "%s: fabric state unknown: %s", label, nvml_return_message(g->fabric_rc));
                        continue;
                }
                if (g->fabric_state == 3 && g->fabric_status == NVML_SUCCESS) {
                        done++;
                        continue;
                }
                if (g->fabric_state == 3) {
                        failed++;
                        finding_evidence(f, "%s: fabric registration failed: %s", label, nvml_return_message(g->fabric_status));
                } else {
                        waiting++;
                        finding_evidence(f, "%s: fabric state %s", label, fabric_state_text(g->fabric_state));
                }
        }
        if (failed || waiting) {
                finding_fail(f, "%u of %u GPU(s) are not registered with the NVLink fabric: CUDA fails with error 802 "
                                "(system not yet initialized)", failed + waiting, n->n_gpus);
                finding_remedy(f, "start the fabric manager (`systemctl enable --now nvidia-fabricmanager`); its version must "
                                  "equal the driver's (%s); read /var/log/fabricmanager.log",
                               n->driver_version_rc == NVML_SUCCESS ? n->driver_version : "see driver.version");
        } else if (unknown) {
                finding_warn(f, "NVML does not report the fabric state of %u GPU(s) on an NVSwitch system", unknown);
                finding_remedy(f, "update the driver; check `nvidia-smi -q | grep -A3 Fabric`");
        } else {
                finding_pass(f, "all %u GPU(s) registered with the NVLink fabric", done);
        }
}

const struct check_def check_fabric_manager_fabric_state = {
        .id = "fabric-manager.fabric-state", .layer = 1, .component = "fabric-manager",
        .title = "on NVSwitch systems every GPU is registered with the NVLink fabric",
        .reads = "NVSwitch PCI functions (class 0x0680), nvmlDeviceGetGpuFabricInfoV per GPU, nv-fabricmanager in /proc",
        .outcomes = "pass: all completed; fail: not started/in progress/failed (CUDA error 802); skip: no NVSwitch",
        .remedy = "`systemctl enable --now nvidia-fabricmanager` with the same version as the driver; read /var/log/fabricmanager.log",
        .depends = {"driver.nvml-init"},
        .run = run_fabric_state,
};
