/* metrics_evidence.c: the metrics endpoints and agent pods as check evidence, shared by the layer 4 checks. */
#include "layer4_observability/metrics_evidence.h"

void metrics_endpoint_evidence(const struct metrics_endpoint *ep, struct finding *f) {
        finding_evidence(f, "%s (%s)", ep->url, ep->found_by);
}

const struct kube_api_facts *metrics_pods_known(const struct node_facts *facts) {
        const struct kube_api_facts *a = facts->kube ? &facts->kube->api : NULL;
        return a && a->rc == 0 && a->pods_rc == 0 ? a : NULL;
}

void metrics_agent_pods_judge(const struct node_facts *facts, struct finding *f, enum kube_pod_role role,
                              const char *what, const char *examples, bool absent_warn) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n = 0;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, role, f, &n, &first);
        if (n == 0 && absent_warn) {
                finding_warn(f, "no %s on this node (looked for %s)", what, examples);
                finding_remedy(
                        f,
                        "without one, the node's kernel log (Xid lines) and the GPU pods' logs are lost when the node "
                        "fails: deploy the cluster's log collector as a DaemonSet that tolerates the GPU taints "
                        "(nvidia.com/gpu:NoSchedule)");
        } else if (n == 0) {
                finding_skip(f, "no %s on this node (looked for %s)", what, examples);
        } else if (h == KUBE_POD_FAIL) {
                finding_fail(f, "%s not running: %s", what, first);
                finding_remedy(f, "`kubectl describe pod` and `kubectl logs --previous` on it; DaemonSets often lack a "
                                  "toleration "
                                  "for the GPU nodes' taints or run out of memory on busy nodes");
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "%s restarts often", what);
                finding_remedy(f, "`kubectl logs --previous` on the agent's pod shows why it stopped");
        } else {
                finding_pass(f, "%zu %s pod(s) Running and Ready", n, what);
        }
}

bool metrics_endpoint_skip(const struct metrics_endpoint *ep, struct finding *f) {
        if (ep && ep->url) return false;
        finding_skip(f, "%s", ep && ep->skip_reason ? ep->skip_reason : "the Kubernetes probes did not run");
        return true;
}
