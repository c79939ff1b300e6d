/* check_infrastructure.c: the infrastructure category: GPU nodes found, Ready, versions uniform, schedulable, an agent
 * on each. */
#include "cluster/cluster.h"
#include "basic/util.h"

#include <inttypes.h>

/* infrastructure.gpu-nodes: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_gpu_nodes(const struct cluster_facts *facts, struct cl_finding *f) {
        if (facts->n_nodes == 0) {
                finding_fail(&f->f, "no GPU nodes among %zu nodes", facts->n_nodes_total);
                finding_evidence(
                        &f->f,
                        "no node has nvidia.com/gpu or nvidia.com/mig-* capacity, nvidia.com/gpu.present=true or "
                        "feature.node.kubernetes.io/pci-10de.present=true");
                finding_remedy(&f->f, "install the GPU Operator or the device plugin and NFD; `kubectl get nodes -L "
                                      "nvidia.com/gpu.present` shows what the nodes carry");
                return;
        }
        finding_pass(&f->f, "%zu GPU nodes among %zu nodes", facts->n_nodes, facts->n_nodes_total);
        size_t by_capacity = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) by_capacity += streq(facts->nodes[i].gpu_because, "GPU capacity");
        finding_evidence(&f->f, "%zu by GPU capacity, %zu by labels only", by_capacity, facts->n_nodes - by_capacity);
}

/* run_nodes_ready: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_nodes_ready(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                if (n->ready == 1) continue;
                cl_evidence_node(f, &bad, "%s: Ready is %s (%s)", n->name, n->ready == 0 ? "False" : "Unknown",
                                 n->ready_reason ? n->ready_reason : "no reason");
        }
        cl_evidence_more(f, bad);
        if (bad) {
                finding_fail(&f->f, "%zu of %zu GPU nodes are not Ready", bad, facts->n_nodes);
                finding_remedy(&f->f, "`kubectl describe node NODE` (conditions, kubelet events); on the node "
                                      "`journalctl -u kubelet`");
        } else
                finding_pass(&f->f, "all %zu GPU nodes are Ready", facts->n_nodes);
}

/* run_versions_uniform: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_versions_uniform(const struct cluster_facts *facts, struct cl_finding *f) {
        struct cl_tally k = { 0 }, c = { 0 };
        for (size_t i = 0; i < facts->n_nodes; i++) {
                cl_tally_add(&k, facts->nodes[i].kubelet_version);
                cl_tally_add(&c, facts->nodes[i].runtime_version);
        }
        _cleanup_free_ char *kt = cl_tally_text(&k), *ct = cl_tally_text(&c);
        finding_evidence(&f->f, "kubelet: %s", kt);
        finding_evidence(&f->f, "container runtime: %s", ct);
        if (k.n > 1 || c.n > 1 || k.other || c.other) {
                size_t odd = 0;
                const char *mk = cl_tally_majority(&k), *mc = cl_tally_majority(&c);
                for (size_t i = 0; i < facts->n_nodes; i++) {
                        const struct cl_node *n = &facts->nodes[i];
                        const char *kv = n->kubelet_version ? n->kubelet_version : "unknown";
                        const char *cv = n->runtime_version ? n->runtime_version : "unknown";
                        if (!streq(kv, mk) || !streq(cv, mc))
                                cl_evidence_node(f, &odd, "%s: kubelet %s, %s", n->name, kv, cv);
                }
                cl_evidence_more(f, odd);
                finding_warn(&f->f, "GPU nodes run %zu kubelet and %zu container runtime versions", k.n, c.n);
                finding_remedy(&f->f,
                               "upgrade the odd nodes to the fleet's versions (node pool upgrade); mixed kubelets are "
                               "allowed within the version skew policy but make GPU behaviour differ across nodes");
        } else
                finding_pass(&f->f, "kubelet %s and %s on every GPU node", k.n ? k.value[0] : "?",
                             c.n ? c.value[0] : "?");
}

/* Returns whether a taint keeps ordinary GPU pods off (NoSchedule/NoExecute, not the usual nvidia.com/gpu one). */
static bool blocking_taint(const struct cl_taint *t) {
        if (!t->effect || streq(t->effect, "PreferNoSchedule")) return false;
        return !streq(t->key, "nvidia.com/gpu");
}

