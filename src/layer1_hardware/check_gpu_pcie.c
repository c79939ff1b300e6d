/* check_gpu_pcie.c: layer 1, gpu: the PCIe link's width (and, under load, generation) against its maximum. */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Returns true when the GPU is busy enough that its PCIe link should run at full generation (the
 * link drops to Gen1 at idle by design): utilization above 0 and no idle clock reason. */
static bool busy(const struct nvml_gpu_facts *g) {
        bool idle = g->clocks_event_reasons.rc != NVML_SUCCESS || (g->clocks_event_reasons.value & GPU_REASON_IDLE);
        return g->utilization_rc == NVML_SUCCESS && g->utilization_gpu > 0 && !idle;
}

/* Judges gpu.pcie-link (each GPU's PCIe link runs at its full width) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_pcie_link(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, narrow = 0, slow = 0, degraded = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (h->pcie_width.rc != NVML_SUCCESS || h->pcie_width_max.rc != NVML_SUCCESS) {
                        if (!gpu_fact_error_evidence(f, label, "PCIe link width", h->pcie_width.rc))
                                gpu_fact_error_evidence(f, label, "PCIe maximum link width", h->pcie_width_max.rc);
                        continue;
                }
                known++;
                unsigned w = (unsigned)h->pcie_width.value, wm = (unsigned)h->pcie_width_max.value;
                bool gen = h->pcie_gen.rc == NVML_SUCCESS && h->pcie_gen_max.rc == NVML_SUCCESS;
                unsigned ge = (unsigned)h->pcie_gen.value, gm = (unsigned)h->pcie_gen_max.value;
                /* the slot and the GPU together (gen_max) bound the link, never more than the GPU alone */
                if (h->pcie_gen_gpu_max.rc == NVML_SUCCESS && h->pcie_gen_gpu_max.value < gm)
                        gm = (unsigned)h->pcie_gen_gpu_max.value;
                bool degraded_width = w < wm, degraded_gen = gen && ge < gm && busy(g);
                if (degraded_width || degraded_gen || (gen && ge < gm)) {
                        char gtext[96] = "";
                        if (gen)
                                snprintf(gtext, sizeof gtext, ", Gen%u of Gen%u%s", ge, gm,
                                         ge < gm ? (busy(g) ? " while busy" : " (idle: the link saves power)") : "");
                        finding_evidence(f, "%s: PCIe x%u of x%u%s", label, w, wm, gtext);
                }
                if (degraded_width) narrow++;
                if (degraded_width || degraded_gen) degraded++;
                if (degraded_gen) slow++;
        }
        if (known == 0) {
                finding_skip(f, "NVML reports no PCIe link width here");
        } else if (narrow || slow) {
                finding_warn(f,
                             "PCIe link degraded on %u GPU(s): %u narrower than their maximum, %u below their "
                             "generation while busy",
                             degraded, narrow, slow);
                finding_remedy(f, "a link that trains narrower or slower than the slot allows: reseat the GPU or its "
                                  "riser, check the "
                                  "slot's BIOS settings (link speed, bifurcation) and the kernel log for AER errors; "
                                  "`nvidia-smi -q -d "
                                  "PCIE` shows current and maximum");
        } else {
                finding_pass(f, "%u GPU(s) run their PCIe link at full width", known);
        }
}

const struct check_def check_gpu_pcie_link = {
        .id = "gpu.pcie-link",
        .action = ACTION_CONTACT_SUPPORT,
        .layer = 1,
        .component = "gpu",
        .title = "each GPU's PCIe link runs at its full width",
        .reads = "nvmlDeviceGetCurrPcieLinkWidth/MaxPcieLinkWidth, "
                 "nvmlDeviceGetCurrPcieLinkGeneration/MaxPcieLinkGeneration/"
                 "GpuMaxPcieLinkGeneration, utilization and the idle clock reason",
        .outcomes = "pass: full width; warn: fewer lanes than the maximum, or a lower generation than the slot and the "
                    "GPU allow "
                    "while the GPU is busy (at idle the link drops its generation by design: reported, not judged)",
        .remedy = "reseat the GPU or riser; BIOS link speed and bifurcation; AER errors in the kernel log",
        .depends = { "driver.nvml-init" },
        .run = run_pcie_link,
};
