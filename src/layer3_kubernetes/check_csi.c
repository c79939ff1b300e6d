/* check_csi.c: layer 3, csi: the CSI node plugins the cluster expects are registered with the kubelet. */
#include "layer3_kubernetes/kube_evidence.h"

#include <inttypes.h>

#define GPU_RESOURCE "nvidia.com/gpu"

/* Judges csi.plugins (CSI node plugins are registered with the kubelet) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_csi_plugins(const struct node_facts *facts, struct finding *f) {
        const struct kube_facts *kf = facts->kube;
        if (!kf) {
                finding_skip(f, "the Kubernetes probes did not run");
                return;
        }
        const struct kubelet_facts *k = &kf->kubelet;
        const struct kube_api_facts *a = &kf->api;
        size_t n_expected = a->csinode_rc == 0 ? a->n_csi_drivers : 0;
        if (k->registry_rc < 0 && n_expected == 0) {
                finding_skip(f, "no %s folder and no CSI driver expected on this node", KUBELET_PLUGINS_REGISTRY_DIR);
                return;
        }
        struct buf regs = { 0 };
        for (size_t i = 0; i < k->n_registry; i++) buf_printf(&regs, "%s%s", regs.len ? ", " : "", k->registry[i]);
        finding_evidence(f, "%s: %s", KUBELET_PLUGINS_REGISTRY_DIR,
                         regs.data            ? regs.data
                         : k->registry_rc < 0 ? "missing"
                                              : "empty");
        buf_free(&regs);
        if (a->csinode_rc == 0) {
                struct buf drv = { 0 };
                for (size_t i = 0; i < a->n_csi_drivers; i++)
                        buf_printf(&drv, "%s%s", drv.len ? ", " : "", a->csi_drivers[i]);
                finding_evidence(f, "CSINode %s drivers: %s", a->node_name, drv.data ? drv.data : "none");
                buf_free(&drv);
        }
        unsigned missing = 0;
        for (size_t i = 0; i < n_expected; i++) {
                bool found = false;
                for (size_t j = 0; j < k->n_registry && !found; j++)
                        found = startswith(k->registry[j], a->csi_drivers[i]) != NULL;
                if (!found) {
                        missing++;
                        finding_evidence(f, "CSI driver %s has no registration socket", a->csi_drivers[i]);
                }
        }
        if (missing) {
                finding_fail(f, "%u CSI driver(s) the node should run have no socket in plugins_registry", missing);
                finding_remedy(
                        f,
                        "the CSI node plugin pod (its node-driver-registrar container) is not running on this node: "
                        "`kubectl get pods -A --field-selector spec.nodeName=%s` and its log; volumes of that driver "
                        "cannot mount here",
                        a->node_name);
        } else if (k->n_registry == 0) {
                finding_skip(f, "no CSI node plugin registered, none expected");
        } else {
                finding_pass(f, "%zu plugin(s) registered with the kubelet", k->n_registry);
        }
}

const struct check_def check_csi_plugins = {
        .id = "csi.plugins",
        .action = ACTION_RECONFIGURE,
        .layer = 3,
        .component = "csi",
        .title = "CSI node plugins are registered with the kubelet",
        .reads = "/var/lib/kubelet/plugins_registry; the CSINode object's drivers",
        .outcomes = "pass: every expected driver registered; fail: a driver in CSINode without a socket; skip: no CSI "
                    "in use",
        .remedy = "run the CSI driver's node plugin (its node-driver-registrar) on this node; `kubectl get pods -A "
                  "--field-selector spec.nodeName=<node>` and its log",
        .run = run_csi_plugins,
};