/* run_schedulable: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_schedulable(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                struct buf b = { 0 };
                if (n->unschedulable) buf_puts(&b, "cordoned");
                for (size_t t = 0; t < n->n_taints; t++)
                        if (blocking_taint(&n->taints[t]))
                                buf_printf(&b, "%staint %s%s%s:%s", b.len ? ", " : "", n->taints[t].key,
                                           n->taints[t].value ? "=" : "", n->taints[t].value ? n->taints[t].value : "",
                                           n->taints[t].effect);
                if (b.len) {
                        int fl = cl_node_failing_layer(n);
                        cl_evidence_node(f, &bad, "%s: %s%s", n->name, b.data,
                                         fl ? " (its layer conditions fail: see gpu-health.layer-conditions)" : "");
                }
                buf_free(&b);
        }
        cl_evidence_more(f, bad);
        if (bad) {
                finding_warn(&f->f, "%zu of %zu GPU nodes are cordoned or tainted against ordinary pods", bad,
                             facts->n_nodes);
                finding_remedy(
                        &f->f,
                        "`kubectl uncordon NODE` once it is fixed; `kubectl taint node NODE KEY-` removes a taint "
                        "(gpunode.io/unhealthy goes by itself when the layer heals)");
        } else
                finding_pass(&f->f, "every GPU node takes pods (no cordon, no NoSchedule or NoExecute taint)");
}

/* run_agent_running: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_agent_running(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0, noconds = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                bool known = false;
                for (int l = 0; l < CLUSTER_LAYERS; l++) known |= n->layers[l].status != CL_COND_ABSENT;
                if (!n->agent_pod)
                        cl_evidence_node(f, &bad, "%s: no gpunode agent pod%s", n->name,
                                         known ? " (its old conditions remain on the node)" : ", no GPU conditions");
                else if (!n->agent_ready)
                        cl_evidence_node(f, &bad, "%s: agent pod %s/%s is not Running and Ready", n->name,
                                         n->agent_namespace, n->agent_pod);
                else if (!known)
                        cl_evidence_node(f, &noconds, "%s: agent %s/%s runs but the node has no GPU conditions",
                                         n->name, n->agent_namespace, n->agent_pod);
        }
        cl_evidence_more(f, bad + noconds);
        if (bad + noconds) {
                finding_fail(&f->f, "%zu of %zu GPU nodes have no working gpunode agent: their GPU health is unknown",
                             bad + noconds, facts->n_nodes);
                finding_remedy(&f->f,
                               "`kubectl -n gpunode get ds,pods -o wide` (deploy/: the DaemonSet's node selector and "
                               "tolerations must cover every GPU node); `kubectl -n gpunode logs POD` for one that "
                               "runs without writing conditions (RBAC: patch nodes/status)");
        } else
                finding_pass(&f->f, "a gpunode agent runs and reports on all %zu GPU nodes", facts->n_nodes);
}

/* run_agent_heartbeat: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_agent_heartbeat(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0, known_nodes = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                bool known = false;
                for (int l = 0; l < CLUSTER_LAYERS; l++) known |= n->layers[l].status != CL_COND_ABSENT;
                if (!known) continue;
                known_nodes++;
                if (!cl_node_stale(facts, n)) continue;
                int64_t h = cl_node_heartbeat(n);
                if (h > facts->now)
                        cl_evidence_node(f, &bad,
                                         "%s: heartbeat %" PRId64 " s in the future: the node's clock ran ahead",
                                         n->name, h - facts->now);
                else if (h)
                        /* in whole minutes: --watch redraws when the text changes, and a stale heartbeat's age
                         * in seconds changed every pass */
                        cl_evidence_node(f, &bad, "%s: last heartbeat %" PRId64 " min ago", n->name,
                                         (facts->now - h) / 60);
                else
                        cl_evidence_node(f, &bad, "%s: the conditions carry no lastHeartbeatTime", n->name);
        }
        cl_evidence_more(f, bad);
        if (known_nodes == 0) {
                finding_skip(&f->f, "no GPU node carries agent conditions");
                return;
        }
        if (bad) {
                finding_warn(&f->f,
                             "%zu of %zu agents' conditions are stale (no heartbeat for more than %" PRId64
                             " s, or one from the future): what they say may no longer hold",
                             bad, known_nodes, facts->stale_after_s);
                finding_remedy(&f->f,
                               "`kubectl -n gpunode logs POD` of the node's agent (API errors, backoff); the agent "
                               "re-patches its conditions every --heartbeat (default 5m); a heartbeat from the future: "
                               "fix the node's clock (`timedatectl`, chrony), the agent then heartbeats over it");
        } else
                finding_pass(&f->f, "every agent's conditions are fresh (heartbeat within %" PRId64 " s)",
                             facts->stale_after_s);
}

const struct cl_check_def cl_check_infrastructure_gpu_nodes = {
        .id = "infrastructure.gpu-nodes",
        .category = CL_INFRA,
        .title = "the cluster has GPU nodes",
        .run = run_gpu_nodes,
};
const struct cl_check_def cl_check_infrastructure_nodes_ready = {
        .id = "infrastructure.nodes-ready",
        .category = CL_INFRA,
        .title = "every GPU node is Ready",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_nodes_ready,
};
const struct cl_check_def cl_check_infrastructure_versions_uniform = {
        .id = "infrastructure.versions-uniform",
        .category = CL_INFRA,
        .title = "kubelet and container runtime versions are uniform across GPU nodes",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_versions_uniform,
};
const struct cl_check_def cl_check_infrastructure_schedulable = {
        .id = "infrastructure.schedulable",
        .category = CL_INFRA,
        .title = "no GPU node is cordoned or tainted",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_schedulable,
};
const struct cl_check_def cl_check_infrastructure_agent_running = {
        .id = "infrastructure.agent-running",
        .category = CL_INFRA,
        .title = "the gpunode agent runs on every GPU node",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_agent_running,
        .hides_only = true,
};
const struct cl_check_def cl_check_infrastructure_agent_heartbeat = {
        .id = "infrastructure.agent-heartbeat",
        .category = CL_INFRA,
        .title = "the agents' conditions are fresh",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_agent_heartbeat,
        .hides_only = true,
};
