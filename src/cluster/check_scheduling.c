/* check_scheduling.c: the scheduling category: GPUs allocatable against capacity, the RuntimeClass the runtime expects,
 * pending GPU pods and why, sharing/MIG consistency. */
#include "cluster/cluster.h"
#include "basic/util.h"

#include <inttypes.h>

/* Returns the node's lower-layer explanation for withheld GPUs ("layer 1 DriverNvmlInit", "not Ready"), malloc'd, or
 * NULL. */
static char *withheld_because(const struct cl_node *n) {
        int fl = cl_node_failing_layer(n);
        if (fl >= 1 && fl <= 3)
                return xasprintf("its layer %d fails (%s)", fl,
                                 n->layers[fl - 1].reason ? n->layers[fl - 1].reason : "?");
        if (n->ready != 1)
                return xasprintf("it is not Ready (%s)", n->ready_reason ? n->ready_reason : "no Ready condition");
        return NULL;
}

/* Returns the GPUs a node withholds: what it should have (gpu_expected: its capacity, or GFD's count when
 * larger, as when a GPU was lost) - allocatable; at least one when it advertises none. */
static int64_t withheld(const struct cl_node *n) {
        if (n->gpu_expected > n->gpu_allocatable) return n->gpu_expected - n->gpu_allocatable;
        return n->gpu_capacity == 0 && n->gpu_allocatable == 0 ? 1 : 0; /* at least one: the node has GPUs */
}

/* Returns the GPUs withheld by nodes whose lower layers explain it, and how many nodes. */
static int64_t explained_withheld(const struct cluster_facts *facts, size_t *ret_nodes) {
        int64_t sum = 0;
        size_t nodes = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                int64_t w = withheld(n);
                _cleanup_free_ char *why = w ? withheld_because(n) : NULL;
                if (!why) continue;
                sum += w;
                nodes++;
        }
        *ret_nodes = nodes;
        return sum;
}

/* run_gpu_allocatable: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_gpu_allocatable(const struct cluster_facts *facts, struct cl_finding *f) {
        int64_t cap = 0, alloc = 0, req = 0;
        size_t bad = 0, explained = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                cap += n->gpu_capacity;
                alloc += n->gpu_allocatable;
                req += n->gpu_requested;
                int64_t w = withheld(n);
                if (!w) continue;
                _cleanup_free_ char *why = withheld_because(n);
                if (why) {
                        /* bottom-up: the lower layer is the cause, not a scheduling fault */
                        if (explained++ < CLUSTER_EVIDENCE_NODES)
                                finding_evidence(&f->f,
                                                 "%s: %" PRId64 "/%" PRId64
                                                 " GPUs allocatable because %s: not a scheduling fault",
                                                 n->name, n->gpu_allocatable, n->gpu_expected, why);
                } else if (n->gpu_capacity == 0)
                        cl_evidence_node(f, &bad, "%s: GPU node (%s) advertises no nvidia.com/gpu capacity", n->name,
                                         n->gpu_because);
                else
                        cl_evidence_node(f, &bad,
                                         "%s: %" PRId64 " of %" PRId64
                                         " GPUs allocatable, its layers report nothing wrong%s",
                                         n->name, n->gpu_allocatable, n->gpu_expected,
                                         n->gpu_expected > n->gpu_capacity ? " (capacity dropped below GFD's "
                                                                             "nvidia.com/gpu.count: GPUs lost)"
                                                                           : "");
        }
        cl_evidence_more(f, bad);
        if (explained > CLUSTER_EVIDENCE_NODES)
                finding_evidence(&f->f, "... and %zu more nodes withheld by their lower layers",
                                 explained - CLUSTER_EVIDENCE_NODES);
        finding_evidence(&f->f,
                         "in sum: %" PRId64 " of %" PRId64 " GPUs allocatable, %" PRId64
                         " requested by pods bound to GPU nodes",
                         alloc, cap, req);
        if (bad) {
                finding_fail(&f->f,
                             "%zu GPU nodes withhold GPUs with no lower-layer cause (%" PRId64 " of %" PRId64
                             " allocatable)",
                             bad, alloc, cap);
                finding_remedy(&f->f,
                               "`kubectl gpunode check NODE` (layer 3 device-plugin: kubelet registration, health); "
                               "the device plugin pod's logs on the node");
        } else if (explained) {
                f->f.blocked_by = "gpu-health.layer-conditions";
                f->rests_on = "gpu-health.layer-conditions";
                finding_set(&f->f, CHECK_BLOCKED,
                            "%" PRId64 " of %" PRId64 " GPUs allocatable; the %zu nodes short of GPUs fail "
                            "in lower layers (gpu-health.layer-conditions)",
                            alloc, cap, explained);
        } else
                finding_pass(&f->f, "%" PRId64 " of %" PRId64 " GPUs allocatable on %zu nodes", alloc, cap,
                             facts->n_nodes);
}

