/* check_mig_manager.c: layer 3, mig-manager: MIG mode and configuration against the labels and resources. */
#include "layer3_kubernetes/kube_evidence.h"
#include "layer3_kubernetes/gfd_labels.h"
#include "nvml/nvml_facts.h"

#include <inttypes.h>

/* --- mig-manager.state --- */

/* Writes a MIG device's GFD resource name into buf: the exact profile, else one approximated from its
 * attributes (the profile lookup needs privileges). Returns false when neither is known. */
static bool mig_device_name(const struct nvml_gpu_facts *g, const struct nvml_mig_facts *m, char *buf, size_t size) {
        if (gfd_mig_name(m, buf, size) == 0) return true;
        return m->attributes_rc == NVML_SUCCESS && g->memory_rc == NVML_SUCCESS &&
               nvml_mig_name_from_attributes(&m->attributes, g->memory_total, buf, size) == 0;
}

/* Adds evidence "GPU i: n MIG device(s): 3g.40gb, 1g.10gb x2" for a MIG-enabled GPU. Returns the number
 * of its MIG devices whose name is not `only` (every device counts when only is NULL or nothing is known),
 * or -1 when the MIG devices could not be listed. */
static int mig_devices_evidence(const struct nvml_gpu_facts *g, const char *only, struct finding *f) {
        if (g->mig_max_rc != NVML_SUCCESS || g->mig_devices_rc != NVML_SUCCESS) {
                int rc = g->mig_max_rc != NVML_SUCCESS ? g->mig_max_rc : g->mig_devices_rc;
                finding_evidence(f, "GPU %u: MIG devices could not be listed: %s", g->index, nvml_return_name(rc));
                return -1;
        }
        struct buf b = { 0 };
        int other = 0;
        bool done[NVML_MAX_MIG_DEVICES] = { false };
        for (unsigned i = 0; i < g->n_mig; i++) {
                if (done[i]) continue;
                char name[40];
                if (!mig_device_name(g, &g->mig[i], name, sizeof name)) snprintf(name, sizeof name, "unknown profile");
                unsigned n = 0;
                for (unsigned j = i; j < g->n_mig; j++) {
                        char other_name[40];
                        if (!mig_device_name(g, &g->mig[j], other_name, sizeof other_name))
                                snprintf(other_name, sizeof other_name, "unknown profile");
                        if (streq(name, other_name)) {
                                done[j] = true;
                                n++;
                        }
                }
                if (only && !streq(name, only)) other += (int)n;
                buf_printf(&b, "%s%s", b.len ? ", " : "", name);
                if (n > 1) buf_printf(&b, " x%u", n);
        }
        finding_evidence(f, "GPU %u: %u MIG device(s)%s%s", g->index, g->n_mig, b.len ? ": " : "",
                         b.data ? b.data : "");
        buf_free(&b);
        return other;
}

/* Adds evidence on what a failed MIG reconfiguration does to the checks resting on it (they show as
 * blocked): the device plugin pod's state when it is not running, GFD's <model>-MIG-INVALID product. */
static void consequences_evidence(const struct kube_api_facts *a, struct finding *f) {
        const struct kube_pod_info *p = kube_pod_find(a, POD_DEVICE_PLUGIN);
        _cleanup_free_ char *text = NULL;
        if (p && kube_pod_judge(p, &text) != KUBE_POD_OK)
                finding_evidence(f, "resting on it: device plugin pod %s/%s: %s", p->namespace, p->name, text);
        const char *product = kube_node_label(a, "nvidia.com/gpu.product");
        size_t len = product ? strlen(product) : 0, suffix = strlen("-MIG-INVALID");
        if (len >= suffix && streq(product + len - suffix, "-MIG-INVALID"))
                finding_evidence(f,
                                 "resting on it: GFD labelled nvidia.com/gpu.product=%s (MIG devices do not fit the "
                                 "MIG strategy)",
                                 product);
}

