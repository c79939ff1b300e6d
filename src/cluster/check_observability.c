/* check_observability.c: the observability category: a GPU metrics endpoint on every GPU node, node-exporter, a
 * ServiceMonitor or scrape annotation for them. */
#include "cluster/cluster.h"
#include "basic/util.h"

/* run_metrics_endpoint: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_metrics_endpoint(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0, agents = 0, dcgm = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                agents += n->agent_ready;
                dcgm += n->dcgm_exporter;
                if (n->agent_ready || n->dcgm_exporter) continue;
                cl_evidence_node(f, &bad, "%s: no running gpunode agent or dcgm-exporter pod", n->name);
        }
        cl_evidence_more(f, bad);
        finding_evidence(&f->f, "gpunode agents ready on %zu nodes, dcgm-exporter running on %zu", agents, dcgm);
        if (bad) {
                finding_fail(&f->f, "%zu of %zu GPU nodes serve no GPU metrics", bad, facts->n_nodes);
                finding_remedy(&f->f, "the gpunode agent (deploy/) serves DCGM-compatible metrics on :9400; or the GPU "
                                      "Operator's dcgm-exporter: both DaemonSets must cover every GPU node");
        } else
                finding_pass(&f->f, "a GPU metrics endpoint runs on all %zu GPU nodes", facts->n_nodes);
}

/* run_node_exporter: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_node_exporter(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0;
        for (size_t i = 0; i < facts->n_nodes; i++)
                if (!facts->nodes[i].node_exporter)
                        cl_evidence_node(f, &bad, "%s: no running node-exporter pod", facts->nodes[i].name);
        cl_evidence_more(f, bad);
        if (bad == facts->n_nodes) {
                finding_warn(&f->f,
                             "no node-exporter pod runs on any GPU node (labels app.kubernetes.io/name=node-exporter "
                             "or prometheus-node-exporter)");
                finding_remedy(&f->f,
                               "install kube-prometheus-stack's prometheus-node-exporter (or run it on the hosts "
                               "and ignore this): host CPU, memory, disk and network of the GPU nodes go unseen");
        } else if (bad) {
                finding_warn(&f->f, "%zu of %zu GPU nodes run no node-exporter", bad, facts->n_nodes);
                finding_remedy(&f->f, "its DaemonSet must tolerate the GPU nodes' taints (nvidia.com/gpu:NoSchedule)");
        } else
                finding_pass(&f->f, "node-exporter runs on all %zu GPU nodes", facts->n_nodes);
}

/* Returns the value of label key among s's "k=v" labels, or NULL. */
static const char *service_label(const struct cl_service *s, const char *key, size_t key_len) {
        for (size_t j = 0; j < s->labels.n; j++)
                if (strncmp(s->labels.v[j], key, key_len) == 0 && s->labels.v[j][key_len] == '=')
                        return s->labels.v[j] + key_len + 1;
        return NULL;
}

/* Returns whether value is one of the comma-separated values. */
static bool in_values(const char *values, const char *value) {
        size_t n = strlen(value);
        for (const char *p = values; *p;) {
                size_t len = strcspn(p, ",");
                if (len == n && strncmp(p, value, n) == 0) return true;
                p += len;
                if (*p == ',') p++;
        }
        return false;
}

/* Returns whether Service s's labels satisfy one matchExpressions entry "OPERATOR KEY V1,V2" (In, NotIn, Exists,
 * DoesNotExist, as the API server evaluates a label selector); an operator it does not know selects nothing. */
static bool expression_matches(const char *expr, const struct cl_service *s) {
        const char *key = strchr(expr, ' ');
        if (!key) return false;
        key++;
        const char *end = strchr(key, ' ');
        size_t key_len = end ? (size_t)(end - key) : strlen(key);
        const char *values = end ? end + 1 : "";
        const char *v = service_label(s, key, key_len);
        if (startswith(expr, "In ")) return v && in_values(values, v);
        if (startswith(expr, "NotIn ")) return !v || !in_values(values, v);
        if (startswith(expr, "Exists ")) return v != NULL;
        if (startswith(expr, "DoesNotExist ")) return v == NULL;
        return false;
}

