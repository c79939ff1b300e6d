/* kube_objects.h: what gpunode needs from Node and PodList JSON (conditions, resources, labels, container states). */
#pragma once

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct kube_kv {
        char *key, *value;
};

struct kube_node_info {
        char *name;
        int ready; /* Ready condition: 1 True, 0 False, -1 Unknown or absent */
        char *ready_reason, *ready_message;
        bool unschedulable;
        char *kubelet_version;  /* status.nodeInfo.kubeletVersion */
        struct kube_kv *labels; /* input order */
        size_t n_labels;
        struct kube_kv *capacity, *allocatable;
        size_t n_capacity, n_allocatable;
};

enum kube_container_state { KUBE_STATE_UNKNOWN, KUBE_STATE_WAITING, KUBE_STATE_RUNNING, KUBE_STATE_TERMINATED };

struct kube_container {
        char *name;
        bool init; /* from initContainerStatuses */
        bool ready;
        int64_t restarts;
        enum kube_container_state state;
        char *reason, *message; /* of the current state (waiting or terminated) */
        int exit_code;          /* terminated */
        bool has_last;          /* lastState.terminated present */
        char *last_reason, *last_message;
        int last_exit_code;
};

struct kube_pod_info {
        char *namespace, *name, *phase, *pod_ip;
        char *reason, *message; /* status.reason/message (Evicted, ...) */
        struct kube_kv *labels;
        size_t n_labels;
        int ready;                         /* Ready condition: 1 True, 0 False, -1 absent */
        struct kube_container *containers; /* init containers first, then the others */
        size_t n_containers;
        size_t n_init_spec;  /* init containers in spec (statuses may be missing) */
        char *runtime_class; /* spec.runtimeClassName, NULL when unset */
        bool requests_gpu;   /* a container's limits or requests name an nvidia.com/ resource */
        int metrics_port; /* the TCP containerPort named "metrics"/"http-metrics", else the first declared; 0: none */
};

/* Returns v's string when v is a JSON string without an embedded U+0000 (owned by v), else NULL. For
 * what identifies something (a name, a uid, a label's or taint's key and value): a string cut at a
 * NUL would silently be another value, so such a string counts as absent. Never fails. */
const char *kube_json_str(const json_t *v);

/* Returns a malloc'd copy of v's string with each embedded U+0000 written as the two characters
 * "\\0" (for messages and evidence: nothing is cut), or NULL when v is not a string. Never fails
 * (aborts on out-of-memory). */
char *kube_json_strdup(const json_t *v);

/* Fills *ret from a Node object. Returns 0, or -EBADMSG when node is not a JSON object with
 * metadata.name. Missing optional parts are left empty. */
int kube_node_info_parse(const json_t *node, struct kube_node_info *ret);
void kube_node_info_free(struct kube_node_info *n);

/* Fills *ret and *ret_n from a PodList (items[]). Returns 0, or -EBADMSG when list has no items
 * array; items without metadata.name are skipped. */
int kube_pod_list_parse(const json_t *list, struct kube_pod_info **ret, size_t *ret_n);
void kube_pod_info_free(struct kube_pod_info *p, size_t n);

/* Returns the value for key in kv[0..n), or NULL. */
const char *kube_kv_get(const struct kube_kv *kv, size_t n, const char *key);

/* Parses an integer resource quantity ("8", "0", "2k"). Returns 0, or -EINVAL for anything else
 * (fractions, milli units). */
int kube_quantity_int(const char *q, int64_t *ret);

enum kube_pod_health { KUBE_POD_OK, KUBE_POD_WARN, KUBE_POD_FAIL };

/* Restarts at or above this make a running, ready pod a warning. */
#define KUBE_RESTARTS_WARN 5

/* Judges a pod: FAIL when it is not Running and Ready (CrashLoopBackOff, ImagePullBackOff, stuck
 * in Init, Pending, Failed), WARN when ready but restarted KUBE_RESTARTS_WARN times or more, else
 * OK; Succeeded pods are OK. Returns the judgement and in *ret_text (malloc'd) a kubectl-like
 * account: "CrashLoopBackOff: container nvidia-device-plugin: 14 restarts, last exit 1 (Error)". */
enum kube_pod_health kube_pod_judge(const struct kube_pod_info *p, char **ret_text);
