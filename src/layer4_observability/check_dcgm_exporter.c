/* check_dcgm_exporter.c: layer 4: the DCGM exporter's and node exporter's /metrics, logging and telemetry agents on the node. */
#include "layer3_kubernetes/kube_evidence.h"
#include "facts/layer4_observability.h"
#include "nvml/nvml_lib.h"
#include "nvml/nvml_probe.h"

/* Adds the endpoint's URL and how it was found as evidence. */
static void endpoint_evidence(const struct metrics_endpoint *ep, struct finding *f) {
        finding_evidence(f, "%s (%s)", ep->url, ep->found_by);
}

/* Returns the API facts when the pods were listed, else NULL (no finding change). */
static const struct kube_api_facts *pods_known(const struct node_facts *facts) {
        const struct kube_api_facts *a = facts->kube ? &facts->kube->api : NULL;
        return a && a->rc == 0 && a->pods_rc == 0 ? a : NULL;
}

/* Judges dcgm-exporter.metrics (the DCGM exporter serves a series for every GPU, not all zero) from
 * the facts into f; never fails: what it cannot read, it says. */
static void run_dcgm_metrics(const struct node_facts *facts, struct finding *f) {
        const struct metrics_endpoint *ep = facts->metrics ? &facts->metrics->dcgm : NULL;
        if (!ep || !ep->url) {
                finding_skip(f, "%s", ep && ep->skip_reason ? ep->skip_reason : "the Kubernetes probes did not run");
                return;
        }
        const struct kube_api_facts *a = pods_known(facts);
        size_t n_pods = 0;
        _cleanup_free_ char *pod_failure = NULL;
        enum kube_pod_health h = a ? kube_pods_evidence(a, POD_DCGM_EXPORTER, f, &n_pods, &pod_failure) : KUBE_POD_OK;
        endpoint_evidence(ep, f);
        const char *ns = a && n_pods ? kube_pod_find(a, POD_DCGM_EXPORTER)->namespace : "gpu-operator";
        if (ep->rc < 0) {
                finding_evidence(f, "%s", ep->error);
                bool expected = n_pods > 0 || !streq(ep->found_by, "default port") ||
                                (a && streq_ptr(kube_node_label(a, "nvidia.com/gpu.deploy.dcgm-exporter"), "true"));
                if (!expected) {
                        finding_skip(f, "no DCGM exporter on this node (no exporter pod, nothing at %s)", ep->url);
                        return;
                }
                if (pod_failure)
                        finding_fail(f, "the DCGM exporter is down: %s", pod_failure);
                else
                        finding_fail(f, "the DCGM exporter does not answer at %s", ep->url);
                finding_remedy(f, "GPU dashboards and alerts are blind for this node: `kubectl -n %s logs -l app=nvidia-dcgm-exporter "
                                  "--field-selector spec.nodeName=<node> --previous`; an exporter that cannot reach DCGM or NVML fails "
                                  "at start (check the nvidia-dcgm pod and layer 1), one OOM-killed needs a higher memory limit", ns);
                return;
        }
        if (ep->parse_rc < 0) {
                finding_fail(f, "the DCGM exporter's page is not Prometheus text: %s", ep->parse_error.message);
                finding_remedy(f, "the URL does not point at dcgm-exporter's /metrics, or the exporter is broken: check --dcgm-url and "
                                  "the exporter's log");
                return;
        }
        const struct promtext_gpu_summary *s = &ep->summary;
        finding_evidence(f, "%zu sample(s), %zu DCGM_FI_* sample(s) for %zu GPU UUID(s)", s->n_samples, s->n_dcgm_samples, s->n_gpus);
        if (s->n_dcgm_samples == 0) {
                finding_fail(f, "the DCGM exporter answers with no DCGM_FI_* series");
                finding_remedy(f, "the exporter cannot read any GPU: check its log for DCGM connection errors (the nvidia-dcgm "
                                  "host engine pod, or the embedded engine) and its counters CSV");
                return;
        }
        const struct nvml_facts *n = facts->nvml.facts;
        unsigned missing = 0, zero = 0, known = 0;
        for (unsigned i = 0; n && i < n->n_gpus; i++) {
                const struct nvml_gpu_facts *g = &n->gpus[i];
                if (g->uuid_rc != NVML_SUCCESS) continue;
                known++;
                const struct promtext_gpu *pg = promtext_gpu_summary_find(s, g->uuid);
                if (!pg) {
                        missing++;
                        finding_evidence(f, "GPU %u (%s): no series", g->index, g->uuid);
                } else if (pg->n_nonzero == 0) {
                        zero++;
                        finding_evidence(f, "GPU %u (%s): all %zu series are 0", g->index, g->uuid, pg->n_series);
                }
        }
        unsigned stale = 0;
        for (size_t i = 0; n && i < s->n_gpus; i++) {
                bool found = false;
                for (unsigned j = 0; j < n->n_gpus && !found; j++)
                        found = n->gpus[j].uuid_rc == NVML_SUCCESS && streq(n->gpus[j].uuid, s->gpus[i].uuid);
                if (!found && startswith(s->gpus[i].uuid, "GPU-")) {
                        stale++;
                        finding_evidence(f, "%s: series for a GPU NVML does not see", s->gpus[i].uuid);
                }
        }
        if (missing) {
                finding_fail(f, "no DCGM series for %u of %u GPU(s) NVML sees", missing, known);
                finding_remedy(f, "the exporter does not watch every GPU: restart it after a GPU change, check its -d/--devices "
                                  "option and its log for per-GPU errors");
        } else if (zero) {
                finding_fail(f, "every DCGM series is 0 on %u of %u GPU(s): the exporter answers but reads nothing", zero, known);
                finding_remedy(f, "temperature and clocks are never 0 on a working GPU: the exporter lost its DCGM host engine "
                                  "(restart the nvidia-dcgm and nvidia-dcgm-exporter pods in %s) or runs without access to the GPUs", ns);
        } else if (stale) {
                finding_warn(f, "the DCGM exporter reports %u GPU(s) that NVML does not see", stale);
                finding_remedy(f, "restart the DCGM exporter so that it drops GPUs that are gone");
        } else if (h != KUBE_POD_OK) {
                finding_warn(f, "DCGM metrics are complete, but the exporter pod is not healthy");
                finding_remedy(f, "`kubectl -n %s describe pod` on the exporter pod", ns);
        } else {
                finding_pass(f, "DCGM exporter serves %zu series for all %u GPU(s)", s->n_dcgm_samples, known);
        }
}

