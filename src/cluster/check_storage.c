/* check_storage.c: the storage category: CSIDriver objects, a default StorageClass, CSI node plugins registered on
 * every GPU node. */
#include "cluster/cluster.h"
#include "basic/util.h"

/* Returns "a, b, c" of v malloc'd (at most 20 named). */
static char *join(char *const *v, size_t n) {
        struct buf b = { 0 };
        for (size_t i = 0; i < n && i < 20; i++) buf_printf(&b, "%s%s", i ? ", " : "", v[i]);
        if (n > 20) buf_printf(&b, " and %zu more", n - 20);
        return b.data ? b.data : xstrdup("");
}

/* run_csi_drivers: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never fails.
 */
static void run_csi_drivers(const struct cluster_facts *facts, struct cl_finding *f) {
        if (cl_list_unreadable(facts, CL_LIST_CSIDRIVERS, f, false)) return;
        if (facts->n_csidrivers == 0) {
                finding_warn(&f->f, "no CSIDriver objects: pods get only node-local and in-tree volumes");
                finding_remedy(&f->f,
                               "install the CSI driver of the cluster's storage (its Helm chart creates the CSIDriver "
                               "object); datasets and checkpoints need persistent volumes");
                return;
        }
        _cleanup_free_ char *names = join(facts->csidrivers, facts->n_csidrivers);
        finding_pass(&f->f, "%zu CSI drivers: %s", facts->n_csidrivers, names);
}

/* run_default_storageclass: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_default_storageclass(const struct cluster_facts *facts, struct cl_finding *f) {
        if (cl_list_unreadable(facts, CL_LIST_STORAGECLASSES, f, false)) return;
        _cleanup_free_ char *all = join(facts->storageclasses, facts->n_storageclasses);
        if (facts->n_storageclasses) finding_evidence(&f->f, "StorageClasses: %s", all);
        if (facts->n_default_storageclasses == 1) {
                finding_pass(&f->f, "default StorageClass %s", facts->default_storageclasses[0]);
                return;
        }
        if (facts->n_default_storageclasses > 1) {
                _cleanup_free_ char *d = join(facts->default_storageclasses, facts->n_default_storageclasses);
                finding_warn(&f->f, "%zu StorageClasses are marked default (%s): which one a claim gets is not defined",
                             facts->n_default_storageclasses, d);
        } else
                finding_warn(&f->f,
                             "no default StorageClass (%zu StorageClasses): a PersistentVolumeClaim without "
                             "storageClassName stays Pending",
                             facts->n_storageclasses);
        finding_remedy(&f->f,
                       "kubectl patch storageclass NAME -p "
                       "'{\"metadata\":{\"annotations\":{\"storageclass.kubernetes.io/is-default-class\":\"true\"}}}' "
                       "(and \"false\" on the others)");
}

/* run_csi_node_plugins: fills f from the facts (pass, warn, fail, skip or blocked, with evidence and remedy); never
 * fails. */
static void run_csi_node_plugins(const struct cluster_facts *facts, struct cl_finding *f) {
        if (cl_list_unreadable(facts, CL_LIST_CSINODES, f, false)) return;
        if (cl_list_unreadable(facts, CL_LIST_CSIDRIVERS, f, false)) return;
        /* the drivers with node plugins: those registered on at least one GPU node */
        char **want = NULL;
        size_t n_want = 0, bad = 0;
        for (size_t i = 0; i < facts->n_nodes; i++)
                for (size_t d = 0; d < facts->nodes[i].n_csi_drivers; d++) {
                        const char *dn = facts->nodes[i].csi_drivers[d];
                        bool have = false;
                        for (size_t w = 0; w < n_want && !have; w++) have = streq(want[w], dn);
                        if (!have && n_want < 64) {
                                want = xrealloc(want, (n_want + 1) * sizeof *want);
                                want[n_want++] = (char *)dn;
                        }
                }
        if (n_want == 0) {
                free(want);
                finding_skip(&f->f, "no CSI node plugin is registered on any GPU node");
                return;
        }
        for (size_t i = 0; i < facts->n_nodes; i++) {
                const struct cl_node *n = &facts->nodes[i];
                struct buf miss = { 0 };
                for (size_t w = 0; w < n_want; w++) {
                        bool have = false;
                        for (size_t d = 0; d < n->n_csi_drivers && !have; d++) have = streq(n->csi_drivers[d], want[w]);
                        if (!have) buf_printf(&miss, "%s%s", miss.len ? ", " : "", want[w]);
                }
                if (miss.len)
                        cl_evidence_node(f, &bad, "%s: not registered: %s%s", n->name, miss.data,
                                         n->has_csinode ? "" : " (no CSINode)");
                buf_free(&miss);
        }
        cl_evidence_more(f, bad);
        _cleanup_free_ char *names = join(want, n_want);
        free(want);
        if (bad) {
                finding_warn(&f->f,
                             "%zu of %zu GPU nodes lack a CSI node plugin the others have (%s): pods with such "
                             "volumes cannot start there",
                             bad, facts->n_nodes, names);
                finding_remedy(&f->f, "the CSI driver's node DaemonSet must tolerate the GPU nodes' taints "
                                      "(nvidia.com/gpu); `kubectl get csinode NODE -o yaml` shows what registered");
        } else
                finding_pass(&f->f, "CSI node plugins %s registered on all %zu GPU nodes", names, facts->n_nodes);
}

const struct cl_check_def cl_check_storage_csi_drivers = {
        .id = "storage.csi-drivers",
        .category = CL_STORAGE,
        .title = "CSI drivers are installed",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_csi_drivers,
};
const struct cl_check_def cl_check_storage_default_storageclass = {
        .id = "storage.default-storageclass",
        .category = CL_STORAGE,
        .title = "exactly one default StorageClass",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_default_storageclass,
};
const struct cl_check_def cl_check_storage_csi_node_plugins = {
        .id = "storage.csi-node-plugins",
        .category = CL_STORAGE,
        .title = "CSI node plugins on every GPU node",
        .depends = { "infrastructure.gpu-nodes" },
        .run = run_csi_node_plugins,
};