/* Returns whether RuntimeClass name exists (its "name=handler" entry), with its handler in *ret_handler. */
static bool runtimeclass_exists(const struct cluster_facts *facts, const char *name, const char **ret_handler) {
        size_t len = strlen(name);
        for (size_t i = 0; i < facts->n_runtimeclasses; i++)
                if (strncmp(facts->runtimeclasses[i], name, len) == 0 && facts->runtimeclasses[i][len] == '=') {
                        *ret_handler = facts->runtimeclasses[i] + len + 1;
                        return true;
                }
        return false;
}

/* run_runtime_class: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_runtime_class(const struct cluster_facts *facts, struct cl_finding *f) {
        if (cl_list_unreadable(facts, CL_LIST_RUNTIMECLASSES, f, false)) return;
        size_t operator_nodes = 0;
        for (size_t i = 0; i < facts->n_nodes; i++) operator_nodes += facts->nodes[i].operator_toolkit;
        struct buf missing = { 0 }, present = { 0 };
        size_t n_missing = 0, n_wanted = 0;
        const char *h;
        if (operator_nodes) {
                n_wanted++;
                finding_evidence(&f->f,
                                 "%zu GPU nodes have the GPU Operator's container toolkit "
                                 "(nvidia.com/gpu.deploy.container-toolkit=true): runtime handler nvidia",
                                 operator_nodes);
                if (runtimeclass_exists(facts, "nvidia", &h))
                        buf_printf(&present, "nvidia (handler %s)", h);
                else {
                        buf_puts(&missing, "nvidia");
                        n_missing++;
                }
        }
        for (size_t i = 0; i < facts->n_pod_runtimeclasses; i++) {
                const char *rc = facts->pod_runtimeclasses[i];
                if (operator_nodes && streq(rc, "nvidia")) continue;
                n_wanted++;
                if (runtimeclass_exists(facts, rc, &h))
                        buf_printf(&present, "%s%s (handler %s)", present.len ? ", " : "", rc, h);
                else {
                        buf_printf(&missing, "%s%s", missing.len ? ", " : "", rc);
                        n_missing++;
                }
        }
        if (n_missing) {
                finding_fail(&f->f, "RuntimeClass %s missing: pods naming it are refused, GPU containers get no driver",
                             missing.data);
                finding_remedy(
                        &f->f,
                        "create it: `kubectl apply -f -` with apiVersion node.k8s.io/v1, kind RuntimeClass, "
                        "metadata.name nvidia, handler nvidia (the GPU Operator creates it unless "
                        "operator.runtimeClass is changed); the handler must name a runtime in containerd's config");
        } else if (n_wanted)
                finding_pass(&f->f, "RuntimeClasses exist: %s", present.data);
        else
                finding_skip(&f->f, "no pod names a RuntimeClass and no node has the operator's toolkit (nvidia is the "
                                    "default runtime, or not used)");
        buf_free(&missing);
        buf_free(&present);
}

enum pending_why { WHY_GPU, WHY_TAINT, WHY_AFFINITY, WHY_OTHER, WHY_NONE, WHY_COUNT };

/* Returns why the scheduler left a pod (from its FailedScheduling message). */
static enum pending_why pending_why(const char *msg) {
        if (!msg) return WHY_NONE;
        if (strstr(msg, "Insufficient nvidia.com/")) return WHY_GPU;
        if (strstr(msg, "untolerated taint") || strstr(msg, "had taint")) return WHY_TAINT;
        if (strstr(msg, "affinity") || strstr(msg, "selector")) return WHY_AFFINITY;
        return WHY_OTHER;
}