/* Returns whether ServiceMonitor m selects Service s. */
static bool monitor_selects(const struct cl_monitor *m, const struct cl_service *s) {
        bool ns = m->any_namespace;
        for (size_t i = 0; i < m->n_namespaces && !ns; i++) ns = streq(m->namespaces[i], s->namespace);
        if (!ns && m->n_namespaces == 0) ns = streq(m->namespace, s->namespace);
        if (!ns) return false;
        for (size_t i = 0; i < m->match_labels.n; i++) {
                bool found = false;
                for (size_t j = 0; j < s->labels.n && !found; j++) found = streq(m->match_labels.v[i], s->labels.v[j]);
                if (!found) return false;
        }
        for (size_t i = 0; i < m->match_expressions.n; i++)
                if (!expression_matches(m->match_expressions.v[i], s)) return false;
        return true;
}

/* run_scrape_config: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_scrape_config(const struct cluster_facts *facts, struct cl_finding *f) {
        if (cl_list_unreadable(facts, CL_LIST_SERVICES, f, false)) return;
        if (!facts->agent_namespace && !facts->dcgm_namespace) {
                f->f.blocked_by = "observability.metrics-endpoint";
                finding_set(&f->f, CHECK_BLOCKED,
                            "no GPU metrics pod runs: nothing to scrape (observability.metrics-endpoint)");
                return;
        }
        bool scraped = facts->metrics_pods_annotated;
        if (facts->metrics_pods_annotated) finding_evidence(&f->f, "the metrics pods carry prometheus.io/scrape=true");
        size_t services = 0;
        for (size_t i = 0; i < facts->n_services; i++) {
                const struct cl_service *s = &facts->services[i];
                if (!s->selects_agent && !s->selects_dcgm) continue;
                services++;
                if (s->scrape_annotation) {
                        scraped = true;
                        finding_evidence(&f->f, "Service %s/%s carries prometheus.io/scrape=true", s->namespace,
                                         s->name);
                }
                for (size_t m = 0; m < facts->n_monitors; m++)
                        if (monitor_selects(&facts->monitors[m], s)) {
                                scraped = true;
                                finding_evidence(&f->f, "ServiceMonitor %s/%s selects Service %s/%s",
                                                 facts->monitors[m].namespace, facts->monitors[m].name, s->namespace,
                                                 s->name);
                        }
        }
        if (facts->lists[CL_LIST_SERVICEMONITORS].rc == -ENOENT)
                finding_evidence(&f->f, "the API serves no ServiceMonitors (Prometheus Operator CRDs not installed)");
        else if (facts->lists[CL_LIST_SERVICEMONITORS].rc)
                finding_evidence(&f->f, "ServiceMonitors not readable: %s",
                                 facts->lists[CL_LIST_SERVICEMONITORS].error);
        if (scraped) {
                finding_pass(&f->f,
                             "Prometheus is told to scrape the GPU metrics (%zu Services select the metrics pods)",
                             services);
                return;
        }
        int monitors_rc = facts->lists[CL_LIST_SERVICEMONITORS].rc;
        if (monitors_rc && monitors_rc != -ENOENT) {
                /* A ServiceMonitor gpunode may not read may well be the one that scrapes them. */
                finding_warn(&f->f,
                             "cannot tell whether Prometheus scrapes the GPU metrics pods: ServiceMonitors not "
                             "readable, and no scrape annotation (%zu Services select them)",
                             services);
                finding_remedy(&f->f, "grant list on servicemonitors.monitoring.coreos.com (deploy/"
                                      "clusterrole-cluster-reader.yaml) and run gpunode cluster again");
                return;
        }
        finding_warn(&f->f,
                     "nothing tells Prometheus to scrape the GPU metrics pods (%zu Services select them, no "
                     "ServiceMonitor or scrape annotation)",
                     services);
        finding_remedy(&f->f,
                       "apply deploy/service.yaml and deploy/servicemonitor.yaml (Prometheus Operator), or annotate "
                       "the Service with prometheus.io/scrape: \"true\" for annotation-based scraping");
}

const struct cl_check_def cl_check_observability_metrics_endpoint = {
        .id = "observability.metrics-endpoint",
        .category = CL_OBSERVABILITY,
        .title = "a GPU metrics endpoint (gpunode agent or dcgm-exporter) on every GPU node",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_metrics_endpoint,
};
const struct cl_check_def cl_check_observability_node_exporter = {
        .id = "observability.node-exporter",
        .category = CL_OBSERVABILITY,
        .title = "node-exporter on every GPU node",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_node_exporter,
};
const struct cl_check_def cl_check_observability_scrape_config = {
        .id = "observability.scrape-config",
        .category = CL_OBSERVABILITY,
        .title = "a ServiceMonitor or scrape annotation points at the metrics",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_scrape_config,
};
