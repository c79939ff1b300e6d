/* objects.c: a Node object into the compact struct cl_node the cluster checks read (labels, resources, conditions,
 * taints). */
#include "cluster/cluster.h"
#include "kube/kube_objects.h"
#include "basic/util.h"

#include <time.h>

/* The agent's four condition types, layer 1..4 (src/agent/conditions.c writes them). */
static const char *const layer_types[CLUSTER_LAYERS] = {
        "GPUHardwareProblem",
        "GPUContainerRuntimeProblem",
        "GPUResourceExposureProblem",
        "GPUObservabilityProblem",
};

/* Returns a malloc'd copy of the string member key of o (bounded to 4 KiB), or NULL. */
static char *dup_member(const json_t *o, const char *key) {
        const char *s = kube_json_str(json_object_get(o, key));
        return s ? xstrndup(s, 4096) : NULL;
}

/* Returns the count of a resource quantity, 0 when it is not an integer. */
static int64_t quantity(const json_t *v) {
        int64_t n = 0;
        const char *q = kube_json_str(v);
        if (json_is_integer(v))
                return json_integer_value(v) <= 0                ? 0
                       : json_integer_value(v) > CL_QUANTITY_MAX ? CL_QUANTITY_MAX
                                                                 : json_integer_value(v);
        if (!q || kube_quantity_int(q, &n) < 0 || n < 0) return 0;
        return n > CL_QUANTITY_MAX ? CL_QUANTITY_MAX : n;
}

/* Returns the sum of the GPU resources (nvidia.com/gpu, nvidia.com/mig-*) in a resource map. */
static int64_t gpu_sum(const json_t *resources) {
        int64_t sum = 0;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)resources, k,
                            v) if (streq(k, "nvidia.com/gpu") || startswith(k, "nvidia.com/mig-")) sum += quantity(v);
        return sum;
}

/* Returns the sum of the RDMA resources (named rdma/...) in a resource map. */
static int64_t rdma_sum(const json_t *resources) {
        int64_t sum = 0;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)resources, k, v) if (startswith(k, "rdma/")) sum += quantity(v);
        return sum;
}

int64_t cl_parse_time(const char *s) {
        if (!s) return 0;
        struct tm tm = { 0 };
        const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
        if (!p) return 0;
        if (*p == '.')
                for (p++; *p >= '0' && *p <= '9'; p++) {
                }
        int64_t off = 0;
        if (*p == 'Z' || *p == 'z')
                p++;
        else if ((*p == '+' || *p == '-') && p[1] && p[2] && p[3] == ':' && p[4] && p[5]) {
                int h = (p[1] - '0') * 10 + (p[2] - '0'), m = (p[4] - '0') * 10 + (p[5] - '0');
                if (h < 0 || h > 23 || m < 0 || m > 59) return 0;
                off = (int64_t)(h * 3600 + m * 60) * (*p == '+' ? 1 : -1);
                p += 6;
        } else
                return 0;
        if (*p) return 0;
        time_t t = timegm(&tm);
        if (t == (time_t)-1) return 0;
        return (int64_t)t - off;
}

/* Returns the driver version from GFD's labels ("550.54.15"), malloc'd, or NULL. */
static char *driver_version(const json_t *labels) {
        char *full = dup_member(labels, "nvidia.com/cuda.driver-version.full");
        if (full) return full;
        const char *ma = kube_json_str(json_object_get(labels, "nvidia.com/cuda.driver.major"));
        const char *mi = kube_json_str(json_object_get(labels, "nvidia.com/cuda.driver.minor"));
        const char *rev = kube_json_str(json_object_get(labels, "nvidia.com/cuda.driver.rev"));
        if (!ma) return NULL;
        return xasprintf("%.32s%s%.32s%s%.32s", ma, mi ? "." : "", mi ? mi : "", rev && *rev ? "." : "",
                         rev ? rev : "");
}

/* Returns the CUDA version the driver supports from GFD's labels ("12.4"), malloc'd, or NULL. */
static char *cuda_version(const json_t *labels) {
        char *full = dup_member(labels, "nvidia.com/cuda.runtime-version.full");
        if (full) return full;
        const char *ma = kube_json_str(json_object_get(labels, "nvidia.com/cuda.runtime.major"));
        const char *mi = kube_json_str(json_object_get(labels, "nvidia.com/cuda.runtime.minor"));
        if (!ma) return NULL;
        return xasprintf("%.32s.%.32s", ma, mi ? mi : "0");
}

