/* check_logging_agent.c: layer 4, logging-agent: a log collector runs on the node. */
#include "layer4_observability/metrics_evidence.h"

/* Judges logging-agent.present (a log collector runs on the node) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_logging_agent(const struct node_facts *facts, struct finding *f) {
        metrics_agent_pods_judge(facts, f, POD_LOGGING_AGENT, "logging agent",
                                 "fluent-bit, fluentd, promtail, vector, filebeat, alloy", true);
}

const struct check_def check_logging_agent_present = {
        .id = "logging-agent.present",
        .action = ACTION_RECONFIGURE,
        .layer = 4,
        .component = "logging-agent",
        .title = "a log collector runs on the node",
        .reads = "pods on the node named or labelled fluent-bit, fluentd, promtail, vector, filebeat, alloy",
        .outcomes = "pass: running; warn: none on the node, or restarting; fail: present but not running",
        .remedy = "deploy the cluster's log collector as a DaemonSet that tolerates the GPU nodes' taints; `kubectl "
                  "logs --previous` when it restarts",
        .depends = { "kubelet.api-access" },
        .run = run_logging_agent,
};
