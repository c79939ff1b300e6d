/* check_dcgm_exporter.c: layer 4, dcgm-exporter: a series for every GPU on the DCGM exporter's /metrics, not all zero.
 */
#include "layer4_observability/metrics_evidence.h"
#include "nvml/nvml_facts.h"

/* Judges dcgm-exporter.metrics (the DCGM exporter serves a series for every GPU, not all zero) from
 * the facts into f; never fails: what it cannot read, it says. */
static void run_dcgm_metrics(const struct node_facts *facts, struct finding *f) {
        const struct metrics_endpoint *ep = facts->metrics ? &facts->metrics->dcgm : NULL;
        if (metrics_endpoint_skip(ep, f)) return;
        const struct kube_api_facts *a = metrics_pods_known(facts);
        size_t n_pods = 0;
        _cleanup_free_ char *pod_failure = NULL;
        enum kube_pod_health h = a ? kube_pods_evidence(a, POD_DCGM_EXPORTER, f, &n_pods, &pod_failure) : KUBE_POD_OK;
        metrics_endpoint_evidence(ep, f);
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
                finding_remedy(
                        f,
                        "GPU dashboards and alerts are blind for this node: `kubectl -n %s logs -l "
                        "app=nvidia-dcgm-exporter "
                        "--field-selector spec.nodeName=<node> --previous`; an exporter that cannot reach DCGM or NVML "
                        "fails "
                        "at start (check the nvidia-dcgm pod and layer 1), one OOM-killed needs a higher memory limit",
                        ns);
                return;
        }
        if (ep->parse_rc < 0) {
                finding_fail(f, "the DCGM exporter's page is not Prometheus text: %s", ep->parse_error.message);
                finding_remedy(f, "the URL does not point at dcgm-exporter's /metrics, or the exporter is broken: "
                                  "check --dcgm-url and "
                                  "the exporter's log");
                return;
        }
        const struct promtext_gpu_summary *s = &ep->summary;
        finding_evidence(f, "%zu sample(s), %zu DCGM_FI_* sample(s) for %zu GPU UUID(s)", s->n_samples,
                         s->n_dcgm_samples, s->n_gpus);
        if (s->n_dcgm_samples == 0) {
                finding_fail(f, "the DCGM exporter answers with no DCGM_FI_* series");
                finding_remedy(
                        f,
                        "the exporter cannot read any GPU: check its log for DCGM connection errors (the nvidia-dcgm "
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
                finding_remedy(
                        f,
                        "the exporter does not watch every GPU: restart it after a GPU change, check its -d/--devices "
                        "option and its log for per-GPU errors");
        } else if (zero) {
                finding_fail(f, "every DCGM series is 0 on %u of %u GPU(s): the exporter answers but reads nothing",
                             zero, known);
                finding_remedy(
                        f,
                        "temperature and clocks are never 0 on a working GPU: the exporter lost its DCGM host engine "
                        "(restart the nvidia-dcgm and nvidia-dcgm-exporter pods in %s) or runs without access to the "
                        "GPUs",
                        ns);
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

const struct check_def check_dcgm_exporter_metrics = {
        .id = "dcgm-exporter.metrics",
        .action = ACTION_RESTART_POD,
        .layer = 4,
        .component = "dcgm-exporter",
        .title = "the DCGM exporter serves a series for every GPU, not all zero",
        .reads = "the exporter's /metrics: --dcgm-url, else the app=nvidia-dcgm-exporter pod on this node "
                 "(podIP, at the containerPort it names \"metrics\", else its first, else 9400), else "
                 "localhost:9400; its pod's state; NVML's GPU UUIDs",
        .outcomes = "pass: every GPU has series with values; fail: down, no series for a GPU, or all zero; warn: "
                    "series for GPUs "
                    "NVML does not see, or the pod unhealthy; skip: no exporter on this node",
        .remedy = "check layer 1 first; then the nvidia-dcgm-exporter pod on this node (`kubectl logs --previous`), "
                  "its DCGM host engine, and restart it after GPU changes",
        .depends = { "driver.nvml-init", "driver.gpu-count" },
        .run = run_dcgm_metrics,
};
