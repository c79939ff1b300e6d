/* gpu_nodes.c: which Nodes are GPU nodes: GPU capacity (nvidia.com/gpu, nvidia.com/mig-*), NFD's PCI vendor label, the
 * GPU Operator's label. */
#include "cluster/cluster.h"
#include "kube/kube_objects.h"
#include "basic/util.h"

/* Returns whether resources (a capacity or allocatable map) name a GPU resource with a non-zero count. */
static bool has_gpu_resource(const json_t *resources) {
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)resources, k, v) {
                if (!streq(k, "nvidia.com/gpu") && !startswith(k, "nvidia.com/mig-")) continue;
                const char *q = kube_json_str(v);
                if (q && *q && !streq(q, "0")) return true;
        }
        return false;
}

/* Returns whether label key of labels is "true". */
static bool label_true(const json_t *labels, const char *key) {
        const char *v = kube_json_str(json_object_get(labels, key));
        return v && streq(v, "true");
}

const char *cl_gpu_node_reason(const json_t *node) {
        const json_t *status = json_object_get(node, "status");
        const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
        if (has_gpu_resource(json_object_get(status, "capacity"))) return "GPU capacity";
        if (label_true(labels, "nvidia.com/gpu.present")) return "label nvidia.com/gpu.present=true";
        if (label_true(labels, "feature.node.kubernetes.io/pci-10de.present"))
                return "label feature.node.kubernetes.io/pci-10de.present=true";
        /* a node whose device plugin has not registered yet still has GFD's product label */
        if (kube_json_str(json_object_get(labels, "nvidia.com/gpu.product"))) return "label nvidia.com/gpu.product";
        return NULL;
}
