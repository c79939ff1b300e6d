/* check_otel_agent.c: layer 4, otel-agent: the OpenTelemetry collector runs on the node, where one is deployed. */
#include "layer4_observability/metrics_evidence.h"

/* Judges otel-agent.present (the OpenTelemetry collector on the node runs, where one is deployed) from
 * the facts into f; never fails: what it cannot read, it says. */
static void run_otel_agent(const struct node_facts *facts, struct finding *f) {
        metrics_agent_pods_judge(facts, f, POD_OTEL_AGENT, "OpenTelemetry collector",
                                 "opentelemetry-collector, otel-collector", false);
}

const struct check_def check_otel_agent_present = {
        .id = "otel-agent.present",
        .action = ACTION_RECONFIGURE,
        .layer = 4,
        .component = "otel-agent",
        .title = "the OpenTelemetry collector on the node runs, where one is deployed",
        .reads = "pods on the node named or labelled opentelemetry-collector / otel-collector",
        .outcomes = "pass: running; fail: present but not running; warn: restarting; skip: none on this node",
        .remedy = "`kubectl describe pod` and `kubectl logs --previous` on the collector; check its tolerations and "
                  "memory limit",
        .depends = { "kubelet.api-access" },
        .run = run_otel_agent,
};
