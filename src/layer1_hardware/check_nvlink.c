/* check_nvlink.c: layer 1, nvlink: every NVLink up that the board should have up, and the links' error counters. */
#include "layer1_hardware/gpu_health.h"
#include "layer1_hardware/nvml_evidence.h"

/* Returns true when the node has an NVSwitch fabric: NVSwitch PCI functions, or a GPU whose fabric
 * state NVML supports. */
static bool nvswitch_system(const struct node_facts *facts, const struct nvml_facts *n) {
        if (facts->pci.n_nvswitches > 0) return true;
        for (unsigned i = 0; i < n->n_gpus; i++)
                if (n->gpus[i].fabric_rc == NVML_SUCCESS &&
                    n->gpus[i].fabric_state != NVML_GPU_FABRIC_STATE_NOT_SUPPORTED)
                        return true;
        return false;
}

/* Appends the indexes of g's inactive links to buf ("3, 7"). Returns buf. */
static char *down_links(const struct nvml_health_facts *h, char *buf, size_t size) {
        size_t n = 0;
        buf[0] = 0;
        for (unsigned l = 0; l < h->n_links && n + 8 < size; l++)
                if (!h->links[l].active) n += (size_t)snprintf(buf + n, size - n, "%s%u", n ? ", " : "", l);
        return buf;
}

/* Judges nvlink.links (every GPU has the NVLinks up that its NVSwitch board should have) from the
 * facts into f; never fails: what it cannot read, it says. */
static void run_links(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned with_links = 0, bad = 0, unknown = 0, total_up = 0;
        bool fabric = nvswitch_system(facts, n);
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                if (h->nvlink_rc == NVML_FACT_NOT_QUERIED) continue;
                _cleanup_free_ char *label = nvml_gpu_label(g);
                bool walk_failed = h->nvlink_rc != NVML_SUCCESS && h->nvlink_rc != NVML_ERROR_INVALID_ARGUMENT &&
                                   h->nvlink_rc != NVML_ERROR_NOT_SUPPORTED;
                if (walk_failed) {
                        unknown++;
                        finding_evidence(f, "%s: NVLink %u did not answer: %s (%s)", label, h->n_links,
                                         nvml_return_message(h->nvlink_rc), nvml_return_name(h->nvlink_rc));
                }
                unsigned up = 0;
                for (unsigned l = 0; l < h->n_links; l++) up += h->links[l].active;
                total_up += up;
                if (h->n_links > 0) with_links++;
                unsigned expected = nvlink_expected_links(g->name_rc == NVML_SUCCESS ? g->name : NULL);
                if (!fabric) continue;
                if (h->n_links == 0) {
                        /* no link answered: NVML cannot tell here (a VM without NVLink passthrough, a lost GPU) */
                        if (!walk_failed) {
                                unknown++;
                                finding_evidence(f, "%s: NVML reports no NVLink state (%s)", label,
                                                 nvml_return_name(h->nvlink_rc));
                        }
                        continue;
                }
                if (expected == 0) expected = h->n_links; /* a product gpunode does not know: every link it reports */
                if (up >= expected) continue;
                if (walk_failed && h->n_links < expected) continue; /* cannot tell */
                bad++;
                char down[160];
                down_links(h, down, sizeof down);
                finding_evidence(f, "%s: %u of %u NVLinks active%s%s%s", label, up, expected, *down ? " (down: " : "",
                                 down, *down ? ")" : "");
                gpu_holders_evidence_as(facts, label, gpu_pods_of(facts, g),
                                        "its NCCL traffic runs on fewer links or falls back to PCIe", f);
        }
        if (!fabric) {
                if (with_links)
                        finding_skip(f,
                                     "no NVSwitch fabric: %u GPU(s) have NVLink bridges (%u links active), not judged",
                                     with_links, total_up);
                else
                        finding_skip(f, "no NVSwitch fabric and no NVLink on this node");
        } else if (bad) {
                finding_fail(f, "NVLinks down on %u GPU(s) of an NVSwitch system", bad);
                finding_remedy(
                        f,
                        "`nvidia-smi nvlink -s` shows each link; look for SXid errors in the kernel log and the fabric "
                        "manager's log; drain the node, then reset the GPUs and NVSwitches (reboot). A link that stays "
                        "down after a reboot is a board or cable fault: contact the vendor");
        } else if (with_links == 0) {
                finding_skip(f, "cannot tell the NVLink state of %u GPU(s)", unknown);
        } else if (unknown) {
                /* On an NVSwitch system every GPU should answer: one that does not may be the one whose links are down.
                 */
                finding_warn(f,
                             "cannot tell the NVLink state of %u GPU(s) of an NVSwitch system; the %u that answer have "
                             "their "
                             "links up (%u active)",
                             unknown, with_links, total_up);
                finding_remedy(
                        f, "`nvidia-smi nvlink -s -i <index>` shows the links NVML would not report; a GPU that cannot "
                           "answer may need a reset");
        } else {
                finding_pass(f, "every GPU has its NVLinks up (%u active links on %u GPU(s))", total_up, with_links);
        }
}

