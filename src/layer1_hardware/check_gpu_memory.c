/* check_gpu_memory.c: layer 1, gpu: retired pages (GPUs before Ampere) and the ECC mode. */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* NVIDIA's InfoROM keeps at most this many retired pages per GPU; a GPU near it is an RMA candidate. */
#define RETIRED_PAGES_LIMIT 64
#define RETIRED_PAGES_WARN  60

/* Judges gpu.retired-pages (no page retirement waits for a reset, the retirement table is not full)
 * from the facts into f; never fails: what it cannot read, it says. */
static void run_retired_pages(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, pending = 0, full = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                bool counts = h->retired_sbe.rc == NVML_SUCCESS && h->retired_dbe.rc == NVML_SUCCESS;
                bool pend = h->retired_pending.rc == NVML_SUCCESS;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (!counts && !pend) {
                        gpu_fact_error_evidence(f, label, "pending page retirement", h->retired_pending.rc);
                        continue;
                }
                known++;
                uint64_t total = counts ? h->retired_sbe.value + h->retired_dbe.value : 0;
                if (counts && total)
                        finding_evidence(f,
                                         "%s: %llu page(s) retired (%llu for double-bit, %llu for repeated single-bit "
                                         "ECC errors)",
                                         label, (unsigned long long)total, (unsigned long long)h->retired_dbe.value,
                                         (unsigned long long)h->retired_sbe.value);
                struct gpu_recovery rec = gpu_recovery_of(g);
                if (pend && gpu_retired_pages_judge(&rec) == CHECK_FAIL) {
                        pending++;
                        finding_evidence(f, "%s: a page retirement is pending: it takes effect at the next GPU reset",
                                         label);
                        gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, g),
                                                "that job runs on memory with an uncorrectable error until the reset",
                                                f);
                }
                if (total >= RETIRED_PAGES_WARN) full++;
        }
        if (known == 0) {
                finding_skip(
                        f,
                        "no GPU reports retired pages (Ampere and later remap rows instead: see driver.memory-errors)");
        } else if (pending) {
                finding_fail(f, "page retirement pending on %u GPU(s): the GPU needs a reset", pending);
                finding_remedy(
                        f, "drain the GPU's pods, then reset it (`nvidia-smi -r -i <index>`) or reboot the node; the "
                           "retirement takes effect then");
        } else if (full) {
                finding_warn(f, "%u GPU(s) have retired %u or more pages of the %u the GPU can hold", full,
                             RETIRED_PAGES_WARN, RETIRED_PAGES_LIMIT);
                finding_remedy(f,
                               "the GPU's memory keeps failing: run the field diagnostic and contact the vendor (RMA)");
        } else {
                finding_pass(f, "no page retirement pending on %u GPU(s)", known);
        }
}

/* Judges gpu.ecc-mode (ECC is on wherever the GPU supports it, no mode change pending) from the facts
 * into f; never fails: what it cannot read, it says. */
static void run_ecc_mode(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned known = 0, off = 0, changing = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                _cleanup_free_ char *label = nvml_gpu_label(g);
                if (g->ecc_mode_rc != NVML_SUCCESS) {
                        gpu_fact_error_evidence(f, label, "ECC mode", g->ecc_mode_rc);
                        continue;
                }
                known++;
                if (!g->ecc_mode_current) {
                        off++;
                        finding_evidence(f, "%s: ECC disabled%s", label,
                                         g->ecc_mode_pending ? " (enabled at the next reset)" : "");
                } else if (!g->ecc_mode_pending) {
                        changing++;
                        finding_evidence(f, "%s: ECC enabled, disabled at the next reset", label);
                }
        }
        if (known == 0) {
                finding_skip(f, "no GPU here supports ECC");
        } else if (off || changing) {
                finding_warn(f, "ECC is off (or switched off at the next reset) on %u of %u GPU(s) that support it",
                             off + changing, known);
                finding_remedy(f, "without ECC memory errors go undetected and corrupt results: `nvidia-smi -e 1 -i "
                                  "<index>`, then "
                                  "reset the GPU or reboot");
        } else {
                finding_pass(f, "ECC enabled on all %u GPU(s) that support it", known);
        }
}

const struct check_def check_gpu_retired_pages = {
        .id = "gpu.retired-pages",
        .action = ACTION_RESET_GPU,
        .layer = 1,
        .component = "gpu",
        .title = "no page retirement waits for a reset (GPUs before Ampere)",
        .reads = "nvmlDeviceGetRetiredPages (single-bit, double-bit), nvmlDeviceGetRetiredPagesPendingStatus",
        .outcomes = "pass: none pending; warn: 60 or more pages retired (the InfoROM holds 64: RMA candidate); fail: a "
                    "retirement "
                    "pending (reset needed); skip: Ampere and later, which remap rows instead (driver.memory-errors). "
                    "A pod named as "
                    "holding the GPU runs on the bad page until the reset",
        .remedy = "drain, then reset the GPU (`nvidia-smi -r`) or reboot",
        .depends = { "driver.nvml-init" },
        .run = run_retired_pages,
};

const struct check_def check_gpu_ecc_mode = {
        .id = "gpu.ecc-mode",
        .action = ACTION_RECONFIGURE,
        .layer = 1,
        .component = "gpu",
        .title = "ECC is on wherever the GPU supports it",
        .reads = "nvmlDeviceGetEccMode (current and pending)",
        .outcomes = "pass: enabled; warn: disabled, or disabled at the next reset; skip: no GPU supports ECC (GeForce, "
                    "some "
                    "workstation cards)",
        .remedy = "`nvidia-smi -e 1`, then reset the GPU or reboot",
        .depends = { "driver.nvml-init" },
        .run = run_ecc_mode,
};
