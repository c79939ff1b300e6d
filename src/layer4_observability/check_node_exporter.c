/* check_node_exporter.c: layer 4, node-exporter: the node exporter's /metrics answers. */
#include "layer4_observability/metrics_evidence.h"

/* Judges node-exporter.metrics (the node exporter serves host metrics) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_node_exporter_metrics(const struct node_facts *facts, struct finding *f) {
        const struct metrics_endpoint *ep = facts->metrics ? &facts->metrics->node_exporter : NULL;
        if (metrics_endpoint_skip(ep, f)) return;
        const struct kube_api_facts *a = metrics_pods_known(facts);
        size_t n_pods = 0;
        _cleanup_free_ char *pod_failure = NULL;
        if (a) kube_pods_evidence(a, POD_NODE_EXPORTER, f, &n_pods, &pod_failure);
        metrics_endpoint_evidence(ep, f);
        if (ep->rc < 0) {
                finding_evidence(f, "%s", ep->error);
                if (n_pods == 0 && streq(ep->found_by, "default port")) {
                        finding_skip(f, "no node exporter on this node (no pod, nothing at %s)", ep->url);
                        return;
                }
                finding_fail(f, "the node exporter does not answer at %s%s%s", ep->url, pod_failure ? ": " : "",
                             pod_failure ? pod_failure : "");
                finding_remedy(
                        f,
                        "host metrics (CPU, memory, disks, network) for this node are missing: check the node exporter "
                        "pod's log, and that port %d is free on the host (hostNetwork)",
                        NODE_EXPORTER_PORT);
                return;
        }
        if (ep->parse_rc < 0) {
                finding_fail(f, "the node exporter's page is not Prometheus text: %s", ep->parse_error.message);
                finding_remedy(f, "check --node-exporter-url and the exporter's log");
                return;
        }
        if (ep->summary.n_samples == 0) {
                finding_fail(f, "the node exporter answers with no samples");
                finding_remedy(f, "check the node exporter's collectors and its log");
                return;
        }
        finding_pass(f, "node exporter serves %zu samples of %zu metric(s)", ep->summary.n_samples,
                     ep->summary.n_metrics);
}

const struct check_def check_node_exporter_metrics = {
        .id = "node-exporter.metrics",
        .action = ACTION_RESTART_POD,
        .layer = 4,
        .component = "node-exporter",
        .title = "the node exporter serves host metrics",
        .reads = "--node-exporter-url, else the node exporter pod on this node (podIP, at its "
                 "\"metrics\"/\"http-metrics\" containerPort, else its first, else 9100), else localhost:9100",
        .outcomes = "pass: answers with samples; fail: its pod exists (or the URL was given) and it does not answer; "
                    "skip: none here",
        .remedy = "check the node exporter pod's log and that its port (9100) is free on the host",
        .run = run_node_exporter_metrics,
};