static void run_mig_state(const struct node_facts *facts, struct finding *f) {
        const struct nvml_facts *n = facts->nvml.facts;
        if (!n || n->init_rc != NVML_SUCCESS) {
                finding_skip(f, "NVML did not initialise");
                return;
        }
        unsigned capable = 0, enabled = 0, pending = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc != NVML_SUCCESS) continue;
                capable++;
                if (g->mig_current == 1) enabled++;
                if (g->mig_pending != g->mig_current) {
                        pending++;
                        finding_evidence(f, "GPU %u: MIG mode %s now, %s after the next GPU reset", g->index,
                                         g->mig_current ? "enabled" : "disabled",
                                         g->mig_pending ? "enabled" : "disabled");
                }
        }
        if (capable == 0) {
                finding_skip(f, "no MIG-capable GPU");
                return;
        }
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, false);
        if (!a) return;
        const char *config = kube_node_label(a, "nvidia.com/mig.config");
        const char *state = kube_node_label(a, "nvidia.com/mig.config.state");
        finding_evidence(f,
                         "NVML: MIG enabled on %u of %u capable GPU(s); nvidia.com/mig.config=%s, "
                         "nvidia.com/mig.config.state=%s",
                         enabled, capable, config ? config : "(none)", state ? state : "(none)");
        size_t np = 0;
        enum kube_pod_health h = kube_pods_evidence(a, POD_MIG_MANAGER, f, &np, NULL);
        if (!config) {
                finding_skip(f, "the MIG manager is not in use (no nvidia.com/mig.config label)%s",
                             enabled ? "; MIG is configured outside Kubernetes" : "");
                return;
        }
        const char *remedy_logs =
                "`kubectl -n gpu-operator logs -l app=nvidia-mig-manager` on this node; MIG mode changes need "
                "idle GPUs (no GPU pods, no nvidia-persistenced/DCGM holding them) and sometimes a reboot";
        /* MIG devices against the config: "all-<profile>" (mig-parted's names, '+' as '.', e.g. all-1g.10gb.me)
         * wants that profile only on every GPU; all-enabled wants MIG mode only; other layouts (all-balanced,
         * custom) at least one MIG device per MIG-enabled GPU. */
        const char *want =
                startswith(config, "all-") && strchr(config + 4, 'g') && strstr(config + 4, "gb") ? config + 4 : NULL;
        unsigned wrong = 0, empty = 0, total_mig = 0;
        for (unsigned i = 0; i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->mig_rc != NVML_SUCCESS || g->mig_current != 1) continue;
                int other = mig_devices_evidence(g, want, f);
                if (other < 0) continue;
                total_mig += g->n_mig;
                if (other > 0) wrong++;
                if (g->n_mig == 0) empty++;
        }
        bool devices_checked = !streq(config, "all-disabled") && !streq(config, "all-enabled") && enabled > 0 &&
                               (!state || streq(state, "success"));
        if (streq_ptr(state, "failed")) {
                consequences_evidence(a, f);
                finding_fail(f, "the MIG manager failed to apply %s", config);
                finding_remedy(f, "%s", remedy_logs);
        } else if (state && (streq(state, "pending") || streq(state, "rebooting"))) {
                finding_warn(f, "MIG configuration %s is still %s", config, state);
                finding_remedy(f, "%s", remedy_logs);
        } else if (streq(config, "all-disabled") && enabled > 0) {
                finding_fail(f, "mig.config is all-disabled but MIG is enabled on %u GPU(s)", enabled);
                finding_remedy(f, "%s", remedy_logs);
        } else if (!streq(config, "all-disabled") && enabled == 0) {
                finding_fail(f, "mig.config is %s but no GPU has MIG enabled", config);
                finding_remedy(f, "%s", remedy_logs);
        } else if (devices_checked && want && wrong) {
                finding_fail(f, "mig.config is %s but %u GPU(s) have MIG devices of another profile", config, wrong);
                finding_remedy(
                        f,
                        "the MIG manager reported success for a layout NVML does not show: relabel the node with "
                        "the config again (`kubectl label node %s nvidia.com/mig.config=%s --overwrite`) and read "
                        "%s",
                        a->node_name, config, remedy_logs);
        } else if (devices_checked && empty) {
                finding_fail(f, "mig.config is %s but %u MIG-enabled GPU(s) have no MIG devices: nothing to advertise",
                             config, empty);
                finding_remedy(f,
                               "the GPU instances were destroyed after the MIG manager applied %s (a reset, or "
                               "`nvidia-smi mig -dci/-dgi`): relabel the node to apply it again and read %s",
                               config, remedy_logs);
        } else if (pending) {
                finding_warn(f, "MIG mode changes wait for a GPU reset on %u GPU(s)", pending);
                finding_remedy(f, "drain the GPUs and reset them (`nvidia-smi -r`), or reboot the node");
        } else if (h == KUBE_POD_FAIL) {
                finding_warn(f, "MIG state matches %s, but the MIG manager pod is not running", config);
                finding_remedy(f, "%s", remedy_logs);
        } else {
                if (enabled)
                        finding_pass(f,
                                     "MIG configuration %s applied (%s): MIG enabled on %u of %u capable GPU(s), %u "
                                     "MIG device(s)",
                                     config, state ? state : "no state label", enabled, capable, total_mig);
                else
                        finding_pass(f, "MIG configuration %s applied (%s): MIG enabled on %u of %u capable GPU(s)",
                                     config, state ? state : "no state label", enabled, capable);
        }
}

const struct check_def check_mig_manager_state = {
        .id = "mig-manager.state",
        .layer = 3,
        .component = "mig-manager",
        .title = "MIG mode matches the MIG manager's configuration",
        .reads = "NVML's current and pending MIG mode and MIG devices (profiles) per GPU; labels nvidia.com/mig.config "
                 "and "
                 "nvidia.com/mig.config.state; the mig-manager pod",
        .outcomes = "pass: applied; fail: state failed, or mode or MIG devices contradict the config (all-<profile> "
                    "with other "
                    "profiles, MIG-enabled GPUs without MIG devices); warn: pending, or a reset is needed; "
                    "skip: no MIG-capable GPU, or the MIG manager is not used",
        .remedy = "read the nvidia-mig-manager pod's log; MIG changes need idle GPUs (no GPU pods, no DCGM or "
                  "persistenced holding them) and sometimes a reboot",
        .depends = { "kubelet.api-access", "driver.nvml-init" },
        .run = run_mig_state,
};
