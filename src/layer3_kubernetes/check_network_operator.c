/* check_network_operator.c: layer 3, network-operator: the Network Operator's pods (MOFED, RDMA device plugin) on this
 * node. */
#include "layer3_kubernetes/kube_evidence.h"

#include <inttypes.h>

static void run_network_operator_pods(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, POD_NETWORK_OPERATOR, f, &n, &first);
        if (n == 0) {
                finding_skip(f, "no Network Operator pods (MOFED, RDMA shared device plugin) on this node");
        } else if (h == KUBE_POD_FAIL) {
                finding_fail(f, "Network Operator pod not running: %s", first);
                finding_remedy(
                        f, "`kubectl describe pod` and `kubectl logs --previous` on it; a MOFED driver pod that fails "
                           "usually cannot build or load mlx5 for this kernel (see the rdma checks of layer 1)");
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "Network Operator pods run but restart often");
                finding_remedy(f, "`kubectl logs --previous` on the restarting pod");
        } else {
                finding_pass(f, "%zu Network Operator pod(s) Running and Ready", n);
        }
}

const struct check_def check_network_operator_pods = {
        .id = "network-operator.pods",
        .action = ACTION_RESTART_POD,
        .layer = 3,
        .component = "network-operator",
        .title = "Network Operator pods on this node run and are Ready",
        .reads = "pods on the node: MOFED driver (mofed-*), RDMA shared device plugin",
        .outcomes = "pass: Running and Ready; fail: not running; warn: frequent restarts; skip: not installed",
        .remedy = "`kubectl describe pod` and `kubectl logs --previous` on the failing pod; a MOFED pod that fails "
                  "usually cannot build or load mlx5 for this kernel",
        .depends = { "kubelet.api-access" },
        .run = run_network_operator_pods,
};
