/* check_gpu_drain.c: layer 1, gpu: the drain state NVML reports (a GPU being taken out of service). */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Judges gpu.drain-state (no GPU is in NVML's drain state) from the facts into f; never fails: what it
 * cannot read, it says. */
static void run_drain_state(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, draining = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_fact_u64 *d = &g->health.drain_state;
                if (d->rc != NVML_SUCCESS) {
                        _cleanup_free_ char *label = nvml_gpu_label(g);
                        gpu_fact_error_evidence(f, label, "drain state", d->rc);
                        continue;
                }
                known++;
                if (!d->value) continue;
                draining++;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                finding_evidence(f, "%s: in the drain state: the driver gives it no new work", label);
                gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, g),
                                        "that job was placed on a GPU being removed", f);
        }
        if (known == 0) {
                finding_skip(f, "NVML does not report the drain state here");
        } else if (draining) {
                finding_warn(f, "%u GPU(s) in the drain state (being taken out of service)", draining);
                finding_remedy(f, "someone ran `nvidia-smi drain -p <pci> -m 1` (for a reset or removal): finish it "
                                  "(`nvidia-smi -r`, "
                                  "or remove the GPU), or return the GPU with `nvidia-smi drain -p <pci> -m 0`");
        } else {
                finding_pass(f, "no GPU in the drain state (%u GPU(s))", known);
        }
}

const struct check_def check_gpu_drain_state = {
        .id = "gpu.drain-state",
        .layer = 1,
        .component = "gpu",
        .title = "no GPU is in NVML's drain state",
        .reads = "nvmlDeviceQueryDrainState per GPU (by its PCI address)",
        .outcomes = "pass: none draining; warn: a GPU draining (it takes no new work until reset, removed or "
                    "undrained). The "
                    "driver's own reset/reboot request is driver.recovery-action",
        .remedy = "finish the drain (reset or remove the GPU) or undrain it: `nvidia-smi drain -p <pci> -m 0`",
        .depends = { "driver.nvml-init" },
        .run = run_drain_state,
};
