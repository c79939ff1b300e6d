/* check_gpu_operator.c: layer 3, gpu-operator: the GPU Operator's pods on this node and its validations. */
#include "layer3_kubernetes/kube_evidence.h"

#include <inttypes.h>

/* --- gpu-operator.pods, network-operator.pods --- */

static void run_operator_pods(const struct node_facts *facts, struct finding *f) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, POD_OPERATOR, f, &n, &first);
        if (n == 0) {
                if (kube_node_label(a, "nvidia.com/gpu.deploy.operator-validator") && !a->operator_namespace_given)
                        finding_evidence(f, "the node carries nvidia.com/gpu.deploy.* labels");
                finding_skip(f, "no GPU Operator pods on this node%s%s", a->operator_namespace ? " in " : "",
                             a->operator_namespace ? a->operator_namespace : "");
                return;
        }
        kube_validations_evidence(&facts->kube->kubelet, f);
        if (h == KUBE_POD_FAIL) {
                finding_fail(f, "GPU Operator pod not running: %s", first);
                if (strstr(first, "Init:"))
                        finding_remedy(f, "operator pods wait in Init for the validation file of the layer below "
                                          "(/run/nvidia/validations): fix that layer first (driver-ready: layer 1 driver; "
                                          "toolkit-ready: layer 2 container toolkit), then `kubectl -n %s logs <pod> -c <init container>`",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator");
                else
                        finding_remedy(f, "`kubectl -n %s describe pod <pod>` and `kubectl -n %s logs <pod> --previous`; "
                                          "ImagePullBackOff: the registry or the image tag; CrashLoopBackOff: the container's log",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator",
                                       a->operator_namespace ? a->operator_namespace : "gpu-operator");
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "GPU Operator pods run but restart often (%d or more restarts)", KUBE_RESTARTS_WARN);
                finding_remedy(f, "`kubectl -n %s logs <pod> --previous` shows why the last run ended",
                               a->operator_namespace ? a->operator_namespace : "gpu-operator");
        } else {
                finding_pass(f, "%zu GPU Operator pod(s) in %s Running and Ready (or Completed)", n,
                             a->operator_namespace ? a->operator_namespace : "?");
        }
}

const struct check_def check_gpu_operator_pods = {
        .id = "gpu-operator.pods", .layer = 3, .component = "gpu-operator",
        .title = "GPU Operator pods on this node run and are Ready",
        .reads = "pods on the node labelled app=<operator component> (driver, toolkit, validator, DCGM, node status exporter, ...), "
                 "in --operator-namespace or where they are found; /run/nvidia/validations",
        .outcomes = "pass: all Running and Ready (validators Completed); fail: CrashLoopBackOff, ImagePullBackOff, stuck in "
                    "Init, Pending; warn: frequent restarts; skip: no operator on the node",
        .remedy = "`kubectl -n gpu-operator describe pod <pod>` and `kubectl logs <pod> --previous`; a pod stuck in Init waits for a file in /run/nvidia/validations from the layer below: fix that layer first",
        .depends = {"kubelet.api-access"},
        .run = run_operator_pods,
};
