/* check_gpu_health.c: the GPU health category: the agents' layer conditions and root causes; driver, CUDA and product
 * skew from GFD's labels. */
#include "cluster/cluster.h"
#include "basic/util.h"

/* The component a condition reason names (the CamelCase of the agent's root-cause check id). */
static const char *reason_component(const char *reason) {
        static const struct {
                const char *prefix, *component;
        } map[] = {
                { "FabricManager", "fabric-manager" },
                { "RdmaDevicePlugin", "rdma-device-plugin" },
                { "Rdma", "rdma" },
                { "Sriov", "sriov" },
                { "Driver", "driver" },
                { "ContainerToolkit", "container-toolkit" },
                { "DevicePlugin", "device-plugin" },
                { "Gfd", "gfd" },
                { "MigManager", "mig-manager" },
                { "Csi", "csi" },
                { "Kubelet", "kubelet" },
                { "GpuOperator", "gpu-operator" },
                { "NetworkOperator", "network-operator" },
                { "DcgmExporter", "dcgm-exporter" },
                { "NodeExporter", "node-exporter" },
                { "LoggingAgent", "logging-agent" },
                { "OtelAgent", "otel-agent" },
        };
        for (size_t i = 0; reason && i < ELEMENTSOF(map); i++)
                if (startswith(reason, map[i].prefix)) return map[i].component;
        return "unknown";
}

/* run_layer_conditions: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_layer_conditions(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t bad = 0, known = 0, per_layer[CLUSTER_LAYERS] = { 0 };
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                bool k = false;
                for (int l = 0; l < CLUSTER_LAYERS; l++) k |= n->layers[l].status != CL_COND_ABSENT;
                known += k;
                int fl = cl_node_failing_layer(n);
                if (!fl) continue;
                per_layer[fl - 1]++;
                const struct cl_condition *c = &n->layers[fl - 1];
                cl_evidence_node(f, &bad, "%s: layer %d %s, %s: %.300s%s", n->name, fl, reason_component(c->reason),
                                 c->reason ? c->reason : "?", c->message ? c->message : "",
                                 c->message && strlen(c->message) > 300 ? "..." : "");
        }
        cl_evidence_more(f, bad);
        if (known == 0) {
                f->f.blocked_by = "infrastructure.agent-running";
                finding_set(&f->f, CHECK_BLOCKED, "no GPU node carries agent conditions: GPU health is unknown");
                return;
        }
        if (bad) {
                finding_fail(&f->f,
                             "%zu of %zu reporting GPU nodes fail bottom-up (layer 1: %zu, 2: %zu, 3: %zu, 4: %zu)",
                             bad, known, per_layer[0], per_layer[1], per_layer[2], per_layer[3]);
                finding_remedy(
                        &f->f,
                        "fix each node's lowest failing layer first: `kubectl gpunode check NODE` shows its full "
                        "report (evidence and remedy per check); `kubectl describe node NODE` its conditions");
        } else
                finding_pass(&f->f, "no layer condition is True on the %zu GPU nodes with an agent", known);
        if (known < facts->n_nodes)
                finding_evidence(&f->f, "%zu GPU nodes have no agent conditions (see infrastructure.agent-running)",
                                 facts->n_nodes - known);
}

/* Warns when the GPU nodes' values of field differ (what: "driver"). Returns nothing. */
static void skew(const struct cluster_facts *facts, struct cl_finding *f, size_t offset, const char *what,
                 const char *label, const char *remedy) {
        struct cl_tally t = { 0 };
        size_t labelled = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const char *v = *(char *const *)((const char *)&facts->nodes[i] + offset);
                if (!v) continue;
                labelled++;
                cl_tally_add(&t, v);
        }
        if (labelled == 0) {
                finding_skip(&f->f, "no GPU node carries %s (GPU feature discovery labels)", label);
                return;
        }
        _cleanup_free_ char *text = cl_tally_text(&t);
        finding_evidence(&f->f, "%s: %s", what, text);
        if (labelled < facts->n_nodes)
                finding_evidence(&f->f, "%zu GPU nodes carry no %s label", facts->n_nodes - labelled, label);
        if (t.n > 1 || t.other) {
                const char *maj = cl_tally_majority(&t);
                size_t odd = 0;
                for (size_t i = 0; i < facts->n_nodes; i++) {
                        const char *v = *(char *const *)((const char *)&facts->nodes[i] + offset);
                        if (v && !streq(v, maj))
                                cl_evidence_node(f, &odd, "%s: %s %s (most nodes: %s)", facts->nodes[i].name, what, v,
                                                 maj);
                }
                cl_evidence_more(f, odd);
                finding_warn(&f->f, "%zu %s versions across the GPU nodes", t.n + t.other, what);
                finding_remedy(&f->f, "%s", remedy);
        } else
                finding_pass(&f->f, "%s %s on every labelled GPU node", what, t.value[0]);
}