/* Judges node-exporter.metrics (the node exporter serves host metrics) from the facts into f; never
 * fails: what it cannot read, it says. */
static void run_node_exporter_metrics(const struct node_facts *facts, struct finding *f) {
        const struct metrics_endpoint *ep = facts->metrics ? &facts->metrics->node_exporter : NULL;
        if (!ep || !ep->url) {
                finding_skip(f, "%s", ep && ep->skip_reason ? ep->skip_reason : "the Kubernetes probes did not run");
                return;
        }
        const struct kube_api_facts *a = pods_known(facts);
        size_t n_pods = 0;
        _cleanup_free_ char *pod_failure = NULL;
        if (a) kube_pods_evidence(a, POD_NODE_EXPORTER, f, &n_pods, &pod_failure);
        endpoint_evidence(ep, f);
        if (ep->rc < 0) {
                finding_evidence(f, "%s", ep->error);
                if (n_pods == 0 && streq(ep->found_by, "default port")) {
                        finding_skip(f, "no node exporter on this node (no pod, nothing at %s)", ep->url);
                        return;
                }
                finding_fail(f, "the node exporter does not answer at %s%s%s", ep->url, pod_failure ? ": " : "",
                             pod_failure ? pod_failure : "");
                finding_remedy(f, "host metrics (CPU, memory, disks, network) for this node are missing: check the node exporter "
                                  "pod's log, and that port %d is free on the host (hostNetwork)", NODE_EXPORTER_PORT);
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
        finding_pass(f, "node exporter serves %zu samples of %zu metric(s)", ep->summary.n_samples, ep->summary.n_metrics);
}

/* Judges the agents of one role: absent_warn makes absence a warning, else a skip. */
static void agents(const struct node_facts *facts, struct finding *f, enum kube_pod_role role, const char *what,
                   const char *examples, bool absent_warn) {
        const struct kube_api_facts *a = kube_api_or_skip(facts, f, true);
        if (!a) return;
        size_t n = 0;
        _cleanup_free_ char *first = NULL;
        enum kube_pod_health h = kube_pods_evidence(a, role, f, &n, &first);
        if (n == 0 && absent_warn) {
                finding_warn(f, "no %s on this node (looked for %s)", what, examples);
                finding_remedy(f, "without one, the node's kernel log (Xid lines) and the GPU pods' logs are lost when the node "
                                  "fails: deploy the cluster's log collector as a DaemonSet that tolerates the GPU taints "
                                  "(nvidia.com/gpu:NoSchedule)");
        } else if (n == 0) {
                finding_skip(f, "no %s on this node (looked for %s)", what, examples);
        } else if (h == KUBE_POD_FAIL) {
                finding_fail(f, "%s not running: %s", what, first);
                finding_remedy(f, "`kubectl describe pod` and `kubectl logs --previous` on it; DaemonSets often lack a toleration "
                                  "for the GPU nodes' taints or run out of memory on busy nodes");
        } else if (h == KUBE_POD_WARN) {
                finding_warn(f, "%s restarts often", what);
                finding_remedy(f, "`kubectl logs --previous` on the agent's pod shows why it stopped");
        } else {
                finding_pass(f, "%zu %s pod(s) Running and Ready", n, what);
        }
}

/* Judges logging-agent.present (a log collector runs on the node) from the facts into f; never fails:
 * what it cannot read, it says. */
static void run_logging_agent(const struct node_facts *facts, struct finding *f) {
        agents(facts, f, POD_LOGGING_AGENT, "logging agent", "fluent-bit, fluentd, promtail, vector, filebeat, alloy", true);
}

/* Judges otel-agent.present (the OpenTelemetry collector on the node runs, where one is deployed) from
 * the facts into f; never fails: what it cannot read, it says. */
static void run_otel_agent(const struct node_facts *facts, struct finding *f) {
        agents(facts, f, POD_OTEL_AGENT, "OpenTelemetry collector", "opentelemetry-collector, otel-collector", false);
}

const struct check_def check_dcgm_exporter_metrics = {
        .id = "dcgm-exporter.metrics", .layer = 4, .component = "dcgm-exporter",
        .title = "the DCGM exporter serves a series for every GPU, not all zero",
        .reads = "the exporter's /metrics: --dcgm-url, else the app=nvidia-dcgm-exporter pod on this node (podIP:9400), else "
                 "localhost:9400; its pod's state; NVML's GPU UUIDs",
        .outcomes = "pass: every GPU has series with values; fail: down, no series for a GPU, or all zero; warn: series for GPUs "
                    "NVML does not see, or the pod unhealthy; skip: no exporter on this node",
        .remedy = "check layer 1 first; then the nvidia-dcgm-exporter pod on this node (`kubectl logs --previous`), its DCGM host engine, and restart it after GPU changes",
        .depends = {"driver.nvml-init", "driver.gpu-count"},
        .run = run_dcgm_metrics,
};

const struct check_def check_node_exporter_metrics = {
        .id = "node-exporter.metrics", .layer = 4, .component = "node-exporter",
        .title = "the node exporter serves host metrics",
        .reads = "--node-exporter-url, else the node exporter pod on this node (podIP:9100), else localhost:9100",
        .outcomes = "pass: answers with samples; fail: its pod exists (or the URL was given) and it does not answer; skip: none here",
        .remedy = "check the node exporter pod's log and that its port (9100) is free on the host",
        .run = run_node_exporter_metrics,
};

const struct check_def check_logging_agent_present = {
        .id = "logging-agent.present", .layer = 4, .component = "logging-agent",
        .title = "a log collector runs on the node",
        .reads = "pods on the node named or labelled fluent-bit, fluentd, promtail, vector, filebeat, alloy",
        .outcomes = "pass: running; warn: none on the node, or restarting; fail: present but not running",
        .remedy = "deploy the cluster's log collector as a DaemonSet that tolerates the GPU nodes' taints; `kubectl logs --previous` when it restarts",
        .depends = {"kubelet.api-access"},
        .run = run_logging_agent,
};

const struct check_def check_otel_agent_present = {
        .id = "otel-agent.present", .layer = 4, .component = "otel-agent",
        .title = "the OpenTelemetry collector on the node runs, where one is deployed",
        .reads = "pods on the node named or labelled opentelemetry-collector / otel-collector",
        .outcomes = "pass: running; fail: present but not running; warn: restarting; skip: none on this node",
        .remedy = "`kubectl describe pod` and `kubectl logs --previous` on the collector; check its tolerations and memory limit",
        .depends = {"kubelet.api-access"},
        .run = run_otel_agent,
};
