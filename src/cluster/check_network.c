/* check_network.c: the network category: Network Operator pods, RDMA resources where RDMA NICs are, IB/RoCE port state
 * from the agents. */
#include "cluster/cluster.h"
#include "basic/util.h"

/* Returns the GPU nodes with an RDMA NIC. */
static size_t rdma_nodes(const struct cluster_facts *facts) {
        size_t n = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) n += facts->nodes[i].rdma_nic;
        return n;
}

/* run_operator_pods: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_operator_pods(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t want = rdma_nodes(facts), bad = 0;
        if (want == 0) {
                finding_skip(&f->f, "no GPU node has an RDMA NIC (NFD labels pci-15b3.present, rdma.capable)%s",
                             facts->network_operator_seen ? "; Network Operator pods run anyway" : "");
                return;
        }
        if (!facts->network_operator_seen) {
                finding_warn(&f->f, "%zu GPU nodes have RDMA NICs but no NVIDIA Network Operator pod runs", want);
                finding_remedy(&f->f,
                               "install the NVIDIA Network Operator (namespace nvidia-network-operator) for the MOFED "
                               "driver and the RDMA device plugin, or make sure the host drivers and plugin are "
                               "provided otherwise (network.rdma-resources tells whether pods can get RDMA)");
                return;
        }
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                if (n->rdma_nic && !n->network_operator)
                        cl_evidence_node(f, &bad, "%s: RDMA NIC, no running Network Operator pod", n->name);
        }
        cl_evidence_more(f, bad);
        if (bad) {
                finding_warn(&f->f, "%zu of %zu GPU nodes with RDMA NICs run no Network Operator pod", bad, want);
                finding_remedy(&f->f,
                               "`kubectl -n nvidia-network-operator get pods -o wide`: the NicClusterPolicy's node "
                               "selector and tolerations must cover these nodes");
        } else
                finding_pass(&f->f, "Network Operator pods run on all %zu GPU nodes with RDMA NICs", want);
}

/* run_rdma_resources: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_rdma_resources(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t want = rdma_nodes(facts), bad = 0, explained = 0;
        if (want == 0) {
                finding_skip(&f->f, "no GPU node has an RDMA NIC");
                return;
        }
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                if (!n->rdma_nic || n->rdma_allocatable > 0) continue;
                int fl = cl_node_failing_layer(n);
                if (fl == 1 || fl == 2) {
                        explained++;
                        finding_evidence(&f->f, "%s: no rdma/* allocatable, explained by its layer %d failure (%s)",
                                         n->name, fl, n->layers[fl - 1].reason ? n->layers[fl - 1].reason : "?");
                } else
                        cl_evidence_node(f, &bad, "%s: RDMA NIC but no rdma/* resource allocatable", n->name);
        }
        cl_evidence_more(f, bad);
        if (bad) {
                finding_fail(&f->f, "%zu of %zu GPU nodes with RDMA NICs advertise no RDMA resource", bad, want);
                finding_remedy(&f->f,
                               "the RDMA shared device plugin (or SR-IOV network device plugin) must run on them: "
                               "`kubectl get node NODE -o jsonpath='{.status.allocatable}'`; its config's selectors "
                               "must match the NICs (vendor 15b3)");
        } else if (explained) {
                f->f.blocked_by = "gpu-health.layer-conditions";
                f->rests_on = "gpu-health.layer-conditions";
                finding_set(&f->f, CHECK_BLOCKED,
                            "%zu GPU nodes advertise no RDMA resource because their lower layers fail "
                            "(gpu-health.layer-conditions)",
                            explained);
        } else
                finding_pass(&f->f, "all %zu GPU nodes with RDMA NICs advertise rdma/* resources", want);
}

/* run_port_state: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails. */
static void run_port_state(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t want = rdma_nodes(facts), bad = 0, reporting = 0;
        if (want == 0) {
                finding_skip(&f->f, "no GPU node has an RDMA NIC");
                return;
        }
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                if (!n->rdma_nic || n->layers[0].status == CL_COND_ABSENT) continue;
                reporting++;
                const struct cl_condition *c = &n->layers[0];
                if (c->status == CL_COND_TRUE && c->reason && startswith(c->reason, "Rdma"))
                        cl_evidence_node(f, &bad, "%s: %s: %.200s", n->name, c->reason, c->message ? c->message : "");
        }
        cl_evidence_more(f, bad);
        if (reporting == 0) {
                f->f.blocked_by = "infrastructure.agent-running";
                finding_set(&f->f, CHECK_BLOCKED, "no agent reports on the GPU nodes with RDMA NICs");
                return;
        }
        finding_evidence(&f->f, "from the agents' GPUHardwareProblem condition (the layer's root cause only; "
                                "`kubectl gpunode check NODE` shows every port)");
        if (bad) {
                finding_fail(&f->f, "%zu GPU nodes' agents report an RDMA problem (ports down, modules missing)", bad);
                finding_remedy(&f->f,
                               "on the node: `ibstat`, `ibv_devinfo`, `rdma link`; a port not ACTIVE/LinkUp needs its "
                               "cable, switch port or subnet manager checked");
        } else
                finding_pass(&f->f, "no agent of the %zu reporting RDMA nodes reports an RDMA problem", reporting);
}

const struct cl_check_def cl_check_network_operator_pods = {
        .id = "network.operator-pods",
        .category = CL_NETWORK,
        .title = "Network Operator pods where RDMA NICs are",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_operator_pods,
};
const struct cl_check_def cl_check_network_rdma_resources = {
        .id = "network.rdma-resources",
        .category = CL_NETWORK,
        .title = "RDMA resources advertised where RDMA NICs are",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_rdma_resources,
};
const struct cl_check_def cl_check_network_port_state = {
        .id = "network.port-state",
        .category = CL_NETWORK,
        .title = "IB/RoCE ports up, by the agents",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_port_state,
};