/* Judges nvlink.errors (no NVLink error counter has counted) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_errors(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = nvml_initialised(facts);
        if (!n) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        static const char *const names[NVML_LINK_COUNTERS] = { "replay", "recovery", "CRC flit", "CRC data" };
        unsigned links = 0, erring = 0, gpus = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                const struct nvml_health_facts *h = &g->health;
                bool gpu_errs = false;
                for (unsigned l = 0; l < h->n_links; l++) {
                        const struct nvml_link_facts *k = &h->links[l];
                        bool any_known = false;
                        char text[160] = "";
                        size_t t = 0;
                        for (unsigned c = 0; c < NVML_LINK_COUNTERS; c++) {
                                if (k->errors[c].rc != NVML_SUCCESS) {
                                        _cleanup_free_ char *label = nvml_gpu_label(g);
                                        char what[64];
                                        snprintf(what, sizeof what, "NVLink %u %s counter", l, names[c]);
                                        gpu_fact_error_evidence(f, label, what, k->errors[c].rc);
                                        continue;
                                }
                                any_known = true;
                                if (k->errors[c].value && t + 40 < sizeof text)
                                        t += (size_t)snprintf(text + t, sizeof text - t, "%s%llu %s", t ? ", " : "",
                                                              (unsigned long long)k->errors[c].value, names[c]);
                        }
                        links += any_known;
                        if (!t) continue;
                        erring++;
                        gpu_errs = true;
                        _cleanup_free_ char *label = nvml_gpu_label(g);
                        finding_evidence(f, "%s: NVLink %u: %s error(s)", label, l, text);
                }
                gpus += gpu_errs;
        }
        if (links == 0) {
                finding_skip(f, "no active NVLink reports error counters");
        } else if (erring) {
                finding_warn(f, "%u NVLink(s) on %u GPU(s) have counted errors", erring, gpus);
                finding_remedy(f, "counters since the driver loaded: watch whether they grow (the exporter's "
                                  "DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL, `nvidia-smi nvlink -e`); growing CRC or "
                                  "recovery counts "
                                  "mean a marginal link: reseat or replace the board or cable at the next maintenance");
        } else {
                finding_pass(f, "no errors on %u active NVLink(s)", links);
        }
}

const struct check_def check_nvlink_links = {
        .id = "nvlink.links",
        .action = ACTION_REBOOT,
        .layer = 1,
        .component = "nvlink",
        .title = "every GPU has the NVLinks up that its NVSwitch board should have",
        .reads = "nvmlDeviceGetNvLinkState for each link, the product name (HGX H100/H200 and Blackwell: 18 links per "
                 "GPU, A100 "
                 "SXM: 12), NVSwitch PCI functions and the fabric state",
        .outcomes = "pass: all up; fail: a link down on an NVSwitch system (NCCL runs on fewer links or falls back); "
                    "warn: a GPU "
                    "of an NVSwitch system whose links NVML does not report; skip: no "
                    "NVSwitch (PCIe cards with bridges are not judged). A pod named as holding the GPU runs on the "
                    "degraded fabric",
        .remedy = "`nvidia-smi nvlink -s`; SXid errors in the kernel log; reboot; a link that stays down is a hardware "
                  "fault",
        .depends = { "driver.nvml-init", "fabric-manager.fabric-state" },
        .run = run_links,
};

const struct check_def check_nvlink_errors = {
        .id = "nvlink.errors",
        .layer = 1,
        .component = "nvlink",
        .title = "no NVLink error counter has counted",
        .reads = "nvmlDeviceGetNvLinkErrorCounter (replay, recovery, CRC flit, CRC data) on each active link",
        .outcomes = "pass: all zero; warn: a counter is non-zero (counts since the driver loaded: watch whether it "
                    "grows); skip: "
                    "no active NVLink",
        .remedy = "watch the counters' growth (exporter or `nvidia-smi nvlink -e`); reseat or replace a marginal link",
        .depends = { "driver.nvml-init" },
        .run = run_errors,
};