/* run_pending_gpu_pods: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_pending_gpu_pods(const struct cluster_facts *facts, struct cl_finding *f) {
        if (facts->n_pending == 0) {
                finding_pass(&f->f, "no GPU pod is Pending");
                return;
        }
        size_t count[WHY_COUNT] = { 0 }, shown = 0;
        int64_t gpus = 0;
        static const char *const words[] = { "Insufficient GPUs", "untolerated taints", "node affinity or selector",
                                             "other reasons", "no FailedScheduling event yet" };
        for (size_t i = 0; i < facts->n_pending; i++) {
                const struct cl_pending *p = &facts->pending[i];
                enum pending_why w = pending_why(p->message);
                count[w]++;
                gpus += p->gpus;
                cl_evidence_node(f, &shown, "%s/%s: %" PRId64 " GPUs, %s%s%.300s", p->namespace, p->name, p->gpus,
                                 words[w], p->message ? ": " : "", p->message ? p->message : "");
        }
        cl_evidence_more(f, shown);
        size_t nodes = 0;
        int64_t withheld_gpus = explained_withheld(facts, &nodes);
        if (count[WHY_GPU] && withheld_gpus) {
                f->f.blocked_by = "gpu-health.layer-conditions";
                f->rests_on = "gpu-health.layer-conditions";
                finding_set(&f->f, CHECK_BLOCKED,
                            "%zu GPU pods Pending for %" PRId64 " GPUs, %zu of them for Insufficient "
                            "nvidia.com/gpu, while %zu nodes withhold %" PRId64 "+ GPUs by lower-layer failures "
                            "(gpu-health.layer-conditions)",
                            facts->n_pending, gpus, count[WHY_GPU], nodes, withheld_gpus);
                finding_remedy(&f->f,
                               "fix the failing nodes first (gpu-health.layer-conditions): their GPUs come back to "
                               "the scheduler");
                return;
        }
        finding_warn(&f->f,
                     "%zu GPU pods Pending for %" PRId64 " GPUs (Insufficient GPUs %zu, taints %zu, affinity %zu, "
                     "other %zu, no event %zu)",
                     facts->n_pending, gpus, count[WHY_GPU], count[WHY_TAINT], count[WHY_AFFINITY], count[WHY_OTHER],
                     count[WHY_NONE]);
        finding_remedy(&f->f,
                       "Insufficient nvidia.com/gpu with every node healthy: the GPUs are taken (add nodes, or "
                       "time-slicing/MIG); taints: add the tolerations (nvidia.com/gpu:NoSchedule); affinity: the "
                       "pod's nodeSelector must match GFD labels (`kubectl get nodes -L nvidia.com/gpu.product`)");
}

/* Compares per-node sharing labels within an instance type (or product). Returns nothing. */
static void run_sharing_config(const struct cluster_facts *facts, struct cl_finding *f) {
        size_t labelled = 0, odd = 0, failed = 0, groups = 0;
        struct {
                const char *key;
                const struct cl_node *first;
        } group[256];
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                if (n->mig_config_state && streq(n->mig_config_state, "failed"))
                        cl_evidence_node(f, &failed, "%s: nvidia.com/mig.config.state=failed", n->name);
                if (!n->replicas && !n->sharing_strategy && !n->mig_strategy) continue;
                labelled++;
                const char *key = n->instance_type ? n->instance_type : n->product ? n->product : "";
                size_t g = 0;
                while (g < groups && !streq(group[g].key, key)) g++;
                if (g == groups) {
                        if (groups < ELEMENTSOF(group)) group[groups++] = (__typeof__(group[0])){ key, n };
                        continue;
                }
                const struct cl_node *m = group[g].first;
                if (!streq_ptr(n->replicas, m->replicas) || !streq_ptr(n->sharing_strategy, m->sharing_strategy) ||
                    !streq_ptr(n->mig_strategy, m->mig_strategy))
                        cl_evidence_node(
                                f, &odd, "%s: replicas %s, sharing %s, MIG strategy %s; %s (same %s): %s, %s, %s",
                                n->name, n->replicas ? n->replicas : "-",
                                n->sharing_strategy ? n->sharing_strategy : "-",
                                n->mig_strategy ? n->mig_strategy : "-", m->name,
                                n->instance_type ? "instance type" : "product", m->replicas ? m->replicas : "-",
                                m->sharing_strategy ? m->sharing_strategy : "-",
                                m->mig_strategy ? m->mig_strategy : "-");
        }
        cl_evidence_more(f, odd + failed);
        if (failed) {
                finding_fail(&f->f, "%zu GPU nodes failed to apply their MIG configuration", failed);
                finding_remedy(&f->f, "`kubectl -n gpu-operator logs -l app=nvidia-mig-manager` on the node; the "
                                      "nvidia.com/mig.config label must name a profile of the mig-parted config");
        } else if (odd) {
                finding_warn(&f->f,
                             "%zu GPU nodes share GPUs differently from others of their kind (time-slicing replicas, "
                             "MPS, MIG strategy)",
                             odd);
                finding_remedy(&f->f,
                               "one device plugin config per node pool: the label nvidia.com/device-plugin.config "
                               "picks it; a pod sized for 8 replicas gets a whole GPU elsewhere");
        } else if (labelled == 0)
                finding_skip(
                        &f->f,
                        "no GPU node carries sharing or MIG labels (nvidia.com/gpu.replicas, nvidia.com/mig.strategy)");
        else
                finding_pass(&f->f, "GPU sharing and MIG strategy agree within each of %zu node kinds", groups);
}

const struct cl_check_def cl_check_scheduling_gpu_allocatable = {
        .id = "scheduling.gpu-allocatable",
        .category = CL_SCHEDULING,
        .title = "GPUs allocatable match capacity",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_gpu_allocatable,
};
const struct cl_check_def cl_check_scheduling_runtime_class = {
        .id = "scheduling.runtime-class",
        .category = CL_SCHEDULING,
        .title = "the RuntimeClass the nodes' runtime expects exists",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_runtime_class,
};
const struct cl_check_def cl_check_scheduling_pending_gpu_pods = {
        .id = "scheduling.pending-gpu-pods",
        .category = CL_SCHEDULING,
        .title = "no GPU pod waits to be scheduled",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_pending_gpu_pods,
};
const struct cl_check_def cl_check_scheduling_sharing_config = {
        .id = "scheduling.sharing-config",
        .category = CL_SCHEDULING,
        .title = "time-slicing and MIG configuration consistent",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_sharing_config,
};
