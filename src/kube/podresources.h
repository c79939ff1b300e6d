/* podresources.h: the kubelet's pod-resources API v1 (List, GetAllocatableResources) decoded into plain C structs. */
#pragma once

#include <stddef.h>
#include <stdint.h>

#include "basic/util.h"

/* The kubelet's socket, a host path (below --root). */
#define PODRES_SOCKET             "/var/lib/kubelet/pod-resources/kubelet.sock"
#define PODRES_TIMEOUT_MS_DEFAULT 5000u
/* The largest answer accepted: dcgm-exporter's users hit grpc-go's default of 4 MiB on busy
 * nodes (dcgm-exporter#509); a List of 60,000 one-GPU pods is 5.3 MB. */
#define PODRES_MAX_MESSAGE ((size_t)16 << 20)
/* What protobuf-c may allocate for one answer's tree: a message that expands more than this
 * (millions of empty entries) is refused, not obeyed. The structs below, built from the tree,
 * take less than it did. */
#define PODRES_DECODE_BUDGET ((size_t)64 << 20)

/* Devices of one resource, as a container holds them or as the node offers them. */
struct podres_devices {
        char *resource_name; /* "nvidia.com/gpu", "nvidia.com/mig-1g.10gb" */
        char **device_ids;   /* as the device plugin named them: GPU and MIG UUIDs, "<uuid>::<n>" replicas */
        size_t n_device_ids;
        int64_t *numa_nodes; /* the topology's NUMA node ids; none when the plugin gave no topology */
        size_t n_numa_nodes;
};

struct podres_container {
        char *name;
        struct podres_devices *devices;
        size_t n_devices;
};

struct podres_pod {
        char *name;
        char *namespace;
        struct podres_container *containers;
        size_t n_containers;
};

/* List's answer: every pod the kubelet runs, with the devices its containers were given. */
struct podres_list {
        struct podres_pod *pods;
        size_t n_pods;
};

/* GetAllocatableResources' answer: every device the kubelet can hand out (healthy ones). */
struct podres_allocatable {
        struct podres_devices *devices;
        size_t n_devices;
};

void podres_list_free(struct podres_list *l);
void podres_allocatable_free(struct podres_allocatable *a);
static inline void podres_list_freep(struct podres_list **l) {
        podres_list_free(*l);
}
static inline void podres_allocatable_freep(struct podres_allocatable **a) {
        podres_allocatable_free(*a);
}
#define _cleanup_podres_list_        _cleanup_(podres_list_freep)
#define _cleanup_podres_allocatable_ _cleanup_(podres_allocatable_freep)

/* A connection to the kubelet's pod-resources service (kept between calls, made again after a
 * failure). One thread at a time. The kubelet limits the service to 100 calls a second (burst
 * 10) and answers RESOURCE_EXHAUSTED "rejected by rate limit" past that (-EBUSY here). */
struct podres_client;

/* Returns a client for the socket at host path socket (NULL: PODRES_SOCKET), each call bounded
 * by timeout_ms (0: PODRES_TIMEOUT_MS_DEFAULT). Does no I/O; never fails. */
struct podres_client *podres_client_new(const char *socket, unsigned timeout_ms);
void podres_client_free(struct podres_client *c);
static inline void podres_client_freep(struct podres_client **c) {
        podres_client_free(*c);
}
#define _cleanup_podres_client_ _cleanup_(podres_client_freep)

/* Calls v1.PodResourcesLister/List. Returns 0 with *ret (free with podres_list_free), or a
 * negative errno with a sentence naming the socket in *ret_error: grpc_unary's failures
 * (-ENOENT no socket, -ECONNREFUSED, -ETIMEDOUT, -EPROTO, -EMSGSIZE, -EACCES, -EBUSY, ...), -EBADMSG
 * for an answer that is not a ListPodResourcesResponse, -E2BIG for one that expands past
 * PODRES_DECODE_BUDGET, -ELIBACC when libnghttp2 or libprotobuf-c is missing. */
int podres_list(struct podres_client *c, struct podres_list **ret, char **ret_error);

/* Calls v1.PodResourcesLister/GetAllocatableResources. Returns 0 with *ret (free with
 * podres_allocatable_free), or what podres_list returns; -EOPNOTSUPP when the kubelet does not
 * serve the call: UNIMPLEMENTED (a kubelet before 1.21, where it came in as alpha), or UNKNOWN
 * "Pod Resources API GetAllocatableResources disabled" (feature gate
 * KubeletPodResourcesGetAllocatable off: the default of 1.21 and 1.22). */
int podres_allocatable(struct podres_client *c, struct podres_allocatable **ret, char **ret_error);

/* Decode answers (the fuzz target and the tests call these directly): data is a serialized
 * ListPodResourcesResponse / AllocatableResourcesResponse of len bytes. Return 0 with *ret, or
 * -EBADMSG (not that message, or a string that is not UTF-8), -E2BIG (expands past
 * PODRES_DECODE_BUDGET), -ELIBACC (no libprotobuf-c), with a sentence in *ret_error. */
int podres_decode_list(const uint8_t *data, size_t len, struct podres_list **ret, char **ret_error);
int podres_decode_allocatable(const uint8_t *data, size_t len, struct podres_allocatable **ret, char **ret_error);

/* Writes l in protobuf's JSON mapping of ListPodResourcesResponse ({"podResources": [{"name",
 * "namespace", "containers": [{"name", "devices": [{"resourceName", "deviceIds", "topology"}]}]}]},
 * the form fake_kubelet.py reads): what a snapshot keeps of a List answer. Returns 0 with *ret
 * (malloc'd) or -ENOMEM. */
int podres_list_to_json(const struct podres_list *l, char **ret);
/* Parses that JSON (len bytes; from a snapshot, so hostile): absent or null arrays are empty, any
 * other type, a string that is not UTF-8 or holds a NUL, is refused. Returns 0 with *ret (free
 * with podres_list_free), or -EBADMSG with a sentence in *ret_error. */
int podres_list_from_json(const char *text, size_t len, struct podres_list **ret, char **ret_error);