/* run_driver_skew: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_driver_skew(const struct cluster_facts *facts, struct cl_finding *f) {
        skew(facts, f, offsetof(struct cl_node, driver_version), "driver", "nvidia.com/cuda.driver-version.full",
             "upgrade the odd nodes' driver to the fleet's (GPU Operator: the ClusterPolicy's driver.version; a host "
             "driver: the node image), then drain and reboot them one at a time");
}

/* run_cuda_skew: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails. */
static void run_cuda_skew(const struct cluster_facts *facts, struct cl_finding *f) {
        skew(facts, f, offsetof(struct cl_node, cuda_version), "CUDA", "nvidia.com/cuda.runtime-version.full",
             "the CUDA version follows the driver: align the drivers (gpu-health.driver-skew); containers built for a "
             "newer CUDA fail on the older nodes with error 804 or 'CUDA driver version is insufficient'");
}

/* Products must agree within an instance type: nodes sold as alike. */
static void run_product_skew(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t labelled = 0, odd = 0, groups = 0;
        struct {
                const char *it, *product, *node;
        } group[256];
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                if (!n->product) continue;
                labelled++;
                const char *it = n->instance_type ? n->instance_type : "";
                /* the first node of an instance type sets what the others of that type must be */
                size_t g = 0;
                while (g < groups && !streq(group[g].it, it)) g++;
                if (g == groups) {
                        if (groups < ELEMENTSOF(group))
                                group[groups++] = (__typeof__(group[0])){ it, n->product, n->name };
                        continue;
                }
                if (!streq(group[g].product, n->product))
                        cl_evidence_node(f, &odd, "%s: %s, but %s of the same instance type %s has %s", n->name,
                                         n->product, group[g].node, *it ? it : "(none)", group[g].product);
        }
        cl_evidence_more(f, odd);
        if (labelled == 0) {
                finding_skip(&f->f, "no GPU node carries nvidia.com/gpu.product (GPU feature discovery labels)");
                return;
        }
        if (odd) {
                finding_warn(&f->f, "%zu GPU nodes differ in GPU product from others of their instance type", odd);
                finding_remedy(&f->f,
                               "a node with another product than its pool (a replaced board, a MIG or sharing "
                               "rename: -SHARED, -MIG-...) gets pods sized for the others; check `kubectl get nodes "
                               "-L nvidia.com/gpu.product,node.kubernetes.io/instance-type`");
        } else
                finding_pass(&f->f, "GPU products agree within each of %zu instance types", groups);
}

const struct cl_check_def cl_check_gpu_health_layer_conditions = {
        .id = "gpu-health.layer-conditions",
        .category = CL_GPU_HEALTH,
        .title = "no GPU node's agent reports a failing layer",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_layer_conditions,
};
const struct cl_check_def cl_check_gpu_health_driver_skew = {
        .id = "gpu-health.driver-skew",
        .category = CL_GPU_HEALTH,
        .title = "one driver version across GPU nodes",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_driver_skew,
};
const struct cl_check_def cl_check_gpu_health_cuda_skew = {
        .id = "gpu-health.cuda-skew",
        .category = CL_GPU_HEALTH,
        .title = "one CUDA version across GPU nodes",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_cuda_skew,
};
const struct cl_check_def cl_check_gpu_health_product_skew = {
        .id = "gpu-health.product-skew",
        .category = CL_GPU_HEALTH,
        .title = "one GPU product per instance type",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_product_skew,
};