int cl_node_parse(const json_t *node, struct cl_node *ret) {
        const json_t *meta = json_object_get(node, "metadata");
        const char *name = kube_json_str(json_object_get(meta, "name"));
        memset(ret, 0, sizeof *ret);
        if (!json_is_object(node) || !name || !*name) return -EBADMSG;
        const char *why = cl_gpu_node_reason(node);
        if (!why) return 1;
        const json_t *labels = json_object_get(meta, "labels");
        const json_t *spec = json_object_get(node, "spec");
        const json_t *status = json_object_get(node, "status");
        ret->name = xstrndup(name, 253);
        ret->gpu_because = why;
        ret->ready = -1;
        ret->unschedulable = json_is_true(json_object_get(spec, "unschedulable"));
        const json_t *taints = json_object_get(spec, "taints");
        if (json_is_array(taints) && json_array_size(taints) > 0) {
                size_t n = json_array_size(taints) < 64 ? json_array_size(taints) : 64;
                ret->taints = xcalloc(n, sizeof *ret->taints);
                for (size_t i = 0; i < n; i++) {
                        const json_t *t = json_array_get(taints, i);
                        if (!kube_json_str(json_object_get(t, "key"))) continue;
                        struct cl_taint *d = &ret->taints[ret->n_taints++];
                        d->key = dup_member(t, "key");
                        d->value = dup_member(t, "value");
                        d->effect = dup_member(t, "effect");
                }
        }
        const json_t *info = json_object_get(status, "nodeInfo");
        ret->kubelet_version = dup_member(info, "kubeletVersion");
        ret->runtime_version = dup_member(info, "containerRuntimeVersion");
        ret->product = dup_member(labels, "nvidia.com/gpu.product");
        ret->driver_version = driver_version(labels);
        ret->cuda_version = cuda_version(labels);
        ret->instance_type = dup_member(labels, "node.kubernetes.io/instance-type");
        if (!ret->instance_type) ret->instance_type = dup_member(labels, "beta.kubernetes.io/instance-type");
        ret->mig_strategy = dup_member(labels, "nvidia.com/mig.strategy");
        ret->mig_config_state = dup_member(labels, "nvidia.com/mig.config.state");
        ret->sharing_strategy = dup_member(labels, "nvidia.com/gpu.sharing-strategy");
        ret->replicas = dup_member(labels, "nvidia.com/gpu.replicas");
        const char *v = kube_json_str(json_object_get(labels, "feature.node.kubernetes.io/pci-15b3.present"));
        const char *rc = kube_json_str(json_object_get(labels, "feature.node.kubernetes.io/rdma.capable"));
        ret->rdma_nic = (v && streq(v, "true")) || (rc && streq(rc, "true"));
        const char *tk = kube_json_str(json_object_get(labels, "nvidia.com/gpu.deploy.container-toolkit"));
        ret->operator_toolkit = tk && streq(tk, "true");
        ret->gpu_capacity = gpu_sum(json_object_get(status, "capacity"));
        ret->gpu_allocatable = gpu_sum(json_object_get(status, "allocatable"));
        /* GFD's count of the GPUs NVML listed (a decimal label value; anything else is not a count) */
        const char *count = kube_json_str(json_object_get(labels, "nvidia.com/gpu.count"));
        int64_t counted = 0;
        for (const char *p = count; p && *p >= '0' && *p <= '9' && counted < 100000; p++)
                counted = counted * 10 + (*p - '0');
        if (!count || !*count || strspn(count, "0123456789") != strlen(count) || counted >= 100000) counted = 0;
        ret->gpu_expected = counted > ret->gpu_capacity ? counted : ret->gpu_capacity;
        ret->rdma_allocatable = rdma_sum(json_object_get(status, "allocatable"));
        size_t i;
        const json_t *c;
        json_array_foreach(json_object_get(status, "conditions"), i, c) {
                const char *type = kube_json_str(json_object_get(c, "type"));
                const char *st = kube_json_str(json_object_get(c, "status"));
                if (!type || !st) continue;
                if (streq(type, "Ready")) {
                        ret->ready = streq(st, "True") ? 1 : streq(st, "False") ? 0 : -1;
                        free(ret->ready_reason);
                        ret->ready_reason = dup_member(c, "reason");
                        continue;
                }
                for (int l = 0; l < CLUSTER_LAYERS; l++) {
                        if (!streq(type, layer_types[l])) continue;
                        struct cl_condition *d = &ret->layers[l];
                        free(d->reason);
                        free(d->message);
                        d->status = streq(st, "True")    ? CL_COND_TRUE
                                    : streq(st, "False") ? CL_COND_FALSE
                                                         : CL_COND_UNKNOWN;
                        d->reason = dup_member(c, "reason");
                        d->message = dup_member(c, "message");
                        d->heartbeat = cl_parse_time(kube_json_str(json_object_get(c, "lastHeartbeatTime")));
                }
        }
        return 0;
}

void cl_node_free(struct cl_node *n) {
        if (!n) return;
        free(n->name);
        free(n->ready_reason);
        for (size_t i = 0; i < n->n_taints; i++) {
                free(n->taints[i].key);
                free(n->taints[i].value);
                free(n->taints[i].effect);
        }
        free(n->taints);
        free(n->kubelet_version);
        free(n->runtime_version);
        free(n->product);
        free(n->driver_version);
        free(n->cuda_version);
        free(n->instance_type);
        free(n->mig_strategy);
        free(n->mig_config_state);
        free(n->sharing_strategy);
        free(n->replicas);
        for (int l = 0; l < CLUSTER_LAYERS; l++) {
                free(n->layers[l].reason);
                free(n->layers[l].message);
        }
        free(n->agent_namespace);
        free(n->agent_pod);
        for (size_t i = 0; i < n->n_csi_drivers; i++) free(n->csi_drivers[i]);
        free(n->csi_drivers);
        memset(n, 0, sizeof *n);
}
